//! Per-kind figures of several engines, and their answers side by side: the multi-term
//! benchmark's report (bench/multiterm/README.md).
//!
//! [`build`] reads run records made with `run --kind-by-name` (figures summed per kind, the
//! part of a request's name before its first `.`) and prints two Markdown tables, round trips
//! and engine times: per kind, each engine's mean, p50 and p99 in µs, and the subject's ratio
//! to each baseline for each of the three. [`counts`] lines up the answers files of several
//! engines request by request and lists where they differ.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::latency::Latency;
use crate::queries::Answer;
use crate::run::{kind_of, RunRecord};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindMetric {
    pub engine: String,
    pub kind: String,
    pub metric: String,
    pub value: f64,
}

pub struct KindTable {
    pub text: String,
    pub metrics: Vec<KindMetric>,
}

/// The engines in table order: the subject, then the baselines, then any other.
fn engine_order<'a>(
    records: &'a [RunRecord],
    subject: &str,
    baselines: &[String],
) -> Vec<&'a RunRecord> {
    let mut order: Vec<&RunRecord> = Vec::new();
    let names = std::iter::once(subject.to_owned()).chain(baselines.iter().cloned());
    for name in names {
        order.extend(records.iter().filter(|r| r.engine == name));
    }
    let rest: Vec<&RunRecord> = records
        .iter()
        .filter(|r| !order.iter().any(|o| o.engine == r.engine))
        .collect();
    order.extend(rest);
    order
}

fn ratio(subject: Option<f64>, baseline: Option<f64>) -> String {
    match (subject, baseline) {
        (Some(s), Some(b)) if b > 0.0 => format!("{:.2}", s / b),
        _ => "-".to_owned(),
    }
}

fn figure(value: Option<f64>) -> String {
    match value {
        None => "-".to_owned(),
        Some(v) if v >= 100.0 => {
            // Thousands separated, as the other tables of BENCHMARKS.md.
            let digits = format!("{:.0}", v);
            let mut out = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i) % 3 == 0 {
                    out.push(',');
                }
                out.push(c);
            }
            out
        }
        Some(v) => format!("{v:.1}"),
    }
}

pub fn build(records: &[RunRecord], subject: &str, baselines: &[String]) -> KindTable {
    let engines = engine_order(records, subject, baselines);
    // Kinds in the order their first request appears.
    let mut kinds: Vec<String> = Vec::new();
    for record in &engines {
        for query in &record.queries {
            let kind = kind_of(&query.name, &query.command, true);
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    type Figures<'a> =
        BTreeMap<(&'a str, &'a str), (&'a Option<Latency>, &'a Option<Latency>, usize)>;
    let mut figures: Figures = BTreeMap::new();
    for record in &engines {
        for kind in &record.kinds {
            let answered = kind
                .latency
                .as_ref()
                .map_or(0, |l| l.samples / record.repeat.max(1));
            figures.insert(
                (record.engine.as_str(), kind.command.as_str()),
                (&kind.latency, &kind.engine_latency, answered),
            );
        }
    }
    let subject_record = engines.iter().find(|r| r.engine == subject);
    let others: Vec<&&RunRecord> = engines.iter().filter(|r| r.engine != subject).collect();
    let mut metrics = Vec::new();
    let mut text = String::new();
    for (title, engine_side) in [("round trip", false), ("engine time", true)] {
        let _ = write!(text, "\n| {title}, µs | queries |");
        for record in &engines {
            let _ = write!(text, " {0} mean | {0} p50 | {0} p99 |", record.engine);
        }
        for other in &others {
            let _ = write!(
                text,
                " {0}/{1} mean | {0}/{1} p50 | {0}/{1} p99 |",
                subject, other.engine
            );
        }
        text.push('\n');
        let columns = 2 + 3 * engines.len() + 3 * others.len();
        text.push_str(&"|---".repeat(columns));
        text.push_str("|\n");
        let mut notes = Vec::new();
        for kind in &kinds {
            let queries = engines
                .iter()
                .flat_map(|r| r.kinds.iter().filter(|k| &k.command == kind))
                .map(|k| k.queries)
                .max()
                .unwrap_or(0);
            let _ = write!(text, "| {kind} | {queries} |");
            let pick = |engine: &str| -> Option<[f64; 3]> {
                let (round_trip, engine_time, _) = figures.get(&(engine, kind.as_str()))?;
                let latency = if engine_side { engine_time } else { round_trip };
                latency.as_ref().map(|l| [l.mean_us, l.p50_us, l.p99_us])
            };
            for record in &engines {
                let values = pick(&record.engine);
                for (i, name) in ["mean_us", "p50_us", "p99_us"].iter().enumerate() {
                    let value = values.map(|v| v[i]);
                    let _ = write!(text, " {} |", figure(value));
                    if let Some(value) = value {
                        let prefix = if engine_side { "engine_" } else { "latency_" };
                        metrics.push(KindMetric {
                            engine: record.engine.clone(),
                            kind: kind.clone(),
                            metric: format!("{prefix}{}", name),
                            value,
                        });
                    }
                }
                if !engine_side {
                    let answered = figures
                        .get(&(record.engine.as_str(), kind.as_str()))
                        .map_or(0, |f| f.2);
                    if answered < queries {
                        notes.push(format!(
                            "{kind}: {} answered {answered} of {queries}",
                            record.engine
                        ));
                    }
                }
            }
            let own = subject_record.and_then(|r| pick(&r.engine));
            for other in &others {
                let theirs = pick(&other.engine);
                for i in 0..3 {
                    let _ = write!(
                        text,
                        " {} |",
                        ratio(own.map(|v| v[i]), theirs.map(|v| v[i]))
                    );
                }
            }
            text.push('\n');
        }
        for note in notes {
            let _ = writeln!(text, "- {note} (the others' figures include the rest)");
        }
    }
    KindTable { text, metrics }
}

pub struct CountComparison {
    pub text: String,
    /// Requests where two engines that both answered gave different answers.
    pub differ: usize,
}

/// Every request's answers side by side (`*` where they differ), then the differing requests
/// again, and per engine pair how many agree, differ, or were refused by one side.
pub fn counts(engines: &[(String, Vec<Answer>)]) -> CountComparison {
    let mut names: Vec<(&str, &str)> = Vec::new();
    for (_, answers) in engines {
        for answer in answers {
            if !names.iter().any(|(n, _)| *n == answer.name) {
                names.push((&answer.name, &answer.request));
            }
        }
    }
    let answer_of = |engine: usize, name: &str| -> Option<&str> {
        engines[engine]
            .1
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.answer.as_str())
    };
    let refused = |answer: Option<&str>| matches!(answer, None | Some("ERROR" | "UNSUPPORTED"));
    let mut text = String::new();
    let _ = write!(text, "name");
    for (engine, _) in engines {
        let _ = write!(text, "\t{engine}");
    }
    text.push_str("\tquery\n");
    let mut differing = Vec::new();
    let pairs: Vec<(usize, usize)> = (0..engines.len())
        .flat_map(|a| (a + 1..engines.len()).map(move |b| (a, b)))
        .collect();
    let mut tallies = vec![(0usize, 0usize, 0usize); pairs.len()];
    let mut all_equal = 0;
    for (name, request) in &names {
        let answers: Vec<Option<&str>> = (0..engines.len()).map(|e| answer_of(e, name)).collect();
        let answered: Vec<&str> = answers
            .iter()
            .flatten()
            .copied()
            .filter(|a| !refused(Some(*a)))
            .collect();
        let differs = answered.windows(2).any(|w| w[0] != w[1]);
        let complete = answered.len() == engines.len();
        if complete && !differs {
            all_equal += 1;
        }
        for (tally, &(a, b)) in tallies.iter_mut().zip(&pairs) {
            if refused(answers[a]) || refused(answers[b]) {
                tally.2 += 1;
            } else if answers[a] == answers[b] {
                tally.0 += 1;
            } else {
                tally.1 += 1;
            }
        }
        let query = request.split('\t').next_back().unwrap_or(request);
        let mut line = format!("{}{name}", if differs || !complete { "*" } else { " " });
        for answer in &answers {
            let _ = write!(line, "\t{}", answer.unwrap_or("-"));
        }
        let _ = writeln!(line, "\t{query}");
        if differs || !complete {
            differing.push(line.clone());
        }
        text.push_str(&line);
    }
    let _ = writeln!(
        text,
        "\n{} requests differ or were refused by some engine:",
        differing.len()
    );
    for line in &differing {
        text.push_str(line);
    }
    let _ = writeln!(
        text,
        "\n{all_equal} of {} requests: every engine gave the same answer",
        names.len()
    );
    let mut differ = 0;
    for ((agree, differs, not_compared), &(a, b)) in tallies.iter().zip(&pairs) {
        differ += differs;
        let _ = writeln!(
            text,
            "{} vs {}: {agree} equal, {differs} differ, {not_compared} refused by one side",
            engines[a].0, engines[b].0
        );
    }
    CountComparison { text, differ }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{KindRecord, Outcome, QueryRecord};

    fn latency(us: f64) -> Option<Latency> {
        Some(Latency {
            samples: 4,
            mean_us: us,
            p50_us: us,
            p99_us: us * 2.0,
            min_us: us,
            max_us: us * 2.0,
        })
    }

    fn record(engine: &str, prefix_us: f64, engine_times: bool) -> RunRecord {
        let query = |name: &str| QueryRecord {
            name: name.into(),
            request: "COUNT\tx*".into(),
            command: "COUNT".into(),
            outcome: Outcome::Answered,
            answer: "3".into(),
            stable: true,
            latency: latency(prefix_us),
            engine_latency: None,
        };
        RunRecord {
            engine: engine.into(),
            size: None,
            warmup: 0,
            repeat: 2,
            seconds: 1.0,
            queries: vec![query("prefix.01"), query("prefix.02")],
            kinds: vec![KindRecord {
                command: "prefix".into(),
                queries: 2,
                latency: latency(prefix_us),
                engine_latency: if engine_times {
                    latency(prefix_us / 2.0)
                } else {
                    None
                },
            }],
        }
    }

    #[test]
    fn tables_kinds_with_ratios() {
        let records = [
            record("lucene", 400.0, true),
            record("quarry", 100.0, false),
        ];
        let table = build(&records, "quarry", &["tantivy".into(), "lucene".into()]);
        assert!(
            table.text.contains(
                "| prefix | 2 | 100 | 100 | 200 | 400 | 400 | 800 | 0.25 | 0.25 | 0.25 |"
            ),
            "{}",
            table.text
        );
        // No engine time for quarry: its engine-time cells and the ratios are blank.
        assert!(
            table
                .text
                .contains("| prefix | 2 | - | - | - | 200 | 200 | 400 | - | - | - |"),
            "{}",
            table.text
        );
        assert!(table
            .metrics
            .iter()
            .any(|m| m.engine == "lucene" && m.metric == "engine_p50_us" && m.value == 200.0));
    }

    #[test]
    fn lines_up_counts() {
        let answers = |values: &[&str]| -> Vec<Answer> {
            values
                .iter()
                .enumerate()
                .map(|(i, v)| Answer {
                    name: format!("k.{i}"),
                    answer: (*v).into(),
                    request: format!("COUNT\tq{i}"),
                })
                .collect()
        };
        let engines = vec![
            ("quarry".to_owned(), answers(&["1", "2", "3"])),
            ("lucene".to_owned(), answers(&["1", "5", "ERROR"])),
        ];
        let comparison = counts(&engines);
        assert_eq!(comparison.differ, 1);
        assert!(
            comparison.text.contains("*k.1\t2\t5\tq1"),
            "{}",
            comparison.text
        );
        assert!(comparison
            .text
            .contains("quarry vs lucene: 1 equal, 1 differ, 1 refused by one side"));
        assert!(comparison
            .text
            .contains("1 of 3 requests: every engine gave the same answer"));
    }
}
