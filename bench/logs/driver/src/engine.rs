//! An engine process spoken to over its stdin and stdout: one request line in, one answer line
//! out.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};

use anyhow::{bail, Context};

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

    /// Sends one request line and waits for its answer, returned without the line break.
    pub fn ask(&mut self, request: &str) -> anyhow::Result<&str> {
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
                "{} closed its output ({status}) instead of answering {request:?}",
                self.program
            );
        }
        Ok(self.answer.trim_end_matches(['\n', '\r']))
    }

    /// Closes the engine's stdin, which asks it to exit, and waits for it.
    pub fn close(self) -> anyhow::Result<ExitStatus> {
        let Engine {
            mut child,
            requests,
            ..
        } = self;
        drop(requests);
        Ok(child.wait()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cat` answers each request with the request itself.
    #[test]
    fn talks_to_a_line_echoing_process() -> anyhow::Result<()> {
        let mut engine = Engine::spawn(&["cat".to_owned()])?;
        assert_eq!(engine.ask("COUNT\t*")?, "COUNT\t*");
        assert_eq!(engine.ask("TAIL\t10\terror")?, "TAIL\t10\terror");
        assert!(engine.close()?.success());
        Ok(())
    }

    #[test]
    fn reports_an_engine_that_exits() -> anyhow::Result<()> {
        let mut engine = Engine::spawn(&["true".to_owned()])?;
        assert!(engine.ask("COUNT\t*").is_err());
        Ok(())
    }
}
