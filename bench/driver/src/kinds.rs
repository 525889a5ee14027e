//! The per-kind report of the search-benchmark-game configuration (`search-report --by-kind`,
//! bench/README.md, "The search-benchmark-game configuration").
//!
//! [`KindReport::build`] reads index records and `search-driver --kinds` records (one per
//! engine and command) and makes:
//! - Markdown tables: indexing (seconds, MB/s, index bytes, documents), then for each command
//!   one row per kind of query (`all` first) and engine with the round trip and the engine's
//!   own time (mean, p50, p90, p99, max in µs), and under each kind the subject's ratio to each
//!   baseline;
//! - for each counting command (`COUNT`, `TOP_k_COUNT`), the answers of every engine compared
//!   query by query with the subject's: how many differ, per kind, and the list of queries
//!   where the engines do not all agree;
//! - the metric list `{"engine","workload","kind","metric","value"}` (workload `index` or the
//!   command) and the differing queries, for `bench/results/search-game.json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;

use anyhow::{bail, Context};
use serde::{Serialize, Serializer};

use crate::latency::LatencySummary;
use crate::report::{IndexRun, Record, SearchRun};

/// The kind of the figures over every query.
pub const ALL: &str = "all";

/// Differing queries printed in the table; the JSON file has them all.
const LISTED_DIFFERENCES: usize = 100;

/// A row of `bench/results/search-game.json`'s `metrics`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindMetric {
    pub engine: String,
    /// `index`, or the protocol command (`COUNT`, `TOP_10`, `TOP_10_COUNT`).
    pub workload: String,
    /// `all`, or a kind of query of the query file.
    pub kind: String,
    pub metric: String,
    #[serde(serialize_with = "integer_when_whole")]
    pub value: f64,
}

/// A query of a counting command where the engines' answers are not all equal.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CountDifference {
    pub command: String,
    pub kind: String,
    pub query: String,
    /// Each engine's answer (a count, or `ERROR`).
    pub answers: BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
pub struct KindReport {
    pub metrics: Vec<KindMetric>,
    pub count_differences: Vec<CountDifference>,
    #[serde(skip)]
    pub text: String,
}

/// A figure's name and how to read it from a summary.
type Figure = (&'static str, fn(&LatencySummary) -> f64);

/// The figures of a latency table, in column order, with their metric names.
const FIGURES: [Figure; 5] = [
    ("mean", |l| l.mean_us),
    ("p50", |l| l.p50_us),
    ("p90", |l| l.p90_us),
    ("p99", |l| l.p99_us),
    ("max", |l| l.max_us),
];

impl KindReport {
    pub fn build(
        records: &[Record],
        subject: &str,
        baselines: &[String],
    ) -> anyhow::Result<KindReport> {
        let engines = engine_order(records, subject, baselines);
        let mut report = KindReport {
            metrics: Vec::new(),
            count_differences: Vec::new(),
            text: String::new(),
        };
        let index_runs: Vec<&IndexRun> = records
            .iter()
            .filter_map(|record| match record {
                Record::Index(run) => Some(run),
                _ => None,
            })
            .collect();
        let searches: Vec<&SearchRun> = records
            .iter()
            .filter_map(|record| match record {
                Record::Search(run) => Some(run),
                _ => None,
            })
            .collect();
        if !index_runs.is_empty() {
            report.index_table(&index_runs, &engines, subject, baselines);
        }
        let mut commands: Vec<&str> = Vec::new();
        for run in &searches {
            if !commands.contains(&run.command.as_str()) {
                commands.push(&run.command);
            }
        }
        for command in &commands {
            let runs: Vec<&SearchRun> = engines
                .iter()
                .filter_map(|engine| {
                    searches
                        .iter()
                        .find(|run| run.engine == *engine && run.command == *command)
                        .copied()
                })
                .collect();
            report.latency_table(command, &runs, subject, baselines);
        }
        for command in commands.iter().filter(|command| command.contains("COUNT")) {
            let runs: Vec<&SearchRun> = engines
                .iter()
                .filter_map(|engine| {
                    searches
                        .iter()
                        .find(|run| {
                            run.engine == *engine
                                && run.command == *command
                                && run.answers_file.is_some()
                        })
                        .copied()
                })
                .collect();
            if runs.len() > 1 {
                report.count_table(command, &runs, subject)?;
            }
        }
        Ok(report)
    }

    fn push(&mut self, engine: &str, workload: &str, kind: &str, metric: &str, value: f64) {
        self.metrics.push(KindMetric {
            engine: engine.to_owned(),
            workload: workload.to_owned(),
            kind: kind.to_owned(),
            metric: metric.to_owned(),
            value,
        });
    }

    fn index_table(
        &mut self,
        runs: &[&IndexRun],
        engines: &[String],
        subject: &str,
        baselines: &[String],
    ) {
        let input_bytes = runs.iter().find_map(|run| run.input_bytes);
        let mut values: BTreeMap<(&str, &str), f64> = BTreeMap::new();
        for run in runs {
            let mut figures = vec![
                ("seconds", run.seconds),
                ("index_bytes", run.index_bytes as f64),
            ];
            if let Some(bytes) = run.input_bytes.or(input_bytes) {
                figures.push(("mb_per_s", bytes as f64 / 1e6 / run.seconds));
            }
            if let Some(docs) = run.docs {
                figures.push(("docs", docs as f64));
            }
            for (metric, value) in figures {
                self.push(&run.engine, "index", ALL, metric, value);
                values.insert((run.engine.as_str(), metric), value);
            }
        }
        let shown: Vec<&String> = engines
            .iter()
            .filter(|engine| runs.iter().any(|run| &run.engine == *engine))
            .collect();
        let ratios: Vec<&String> = baselines
            .iter()
            .filter(|b| shown.contains(b) && shown.iter().any(|e| *e == subject))
            .collect();
        let text = &mut self.text;
        let _ = writeln!(text, "## Indexing, one thread each\n");
        let _ = write!(text, "| |");
        for engine in &shown {
            let _ = write!(text, " {engine} |");
        }
        for baseline in &ratios {
            let _ = write!(text, " {subject}/{baseline} |");
        }
        let _ = writeln!(
            text,
            "\n|---|{}",
            "---:|".repeat(shown.len() + ratios.len())
        );
        for (metric, label, ratio) in [
            ("seconds", "seconds", true),
            ("mb_per_s", "MB/s", true),
            ("index_bytes", "index bytes", true),
            ("docs", "documents", false),
        ] {
            let _ = write!(text, "| {label} |");
            for engine in &shown {
                let cell = match values.get(&(engine.as_str(), metric)) {
                    Some(&v) if metric == "seconds" || metric == "mb_per_s" => format!("{v:.2}"),
                    Some(&v) => thousands(v),
                    None => "-".to_owned(),
                };
                let _ = write!(text, " {cell} |");
            }
            for baseline in &ratios {
                let cell = if ratio {
                    ratio_cell(
                        values.get(&(subject, metric)).copied(),
                        values.get(&(baseline.as_str(), metric)).copied(),
                    )
                } else {
                    String::new()
                };
                let _ = write!(text, " {cell} |");
            }
            text.push('\n');
        }
        text.push('\n');
    }

    /// One command's table: per kind, a row per engine and a ratio row per baseline.
    fn latency_table(
        &mut self,
        command: &str,
        runs: &[&SearchRun],
        subject: &str,
        baselines: &[String],
    ) {
        let mut kinds: Vec<&str> = vec![ALL];
        for run in runs {
            for kind in &run.kinds {
                if !kinds.contains(&kind.kind.as_str()) {
                    kinds.push(&kind.kind);
                }
            }
        }
        let queries = runs.iter().map(|run| run.queries).max().unwrap_or(0);
        let passes = runs.iter().map(|run| run.repeat).max().unwrap_or(1);
        let _ = writeln!(
            self.text,
            "## {command}: {} queries, {passes} timed pass(es); µs\n\n\
             `rt`: round trip, timed by the driver (pipe included); `engine`: the engine's own \
             time for the request; `-`: not reported\n",
            thousands(queries as f64)
        );
        let mut header = "| kind | engine | queries | refused |".to_owned();
        for side in ["rt", "engine"] {
            for (name, _) in FIGURES {
                let _ = write!(header, " {side} {name} |");
            }
        }
        let _ = writeln!(self.text, "{header}");
        let _ = writeln!(self.text, "|---|---|{}", "---:|".repeat(12));
        let subject_run = runs.iter().find(|run| run.engine == subject);
        for kind in kinds {
            for run in runs {
                let Some(Figures {
                    round_trip,
                    engine_time,
                    queries,
                    refused,
                }) = Figures::of(run, kind)
                else {
                    continue;
                };
                let _ = write!(
                    self.text,
                    "| {kind} | {} | {} | {refused} |",
                    run.engine,
                    thousands(queries as f64)
                );
                self.push(&run.engine, command, kind, "queries", queries as f64);
                self.push(&run.engine, command, kind, "refused", refused as f64);
                for (side, summary) in [("round_trip", &round_trip), ("engine", &engine_time)] {
                    for (name, pick) in FIGURES {
                        let value = summary.as_ref().map(pick);
                        let _ = write!(self.text, " {} |", micros(value));
                        if let Some(value) = value {
                            self.push(
                                &run.engine,
                                command,
                                kind,
                                &format!("{side}_{name}_us"),
                                value,
                            );
                        }
                    }
                }
                self.text.push('\n');
            }
            let Some(own) = subject_run.and_then(|run| Figures::of(run, kind)) else {
                continue;
            };
            for baseline in baselines {
                let Some(theirs) = runs
                    .iter()
                    .find(|run| &run.engine == baseline)
                    .and_then(|run| Figures::of(run, kind))
                else {
                    continue;
                };
                let _ = write!(self.text, "| {kind} | {subject}/{baseline} | | |");
                for (mine, other) in [
                    (&own.round_trip, &theirs.round_trip),
                    (&own.engine_time, &theirs.engine_time),
                ] {
                    for (_, pick) in FIGURES {
                        let cell = ratio_cell(mine.as_ref().map(pick), other.as_ref().map(pick));
                        let _ = write!(self.text, " {cell} |");
                    }
                }
                self.text.push('\n');
            }
        }
        let silent: Vec<&str> = runs
            .iter()
            .filter(|run| run.answered > 0 && run.engine_time.is_none())
            .map(|run| run.engine.as_str())
            .collect();
        if !silent.is_empty() {
            let _ = writeln!(
                self.text,
                "\nNo engine time reported by {} (answers without `<TAB>NANOS`).",
                silent.join(", ")
            );
        }
        self.text.push('\n');
    }

    /// Compares each engine's answers with the subject's (or, without the subject, the first
    /// engine's) query by query.
    fn count_table(
        &mut self,
        command: &str,
        runs: &[&SearchRun],
        subject: &str,
    ) -> anyhow::Result<()> {
        let mut answers: Vec<(&str, Vec<AnswerLine>)> = Vec::new();
        for run in runs {
            // `build` only passes runs with an answers file.
            let path = run
                .answers_file
                .as_ref()
                .context("run has no answers file")?;
            let text =
                fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            answers.push((&run.engine, text.lines().map(AnswerLine::parse).collect()));
        }
        let reference = answers
            .iter()
            .position(|(engine, _)| *engine == subject)
            .unwrap_or(0);
        let (reference_engine, reference_lines) = (answers[reference].0, &answers[reference].1);
        for (engine, lines) in &answers {
            if lines.len() != reference_lines.len()
                || lines
                    .iter()
                    .zip(reference_lines)
                    .any(|(a, b)| a.kind != b.kind || a.query != b.query)
            {
                bail!(
                    "{command}: the answers of {engine} and {reference_engine} are not for the same queries (another --limit or query file?)"
                );
            }
        }
        let mut kinds: Vec<&str> = vec![ALL];
        for line in reference_lines {
            if !kinds.contains(&line.kind.as_str()) {
                kinds.push(&line.kind);
            }
        }
        let others: Vec<&(&str, Vec<AnswerLine>)> = answers
            .iter()
            .filter(|(engine, _)| *engine != reference_engine)
            .collect();
        let _ = writeln!(
            self.text,
            "## {command} answers: queries where an engine's differs from {reference_engine}'s\n"
        );
        let _ = write!(self.text, "| kind | queries |");
        for (engine, _) in &others {
            let _ = write!(self.text, " {engine} |");
        }
        let _ = writeln!(self.text, "\n|---|---:|{}", "---:|".repeat(others.len()));
        for kind in &kinds {
            let member = |line: &AnswerLine| *kind == ALL || line.kind == *kind;
            let queries = reference_lines.iter().filter(|l| member(l)).count();
            let _ = write!(self.text, "| {kind} | {} |", thousands(queries as f64));
            for (engine, lines) in &others {
                let differ = lines
                    .iter()
                    .zip(reference_lines)
                    .filter(|(line, reference)| {
                        member(reference) && line.answer != reference.answer
                    })
                    .count();
                let _ = write!(self.text, " {differ} |");
                self.push(engine, command, kind, "count_mismatches", differ as f64);
            }
            self.text.push('\n');
        }
        let mut differences = Vec::new();
        for (index, line) in reference_lines.iter().enumerate() {
            if answers
                .iter()
                .all(|(_, lines)| lines[index].answer == line.answer)
            {
                continue;
            }
            differences.push(CountDifference {
                command: command.to_owned(),
                kind: line.kind.clone(),
                query: line.query.clone(),
                answers: answers
                    .iter()
                    .map(|(engine, lines)| ((*engine).to_owned(), lines[index].answer.clone()))
                    .collect(),
            });
        }
        if !differences.is_empty() {
            let _ = write!(self.text, "\n| kind | query |");
            for (engine, _) in &answers {
                let _ = write!(self.text, " {engine} |");
            }
            let _ = writeln!(self.text, "\n|---|---|{}", "---:|".repeat(answers.len()));
            for difference in differences.iter().take(LISTED_DIFFERENCES) {
                let _ = write!(
                    self.text,
                    "| {} | `{}` |",
                    difference.kind,
                    difference.query.replace('|', "\\|")
                );
                for (engine, _) in &answers {
                    let _ = write!(self.text, " {} |", difference.answers[*engine]);
                }
                self.text.push('\n');
            }
            if differences.len() > LISTED_DIFFERENCES {
                let _ = writeln!(
                    self.text,
                    "\n… and {} more (all in the results file)",
                    differences.len() - LISTED_DIFFERENCES
                );
            }
        }
        self.text.push('\n');
        self.count_differences.extend(differences);
        Ok(())
    }
}

/// One engine's figures for one kind of query (or [`ALL`]) of one command.
struct Figures {
    round_trip: Option<LatencySummary>,
    engine_time: Option<LatencySummary>,
    queries: usize,
    /// Answered `ERROR` or `UNSUPPORTED`.
    refused: usize,
}

impl Figures {
    fn of(run: &SearchRun, kind: &str) -> Option<Figures> {
        if kind == ALL {
            return Some(Figures {
                round_trip: run.latency.clone(),
                engine_time: run.engine_time.clone(),
                queries: run.queries,
                refused: run.errors + run.unsupported,
            });
        }
        let k = run.kinds.iter().find(|k| k.kind == kind)?;
        Some(Figures {
            round_trip: k.round_trip.clone(),
            engine_time: k.engine_time.clone(),
            queries: k.queries,
            refused: k.errors + k.unsupported,
        })
    }
}

/// A line of an answers file: `answer\tkind\tquery` (`search-driver --kinds`), or
/// `answer\tquery`, whose kind is then `all`.
struct AnswerLine {
    answer: String,
    kind: String,
    query: String,
}

impl AnswerLine {
    fn parse(line: &str) -> AnswerLine {
        let (answer, rest) = line.split_once('\t').unwrap_or((line, ""));
        let (kind, query) = rest.split_once('\t').unwrap_or((ALL, rest));
        AnswerLine {
            answer: answer.to_owned(),
            kind: kind.to_owned(),
            query: query.to_owned(),
        }
    }
}

/// The engines in table order: the subject, the baselines, then any other in record order.
fn engine_order(records: &[Record], subject: &str, baselines: &[String]) -> Vec<String> {
    let mut engines: Vec<String> = std::iter::once(subject.to_owned())
        .chain(baselines.iter().cloned())
        .collect();
    for record in records {
        let engine = match record {
            Record::Index(run) => &run.engine,
            Record::Search(run) => &run.engine,
            Record::Throughput(run) => &run.engine,
        };
        if !engines.contains(engine) {
            engines.push(engine.clone());
        }
    }
    engines
}

/// Thousands separated, no decimals.
fn thousands(value: f64) -> String {
    let digits = format!("{value:.0}");
    let (sign, digits) = match digits.strip_prefix('-') {
        Some(rest) => ("-", rest.to_owned()),
        None => ("", digits),
    };
    let mut out = sign.to_owned();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Microseconds: one decimal below 100, whole and thousands-separated above.
fn micros(value: Option<f64>) -> String {
    match value {
        None => "-".to_owned(),
        Some(v) if v >= 100.0 => thousands(v),
        Some(v) => format!("{v:.1}"),
    }
}

fn ratio_cell(subject: Option<f64>, baseline: Option<f64>) -> String {
    match (subject, baseline) {
        (Some(s), Some(b)) if b > 0.0 => format!("{:.2}", s / b),
        _ => "-".to_owned(),
    }
}

/// Counts read better as `123` than `123.0`.
fn integer_when_whole<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    const EXACT: f64 = (1u64 << 53) as f64;
    if value.fract() == 0.0 && value.abs() < EXACT {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::KindRun;

    fn summary(us: f64) -> LatencySummary {
        LatencySummary {
            mean_us: us,
            p50_us: us,
            p75_us: us,
            p90_us: us * 2.0,
            p95_us: us * 2.0,
            p99_us: us * 4.0,
            p999_us: us * 4.0,
            max_us: us * 8.0,
        }
    }

    fn kind(name: &str, us: f64, engine_us: Option<f64>) -> KindRun {
        KindRun {
            kind: name.to_owned(),
            queries: 2,
            answered: 2,
            errors: 0,
            unsupported: 0,
            round_trip: Some(summary(us)),
            engine_time: engine_us.map(summary),
        }
    }

    fn run(engine: &str, command: &str, us: f64, engine_us: Option<f64>) -> Record {
        Record::Search(SearchRun {
            engine: engine.to_owned(),
            command: command.to_owned(),
            transform: "or".to_owned(),
            queries: 4,
            answered: 4,
            errors: 0,
            unsupported: 0,
            latency: Some(summary(us)),
            seconds: 1.0,
            qps: 4.0,
            answers_file: None,
            engine_time: engine_us.map(summary),
            repeat: 3,
            kinds: vec![
                kind("term", us, engine_us),
                kind("phrase", us * 2.0, engine_us.map(|e| e * 2.0)),
            ],
        })
    }

    /// The cells of the table row whose first two cells are `first` and `second`.
    fn row<'t>(text: &'t str, first: &str, second: &str) -> Vec<&'t str> {
        text.lines()
            .map(|line| {
                line.trim_matches('|')
                    .split('|')
                    .map(str::trim)
                    .collect::<Vec<_>>()
            })
            .find(|cells| cells.len() > 1 && cells[0] == first && cells[1] == second)
            .unwrap_or_default()
    }

    fn metric(report: &KindReport, engine: &str, kind: &str, name: &str) -> Option<f64> {
        report
            .metrics
            .iter()
            .find(|m| m.engine == engine && m.kind == kind && m.metric == name)
            .map(|m| m.value)
    }

    #[test]
    fn reports_round_trip_and_engine_time_per_kind() -> anyhow::Result<()> {
        let records = vec![
            Record::Index(IndexRun {
                engine: "tantivy".to_owned(),
                seconds: 2.0,
                index_bytes: 2_000_000,
                input_bytes: Some(4_000_000),
                docs: Some(2000),
            }),
            Record::Index(IndexRun {
                engine: "quarry".to_owned(),
                seconds: 1.0,
                index_bytes: 1_000_000,
                input_bytes: None,
                docs: None,
            }),
            run("tantivy", "TOP_10", 20.0, Some(10.0)),
            run("quarry", "TOP_10", 10.0, None),
            run("lucene", "TOP_10", 40.0, Some(20.0)),
        ];
        let baselines = ["tantivy".to_owned(), "lucene".to_owned()];
        let report = KindReport::build(&records, "quarry", &baselines)?;
        let text = &report.text;
        assert_eq!(
            row(text, "seconds", "1.00"),
            ["seconds", "1.00", "2.00", "0.50"]
        );
        assert_eq!(row(text, "MB/s", "4.00"), ["MB/s", "4.00", "2.00", "2.00"]);
        assert_eq!(
            row(text, "index bytes", "1,000,000"),
            ["index bytes", "1,000,000", "2,000,000", "0.50"]
        );
        assert_eq!(row(text, "documents", "-"), ["documents", "-", "2,000", ""]);
        // Quarry reported no engine time: its engine cells and ratios are `-`.
        assert_eq!(
            row(text, "phrase", "quarry"),
            [
                "phrase", "quarry", "2", "0", "20.0", "20.0", "40.0", "80.0", "160", "-", "-", "-",
                "-", "-"
            ]
        );
        assert_eq!(
            row(text, "all", "quarry/tantivy"),
            [
                "all",
                "quarry/tantivy",
                "",
                "",
                "0.50",
                "0.50",
                "0.50",
                "0.50",
                "0.50",
                "-",
                "-",
                "-",
                "-",
                "-"
            ]
        );
        assert_eq!(row(text, "term", "quarry/lucene")[4], "0.25");
        assert!(text.contains("No engine time reported by quarry"), "{text}");
        assert_eq!(
            metric(&report, "lucene", "phrase", "engine_max_us"),
            Some(320.0)
        );
        assert_eq!(
            metric(&report, "quarry", "all", "round_trip_p99_us"),
            Some(40.0)
        );
        assert_eq!(metric(&report, "quarry", "all", "engine_p99_us"), None);
        assert_eq!(metric(&report, "quarry", "all", "mb_per_s"), Some(4.0));
        Ok(())
    }

    #[test]
    fn lists_queries_where_counts_differ() -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!("search-kinds-test-{}", std::process::id()));
        fs::create_dir_all(&dir)?;
        let mut records = Vec::new();
        for (engine, answers) in [
            (
                "quarry",
                "3\tterm\tfox\n1\tphrase\t\"a b\"\n0\tphrase\t\"c d\"\n",
            ),
            (
                "tantivy",
                "3\tterm\tfox\n1\tphrase\t\"a b\"\n0\tphrase\t\"c d\"\n",
            ),
            (
                "lucene",
                "4\tterm\tfox\n1\tphrase\t\"a b\"\nERROR\tphrase\t\"c d\"\n",
            ),
        ] {
            let path = dir.join(engine);
            fs::write(&path, answers)?;
            let Record::Search(mut search) = run(engine, "COUNT", 1.0, Some(1.0)) else {
                unreachable!("run() builds a search record")
            };
            search.answers_file = Some(path);
            records.push(Record::Search(search));
        }
        let baselines = ["tantivy".to_owned(), "lucene".to_owned()];
        let report = KindReport::build(&records, "quarry", &baselines);
        // A file of other queries cannot be compared.
        fs::write(dir.join("tantivy"), "3\tterm\tfox\n")?;
        let mismatched = KindReport::build(&records, "quarry", &baselines);
        fs::remove_dir_all(&dir)?;
        let report = report?;
        let text = &report.text;
        assert_eq!(row(text, "all", "3"), ["all", "3", "0", "2"]);
        assert_eq!(row(text, "phrase", "2"), ["phrase", "2", "0", "1"]);
        assert_eq!(row(text, "term", "`fox`"), ["term", "`fox`", "3", "3", "4"]);
        assert_eq!(
            row(text, "phrase", "`\"c d\"`"),
            ["phrase", "`\"c d\"`", "0", "0", "ERROR"]
        );
        assert_eq!(report.count_differences.len(), 2);
        assert_eq!(
            metric(&report, "lucene", "all", "count_mismatches"),
            Some(2.0)
        );
        assert_eq!(
            metric(&report, "tantivy", "term", "count_mismatches"),
            Some(0.0)
        );
        let json = serde_json::to_value(&report)?;
        assert_eq!(
            json["count_differences"][0],
            serde_json::json!({"command": "COUNT", "kind": "term", "query": "fox",
                "answers": {"lucene": "4", "quarry": "3", "tantivy": "3"}})
        );
        assert!(mismatched.is_err());
        Ok(())
    }

    #[test]
    fn formats_figures() {
        assert_eq!(thousands(1234567.0), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(micros(Some(12.34)), "12.3");
        assert_eq!(micros(Some(1234.4)), "1,234");
        assert_eq!(micros(None), "-");
        assert_eq!(ratio_cell(Some(1.0), Some(4.0)), "0.25");
        assert_eq!(ratio_cell(Some(1.0), None), "-");
    }
}
