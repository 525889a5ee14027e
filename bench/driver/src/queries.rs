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
