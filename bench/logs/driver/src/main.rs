//! `logs-driver`: the driver side of the log benchmark (bench/logs/README.md).
//!
//! ```text
//! logs-driver run --queries FILE [--engine NAME] [--size N] [--warmup W] [--repeat R]
//!                 [--answers FILE] [--json FILE] -- ENGINE-COMMAND...
//! logs-driver compare LEFT.answers RIGHT.answers
//! logs-driver time-range EVENTS.json[.zst]
//! logs-driver report [--subject quarry] [--baseline tantivy,lucene] [--out FILE] RECORD.json...
//! logs-driver kinds [--subject quarry] [--baseline tantivy,lucene] [--out FILE] RECORD.json...
//! logs-driver counts ENGINE=ANSWERS...
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use logs_driver::answer::{compare, Verdict};
use logs_driver::report::{self, Record};
use logs_driver::run::{self, Outcome, RunOptions};
use logs_driver::{input, kinds, queries};

#[derive(Parser)]
#[command(about = "Drive log-query engines over a pipe: time them, compare their answers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send every request of a query set to an engine, time each round trip and keep the
    /// engine's own time when its answer ends with one (`<TAB>NANOS`, PROTOCOL.md)
    Run {
        /// Query set: one `NAME<TAB>REQUEST` line per request
        #[arg(long)]
        queries: PathBuf,
        /// Engine name in the record [default: the engine program's file name]
        #[arg(long)]
        engine: Option<String>,
        /// Events in the engine's index, recorded for the report
        #[arg(long)]
        size: Option<u64>,
        /// Untimed passes over the whole query set
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Timed passes over the whole query set
        #[arg(long, default_value_t = 20)]
        repeat: usize,
        /// Write one `NAME<TAB>ANSWER<TAB>REQUEST` line per request to FILE
        #[arg(long, value_name = "FILE")]
        answers: Option<PathBuf>,
        /// Write the run record (JSON) to FILE [default: stdout]
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Sum the figures by the part of each request's name before its first `.`
        /// (`prefix.07` → `prefix`) instead of by protocol command
        #[arg(long)]
        kind_by_name: bool,
        /// The engine program and its arguments
        #[arg(last = true, required = true, value_name = "ENGINE-COMMAND")]
        engine_command: Vec<String>,
    },
    /// Compare two answers files request by request; exit status 1 when some answers differ
    Compare { left: PathBuf, right: PathBuf },
    /// Print the smallest and largest `_time` (ms since the epoch) of an event file, and the
    /// number of events: `MIN MAX EVENTS`
    TimeRange { events: PathBuf },
    /// Print the side-by-side table and write the metric list
    Report {
        /// The engine whose ratios to the baselines are printed
        #[arg(long, default_value = "quarry")]
        subject: String,
        /// Baseline engines, comma-separated or repeated
        #[arg(long, value_delimiter = ',', default_value = "tantivy,lucene")]
        baseline: Vec<String>,
        /// Write the metric list (JSON) to FILE
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Index and run records
        records: Vec<PathBuf>,
    },
    /// Print the per-kind latency table (mean, p50, p99 of round trips and engine times, with
    /// the subject's ratios to each baseline) of run records made with `run --kind-by-name`
    Kinds {
        /// The engine whose ratios to the baselines are printed
        #[arg(long, default_value = "quarry")]
        subject: String,
        /// Baseline engines, comma-separated or repeated
        #[arg(long, value_delimiter = ',', default_value = "tantivy,lucene")]
        baseline: Vec<String>,
        /// Write the metric list (JSON) to FILE
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Run records
        records: Vec<PathBuf>,
    },
    /// Print every request's answer from each engine side by side, then the requests where
    /// they differ and a summary; exit status 1 when some differ
    Counts {
        /// `ENGINE=FILE`: an answers file of `run --answers`, named
        #[arg(required = true)]
        answers: Vec<String>,
    },
}

fn main() -> anyhow::Result<ExitCode> {
    match Cli::parse().command {
        Command::Run {
            queries,
            engine,
            size,
            warmup,
            repeat,
            answers,
            json,
            kind_by_name,
            engine_command,
        } => {
            let requests = queries::load_query_set(&queries)?;
            let engine = engine.unwrap_or_else(|| file_name(Path::new(&engine_command[0])));
            let record = run::run(
                &RunOptions {
                    engine,
                    engine_command: &engine_command,
                    size,
                    warmup,
                    repeat,
                    kind_by_name,
                },
                &requests,
            )?;
            for query in &record.queries {
                let note = match query.outcome {
                    Outcome::Answered if !query.stable => "answers changed between passes",
                    Outcome::Answered => continue,
                    Outcome::Unsupported => "UNSUPPORTED, no figures",
                    Outcome::Error => "ERROR, no figures",
                };
                eprintln!("logs-driver: {} {}: {note}", record.engine, query.name);
            }
            if let Some(path) = answers {
                write(&path, &queries::format_answers(&record.answers()))?;
            }
            let text = serde_json::to_string(&record)? + "\n";
            match json {
                Some(path) => write(&path, &text)?,
                None => print!("{text}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare { left, right } => compare_files(&left, &right),
        Command::Kinds {
            subject,
            baseline,
            out,
            records,
        } => {
            let records: Vec<run::RunRecord> =
                read_records(&records, |text| Ok(serde_json::from_str(text)?))?;
            let table = kinds::build(&records, &subject, &baseline);
            print!("{}", table.text);
            if let Some(path) = out {
                write(
                    &path,
                    &(serde_json::to_string_pretty(&table.metrics)? + "\n"),
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Counts { answers } => {
            let mut engines = Vec::new();
            for spec in &answers {
                let (engine, path) = spec
                    .split_once('=')
                    .with_context(|| format!("{spec:?}: expected ENGINE=FILE"))?;
                engines.push((engine.to_owned(), queries::load_answers(Path::new(path))?));
            }
            let comparison = kinds::counts(&engines);
            print!("{}", comparison.text);
            Ok(if comparison.differ == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::TimeRange { events } => {
            let (min, max, count) = input::time_range(&events)?;
            println!("{min} {max} {count}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Report {
            subject,
            baseline,
            out,
            records,
        } => {
            let records = read_records(&records, Record::parse)?;
            let report = report::build(&records, &subject, &baseline);
            print!("{}", report.table);
            if let Some(path) = out {
                write(
                    &path,
                    &(serde_json::to_string_pretty(&report.metrics)? + "\n"),
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Prints every request whose answers differ, then a summary line.
fn compare_files(left_path: &Path, right_path: &Path) -> anyhow::Result<ExitCode> {
    let left = queries::load_answers(left_path)?;
    let right = queries::load_answers(right_path)?;
    let (left_name, right_name) = (file_name(left_path), file_name(right_path));
    let (mut agree, mut differ, mut missing) = (0, 0, 0);
    for answer in &left {
        let Some(other) = right.iter().find(|other| other.name == answer.name) else {
            println!("{}: only in {left_name}", answer.name);
            missing += 1;
            continue;
        };
        match compare(&answer.request, &answer.answer, &other.answer) {
            Verdict::Agree => agree += 1,
            Verdict::Missing => missing += 1,
            Verdict::Differ { reason } => {
                differ += 1;
                println!(
                    "{}: {reason}\n  {left_name}: {}\n  {right_name}: {}\n  request: {}",
                    answer.name,
                    answer.answer,
                    other.answer,
                    answer.request.replace('\t', "<TAB>")
                );
            }
        }
    }
    for other in right
        .iter()
        .filter(|o| !left.iter().any(|a| a.name == o.name))
    {
        println!("{}: only in {right_name}", other.name);
        missing += 1;
    }
    println!(
        "{left_name} vs {right_name}: {agree} agree, {differ} differ, {missing} not compared \
         (refused by one side or absent)"
    );
    Ok(if differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Each run record file, parsed by `parse`; errors name the file.
fn read_records<T>(
    paths: &[std::path::PathBuf],
    parse: impl Fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    paths
        .iter()
        .map(|path| {
            let text =
                fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            parse(&text).with_context(|| format!("record {}", path.display()))
        })
        .collect()
}
