//! `search-driver`: times a search engine process, query by query or at full throughput.
//!
//! ```text
//! search-driver --queries topics.txt [--limit N] [--command TOP_10] [--transform or|and|phrase]
//!               [--warmup 1000] [--answers FILE] [--engine NAME] [--threads N]
//!               -- ENGINE-COMMAND...
//! ```
//!
//! Latency (no `--threads`): starts the engine, sends the first `--warmup` queries untimed (the
//! engine loads its index and warms its caches), then sends every query once more, one at a
//! time, timing each round trip, and prints one JSON object ([`SearchRun`]) on stdout.
//!
//! Throughput (`--threads N`): starts the engine with `--threads N` appended to its command,
//! sends the warm-up queries, then writes every query at once from a writer thread while this
//! thread reads the answers (ID-tagged and in any order when N > 1), and prints a
//! [`ThroughputRun`]: queries per second over the wall time from the first write to the last
//! answer.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use search_driver::answers;
use search_driver::engine::{Engine, Outcome};
use search_driver::latency::LatencySummary;
use search_driver::queries::{self, Transform};
use search_driver::report::{SearchRun, ThroughputRun};

#[derive(Parser)]
#[command(about = "Time a search engine process query by query, or its throughput")]
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
    /// Latency run: write one `answer\tquery` line per query of the timed pass to FILE.
    /// Throughput run: check the answers are those of FILE (written by a latency run)
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// Engine name in the report [default: the engine program's file name]
    #[arg(long)]
    engine: Option<String>,
    /// Measure throughput instead of latency: start the engine with `--threads N` (N search
    /// threads; with N > 1 it answers `ID\tanswer` lines in completion order) and send all
    /// queries without waiting for answers
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
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
    let record = match args.threads {
        None => serde_json::to_string(&latency(&args, &queries, engine_name)?)?,
        Some(threads) => serde_json::to_string(&throughput(
            &args,
            &queries,
            engine_name,
            usize::from(threads),
        )?)?,
    };
    println!("{record}");
    Ok(())
}

/// Sends each query and waits for its answer before the next, timing every round trip.
fn latency(args: &Args, queries: &[String], engine_name: String) -> anyhow::Result<SearchRun> {
    let mut engine = Engine::spawn(&args.engine_command)?;
    for query in queries.iter().take(args.warmup) {
        engine.ask(&args.command, query)?;
    }

    let mut latencies: Vec<Duration> = Vec::with_capacity(queries.len());
    let mut answers = Vec::new();
    let (mut errors, mut unsupported) = (0, 0);
    let pass = Instant::now();
    for query in queries {
        let sent = Instant::now();
        let answer = engine.ask(&args.command, query)?;
        let latency = sent.elapsed();
        match Outcome::of(answer) {
            Outcome::Answered => latencies.push(latency),
            Outcome::Error => errors += 1,
            Outcome::Unsupported => unsupported += 1,
        }
        if args.answers.is_some() {
            answers.push(answer.to_owned());
        }
    }
    let seconds = pass.elapsed().as_secs_f64();
    let status = engine.close()?;
    if !status.success() {
        eprintln!("search-driver: {engine_name} exited with {status}");
    }
    if let Some(path) = &args.answers {
        fs::write(path, answers::format(&answers, queries))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(SearchRun {
        engine: engine_name,
        command: args.command.clone(),
        transform: args.transform.to_string(),
        queries: queries.len(),
        answered: latencies.len(),
        errors,
        unsupported,
        latency: LatencySummary::of(&mut latencies),
        seconds,
        qps: per_second(queries.len(), seconds),
        answers_file: args.answers.clone(),
    })
}

/// Sends the warm-up queries, then all queries at once, and counts answers per second.
fn throughput(
    args: &Args,
    queries: &[String],
    engine_name: String,
    threads: usize,
) -> anyhow::Result<ThroughputRun> {
    // Read before the engine starts: a missing file should not cost a warm-up.
    let expected = match &args.answers {
        Some(path) => {
            Some(fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?)
        }
        None => None,
    };
    let mut command = args.engine_command.clone();
    command.extend(["--threads".to_owned(), threads.to_string()]);
    let mut engine = Engine::spawn(&command)?;
    // One thread answers in request order, untagged: the engine's latency code path.
    let tagged = threads > 1;
    let warmup = &queries[..args.warmup.min(queries.len())];
    engine.pipeline(&args.command, warmup, 0, tagged)?;
    let (answers, elapsed, status) =
        engine.pipeline_and_close(&args.command, queries, warmup.len(), tagged)?;
    if !status.success() {
        eprintln!("search-driver: {engine_name} exited with {status}");
    }
    if let (Some(text), Some(path)) = (&expected, &args.answers) {
        answers::compare(&answers, queries, text).with_context(|| {
            format!(
                "{engine_name} with {threads} threads against {}",
                path.display()
            )
        })?;
    }
    let (mut answered, mut errors, mut unsupported) = (0, 0, 0);
    for answer in &answers {
        match Outcome::of(answer) {
            Outcome::Answered => answered += 1,
            Outcome::Error => errors += 1,
            Outcome::Unsupported => unsupported += 1,
        }
    }
    let seconds = elapsed.as_secs_f64();
    Ok(ThroughputRun {
        engine: engine_name,
        command: args.command.clone(),
        transform: args.transform.to_string(),
        threads,
        queries: queries.len(),
        answered,
        errors,
        unsupported,
        seconds,
        qps: per_second(queries.len(), seconds),
        answers_checked: args.answers.clone(),
    })
}

fn per_second(count: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}
