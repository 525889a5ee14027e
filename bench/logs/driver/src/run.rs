//! A timed run of one engine over a query set, and the record it leaves.
//!
//! The engine is started once. The whole query set is sent `warmup` times untimed, then
//! `repeat` times timed, one request at a time in file order, so every request meets the same
//! warm state (interleaved passes, not one request repeated back to back, which would keep
//! exactly its own data in the CPU caches). A request the engine refuses on its first pass
//! (`UNSUPPORTED` or `ERROR`) is reported as such and not sent again. The answer kept is the
//! first pass's; a later pass answering differently marks the request `stable: false`.

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
    /// Over the timed passes; `None` when the request was refused.
    pub latency: Option<Latency>,
}

/// All timed round trips of one command's requests together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindRecord {
    pub command: String,
    pub queries: usize,
    pub latency: Option<Latency>,
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
}

pub fn run(options: &RunOptions, requests: &[NamedRequest]) -> anyhow::Result<RunRecord> {
    let mut engine = Engine::spawn(options.engine_command)?;
    let mut first_answers: Vec<Option<String>> = vec![None; requests.len()];
    let mut stable = vec![true; requests.len()];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); requests.len()];
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
            let answer = engine.ask_line(&request.request)?;
            let elapsed = sent.elapsed();
            match &first_answers[index] {
                None => first_answers[index] = Some(answer.to_owned()),
                Some(first) if first != answer => stable[index] = false,
                Some(_) => {}
            }
            if timing && Outcome::of(answer) == Outcome::Answered {
                samples[index].push(elapsed);
                timed += elapsed;
            }
        }
    }
    let status = engine.close()?;
    if !status.success() {
        eprintln!("logs-driver: {} exited with {status}", options.engine);
    }

    let mut by_command: BTreeMap<String, (usize, Vec<Duration>)> = BTreeMap::new();
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
            let kind = by_command.entry(command.clone()).or_default();
            kind.0 += 1;
            kind.1.extend(samples);
            QueryRecord {
                name: request.name.clone(),
                request: request.request.clone(),
                command,
                outcome: Outcome::of(&answer),
                answer,
                stable,
                latency: Latency::of(samples),
            }
        })
        .collect();
    let kinds = by_command
        .into_iter()
        .map(|(command, (queries, samples))| KindRecord {
            command,
            queries,
            latency: Latency::of(&samples),
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

    /// A shell engine: COUNT answers 5, TAIL is unsupported, HEAD alternates its answer, the
    /// rest is an error.
    const FAKE_ENGINE: &str = r#"n=0
while IFS= read -r line; do
  case "$line" in
    COUNT*) echo 5 ;;
    TAIL*) echo UNSUPPORTED ;;
    HEAD*) n=$((n + 1)); echo "1 $((n % 2)) 0" ;;
    *) echo ERROR ;;
  esac
done"#;

    #[test]
    fn times_answers_and_skips_refused_requests() -> anyhow::Result<()> {
        let requests = parse_query_set(
            "count\tCOUNT\t*\ntail\tTAIL\t10\t*\nhead\tHEAD\t1\t*\nbad\tNOPE\tx\ncount2\tCOUNT\terror\n",
        )?;
        let command = ["sh".to_owned(), "-c".to_owned(), FAKE_ENGINE.to_owned()];
        let record = run(
            &RunOptions {
                engine: "fake".into(),
                engine_command: &command,
                size: Some(7),
                warmup: 2,
                repeat: 3,
            },
            &requests,
        )?;
        let summary: Vec<(&str, &str, Outcome, bool, usize)> = record
            .queries
            .iter()
            .map(|q| {
                (
                    q.name.as_str(),
                    q.answer.as_str(),
                    q.outcome,
                    q.stable,
                    q.latency.as_ref().map_or(0, |l| l.samples),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("count", "5", Outcome::Answered, true, 3),
                ("tail", "UNSUPPORTED", Outcome::Unsupported, true, 0),
                ("head", "1 1 0", Outcome::Answered, false, 3),
                ("bad", "ERROR", Outcome::Error, true, 0),
                ("count2", "5", Outcome::Answered, true, 3),
            ]
        );
        assert_eq!(record.queries[3].command, "NOPE");
        let kinds: Vec<(&str, usize, usize)> = record
            .kinds
            .iter()
            .map(|k| {
                (
                    k.command.as_str(),
                    k.queries,
                    k.latency.as_ref().map_or(0, |l| l.samples),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("COUNT", 2, 6),
                ("HEAD", 1, 3),
                ("NOPE", 1, 0),
                ("TAIL", 1, 0)
            ]
        );
        assert_eq!(record.size, Some(7));
        Ok(())
    }
}
