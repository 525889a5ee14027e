//! Query-set files and answer files.
//!
//! A query set holds one named request per line, `NAME<TAB>REQUEST` (the request being a
//! protocol line, tabs included); blank lines and lines starting with `#` are skipped. Names
//! are unique and hold no whitespace: they name the request in reports.
//!
//! An answers file holds one line per request, `NAME<TAB>ANSWER<TAB>REQUEST` (answers hold no
//! tab), so `diff` or `paste` of two engines' files lines them up.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{bail, Context};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedRequest {
    pub name: String,
    pub request: String,
}

pub fn parse_query_set(text: &str) -> anyhow::Result<Vec<NamedRequest>> {
    let mut requests = Vec::new();
    let mut names = HashSet::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let line_number = index + 1;
        let Some((name, request)) = line.split_once('\t') else {
            bail!("line {line_number}: expected NAME<TAB>REQUEST");
        };
        if name.is_empty() || name.contains(char::is_whitespace) {
            bail!("line {line_number}: bad name {name:?}");
        }
        if !names.insert(name.to_owned()) {
            bail!("line {line_number}: name {name:?} used twice");
        }
        requests.push(NamedRequest {
            name: name.to_owned(),
            request: request.to_owned(),
        });
    }
    if requests.is_empty() {
        bail!("no requests");
    }
    Ok(requests)
}

pub fn load_query_set(path: &Path) -> anyhow::Result<Vec<NamedRequest>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_query_set(&text).with_context(|| format!("query set {}", path.display()))
}

/// One line of an answers file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub name: String,
    pub answer: String,
    pub request: String,
}

pub fn format_answers(answers: &[Answer]) -> String {
    let mut text = String::new();
    for answer in answers {
        // Writing to a String cannot fail.
        let _ = writeln!(
            text,
            "{}\t{}\t{}",
            answer.name, answer.answer, answer.request
        );
    }
    text
}

pub fn parse_answers(text: &str) -> anyhow::Result<Vec<Answer>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.is_empty())
        .map(|(index, line)| {
            let mut parts = line.splitn(3, '\t');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(name), Some(answer), Some(request)) => Ok(Answer {
                    name: name.to_owned(),
                    answer: answer.to_owned(),
                    request: request.to_owned(),
                }),
                _ => bail!("line {}: expected NAME<TAB>ANSWER<TAB>REQUEST", index + 1),
            }
        })
        .collect()
}

pub fn load_answers(path: &Path) -> anyhow::Result<Vec<Answer>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_answers(&text).with_context(|| format!("answers file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_query_sets() -> anyhow::Result<()> {
        let text = "# comment\n\ncount_all\tCOUNT\t*\ntail\tTAIL\t100\terror\r\n";
        let set = parse_query_set(text)?;
        assert_eq!(
            set,
            vec![
                NamedRequest {
                    name: "count_all".into(),
                    request: "COUNT\t*".into()
                },
                NamedRequest {
                    name: "tail".into(),
                    request: "TAIL\t100\terror".into()
                },
            ]
        );
        for bad in [
            "COUNT *\n",
            "a\tCOUNT\t*\na\tCOUNT\t*\n",
            "a b\tCOUNT\t*\n",
            "# only\n",
        ] {
            assert!(parse_query_set(bad).is_err(), "{bad:?}");
        }
        Ok(())
    }

    #[test]
    fn answers_round_trip() -> anyhow::Result<()> {
        let answers = vec![
            Answer {
                name: "terms".into(),
                answer: "a=1 b=1".into(),
                request: "TERMS\tclient_ip\t10\t*".into(),
            },
            Answer {
                name: "empty".into(),
                answer: String::new(),
                request: "TERMS\tclient_ip\t10\tnothing".into(),
            },
        ];
        assert_eq!(parse_answers(&format_answers(&answers))?, answers);
        assert!(parse_answers("just\tthis\n").is_err());
        Ok(())
    }
}
