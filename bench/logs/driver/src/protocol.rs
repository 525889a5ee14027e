//! Request lines and the query language of PROTOCOL.md.
//!
//! ```text
//! COUNT<TAB>QUERY                 TAIL<TAB>K<TAB>QUERY            HEAD<TAB>K<TAB>QUERY
//! TAILEV<TAB>K<TAB>QUERY
//! HISTOGRAM<TAB>SECONDS<TAB>QUERY TERMS<TAB>FIELD<TAB>K<TAB>QUERY
//! PERCENTILES<TAB>FIELD<TAB>QUERY STATS<TAB>FIELD<TAB>QUERY
//!
//! query   := "*" | clause (" AND " clause)*
//! clause  := word | field ":" value | field ":[" lo " TO " hi "]"
//! ```
//!
//! A word or text-field value may be a multi-term pattern ([`Pattern`]): a wildcard (`tim*`,
//! `*eout`, `t?me`, `*imeou*`), a regular expression over whole tokens (`/tim(e|ed)out/`) or a
//! fuzzy term (`timout~1`, `exceptoin~2`).
//!
//! What this reading decides where PROTOCOL.md is silent (the Lucene peer decides the same):
//! a clause value holds no whitespace; a keyword value is lowercased; `_time:v` is equality in
//! milliseconds; ranges are inclusive and allowed on integer fields and `_time` only; `K` and
//! `SECONDS` are at least 1; TERMS takes a keyword field, PERCENTILES and STATS an integer one.
//! An unknown command is [`RequestError::Unsupported`] (answer `UNSUPPORTED`), anything else
//! malformed is an error (answer `ERROR`).

use std::fmt;

use crate::schema::{self, FieldKind};

/// One clause of a query; a query is the conjunction of its clauses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Clause {
    /// The text `field` holds `word` (a bare word searches `message`). The word is as typed:
    /// each engine analyzes it with the field's analyzer.
    Word { field: String, word: String },
    /// The keyword `field` equals `value` (already lowercased).
    Keyword { field: String, value: String },
    /// The integer field (or `_time`) equals `value`.
    Equals { field: String, value: i64 },
    /// The integer field (or `_time`) is in `[lo, hi]`.
    Range { field: String, lo: i64, hi: i64 },
    /// The text `field` holds a token the pattern matches.
    Pattern { field: String, pattern: Pattern },
}

/// A multi-term pattern over a text field's tokens, which are lowercase in every engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// A value holding `*` (any run of characters) or `?` (one character), lowercased:
    /// `tim*` (a prefix), `*eout`, `t?me`, `*imeou*`.
    Wildcard(String),
    /// `/regex/`: tokens the regular expression matches as a whole, as written. Query sets keep
    /// to the syntax Rust's regex, tantivy's and Lucene's `RegExp` read alike: literals, `.`,
    /// `[a-z]`, `( | )`, `?`, `*`, `+`, `{m,n}`.
    Regex(String),
    /// `word~N`, N 0 to 2 (`~` alone is 2): tokens within N edits of the lowercased word, a
    /// transposition counting one (Damerau, Lucene's FuzzyQuery default).
    Fuzzy { term: String, distance: u8 },
}

impl Pattern {
    /// The pattern a value spells, `None` for a plain word.
    pub fn of(value: &str) -> Result<Option<Pattern>, QueryError> {
        // `/regex/`: slashes at both ends and none inside; a path (`/api/login`) is a word.
        if let Some(regex) = value.strip_prefix('/').and_then(|v| v.strip_suffix('/')) {
            if !regex.is_empty() && !regex.contains('/') {
                return Ok(Some(Pattern::Regex(regex.to_owned())));
            }
        }
        if let Some((term, distance)) = value.rsplit_once('~') {
            let distance = match distance {
                "" => 2,
                "0" => 0,
                "1" => 1,
                "2" => 2,
                _ => {
                    return Err(QueryError::BadPattern {
                        value: value.to_owned(),
                    })
                }
            };
            if term.is_empty() {
                return Err(QueryError::BadPattern {
                    value: value.to_owned(),
                });
            }
            return Ok(Some(Pattern::Fuzzy {
                term: term.to_lowercase(),
                distance,
            }));
        }
        if value.contains(['*', '?']) {
            return Ok(Some(Pattern::Wildcard(value.to_lowercase())));
        }
        Ok(None)
    }

    /// The pattern as a regex over whole tokens (for engines that run every pattern as one):
    /// a wildcard's `*` is `.*`, `?` is `.`, other characters literal.
    pub fn wildcard_regex(wildcard: &str) -> String {
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
}

/// A parsed query: the conjunction of `clauses`; no clause is `*`, every event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub clauses: Vec<Clause>,
}

/// The request kinds of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Command {
    Count,
    Tail,
    /// TAIL with the events: `TAILEV`.
    TailEvents,
    Head,
    Histogram,
    Terms,
    Percentiles,
    Stats,
}

impl Command {
    pub const ALL: [Command; 8] = [
        Command::Count,
        Command::Tail,
        Command::TailEvents,
        Command::Head,
        Command::Histogram,
        Command::Terms,
        Command::Percentiles,
        Command::Stats,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Command::Count => "COUNT",
            Command::Tail => "TAIL",
            Command::TailEvents => "TAILEV",
            Command::Head => "HEAD",
            Command::Histogram => "HISTOGRAM",
            Command::Terms => "TERMS",
            Command::Percentiles => "PERCENTILES",
            Command::Stats => "STATS",
        }
    }

    pub fn of(name: &str) -> Option<Command> {
        Command::ALL
            .into_iter()
            .find(|command| command.name() == name)
    }

    /// The command of a request line, `None` when it names none.
    pub fn of_request(line: &str) -> Option<Command> {
        Command::of(line.split('\t').next().unwrap_or(""))
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One request of the protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Count(Filter),
    /// The `k` newest matches.
    Tail {
        k: usize,
        filter: Filter,
    },
    /// The `k` newest matches with their events, each fetched and serialized.
    TailEvents {
        k: usize,
        filter: Filter,
    },
    /// The `k` oldest matches.
    Head {
        k: usize,
        filter: Filter,
    },
    /// Counts per `seconds`-wide bucket of `_time`.
    Histogram {
        seconds: u64,
        filter: Filter,
    },
    /// The `k` most frequent values of a keyword field.
    Terms {
        field: String,
        k: usize,
        filter: Filter,
    },
    /// p50, p95 and p99 of an integer field.
    Percentiles {
        field: String,
        filter: Filter,
    },
    /// `count min max sum` of an integer field.
    Stats {
        field: String,
        filter: Filter,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// The command is not one of the protocol's: the answer is `UNSUPPORTED`.
    Unsupported { command: String },
    /// The line has the wrong number of tab-separated parts for its command.
    Arity { command: Command, expected: usize },
    /// A count (`K`, `SECONDS`) that is not a positive integer.
    BadNumber { what: &'static str, text: String },
    /// A field that does not exist or has the wrong kind for where it is used.
    BadField {
        field: String,
        expected: &'static str,
    },
    /// The query does not follow the grammar.
    Query { query: String, reason: QueryError },
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueryError {
    EmptyClause,
    /// `*` is a whole query, not a clause.
    StarInConjunction,
    Whitespace {
        clause: String,
    },
    UnknownField {
        field: String,
    },
    EmptyValue {
        field: String,
    },
    NotAnInteger {
        field: String,
        text: String,
    },
    BadRange {
        clause: String,
    },
    RangeOnNonNumeric {
        field: String,
    },
    /// A malformed pattern: a fuzzy distance above 2, or no word before the `~`.
    BadPattern {
        value: String,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::EmptyClause => write!(f, "empty clause"),
            QueryError::StarInConjunction => write!(f, "`*` joined to other clauses"),
            QueryError::Whitespace { clause } => write!(f, "whitespace inside clause {clause:?}"),
            QueryError::UnknownField { field } => write!(f, "unknown field {field:?}"),
            QueryError::EmptyValue { field } => write!(f, "no value for field {field:?}"),
            QueryError::NotAnInteger { field, text } => {
                write!(f, "{field} takes integers, not {text:?}")
            }
            QueryError::BadRange { clause } => write!(f, "malformed range {clause:?}"),
            QueryError::RangeOnNonNumeric { field } => {
                write!(f, "range on {field}, which is not an integer field")
            }
            QueryError::BadPattern { value } => {
                write!(f, "bad pattern {value:?}")
            }
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Unsupported { command } => write!(f, "unsupported command {command:?}"),
            RequestError::Arity { command, expected } => {
                write!(f, "{command} takes {expected} tab-separated parts")
            }
            RequestError::BadNumber { what, text } => {
                write!(f, "{what} must be a positive integer, not {text:?}")
            }
            RequestError::BadField { field, expected } => {
                write!(f, "{field:?} is not {expected}")
            }
            RequestError::Query { query, reason } => write!(f, "query {query:?}: {reason}"),
        }
    }
}

impl std::error::Error for RequestError {}

impl Request {
    /// Parses one request line (without its line break).
    pub fn parse(line: &str) -> Result<Request, RequestError> {
        let parts: Vec<&str> = line.split('\t').collect();
        let Some(command) = Command::of(parts[0]) else {
            return Err(RequestError::Unsupported {
                command: parts[0].to_owned(),
            });
        };
        let expected = match command {
            Command::Count => 2,
            Command::Tail | Command::TailEvents | Command::Head | Command::Histogram => 3,
            Command::Percentiles | Command::Stats => 3,
            Command::Terms => 4,
        };
        if parts.len() != expected {
            return Err(RequestError::Arity { command, expected });
        }
        let filter = parse_filter(parts[expected - 1])?;
        Ok(match command {
            Command::Count => Request::Count(filter),
            Command::Tail => Request::Tail {
                k: positive(parts[1], "K")?,
                filter,
            },
            Command::TailEvents => Request::TailEvents {
                k: positive(parts[1], "K")?,
                filter,
            },
            Command::Head => Request::Head {
                k: positive(parts[1], "K")?,
                filter,
            },
            Command::Histogram => Request::Histogram {
                seconds: positive(parts[1], "SECONDS")? as u64,
                filter,
            },
            Command::Terms => Request::Terms {
                field: field_of(parts[1], FieldKind::Keyword, "a keyword field")?,
                k: positive(parts[2], "K")?,
                filter,
            },
            Command::Percentiles => Request::Percentiles {
                field: field_of(parts[1], FieldKind::Integer, "an integer field")?,
                filter,
            },
            Command::Stats => Request::Stats {
                field: field_of(parts[1], FieldKind::Integer, "an integer field")?,
                filter,
            },
        })
    }

    pub fn command(&self) -> Command {
        match self {
            Request::Count(_) => Command::Count,
            Request::Tail { .. } => Command::Tail,
            Request::TailEvents { .. } => Command::TailEvents,
            Request::Head { .. } => Command::Head,
            Request::Histogram { .. } => Command::Histogram,
            Request::Terms { .. } => Command::Terms,
            Request::Percentiles { .. } => Command::Percentiles,
            Request::Stats { .. } => Command::Stats,
        }
    }

    pub fn filter(&self) -> &Filter {
        match self {
            Request::Count(filter)
            | Request::Tail { filter, .. }
            | Request::TailEvents { filter, .. }
            | Request::Head { filter, .. }
            | Request::Histogram { filter, .. }
            | Request::Terms { filter, .. }
            | Request::Percentiles { filter, .. }
            | Request::Stats { filter, .. } => filter,
        }
    }
}

/// The largest `K` or `SECONDS` accepted: far above any sensible request, and small enough that
/// `SECONDS * 1000` and a top-k buffer of `K` cannot overflow or exhaust memory.
const MAX_NUMBER: usize = 1 << 30;

fn positive(text: &str, what: &'static str) -> Result<usize, RequestError> {
    let bad = || RequestError::BadNumber {
        what,
        text: text.to_owned(),
    };
    // Only plain decimal digits: `usize::from_str` would also take a leading `+`.
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_NUMBER).contains(&n) => Ok(n),
        _ => Err(bad()),
    }
}

fn field_of(name: &str, kind: FieldKind, expected: &'static str) -> Result<String, RequestError> {
    if schema::field_kind(name) == Some(kind) {
        Ok(name.to_owned())
    } else {
        Err(RequestError::BadField {
            field: name.to_owned(),
            expected,
        })
    }
}

/// Parses a query of the small language.
pub fn parse_filter(query: &str) -> Result<Filter, RequestError> {
    let error = |reason| RequestError::Query {
        query: query.to_owned(),
        reason,
    };
    if query == "*" {
        return Ok(Filter::default());
    }
    let clauses = query
        .split(" AND ")
        .map(parse_clause)
        .collect::<Result<Vec<_>, _>>()
        .map_err(error)?;
    Ok(Filter { clauses })
}

fn parse_clause(clause: &str) -> Result<Clause, QueryError> {
    if clause.is_empty() {
        return Err(QueryError::EmptyClause);
    }
    let Some((field, value)) = clause.split_once(':') else {
        if clause == "*" {
            return Err(QueryError::StarInConjunction);
        }
        if clause.contains(char::is_whitespace) {
            return Err(QueryError::Whitespace {
                clause: clause.to_owned(),
            });
        }
        let field = schema::DEFAULT_TEXT_FIELD.to_owned();
        return Ok(match Pattern::of(clause)? {
            Some(pattern) => Clause::Pattern { field, pattern },
            None => Clause::Word {
                field,
                word: clause.to_owned(),
            },
        });
    };
    let kind = schema::field_kind(field).ok_or_else(|| QueryError::UnknownField {
        field: field.to_owned(),
    })?;
    let field = field.to_owned();
    if let Some(inner) = value.strip_prefix('[') {
        let bad_range = || QueryError::BadRange {
            clause: clause.to_owned(),
        };
        if !matches!(kind, FieldKind::Integer | FieldKind::Time) {
            return Err(QueryError::RangeOnNonNumeric { field });
        }
        let (lo, hi) = inner
            .strip_suffix(']')
            .and_then(|inner| inner.split_once(" TO "))
            .ok_or_else(bad_range)?;
        let lo = integer(&field, lo)?;
        let hi = integer(&field, hi)?;
        return Ok(Clause::Range { field, lo, hi });
    }
    if value.is_empty() {
        return Err(QueryError::EmptyValue { field });
    }
    if value.contains(char::is_whitespace) {
        return Err(QueryError::Whitespace {
            clause: clause.to_owned(),
        });
    }
    Ok(match kind {
        FieldKind::Keyword => Clause::Keyword {
            field,
            value: value.to_lowercase(),
        },
        FieldKind::Text => match Pattern::of(value)? {
            Some(pattern) => Clause::Pattern { field, pattern },
            None => Clause::Word {
                field,
                word: value.to_owned(),
            },
        },
        FieldKind::Integer | FieldKind::Time => Clause::Equals {
            value: integer(&field, value)?,
            field,
        },
    })
}

fn integer(field: &str, text: &str) -> Result<i64, QueryError> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    // Plain decimal only, as the Java reading takes it (no `+`, no spaces).
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QueryError::NotAnInteger {
            field: field.to_owned(),
            text: text.to_owned(),
        });
    }
    text.parse().map_err(|_| QueryError::NotAnInteger {
        field: field.to_owned(),
        text: text.to_owned(),
    })
}

/// An engine's side of the pipe: answers every request line of `input` with `answer` on
/// `output`, each answer followed by its time (`ANSWER<TAB>NANOS`), flushing after each. A
/// stray non-UTF-8 byte becomes U+FFFD: the request is answered (ERROR, most likely), not fatal.
pub fn serve_lines(
    mut input: impl std::io::BufRead,
    mut output: impl std::io::Write,
    mut answer: impl FnMut(&str) -> String,
) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        if input.read_until(b'\n', &mut bytes)? == 0 {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let line = String::from_utf8_lossy(&bytes);
        let answer = answer(line.trim_end_matches(['\n', '\r']));
        let nanos = started.elapsed().as_nanos();
        writeln!(output, "{answer}\t{nanos}")?;
        output.flush()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(field: &str, word: &str) -> Clause {
        Clause::Word {
            field: field.into(),
            word: word.into(),
        }
    }

    fn keyword(field: &str, value: &str) -> Clause {
        Clause::Keyword {
            field: field.into(),
            value: value.into(),
        }
    }

    fn pattern(field: &str, pattern: Pattern) -> Clause {
        Clause::Pattern {
            field: field.into(),
            pattern,
        }
    }

    #[test]
    fn wildcards_become_regexes() {
        assert_eq!(Pattern::wildcard_regex("w?ld*c.rd"), "w.ld.*c\\.rd");
        assert_eq!(Pattern::wildcard_regex("*imeou*"), ".*imeou.*");
    }

    fn range(field: &str, lo: i64, hi: i64) -> Clause {
        Clause::Range {
            field: field.into(),
            lo,
            hi,
        }
    }

    #[test]
    fn parses_queries() {
        let cases: Vec<(&str, Option<Vec<Clause>>)> = vec![
            ("*", Some(vec![])),
            ("error", Some(vec![word("message", "error")])),
            ("Error", Some(vec![word("message", "Error")])),
            ("service:NGINX", Some(vec![keyword("service", "nginx")])),
            ("path:login", Some(vec![word("path", "login")])),
            ("message:refused", Some(vec![word("message", "refused")])),
            (
                "status:503",
                Some(vec![Clause::Equals {
                    field: "status".into(),
                    value: 503,
                }]),
            ),
            (
                "service:nginx AND status:503",
                Some(vec![
                    keyword("service", "nginx"),
                    Clause::Equals {
                        field: "status".into(),
                        value: 503,
                    },
                ]),
            ),
            (
                "service:nginx AND latency_ms:[1000 TO 30000]",
                Some(vec![
                    keyword("service", "nginx"),
                    range("latency_ms", 1000, 30000),
                ]),
            ),
            (
                "_time:[1793520000000 TO 1793523600000] AND error",
                Some(vec![
                    range("_time", 1793520000000, 1793523600000),
                    word("message", "error"),
                ]),
            ),
            (
                "latency_ms:[-5 TO 5]",
                Some(vec![range("latency_ms", -5, 5)]),
            ),
            ("", None),
            ("error AND ", None),
            (" AND error", None),
            ("two words", None),
            ("nope:1", None),
            ("service:", None),
            ("status:abc", None),
            ("status:+5", None),
            ("service:[a TO b]", None),
            ("latency_ms:[1 TO 2", None),
            ("latency_ms:[1 2]", None),
            ("latency_ms:[1 TO x]", None),
            ("* AND error", None),
            (
                "Tim* AND path:*ogin",
                Some(vec![
                    pattern("message", Pattern::Wildcard("tim*".into())),
                    pattern("path", Pattern::Wildcard("*ogin".into())),
                ]),
            ),
            (
                "message:t?me",
                Some(vec![pattern("message", Pattern::Wildcard("t?me".into()))]),
            ),
            (
                "/tim(e|ed)out/",
                Some(vec![pattern(
                    "message",
                    Pattern::Regex("tim(e|ed)out".into()),
                )]),
            ),
            (
                "Timout~1 AND exceptoin~",
                Some(vec![
                    pattern(
                        "message",
                        Pattern::Fuzzy {
                            term: "timout".into(),
                            distance: 1,
                        },
                    ),
                    pattern(
                        "message",
                        Pattern::Fuzzy {
                            term: "exceptoin".into(),
                            distance: 2,
                        },
                    ),
                ]),
            ),
            ("timout~3", None),
            ("path:/api/login", Some(vec![word("path", "/api/login")])),
            ("~1", None),
            // Keyword values are taken as they are, patterns or not.
            ("service:ng*", Some(vec![keyword("service", "ng*")])),
        ];
        for (query, expected) in cases {
            let got = parse_filter(query).ok().map(|filter| filter.clauses);
            assert_eq!(got, expected, "{query:?}");
        }
    }

    #[test]
    fn parses_requests() {
        let all = Filter::default();
        let error = Filter {
            clauses: vec![word("message", "error")],
        };
        let cases: Vec<(&str, Result<Request, &str>)> = vec![
            ("COUNT\t*", Ok(Request::Count(all.clone()))),
            (
                "TAIL\t100\terror",
                Ok(Request::Tail {
                    k: 100,
                    filter: error.clone(),
                }),
            ),
            (
                "TAILEV\t1000\terror",
                Ok(Request::TailEvents {
                    k: 1000,
                    filter: error.clone(),
                }),
            ),
            (
                "HEAD\t1\t*",
                Ok(Request::Head {
                    k: 1,
                    filter: all.clone(),
                }),
            ),
            (
                "HISTOGRAM\t3600\terror",
                Ok(Request::Histogram {
                    seconds: 3600,
                    filter: error.clone(),
                }),
            ),
            (
                "TERMS\tclient_ip\t10\t*",
                Ok(Request::Terms {
                    field: "client_ip".into(),
                    k: 10,
                    filter: all.clone(),
                }),
            ),
            (
                "PERCENTILES\tlatency_ms\t*",
                Ok(Request::Percentiles {
                    field: "latency_ms".into(),
                    filter: all.clone(),
                }),
            ),
            (
                "STATS\tbytes\terror",
                Ok(Request::Stats {
                    field: "bytes".into(),
                    filter: error.clone(),
                }),
            ),
            ("TOP_10\terror", Err("unsupported")),
            ("count\t*", Err("unsupported")),
            ("no tab", Err("unsupported")),
            ("COUNT", Err("error")),
            ("COUNT\t*\t*", Err("error")),
            ("TAIL\t0\t*", Err("error")),
            ("TAILEV\t0\t*", Err("error")),
            ("TAILEV\t10", Err("error")),
            ("tailev\t10\t*", Err("unsupported")),
            ("TAIL\t+5\t*", Err("error")),
            ("TAIL\t99999999999999999999\t*", Err("error")),
            ("HISTOGRAM\t0\t*", Err("error")),
            ("TERMS\tmessage\t10\t*", Err("error")),
            ("TERMS\tclient_ip\t*", Err("error")),
            ("PERCENTILES\tservice\t*", Err("error")),
            ("STATS\t_time\t*", Err("error")),
            ("COUNT\tbad:field", Err("error")),
        ];
        for (line, expected) in cases {
            let got = Request::parse(line).map_err(|error| match error {
                RequestError::Unsupported { .. } => "unsupported",
                _ => "error",
            });
            assert_eq!(got, expected, "{line:?}");
        }
    }

    #[test]
    fn names_commands() {
        for command in Command::ALL {
            assert_eq!(Command::of(command.name()), Some(command));
        }
        assert_eq!(Command::of_request("TERMS\tx\t1\t*"), Some(Command::Terms));
        assert_eq!(Command::of_request("TOP_10\tx"), None);
    }
}
