//! The query language: Lucene-like, never panics, and every error names its position.
//!
//! ```text
//! query    := or_expr
//! or_expr  := and_expr ( ("OR" | "||")? and_expr )*      juxtaposition means OR (SHOULD)
//! and_expr := unary ( ("AND" | "&&") unary )*              AND makes both sides MUST
//! unary    := ("+" | "-" | "!" | "NOT") unary | primary    + MUST, - / ! / NOT MUST_NOT
//! primary  := "(" or_expr ")" | "*"
//!           | FIELD ":" ( "(" or_expr ")" | value )        the group's bare values take FIELD
//!           | FIELD ":=" PHRASE_OR_WORD                    exact whole-value match
//!           | FIELD ":" ("[" | "{") BOUND "TO" BOUND ("]" | "}")   range, [ ] inclusive, { } not
//!           | FIELD ":" (">" | ">=" | "<" | "<=") BOUND
//!           | "_exists_:" FIELD                             the field has a value
//!           | value
//! BOUND    := a number, or `*` for none; for `_time`, a time (RFC 3339, a date, epoch, now-15m)
//! value    := PHRASE | WORD
//! PHRASE   := '"' chars '"'       an unclosed quote runs to the end of the input
//! WORD     := chars up to whitespace or ( ) " ; `\` escapes the next char
//! ```
//! The grammar is a plain recursive-descent parser over a token list, so later steps can add
//! wildcards, fuzzy and regex values in `primary` alone.
//! Tolerance, so that real users' queries (the TREC set has mismatched quotes) never fail: an
//! unclosed `(` closes at the end; an operator with nothing after it is an error naming it.

use crate::range::{Number, NumericRange};
use crate::time::{now_nanos, parse_time};
use std::fmt;
use std::ops::Bound;

/// The field that holds each event's time; its range bounds are times, not numbers.
pub const TIME_FIELD: &str = quarry_format::TIME_FIELD;

/// A parse error, with the byte offset in the query where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at position {position}")]
pub struct ParseError {
    pub position: usize,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Occur {
    Must,
    Should,
    MustNot,
}

/// The parsed query, before analysis: values are raw text.
#[derive(Debug, Clone, PartialEq)]
pub enum Ast {
    /// A bare word (every text field) or `field:word`.
    Word {
        field: Option<String>,
        text: String,
    },
    /// `"a b"` or `field:"a b"`.
    Phrase {
        field: Option<String>,
        text: String,
    },
    /// `field:="whole value"`.
    Exact {
        field: String,
        value: String,
    },
    /// `field:[a TO b]`, `field:>a` and the like; for `_time` the bounds are nanoseconds.
    Range {
        field: String,
        range: NumericRange,
    },
    /// `_exists_:field`.
    Exists {
        field: String,
    },
    /// `*`: every event.
    All,
    Bool(Vec<(Occur, Ast)>),
}

impl fmt::Display for Ast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = |f: &mut fmt::Formatter<'_>, field: &Option<String>| match field {
            Some(name) => write!(f, "{name}:"),
            None => Ok(()),
        };
        match self {
            Ast::Word { field: name, text } => {
                field(f, name)?;
                write!(f, "{text}")
            }
            Ast::Phrase { field: name, text } => {
                field(f, name)?;
                write!(f, "\"{text}\"")
            }
            Ast::Exact { field, value } => write!(f, "{field}:=\"{value}\""),
            Ast::Range { field, range } => write!(f, "{field}:{range}"),
            Ast::Exists { field } => write!(f, "_exists_:{field}"),
            Ast::All => write!(f, "*"),
            Ast::Bool(clauses) => {
                write!(f, "(")?;
                for (i, (occur, clause)) in clauses.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    let prefix = match occur {
                        Occur::Must => "+",
                        Occur::Should => "",
                        Occur::MustNot => "-",
                    };
                    write!(f, "{prefix}{clause}")?;
                }
                write!(f, ")")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Phrase(String),
    Field(String),
    ExactField(String),
    Open,
    Close,
    Plus,
    Minus,
    Not,
    And,
    Or,
    Star,
    /// `[lo TO hi]` or `{lo TO hi}` (either bracket on either side) right after `field:`.
    Range {
        lower: String,
        lower_inclusive: bool,
        upper: String,
        upper_inclusive: bool,
    },
    /// `>v`, `>=v`, `<v`, `<=v` right after `field:`.
    Compare {
        op: &'static str,
        value: String,
    },
    /// A range that does not read `lo TO hi`.
    BadRange(String),
}

fn lex(input: &str) -> Vec<(usize, Token)> {
    let mut tokens = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' => {
                chars.next();
                tokens.push((start, Token::Open));
            }
            ')' => {
                chars.next();
                tokens.push((start, Token::Close));
            }
            '"' => {
                chars.next();
                let mut text = String::new();
                while let Some((_, c)) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                text.push(escaped);
                            }
                        }
                        c => text.push(c),
                    }
                }
                tokens.push((start, Token::Phrase(text)));
            }
            '[' | '{' if matches!(tokens.last(), Some((_, Token::Field(_)))) => {
                chars.next();
                let mut body = String::new();
                let mut close = None;
                for (_, c) in chars.by_ref() {
                    if c == ']' || c == '}' {
                        close = Some(c);
                        break;
                    }
                    body.push(c);
                }
                let parts: Vec<&str> = body.split_whitespace().collect();
                let token = match (close, parts.as_slice()) {
                    (None, _) => Token::BadRange("unclosed range".into()),
                    (Some(close), [lower, to, upper]) if to.eq_ignore_ascii_case("TO") => {
                        Token::Range {
                            lower: (*lower).to_owned(),
                            lower_inclusive: c == '[',
                            upper: (*upper).to_owned(),
                            upper_inclusive: close == ']',
                        }
                    }
                    _ => Token::BadRange("expected a range like [a TO b]".into()),
                };
                tokens.push((start, token));
            }
            '>' | '<' if matches!(tokens.last(), Some((_, Token::Field(_)))) => {
                chars.next();
                let or_equal = chars.next_if(|&(_, n)| n == '=').is_some();
                let op = match (c, or_equal) {
                    ('>', false) => ">",
                    ('>', true) => ">=",
                    ('<', false) => "<",
                    _ => "<=",
                };
                let mut value = String::new();
                while let Some((_, c)) =
                    chars.next_if(|&(_, n)| !n.is_whitespace() && !matches!(n, '(' | ')'))
                {
                    value.push(c);
                }
                tokens.push((start, Token::Compare { op, value }));
            }
            '+' | '-' | '!' => {
                chars.next();
                // A sign binds only when a clause follows directly (`-foo`, `+(a b)`).
                let binds = chars
                    .peek()
                    .is_some_and(|&(_, n)| !n.is_whitespace() && n != ')');
                if binds {
                    tokens.push((
                        start,
                        if c == '+' {
                            Token::Plus
                        } else if c == '-' {
                            Token::Minus
                        } else {
                            Token::Not
                        },
                    ));
                }
            }
            _ => {
                let mut text = String::new();
                let mut field = None;
                // The value right after `field:` may itself hold colons (`url:http://x`).
                let may_be_field = !matches!(tokens.last(), Some((_, Token::Field(_))));
                while let Some(&(_, c)) = chars.peek() {
                    if c.is_whitespace() || matches!(c, '(' | ')' | '"') {
                        break;
                    }
                    chars.next();
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                text.push(escaped);
                            }
                        }
                        ':' if may_be_field && !text.is_empty() && field.is_none() => {
                            let exact = chars.peek().is_some_and(|&(_, n)| n == '=');
                            if exact {
                                chars.next();
                            }
                            field = Some((std::mem::take(&mut text), exact));
                            break;
                        }
                        c => text.push(c),
                    }
                }
                let token = match (field, text.as_str()) {
                    (Some((name, true)), _) => Token::ExactField(name),
                    (Some((name, false)), _) => Token::Field(name),
                    (None, "AND") | (None, "&&") => Token::And,
                    (None, "OR") | (None, "||") => Token::Or,
                    (None, "NOT") => Token::Not,
                    (None, "*") => Token::Star,
                    (None, _) => Token::Word(text),
                };
                tokens.push((start, token));
            }
        }
    }
    tokens
}

struct Parser<'a> {
    tokens: Vec<(usize, Token)>,
    next: usize,
    input: &'a str,
    depth: usize,
    /// What `now` means in relative times, in nanoseconds since the epoch.
    now: i64,
}

/// Deep nesting is refused rather than risking the stack.
const MAX_DEPTH: usize = 64;

pub fn parse(input: &str) -> Result<Ast, ParseError> {
    parse_at(input, now_nanos())
}

/// Parses with `now` (nanoseconds since the epoch) as the time relative times count from.
pub fn parse_at(input: &str, now: i64) -> Result<Ast, ParseError> {
    let mut parser = Parser {
        tokens: lex(input),
        next: 0,
        input,
        depth: 0,
        now,
    };
    if parser.tokens.is_empty() {
        return Err(ParseError {
            position: 0,
            message: "empty query".into(),
        });
    }
    let ast = parser.or_expr(None)?;
    if let Some((position, _)) = parser.tokens.get(parser.next) {
        return Err(ParseError {
            position: *position,
            message: "unbalanced ')'".into(),
        });
    }
    Ok(ast)
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|(_, t)| t)
    }

    fn position(&self) -> usize {
        self.tokens
            .get(self.next)
            .map_or(self.input.len(), |(p, _)| *p)
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            position: self.position(),
            message: message.into(),
        }
    }

    fn or_expr(&mut self, field: Option<&str>) -> Result<Ast, ParseError> {
        let mut clauses = Vec::new();
        loop {
            match self.peek() {
                None | Some(Token::Close) => break,
                Some(Token::Or) => {
                    if clauses.is_empty() {
                        return Err(self.error("OR needs a clause before it"));
                    }
                    self.next += 1;
                    if matches!(self.peek(), None | Some(Token::Close)) {
                        return Err(self.error("OR needs a clause after it"));
                    }
                }
                Some(Token::And) => return Err(self.error("AND needs a clause before it")),
                _ => {}
            }
            clauses.extend(self.and_expr(field)?);
        }
        if clauses.is_empty() {
            return Err(self.error("expected a clause"));
        }
        Ok(simplify(clauses))
    }

    /// One or more clauses joined by AND; returns them with their occurs (a lone clause keeps
    /// its own: SHOULD unless signed).
    fn and_expr(&mut self, field: Option<&str>) -> Result<Vec<(Occur, Ast)>, ParseError> {
        let mut clauses = vec![self.unary(field)?];
        let mut joined = false;
        while self.peek() == Some(&Token::And) {
            self.next += 1;
            if matches!(
                self.peek(),
                None | Some(Token::Close) | Some(Token::Or) | Some(Token::And)
            ) {
                return Err(self.error("AND needs a clause after it"));
            }
            clauses.push(self.unary(field)?);
            joined = true;
        }
        if joined {
            for (occur, _) in &mut clauses {
                if *occur == Occur::Should {
                    *occur = Occur::Must;
                }
            }
            // `a AND b c` keeps `a AND b` as one clause of the surrounding OR.
            return Ok(vec![(Occur::Should, simplify(clauses))]);
        }
        Ok(clauses)
    }

    fn unary(&mut self, field: Option<&str>) -> Result<(Occur, Ast), ParseError> {
        let occur = match self.peek() {
            Some(Token::Plus) => Occur::Must,
            Some(Token::Minus) | Some(Token::Not) => Occur::MustNot,
            _ => return Ok((Occur::Should, self.primary(field)?)),
        };
        self.next += 1;
        if matches!(
            self.peek(),
            None | Some(Token::Close) | Some(Token::Or) | Some(Token::And)
        ) {
            return Err(self.error("expected a clause after the operator"));
        }
        let (inner_occur, ast) = self.unary(field)?;
        // `--a` is `a`; `+-a` stays a negation.
        let occur = match (occur, inner_occur) {
            (Occur::MustNot, Occur::MustNot) => Occur::Must,
            (_, Occur::MustNot) => Occur::MustNot,
            (outer, _) => outer,
        };
        Ok((occur, ast))
    }

    fn primary(&mut self, field: Option<&str>) -> Result<Ast, ParseError> {
        let Some((position, token)) = self.tokens.get(self.next).cloned() else {
            return Err(self.error("expected a clause"));
        };
        self.next += 1;
        match token {
            Token::Open => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(ParseError {
                        position,
                        message: "query nested too deeply".into(),
                    });
                }
                let inner = self.or_expr(field)?;
                self.depth -= 1;
                // An unclosed group closes at the end of the input.
                if self.peek() == Some(&Token::Close) {
                    self.next += 1;
                }
                Ok(inner)
            }
            Token::Star => Ok(Ast::All),
            Token::Word(text) => Ok(Ast::Word {
                field: field.map(str::to_owned),
                text,
            }),
            Token::Phrase(text) => Ok(Ast::Phrase {
                field: field.map(str::to_owned),
                text,
            }),
            Token::Field(name) if name == "_exists_" => match self.peek().cloned() {
                Some(Token::Word(field)) | Some(Token::Phrase(field)) => {
                    self.next += 1;
                    Ok(Ast::Exists { field })
                }
                _ => Err(self.error("expected a field name after '_exists_:'")),
            },
            Token::Field(name) => match self.peek().cloned() {
                Some(Token::Range {
                    lower,
                    lower_inclusive,
                    upper,
                    upper_inclusive,
                }) => {
                    let lower = self.bound(&name, &lower, lower_inclusive)?;
                    let upper = self.bound(&name, &upper, upper_inclusive)?;
                    self.next += 1;
                    Ok(Ast::Range {
                        field: name,
                        range: NumericRange { lower, upper },
                    })
                }
                Some(Token::Compare { op, value }) => {
                    let bound = self.bound(&name, &value, op.ends_with('='))?;
                    self.next += 1;
                    let range = if op.starts_with('>') {
                        NumericRange {
                            lower: bound,
                            upper: Bound::Unbounded,
                        }
                    } else {
                        NumericRange {
                            lower: Bound::Unbounded,
                            upper: bound,
                        }
                    };
                    Ok(Ast::Range { field: name, range })
                }
                Some(Token::BadRange(message)) => Err(self.error(message)),
                Some(Token::Open) => self.primary(Some(&name)),
                Some(Token::Word(_)) | Some(Token::Phrase(_)) | Some(Token::Star) => {
                    self.primary(Some(&name))
                }
                // `field:AND` and the like: the keyword is the value.
                Some(Token::And) | Some(Token::Or) | Some(Token::Not) => {
                    let text = self.input[self.position()..]
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_owned();
                    self.next += 1;
                    Ok(Ast::Word {
                        field: Some(name),
                        text,
                    })
                }
                _ => Err(self.error(format!("expected a value after '{name}:'"))),
            },
            Token::ExactField(name) => match self.tokens.get(self.next).cloned() {
                Some((_, Token::Word(value))) | Some((_, Token::Phrase(value))) => {
                    self.next += 1;
                    Ok(Ast::Exact { field: name, value })
                }
                _ => Err(self.error(format!("expected a value after '{name}:='"))),
            },
            Token::Close => Err(ParseError {
                position,
                message: "unbalanced ')'".into(),
            }),
            Token::And | Token::Or => Err(ParseError {
                position,
                message: "operator without a clause".into(),
            }),
            Token::Plus | Token::Minus | Token::Not => Err(ParseError {
                position,
                message: "expected a clause after the operator".into(),
            }),
            Token::Range { .. } | Token::Compare { .. } | Token::BadRange(_) => Err(ParseError {
                position,
                message: "a range needs a field before it (field:[a TO b])".into(),
            }),
        }
    }

    /// One bound of a range on `field`, the current token: a number, `*`, or a time for
    /// `_time`. Errors point at the range token.
    fn bound(&self, field: &str, text: &str, inclusive: bool) -> Result<Bound<Number>, ParseError> {
        if text == "*" {
            return Ok(Bound::Unbounded);
        }
        let number = if field == TIME_FIELD {
            parse_time(text, self.now)
                .map(Number::Int)
                .map_err(|message| self.error(message))?
        } else {
            Number::parse(text).ok_or_else(|| {
                self.error(format!("expected a number in the range, got {text:?}"))
            })?
        };
        Ok(if inclusive {
            Bound::Included(number)
        } else {
            Bound::Excluded(number)
        })
    }
}

/// A single SHOULD clause needs no Bool around it.
fn simplify(mut clauses: Vec<(Occur, Ast)>) -> Ast {
    if clauses.len() == 1 && clauses[0].0 == Occur::Should {
        return clauses.pop().map(|(_, ast)| ast).unwrap_or(Ast::All);
    }
    Ast::Bool(clauses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(input: &str, expected: &str) {
        // `now` is 1,000,000 s after the epoch, so relative times are easy to read.
        match parse_at(input, 1_000_000_000_000_000) {
            Ok(ast) => assert_eq!(ast.to_string(), expected, "{input:?}"),
            Err(e) => assert_eq!(format!("error: {e}"), expected, "{input:?}"),
        }
    }

    #[test]
    fn table() {
        check("error", "error");
        check("a b", "(a b)");
        check("+a +b", "(+a +b)");
        check("a AND b", "(+a +b)");
        check("a AND b c", "((+a +b) c)");
        check("a OR b", "(a b)");
        check("a -b", "(a -b)");
        check("NOT a", "(-a)");
        check("-(a b)", "(-(a b))");
        check("service:api", "service:api");
        check("level:(warn OR error)", "(level:warn level:error)");
        check("\"connection reset\"", "\"connection reset\"");
        check(
            "msg:\"connection reset\" -status:200",
            "(msg:\"connection reset\" -status:200)",
        );
        check("host:=\"web 01\"", "host:=\"web 01\"");
        check("\"ground beef recipes'", "\"ground beef recipes'\"");
        check("(a b", "(a b)");
        check("\"tent rental\" +iowa", "(\"tent rental\" +iowa)");
        check("a - b", "(a b)");
        check("url:http://x", "url:http://x");
        check("a\\:b", "a:b");
        check("*", "*");
        check("", "error: empty query at position 0");
        check("a )", "error: unbalanced ')' at position 2");
        check("a AND", "error: AND needs a clause after it at position 5");
        check("OR a", "error: OR needs a clause before it at position 0");
        check("f:", "error: expected a value after 'f:' at position 2");
        check("a:=", "error: expected a value after 'a:=' at position 3");
        check("latency:[100 TO 500]", "latency:[100 TO 500]");
        check("latency:{100 TO 500]", "latency:{100 TO 500]");
        check("latency:[1.5 to *}", "latency:[1.5 TO *]");
        check("latency:>100", "latency:{100 TO *]");
        check("latency:>=100", "latency:[100 TO *]");
        check("latency:<=-2", "latency:[* TO -2]");
        check("x AND latency:<2.5", "(+x +latency:[* TO 2.5})");
        check(
            "_time:[2026-11-01 TO 2026-11-02}",
            "_time:[1793491200000000000 TO 1793577600000000000}",
        );
        check("_time:>=now-1m", "_time:[999940000000000 TO *]");
        check("_exists_:status", "_exists_:status");
        check("-_exists_:status", "(-_exists_:status)");
        check(
            "a:[1 TO]",
            "error: expected a range like [a TO b] at position 2",
        );
        check("a:[1 TO 2", "error: unclosed range at position 2");
        check(
            "a:[x TO 2]",
            "error: expected a number in the range, got \"x\" at position 2",
        );
        check(
            "a:>nan",
            "error: expected a number in the range, got \"nan\" at position 2",
        );
        check(
            "_time:>yesterday",
            "error: expected a time (RFC 3339, a date, epoch seconds or ms, now-15m), got \"yesterday\" at position 6",
        );
        check(
            "_exists_:",
            "error: expected a field name after '_exists_:' at position 9",
        );
        check("a [1 TO 2]", "(a [1 TO 2])");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn never_panics(input in "[a-c \"()+\\-!:=*\\\\\\[\\]{}<>]{0,30}|(AND|OR|NOT|TO| |a|\\(|\\)|\"|:|\\[|\\]|>)*") {
            if let Err(e) = parse(&input) {
                prop_assert!(e.position <= input.len());
            }
        }
    }
}
