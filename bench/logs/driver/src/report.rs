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
//! `latency_p50_us` and `latency_p99_us` when answered, `unsupported` or `error` (1) when
//! refused, `unstable_answer` (1) when repeated passes answered differently, and
//! `differs_from_<engine>` (0 or 1) for every other engine that answered it too, by the rules
//! of [`crate::answer::compare`].
//!
//! The table has one column per engine (p50 latency in microseconds; `*` after an answer that
//! differs from more engines' answers than it agrees with, `~` after one that changed between
//! passes; `unsup`/`error` for refused requests, `missing` when the engine has no run at that
//! size), one ratio column subject/baseline per baseline (below 1:
//! the subject is faster or smaller), the list of differing answers, and, given two sizes or
//! more, each engine's p50 at the largest size over its p50 at the smallest.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::answer::{compare, Verdict};
use crate::run::{Outcome, QueryRecord, RunRecord};

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
        let _ = write!(table, "{:<34}", "");
        for engine in &engines {
            let _ = write!(table, "{engine:>12}");
        }
        for baseline in &ratio_baselines {
            let _ = write!(table, "{:>18}", format!("{subject}/{baseline}"));
        }
        let _ = writeln!(table);

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
                let _ = write!(table, "{text:>12}");
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
                    let _ = write!(table, "{ratio:>18}");
                }
            }
            let _ = writeln!(table);
        }

        let _ = writeln!(table, "{:<34}(p50 latency, µs)", "query");
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
            let _ = write!(table, "{name:<34}");
            let mut p50s = Vec::new();
            for (index, record) in records.iter().enumerate() {
                let engine = &engines[index];
                let (text, p50) = match record {
                    None if cell(size, engine).and_then(|c| c.run).is_none() => {
                        ("missing".to_owned(), None)
                    }
                    None => ("-".to_owned(), None),
                    Some(record) => {
                        query_metrics(&mut metrics, engine, size, record);
                        match (&record.outcome, &record.latency) {
                            (Outcome::Unsupported, _) => ("unsup".to_owned(), None),
                            (Outcome::Error, _) => ("error".to_owned(), None),
                            (Outcome::Answered, None) => ("-".to_owned(), None),
                            (Outcome::Answered, Some(latency)) => {
                                let (agree, differ) = agreements[index];
                                let mark = if differ > agree { "*" } else { "" };
                                let unstable = if record.stable { "" } else { "~" };
                                (
                                    format!("{}{mark}{unstable}", latency_text(latency.p50_us)),
                                    Some(latency.p50_us),
                                )
                            }
                        }
                    }
                };
                p50s.push(p50);
                let _ = write!(table, "{text:>12}");
            }
            for baseline in &ratio_baselines {
                let position = |name: &str| engines.iter().position(|e| e == name);
                let ratio = match (position(subject), position(baseline)) {
                    (Some(s), Some(b)) => ratio_text(p50s[s], p50s[b]),
                    _ => "-".into(),
                };
                let _ = write!(table, "{ratio:>18}");
            }
            let _ = writeln!(table);
        }
        if differences.is_empty() {
            let _ = writeln!(table, "answers: every engine that answered agrees");
        } else {
            let _ = writeln!(table, "answers that differ (* in the table):");
            for line in differences {
                let _ = writeln!(table, "{line}");
            }
        }
    }

    if sizes.len() >= 2 {
        let (smallest, largest) = (sizes.first().copied(), sizes.last().copied());
        if let (Some(smallest), Some(largest)) = (smallest, largest) {
            let _ = writeln!(
                table,
                "\n== scaling: p50 at {} events / p50 at {} events",
                group_thousands(largest as f64, 0),
                group_thousands(smallest as f64, 0)
            );
            let _ = write!(table, "{:<34}", "query");
            for engine in &engines {
                let _ = write!(table, "{engine:>12}");
            }
            let _ = writeln!(table);
            for name in &names {
                let _ = write!(table, "{name:<34}");
                for engine in &engines {
                    let p50 = |size| {
                        cell(size, engine)
                            .and_then(|c| c.query(name))
                            .and_then(|q| q.latency.as_ref())
                            .map(|l| l.p50_us)
                    };
                    let _ = write!(table, "{:>12}", ratio_text(p50(largest), p50(smallest)));
                }
                let _ = writeln!(table);
            }
        }
    }
    Report { metrics, table }
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
    use crate::latency::Latency;

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
        }
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
