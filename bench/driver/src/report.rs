//! The records the benchmark tools print, and the side-by-side report built from them.
//!
//! Three kinds of record, one JSON object per file:
//! - an index run (`tantivy-bench index`, or written by `run-search.sh` for Quarry):
//!   `{"engine", "seconds", "index_bytes", "input_bytes"?}` (other fields are ignored);
//! - a latency run, printed by `search-driver` ([`SearchRun`]);
//! - a throughput run, printed by `search-driver --threads N` ([`ThroughputRun`]).
//!
//! The report flattens them into `{"engine", "workload", "metric", "value"}` rows (the format of
//! `bench/results/search.json`) and prints a table with one column per engine and one ratio
//! column subject/baseline per baseline (below 1 means the subject is faster or smaller, above 1
//! for `mb_per_s` and `qps_threads_N` means it does more per second).
//!
//! For counting workloads, each baseline's answers are compared with the subject's query by
//! query: metric `count_mismatches` of engine `tantivy` is the number of queries where tantivy's
//! answer differs from the subject's.

use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

use anyhow::Context;
use serde::{Deserialize, Serialize, Serializer};

use crate::latency::LatencySummary;

/// What `search-driver` prints: one pass of queries through one engine.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchRun {
    pub engine: String,
    pub command: String,
    pub transform: String,
    pub queries: usize,
    /// Queries answered with a result (neither `ERROR` nor `UNSUPPORTED`); the latency figures
    /// are over these only, so a fast parse error never flatters an engine's latency.
    pub answered: usize,
    pub errors: usize,
    pub unsupported: usize,
    #[serde(flatten)]
    pub latency: Option<LatencySummary>,
    /// Wall time of the timed pass, all queries included (with `--repeat`, of the average
    /// pass).
    pub seconds: f64,
    /// Queries per second over the timed pass, one query in flight at a time (not reported:
    /// throughput is measured by a [`ThroughputRun`], with the pipe kept full).
    pub qps: f64,
    /// Where `--answers` wrote one `answer\tquery` line per query, in query order
    /// (`answer\tkind\tquery` with `--kinds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers_file: Option<PathBuf>,
    /// The engine's own time per answered query (`<TAB>NANOS` after each answer), when the
    /// engine reported it for every one; `None` is "not reported".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_time: Option<LatencySummary>,
    /// Timed passes over the queries: the figures are over `answered × repeat` samples.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: usize,
    /// With `--kinds`: the same figures for each kind of query, in the order kinds first
    /// appear in the query file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<KindRun>,
}

fn one() -> usize {
    1
}

fn is_one(value: &usize) -> bool {
    *value == 1
}

/// One kind's share of a [`SearchRun`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindRun {
    pub kind: String,
    pub queries: usize,
    pub answered: usize,
    pub errors: usize,
    pub unsupported: usize,
    /// Round trips of the answered queries, every timed pass.
    pub round_trip: Option<LatencySummary>,
    /// The engine's own times, when it reported one for every answered query.
    #[serde(default)]
    pub engine_time: Option<LatencySummary>,
}

impl SearchRun {
    pub fn workload(&self) -> String {
        workload_name(&self.transform, &self.command)
    }
}

/// What `search-driver --threads N` prints: all queries sent at once to an engine searching
/// with N threads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ThroughputRun {
    pub engine: String,
    pub command: String,
    pub transform: String,
    /// The engine's search threads (`--threads`).
    pub threads: usize,
    pub queries: usize,
    pub answered: usize,
    pub errors: usize,
    pub unsupported: usize,
    /// Wall time from the first request written to the last answer read.
    pub seconds: f64,
    /// `queries / seconds`.
    pub qps: f64,
    /// The latency run's answers file these answers were checked against (equal, or the run
    /// fails).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers_checked: Option<PathBuf>,
}

impl ThroughputRun {
    pub fn workload(&self) -> String {
        workload_name(&self.transform, &self.command)
    }
}

/// `or_top10`, `and_count`, `phrase_top10_count`, ...: the transform, then the command in lower
/// case without the `_` after `TOP`.
pub fn workload_name(transform: &str, command: &str) -> String {
    let command = command.to_ascii_lowercase().replacen("top_", "top", 1);
    format!("{transform}_{command}")
}

/// One index build.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IndexRun {
    pub engine: String,
    pub seconds: f64,
    pub index_bytes: u64,
    /// Uncompressed input size; when an engine's record lacks it, another record's is used
    /// (all engines index the same file).
    #[serde(default)]
    pub input_bytes: Option<u64>,
    /// Documents indexed, when the record says.
    #[serde(default)]
    pub docs: Option<u64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Record {
    // The first kind whose required fields are all there wins, so each kind comes before the
    // kinds whose fields are a subset of its own: only a throughput run has `threads`, an index
    // run lacks a search run's `command`.
    Throughput(ThroughputRun),
    Search(SearchRun),
    Index(IndexRun),
}

impl Record {
    pub fn load(path: &PathBuf) -> anyhow::Result<Record> {
        let text =
            fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(text.trim())
            .with_context(|| format!("{} is neither an index nor a search record", path.display()))
    }
}

/// A row of `bench/results/search.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metric {
    pub engine: String,
    pub workload: String,
    pub metric: String,
    #[serde(serialize_with = "integer_when_whole")]
    pub value: f64,
}

/// Byte and query counts read better as `123` than `123.0`.
fn integer_when_whole<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    const EXACT: f64 = (1u64 << 53) as f64;
    if value.fract() == 0.0 && value.abs() < EXACT {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// Metrics where a ratio between engines means nothing.
const NO_RATIO: &[&str] = &["queries", "errors", "count_mismatches"];

pub struct Report {
    pub metrics: Vec<Metric>,
}

impl Report {
    pub fn build(
        records: &[Record],
        subject: &str,
        baselines: &[String],
    ) -> anyhow::Result<Report> {
        let input_bytes = records.iter().find_map(|record| match record {
            Record::Index(run) => run.input_bytes,
            Record::Search(_) | Record::Throughput(_) => None,
        });
        let mut metrics = Vec::new();
        let mut push = |engine: &str, workload: &str, metric: &str, value: f64| {
            metrics.push(Metric {
                engine: engine.to_owned(),
                workload: workload.to_owned(),
                metric: metric.to_owned(),
                value,
            })
        };
        for record in records {
            match record {
                Record::Index(run) => {
                    let (engine, workload) = (run.engine.as_str(), "index");
                    push(engine, workload, "seconds", run.seconds);
                    if let Some(bytes) = run.input_bytes.or(input_bytes) {
                        push(
                            engine,
                            workload,
                            "mb_per_s",
                            bytes as f64 / 1e6 / run.seconds,
                        );
                    }
                    push(engine, workload, "index_bytes", run.index_bytes as f64);
                }
                Record::Search(run) => {
                    let (engine, workload) = (run.engine.as_str(), run.workload());
                    push(engine, &workload, "queries", run.queries as f64);
                    push(engine, &workload, "errors", run.errors as f64);
                    if let Some(latency) = &run.latency {
                        for (metric, value) in [
                            ("latency_mean_us", latency.mean_us),
                            ("latency_p50_us", latency.p50_us),
                            ("latency_p75_us", latency.p75_us),
                            ("latency_p90_us", latency.p90_us),
                            ("latency_p95_us", latency.p95_us),
                            ("latency_p99_us", latency.p99_us),
                            ("latency_p999_us", latency.p999_us),
                            ("latency_max_us", latency.max_us),
                        ] {
                            push(engine, &workload, metric, value);
                        }
                    }
                }
                Record::Throughput(run) => {
                    let metric = format!("qps_threads_{}", run.threads);
                    push(run.engine.as_str(), &run.workload(), &metric, run.qps);
                }
            }
        }
        for baseline in baselines {
            for (subject_run, baseline_run) in count_pairs(records, subject, baseline) {
                let mismatches = count_mismatches(subject_run, baseline_run)?;
                push(
                    baseline,
                    &subject_run.workload(),
                    "count_mismatches",
                    mismatches as f64,
                );
            }
        }
        Ok(Report { metrics })
    }

    /// The table: one block per workload, one row per metric, a column per engine (`subject`
    /// and the `baselines` first, shown as `missing` when they have no figure) and a ratio
    /// column subject/baseline for each baseline.
    pub fn table(&self, subject: &str, baselines: &[String]) -> String {
        let mut engines = vec![subject.to_owned()];
        for baseline in baselines {
            if !engines.contains(baseline) {
                engines.push(baseline.clone());
            }
        }
        let mut workloads: Vec<&str> = Vec::new();
        for metric in &self.metrics {
            if !engines.contains(&metric.engine) {
                engines.push(metric.engine.clone());
            }
            if !workloads.contains(&metric.workload.as_str()) {
                workloads.push(&metric.workload);
            }
        }
        let value = |engine: &str, workload: &str, name: &str| {
            self.metrics
                .iter()
                .find(|m| m.engine == engine && m.workload == workload && m.metric == name)
                .map(|m| m.value)
        };

        let mut out = String::new();
        let _ = write!(out, "{:<22}", "");
        for engine in &engines {
            let _ = write!(out, "{engine:>16}");
        }
        for baseline in baselines {
            let _ = write!(out, "{:>18}", format!("{subject}/{baseline}"));
        }
        let _ = writeln!(out);
        for workload in workloads {
            let _ = writeln!(out, "{workload}");
            let mut names: Vec<&str> = Vec::new();
            for metric in self.metrics.iter().filter(|m| m.workload == workload) {
                if !names.contains(&metric.metric.as_str()) {
                    names.push(&metric.metric);
                }
            }
            for name in names {
                let _ = write!(out, "  {name:<20}");
                for engine in &engines {
                    let cell = match value(engine, workload, name) {
                        Some(v) => format_value(name, v),
                        // The subject has none: it is what the baselines are compared with.
                        None if name == "count_mismatches" && engine == subject => "-".to_owned(),
                        None => "missing".to_owned(),
                    };
                    let _ = write!(out, "{cell:>16}");
                }
                for baseline in baselines {
                    let ratio = match (
                        value(subject, workload, name),
                        value(baseline, workload, name),
                    ) {
                        (Some(s), Some(b)) if b != 0.0 && !NO_RATIO.contains(&name) => {
                            format!("{:.2}x", s / b)
                        }
                        _ => String::new(),
                    };
                    let _ = write!(out, "{ratio:>18}");
                }
                let _ = writeln!(out);
            }
        }
        out
    }
}

fn format_value(metric: &str, value: f64) -> String {
    if metric.ends_with("_bytes") || NO_RATIO.contains(&metric) {
        format!("{value:.0}")
    } else if metric == "seconds" || metric == "mb_per_s" {
        format!("{value:.2}")
    } else {
        format!("{value:.1}")
    }
}

/// Pairs of runs of the same counting workload, subject's and baseline's, that both kept their
/// answers.
fn count_pairs<'a>(
    records: &'a [Record],
    subject: &str,
    baseline: &str,
) -> Vec<(&'a SearchRun, &'a SearchRun)> {
    let searches: Vec<&SearchRun> = records
        .iter()
        .filter_map(|record| match record {
            Record::Search(run) if run.command.contains("COUNT") && run.answers_file.is_some() => {
                Some(run)
            }
            _ => None,
        })
        .collect();
    let mut pairs = Vec::new();
    for s in searches.iter().filter(|run| run.engine == subject) {
        if let Some(b) = searches
            .iter()
            .find(|b| b.engine == baseline && b.workload() == s.workload())
        {
            pairs.push((*s, *b));
        }
    }
    pairs
}

/// Queries whose answers differ (an `ERROR` on one side counts), plus queries only one side
/// answered.
fn count_mismatches(subject: &SearchRun, baseline: &SearchRun) -> anyhow::Result<usize> {
    let read = |run: &SearchRun| -> anyhow::Result<String> {
        // `count_pairs` only pairs runs that have an answers file.
        let path = run
            .answers_file
            .as_ref()
            .context("run has no answers file")?;
        fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    let (subject_answers, baseline_answers) = (read(subject)?, read(baseline)?);
    let (s, b): (Vec<&str>, Vec<&str>) = (
        subject_answers.lines().collect(),
        baseline_answers.lines().collect(),
    );
    let differing = s.iter().zip(&b).filter(|(x, y)| x != y).count();
    Ok(differing + s.len().abs_diff(b.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whitespace-separated cells of the first table line starting with `name`.
    fn table_row<'t>(table: &'t str, name: &str) -> Vec<&'t str> {
        table
            .lines()
            .find(|line| line.trim_start().starts_with(name))
            .unwrap_or_default()
            .split_whitespace()
            .collect()
    }

    fn search(engine: &str, mean_us: f64) -> Record {
        Record::Search(SearchRun {
            engine: engine.to_owned(),
            command: "TOP_10".to_owned(),
            transform: "or".to_owned(),
            queries: 4,
            answered: 3,
            errors: 1,
            unsupported: 0,
            latency: Some(LatencySummary {
                mean_us,
                p50_us: mean_us,
                p75_us: mean_us,
                p90_us: mean_us,
                p95_us: mean_us,
                p99_us: mean_us,
                p999_us: mean_us,
                max_us: mean_us,
            }),
            seconds: 1.0,
            qps: 4.0,
            answers_file: None,
            engine_time: None,
            repeat: 1,
            kinds: Vec::new(),
        })
    }

    fn throughput(engine: &str, threads: usize, qps: f64) -> Record {
        Record::Throughput(ThroughputRun {
            engine: engine.to_owned(),
            command: "TOP_10".to_owned(),
            transform: "or".to_owned(),
            threads,
            queries: 4,
            answered: 3,
            errors: 1,
            unsupported: 0,
            seconds: 4.0 / qps,
            qps,
            answers_checked: None,
        })
    }

    #[test]
    fn names_workloads() {
        let cases = [
            ("or", "TOP_10", "or_top10"),
            ("and", "COUNT", "and_count"),
            ("phrase", "TOP_100_COUNT", "phrase_top100_count"),
        ];
        for (transform, command, expected) in cases {
            let Record::Search(mut run) = search("x", 1.0) else {
                unreachable!("search() builds a search record")
            };
            run.transform = transform.to_owned();
            run.command = command.to_owned();
            assert_eq!(run.workload(), expected);
        }
    }

    #[test]
    fn reads_both_record_kinds() -> anyhow::Result<()> {
        let index: Record = serde_json::from_str(
            r#"{"engine":"tantivy","docs":3,"seconds":2.0,"input_bytes":4000000,"index_bytes":10}"#,
        )?;
        assert!(matches!(
            index,
            Record::Index(IndexRun {
                input_bytes: Some(4_000_000),
                ..
            })
        ));
        let Record::Search(run) = search("quarry", 5.0) else {
            unreachable!("search() builds a search record")
        };
        let text = serde_json::to_string(&run)?;
        assert!(text.contains(r#""p999_us":5.0"#), "{text}");
        assert!(matches!(serde_json::from_str(&text)?, Record::Search(_)));
        Ok(())
    }

    /// Each kind of record reads back as itself, not as the kind listed before it.
    #[test]
    fn tells_record_kinds_apart() -> anyhow::Result<()> {
        for record in [search("quarry", 5.0), throughput("quarry", 2, 100.0)] {
            let text = match &record {
                Record::Search(run) => serde_json::to_string(run)?,
                Record::Throughput(run) => serde_json::to_string(run)?,
                Record::Index(_) => unreachable!("only search kinds here"),
            };
            let read: Record = serde_json::from_str(&text)?;
            assert_eq!(
                std::mem::discriminant(&read),
                std::mem::discriminant(&record),
                "{text}"
            );
        }
        Ok(())
    }

    #[test]
    fn reports_queries_per_second_by_threads() -> anyhow::Result<()> {
        let records = vec![
            search("quarry", 10.0),
            throughput("quarry", 1, 1000.0),
            throughput("quarry", 2, 1800.0),
            search("tantivy", 20.0),
            throughput("tantivy", 1, 500.0),
            throughput("tantivy", 2, 1200.0),
        ];
        let baselines = ["tantivy".to_owned()];
        let report = Report::build(&records, "quarry", &baselines)?;
        let qps: Vec<(&str, &str, f64)> = report
            .metrics
            .iter()
            .filter(|m| m.metric.starts_with("qps"))
            .map(|m| (m.engine.as_str(), m.metric.as_str(), m.value))
            .collect();
        assert_eq!(
            qps,
            [
                ("quarry", "qps_threads_1", 1000.0),
                ("quarry", "qps_threads_2", 1800.0),
                ("tantivy", "qps_threads_1", 500.0),
                ("tantivy", "qps_threads_2", 1200.0),
            ]
        );
        assert!(report.metrics.iter().all(|m| m.workload == "or_top10"));
        let table = report.table("quarry", &baselines);
        let row = |name: &str| table_row(&table, name);
        assert_eq!(
            row("qps_threads_1"),
            ["qps_threads_1", "1000.0", "500.0", "2.00x"]
        );
        assert_eq!(
            row("qps_threads_2"),
            ["qps_threads_2", "1800.0", "1200.0", "1.50x"]
        );
        // Only the latency runs count errors (the throughput runs' answers are the same), and
        // their one-at-a-time rate is no `qps_threads_1`: the filter above found only four.
        assert_eq!(
            report
                .metrics
                .iter()
                .filter(|m| m.metric == "errors")
                .count(),
            2
        );
        Ok(())
    }

    #[test]
    fn flattens_records_and_prints_ratios() -> anyhow::Result<()> {
        let records = vec![
            Record::Index(IndexRun {
                engine: "tantivy".to_owned(),
                seconds: 2.0,
                index_bytes: 100,
                input_bytes: Some(4_000_000),
                docs: None,
            }),
            Record::Index(IndexRun {
                engine: "quarry".to_owned(),
                seconds: 1.0,
                index_bytes: 50,
                input_bytes: None,
                docs: None,
            }),
            search("tantivy", 10.0),
        ];
        let report = Report::build(&records, "quarry", &["tantivy".to_owned()])?;
        let find = |engine: &str, metric: &str| {
            report
                .metrics
                .iter()
                .find(|m| m.engine == engine && m.metric == metric)
                .map(|m| m.value)
        };
        assert_eq!(find("quarry", "mb_per_s"), Some(4.0));
        assert_eq!(find("tantivy", "mb_per_s"), Some(2.0));
        assert_eq!(find("tantivy", "latency_p99_us"), Some(10.0));
        assert_eq!(find("quarry", "latency_p99_us"), None);

        let table = report.table("quarry", &["tantivy".to_owned()]);
        let row = |name: &str| table_row(&table, name);
        assert_eq!(row("seconds"), ["seconds", "1.00", "2.00", "0.50x"]);
        assert_eq!(row("index_bytes"), ["index_bytes", "50", "100", "0.50x"]);
        assert_eq!(
            row("latency_mean_us"),
            ["latency_mean_us", "missing", "10.0"]
        );
        assert_eq!(row("errors"), ["errors", "missing", "1"]);

        let json = serde_json::to_string(&report.metrics[2])?;
        assert_eq!(
            json,
            r#"{"engine":"tantivy","workload":"index","metric":"index_bytes","value":100}"#
        );
        Ok(())
    }

    #[test]
    fn prints_a_ratio_column_per_baseline() -> anyhow::Result<()> {
        let index = |engine: &str, seconds: f64| {
            Record::Index(IndexRun {
                engine: engine.to_owned(),
                seconds,
                index_bytes: 100,
                input_bytes: Some(4_000_000),
                docs: None,
            })
        };
        let records = vec![
            index("tantivy", 2.0),
            index("quarry", 1.0),
            index("lucene", 4.0),
            search("quarry", 10.0),
            search("tantivy", 20.0),
        ];
        let baselines = ["tantivy".to_owned(), "lucene".to_owned()];
        let table = Report::build(&records, "quarry", &baselines)?.table("quarry", &baselines);
        let row = |name: &str| table_row(&table, name);
        assert_eq!(
            row(""),
            [
                "quarry",
                "tantivy",
                "lucene",
                "quarry/tantivy",
                "quarry/lucene"
            ]
        );
        assert_eq!(
            row("seconds"),
            ["seconds", "1.00", "2.00", "4.00", "0.50x", "0.25x"]
        );
        // Lucene has no search figures: its cells say so and its ratio is left empty.
        assert_eq!(
            row("latency_mean_us"),
            ["latency_mean_us", "10.0", "20.0", "missing", "0.50x"]
        );
        Ok(())
    }

    #[test]
    fn counts_mismatched_answers() -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!("search-report-test-{}", std::process::id()));
        fs::create_dir_all(&dir)?;
        let mut runs = Vec::new();
        for (engine, answers) in [
            ("quarry", "1\ta\n5\tb\n0\tc\n"),
            ("tantivy", "1\ta\n4\tb\n"),
            ("lucene", "1\ta\n5\tb\nERROR\tc\n"),
        ] {
            let path = dir.join(engine);
            fs::write(&path, answers)?;
            let Record::Search(mut run) = search(engine, 1.0) else {
                unreachable!("search() builds a search record")
            };
            run.command = "COUNT".to_owned();
            run.answers_file = Some(path);
            runs.push(Record::Search(run));
        }
        let baselines = ["tantivy".to_owned(), "lucene".to_owned()];
        let report = Report::build(&runs, "quarry", &baselines);
        fs::remove_dir_all(&dir)?;
        let report = report?;
        let mismatches: Vec<(&str, f64)> = report
            .metrics
            .iter()
            .filter(|m| m.metric == "count_mismatches")
            .map(|m| (m.engine.as_str(), m.value))
            .collect();
        assert_eq!(mismatches, [("tantivy", 2.0), ("lucene", 1.0)]);
        let table = report.table("quarry", &baselines);
        let row = table
            .lines()
            .find(|line| line.trim_start().starts_with("count_mismatches"))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>();
        assert_eq!(row, ["count_mismatches", "-", "2", "1"]);
        Ok(())
    }
}
