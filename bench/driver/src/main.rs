//! `search-driver`: times a search engine process, query by query or at full throughput.
//!
//! ```text
//! search-driver --queries topics.txt [--kinds] [--limit N] [--command TOP_10]
//!               [--transform or|and|phrase] [--warmup 1000] [--warmup-passes P] [--repeat R]
//!               [--answers FILE] [--engine NAME] [--threads N] -- ENGINE-COMMAND...
//! ```
//!
//! Latency (no `--threads`): starts the engine, sends the first `--warmup` queries untimed (the
//! engine loads its index and warms its caches), then `--warmup-passes` untimed passes over
//! every query, then `--repeat` timed passes (default 1), one query at a time, timing each
//! round trip, and prints one JSON object ([`SearchRun`]) on stdout. An answer ending in
//! `<TAB>NANOS` (an engine started with `--engine-time`) carries the engine's own time, reported
//! beside the round trip. With `--kinds` the query file holds `KIND<TAB>query` lines and the
//! figures are also given per kind.
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
use search_driver::engine::{split_engine_time, Engine, Outcome};
use search_driver::latency::LatencySummary;
use search_driver::queries::{self, Transform};
use search_driver::report::{KindRun, SearchRun, ThroughputRun};

#[derive(Parser)]
#[command(about = "Time a search engine process query by query, or its throughput")]
struct Args {
    /// Query file: TREC topics (`id:priority:text`) or one query per line
    #[arg(long)]
    queries: PathBuf,
    /// The query file holds `KIND<TAB>query` lines (bench/game/queries.tsv): figures are also
    /// given per kind, and answers files hold `answer<TAB>kind<TAB>query` lines
    #[arg(long)]
    kinds: bool,
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
    /// Untimed passes over every query after the --warmup queries (latency runs)
    #[arg(long, default_value_t = 0)]
    warmup_passes: usize,
    /// Timed passes over every query (latency runs); every pass must give the same answers
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
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

/// The queries to send and, with `--kinds`, the kind of each.
struct QuerySet {
    texts: Vec<String>,
    kinds: Option<Vec<String>>,
}

impl QuerySet {
    fn load(args: &Args) -> anyhow::Result<QuerySet> {
        let (texts, kinds): (Vec<String>, Option<Vec<String>>) = if args.kinds {
            let (kinds, texts) = queries::load_kinds(&args.queries)?
                .into_iter()
                .map(|q| (q.kind, q.query))
                .unzip();
            (texts, Some(kinds))
        } else {
            (queries::load(&args.queries)?, None)
        };
        let mut set = QuerySet {
            texts: texts.iter().map(|q| args.transform.apply(q)).collect(),
            kinds,
        };
        if let Some(limit) = args.limit {
            set.texts.truncate(limit);
            if let Some(kinds) = &mut set.kinds {
                kinds.truncate(limit);
            }
        }
        Ok(set)
    }

    /// What names each query in an answers file: the query, or `kind\tquery`.
    fn labels(&self) -> Vec<String> {
        match &self.kinds {
            None => self.texts.clone(),
            Some(kinds) => kinds
                .iter()
                .zip(&self.texts)
                .map(|(kind, text)| format!("{kind}\t{text}"))
                .collect(),
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let set = QuerySet::load(&args)?;
    let engine_name = args.engine.clone().unwrap_or_else(|| {
        PathBuf::from(&args.engine_command[0])
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
    });
    let record = match args.threads {
        None => serde_json::to_string(&latency(&args, &set, engine_name)?)?,
        Some(threads) => {
            serde_json::to_string(&throughput(&args, &set, engine_name, usize::from(threads))?)?
        }
    };
    println!("{record}");
    Ok(())
}

/// One answered query's timings in one timed pass.
struct Sample {
    query: usize,
    round_trip: Duration,
    engine: Option<Duration>,
}

/// Sends each query and waits for its answer before the next, timing every round trip.
fn latency(args: &Args, set: &QuerySet, engine_name: String) -> anyhow::Result<SearchRun> {
    let queries = &set.texts;
    let mut engine = Engine::spawn(&args.engine_command)?;
    for query in queries.iter().take(args.warmup) {
        engine.ask(&args.command, query)?;
    }
    for _ in 0..args.warmup_passes {
        for query in queries {
            engine.ask(&args.command, query)?;
        }
    }

    let repeat = usize::from(args.repeat);
    let mut samples: Vec<Sample> = Vec::with_capacity(queries.len() * repeat);
    // The first timed pass's answers, without engine times; later passes must give the same.
    let mut answers: Vec<String> = Vec::with_capacity(queries.len());
    let pass = Instant::now();
    for round in 0..repeat {
        for (index, query) in queries.iter().enumerate() {
            let sent = Instant::now();
            let line = engine.ask(&args.command, query)?;
            let round_trip = sent.elapsed();
            let (answer, engine_time) = split_engine_time(line);
            if round == 0 {
                answers.push(answer.to_owned());
            } else if answers[index] != answer {
                anyhow::bail!(
                    "{engine_name} answered {query:?} with {answer} in timed pass {}, {} in the first",
                    round + 1,
                    answers[index]
                );
            }
            if Outcome::of(answer) == Outcome::Answered {
                samples.push(Sample {
                    query: index,
                    round_trip,
                    engine: engine_time,
                });
            }
        }
    }
    let seconds = pass.elapsed().as_secs_f64() / repeat as f64;
    let status = engine.close()?;
    if !status.success() {
        eprintln!("search-driver: {engine_name} exited with {status}");
    }
    if let Some(path) = &args.answers {
        fs::write(path, answers::format(&answers, &set.labels()))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let everything = summarize("all", &answers, &samples, |_| true);
    if everything.answered > 0 && everything.engine_time.is_none() {
        eprintln!("search-driver: {engine_name} reported no engine time (<TAB>NANOS) for some or all answers: engine-time figures not reported");
    }
    let mut kinds: Vec<KindRun> = Vec::new();
    if let Some(query_kinds) = &set.kinds {
        let mut names: Vec<&str> = Vec::new();
        for kind in query_kinds {
            if !names.contains(&kind.as_str()) {
                names.push(kind);
            }
        }
        for name in names {
            kinds.push(summarize(name, &answers, &samples, |query| {
                query_kinds[query] == name
            }));
        }
    }
    Ok(SearchRun {
        engine: engine_name,
        command: args.command.clone(),
        transform: args.transform.to_string(),
        queries: everything.queries,
        answered: everything.answered,
        errors: everything.errors,
        unsupported: everything.unsupported,
        latency: everything.round_trip,
        seconds,
        qps: per_second(queries.len(), seconds),
        answers_file: args.answers.clone(),
        engine_time: everything.engine_time,
        repeat,
        kinds,
    })
}

/// The figures of the queries `member` picks: counts from their answers (the first timed
/// pass), latencies from their samples (every timed pass). Engine time is summarized only when
/// every sample has one, so a figure never stands for part of the queries.
fn summarize(
    kind: &str,
    answers: &[String],
    samples: &[Sample],
    member: impl Fn(usize) -> bool,
) -> KindRun {
    let (mut queries, mut answered, mut errors, mut unsupported) = (0, 0, 0, 0);
    for (_, answer) in answers.iter().enumerate().filter(|(i, _)| member(*i)) {
        queries += 1;
        match Outcome::of(answer) {
            Outcome::Answered => answered += 1,
            Outcome::Error => errors += 1,
            Outcome::Unsupported => unsupported += 1,
        }
    }
    let picked: Vec<&Sample> = samples.iter().filter(|s| member(s.query)).collect();
    let mut round_trips: Vec<Duration> = picked.iter().map(|s| s.round_trip).collect();
    let engine_times: Option<Vec<Duration>> = picked.iter().map(|s| s.engine).collect();
    KindRun {
        kind: kind.to_owned(),
        queries,
        answered,
        errors,
        unsupported,
        round_trip: LatencySummary::of(&mut round_trips),
        engine_time: engine_times.and_then(|mut times| LatencySummary::of(&mut times)),
    }
}

/// Sends the warm-up queries, then all queries at once, and counts answers per second.
fn throughput(
    args: &Args,
    set: &QuerySet,
    engine_name: String,
    threads: usize,
) -> anyhow::Result<ThroughputRun> {
    let queries = &set.texts;
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
        answers::compare(&answers, &set.labels(), text).with_context(|| {
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
