//! A search engine child process spoken to over its stdin and stdout.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// How the engine answered one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Answered,
    /// The engine could not parse the query (`ERROR`).
    Error,
    /// The engine does not implement the command (`UNSUPPORTED`).
    Unsupported,
}

impl Outcome {
    pub fn of(answer: &str) -> Outcome {
        match answer {
            "ERROR" => Outcome::Error,
            "UNSUPPORTED" => Outcome::Unsupported,
            _ => Outcome::Answered,
        }
    }
}

/// Splits an answer line at its last tab when what follows is ASCII digits: the engine's own
/// time for the request in nanoseconds (bench/logs/PROTOCOL.md, "Engine time"), reported by
/// engines started with `--engine-time`. Otherwise the whole line is the answer and there is
/// no engine time. Plain answers never hold a tab, so the split is unambiguous; ID-tagged
/// answers (`ID\tanswer`, from a pool) must not be split.
pub fn split_engine_time(line: &str) -> (&str, Option<Duration>) {
    if let Some((answer, nanos)) = line.rsplit_once('\t') {
        if !nanos.is_empty() && nanos.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(nanos) = nanos.parse::<u64>() {
                return (answer, Some(Duration::from_nanos(nanos)));
            }
        }
    }
    (line, None)
}

pub struct Engine {
    program: String,
    child: Child,
    requests: BufWriter<ChildStdin>,
    answers: BufReader<ChildStdout>,
    answer: String,
}

impl Engine {
    /// Starts `command[0]` with the remaining arguments; its stderr goes to ours.
    pub fn spawn(command: &[String]) -> anyhow::Result<Engine> {
        let (program, args) = command.split_first().context("no engine command given")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {program}"))?;
        // Both are `Some`: they were just configured as pipes.
        let requests = BufWriter::new(child.stdin.take().context("engine stdin")?);
        let answers = BufReader::new(child.stdout.take().context("engine stdout")?);
        Ok(Engine {
            program: program.clone(),
            child,
            requests,
            answers,
            answer: String::new(),
        })
    }

    /// Sends one request and waits for its answer line, returned without the line break.
    pub fn ask(&mut self, command: &str, query: &str) -> anyhow::Result<&str> {
        self.ask_line(format_args!("{command}\t{query}"))
    }

    /// Sends `request` as one line (any protocol: the log benchmark's requests have more
    /// fields) and waits for its answer line, returned without the line break.
    pub fn ask_line(&mut self, request: impl std::fmt::Display) -> anyhow::Result<&str> {
        writeln!(self.requests, "{request}")
            .and_then(|()| self.requests.flush())
            .with_context(|| format!("{} stopped reading requests", self.program))?;
        self.answer.clear();
        let read = self
            .answers
            .read_line(&mut self.answer)
            .with_context(|| format!("reading the answer of {}", self.program))?;
        if read == 0 {
            let status = self.child.wait()?;
            bail!(
                "{} closed its output ({status}) instead of answering {request}",
                self.program
            );
        }
        Ok(self.answer.trim_end_matches(['\n', '\r']))
    }

    /// Sends every query at once, from a writer thread so that the engine never waits for the
    /// driver, while this thread reads the answers. Returns the answers in request order and the
    /// wall time from the first write to the last answer.
    ///
    /// `first_id` is the 0-based line number of the first of these requests in everything the
    /// engine was sent; `tagged` says the engine answers `ID\tanswer` lines in any order (an
    /// engine with `--threads N`, N > 1), otherwise plain answers in request order. An engine
    /// that never answers one of the requests, yet keeps running, is waited for: use
    /// [`Engine::pipeline_and_close`] for the last batch.
    pub fn pipeline(
        &mut self,
        command: &str,
        queries: &[String],
        first_id: usize,
        tagged: bool,
    ) -> anyhow::Result<(Vec<String>, Duration)> {
        let Engine {
            program,
            child,
            requests,
            answers,
            ..
        } = self;
        let batch = Batch {
            command,
            queries,
            first_id,
            tagged,
        };
        pipeline(program, child, requests, answers, &batch)
    }

    /// [`Engine::pipeline`] for the last batch, then [`Engine::close`]: the engine's stdin is
    /// closed right after the last request, so an engine that leaves a request unanswered ends
    /// its output and the run fails instead of waiting forever.
    pub fn pipeline_and_close(
        self,
        command: &str,
        queries: &[String],
        first_id: usize,
        tagged: bool,
    ) -> anyhow::Result<(Vec<String>, Duration, ExitStatus)> {
        let Engine {
            program,
            mut child,
            requests,
            mut answers,
            ..
        } = self;
        let batch = Batch {
            command,
            queries,
            first_id,
            tagged,
        };
        // `requests` moves into the writer thread and is dropped, closing the pipe, once written.
        let (read, elapsed) = pipeline(&program, &mut child, requests, &mut answers, &batch)?;
        let status = finish(&program, child, answers)?;
        Ok((read, elapsed, status))
    }

    /// Closes the engine's stdin, which asks it to exit, and waits for it. Output after the last
    /// expected answer (an answer to a request never sent, or a second one) is an error.
    pub fn close(self) -> anyhow::Result<ExitStatus> {
        let Engine {
            program,
            child,
            requests,
            answers,
            ..
        } = self;
        drop(requests);
        finish(&program, child, answers)
    }
}

/// Requests sent at once by [`Engine::pipeline`].
struct Batch<'a> {
    command: &'a str,
    queries: &'a [String],
    first_id: usize,
    tagged: bool,
}

fn pipeline(
    program: &str,
    child: &mut Child,
    mut requests: impl Write + Send,
    answers: &mut impl BufRead,
    batch: &Batch,
) -> anyhow::Result<(Vec<String>, Duration)> {
    std::thread::scope(|scope| {
        let started = Instant::now();
        let writer = scope.spawn(move || -> std::io::Result<()> {
            for query in batch.queries {
                writeln!(requests, "{}\t{query}", batch.command)?;
            }
            requests.flush()
        });
        let read = read_answers(answers, batch.first_id, batch.queries.len(), batch.tagged);
        let elapsed = started.elapsed();
        if read.is_err() {
            // The engine may still be reading requests while no one reads its answers: stop it,
            // or the writer could wait on a full pipe forever.
            let _ = child.kill();
        }
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let answers = read.with_context(|| format!("reading the answers of {program}"))?;
        written.with_context(|| format!("{program} stopped reading requests"))?;
        Ok((answers, elapsed))
    })
}

/// Reads what the engine writes until it exits (nothing, or it answered a request it was never
/// sent) and waits for it; its stdin must be closed already.
fn finish(program: &str, mut child: Child, mut answers: impl Read) -> anyhow::Result<ExitStatus> {
    let mut extra = String::new();
    let read = answers.read_to_string(&mut extra);
    let status = child.wait()?;
    read.with_context(|| format!("reading the output of {program}"))?;
    if !extra.is_empty() {
        let first = extra.lines().next().unwrap_or_default();
        bail!("{program} wrote more answers than it was asked for, the first {first:?}");
    }
    Ok(status)
}

/// Reads the answers to `count` requests, numbered `first_id..first_id + count`, and returns
/// them in request order. With `tagged`, each line is `ID\tanswer`, in any order, and every ID
/// must be answered exactly once; otherwise each line is one answer, in request order.
pub fn read_answers(
    input: &mut impl BufRead,
    first_id: usize,
    count: usize,
    tagged: bool,
) -> anyhow::Result<Vec<String>> {
    let mut answers: Vec<Option<String>> = vec![None; count];
    let mut line = String::new();
    for received in 0..count {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            let missing = answers.iter().position(Option::is_none).unwrap_or(received);
            bail!(
                "output closed after {received} of {count} answers; request {} has none",
                first_id + missing
            );
        }
        let line = line.trim_end_matches(['\n', '\r']);
        if !tagged {
            answers[received] = Some(line.to_owned());
            continue;
        }
        let (id, answer) = line
            .split_once('\t')
            .with_context(|| format!("answer line without an ID: {line:?}"))?;
        let slot = id
            .parse::<usize>()
            .ok()
            .and_then(|id| id.checked_sub(first_id))
            .and_then(|index| answers.get_mut(index))
            .with_context(|| {
                format!(
                    "answer to request {id:?}, not one of {first_id}..{}",
                    first_id + count
                )
            })?;
        if slot.is_some() {
            bail!("request {id} answered twice");
        }
        *slot = Some(answer.to_owned());
    }
    // `count` lines, each filling a different slot: none is left empty.
    answers
        .into_iter()
        .collect::<Option<Vec<String>>>()
        .context("an answer is missing")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_engine_times() {
        let cases = [
            ("12\t3400", ("12", Some(3400))),
            ("ERROR\t150", ("ERROR", Some(150))),
            ("12", ("12", None)),
            ("12\t", ("12\t", None)),
            ("12\t-5", ("12\t-5", None)),
            ("12\t3.5", ("12\t3.5", None)),
            // Only the last tab: an answer with a tab keeps it.
            ("a\tb\t7", ("a\tb", Some(7))),
            // Too many digits for nanoseconds in a u64: not an engine time.
            ("1\t99999999999999999999", ("1\t99999999999999999999", None)),
        ];
        for (line, (answer, nanos)) in cases {
            let expected = (answer, nanos.map(Duration::from_nanos));
            assert_eq!(split_engine_time(line), expected, "{line:?}");
        }
    }

    #[test]
    fn classifies_answers() {
        let cases = [
            ("12", Outcome::Answered),
            ("1", Outcome::Answered),
            ("ERROR", Outcome::Error),
            ("UNSUPPORTED", Outcome::Unsupported),
        ];
        for (answer, expected) in cases {
            assert_eq!(Outcome::of(answer), expected, "{answer:?}");
        }
    }

    /// `cat` answers each request with the request itself: one line in, one line out.
    #[test]
    fn talks_to_a_line_echoing_process() -> anyhow::Result<()> {
        let mut engine = Engine::spawn(&["cat".to_owned()])?;
        assert_eq!(engine.ask("COUNT", "a b")?, "COUNT\ta b");
        assert_eq!(engine.ask("TOP_10", "c")?, "TOP_10\tc");
        assert_eq!(engine.ask_line("TAIL\t10\terror")?, "TAIL\t10\terror");
        assert!(engine.close()?.success());
        Ok(())
    }

    /// Reads `text` as the answers to requests `first_id..first_id + count`.
    fn read(text: &str, first_id: usize, count: usize, tagged: bool) -> Result<String, String> {
        read_answers(&mut text.as_bytes(), first_id, count, tagged)
            .map(|answers| answers.join(","))
            .map_err(|error| error.to_string())
    }

    #[test]
    fn reads_answers_in_request_order() {
        /// Output, first ID, count, tagged, the answers joined by commas or the error.
        type Case = (
            &'static str,
            usize,
            usize,
            bool,
            Result<&'static str, &'static str>,
        );
        let cases: &[Case] = &[
            ("5\n1\nERROR\n", 0, 3, false, Ok("5,1,ERROR")),
            ("5\r\n1\n", 0, 2, false, Ok("5,1")),
            (
                "5\n",
                0,
                2,
                false,
                Err("output closed after 1 of 2 answers; request 1 has none"),
            ),
            ("0\t5\n1\t1\n2\tERROR\n", 0, 3, true, Ok("5,1,ERROR")),
            // Out of order: each goes to its request.
            ("2\tERROR\n0\t5\n1\t1\n", 0, 3, true, Ok("5,1,ERROR")),
            // IDs count every line sent, warm-up included.
            ("1001\t7\n1000\t8\n", 1000, 2, true, Ok("8,7")),
            // Lines past `count` are left for `Engine::close` to find.
            ("0\t5\n1\t6\n", 0, 1, true, Ok("5")),
            (
                "0\t5\n2\t1\n",
                0,
                3,
                true,
                Err("output closed after 2 of 3 answers; request 1 has none"),
            ),
            (
                "0\t5\n0\t6\n1\t1\n",
                0,
                3,
                true,
                Err("request 0 answered twice"),
            ),
            (
                "3\t5\n",
                0,
                3,
                true,
                Err("answer to request \"3\", not one of 0..3"),
            ),
            (
                "999\t5\n",
                1000,
                1,
                true,
                Err("answer to request \"999\", not one of 1000..1001"),
            ),
            (
                "x\t5\n",
                0,
                1,
                true,
                Err("answer to request \"x\", not one of 0..1"),
            ),
            ("5\n", 0, 1, true, Err("answer line without an ID: \"5\"")),
            ("", 0, 0, true, Ok("")),
        ];
        for &(text, first_id, count, tagged, expected) in cases {
            let expected = expected.map(str::to_owned).map_err(str::to_owned);
            assert_eq!(read(text, first_id, count, tagged), expected, "{text:?}");
        }
    }

    /// `cat` answers in order; a 10,000-request pipeline neither stalls nor loses a line.
    #[test]
    fn pipelines_requests_through_a_process() -> anyhow::Result<()> {
        let mut engine = Engine::spawn(&["cat".to_owned()])?;
        let queries: Vec<String> = (0..10_000).map(|i| format!("query {i}")).collect();
        let (answers, _) = engine.pipeline("COUNT", &queries, 0, false)?;
        assert_eq!(answers.len(), queries.len());
        assert_eq!(answers[9_999], "COUNT\tquery 9999");
        assert!(engine.close()?.success());
        Ok(())
    }

    /// A tagging engine: answers each request line with its line number and the request.
    #[test]
    fn pipelines_tagged_answers_across_calls() -> anyhow::Result<()> {
        let tagger =
            r#"while IFS= read -r line; do n=$((n+1)); printf '%d\t%s\n' $((n-1)) "$line"; done"#;
        let command = ["sh", "-c", tagger].map(str::to_owned);
        let mut engine = Engine::spawn(&command)?;
        let warmup = ["a".to_owned(), "b".to_owned()];
        engine.pipeline("COUNT", &warmup, 0, true)?;
        let (answers, _, status) =
            engine.pipeline_and_close("TOP_10", &["c".to_owned()], 2, true)?;
        assert_eq!(answers, ["TOP_10\tc"]);
        assert!(status.success());
        Ok(())
    }

    /// An engine that skips a request but keeps running: the last batch closes its input, so
    /// the missing answer is an error, not a wait.
    #[test]
    fn reports_a_request_left_unanswered() -> anyhow::Result<()> {
        let lossy = r#"n=0; while IFS= read -r line; do [ $n = 2 ] || printf '%d\t1\n' $n; n=$((n+1)); done"#;
        let engine = Engine::spawn(&["sh", "-c", lossy].map(str::to_owned))?;
        let queries: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        let error = engine
            .pipeline_and_close("COUNT", &queries, 0, true)
            .expect_err("request 2 has no answer");
        let message = format!("{error:#}");
        assert!(message.contains("request 2 has none"), "{message}");
        Ok(())
    }

    #[test]
    fn reports_answers_never_asked_for() -> anyhow::Result<()> {
        let command = ["sh", "-c", "read -r line; echo 1; echo 2"].map(str::to_owned);
        let mut engine = Engine::spawn(&command)?;
        assert_eq!(engine.ask("COUNT", "a")?, "1");
        let error = engine.close().expect_err("a second answer to one request");
        assert!(error.to_string().contains("\"2\""), "{error}");
        Ok(())
    }

    #[test]
    fn reports_an_engine_that_exits() -> anyhow::Result<()> {
        let mut engine = Engine::spawn(&["true".to_owned()])?;
        assert!(engine.ask("COUNT", "a").is_err());
        Ok(())
    }
}
