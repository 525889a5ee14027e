//! `search-report`: puts the records of `tantivy-bench index`, `lucene-bench index`, Quarry's
//! index run and `search-driver` side by side.
//!
//! ```text
//! search-report --subject quarry --baseline tantivy,lucene [--out results/search.json] RECORD.json...
//! ```
//!
//! Prints the table on stdout and writes the flat metric list to `--out`. A record file that
//! does not exist is reported and skipped, so a run where one engine failed still gets a report
//! (its column shows `missing`).
//!
//! With `--by-kind` (records of `search-driver --kinds`, the search-benchmark-game
//! configuration) it prints the per-kind tables of [`search_driver::kinds`] instead and writes
//! `{"metrics": [{"engine","workload","kind","metric","value"}], "count_differences": [...]}`.

use std::fs;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use search_driver::kinds::KindReport;
use search_driver::report::{Record, Report};

#[derive(Parser)]
#[command(about = "Side-by-side table and metric list from benchmark records")]
struct Args {
    /// The engine under test: ratios are subject/baseline
    #[arg(long, default_value = "quarry")]
    subject: String,
    /// The engines compared against, each with its own ratio column (comma-separated or
    /// repeated)
    #[arg(long, value_delimiter = ',', default_value = "tantivy,lucene")]
    baseline: Vec<String>,
    /// Write the metrics as a JSON list of {"engine","workload","metric","value"}
    #[arg(long)]
    out: Option<PathBuf>,
    /// Per kind of query and command, round trip and engine time (records of
    /// `search-driver --kinds`), and the queries whose counts differ
    #[arg(long)]
    by_kind: bool,
    /// Index and search records, one JSON object per file
    records: Vec<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut records = Vec::new();
    for path in &args.records {
        if path.exists() {
            records.push(Record::load(path)?);
        } else {
            eprintln!("search-report: skipping {}: no such file", path.display());
        }
    }
    let json = if args.by_kind {
        let report = KindReport::build(&records, &args.subject, &args.baseline)?;
        print!("{}", report.text);
        serde_json::to_string_pretty(&report)?
    } else {
        let report = Report::build(&records, &args.subject, &args.baseline)?;
        print!("{}", report.table(&args.subject, &args.baseline));
        serde_json::to_string_pretty(&report.metrics)?
    };
    if let Some(out) = &args.out {
        if let Some(dir) = out.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        fs::write(out, json + "\n").with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}
