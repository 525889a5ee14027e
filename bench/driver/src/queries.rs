//! Query files and the rewrites that turn a free-text query into an AND or phrase query.

use std::fmt;
use std::fs;
use std::path::Path;

use anyhow::Context;

/// Reads one query per line. Lines of the TREC Million Query topics file look like
/// `20001:1:obama family tree` (`id:priority:text`); the prefix is dropped when both of its
/// fields are numbers, so plain query files work too. Blank lines are skipped.
///
/// Lines are UTF-8, except the few that are not: the TREC file holds two Latin-1 lines
/// (`la ni\xf1a`, `espa\xf1ol`) among UTF-8 ones, so such a line is read as Latin-1.
pub fn load(path: &Path) -> anyhow::Result<Vec<String>> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(bytes
        .split(|&byte| byte == b'\n')
        .map(decode_line)
        .filter_map(|line| {
            let query = strip_topic_prefix(line.trim_end_matches('\r'));
            (!query.trim().is_empty()).then(|| protocol_safe(query))
        })
        .collect())
}

/// A query of a file with kinds: `KIND<TAB>query` (bench/game/queries.tsv).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindQuery {
    pub kind: String,
    pub query: String,
}

/// Reads `KIND<TAB>query` lines (UTF-8, or Latin-1 as [`load`] reads them). Blank lines are
/// skipped; a line without a tab, or with an empty kind or query, is an error naming it.
pub fn load_kinds(path: &Path) -> anyhow::Result<Vec<KindQuery>> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut queries = Vec::new();
    for (number, line) in bytes.split(|&byte| byte == b'\n').enumerate() {
        let line = decode_line(line);
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        match line.split_once('\t') {
            Some((kind, query)) if !kind.trim().is_empty() && !query.trim().is_empty() => {
                queries.push(KindQuery {
                    kind: kind.trim().to_owned(),
                    query: protocol_safe(query),
                });
            }
            _ => anyhow::bail!(
                "{} line {}: not KIND<TAB>query: {line:?}",
                path.display(),
                number + 1
            ),
        }
    }
    Ok(queries)
}

fn decode_line(line: &[u8]) -> String {
    match std::str::from_utf8(line) {
        Ok(text) => text.to_owned(),
        // Latin-1 bytes are the first 256 code points.
        Err(_) => line.iter().map(|&byte| char::from(byte)).collect(),
    }
}

fn strip_topic_prefix(line: &str) -> &str {
    let mut parts = line.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(id), Some(priority), Some(text)) if is_number(id) && is_number(priority) => text,
        _ => line,
    }
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// Tabs and line breaks are the protocol's separators, so inside a query they become spaces.
/// Nothing else is touched: engines must cope with the queries people type.
fn protocol_safe(query: &str) -> String {
    query.replace(['\t', '\r', '\n'], " ")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transform {
    /// The text as is: Lucene syntax, so plain words are ORed
    Or,
    /// Every word required: `a b` becomes `+a +b`
    And,
    /// The words as one phrase: `a b` becomes `"a b"`
    Phrase,
}

impl Transform {
    pub fn apply(self, query: &str) -> String {
        match self {
            Transform::Or => query.to_owned(),
            Transform::And => query
                .split_whitespace()
                .map(|word| format!("+{word}"))
                .collect::<Vec<_>>()
                .join(" "),
            Transform::Phrase => {
                format!(
                    "\"{}\"",
                    query.split_whitespace().collect::<Vec<_>>().join(" ")
                )
            }
        }
    }
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transform::Or => "or",
            Transform::And => "and",
            Transform::Phrase => "phrase",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_topic_prefixes() {
        let cases = [
            ("20001:1:obama family tree", "obama family tree"),
            ("20002:3:time: 10:30 am", "time: 10:30 am"),
            ("10:30 am", "10:30 am"),
            ("a:1:b", "a:1:b"),
            ("1::x", "1::x"),
            ("plain query", "plain query"),
        ];
        for (line, expected) in cases {
            assert_eq!(strip_topic_prefix(line), expected, "{line:?}");
        }
    }

    #[test]
    fn transforms_queries() {
        let cases = [
            (Transform::Or, "a  b c", "a  b c"),
            (Transform::And, "a  b c", "+a +b +c"),
            (Transform::And, "x", "+x"),
            (Transform::Phrase, " a  b c ", "\"a b c\""),
            (Transform::Phrase, "x", "\"x\""),
        ];
        for (transform, query, expected) in cases {
            assert_eq!(transform.apply(query), expected, "{transform} {query:?}");
        }
    }

    #[test]
    fn loads_files_with_kinds() -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!("search-driver-kinds-{}", std::process::id()));
        fs::create_dir_all(&dir)?;
        /// The file's bytes, and the (kind, query) pairs read or a part of the error.
        type Case = (
            &'static [u8],
            Result<Vec<(&'static str, &'static str)>, &'static str>,
        );
        let cases: &[Case] = &[
            (
                b"term\tfox\n\nphrase\t\"a b\"\r\ntwo_phase\t+\"a b\" +c\tx\nterm\tni\xf1a",
                Ok(vec![
                    ("term", "fox"),
                    ("phrase", "\"a b\""),
                    // Only the first tab separates: the rest of the query's tabs are spaces.
                    ("two_phase", "+\"a b\" +c x"),
                    ("term", "niña"),
                ]),
            ),
            (b"term\tfox\nno tab\n", Err("line 2: not KIND<TAB>query")),
            (b"\tfox\n", Err("line 1: not KIND<TAB>query")),
            (b"term\t \n", Err("line 1: not KIND<TAB>query")),
        ];
        let path = dir.join("queries.tsv");
        let mut results = Vec::new();
        for (text, _) in cases {
            fs::write(&path, text)?;
            results.push(load_kinds(&path).map_err(|error| error.to_string()));
        }
        fs::remove_dir_all(&dir)?;
        for ((text, expected), got) in cases.iter().zip(results) {
            match (expected, got) {
                (Ok(expected), Ok(got)) => {
                    let got: Vec<(&str, &str)> = got
                        .iter()
                        .map(|q| (q.kind.as_str(), q.query.as_str()))
                        .collect();
                    assert_eq!(&got, expected, "{text:?}");
                }
                (Err(expected), Err(got)) => assert!(got.contains(expected), "{got}"),
                (expected, got) => panic!("{text:?}: expected {expected:?}, got {got:?}"),
            }
        }
        Ok(())
    }

    #[test]
    fn loads_topic_files() -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!("search-driver-test-{}", std::process::id()));
        fs::create_dir_all(&dir)?;
        let path = dir.join("topics.txt");
        fs::write(
            &path,
            b"1:1:obama family\n2:1:  \n\n3:2:tab\there\r\n4:4:la ni\xf1a\n5:4:\xc3\xa4rzte",
        )?;
        let loaded = load(&path);
        fs::remove_dir_all(&dir)?;
        assert_eq!(
            loaded?,
            vec!["obama family", "tab here", "la niña", "ärzte"]
        );
        Ok(())
    }
}
