//! `tantivy-logs`: tantivy as a peer in Quarry's log benchmark (bench/logs/README.md).
//!
//! - `index` indexes a JSON-lines event file (plain or zstd) into an index sorted by `_time`
//!   and prints one JSON line of figures ([`index::IndexSummary`]);
//! - `serve` answers the log protocol (bench/logs/PROTOCOL.md) on stdin, for `logs-driver`.
//!
//! The schema is in [`schema`], the query translation in [`query`], the answers in [`serve`].

mod index;
mod query;
mod schema;
mod serve;

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "tantivy behind Quarry's log benchmark protocol")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index a JSON-lines event file (plain or zstd-compressed)
    Index {
        /// Directory of the new index (created; must not hold an index)
        #[arg(long)]
        index: PathBuf,
        /// Indexing memory of the one indexing thread, e.g. 1GB, 512MB, 300MiB
        #[arg(long, default_value = "1GB", value_parser = parse_bytes)]
        heap: usize,
        /// `logs`: the log benchmark's fields, sorted by `_time`; `message`: only a `message`
        /// text field, for `{"message": line}` events without `_time` (bench/run-sizes.sh)
        #[arg(long, value_enum, default_value = "logs")]
        schema: schema::SchemaKind,
        /// The events, JSON lines
        input: PathBuf,
    },
    /// Answer protocol requests on stdin, one line each on stdout
    Serve {
        #[arg(long)]
        index: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Index {
            index,
            heap,
            schema,
            input,
        } => {
            let summary = index::run(&index::IndexOptions {
                index_dir: index,
                input,
                heap_bytes: heap,
                schema,
            })?;
            println!("{}", serde_json::to_string(&summary)?);
        }
        Command::Serve { index } => serve::run(&index)?,
    }
    Ok(())
}

/// A byte count with an optional unit: `KB`/`MB`/`GB` are powers of 1000, `KiB`/`MiB`/`GiB`
/// powers of 1024; case is ignored.
fn parse_bytes(text: &str) -> anyhow::Result<usize> {
    let text = text.trim();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let number: usize = number
        .parse()
        .with_context(|| format!("no number in {text:?}"))?;
    let multiplier: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        other => bail!("unknown unit {other:?} in {text:?}"),
    };
    number
        .checked_mul(multiplier)
        .with_context(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn parses_byte_sizes() {
        let cases: &[(&str, Option<usize>)] = &[
            ("1GB", Some(1_000_000_000)),
            ("300MiB", Some(300 << 20)),
            ("15000000", Some(15_000_000)),
            ("GB", None),
            ("1TB", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_bytes(text).ok(), *expected, "{text:?}");
        }
    }
}
