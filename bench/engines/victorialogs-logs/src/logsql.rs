//! The protocol's queries and requests (PROTOCOL.md) in LogsQL, VictoriaLogs' query language
//! (docs/victorialogs/logsql.md of VictoriaLogs v1.52.1).
//!
//! The events are loaded with `_stream_fields=service,host` and `_msg_field=message`: `message`
//! is VictoriaLogs' `_msg`, and `service` and `host` label the log streams. VictoriaLogs keeps
//! every value as given, without lowercasing, and its filters are case-sensitive; the protocol
//! matches lowercased words and keyword values. Each clause is therefore translated into the
//! case-insensitive LogsQL filter of the same meaning:
//!
//! | clause | LogsQL |
//! |---|---|
//! | a word, or `message:`/`path:` word | `_msg:i("word")` / `path:i("word")`: the case-insensitive word filter |
//! | keyword `service:v`, `host:v` (stream fields) | `{service=~"(?i)v"}` (v regex-escaped): a stream filter; its regex, as Prometheus' are, matches the whole value |
//! | other keyword `field:v` | `field:~"(?i)^v$"` (v regex-escaped): a regexp filter anchored at both ends of the value |
//! | integer `field:v` | `field:="v"`: the exact filter (JSON integers have one spelling) |
//! | integer `field:[lo TO hi]` | `field:range[lo, hi]` |
//! | `_time:v`, `_time:[lo TO hi]` | `_time:[T(lo), T(hi)]`, T in RFC 3339 with milliseconds: VictoriaLogs extends an inclusive end to the end of its millisecond |
//! | wildcard `prefix*` | `_msg:i(prefix*)`: the case-insensitive prefix filter |
//! | other wildcards (`*eout`, `int*ed`, `rec?ived`, `*imeou*`) | `_msg:~"(?i)(?:^\|[^W])BODY(?:$\|[^W])"`, W the word characters (`\p{L}\p{Nd}_`), BODY the wildcard with `*` as `[W]*` and `?` as `[W]`: some word of the value matches the whole wildcard |
//! | `/regex/`, `word~N` | unsupported (below) |
//!
//! A LogsQL word is a run of Unicode letters, decimal digits and `_`; Quarry, tantivy and Lucene
//! cut words elsewhere (tantivy splits at `_`, Lucene's and Quarry's UAX#29 keep `5.0` and
//! `10.1.2.3` whole, LogsQL splits them at the dots), so a word clause is translated only when
//! its value is one LogsQL word, after dropping non-word characters around it (`failed,` is
//! `failed`, as every analyzer reads it). A value of several LogsQL words (`/api/login`,
//! `5.0`) is unsupported: LogsQL's phrase filter also requires the characters between the words
//! (`"api/login"` does not match `api login`), the peers' phrase queries do not.
//!
//! Unsupported, answered `UNSUPPORTED` rather than approximated:
//! - `/regex/`: LogsQL's regexp filter matches anywhere in the value, across word boundaries
//!   (`.` matches a space), while the protocol's regex must match one whole word;
//! - `word~N`: LogsQL has no edit-distance filter;
//! - a value that is not one LogsQL word (above), and a wildcard holding non-word characters
//!   other than `*` and `?`.

use logs_driver::protocol::{Clause, Filter, Pattern};
use logs_driver::schema::{self, TIME};
use logs_driver::time::format_rfc3339_millis;

/// The stream fields of the ingestion (`_stream_fields=service,host`).
pub const STREAM_FIELDS: [&str; 2] = ["service", "host"];

/// The parameters of `/insert/jsonline` (the natural configuration for these events).
pub const INSERT_PARAMS: &str = "_stream_fields=service,host&_msg_field=message&_time_field=_time";

/// A clause (or request) whose meaning LogsQL cannot express the same way; the reason is
/// printed on stderr when the request is answered `UNSUPPORTED`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

/// A word character of LogsQL (VictoriaLogs' `isTokenRune`: `unicode.IsLetter`,
/// `unicode.IsDigit` or `_`). Outside ASCII, Rust's `is_alphanumeric` stands in for Go's
/// letter-or-decimal-digit: they differ on letter-like numbers (`Nl`, `No`) and some combining
/// marks, which the generated events do not hold.
pub fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        c.is_alphanumeric()
    }
}

/// The LogsQL words of `text`, in order.
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_word_char(c))
        .filter(|word| !word.is_empty())
}

/// The name VictoriaLogs stores a protocol field under.
pub fn field_name(field: &str) -> &str {
    if field == "message" {
        "_msg"
    } else {
        field
    }
}

/// A LogsQL string literal: double-quoted, with JSON's escapes, which LogsQL reads as Go's
/// (`strconv.Unquote`).
pub fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// `text` with the RE2 metacharacters escaped, matched literally.
pub fn regex_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// A time of the protocol (ms since the epoch) as LogsQL reads it: RFC 3339 UTC with
/// milliseconds, `2026-11-01T08:15:02.117Z`.
fn time_literal(millis: i64) -> String {
    let mut text = Vec::with_capacity(24);
    format_rfc3339_millis(millis, &mut text);
    String::from_utf8(text).expect("RFC 3339 text is ASCII")
}

/// The word character class of RE2 matching [`is_word_char`] (Go's letters and decimal
/// digits, and `_`).
const WORD_CLASS: &str = r"[\p{L}\p{Nd}_]";

/// The LogsQL filter of a protocol query: its clauses joined by `AND` (`*` for every event).
pub fn filter(filter: &Filter) -> Result<String, Unsupported> {
    if filter.clauses.is_empty() {
        return Ok("*".to_owned());
    }
    let clauses = filter
        .clauses
        .iter()
        .map(clause)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(clauses.join(" AND "))
}

/// `filter` narrowed to the events that have `field` (`field:*`, the any-value filter): the
/// aggregations count only those, as the peers do.
pub fn filter_with_field(query: &Filter, field: &str) -> Result<String, Unsupported> {
    let has_field = format!("{}:*", field_name(field));
    Ok(if query.clauses.is_empty() {
        has_field
    } else {
        format!("{} AND {has_field}", filter(query)?)
    })
}

fn clause(clause: &Clause) -> Result<String, Unsupported> {
    Ok(match clause {
        Clause::Word { field, word } => {
            let mut found = words(word);
            match (found.next(), found.next()) {
                (Some(single), None) => format!("{}:i({})", field_name(field), quote(single)),
                (None, _) => {
                    return Err(Unsupported(format!(
                        "{word:?} holds no LogsQL word (letters, digits, _)"
                    )))
                }
                (Some(_), Some(_)) => {
                    return Err(Unsupported(format!(
                        "{word:?} is several LogsQL words: LogsQL's phrase filter also requires \
                         the characters between them, the peers' phrase queries do not"
                    )))
                }
            }
        }
        Clause::Keyword { field, value } => {
            let escaped = regex_escape(value);
            if STREAM_FIELDS.contains(&field.as_str()) {
                format!("{{{field}=~{}}}", quote(&format!("(?i){escaped}")))
            } else {
                format!("{field}:~{}", quote(&format!("(?i)^{escaped}$")))
            }
        }
        Clause::Equals { field, value } if field == TIME => {
            let time = time_literal(*value);
            format!("_time:[{time}, {time}]")
        }
        Clause::Equals { field, value } => format!("{field}:={}", quote(&value.to_string())),
        Clause::Range { field, lo, hi } if field == TIME => {
            format!("_time:[{}, {}]", time_literal(*lo), time_literal(*hi))
        }
        Clause::Range { field, lo, hi } => format!("{field}:range[{lo}, {hi}]"),
        Clause::Pattern { field, pattern } => pattern_filter(field_name(field), pattern)?,
    })
}

fn pattern_filter(field: &str, pattern: &Pattern) -> Result<String, Unsupported> {
    match pattern {
        Pattern::Wildcard(wildcard) => {
            if let Some(c) = wildcard
                .chars()
                .find(|&c| c != '*' && c != '?' && !is_word_char(c))
            {
                return Err(Unsupported(format!(
                    "wildcard {wildcard:?} holds {c:?}, which LogsQL splits words at"
                )));
            }
            // `prefix*`: the case-insensitive prefix filter, LogsQL's own.
            if let Some(prefix) = wildcard.strip_suffix('*') {
                if !prefix.is_empty() && !prefix.contains(['*', '?']) {
                    return Ok(format!("{field}:i({prefix}*)"));
                }
            }
            // A word of the value matches the whole wildcard: non-word characters (or the
            // ends) on both sides of it.
            let only_stars = wildcard.chars().all(|c| c == '*');
            let mut body = String::new();
            if only_stars {
                // Words are never empty.
                body = format!("{WORD_CLASS}+");
            } else {
                for c in wildcard.chars() {
                    match c {
                        '*' => {
                            body.push_str(WORD_CLASS);
                            body.push('*');
                        }
                        '?' => body.push_str(WORD_CLASS),
                        c => body.push(c),
                    }
                }
            }
            let boundary = r"[^\p{L}\p{Nd}_]";
            let regex = format!("(?i)(?:^|{boundary}){body}(?:$|{boundary})");
            Ok(format!("{field}:~{}", quote(&regex)))
        }
        Pattern::Regex(regex) => Err(Unsupported(format!(
            "/{regex}/: LogsQL's regexp filter matches anywhere in the value, across word \
             boundaries, not one whole word"
        ))),
        Pattern::Fuzzy { term, distance } => Err(Unsupported(format!(
            "{term}~{distance}: LogsQL has no edit-distance filter"
        ))),
    }
}

/// Whether `field` is one of the schema's integer fields (their values come back as decimal
/// text).
pub fn is_integer_field(field: &str) -> bool {
    schema::field_kind(field) == Some(schema::FieldKind::Integer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use logs_driver::protocol::parse_filter;

    fn translate(query: &str) -> Result<String, Unsupported> {
        filter(&parse_filter(query).expect("a valid query"))
    }

    #[test]
    fn translates_queries() {
        let cases: &[(&str, Option<&str>)] = &[
            ("*", Some("*")),
            ("failed", Some(r#"_msg:i("failed")"#)),
            ("Failed", Some(r#"_msg:i("Failed")"#)),
            ("failed,", Some(r#"_msg:i("failed")"#)),
            ("message:refused", Some(r#"_msg:i("refused")"#)),
            ("path:login", Some(r#"path:i("login")"#)),
            ("blk_123", Some(r#"_msg:i("blk_123")"#)),
            ("path:/api/login", None),
            ("5.0", None),
            ("...", None),
            ("service:NGINX", Some(r#"{service=~"(?i)nginx"}"#)),
            ("host:host-017", Some(r#"{host=~"(?i)host-017"}"#)),
            ("level:error", Some(r#"level:~"(?i)^error$""#)),
            (
                "client_ip:10.0.0.1",
                Some(r#"client_ip:~"(?i)^10\\.0\\.0\\.1$""#),
            ),
            ("status:503", Some(r#"status:="503""#)),
            ("latency_ms:-5", Some(r#"latency_ms:="-5""#)),
            (
                "service:nginx AND latency_ms:[1000 TO 30000]",
                Some(r#"{service=~"(?i)nginx"} AND latency_ms:range[1000, 30000]"#),
            ),
            (
                "failed AND _time:[1793520000000 TO 1793523600000]",
                Some(
                    r#"_msg:i("failed") AND _time:[2026-11-01T08:00:00.000Z, 2026-11-01T09:00:00.000Z]"#,
                ),
            ),
            (
                "_time:1793520000117",
                Some("_time:[2026-11-01T08:00:00.117Z, 2026-11-01T08:00:00.117Z]"),
            ),
            ("conn*", Some("_msg:i(conn*)")),
            ("path:log*", Some("path:i(log*)")),
            (
                "*eout",
                Some(
                    r#"_msg:~"(?i)(?:^|[^\\p{L}\\p{Nd}_])[\\p{L}\\p{Nd}_]*eout(?:$|[^\\p{L}\\p{Nd}_])""#,
                ),
            ),
            (
                "rec?ived",
                Some(
                    r#"_msg:~"(?i)(?:^|[^\\p{L}\\p{Nd}_])rec[\\p{L}\\p{Nd}_]ived(?:$|[^\\p{L}\\p{Nd}_])""#,
                ),
            ),
            ("con.n*", None),
            ("/tim.o.t/", None),
            ("timout~1", None),
        ];
        for (query, expected) in cases {
            let got = translate(query).ok();
            assert_eq!(got.as_deref(), *expected, "{query:?}");
        }
    }

    #[test]
    fn narrows_to_events_with_the_field() {
        let all = parse_filter("*").expect("valid");
        assert_eq!(
            filter_with_field(&all, "latency_ms").unwrap(),
            "latency_ms:*"
        );
        let nginx = parse_filter("service:nginx").expect("valid");
        assert_eq!(
            filter_with_field(&nginx, "client_ip").unwrap(),
            r#"{service=~"(?i)nginx"} AND client_ip:*"#
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(regex_escape("a.b*c(d)"), r"a\.b\*c\(d\)");
        assert_eq!(quote(r#"say "hi" \ there"#), r#""say \"hi\" \\ there""#);
        assert_eq!(
            words("/api/v1/login?x=1").collect::<Vec<_>>(),
            ["api", "v1", "login", "x", "1"]
        );
        assert_eq!(
            words("ERROR_INVALID_FUNCTION 5.0").collect::<Vec<_>>(),
            ["ERROR_INVALID_FUNCTION", "5", "0"]
        );
        assert_eq!(
            words("тест45 foo-bar").collect::<Vec<_>>(),
            ["тест45", "foo", "bar"]
        );
    }
}
