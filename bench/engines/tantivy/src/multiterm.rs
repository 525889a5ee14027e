//! `serve --multiterm`: the multi-term query forms of `bench/multiterm/wiki-queries.tsv`, built
//! as tantivy queries by hand, since tantivy's `QueryParser` reads no fuzzy term, no regex and
//! no leading wildcard.
//!
//! ```text
//! query   := clause { whitespace clause }
//! clause  := [ "+" | "-" ] [ field ":" ] value      field: url, title or body
//! value   := '"' words '"' [ "~" slop ]             PhraseQuery with that slop (one word: TermQuery)
//!          | "/" regex "/"                          RegexQuery, the regex as written
//!          | ( "[" | "{" ) lo " TO " hi ( "]" | "}" )  RangeQuery over the field's terms
//!          | word "~" [ 0 | 1 | 2 ]                 FuzzyTermQuery, transposition_cost_one (Damerau)
//!          | word holding "*" or "?"                RegexQuery: `*` is `.*`, `?` is `.`
//!          | word                                   through the analyzer: TermQuery, or PhraseQuery
//! ```
//!
//! A clause without a field is the `Should` of that clause over `url`, `title` and `body`, as a
//! bare word is in Quarry and in Lucene's `MultiFieldQueryParser`. Clauses are joined as Lucene
//! joins them: `+` is `Must`, `-` is `MustNot`, the others `Should` (required only when no
//! clause is `+`). Words, wildcards, fuzzy terms and range bounds are lowercased (the indexed
//! tokens are); a regex is used as written. Anything else is a [`ParseError`] (`ERROR`).

use std::ops::Bound;

use quarry_index::analysis::Analyzer;
use tantivy::query::{
    BooleanQuery, EmptyQuery, FuzzyTermQuery, Occur, PhraseQuery, Query, RangeQuery, RegexQuery,
    TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

use crate::schema::Fields;

#[derive(Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

/// What one clause's value asks for, before it is built per field.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    Words(String),
    Phrase {
        text: String,
        slop: u32,
    },
    Regex(String),
    Wildcard(String),
    Fuzzy {
        word: String,
        distance: u8,
    },
    Range {
        lo: Bound<String>,
        hi: Bound<String>,
    },
}

pub fn build(
    text: &str,
    fields: &Fields,
    analyzer: &Analyzer,
) -> Result<Box<dyn Query>, ParseError> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (clause, after) = split_clause(rest)?;
        rest = after.trim_start();
        let (occur, clause) = match clause.as_bytes()[0] {
            b'+' => (Occur::Must, &clause[1..]),
            b'-' => (Occur::MustNot, &clause[1..]),
            _ => (Occur::Should, clause),
        };
        let (field, value) = match clause.split_once(':') {
            Some((name, value)) if !clause.starts_with(['"', '/']) => {
                (Some(field_named(fields, name)?), value)
            }
            _ => (None, clause),
        };
        let value = parse_value(value)?;
        let query = match field {
            Some(field) => value_query(&value, field, analyzer)?,
            None => {
                let per_field = [fields.url, fields.title, fields.body]
                    .into_iter()
                    .map(|field| Ok((Occur::Should, value_query(&value, field, analyzer)?)))
                    .collect::<Result<Vec<_>, ParseError>>()?;
                Box::new(BooleanQuery::new(per_field)) as Box<dyn Query>
            }
        };
        clauses.push((occur, query));
    }
    match clauses.len() {
        0 => Err(ParseError("empty query".into())),
        1 if clauses[0].0 == Occur::Should => Ok(clauses.remove(0).1),
        _ => Ok(Box::new(BooleanQuery::new(clauses))),
    }
}

fn field_named(fields: &Fields, name: &str) -> Result<Field, ParseError> {
    match name {
        "url" => Ok(fields.url),
        "title" => Ok(fields.title),
        "body" => Ok(fields.body),
        _ => Err(ParseError(format!("unknown field {name:?}"))),
    }
}

/// The next clause (up to whitespace outside quotes, slashes and brackets) and what follows.
fn split_clause(text: &str) -> Result<(&str, &str), ParseError> {
    let mut closing: Option<&[char]> = None;
    let mut value_start = true;
    for (i, c) in text.char_indices() {
        match closing {
            Some(close) if close.contains(&c) => closing = None,
            Some(_) => {}
            None if c.is_whitespace() => {
                // `[a TO b]` holds spaces: a range is one clause.
                return Ok((&text[..i], &text[i..]));
            }
            None => {
                if value_start {
                    closing = match c {
                        '"' => Some(&['"'][..]),
                        '/' => Some(&['/'][..]),
                        '[' | '{' => Some(&[']', '}'][..]),
                        _ => None,
                    };
                }
                value_start = matches!(c, '+' | '-' | ':');
            }
        }
    }
    if closing.is_some() {
        return Err(ParseError(format!("unterminated clause {text:?}")));
    }
    Ok((text, ""))
}

fn parse_value(value: &str) -> Result<Value, ParseError> {
    if value.is_empty() {
        return Err(ParseError("empty value".into()));
    }
    if let Some(inner) = value.strip_prefix('"') {
        let (phrase, after) = inner
            .split_once('"')
            .ok_or_else(|| ParseError("unterminated phrase".into()))?;
        let slop = match after {
            "" => 0,
            _ => after
                .strip_prefix('~')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| ParseError(format!("bad slop {after:?}")))?,
        };
        return Ok(Value::Phrase {
            text: phrase.to_owned(),
            slop,
        });
    }
    if let Some(inner) = value.strip_prefix('/') {
        let regex = inner
            .strip_suffix('/')
            .ok_or_else(|| ParseError("unterminated regex".into()))?;
        return Ok(Value::Regex(regex.to_owned()));
    }
    if value.starts_with(['[', '{']) {
        return parse_range(value);
    }
    if let Some((word, distance)) = value.rsplit_once('~') {
        let distance = match distance {
            "" => 2,
            "0" | "1" | "2" => distance.parse().unwrap_or(2),
            _ => return Err(ParseError(format!("bad fuzzy distance {distance:?}"))),
        };
        return Ok(Value::Fuzzy {
            word: word.to_lowercase(),
            distance,
        });
    }
    if value.contains(['*', '?']) {
        return Ok(Value::Wildcard(value.to_lowercase()));
    }
    Ok(Value::Words(value.to_owned()))
}

fn parse_range(value: &str) -> Result<Value, ParseError> {
    let bad = || ParseError(format!("bad range {value:?}"));
    let inclusive_lo = value.starts_with('[');
    let inclusive_hi = value.ends_with(']');
    if !inclusive_hi && !value.ends_with('}') {
        return Err(bad());
    }
    let inner = &value[1..value.len() - 1];
    let (lo, hi) = inner.split_once(" TO ").ok_or_else(bad)?;
    let bound = |text: &str, inclusive: bool| match text.trim() {
        "*" => Bound::Unbounded,
        text if inclusive => Bound::Included(text.to_lowercase()),
        text => Bound::Excluded(text.to_lowercase()),
    };
    Ok(Value::Range {
        lo: bound(lo, inclusive_lo),
        hi: bound(hi, inclusive_hi),
    })
}

/// A wildcard as a regex over whole terms: `*` any run, `?` one character, the rest literal.
fn wildcard_regex(wildcard: &str) -> String {
    let mut regex = String::with_capacity(wildcard.len() * 2);
    for c in wildcard.chars() {
        match c {
            '*' => regex.push_str(".*"),
            '?' => regex.push('.'),
            c if c.is_alphanumeric() => regex.push(c),
            c => {
                regex.push('\\');
                regex.push(c);
            }
        }
    }
    regex
}

fn value_query(
    value: &Value,
    field: Field,
    analyzer: &Analyzer,
) -> Result<Box<dyn Query>, ParseError> {
    let regex = |pattern: &str| -> Result<Box<dyn Query>, ParseError> {
        RegexQuery::from_pattern(pattern, field)
            .map(|query| Box::new(query) as Box<dyn Query>)
            .map_err(|error| ParseError(error.to_string()))
    };
    Ok(match value {
        Value::Words(text) => phrase(field, analyzer, text, 0),
        Value::Phrase { text, slop } => phrase(field, analyzer, text, *slop),
        Value::Regex(pattern) => regex(pattern)?,
        Value::Wildcard(wildcard) => regex(&wildcard_regex(wildcard))?,
        Value::Fuzzy { word, distance } => Box::new(FuzzyTermQuery::new(
            Term::from_field_text(field, word),
            *distance,
            true,
        )),
        Value::Range { lo, hi } => {
            let term = |bound: &Bound<String>| match bound {
                Bound::Included(text) => Bound::Included(Term::from_field_text(field, text)),
                Bound::Excluded(text) => Bound::Excluded(Term::from_field_text(field, text)),
                Bound::Unbounded => Bound::Unbounded,
            };
            if matches!((lo, hi), (Bound::Unbounded, Bound::Unbounded)) {
                return Err(ParseError("a range needs a bound".into()));
            }
            Box::new(RangeQuery::new(term(lo), term(hi)))
        }
    })
}

/// The text through Quarry's analyzer: no token matches nothing, one is a `TermQuery`, more a
/// `PhraseQuery` with `slop`.
fn phrase(field: Field, analyzer: &Analyzer, text: &str, slop: u32) -> Box<dyn Query> {
    let mut terms: Vec<(usize, Term)> = analyzer
        .tokens(text)
        .into_iter()
        .map(|(position, token)| (position as usize, Term::from_field_text(field, &token)))
        .collect();
    match terms.len() {
        0 => Box::new(EmptyQuery),
        1 => Box::new(TermQuery::new(
            terms.remove(0).1,
            IndexRecordOption::WithFreqs,
        )),
        _ => Box::new(PhraseQuery::new_with_offset_and_slop(terms, slop)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_clauses() {
        let split = |text| {
            let mut rest: &str = text;
            let mut clauses = Vec::new();
            while !rest.is_empty() {
                let (clause, after) = split_clause(rest).expect("a clause");
                clauses.push(clause.to_owned());
                rest = after.trim_start();
            }
            clauses
        };
        assert_eq!(split("+cou* +safety"), ["+cou*", "+safety"]);
        assert_eq!(split("\"home school\"~1 x"), ["\"home school\"~1", "x"]);
        assert_eq!(split("title:[bea TO beac] x"), ["title:[bea TO beac]", "x"]);
        assert_eq!(split("body:{dis TO dise}"), ["body:{dis TO dise}"]);
        assert_eq!(split("/a b/ c"), ["/a b/", "c"]);
        assert!(split_clause("\"open").is_err());
    }

    #[test]
    fn parses_values() {
        assert_eq!(parse_value("Weath*"), Ok(Value::Wildcard("weath*".into())));
        assert_eq!(
            parse_value("saerch~1"),
            Ok(Value::Fuzzy {
                word: "saerch".into(),
                distance: 1
            })
        );
        assert_eq!(
            parse_value("eror~"),
            Ok(Value::Fuzzy {
                word: "eror".into(),
                distance: 2
            })
        );
        assert!(parse_value("eror~3").is_err());
        assert_eq!(parse_value("/a(b|c)/"), Ok(Value::Regex("a(b|c)".into())));
        assert_eq!(
            parse_value("{dis TO Dise]"),
            Ok(Value::Range {
                lo: Bound::Excluded("dis".into()),
                hi: Bound::Included("dise".into())
            })
        );
        assert_eq!(
            parse_value("\"a b\"~2"),
            Ok(Value::Phrase {
                text: "a b".into(),
                slop: 2
            })
        );
        assert_eq!(wildcard_regex("w?ld*c.rd"), "w.ld.*c\\.rd");
    }
}
