//! The side-by-side report of a log benchmark run: a metric list and a table.
//!
//! Records, one JSON object per file:
//! - an index build: `{"engine", "events", "seconds", "index_bytes", ...}` (printed by
//!   `tantivy-logs index` and `lucene-logs index`, written by `run-logs.sh` for Quarry; other
//!   fields are ignored), its size being `events`;
//! - a timed run, [`RunRecord`] (`logs-driver run --json`), its size given by `--size`.
//!
//! The metric list (`bench/results/logs.json`) is a list of
//! `{"engine", "size", "query", "metric", "value"}`: query `index` with `seconds`,
//! `events_per_s` and `index_bytes`; each named query with `latency_mean_us`,
//! `latency_p50_us` and `latency_p99_us` (round trips) when answered, `engine_mean_us`,
//! `engine_p50_us` and `engine_p99_us` (engine times) when answered with engine times,
//! `unsupported` or `error` (1) when refused, `unstable_answer` (1) when repeated passes
//! answered differently, and `differs_from_<engine>` (0 or 1) for every other engine that
//! answered it too, by the rules of [`crate::answer::compare`].
//!
//! The table has one column per engine (p50 round trip in microseconds; `*` after an answer that
//! differs from more engines' answers than it agrees with, `~` after one that changed between
//! passes; `unsup`/`error` for refused requests, `missing` when the engine has no run at that
//! size), one ratio column subject/baseline per baseline (below 1:
//! the subject is faster or smaller), the list of differing answers, then, when some engine
//! reported engine times at that size, the same table of p50 engine times (`-` where an engine
//! gave none). Given two sizes or more, each engine's p50 at the largest size over its p50 at
//! the smallest follows, for round trips and for engine times.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::answer::{compare, Verdict};
use crate::latency::Latency;
use crate::run::{Outcome, QueryRecord, RunRecord};

/// The title of the engine-time tables.
pub const ENGINE_TIME_TITLE: &str = "engine time (p50 µs, measured inside each engine)";

/// An index build, as the engines print it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexRecord {
    pub engine: String,
    pub events: u64,
    pub seconds: f64,
    pub index_bytes: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    Index(IndexRecord),
    Run(RunRecord),
}

impl Record {
    pub fn parse(text: &str) -> anyhow::Result<Record> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        Ok(if value.get("queries").is_some() {
            Record::Run(serde_json::from_value(value)?)
        } else {
            Record::Index(serde_json::from_value(value)?)
        })
    }
}

/// One row of the metric list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub engine: String,
    pub size: u64,
    pub query: String,
    pub metric: String,
    pub value: f64,
}

pub struct Report {
    pub metrics: Vec<Metric>,
    pub table: String,
}

/// What is known of one engine at one size.
#[derive(Default)]
struct Cell<'a> {
    index: Option<&'a IndexRecord>,
    run: Option<&'a RunRecord>,
}

impl<'a> Cell<'a> {
    fn query(&self, name: &str) -> Option<&'a QueryRecord> {
        self.run?.queries.iter().find(|query| query.name == name)
    }
}

pub fn build(records: &[Record], subject: &str, baselines: &[String]) -> Report {
    // Engines: subject, baselines, then any other in order of appearance.
    let mut engines: Vec<String> = vec![subject.to_owned()];
    engines.extend(baselines.iter().cloned());
    let mut cells: BTreeMap<(u64, String), Cell> = BTreeMap::new();
    for record in records {
        let (engine, size) = match record {
            Record::Index(index) => (&index.engine, index.events),
            Record::Run(run) => (&run.engine, run.size.unwrap_or(0)),
        };
        if !engines.contains(engine) {
            engines.push(engine.clone());
        }
        let cell = cells.entry((size, engine.clone())).or_default();
        match record {
            Record::Index(index) => cell.index = Some(index),
            Record::Run(run) => cell.run = Some(run),
        }
    }
    let sizes: BTreeSet<u64> = cells.keys().map(|(size, _)| *size).collect();
    let cell = |size: u64, engine: &str| cells.get(&(size, engine.to_owned()));
    // Query names in the order of the first run that has them.
    let mut names: Vec<String> = Vec::new();
    for record in records {
        if let Record::Run(run) = record {
            for query in &run.queries {
                if !names.contains(&query.name) {
                    names.push(query.name.clone());
                }
            }
        }
    }

    let mut metrics = Vec::new();
    let mut table = String::new();
    let ratio_baselines: Vec<&String> = baselines.iter().filter(|b| *b != subject).collect();
    for &size in &sizes {
        let mut differences = Vec::new();
        let _ = writeln!(table, "\n== {} events", group_thousands(size as f64, 0));
        header(&mut table, "", &engines, subject, &ratio_baselines);

        // Index rows.
        type IndexFigure = fn(&IndexRecord) -> f64;
        let index_rows: [(&str, &str, IndexFigure, bool); 3] = [
            ("index seconds", "seconds", |r| r.seconds, true),
            (
                "index events/s",
                "events_per_s",
                |r| r.events as f64 / r.seconds.max(f64::MIN_POSITIVE),
                false,
            ),
            ("index MB", "index_bytes", |r| r.index_bytes as f64, true),
        ];
        for (label, metric, figure, ratio) in index_rows {
            let values: Vec<Option<f64>> = engines
                .iter()
                .map(|engine| cell(size, engine).and_then(|c| c.index).map(figure))
                .collect();
            let _ = write!(table, "{label:<34}");
            for (engine, value) in engines.iter().zip(&values) {
                let text = match value {
                    None => "missing".to_owned(),
                    Some(v) if metric == "index_bytes" => format!("{:.1}", v / 1e6),
                    Some(v) if metric == "seconds" => format!("{v:.2}"),
                    Some(v) => group_thousands(*v, 0),
                };
                let _ = write!(table, "{text:>width$}", width = engine_width(engine));
                if let Some(value) = value {
                    metrics.push(Metric {
                        engine: engine.clone(),
                        size,
                        query: "index".into(),
                        metric: metric.into(),
                        value: *value,
                    });
                }
            }
            if ratio {
                for baseline in &ratio_baselines {
                    let position = |name: &str| engines.iter().position(|e| e == name);
                    let ratio = match (position(subject), position(baseline)) {
                        (Some(s), Some(b)) => ratio_text(values[s], values[b]),
                        _ => "-".into(),
                    };
                    let width = ratio_width(subject, baseline);
                    let _ = write!(table, "{ratio:>width$}");
                }
            }
            let _ = writeln!(table);
        }

        let _ = writeln!(table, "{:<34}(p50 round trip, µs)", "query");
        // The engine-time table, printed after the answers when some engine reported times.
        let mut engine_table = String::new();
        let _ = writeln!(engine_table, "\n{ENGINE_TIME_TITLE}");
        header(
            &mut engine_table,
            "query",
            &engines,
            subject,
            &ratio_baselines,
        );
        let mut engine_times = false;
        for name in &names {
            let records: Vec<Option<&QueryRecord>> = engines
                .iter()
                .map(|engine| cell(size, engine).and_then(|c| c.query(name)))
                .collect();
            // Pairwise agreement of the engines that answered; an engine is marked when it
            // disagrees with more engines than it agrees with (with three engines, the odd one
            // out; with two, both).
            let mut agreements = vec![(0usize, 0usize); engines.len()];
            for (i, left) in records.iter().enumerate() {
                let Some(left) = left else { continue };
                for (j, right) in records.iter().enumerate() {
                    let Some(right) = right else { continue };
                    if i == j {
                        continue;
                    }
                    match compare(&left.request, &left.answer, &right.answer) {
                        Verdict::Missing => {}
                        verdict => {
                            let differs = verdict != Verdict::Agree;
                            if differs {
                                agreements[i].1 += 1;
                            } else {
                                agreements[i].0 += 1;
                            }
                            metrics.push(Metric {
                                engine: engines[i].clone(),
                                size,
                                query: name.clone(),
                                metric: format!("differs_from_{}", engines[j]),
                                value: f64::from(u8::from(differs)),
                            });
                            if let (true, Verdict::Differ { reason }) = (i < j, verdict) {
                                differences.push(format!(
                                    "  {name}: {} {:?} vs {} {:?} ({reason})",
                                    engines[i], left.answer, engines[j], right.answer
                                ));
                            }
                        }
                    }
                }
            }
            // Each engine's cell text (round trip, engine time) and p50s.
            let mut round_trips = Vec::new();
            let mut engine_p50s = Vec::new();
            for (index, record) in records.iter().enumerate() {
                let engine = &engines[index];
                let has_run = cell(size, engine).and_then(|c| c.run).is_some();
                let mut mark = String::new();
                if let Some(record) = record {
                    query_metrics(&mut metrics, engine, size, record);
                    let (agree, differ) = agreements[index];
                    if differ > agree {
                        mark.push('*');
                    }
                    if !record.stable {
                        mark.push('~');
                    }
                    engine_times |= record.engine_latency.is_some();
                }
                let figure = |latency: fn(&QueryRecord) -> Option<&Latency>| {
                    query_cell(*record, has_run, &mark, record.and_then(latency))
                };
                round_trips.push(figure(|r| r.latency.as_ref()));
                engine_p50s.push(figure(|r| r.engine_latency.as_ref()));
            }
            row(
                &mut table,
                name,
                &round_trips,
                &engines,
                subject,
                &ratio_baselines,
            );
            row(
                &mut engine_table,
                name,
                &engine_p50s,
                &engines,
                subject,
                &ratio_baselines,
            );
        }
        if differences.is_empty() {
            let _ = writeln!(table, "answers: every engine that answered agrees");
        } else {
            let _ = writeln!(table, "answers that differ (* in the table):");
            for line in differences {
                let _ = writeln!(table, "{line}");
            }
        }
        if engine_times {
            table.push_str(&engine_table);
        }
    }

    if sizes.len() >= 2 {
        let (smallest, largest) = (sizes.first().copied(), sizes.last().copied());
        if let (Some(smallest), Some(largest)) = (smallest, largest) {
            type Figure = fn(&QueryRecord) -> Option<&Latency>;
            let figures: [(&str, Figure); 2] = [
                ("", |q| q.latency.as_ref()),
                (", engine time", |q| q.engine_latency.as_ref()),
            ];
            for (what, figure) in figures {
                let p50 = |size: u64, engine: &str, name: &str| {
                    cell(size, engine)
                        .and_then(|c| c.query(name))
                        .and_then(figure)
                        .map(|l| l.p50_us)
                };
                let any = names.iter().any(|name| {
                    engines.iter().any(|engine| {
                        p50(largest, engine, name).is_some()
                            && p50(smallest, engine, name).is_some()
                    })
                });
                if !any && !what.is_empty() {
                    continue;
                }
                let _ = writeln!(
                    table,
                    "\n== scaling{what}: p50 at {} events / p50 at {} events",
                    group_thousands(largest as f64, 0),
                    group_thousands(smallest as f64, 0)
                );
                header(&mut table, "query", &engines, subject, &[]);
                for name in &names {
                    let _ = write!(table, "{name:<34}");
                    for engine in &engines {
                        let ratio =
                            ratio_text(p50(largest, engine, name), p50(smallest, engine, name));
                        let _ = write!(table, "{ratio:>width$}", width = engine_width(engine));
                    }
                    let _ = writeln!(table);
                }
            }
        }
    }
    Report { metrics, table }
}

/// The table's header line: `first` in the first column, the engines, the ratio columns.
fn header(
    table: &mut String,
    first: &str,
    engines: &[String],
    subject: &str,
    ratio_baselines: &[&String],
) {
    let _ = write!(table, "{first:<34}");
    for engine in engines {
        let _ = write!(table, "{engine:>width$}", width = engine_width(engine));
    }
    for baseline in ratio_baselines {
        let width = ratio_width(subject, baseline);
        let _ = write!(table, "{:>width$}", format!("{subject}/{baseline}"));
    }
    let _ = writeln!(table);
}

/// One query's cell in one engine's column: its text and p50. `record` is the engine's answer
/// to the query, `has_run` says the engine has a run at that size, `mark` is appended to a
/// figure, `latency` is the figure shown (round trips or engine times).
fn query_cell(
    record: Option<&QueryRecord>,
    has_run: bool,
    mark: &str,
    latency: Option<&Latency>,
) -> (String, Option<f64>) {
    match record {
        None if !has_run => ("missing".to_owned(), None),
        None => ("-".to_owned(), None),
        Some(record) => match (record.outcome, latency) {
            (Outcome::Unsupported, _) => ("unsup".to_owned(), None),
            (Outcome::Error, _) => ("error".to_owned(), None),
            (Outcome::Answered, None) => ("-".to_owned(), None),
            (Outcome::Answered, Some(latency)) => (
                format!("{}{mark}", latency_text(latency.p50_us)),
                Some(latency.p50_us),
            ),
        },
    }
}

/// One query's row: its cells, then the subject's ratio to each baseline.
fn row(
    table: &mut String,
    name: &str,
    cells: &[(String, Option<f64>)],
    engines: &[String],
    subject: &str,
    ratio_baselines: &[&String],
) {
    let _ = write!(table, "{name:<34}");
    for ((text, _), engine) in cells.iter().zip(engines) {
        let _ = write!(table, "{text:>width$}", width = engine_width(engine));
    }
    let p50 = |engine: &str| {
        engines
            .iter()
            .position(|e| e == engine)
            .and_then(|index| cells[index].1)
    };
    for baseline in ratio_baselines {
        let width = ratio_width(subject, baseline);
        let _ = write!(table, "{:>width$}", ratio_text(p50(subject), p50(baseline)));
    }
    let _ = writeln!(table);
}

/// The width of an engine's column: 12, or the name and two spaces when longer
/// (`victorialogs`), so that no two names run together.
fn engine_width(engine: &str) -> usize {
    (engine.chars().count() + 2).max(12)
}

/// The width of a ratio column `subject/baseline`: 18, or the title and two spaces when longer.
fn ratio_width(subject: &str, baseline: &str) -> usize {
    (subject.chars().count() + 1 + baseline.chars().count() + 2).max(18)
}

fn query_metrics(metrics: &mut Vec<Metric>, engine: &str, size: u64, record: &QueryRecord) {
    let mut push = |metric: &str, value: f64| {
        metrics.push(Metric {
            engine: engine.to_owned(),
            size,
            query: record.name.clone(),
            metric: metric.to_owned(),
            value,
        });
    };
    match record.outcome {
        Outcome::Unsupported => push("unsupported", 1.0),
        Outcome::Error => push("error", 1.0),
        Outcome::Answered => {
            if let Some(latency) = &record.latency {
                push("latency_mean_us", latency.mean_us);
                push("latency_p50_us", latency.p50_us);
                push("latency_p99_us", latency.p99_us);
            }
            if let Some(engine) = &record.engine_latency {
                push("engine_mean_us", engine.mean_us);
                push("engine_p50_us", engine.p50_us);
                push("engine_p99_us", engine.p99_us);
            }
            if !record.stable {
                push("unstable_answer", 1.0);
            }
        }
    }
}

fn ratio_text(numerator: Option<f64>, denominator: Option<f64>) -> String {
    match (numerator, denominator) {
        (Some(n), Some(d)) if d > 0.0 => format!("{:.2}", n / d),
        _ => "-".to_owned(),
    }
}

fn latency_text(micros: f64) -> String {
    if micros < 100.0 {
        format!("{micros:.1}")
    } else {
        group_thousands(micros, 0)
    }
}

/// `1234567.8` → `1,234,568` (with `decimals` 0).
fn group_thousands(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    let (integer, fraction) = text.split_at(text.find('.').unwrap_or(text.len()));
    let (sign, digits) = integer
        .strip_prefix('-')
        .map_or(("", integer), |digits| ("-", digits));
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{sign}{grouped}{fraction}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(p50_us: f64) -> Latency {
        Latency {
            samples: 3,
            mean_us: p50_us,
            p50_us,
            p99_us: p50_us,
            min_us: p50_us,
            max_us: p50_us,
        }
    }

    fn query(name: &str, request: &str, answer: &str, p50: Option<f64>) -> QueryRecord {
        QueryRecord {
            name: name.into(),
            request: request.into(),
            command: request.split('\t').next().unwrap_or("").into(),
            outcome: Outcome::of(answer),
            answer: answer.into(),
            stable: true,
            latency: p50.map(latency),
            engine_latency: None,
        }
    }

    /// [`query`] whose answers came with engine times of p50 `engine_p50`.
    fn timed(
        name: &str,
        request: &str,
        answer: &str,
        p50: Option<f64>,
        engine_p50: Option<f64>,
    ) -> QueryRecord {
        QueryRecord {
            engine_latency: engine_p50.map(latency),
            ..query(name, request, answer, p50)
        }
    }

    /// The cells of the first line starting with `name ` in `table`.
    fn cells<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
        table
            .lines()
            .find(|line| line.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row in {table}"))
            .split_whitespace()
            .collect()
    }

    fn run(engine: &str, size: u64, queries: Vec<QueryRecord>) -> Record {
        Record::Run(RunRecord {
            engine: engine.into(),
            size: Some(size),
            warmup: 1,
            repeat: 3,
            seconds: 1.0,
            queries,
            kinds: vec![],
        })
    }

    fn index(engine: &str, events: u64, seconds: f64, index_bytes: u64) -> Record {
        Record::Index(IndexRecord {
            engine: engine.into(),
            events,
            seconds,
            index_bytes,
        })
    }

    fn value(
        metrics: &[Metric],
        engine: &str,
        size: u64,
        query: &str,
        metric: &str,
    ) -> Option<f64> {
        metrics
            .iter()
            .find(|m| {
                m.engine == engine && m.size == size && m.query == query && m.metric == metric
            })
            .map(|m| m.value)
    }

    #[test]
    fn builds_metrics_and_table() {
        let records = vec![
            index("tantivy", 100, 2.0, 4_000_000),
            index("quarry", 100, 1.0, 2_000_000),
            run(
                "tantivy",
                100,
                vec![
                    query("count", "COUNT\t*", "100", Some(200.0)),
                    query("tail", "TAIL\t10\terror", "10 9 1", Some(400.0)),
                ],
            ),
            run(
                "quarry",
                100,
                vec![
                    query("count", "COUNT\t*", "100", Some(100.0)),
                    query("tail", "TAIL\t10\terror", "UNSUPPORTED", None),
                ],
            ),
            run(
                "lucene",
                100,
                vec![
                    query("count", "COUNT\t*", "99", Some(50.0)),
                    query("tail", "TAIL\t10\terror", "10 9 1", Some(300.0)),
                ],
            ),
            run(
                "quarry",
                1000,
                vec![query("count", "COUNT\t*", "1000", Some(300.0))],
            ),
        ];
        let baselines = vec!["tantivy".to_owned(), "lucene".to_owned()];
        let report = build(&records, "quarry", &baselines);
        let m = &report.metrics;
        assert_eq!(value(m, "quarry", 100, "index", "seconds"), Some(1.0));
        assert_eq!(
            value(m, "tantivy", 100, "index", "events_per_s"),
            Some(50.0)
        );
        assert_eq!(
            value(m, "quarry", 100, "count", "latency_p50_us"),
            Some(100.0)
        );
        assert_eq!(value(m, "quarry", 100, "tail", "unsupported"), Some(1.0));
        assert_eq!(value(m, "quarry", 100, "tail", "latency_p50_us"), None);
        assert_eq!(
            value(m, "lucene", 100, "count", "differs_from_tantivy"),
            Some(1.0)
        );
        assert_eq!(
            value(m, "quarry", 100, "count", "differs_from_tantivy"),
            Some(0.0)
        );
        assert_eq!(
            value(m, "tantivy", 100, "tail", "differs_from_lucene"),
            Some(0.0)
        );
        // Quarry refused TAIL: no comparison row at all.
        assert_eq!(
            value(m, "tantivy", 100, "tail", "differs_from_quarry"),
            None
        );

        let table = &report.table;
        assert!(table.contains("quarry/tantivy"), "{table}");
        let count_line = table
            .lines()
            .find(|line| line.starts_with("count "))
            .expect("a count row");
        let cells: Vec<&str> = count_line.split_whitespace().collect();
        // quarry, tantivy, lucene (differs: *), quarry/tantivy, quarry/lucene
        assert_eq!(cells, ["count", "100", "200", "50.0*", "0.50", "2.00"]);
        let tail_line = table
            .lines()
            .find(|l| l.starts_with("tail "))
            .expect("tail row");
        assert_eq!(
            tail_line.split_whitespace().collect::<Vec<_>>(),
            ["tail", "unsup", "400", "300", "-", "-"]
        );
        assert!(
            table.contains("count: quarry \"100\" vs lucene \"99\""),
            "{table}"
        );
        // The 1000-event size has only quarry: the others are missing.
        assert!(table.contains("== 1,000 events"), "{table}");
        assert!(table.contains("missing"), "{table}");
        // Scaling: quarry 300 / 100.
        let scaling = table.split("== scaling").nth(1).expect("a scaling table");
        let count_scaling = scaling
            .lines()
            .find(|l| l.starts_with("count "))
            .expect("count scaling");
        assert_eq!(
            count_scaling.split_whitespace().collect::<Vec<_>>(),
            ["count", "3.00", "-", "-"]
        );
        // No engine reported engine times: no engine-time tables, no engine metrics.
        assert!(!table.contains("engine time"), "{table}");
        assert!(!m.iter().any(|metric| metric.metric.starts_with("engine_")));
    }

    #[test]
    fn reports_engine_times() {
        let records = vec![
            run(
                "tantivy",
                100,
                vec![
                    timed("count", "COUNT\t*", "100", Some(80.0), Some(8.0)),
                    timed(
                        "tail",
                        "TAIL\t10\terror",
                        "10 9 1",
                        Some(400.0),
                        Some(300.0),
                    ),
                ],
            ),
            // An engine that does not report engine times yet.
            run(
                "quarry",
                100,
                vec![
                    query("count", "COUNT\t*", "100", Some(70.0)),
                    query("tail", "TAIL\t10\terror", "10 9 1", Some(200.0)),
                ],
            ),
            run(
                "lucene",
                100,
                vec![
                    timed("count", "COUNT\t*", "99", Some(90.0), Some(12.5)),
                    timed("tail", "TAIL\t10\terror", "ERROR", None, None),
                ],
            ),
            run(
                "quarry",
                1000,
                vec![timed("count", "COUNT\t*", "1000", Some(75.0), Some(4.0))],
            ),
            run(
                "tantivy",
                1000,
                vec![timed("count", "COUNT\t*", "1000", Some(100.0), Some(24.0))],
            ),
        ];
        let baselines = vec!["tantivy".to_owned(), "lucene".to_owned()];
        let report = build(&records, "quarry", &baselines);
        let m = &report.metrics;
        assert_eq!(
            value(m, "tantivy", 100, "count", "engine_p50_us"),
            Some(8.0)
        );
        assert_eq!(
            value(m, "tantivy", 100, "count", "engine_mean_us"),
            Some(8.0)
        );
        assert_eq!(
            value(m, "tantivy", 100, "count", "engine_p99_us"),
            Some(8.0)
        );
        // Round trips keep their names and values.
        assert_eq!(
            value(m, "tantivy", 100, "count", "latency_p50_us"),
            Some(80.0)
        );
        assert_eq!(value(m, "quarry", 100, "count", "engine_p50_us"), None);
        assert_eq!(value(m, "lucene", 100, "tail", "engine_p50_us"), None);
        assert_eq!(
            value(m, "quarry", 1000, "count", "engine_p50_us"),
            Some(4.0)
        );

        let table = &report.table;
        let small = table
            .split("== 1,000 events")
            .next()
            .expect("the 100-event tables");
        let (round_trip, engine) = small
            .split_once(ENGINE_TIME_TITLE)
            .expect("an engine-time table at 100 events");
        // quarry, tantivy, lucene (differs: *), quarry/tantivy, quarry/lucene
        assert_eq!(
            cells(round_trip, "count"),
            ["count", "70.0", "80.0", "90.0*", "0.88", "0.78"]
        );
        // Quarry gave no engine times: `-`, and so are its ratios.
        assert_eq!(
            cells(engine, "count"),
            ["count", "-", "8.0", "12.5*", "-", "-"]
        );
        assert_eq!(
            cells(engine, "tail"),
            ["tail", "-", "300", "error", "-", "-"]
        );
        let header = engine.lines().nth(1).expect("a header line");
        assert_eq!(
            header.split_whitespace().collect::<Vec<_>>(),
            [
                "query",
                "quarry",
                "tantivy",
                "lucene",
                "quarry/tantivy",
                "quarry/lucene"
            ]
        );
        // The engine-time table comes after the round-trip table and its answer lines.
        assert!(round_trip.contains("answers that differ"), "{table}");

        let large = table
            .split("== 1,000 events")
            .nth(1)
            .expect("the 1,000-event tables");
        let (_, engine) = large
            .split_once(ENGINE_TIME_TITLE)
            .expect("an engine-time table at 1,000 events");
        assert_eq!(
            cells(engine, "count"),
            ["count", "4.0", "24.0", "missing", "0.17", "-"]
        );

        // Scaling, 1,000 over 100: round trips, then engine times (tantivy 24 / 8).
        let (scaling, engine_scaling) = table
            .split_once("== scaling:")
            .and_then(|(_, rest)| rest.split_once("== scaling, engine time:"))
            .expect("both scaling tables");
        assert_eq!(cells(scaling, "count"), ["count", "1.07", "1.25", "-"]);
        assert_eq!(cells(engine_scaling, "count"), ["count", "-", "3.00", "-"]);
    }

    /// An engine name of 12 characters or more gets a wider column, so that the header's names
    /// and the ratio titles stay apart.
    #[test]
    fn widens_columns_for_long_names() {
        let records = vec![
            run(
                "quarry",
                100,
                vec![query("count", "COUNT\t*", "100", Some(100.0))],
            ),
            run(
                "lucene",
                100,
                vec![query("count", "COUNT\t*", "100", Some(50.0))],
            ),
            run(
                "victorialogs",
                100,
                vec![query("count", "COUNT\t*", "100", Some(400.0))],
            ),
        ];
        let baselines = vec!["lucene".to_owned(), "victorialogs".to_owned()];
        let report = build(&records, "quarry", &baselines);
        let header = report
            .table
            .lines()
            .find(|line| line.contains("victorialogs"))
            .expect("a header line");
        assert_eq!(
            header.split_whitespace().collect::<Vec<_>>(),
            [
                "quarry",
                "lucene",
                "victorialogs",
                "quarry/lucene",
                "quarry/victorialogs"
            ]
        );
        assert_eq!(
            cells(&report.table, "count"),
            ["count", "100", "50.0", "400", "2.00", "0.25"]
        );
        // Every row of the table is as wide as its header.
        let count_row = report
            .table
            .lines()
            .find(|line| line.starts_with("count "))
            .expect("a count row");
        assert_eq!(count_row.len(), header.len());
    }

    #[test]
    fn reads_both_record_kinds() -> anyhow::Result<()> {
        let index_text =
            r#"{"engine":"lucene","events":5,"seconds":1.5,"index_bytes":10,"segments":1}"#;
        assert_eq!(Record::parse(index_text)?, index("lucene", 5, 1.5, 10));
        let run_text =
            r#"{"engine":"x","size":5,"warmup":0,"repeat":1,"seconds":0,"queries":[],"kinds":[]}"#;
        assert!(matches!(Record::parse(run_text)?, Record::Run(_)));
        assert!(Record::parse("{}").is_err());
        Ok(())
    }

    #[test]
    fn groups_thousands() {
        let cases = [
            (0.0, "0"),
            (999.0, "999"),
            (1000.0, "1,000"),
            (1234567.8, "1,234,568"),
            (-1234.0, "-1,234"),
        ];
        for (value, expected) in cases {
            assert_eq!(group_thousands(value, 0), expected);
        }
        assert_eq!(group_thousands(1234.56, 1), "1,234.6");
    }
}
