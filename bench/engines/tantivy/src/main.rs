//! `tantivy-bench`: tantivy as a peer in Quarry's side-by-side benchmarks.
//!
//! - `index` builds a one-segment index of a Wikipedia JSON-lines file (or, with
//!   `--schema game`, of the search-benchmark-game's `{"id","text"}` corpus) and prints one
//!   JSON line of figures (see [`index::IndexSummary`]).
//! - `serve` answers search requests on stdin in the search-benchmark-game protocol, for
//!   `search-driver` to time.
//!
//! Text is tokenized by Quarry's own analyzer (see [`tokenizer`]), so both engines index the
//! same terms.

mod index;
mod multiterm;
mod schema;
mod serve;
mod tokenizer;

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "tantivy behind Quarry's benchmark protocol")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index a zstd-compressed JSON-lines file of {"url","title","body"} articles, or of
    /// {"id","text"} documents with --schema game
    Index {
        /// Directory of the new index (created; must not hold an index)
        #[arg(long)]
        index: PathBuf,
        /// Indexing threads
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Indexing memory for all threads, e.g. 1GB, 512MB, 300MiB
        #[arg(long, default_value = "1GB", value_parser = parse_bytes)]
        heap: usize,
        /// wiki: url, title and body, analyzed and stored; game: id stored only, text analyzed
        /// with positions and not stored, the only field bare words search
        #[arg(long, value_enum, default_value_t = schema::SchemaKind::Wiki)]
        schema: schema::SchemaKind,
        /// The input, JSON lines compressed with zstd
        input: PathBuf,
    },
    /// Answer `COMMAND\tquery` lines on stdin, one line each on stdout; bare words search
    /// url, title and body, or text in a --schema game index
    Serve {
        #[arg(long)]
        index: PathBuf,
        /// Search threads. With 1, each request is answered in turn on the thread that reads
        /// them. With N > 1, requests run on a work-stealing pool of N threads and each answer
        /// is `ID<TAB>answer`, ID being the request's 0-based line number, in completion order
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Read queries with the multi-term translator (fuzzy, regex, leading wildcards,
        /// phrase slop, string ranges; bench/multiterm/README.md) instead of tantivy's parser
        #[arg(long)]
        multiterm: bool,
        /// End each answer with `<TAB>NANOS`, the engine's own time for the request (with one
        /// search thread; the pool's ID-tagged answers carry none)
        #[arg(long)]
        engine_time: bool,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Index {
            index,
            threads,
            heap,
            schema,
            input,
        } => {
            let summary = index::run(&index::IndexOptions {
                index_dir: index,
                input,
                threads,
                schema,
                heap_bytes: heap,
            })?;
            println!("{}", serde_json::to_string(&summary)?);
        }
        Command::Serve {
            index,
            threads,
            multiterm,
            engine_time,
        } => serve::run(
            &index,
            threads,
            serve::ServeOptions {
                multiterm,
                engine_time,
            },
        )?,
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
            ("512MB", Some(512_000_000)),
            ("300MiB", Some(300 << 20)),
            ("2 gib", Some(2 << 30)),
            ("15000000", Some(15_000_000)),
            ("GB", None),
            ("1TB", None),
            ("-1GB", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_bytes(text).ok(), *expected, "{text:?}");
        }
    }
}
