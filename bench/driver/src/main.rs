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
    /// Concurrent clients: N engine processes, each single-threaded, fed from one shared
    /// queue of queries by N driver threads (the next query goes to whichever client is
    /// free). The report's `qps` is then the throughput of N search threads.
    #[arg(long, default_value_t = 1)]
    clients: usize,
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

    anyhow::ensure!(args.clients >= 1, "--clients must be at least 1");
    let pass = timed_pass(&args, &queries, &engine_name)?;
    if let Some(path) = &args.answers {
        let mut text = String::new();
        for (index, answer) in &pass.answers {
            text.push_str(answer);
            text.push('\t');
            text.push_str(&queries[*index]);
            text.push('\n');
        }
        fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let Pass {
        mut latencies,
        errors,
        unsupported,
        seconds,
        ..
    } = pass;
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

/// What a timed pass collected: latencies of answered queries, counts of the others, and
/// (with `--answers`) each query's answer by query index.
#[derive(Default)]
struct Pass {
    latencies: Vec<Duration>,
    errors: usize,
    unsupported: usize,
    answers: Vec<(usize, String)>,
    seconds: f64,
}

impl Pass {
    fn merge(&mut self, other: Pass) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.unsupported += other.unsupported;
        self.answers.extend(other.answers);
    }
}

/// Starts `args.clients` engine processes, warms each up, then times every query once: each
/// client thread takes the next query from one shared queue as soon as it is free (with one
/// client, the queries go in file order).
fn timed_pass(args: &Args, queries: &[String], engine_name: &str) -> anyhow::Result<Pass> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut engines = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        let mut engine = Engine::spawn(&args.engine_command)?;
        for query in queries.iter().take(args.warmup) {
            engine.ask(&args.command, query)?;
        }
        engines.push(engine);
    }
    let keep_answers = args.answers.is_some();
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let parts = std::thread::scope(|scope| {
        let workers: Vec<_> = engines
            .iter_mut()
            .map(|engine| {
                let next = &next;
                scope.spawn(move || -> anyhow::Result<Pass> {
                    let mut pass = Pass::default();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(query) = queries.get(index) else {
                            break;
                        };
                        let sent = Instant::now();
                        let answer = engine.ask(&args.command, query)?;
                        let latency = sent.elapsed();
                        match Outcome::of(answer) {
                            Outcome::Answered => pass.latencies.push(latency),
                            Outcome::Error => pass.errors += 1,
                            Outcome::Unsupported => pass.unsupported += 1,
                        }
                        if keep_answers {
                            pass.answers.push((index, answer.to_owned()));
                        }
                    }
                    Ok(pass)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let seconds = started.elapsed().as_secs_f64();
    for engine in engines {
        let status = engine.close()?;
        if !status.success() {
            eprintln!("search-driver: {engine_name} exited with {status}");
        }
    }
    let mut pass = Pass {
        seconds,
        ..Pass::default()
    };
    for part in parts {
        pass.merge(part);
    }
    pass.answers.sort_by_key(|(index, _)| *index);
    Ok(pass)
}
