//! The query language: Lucene-like, never panics, and every error names its position.
//!
//! ```text
//! query    := or_expr
//! or_expr  := and_expr ( ("OR" | "||")? and_expr )*      juxtaposition means OR (SHOULD)
//! and_expr := unary ( ("AND" | "&&") unary )*              AND makes both sides MUST
//! unary    := ("+" | "-" | "!" | "NOT") unary | primary    + MUST, - / ! / NOT MUST_NOT
//! primary  := "(" or_expr ")" | "*" | "*:*"
//!           | FIELD ":" ( "(" or_expr ")" | value )        the group's bare values take FIELD
//!           | FIELD ":=" PHRASE_OR_WORD                    exact whole-value match, literal
//!           | FIELD ":" ("[" | "{") BOUND "TO" BOUND ("]" | "}")   range, [ ] inclusive, { } not
//!           | FIELD ":" (">" | ">=" | "<" | "<=") BOUND
//!           | "_exists_:" FIELD | FIELD ":*"              the field has a value
//!           | value
//! BOUND    := a number, or `*` for none; for `_time`, a time (RFC 3339, a date, epoch, now-15m)
//! value    := PHRASE | PATTERN | WORD
//! PATTERN  := WORD with an unescaped `*` (any run) or `?` (one char)    prefix / wildcard
//!           | WORD "~" [0-2]?                                          fuzzy, `~` alone is 2
//!           | "/" regex "/"         a leading slash; `\/` is a slash inside (pattern.rs)
//! PHRASE   := '"' chars '"'       `\"` is a quote inside the phrase
//! WORD     := chars up to whitespace or ( ) " ; `\` escapes the next char
//! ```
//! One rule for what does not balance (issue 9): an unterminated `"`, an unclosed `(` and a
//! stray `)` are all errors, naming the position of that quote or parenthesis. Guessing where
//! the user meant a group or phrase to end gives an answer to a query nobody wrote.
//!
//! A lone `*` and `*:*` match everything and `field:*` every event that has the field; other
//! unescaped `*` and `?` make a word a wildcard pattern, a `~` a fuzzy term (pattern.rs).
//! Lucene's remaining operators are refused until Step 5 implements them, each naming the
//! position of the operator: `~` right after a phrase (slop), `^` (boost) and wildcards in
//! field names. Read as plain words they would be analyzed away and answer a different
//! query without a word of warning. Where a value is literal they mean nothing special: in
//! phrases, exact values (`host:=web-*`), range bounds and after a `\`.
//! The grammar is a plain recursive-descent parser over a token list, so later steps can add
//! wildcards, fuzzy and regex values in `primary` alone.

use crate::pattern::{Pattern, PatternKind};
use crate::range::{Number, NumericRange};
use crate::time::{now_nanos, parse_time_in, Rounding, Zone};
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

/// The field that holds each event's time; its range bounds are times, not numbers.
pub const TIME_FIELD: &str = quarry_format::TIME_FIELD;

/// A parse error: what is wrong, and the byte offset in the query where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {} position {position}", .kind.preposition())]
pub struct ParseError {
    pub position: usize,
    pub kind: ParseErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    #[error("empty query")]
    Empty,
    /// The position is the opening quote's.
    #[error("unterminated quote")]
    UnterminatedQuote,
    /// The position is the opening parenthesis's.
    #[error("unclosed parenthesis")]
    UnclosedParenthesis,
    #[error("unbalanced ')'")]
    UnbalancedClose,
    /// An operator that Step 5 will implement; the position is the operator's.
    #[error("{feature} are not supported yet")]
    NotSupportedYet { feature: Feature },
    #[error("{operator} needs a clause before it")]
    NoClauseBefore { operator: &'static str },
    #[error("{operator} needs a clause after it")]
    NoClauseAfter { operator: &'static str },
    #[error("expected a clause")]
    ExpectedClause,
    /// `+`, `-`, `!` or `NOT` with nothing to apply to.
    #[error("expected a clause after the operator")]
    ExpectedClauseAfterSign,
    #[error("operator without a clause")]
    OperatorWithoutClause,
    #[error("query nested too deeply")]
    NestedTooDeeply,
    #[error("expected a field name after '_exists_:'")]
    ExpectedExistsField,
    #[error("expected a value after '{field}:'")]
    ExpectedValue { field: String },
    #[error("expected a value after '{field}:='")]
    ExpectedExactValue { field: String },
    #[error("a range needs a field before it (field:[a TO b])")]
    RangeWithoutField,
    #[error("unclosed range")]
    UnclosedRange,
    #[error("expected a range like [a TO b]")]
    MalformedRange,
    #[error("expected a number in the range, got {text:?}")]
    BadNumber { text: String },
    /// `time::parse_time`'s own message, which already quotes the text (the CLI's `--start`
    /// and `--end` print the same one).
    #[error("{message}")]
    BadTime { message: String },
    /// A pattern that does not compile (a bad regular expression, a fuzzy distance above 2);
    /// the position is the pattern's.
    #[error("{reason}")]
    BadPattern { reason: String },
    /// The position is the opening slash's.
    #[error("unterminated regular expression")]
    UnterminatedRegex,
    /// The position is the `^`'s.
    #[error("expected a positive number after '^', got {text:?}")]
    BadBoost { text: String },
    #[error("'^' needs a clause before it")]
    BoostWithoutClause,
    /// The position is the `~`'s.
    #[error("expected a slop (a whole number of positions) after a phrase's '~', got {text:?}")]
    BadSlop { text: String },
}

impl ParseErrorKind {
    /// An unbalanced quote or parenthesis is found at the end of the input, but the error
    /// names where it opened, and says so.
    fn preposition(&self) -> &'static str {
        match self {
            ParseErrorKind::UnterminatedQuote | ParseErrorKind::UnclosedParenthesis => {
                "starting at"
            }
            _ => "at",
        }
    }
}

/// Lucene operators the parser refuses, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Feature {
    /// `f*:x`: a wildcard in a field name.
    Wildcard,
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Feature::Wildcard => "wildcards in field names (`f*:x`)",
        })
    }
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
        /// `"a b"~2`: how far the terms may move (Lucene's slop; 0 is an exact phrase).
        slop: u32,
    },
    /// `field:="whole value"`.
    Exact {
        field: String,
        value: String,
    },
    /// Elasticsearch's `term` with a string (the DSL's; no query string writes it): one token
    /// as the field indexed it, unanalyzed. A text field (and an unmapped string, which
    /// Elasticsearch maps as text) has it where the value is itself one of its tokens; any
    /// other field where its whole value is the value, as `Exact`.
    Token {
        field: String,
        value: String,
    },
    /// `field:[a TO b]`, `field:>a` and the like; for `_time` the bounds are nanoseconds.
    Range {
        field: String,
        range: NumericRange,
    },
    /// A range on a field other than `_time` with its bounds as written (`*` is no bound),
    /// for a date or ip field to read in its own type (query.rs); any other field plans
    /// `otherwise`, the numeric or term range the bounds read as without a type.
    TypedRange {
        field: String,
        lower: Bound<String>,
        upper: Bound<String>,
        /// The DSL's `format` (`a||b`), for a date field instead of its own.
        format: Option<String>,
        /// The DSL's or the query string's `time_zone`, for dates written without one.
        zone: Option<Zone>,
        /// What `now` means in date math.
        now: i64,
        otherwise: Box<Ast>,
    },
    /// `_exists_:field`.
    Exists {
        field: String,
    },
    /// `err*`, `w?ld*`, `/re/`, `eror~1` or `field:` with one: terms matched by a pattern.
    Pattern {
        field: Option<String>,
        pattern: Arc<Pattern>,
    },
    /// `clause^2`: the clause's scores times the boost.
    Boost {
        inner: Box<Ast>,
        boost: f32,
    },
    /// The matches of `inner`, each scored `score`: Elasticsearch's `constant_score` (its
    /// boost) and a bool's `filter` clauses (0, they only filter); only the DSL writes it.
    Constant {
        inner: Box<Ast>,
        score: f32,
    },
    /// Elasticsearch's `match` on one field: `words` (the text split into words, as the DSL
    /// read `operator` and the rest), unless the field is a keyword, whose values are whole:
    /// then the whole `text` is one value, as Elasticsearch's keyword analyzer reads it.
    Match {
        field: String,
        text: String,
        words: Box<Ast>,
    },
    /// `*`: every event.
    All,
    Bool(Vec<(Occur, Ast)>),
    /// At least `minimum` of `clauses` match (Elasticsearch's `minimum_should_match` of 2 or
    /// more); only the DSL writes it. Scored by the sum of the matching clauses.
    AtLeast {
        minimum: usize,
        clauses: Vec<Ast>,
    },
    /// Elasticsearch's `match_bool_prefix` (dsl.rs): only the DSL writes it.
    BoolPrefix(Box<crate::dsl::BoolPrefix>),
    /// Elasticsearch's `intervals` (dsl.rs): a rule over one text field's positions
    /// (intervals.rs); only the DSL writes it.
    Intervals {
        field: String,
        rule: Arc<crate::intervals::Rule<crate::intervals::MatchText>>,
    },
    /// Elasticsearch's `lenient`: a clause that cannot be asked of its field (a value that
    /// does not fit its type, `foo` on a number field; a field that is not searchable) matches
    /// nothing instead of being an error, as Elasticsearch's lenient parsers do (query.rs);
    /// only the DSL writes it.
    Lenient(Box<Ast>),
    /// Elasticsearch's `_name`: the clause as it is, and each hit says which named clauses
    /// it matches (`HitEvent::matched`); only the DSL writes it.
    Named {
        name: String,
        inner: Box<Ast>,
    },
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
            Ast::Phrase {
                field: name,
                text,
                slop,
            } => {
                field(f, name)?;
                write!(f, "\"{text}\"")?;
                match slop {
                    0 => Ok(()),
                    slop => write!(f, "~{slop}"),
                }
            }
            Ast::Boost { inner, boost } => write!(f, "{inner}^{boost}"),
            Ast::Pattern {
                field: name,
                pattern,
            } => {
                field(f, name)?;
                write!(f, "{pattern}")
            }
            Ast::Exact { field, value } => write!(f, "{field}:=\"{value}\""),
            Ast::Token { field, value } => write!(f, "term({field}, {value:?})"),
            Ast::Range { field, range } => write!(f, "{field}:{range}"),
            Ast::TypedRange { otherwise, .. } => write!(f, "{otherwise}"),
            Ast::Exists { field } => write!(f, "_exists_:{field}"),
            Ast::All => write!(f, "*"),
            Ast::BoolPrefix(query) => {
                field(f, &query.field)?;
                write!(f, "match_bool_prefix({:?})", query.text)
            }
            Ast::Intervals { field, rule } => write!(f, "{field}:intervals({rule})"),
            Ast::Lenient(inner)
            | Ast::Named { inner, .. }
            | Ast::Constant { inner, .. }
            | Ast::Match { words: inner, .. } => write!(f, "{inner}"),
            Ast::AtLeast { minimum, clauses } => {
                write!(f, "at_least({minimum}")?;
                for clause in clauses {
                    write!(f, ", {clause}")?;
                }
                write!(f, ")")
            }
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
    /// A word with an unescaped `*` or `?` or a `~`, or a `/regex/`: not yet compiled.
    Pattern(PatternKind),
    /// `^2` after a clause.
    Boost(f32),
    /// `"text"`, or `"text"~slop`.
    Phrase {
        text: String,
        slop: u32,
    },
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
    BadRange(ParseErrorKind),
}

/// Splits `input` into tokens; an unterminated quote or an operator that is not supported yet
/// is an error here, before any syntax error further left that the parser would find.
fn lex(input: &str) -> Result<Vec<(usize, Token)>, ParseError> {
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
                let mut closed = false;
                while let Some((_, c)) = chars.next() {
                    match c {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                text.push(escaped);
                            }
                        }
                        c => text.push(c),
                    }
                }
                if !closed {
                    return Err(ParseError {
                        position: start,
                        kind: ParseErrorKind::UnterminatedQuote,
                    });
                }
                let slop = phrase_slop(input, &mut chars)?;
                tokens.push((start, Token::Phrase { text, slop }));
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
                    (None, _) => Token::BadRange(ParseErrorKind::UnclosedRange),
                    (Some(close), [lower, to, upper]) if to.eq_ignore_ascii_case("TO") => {
                        Token::Range {
                            lower: (*lower).to_owned(),
                            lower_inclusive: c == '[',
                            upper: (*upper).to_owned(),
                            upper_inclusive: close == ']',
                        }
                    }
                    _ => Token::BadRange(ParseErrorKind::MalformedRange),
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
            // `^2` after a word, phrase or group: a boost.
            '^' if !matches!(tokens.last(), Some((_, Token::ExactField(_)))) => {
                // A boost is glued to its clause: `a ^2` boosts nothing.
                if start == 0 || input[..start].ends_with(char::is_whitespace) {
                    return Err(ParseError {
                        position: start,
                        kind: ParseErrorKind::BoostWithoutClause,
                    });
                }
                chars.next();
                let mut text = String::new();
                while let Some(&(_, c)) = chars.peek() {
                    if !(c.is_ascii_digit() || c == '.') {
                        break;
                    }
                    text.push(c);
                    chars.next();
                }
                match text.parse::<f32>() {
                    Ok(boost) if boost.is_finite() && boost > 0.0 => {
                        tokens.push((start, Token::Boost(boost)))
                    }
                    _ => {
                        return Err(ParseError {
                            position: start,
                            kind: ParseErrorKind::BadBoost { text },
                        })
                    }
                }
            }
            // Only a leading slash opens a regex: `url:http://x` and `and/or` are words, and an
            // exact value is literal (`path:=/var/log`).
            '/' if !matches!(tokens.last(), Some((_, Token::ExactField(_)))) => {
                chars.next();
                let mut regex = String::new();
                let mut closed = false;
                while let Some((_, c)) = chars.next() {
                    match c {
                        '/' => {
                            closed = true;
                            break;
                        }
                        // `\/` is a slash inside the regex; other escapes are the regex's.
                        '\\' if chars.peek().is_some_and(|&(_, n)| n == '/') => {
                            chars.next();
                            regex.push('/');
                        }
                        '\\' => {
                            regex.push('\\');
                            if let Some((_, escaped)) = chars.next() {
                                regex.push(escaped);
                            }
                        }
                        c => regex.push(c),
                    }
                }
                if !closed {
                    return Err(ParseError {
                        position: start,
                        kind: ParseErrorKind::UnterminatedRegex,
                    });
                }
                tokens.push((start, Token::Pattern(PatternKind::Regex(regex))));
            }
            _ => {
                let mut text = String::new();
                // Each char of `text` with whether it is an unescaped `*`, `?` or `~`.
                let mut special: Vec<bool> = Vec::new();
                let mut field = None;
                // An escaped word is text: `\*` is not match-all, `\AND` not the operator.
                let mut escaped_any = false;
                // The first operator of the word that is not supported yet, and where.
                let mut unsupported = None;
                // The value right after `field:` may itself hold colons (`url:http://x`).
                let may_be_field = !matches!(tokens.last(), Some((_, Token::Field(_))));
                // An exact value is literal (`host:=a^b`); elsewhere `^` ends the word, a boost.
                let literal_value = matches!(tokens.last(), Some((_, Token::ExactField(_))));
                while let Some(&(_, c)) = chars.peek() {
                    if c.is_whitespace() || matches!(c, '(' | ')' | '"') {
                        break;
                    }
                    if c == '^' && !literal_value && !text.is_empty() {
                        break;
                    }
                    chars.next();
                    match c {
                        '\\' => {
                            escaped_any = true;
                            if let Some((_, escaped)) = chars.next() {
                                text.push(escaped);
                                special.push(false);
                            }
                        }
                        ':' if may_be_field && !text.is_empty() && field.is_none() => {
                            let exact = chars.peek().is_some_and(|&(_, n)| n == '=');
                            if exact {
                                chars.next();
                            }
                            if let Some(i) = special.iter().position(|&s| s) {
                                // `f*:x`: field names are literal; `*:*` is handled below.
                                // `*:*` clears this below, as match-all.
                                if unsupported.is_none() {
                                    let at =
                                        start + text.char_indices().nth(i).map_or(0, |(b, _)| b);
                                    unsupported = Some((at, Feature::Wildcard));
                                }
                            }
                            field = Some((std::mem::take(&mut text), exact));
                            special.clear();
                            break;
                        }
                        c => {
                            text.push(c);
                            special.push(matches!(c, '*' | '?' | '~'));
                        }
                    }
                }
                let match_all = match &field {
                    // `*:*`, Lucene's match-all, is the only field name with an operator in it
                    // that is kept; it is read as `*`.
                    Some((name, false)) if name == "*" && !escaped_any => {
                        let rest = &input[chars.peek().map_or(input.len(), |&(at, _)| at)..];
                        let lone_star = rest.strip_prefix('*').is_some_and(|after| {
                            after.is_empty()
                                || after.starts_with(|n: char| n.is_whitespace() || n == ')')
                        });
                        if lone_star {
                            chars.next();
                        }
                        lone_star
                    }
                    Some(_) => false,
                    None => text == "*" && !escaped_any,
                };
                // An exact value is literal: `host:=web-*` is the value `web-*`.
                let literal =
                    field.is_none() && matches!(tokens.last(), Some((_, Token::ExactField(_))));
                if let Some((position, feature)) = unsupported.filter(|_| !match_all && !literal) {
                    return Err(ParseError {
                        position,
                        kind: ParseErrorKind::NotSupportedYet { feature },
                    });
                }
                let pattern = if field.is_none() && !match_all && !literal {
                    pattern_of(&text, &special, start)?
                } else {
                    None
                };
                let token = match (field, text.as_str()) {
                    _ if match_all => Token::Star,
                    _ if pattern.is_some() => Token::Pattern(pattern.expect("checked")),
                    (Some((name, true)), _) => Token::ExactField(name),
                    (Some((name, false)), _) => Token::Field(name),
                    (None, _) if escaped_any => Token::Word(text),
                    (None, "AND") | (None, "&&") => Token::And,
                    (None, "OR") | (None, "||") => Token::Or,
                    (None, "NOT") => Token::Not,
                    (None, _) => Token::Word(text),
                };
                tokens.push((start, token));
            }
        }
    }
    Ok(tokens)
}

/// The slop of the phrase whose closing quote `chars` just passed: `~N` glued to the quote,
/// else 0. `"a b"~` alone and `~2.5` are errors (Lucene reads them as slop 0 and 2 without a
/// word; a user who typed them meant something else).
fn phrase_slop(
    input: &str,
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
) -> Result<u32, ParseError> {
    let Some(&(tilde, '~')) = chars.peek() else {
        return Ok(0);
    };
    chars.next();
    let mut end = input.len();
    while let Some(&(at, c)) = chars.peek() {
        if c.is_whitespace() || matches!(c, '(' | ')' | '"' | '^') {
            end = at;
            break;
        }
        chars.next();
    }
    let text = &input[tilde + 1..end];
    match text.parse::<u32>() {
        Ok(slop) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(slop),
        _ => Err(ParseError {
            position: tilde,
            kind: ParseErrorKind::BadSlop {
                text: text.to_owned(),
            },
        }),
    }
}

/// The pattern a word stands for, if it has an unescaped `*`, `?` or `~` (`special[i]` says
/// whether char `i` of `text` is one). `start` is the word's position, for errors.
fn pattern_of(
    text: &str,
    special: &[bool],
    start: usize,
) -> Result<Option<PatternKind>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    if !special.iter().any(|&s| s) {
        return Ok(None);
    }
    let bad = |reason: String| ParseError {
        position: start,
        kind: ParseErrorKind::BadPattern { reason },
    };
    if let Some(tilde) = (0..chars.len()).find(|&i| special[i] && chars[i] == '~') {
        // `term~` or `term~N`: a fuzzy term, nothing special before the `~`.
        let term: String = chars[..tilde].iter().collect::<String>();
        let rest: String = chars[tilde + 1..].iter().collect();
        if term.is_empty() || special[..tilde].iter().any(|&s| s) {
            return Err(bad(format!(
                "a fuzzy term is a word then `~` or `~N` (N up to 2), not {text:?}"
            )));
        }
        let distance = match rest.as_str() {
            "" => 2,
            digits => digits.parse::<u8>().map_err(|_| {
                bad(format!(
                    "expected an edit distance (0, 1 or 2) after `~`, got {digits:?}"
                ))
            })?,
        };
        return Ok(Some(PatternKind::Fuzzy {
            term,
            distance,
            prefix_length: 0,
        }));
    }
    Ok(Some(PatternKind::wildcard_as_written(
        chars.iter().copied().zip(special.iter().copied()),
    )))
}

struct Parser<'a> {
    tokens: Vec<(usize, Token)>,
    next: usize,
    input: &'a str,
    depth: usize,
    /// What `now` means in relative times, in nanoseconds since the epoch.
    now: i64,
    /// Set for Elasticsearch's `query_string`: Lucene's classic reading of AND, OR and
    /// juxtaposition (`parse_classic`).
    classic: Option<ClassicOptions>,
}

/// How Elasticsearch's `query_string` (and the `q` parameter) reads a query, as Lucene's
/// classic query parser does, where Quarry's own language gives AND precedence over OR:
/// - AND and OR are not operators with a precedence but marks on their neighbours: `a AND b`
///   makes both required, `a OR b` leaves both optional, so `a OR b AND c` is `a +b +c`
///   (Quarry's own language reads it `a OR (b AND c)`);
/// - a clause with no operator before it is optional (`default_operator` OR) or required
///   (AND), and with AND, `a OR b` makes both optional again;
/// - `+` requires, `-`/`NOT` excludes; a group of exclusions alone matches every event but
///   those (Elasticsearch adds the match-all Lucene leaves out);
/// - `@timestamp` is the event time, so `@timestamp:[now-1h TO now]` is a time range, with
///   `]` and `{` rounding their date math up as Elasticsearch's ranges do, in `zone`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassicOptions {
    /// `Occur::Should` (OR, the default) or `Occur::Must` (AND).
    pub default_operator: Occur,
    /// The field bare words search (`default_field`, `df`); `None`: the default search
    /// fields.
    pub default_field: Option<String>,
    /// The zone of times without one and of date-math roundings (`time_zone`).
    pub zone: Zone,
}

impl Default for ClassicOptions {
    fn default() -> Self {
        ClassicOptions {
            default_operator: Occur::Should,
            default_field: None,
            zone: Zone::Utc,
        }
    }
}

/// Parses `input` as Elasticsearch's `query_string` does (`ClassicOptions`).
pub fn parse_classic(input: &str, now: i64, options: &ClassicOptions) -> Result<Ast, ParseError> {
    let mut parser = Parser {
        tokens: lex(input)?,
        next: 0,
        input,
        depth: 0,
        now,
        classic: Some(options.clone()),
    };
    parser.parse_all(options.default_field.as_deref())
}

/// Deep nesting is refused rather than risking the stack.
const MAX_DEPTH: usize = 64;

pub fn parse(input: &str) -> Result<Ast, ParseError> {
    parse_at(input, now_nanos())
}

/// Parses with `now` (nanoseconds since the epoch) as the time relative times count from.
pub fn parse_at(input: &str, now: i64) -> Result<Ast, ParseError> {
    let mut parser = Parser {
        tokens: lex(input)?,
        next: 0,
        input,
        depth: 0,
        now,
        classic: None,
    };
    parser.parse_all(None)
}

impl Parser<'_> {
    fn parse_all(&mut self, field: Option<&str>) -> Result<Ast, ParseError> {
        if self.tokens.is_empty() {
            return Err(ParseError {
                position: 0,
                kind: ParseErrorKind::Empty,
            });
        }
        let ast = self.or_expr(field)?;
        if let Some((position, _)) = self.tokens.get(self.next) {
            return Err(ParseError {
                position: *position,
                kind: ParseErrorKind::UnbalancedClose,
            });
        }
        Ok(ast)
    }

    /// A field name as the query means it: in the classic reading, `@timestamp` is `_time`.
    fn field_name(&self, name: String) -> String {
        if self.classic.is_some() && name == "@timestamp" {
            TIME_FIELD.to_owned()
        } else {
            name
        }
    }

    /// The clauses of a query or group in Lucene's classic reading (`ClassicOptions`).
    fn classic_expr(&mut self, field: Option<&str>, and_default: bool) -> Result<Ast, ParseError> {
        let mut clauses: Vec<(Occur, Ast)> = Vec::new();
        loop {
            let conjunction = match self.peek() {
                None | Some(Token::Close) => break,
                Some(&Token::Or) | Some(&Token::And) => {
                    let (operator, is_and) = match self.peek() {
                        Some(Token::And) => ("AND", true),
                        _ => ("OR", false),
                    };
                    if clauses.is_empty() {
                        return Err(self.error(ParseErrorKind::NoClauseBefore { operator }));
                    }
                    self.next += 1;
                    if matches!(
                        self.peek(),
                        None | Some(Token::Close) | Some(Token::Or) | Some(Token::And)
                    ) {
                        return Err(self.error(ParseErrorKind::NoClauseAfter { operator }));
                    }
                    Some(is_and)
                }
                _ => None,
            };
            let (sign, ast) = self.unary(field)?;
            let excluded = sign == Occur::MustNot;
            if let Some(last) = clauses.last_mut().filter(|last| last.0 != Occur::MustNot) {
                match conjunction {
                    // `a AND b`: the clause before is required too.
                    Some(true) => last.0 = Occur::Must,
                    // `a OR b` under AND: the clause before is optional again.
                    Some(false) if and_default => last.0 = Occur::Should,
                    _ => {}
                }
            }
            let required = if and_default {
                conjunction != Some(false)
            } else {
                sign == Occur::Must || conjunction == Some(true)
            };
            let occur = if excluded {
                Occur::MustNot
            } else if required {
                Occur::Must
            } else {
                Occur::Should
            };
            clauses.push((occur, ast));
        }
        if clauses.is_empty() {
            return Err(self.error(ParseErrorKind::ExpectedClause));
        }
        if clauses.iter().all(|(occur, _)| *occur == Occur::MustNot) {
            clauses.insert(0, (Occur::Must, Ast::All));
        }
        Ok(simplify(clauses))
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|(_, t)| t)
    }

    fn position(&self) -> usize {
        self.tokens
            .get(self.next)
            .map_or(self.input.len(), |(p, _)| *p)
    }

    fn error(&self, kind: ParseErrorKind) -> ParseError {
        // A `)` outside every group is the mistake, whatever else was expected there.
        let stray_close = self.depth == 0 && self.peek() == Some(&Token::Close);
        ParseError {
            position: self.position(),
            kind: if stray_close {
                ParseErrorKind::UnbalancedClose
            } else {
                kind
            },
        }
    }

    fn or_expr(&mut self, field: Option<&str>) -> Result<Ast, ParseError> {
        if let Some(options) = &self.classic {
            let and_default = options.default_operator == Occur::Must;
            return self.classic_expr(field, and_default);
        }
        let mut clauses = Vec::new();
        loop {
            match self.peek() {
                None | Some(Token::Close) => break,
                Some(Token::Or) => {
                    if clauses.is_empty() {
                        return Err(self.error(ParseErrorKind::NoClauseBefore { operator: "OR" }));
                    }
                    self.next += 1;
                    if matches!(self.peek(), None | Some(Token::Close)) {
                        return Err(self.error(ParseErrorKind::NoClauseAfter { operator: "OR" }));
                    }
                }
                Some(Token::And) => {
                    return Err(self.error(ParseErrorKind::NoClauseBefore { operator: "AND" }))
                }
                _ => {}
            }
            clauses.extend(self.and_expr(field)?);
        }
        if clauses.is_empty() {
            return Err(self.error(ParseErrorKind::ExpectedClause));
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
                return Err(self.error(ParseErrorKind::NoClauseAfter { operator: "AND" }));
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
            return Err(self.error(ParseErrorKind::ExpectedClauseAfterSign));
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

    /// A primary with its boost, if `^N` follows it.
    fn primary(&mut self, field: Option<&str>) -> Result<Ast, ParseError> {
        let ast = self.unboosted(field)?;
        if let Some(&Token::Boost(boost)) = self.peek() {
            self.next += 1;
            return Ok(Ast::Boost {
                inner: Box::new(ast),
                boost,
            });
        }
        Ok(ast)
    }

    fn unboosted(&mut self, field: Option<&str>) -> Result<Ast, ParseError> {
        let Some((position, token)) = self.tokens.get(self.next).cloned() else {
            return Err(self.error(ParseErrorKind::ExpectedClause));
        };
        self.next += 1;
        match token {
            Token::Open => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(ParseError {
                        position,
                        kind: ParseErrorKind::NestedTooDeeply,
                    });
                }
                let inner = self.or_expr(field)?;
                self.depth -= 1;
                // `or_expr` stops only at a `)` or at the end of the input.
                if self.peek() != Some(&Token::Close) {
                    return Err(ParseError {
                        position,
                        kind: ParseErrorKind::UnclosedParenthesis,
                    });
                }
                self.next += 1;
                Ok(inner)
            }
            Token::Star => Ok(Ast::All),
            Token::Boost(_) => Err(ParseError {
                position,
                kind: ParseErrorKind::BoostWithoutClause,
            }),
            // As written: lowercased for tokens, case kept for whole values (pattern.rs).
            Token::Pattern(kind) => {
                let pattern = Pattern::as_written(kind, false).map_err(|e| ParseError {
                    position,
                    kind: ParseErrorKind::BadPattern { reason: e.0 },
                })?;
                Ok(Ast::Pattern {
                    field: field.map(str::to_owned),
                    pattern: Arc::new(pattern),
                })
            }
            Token::Word(text) => Ok(Ast::Word {
                field: field.map(str::to_owned),
                text,
            }),
            Token::Phrase { text, slop } => Ok(Ast::Phrase {
                field: field.map(str::to_owned),
                text,
                slop,
            }),
            Token::Field(name) if name == "_exists_" => match self.peek().cloned() {
                Some(Token::Word(field)) | Some(Token::Phrase { text: field, .. }) => {
                    self.next += 1;
                    Ok(Ast::Exists {
                        field: self.field_name(field),
                    })
                }
                _ => Err(self.error(ParseErrorKind::ExpectedExistsField)),
            },
            Token::Field(name) => match (self.field_name(name), self.peek().cloned()) {
                (
                    name,
                    Some(Token::Range {
                        lower,
                        lower_inclusive,
                        upper,
                        upper_inclusive,
                    }),
                ) => {
                    let ast =
                        self.range(name, (&lower, lower_inclusive), (&upper, upper_inclusive))?;
                    self.next += 1;
                    Ok(ast)
                }
                (name, Some(Token::Compare { op, value })) => {
                    let bound = (value.as_str(), op.ends_with('='));
                    let ast = if op.starts_with('>') {
                        self.range(name, bound, ("*", true))?
                    } else {
                        self.range(name, ("*", true), bound)?
                    };
                    self.next += 1;
                    Ok(ast)
                }
                (_, Some(Token::BadRange(kind))) => Err(self.error(kind)),
                (name, Some(Token::Open)) => self.primary(Some(&name)),
                // `field:*` is Lucene's "the field has a value"; `*:*` is everything.
                (name, Some(Token::Star)) => {
                    self.next += 1;
                    Ok(if name == "*" {
                        Ast::All
                    } else {
                        Ast::Exists { field: name }
                    })
                }
                (
                    name,
                    Some(Token::Word(_)) | Some(Token::Phrase { .. }) | Some(Token::Pattern(_)),
                ) => self.primary(Some(&name)),
                // `field:AND` and the like: the keyword is the value.
                (name, Some(Token::And) | Some(Token::Or) | Some(Token::Not)) => {
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
                (name, _) => Err(self.error(ParseErrorKind::ExpectedValue { field: name })),
            },
            Token::ExactField(name) => match self.tokens.get(self.next).cloned() {
                Some((_, Token::Word(value))) | Some((_, Token::Phrase { text: value, .. })) => {
                    self.next += 1;
                    Ok(Ast::Exact {
                        field: self.field_name(name),
                        value,
                    })
                }
                _ => Err(self.error(ParseErrorKind::ExpectedExactValue { field: name })),
            },
            Token::Close => Err(ParseError {
                position,
                kind: ParseErrorKind::UnbalancedClose,
            }),
            Token::And | Token::Or => Err(ParseError {
                position,
                kind: ParseErrorKind::OperatorWithoutClause,
            }),
            Token::Plus | Token::Minus | Token::Not => Err(ParseError {
                position,
                kind: ParseErrorKind::ExpectedClauseAfterSign,
            }),
            Token::Range { .. } | Token::Compare { .. } | Token::BadRange(_) => Err(ParseError {
                position,
                kind: ParseErrorKind::RangeWithoutField,
            }),
        }
    }

    /// `field:[lower TO upper]` (each bound's text and whether it is inclusive): on `_time` a
    /// time range; on another field the bounds as written (`Ast::TypedRange`), read without a
    /// type as a numeric range where every bound is a number or `*`, else a range of terms
    /// (`host:[a TO m}`), whose bounds are lowercased as tokens are. Errors point at the range
    /// token.
    fn range(
        &self,
        field: String,
        lower: (&str, bool),
        upper: (&str, bool),
    ) -> Result<Ast, ParseError> {
        if field == TIME_FIELD {
            return self.untyped_range(field, lower, upper);
        }
        let as_written = |(text, inclusive): (&str, bool)| match text {
            "*" => Bound::Unbounded,
            text if inclusive => Bound::Included(text.to_owned()),
            text => Bound::Excluded(text.to_owned()),
        };
        Ok(Ast::TypedRange {
            lower: as_written(lower),
            upper: as_written(upper),
            format: None,
            zone: self
                .classic
                .as_ref()
                .map(|c| c.zone)
                .filter(|&zone| zone != Zone::Utc),
            now: self.now,
            otherwise: Box::new(self.untyped_range(field.clone(), lower, upper)?),
            field,
        })
    }

    /// A range read without the field's type: numeric where every bound is a number or `*`,
    /// a time range on `_time`, else a range of terms.
    fn untyped_range(
        &self,
        field: String,
        lower: (&str, bool),
        upper: (&str, bool),
    ) -> Result<Ast, ParseError> {
        let numeric = |text: &str| text == "*" || Number::parse(text).is_some();
        if field != TIME_FIELD && !(numeric(lower.0) && numeric(upper.0)) {
            let bound = |(text, inclusive): (&str, bool)| match text {
                "*" => Bound::Unbounded,
                text if inclusive => Bound::Included(text.to_lowercase()),
                text => Bound::Excluded(text.to_lowercase()),
            };
            let kind = PatternKind::TermRange {
                lower: bound(lower),
                upper: bound(upper),
            };
            let pattern = Pattern::new(kind)
                .map_err(|e| self.error(ParseErrorKind::BadPattern { reason: e.0 }))?;
            return Ok(Ast::Pattern {
                field: Some(field),
                pattern: Arc::new(pattern),
            });
        }
        let lower = self.bound(&field, lower.0, lower.1, false)?;
        let upper = self.bound(&field, upper.0, upper.1, true)?;
        Ok(Ast::Range {
            field,
            range: NumericRange { lower, upper },
        })
    }

    /// One bound; `upper` says which side it is.
    fn bound(
        &self,
        field: &str,
        text: &str,
        inclusive: bool,
        upper: bool,
    ) -> Result<Bound<Number>, ParseError> {
        if text == "*" {
            return Ok(Bound::Unbounded);
        }
        let number = if field == TIME_FIELD {
            // Elasticsearch rounds date math up in `]` upper and `{` lower bounds.
            let rounding = if inclusive == upper {
                Rounding::Up
            } else {
                Rounding::Down
            };
            let zone = self.classic.as_ref().map_or(Zone::Utc, |c| c.zone);
            parse_time_in(text, self.now, zone, rounding)
                .map(Number::Int)
                .map_err(|message| self.error(ParseErrorKind::BadTime { message }))?
        } else {
            Number::parse(text).ok_or_else(|| {
                self.error(ParseErrorKind::BadNumber {
                    text: text.to_owned(),
                })
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

    /// `now` is 1,000,000 s after the epoch, so relative times are easy to read.
    const NOW: i64 = 1_000_000_000_000_000;

    fn check(input: &str, expected: &str) {
        match parse_at(input, NOW) {
            Ok(ast) => assert_eq!(ast.to_string(), expected, "{input:?}"),
            Err(e) => assert_eq!(format!("error: {e}"), expected, "{input:?}"),
        }
    }

    fn check_error(input: &str, position: usize, kind: ParseErrorKind) {
        assert_eq!(
            parse_at(input, NOW),
            Err(ParseError { position, kind }),
            "{input:?}"
        );
    }

    fn check_not_supported(input: &str, position: usize, feature: Feature) {
        check_error(input, position, ParseErrorKind::NotSupportedYet { feature });
    }

    /// A bare word whose text is `text`: `Display` cannot tell `\*` from `*`.
    fn check_word(input: &str, text: &str) {
        let word = Ast::Word {
            field: None,
            text: text.to_owned(),
        };
        assert_eq!(parse_at(input, NOW), Ok(word), "{input:?}");
    }

    #[test]
    fn table() {
        check("error", "error");
        check("a b", "(a b)");
        check("+a +b", "(+a +b)");
        check("a AND b", "(+a +b)");
        check("a AND b c", "((+a +b) c)");
        check("a OR b AND c", "(a (+b +c))");
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
        check(
            "\"ground beef recipes'",
            "error: unterminated quote starting at position 0",
        );
        check("(a b", "error: unclosed parenthesis starting at position 0");
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
        // A bound that is not a number makes a range of terms.
        check("a:[x TO 2]", "a:[x TO 2]");
        check("a:>nan", "a:{nan TO *]");
        check("host:[A TO M}", "host:[a TO m}");
        check("host:<=Web", "host:[* TO web]");
        check("n:[1 TO 5]", "n:[1 TO 5]");
        // Date math and times without a zone (UTC) in time ranges.
        check("_time:>=now-1d/d", "_time:[864000000000000 TO *]");
        check(
            "_time:[2026-11-01T08:00:00 TO 2026-11-01T08:00:00||+1h}",
            "_time:[1793520000000000000 TO 1793523600000000000}",
        );
        check(
            "_time:>yesterday",
            "error: expected a time (RFC 3339, a date, epoch seconds or ms, now-15m, now/d), got \"yesterday\" at position 6",
        );
        check(
            "_exists_:",
            "error: expected a field name after '_exists_:' at position 9",
        );
        check("a [1 TO 2]", "(a [1 TO 2])");
    }

    #[test]
    fn unbalanced_quotes_and_parentheses() {
        use ParseErrorKind::{UnbalancedClose, UnclosedParenthesis, UnterminatedQuote};
        check_error("\"ground beef recipes'", 0, UnterminatedQuote);
        check_error("error \"connection reset", 6, UnterminatedQuote);
        check_error("msg:\"a b", 4, UnterminatedQuote);
        check_error("host:=\"web", 6, UnterminatedQuote);
        check_error("\"a\" \"b", 4, UnterminatedQuote);
        check_error("a\"b", 1, UnterminatedQuote);
        check_error("\"a \\\"b\\\" c", 0, UnterminatedQuote);
        check_error("\"a\\\"", 0, UnterminatedQuote);
        check_error("a ) \"b", 4, UnterminatedQuote);
        check_error("(a b", 0, UnclosedParenthesis);
        check_error("-(a", 1, UnclosedParenthesis);
        check_error("level:(warn OR error", 6, UnclosedParenthesis);
        check_error("((a) b", 0, UnclosedParenthesis);
        check_error("(a (b)", 0, UnclosedParenthesis);
        check_error("a (b (c", 5, UnclosedParenthesis);
        check_error("a )", 2, UnbalancedClose);
        check_error("(a))", 3, UnbalancedClose);
        check_error(")", 0, UnbalancedClose);
        check_error(") a", 0, UnbalancedClose);
        check_error("a OR )", 5, UnbalancedClose);
        check_error("a AND )", 6, UnbalancedClose);
        check_error("f:)", 2, UnbalancedClose);
        check("\"a \\\"b\\\" c\"", "\"a \"b\" c\"");
        check("\"a\" b", "(\"a\" b)");
        check("(a (b))", "(a b)");
        check("\"a b", "error: unterminated quote starting at position 0");
        check("a (b", "error: unclosed parenthesis starting at position 2");
    }

    #[test]
    fn operators_not_supported_yet() {
        use Feature::Wildcard;
        check_not_supported("f*:x", 1, Wildcard);
        check_not_supported("*:x", 0, Wildcard);
        check_not_supported("*:**", 0, Wildcard);
    }

    #[test]
    fn phrase_slop() {
        check("\"a b\"~2", "\"a b\"~2");
        check("msg:\"a b\"~10", "msg:\"a b\"~10");
        check("\"a b\"~0", "\"a b\"");
        check("\"a b\"~2^3", "\"a b\"~2^3");
        check("(\"a b\"~1)", "\"a b\"~1");
        check("\"a b\"~1 c", "(\"a b\"~1 c)");
        check(
            "\"a b\" ~2",
            "error: a fuzzy term is a word then `~` or `~N` (N up to 2), not \"~2\" at position 6",
        );
        check(
            "\"a b\"~",
            "error: expected a slop (a whole number of positions) after a phrase's '~', got \"\" at position 5",
        );
        check(
            "x \"a b\"~2.5",
            "error: expected a slop (a whole number of positions) after a phrase's '~', got \"2.5\" at position 7",
        );
        check(
            "\"a b\"~-1",
            "error: expected a slop (a whole number of positions) after a phrase's '~', got \"-1\" at position 5",
        );
    }

    #[test]
    fn boosts() {
        check("error^2", "error^2");
        check("msg:error^0.5", "msg:error^0.5");
        check("\"a b\"^3", "\"a b\"^3");
        check("(a b)^2 c", "((a b)^2 c)");
        check("+err*^2", "(+err*^2)");
        check("host:=a^b", "host:=\"a^b\"");
        check("a\\^2", "a^2");
        check_error("a ^2", 2, ParseErrorKind::BoostWithoutClause);
        check_error(
            "a^",
            1,
            ParseErrorKind::BadBoost {
                text: String::new(),
            },
        );
        check_error("a^0", 1, ParseErrorKind::BadBoost { text: "0".into() });
        check_error(
            "a^x",
            1,
            ParseErrorKind::BadBoost {
                text: String::new(),
            },
        );
    }

    /// Prefix, wildcard, regex and fuzzy terms: what they parse to (lowercased where tokens
    /// are), and their errors with positions.
    #[test]
    fn patterns() {
        check("err*", "err*");
        check("ERR*", "err*");
        check("msg:err*", "msg:err*");
        check("+err*", "(+err*)");
        check("a (b c*)", "(a (b c*))");
        check("wild*ca?d", "wild*ca?d");
        check("*err", "*err");
        check("**", "**");
        check("what?", "what?");
        check("/err.*/", "/err.*/");
        check("msg:/err/", "msg:/err/");
        check("-/err/", "(-/err/)");
        check("/a b/", "/a b/");
        check("/a\\/b/", "/a/b/");
        check("error~", "error~2");
        check("error~1", "error~1");
        check("msg:Error~0", "msg:error~0");
        check("\\*err", "*err");
        check("host:=web-*", "host:=\"web-*\"");
        check("path:=/var/log", "path:=\"/var/log\"");
        check_error("a AND err* )", 11, ParseErrorKind::UnbalancedClose);
        check_error("x /err", 2, ParseErrorKind::UnterminatedRegex);
        check(
            "error~3",
            "error: fuzzy distance 3 is above the maximum, 2 at position 0",
        );
        check(
            "a error~x",
            "error: expected an edit distance (0, 1 or 2) after `~`, got \"x\" at position 2",
        );
        check(
            "msg:/a(b/",
            "error: invalid regular expression: unclosed group at position 4",
        );
        check_error("_exists_:f*", 9, ParseErrorKind::ExpectedExistsField);
    }

    /// Where an operator character is literal: match-all, range bounds, exact values,
    /// phrases, inside a word, and escaped.
    #[test]
    fn literal_operator_characters() {
        check("*:*", "*");
        check("-*", "(-*)");
        check("a -*:*", "(a -*)");
        check("level:*", "_exists_:level");
        check("latency:[* TO 5]", "latency:[* TO 5]");
        check("latency:{100 TO *]", "latency:{100 TO *]");
        check("latency:[-5 TO -1]", "latency:[-5 TO -1]");
        check("latency:>=-5", "latency:[-5 TO *]");
        check(
            "_time:[now-15m TO now]",
            "_time:[999100000000000 TO 1000000000000000]",
        );
        check(
            "_time:[2026-11-01T08:00:00Z TO 2026-11-01T09:30:00+01:00}",
            "_time:[1793520000000000000 TO 1793521800000000000}",
        );
        check("_exists_:f", "_exists_:f");
        check("host:=\"web-*\"", "host:=\"web-*\"");
        check("host:=web-*", "host:=\"web-*\"");
        check("path:=/api/v1?x=~^", "path:=\"/api/v1?x=~^\"");
        check("\"err* a?b ~2 ^3 /x/\"", "\"err* a?b ~2 ^3 /x/\"");
        check("url:http://x/a", "url:http://x/a");
        check("and/or", "and/or");
        check("c++", "c++");
        check_word("\\*", "*");
        check_word("err\\*", "err*");
        check_word("wild\\*ca\\?d", "wild*ca?d");
        check_word("\\/err\\/", "/err/");
        check_word("error\\~2", "error~2");
        check_word("error\\^2", "error^2");
        check_word("\\AND", "AND");
    }

    /// Where the first unterminated quote opens, and whether the parentheses outside quotes
    /// balance, for inputs without escapes.
    fn balance(input: &str) -> (Option<usize>, bool) {
        let (mut open_quote, mut depth, mut balanced) = (None, 0i32, true);
        for (at, c) in input.char_indices() {
            match (c, open_quote) {
                ('"', None) => open_quote = Some(at),
                ('"', Some(_)) => open_quote = None,
                ('(', None) => depth += 1,
                (')', None) => {
                    depth -= 1;
                    balanced &= depth >= 0;
                }
                _ => {}
            }
        }
        (open_quote, balanced && depth == 0)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn never_panics(input in "[a-c \"()+\\-!:=*?~^/\\\\\\[\\]{}<>]{0,30}|(AND|OR|NOT|TO| |a|\\(|\\)|\"|:|\\[|\\]|>)*") {
            if let Err(e) = parse(&input) {
                prop_assert!(e.position <= input.len());
            }
        }

        #[test]
        fn unbalanced_is_an_error(input in "[ab \"()]{0,16}") {
            let result = parse(&input);
            match balance(&input) {
                (Some(position), _) => prop_assert_eq!(
                    result,
                    Err(ParseError { position, kind: ParseErrorKind::UnterminatedQuote })
                ),
                (None, false) => prop_assert!(result.is_err(), "{:?} parsed", input),
                (None, true) => {}
            }
        }
    }

    /// The classic reading of `input` is the Quarry reading of `same_as`.
    fn classic(input: &str, options: &ClassicOptions, same_as: &str) {
        assert_eq!(
            parse_classic(input, NOW, options),
            parse_at(same_as, NOW),
            "{input:?} should read as {same_as:?}"
        );
    }

    #[test]
    fn classic_reading_marks_neighbours_as_lucene_does() {
        let or = ClassicOptions::default();
        let and = ClassicOptions {
            default_operator: Occur::Must,
            ..ClassicOptions::default()
        };
        for (input, with_or, with_and) in [
            ("a OR b AND c", "a +b +c", "a +b +c"),
            ("a b", "a b", "+a +b"),
            ("a OR b", "a b", "a b"),
            ("a AND b OR c", "+a +b c", "+a b c"),
            ("a b OR c", "a b c", "+a b c"),
            ("a AND NOT b", "+a -b", "+a -b"),
            ("a -b", "a -b", "+a -b"),
            ("+a b", "+a b", "+a +b"),
            ("(a AND b) OR c", "(+a +b) c", "(+a +b) c"),
            (
                "level:(error OR warn) AND service:api",
                "+level:(error warn) +service:api",
                "+level:(error warn) +service:api",
            ),
            ("NOT a", "* -a", "* -a"),
            ("-a -b", "* -a -b", "* -a -b"),
            ("x (-a)", "x (* -a)", "+x +(* -a)"),
        ] {
            let plus_all = |q: &str| q.replacen("* -", "+* -", 1);
            classic(input, &or, &plus_all(with_or));
            classic(input, &and, &plus_all(with_and));
        }
        // The default field takes the bare words.
        let df = ClassicOptions {
            default_field: Some("message".into()),
            ..ClassicOptions::default()
        };
        classic("disk AND level:error", &df, "+message:disk +level:error");
        // Errors still name their position.
        assert_eq!(
            parse_classic("a AND", NOW, &or).unwrap_err().kind,
            ParseErrorKind::NoClauseAfter { operator: "AND" }
        );
        assert_eq!(parse_classic("OR a", NOW, &or).unwrap_err().position, 0);
    }

    #[test]
    fn classic_reading_knows_the_timestamp_and_rounds_ranges_up() {
        let options = ClassicOptions::default();
        let day = 86_400_000_000_000;
        let (today, tomorrow) = (NOW / day * day, NOW / day * day + day);
        let range = |input: &str| match parse_classic(input, NOW, &options).unwrap() {
            Ast::Range { field, range } => {
                assert_eq!(field, TIME_FIELD);
                (range.lower, range.upper)
            }
            other => panic!("{input}: {other:?}"),
        };
        use Bound::{Excluded, Included};
        let t = Number::Int;
        assert_eq!(
            range("@timestamp:[now-1h TO now]"),
            (Included(t(NOW - 3_600_000_000_000)), Included(t(NOW)))
        );
        assert_eq!(
            range("@timestamp:[now/d TO now/d]"),
            (Included(t(today)), Included(t(tomorrow - 1)))
        );
        assert_eq!(
            range("@timestamp:{now/d TO now/d}"),
            (Excluded(t(tomorrow - 1)), Excluded(t(today)))
        );
        assert_eq!(range("@timestamp:<=now/d").1, Included(t(tomorrow - 1)));
        let paris = ClassicOptions {
            zone: Zone::parse("+01:00").unwrap(),
            ..ClassicOptions::default()
        };
        assert_eq!(
            parse_classic("@timestamp:>=now/d", NOW, &paris).unwrap(),
            Ast::Range {
                field: TIME_FIELD.into(),
                range: NumericRange {
                    lower: Included(t(today - 3_600_000_000_000)),
                    upper: Bound::Unbounded
                }
            }
        );
        // `_exists_:@timestamp` and `@timestamp:=...` name the time field too.
        assert_eq!(
            parse_classic("_exists_:@timestamp", NOW, &options).unwrap(),
            Ast::Exists {
                field: TIME_FIELD.into()
            }
        );
        // Quarry's own language keeps its reading.
        assert_eq!(
            parse_at("a OR b AND c", NOW).unwrap().to_string(),
            "(a (+b +c))"
        );
    }
}
