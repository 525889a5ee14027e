//! A timed run of one engine over a query set, and the record it leaves.
//!
//! The engine is started once. The whole query set is sent `warmup` times untimed, then
//! `repeat` times timed, one request at a time in file order, so every request meets the same
//! warm state (interleaved passes, not one request repeated back to back, which would keep
//! exactly its own data in the CPU caches). A request the engine refuses on its first pass
//! (`UNSUPPORTED` or `ERROR`) is reported as such and not sent again. The answer kept is the
//! first pass's; a later pass answering differently marks the request `stable: false`.
//!
//! Two times are kept per timed request: the round trip, measured here from writing the request
//! to reading the answer line (pipe and process wake-up included), and the engine time, the
//! `<TAB>NANOS` an engine may end its answer line with (PROTOCOL.md), measured inside the engine.
//! The suffix is removed before the answer is classified, compared or stored.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::answer;
use crate::latency::Latency;
use crate::protocol::Command;
use crate::queries::{Answer, NamedRequest};
use search_driver::engine::Engine;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Answered,
    /// `ERROR`: the engine could not parse the request.
    Error,
    /// `UNSUPPORTED`: the engine does not implement the request.
    Unsupported,
}

impl Outcome {
    pub fn of(answer: &str) -> Outcome {
        match answer {
            answer::ERROR => Outcome::Error,
            answer::UNSUPPORTED => Outcome::Unsupported,
            _ => Outcome::Answered,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryRecord {
    pub name: String,
    pub request: String,
    /// The protocol command (`TAIL`), or the request's first word when it is none.
    pub command: String,
    pub outcome: Outcome,
    pub answer: String,
    /// Every timed pass gave the first pass's answer.
    pub stable: bool,
    /// Round trips over the timed passes; `None` when the request was refused.
    pub latency: Option<Latency>,
    /// Engine times over the timed passes; `None` when the request was refused or some timed
    /// answer came without one.
    #[serde(default)]
    pub engine_latency: Option<Latency>,
}

/// All timed round trips (and engine times) of one command's requests together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindRecord {
    pub command: String,
    pub queries: usize,
    pub latency: Option<Latency>,
    /// `None` unless every timed answer of these requests came with an engine time.
    #[serde(default)]
    pub engine_latency: Option<Latency>,
}

/// One timed request: its round trip and the engine time its answer carried, if any.
#[derive(Clone, Copy, Debug)]
struct Sample {
    round_trip: Duration,
    engine: Option<Duration>,
}

/// Round trips and engine times of `samples`; the engine times only when every sample has one.
fn latencies(samples: &[Sample]) -> (Option<Latency>, Option<Latency>) {
    let round_trips: Vec<Duration> = samples.iter().map(|s| s.round_trip).collect();
    let engine = samples
        .iter()
        .map(|s| s.engine)
        .collect::<Option<Vec<Duration>>>()
        .and_then(|times| Latency::of(&times));
    (Latency::of(&round_trips), engine)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub engine: String,
    /// Events in the index, when the caller says.
    pub size: Option<u64>,
    pub warmup: usize,
    pub repeat: usize,
    /// Wall time of the timed passes.
    pub seconds: f64,
    pub queries: Vec<QueryRecord>,
    pub kinds: Vec<KindRecord>,
}

impl RunRecord {
    pub fn answers(&self) -> Vec<Answer> {
        self.queries
            .iter()
            .map(|query| Answer {
                name: query.name.clone(),
                answer: query.answer.clone(),
                request: query.request.clone(),
            })
            .collect()
    }
}

pub struct RunOptions<'a> {
    pub engine: String,
    pub engine_command: &'a [String],
    pub size: Option<u64>,
    pub warmup: usize,
    pub repeat: usize,
    /// Group requests by the part of their name before the first `.` (`prefix.07` → `prefix`)
    /// instead of by protocol command, for query sets whose requests are all COUNTs.
    pub kind_by_name: bool,
}

/// The group a request's figures are summed into: see [`RunOptions::kind_by_name`].
pub fn kind_of(name: &str, command: &str, by_name: bool) -> String {
    if by_name {
        name.split('.').next().unwrap_or(name).to_owned()
    } else {
        command.to_owned()
    }
}

pub fn run(options: &RunOptions, requests: &[NamedRequest]) -> anyhow::Result<RunRecord> {
    let mut engine = Engine::spawn(options.engine_command)?;
    let mut first_answers: Vec<Option<String>> = vec![None; requests.len()];
    let mut stable = vec![true; requests.len()];
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); requests.len()];
    let mut timed = Duration::ZERO;
    for pass in 0..options.warmup + options.repeat.max(1) {
        let timing = pass >= options.warmup;
        for (index, request) in requests.iter().enumerate() {
            if let Some(first) = &first_answers[index] {
                if Outcome::of(first) != Outcome::Answered {
                    continue;
                }
            }
            let sent = Instant::now();
            let line = engine.ask_line(&request.request)?;
            let elapsed = sent.elapsed();
            let (answer, engine_nanos) = answer::split_engine_time(line);
            match &first_answers[index] {
                None => first_answers[index] = Some(answer.to_owned()),
                Some(first) if first != answer => stable[index] = false,
                Some(_) => {}
            }
            if timing && Outcome::of(answer) == Outcome::Answered {
                samples[index].push(Sample {
                    round_trip: elapsed,
                    engine: engine_nanos.map(Duration::from_nanos),
                });
                timed += elapsed;
            }
        }
    }
    let status = engine.close()?;
    if !status.success() {
        eprintln!("logs-driver: {} exited with {status}", options.engine);
    }

    let mut by_command: BTreeMap<String, (usize, Vec<Sample>)> = BTreeMap::new();
    let queries: Vec<QueryRecord> = requests
        .iter()
        .zip(first_answers)
        .zip(stable)
        .zip(&samples)
        .map(|(((request, answer), stable), samples)| {
            // Every request was asked at least once: the first pass skips none.
            let answer = answer.unwrap_or_default();
            let command = Command::of_request(&request.request).map_or_else(
                || request.request.split('\t').next().unwrap_or("").to_owned(),
                |command| command.name().to_owned(),
            );
            let kind = by_command
                .entry(kind_of(&request.name, &command, options.kind_by_name))
                .or_default();
            kind.0 += 1;
            kind.1.extend(samples);
            let (latency, engine_latency) = latencies(samples);
            QueryRecord {
                name: request.name.clone(),
                request: request.request.clone(),
                command,
                outcome: Outcome::of(&answer),
                answer,
                stable,
                latency,
                engine_latency,
            }
        })
        .collect();
    let kinds = by_command
        .into_iter()
        .map(|(command, (queries, samples))| {
            let (latency, engine_latency) = latencies(&samples);
            KindRecord {
                command,
                queries,
                latency,
                engine_latency,
            }
        })
        .collect();
    Ok(RunRecord {
        engine: options.engine.clone(),
        size: options.size,
        warmup: options.warmup,
        repeat: options.repeat,
        seconds: timed.as_secs_f64(),
        queries,
        kinds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::parse_query_set;

    /// A shell engine: `COUNT *` answers 5 having taken 2 µs, other COUNTs 5 without a time,
    /// TAIL is unsupported (with a time), HEAD alternates its answer, HISTOGRAM answers the same
    /// with a time growing by 1 µs a request, the rest is an error (with a time).
    const FAKE_ENGINE: &str = r#"n=0
m=0
while IFS= read -r line; do
  case "$line" in
    COUNT?\*) printf '5\t2000\n' ;;
    COUNT*) echo 5 ;;
    TAIL*) printf 'UNSUPPORTED\t50\n' ;;
    HEAD*) n=$((n + 1)); echo "1 $((n % 2)) 0" ;;
    HISTOGRAM*) m=$((m + 1)); printf '3 6 9\t%d000\n' "$m" ;;
    *) printf 'ERROR\t7\n' ;;
  esac
done"#;

    /// Samples and p50 (µs) of a latency, or `None`.
    fn figures(latency: &Option<Latency>) -> Option<(usize, f64)> {
        latency.as_ref().map(|l| (l.samples, l.p50_us))
    }

    #[test]
    fn times_answers_and_skips_refused_requests() -> anyhow::Result<()> {
        let requests = parse_query_set(
            "count\tCOUNT\t*\ntail\tTAIL\t10\t*\nhead\tHEAD\t1\t*\nbad\tNOPE\tx\n\
             count2\tCOUNT\terror\nhist\tHISTOGRAM\t60\t*\n",
        )?;
        let command = ["sh".to_owned(), "-c".to_owned(), FAKE_ENGINE.to_owned()];
        let record = run(
            &RunOptions {
                engine: "fake".into(),
                engine_command: &command,
                size: Some(7),
                warmup: 2,
                repeat: 3,
                kind_by_name: false,
            },
            &requests,
        )?;
        type Summary<'a> = (&'a str, &'a str, Outcome, bool, usize, Option<(usize, f64)>);
        let summary: Vec<Summary> = record
            .queries
            .iter()
            .map(|q| {
                (
                    q.name.as_str(),
                    q.answer.as_str(),
                    q.outcome,
                    q.stable,
                    q.latency.as_ref().map_or(0, |l| l.samples),
                    figures(&q.engine_latency),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("count", "5", Outcome::Answered, true, 3, Some((3, 2.0))),
                ("tail", "UNSUPPORTED", Outcome::Unsupported, true, 0, None),
                ("head", "1 1 0", Outcome::Answered, false, 3, None),
                ("bad", "ERROR", Outcome::Error, true, 0, None),
                ("count2", "5", Outcome::Answered, true, 3, None),
                // Engine times 3, 4 and 5 µs in the timed passes; the answer without them is
                // the same every time.
                ("hist", "3 6 9", Outcome::Answered, true, 3, Some((3, 4.0))),
            ]
        );
        let hist = record.queries[5]
            .engine_latency
            .as_ref()
            .expect("engine times");
        assert_eq!((hist.min_us, hist.max_us, hist.mean_us), (3.0, 5.0, 4.0));
        assert_eq!(record.queries[3].command, "NOPE");
        type Kind<'a> = (&'a str, usize, usize, Option<(usize, f64)>);
        let kinds: Vec<Kind> = record
            .kinds
            .iter()
            .map(|k| {
                (
                    k.command.as_str(),
                    k.queries,
                    k.latency.as_ref().map_or(0, |l| l.samples),
                    figures(&k.engine_latency),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                // count2 answered without engine times: none for the kind.
                ("COUNT", 2, 6, None),
                ("HEAD", 1, 3, None),
                ("HISTOGRAM", 1, 3, Some((3, 4.0))),
                ("NOPE", 1, 0, None),
                ("TAIL", 1, 0, None)
            ]
        );
        assert_eq!(record.size, Some(7));
        // The answers file and the record hold the answers without the engine times.
        assert!(record.answers().iter().all(|a| !a.answer.contains('\t')));
        Ok(())
    }

    #[test]
    fn groups_by_name() {
        assert_eq!(kind_of("prefix.07", "COUNT", true), "prefix");
        assert_eq!(kind_of("plain", "COUNT", true), "plain");
        assert_eq!(kind_of("prefix.07", "COUNT", false), "COUNT");
    }

    /// Records written before engine times existed still parse.
    #[test]
    fn reads_records_without_engine_times() -> anyhow::Result<()> {
        let text = r#"{"engine":"x","size":5,"warmup":0,"repeat":1,"seconds":0.1,
            "queries":[{"name":"c","request":"COUNT\t*","command":"COUNT","outcome":"answered",
              "answer":"5","stable":true,"latency":{"samples":1,"mean_us":9.0,"p50_us":9.0,
              "p99_us":9.0,"min_us":9.0,"max_us":9.0}}],
            "kinds":[{"command":"COUNT","queries":1,"latency":null}]}"#;
        let record: RunRecord = serde_json::from_str(text)?;
        assert_eq!(record.queries[0].engine_latency, None);
        assert_eq!(figures(&record.queries[0].latency), Some((1, 9.0)));
        assert_eq!(record.kinds[0].engine_latency, None);
        Ok(())
    }
}
