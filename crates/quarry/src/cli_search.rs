use crate::DataArgs;
use anyhow::{Context, Result};
use quarry_index::event::format_time;
use quarry_query::{value_to_json, QueryError, SearchRequest, Searcher, SortOrder};
use std::io::{BufRead, Write};
use std::process::ExitCode;

#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum Sort {
    /// BM25 score, best first
    #[default]
    Relevance,
    /// Newest first (tail)
    TimeDesc,
    /// Oldest first (head)
    TimeAsc,
}

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Hits to print
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Also print the exact number of matches, as a last line `{"count": N}`
    #[arg(long)]
    count: bool,
    /// Order of hits
    #[arg(long, value_enum, default_value_t = Sort::Relevance)]
    sort: Sort,
    /// The query
    query: String,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Also print the size of every section of every block
    #[arg(long)]
    sizes: bool,
}

#[derive(clap::Args, Debug)]
pub struct BenchServeArgs {
    #[command(flatten)]
    data: DataArgs,
}

fn open(data: &DataArgs) -> Result<Searcher> {
    Searcher::open(&data.data)
        .with_context(|| format!("opening data directory {}", data.data.display()))
}

pub fn search(args: SearchArgs) -> Result<ExitCode> {
    let searcher = open(&args.data)?;
    let query = match searcher.parse(&args.query) {
        Ok(query) => query,
        Err(QueryError::Parse(error)) => {
            eprintln!("error: bad query: {error}");
            eprintln!("  {}", args.query);
            eprintln!(
                "  {}^",
                " ".repeat(
                    args.query[..error.position.min(args.query.len())]
                        .chars()
                        .count()
                )
            );
            return Ok(ExitCode::from(2));
        }
        Err(other) => return Err(other.into()),
    };
    let sort = match args.sort {
        Sort::Relevance => SortOrder::Relevance,
        Sort::TimeDesc => SortOrder::TimeDesc,
        Sort::TimeAsc => SortOrder::TimeAsc,
    };
    let result = searcher.search(
        &query,
        &SearchRequest {
            limit: args.limit,
            count: args.count,
            sort,
        },
    )?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for hit in &result.hits {
        let event: serde_json::Map<String, serde_json::Value> = searcher
            .event(hit)?
            .iter()
            .map(|(name, value)| (name.clone(), value_to_json(value)))
            .collect();
        let line = serde_json::json!({
            "score": hit.score.map(f64::from),
            "_time": format_time(hit.time),
            "event": event,
        });
        writeln!(out, "{line}")?;
    }
    if let Some(count) = result.count {
        writeln!(out, "{}", serde_json::json!({ "count": count }))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn check(args: CheckArgs) -> Result<ExitCode> {
    let searcher = open(&args.data)?;
    let mut failures = 0;
    for block in searcher.blocks() {
        match block.verify() {
            Ok(()) => println!(
                "ok {} ({} events)",
                block.path().display(),
                block.doc_count()
            ),
            Err(error) => {
                failures += 1;
                println!("FAILED {error}");
            }
        }
    }
    if args.sizes {
        let mut totals: std::collections::BTreeMap<String, u64> = Default::default();
        for block in searcher.blocks() {
            for (name, section) in block.manifest().sections() {
                // Group per-field sections by kind: "column x:string data" -> "column data".
                let kind = if name.starts_with("column ") {
                    format!("columns ({})", name.rsplit(' ').next().unwrap_or(""))
                } else if name.starts_with("norms of ") {
                    "norms".to_owned()
                } else {
                    name
                };
                *totals.entry(kind).or_default() += section.len;
            }
        }
        for (kind, bytes) in totals {
            println!("{kind:>24}: {:>12} bytes", bytes);
        }
    }
    println!(
        "{} blocks checked, {failures} failed",
        searcher.blocks().len()
    );
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The search-benchmark-game protocol: `COMMAND\tquery` in, one line out per query.
pub fn bench_serve(args: BenchServeArgs) -> Result<ExitCode> {
    let searcher = open(&args.data)?;
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut bytes = Vec::new();
    let mut input = stdin.lock();
    loop {
        bytes.clear();
        if input.read_until(b'\n', &mut bytes)? == 0 {
            break;
        }
        // Real query logs hold stray non-UTF-8 bytes (the TREC set does); they become U+FFFD.
        let line = String::from_utf8_lossy(&bytes);
        let line = line.trim_end_matches(['\n', '\r']);
        let (command, text) = line.split_once('\t').unwrap_or((line, ""));
        let answer = answer(&searcher, command, text);
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

fn answer(searcher: &Searcher, command: &str, text: &str) -> String {
    let (k, count) = match command {
        "COUNT" => (0, true),
        "TOP_10" => (10, false),
        "TOP_100" => (100, false),
        "TOP_1000" => (1000, false),
        "TOP_10_COUNT" => (10, true),
        "TOP_100_COUNT" => (100, true),
        "TOP_1000_COUNT" => (1000, true),
        _ => return "UNSUPPORTED".to_owned(),
    };
    let query = match searcher.parse(text) {
        Ok(query) => query,
        Err(_) => return "ERROR".to_owned(),
    };
    let result = (|| -> Result<String, QueryError> {
        // The top k is computed even when only the count is printed (TOP_10_COUNT).
        let hits = searcher.top_k(&query, k)?;
        std::hint::black_box(&hits);
        if count {
            Ok(searcher.count(&query)?.to_string())
        } else {
            Ok("1".to_owned())
        }
    })();
    result.unwrap_or_else(|_| "ERROR".to_owned())
}
