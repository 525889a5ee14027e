//! `search-driver`: times a search engine process query by query.
//!
//! ```text
//! search-driver --queries topics.txt [--limit N] [--command TOP_10] [--transform or|and|phrase]
//!               [--warmup 1000] [--answers FILE] [--engine NAME] -- ENGINE-COMMAND...
//! ```
//!
//! It starts the engine, sends the first `--warmup` queries untimed (the engine loads its index
//! and warms its caches), then sends every query once more, one at a time, timing each round
//! trip, and prints one JSON object ([`search_driver::report::SearchRun`]) on stdout.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use search_driver::engine::{Engine, Outcome};
use search_driver::latency::LatencySummary;
use search_driver::queries::{self, Transform};
use search_driver::report::SearchRun;

#[derive(Parser)]
#[command(about = "Time a search engine process query by query")]
struct Args {
    /// Query file: TREC topics (`id:priority:text`) or one query per line
    #[arg(long)]
    queries: PathBuf,
    /// Use only the first N queries
    #[arg(long)]
    limit: Option<usize>,
    /// Protocol command sent with each query: COUNT, TOP_10, TOP_100_COUNT, ...
    #[arg(long, default_value = "TOP_10")]
    command: String,
    /// How each query's text is rewritten before it is sent
    #[arg(long, value_enum, default_value_t = Transform::Or)]
    transform: Transform,
    /// Untimed queries sent first (from the start of the list)
    #[arg(long, default_value_t = 1000)]
    warmup: usize,
    /// Write one `answer\tquery` line per query of the timed pass to FILE
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// Engine name in the report [default: the engine program's file name]
    #[arg(long)]
    engine: Option<String>,
    /// The engine program and its arguments
    #[arg(last = true, required = true, value_name = "ENGINE-COMMAND")]
    engine_command: Vec<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut queries: Vec<String> = queries::load(&args.queries)?
        .iter()
        .map(|query| args.transform.apply(query))
        .collect();
    if let Some(limit) = args.limit {
        queries.truncate(limit);
    }
    let engine_name = args.engine.clone().unwrap_or_else(|| {
        PathBuf::from(&args.engine_command[0])
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
    });

    let mut engine = Engine::spawn(&args.engine_command)?;
    for query in queries.iter().take(args.warmup) {
        engine.ask(&args.command, query)?;
    }

    let mut latencies: Vec<Duration> = Vec::with_capacity(queries.len());
    let mut answers = String::new();
    let (mut errors, mut unsupported) = (0, 0);
    let pass = Instant::now();
    for query in &queries {
        let sent = Instant::now();
        let answer = engine.ask(&args.command, query)?;
        let latency = sent.elapsed();
        match Outcome::of(answer) {
            Outcome::Answered => latencies.push(latency),
            Outcome::Error => errors += 1,
            Outcome::Unsupported => unsupported += 1,
        }
        if args.answers.is_some() {
            answers.push_str(answer);
            answers.push('\t');
            answers.push_str(query);
            answers.push('\n');
        }
    }
    let seconds = pass.elapsed().as_secs_f64();
    let status = engine.close()?;
    if !status.success() {
        eprintln!("search-driver: {engine_name} exited with {status}");
    }
    if let Some(path) = &args.answers {
        fs::write(path, answers).with_context(|| format!("writing {}", path.display()))?;
    }

    let run = SearchRun {
        engine: engine_name,
        command: args.command,
        transform: args.transform.to_string(),
        queries: queries.len(),
        answered: latencies.len(),
        errors,
        unsupported,
        latency: LatencySummary::of(&mut latencies),
        seconds,
        qps: if seconds > 0.0 {
            queries.len() as f64 / seconds
        } else {
            0.0
        },
        answers_file: args.answers,
    };
    println!("{}", serde_json::to_string(&run)?);
    Ok(())
}
