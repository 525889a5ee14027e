//! Analyzed queries: the parser's `Ast` with its text run through the analyzer and bare words
//! expanded over the text fields.
//!
//! A field name `X.keyword` that is not mapped itself stands for the whole values of `X` (its
//! exact terms), as Elasticsearch's dynamic mapping shows a string field: a text field with a
//! keyword subfield (quarry-server's `_mapping`). A word, phrase or exact value there is the
//! whole value; a pattern matches whole values as written.

use crate::dsl::BoolPrefix;
use crate::error::{QueryError, Result};
use crate::parser::{Ast, Occur, TIME_FIELD};
use crate::pattern::{Pattern, PatternKind};
use crate::range::{Number, NumericRange};
use crate::time::{self, Rounding, Zone};
use crate::typed::{self, DateReader, IpMatch};
use quarry_format::limits::EXACT_TERM_LEN;
use quarry_format::TermKind;
use quarry_index::Schema;
use quarry_store::mapping::{FieldMapping, FieldType, TIME_AS_SENT_FIELD};
use std::ops::Bound;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// One token in one field.
    Term {
        field: String,
        term: String,
    },
    /// Tokens at their relative positions in one field, each moved by at most `slop`
    /// positions in all (Lucene's sloppy phrase; scorer.rs, `PhraseScorer`).
    Phrase {
        field: String,
        terms: Vec<(u32, String)>,
        slop: u32,
    },
    /// A whole string value, byte for byte, or a boolean written `true` or `false` (a dynamic
    /// field holds a boolean as a token; its boolean column tells it from a string). `tokens`:
    /// the value's distinct tokens when it is longer than `EXACT_TERM_LEN` (it has no exact
    /// term then, and is found through them).
    Exact {
        field: String,
        value: String,
        tokens: Vec<String>,
    },
    /// Terms of one field matched by a pattern (prefix, wildcard, regex, fuzzy): its tokens,
    /// or its whole values (`TermKind::Exact`: a keyword field, or `X.keyword`). It scores
    /// nothing; planned from the query language, it is under a `Constant` of 1.
    Pattern {
        field: String,
        pattern: Arc<Pattern>,
        terms: TermKind,
    },
    /// The whole string values of a field seen through a keyword view of it (`X.keyword`, a
    /// keyword multi-field: `Mapping::whole_values`) that `pattern` matches as written and
    /// that have at most `max_chars` characters (the view's `ignore_above`): those of up to
    /// `EXACT_TERM_LEN` bytes through their exact terms; with `long_values` (a text or dynamic
    /// field, whose longer values have no exact term), the longer ones read from the field's
    /// stored column. It scores nothing, as `Pattern`.
    WholeValues {
        field: String,
        pattern: Arc<Pattern>,
        max_chars: Option<u32>,
        long_values: bool,
    },
    /// Elasticsearch's `intervals` over one text field's positions, its `match` rules
    /// analyzed into terms (intervals.rs). Scored by its intervals' widths, not BM25.
    Intervals {
        field: String,
        rule: Arc<crate::intervals::Rule<String>>,
    },
    /// The clause's scores times `boost` (`clause^2`).
    Boost {
        inner: Box<Query>,
        boost: f32,
    },
    /// Matches when any clause matches; the score is the sum of the matching clauses' scores
    /// (a bare word over several fields, as Lucene's MultiFieldQueryParser builds it).
    Any(Vec<Query>),
    /// Matches when at least `minimum` (2 or more) of `clauses` match; the score is the sum of
    /// the matching clauses' scores (Elasticsearch's `minimum_should_match`).
    AtLeast {
        clauses: Vec<Query>,
        minimum: usize,
    },
    /// The docs of `inner`, each scored `score` (Lucene's constant-score rewrite of a prefix,
    /// as in `match_bool_prefix`).
    Constant {
        inner: Box<Query>,
        score: f32,
    },
    /// `_time` in `[start, end)`, nanoseconds since the epoch.
    TimeRange {
        start: i64,
        end: i64,
    },
    /// A numeric field's value in a range (integer, unsigned or float columns).
    Range {
        field: String,
        range: NumericRange,
    },
    /// A range of a field's number terms only, never its columns: a date, ip or mapped number
    /// field keeps its values as sent (strings, numbers in another unit or precision) and
    /// indexes them as its type reads them (typed.rs, quarry-index's `number_value`).
    IndexedRange {
        field: String,
        range: NumericRange,
    },
    /// The field has a value (of any type).
    Exists {
        field: String,
    },
    /// The events whose content id (doc_id.rs) is `(time, hash)`: those at that nanosecond,
    /// without a client-given `_id`, whose stored fields hash to `hash`.
    ContentId {
        time: i64,
        hash: u64,
    },
    Bool {
        must: Vec<Query>,
        should: Vec<Query>,
        must_not: Vec<Query>,
    },
    All,
    /// Matches nothing (a word that analyzes to no tokens, or a `Bool` left without clauses).
    Nothing,
}

/// Analyzes `ast` as `schema` says each field was indexed; `text_fields` are the fields bare
/// words search. A query on a field whose mapping cannot answer it (not indexed, a word that
/// is not a number for a number field) is an error naming the field.
pub fn plan(ast: &Ast, schema: &Schema, text_fields: &[String]) -> Result<Query> {
    if let Some(answer) = constant_answer(ast, schema)? {
        return Ok(answer);
    }
    Ok(match ast {
        Ast::Match { field, text, words } => {
            // An id is one whole value too (a word on `_id` is: `doc_id`).
            if field == crate::doc_id::ID_FIELD {
                let word = Ast::Word {
                    field: Some(field.clone()),
                    text: text.clone(),
                };
                return plan(&word, schema, text_fields);
            }
            let whole = whole_view(schema, field).is_some()
                || matches!(mapped(schema, field)?, Some(FieldType::Keyword));
            if whole {
                let exact = Ast::Exact {
                    field: field.clone(),
                    value: text.clone(),
                };
                return plan(&exact, schema, text_fields);
            }
            plan(words, schema, text_fields)?
        }
        Ast::Word { field, text } | Ast::Phrase { field, text, .. } => {
            let slop = match ast {
                Ast::Phrase { slop, .. } => *slop,
                _ => 0,
            };
            let per_field = |field: &str| -> Result<Query> {
                if let Some(whole) = whole_view(schema, field) {
                    return whole.exact(schema, text);
                }
                // An id is one whole value, quoted or not (`_id:abc-1`).
                if field == crate::doc_id::ID_FIELD {
                    return doc_id(schema, text);
                }
                if schema.is_unindexed_unmapped(field) {
                    return Ok(Query::Nothing);
                }
                match mapped(schema, field)? {
                    Some(ty @ (FieldType::Date | FieldType::DateNanos | FieldType::Ip)) => {
                        typed_value(schema, field, ty, text)
                    }
                    Some(FieldType::Keyword) => Ok(Query::Exact {
                        field: field.to_owned(),
                        value: text.clone(),
                        tokens: Vec::new(),
                    }),
                    Some(FieldType::Number) => number_equals(field, text),
                    Some(FieldType::Boolean) => match text.to_ascii_lowercase().as_str() {
                        value @ ("true" | "false") => Ok(Query::Exact {
                            field: field.to_owned(),
                            value: value.to_owned(),
                            tokens: Vec::new(),
                        }),
                        _ => Err(QueryError::Invalid(format!(
                            "field {field:?} is mapped as a boolean; {text:?} is not true or false"
                        ))),
                    },
                    Some(FieldType::Binary | FieldType::GeoPoint) => {
                        unreachable!("mapped() refuses fields that are not indexed")
                    }
                    Some(FieldType::Text) | None => {
                        let tokens = schema.analyzer_for(field).tokens(text);
                        Ok(match tokens.len() {
                            0 => Query::Nothing,
                            1 => Query::Term {
                                field: field.to_owned(),
                                term: tokens[0].1.clone(),
                            },
                            _ => Query::Phrase {
                                field: field.to_owned(),
                                terms: tokens,
                                slop,
                            },
                        })
                    }
                }
            };
            over_fields(field.as_deref(), text_fields, per_field)?
        }
        Ast::Boost { inner, boost } => match plan(inner, schema, text_fields)? {
            Query::Nothing => Query::Nothing,
            inner => Query::Boost {
                inner: Box::new(inner),
                boost: *boost,
            },
        },
        Ast::Pattern { field, pattern } => {
            let per_field = |field: &str| -> Result<Query> {
                if let Some(whole) = whole_view(schema, field) {
                    return whole.matching(schema, pattern.for_terms(TermKind::Exact));
                }
                if schema.is_unindexed_unmapped(field) {
                    return Ok(Query::Nothing);
                }
                let terms = match mapped(schema, field)? {
                    Some(FieldType::Text) | None => TermKind::Token,
                    Some(FieldType::Keyword) => TermKind::Exact,
                    Some(_) => return Err(not_for_patterns(field)),
                };
                Ok(Query::Pattern {
                    field: field.to_owned(),
                    pattern: pattern.for_terms(terms),
                    terms,
                })
            };
            // Each match scores 1 (times a boost), as Lucene's constant-score rewrite of a
            // prefix, wildcard or regex query: a pattern adds to a hit's score, never by
            // how many terms it expanded to.
            match over_fields(field.as_deref(), text_fields, per_field)? {
                Query::Nothing => Query::Nothing,
                query => Query::Constant {
                    inner: Box::new(query),
                    score: 1.0,
                },
            }
        }
        // A document id: the `_id` a client gave, or an event's content id.
        Ast::Exact { field, value } | Ast::Token { field, value }
            if field == crate::doc_id::ID_FIELD =>
        {
            doc_id(schema, value)?
        }
        // One token as indexed: a text field (or an unmapped string) holds the value's
        // tokens, so only a value that is itself one token as indexed is there (`error`,
        // never `Error` or `an error`). Whole values elsewhere (`X.keyword` too).
        Ast::Token { field, value } => {
            // Metadata fields (`_ignored`, `_index`) hold whole names.
            let text = !field.starts_with('_')
                && whole_view(schema, field).is_none()
                && !schema.is_unindexed_unmapped(field)
                && matches!(mapped(schema, field)?, Some(FieldType::Text) | None);
            if !text {
                let exact = Ast::Exact {
                    field: field.clone(),
                    value: value.clone(),
                };
                return plan(&exact, schema, text_fields);
            }
            match schema.analyzer_for(field).tokens(value).as_slice() {
                [(_, token)] if token == value => Query::Term {
                    field: field.clone(),
                    term: token.clone(),
                },
                _ => Query::Nothing,
            }
        }
        Ast::Exact { field, value } => match whole_view(schema, field) {
            Some(whole) => whole.exact(schema, value)?,
            None => whole_value(schema, field, value)?,
        },
        Ast::Range { field, range } if field == TIME_FIELD => match range.half_open_i64() {
            Some((start, end)) => Query::TimeRange { start, end },
            // An empty range, not `Nothing`: a `Bool` drops `Nothing` clauses.
            None => Query::TimeRange { start: 0, end: 0 },
        },
        Ast::Exists { field }
            if schema.rules(field).is_none() && is_mapped_object(schema, field) =>
        {
            // An object has a value when any field under it has one.
            let prefix = format!("{field}.");
            Query::Any(
                schema
                    .mapping()
                    .fields
                    .keys()
                    .filter(|name| name.starts_with(&prefix) && !name.contains('*'))
                    .map(|name| Query::Exists {
                        field: name.clone(),
                    })
                    .collect(),
            )
        }
        Ast::Range { .. } | Ast::TypedRange { .. } | Ast::Exists { .. }
            if field_of(ast).is_some_and(|f| schema.is_unindexed_unmapped(f)) =>
        {
            Query::Nothing
        }
        Ast::Range { field, range } => match mapped(schema, field)? {
            Some(ty @ (FieldType::Date | FieldType::DateNanos)) => {
                let reader = date_reader(schema, field, ty, None, None, time::now_nanos())?;
                let convert = |bound: &Bound<Number>, up: bool| -> Result<Bound<Number>> {
                    let rounding = |inclusive: bool| match up == inclusive {
                        true => Rounding::Up,
                        false => Rounding::Down,
                    };
                    Ok(match *bound {
                        Bound::Unbounded => Bound::Unbounded,
                        Bound::Included(n) => {
                            Bound::Included(Number::Int(reader.number(field, n, rounding(true))?))
                        }
                        Bound::Excluded(n) => Bound::Excluded(Number::Int(reader.number(
                            field,
                            n,
                            rounding(false),
                        )?)),
                    })
                };
                Query::IndexedRange {
                    field: field.clone(),
                    range: NumericRange {
                        lower: convert(&range.lower, false)?,
                        upper: convert(&range.upper, true)?,
                    },
                }
            }
            Some(FieldType::Ip) => {
                return Err(QueryError::Invalid(format!(
                    "field {field:?} is an ip field: its values are addresses, not numbers"
                )))
            }
            // A mapped number field's terms hold its values as the type reads them (strings
            // coerced, rounded to the type); its columns as sent. (`unsigned_long` values
            // above i64 are compared by their exact terms: their f64 terms are shared.)
            Some(FieldType::Number) => Query::IndexedRange {
                field: field.clone(),
                range: range.clone(),
            },
            // A keyword holds text: a number there is the text it is written as (`term: 3`
            // finds "3", as Elasticsearch reads it), a range of numbers a range of such texts.
            Some(FieldType::Keyword) => keyword_number_range(schema, field, range)?,
            _ => Query::Range {
                field: field.clone(),
                range: range.clone(),
            },
        },
        Ast::TypedRange {
            field,
            lower,
            upper,
            format,
            zone,
            now,
            otherwise,
        } if TIME_KEYS.contains(&field.as_str()) && schema.rules(field).is_none() => {
            let reader = DateReader::new(
                field,
                &FieldMapping::new(FieldType::Date),
                format.as_deref(),
                *zone,
                *now,
            )?;
            let otherwise = plan(otherwise, schema, text_fields)?;
            time_key_range(field, reader.range(field, lower, upper)?, otherwise)?
        }
        Ast::TypedRange {
            field,
            lower,
            upper,
            format,
            zone,
            now,
            otherwise,
        } => match mapped(schema, field)? {
            Some(ty @ (FieldType::Date | FieldType::DateNanos)) => {
                let reader = date_reader(schema, field, ty, format.as_deref(), *zone, *now)?;
                Query::IndexedRange {
                    field: field.clone(),
                    range: reader.range(field, lower, upper)?,
                }
            }
            Some(FieldType::Ip) => Query::IndexedRange {
                field: field.clone(),
                range: typed::ip_range(field, lower, upper)?,
            },
            // A keyword field's whole values, byte-wise and case kept, whatever the bounds
            // look like (`lt: 500` over "400" and "5"), as Elasticsearch compares them.
            Some(FieldType::Keyword) => whole_values(
                field,
                PatternKind::TermRange {
                    lower: lower.clone(),
                    upper: upper.clone(),
                },
            )?,
            _ if zone.is_some() => {
                return Err(QueryError::Invalid(format!(
                    "time_zone applies to date fields; {field:?} is not one"
                )))
            }
            _ => plan(otherwise, schema, text_fields)?,
        },
        Ast::Exists { field } if field == TIME_FIELD => Query::All,
        // A keyword view has a value where its field has a whole value it holds (each, when
        // the view drops the longer ones).
        Ast::Exists { field } if whole_view(schema, field).is_some() => {
            let whole = whole_view(schema, field).expect("a keyword view");
            match whole.max_chars {
                None => plan(
                    &Ast::Exists {
                        field: whole.field.to_owned(),
                    },
                    schema,
                    text_fields,
                )?,
                Some(_) => {
                    let every = Pattern::new(PatternKind::Prefix(String::new()))
                        .map_err(|e| QueryError::Invalid(e.0))?;
                    whole.matching(schema, Arc::new(every))?
                }
            }
        }
        // At or under a flat object a field exists where it holds a keyword (quarry-index's
        // `add_flat` files some only as terms: under the object's name, under its last key).
        Ast::Exists { field } if schema.mapping().flat_root(field).is_some() => {
            whole_values(field, PatternKind::Prefix(String::new()))?
        }
        Ast::Exists { field } => match not_nested(schema, field).map(|()| schema.rules(field))? {
            Some(rules) if !rules.index && !rules.stored => {
                return Err(QueryError::Invalid(format!(
                    "field {field:?} is neither indexed nor stored (its mapping says `index: \
                     false` and `stored: false`), so `_exists_` cannot tell which events have it"
                )))
            }
            _ => Query::Exists {
                field: field.clone(),
            },
        },
        Ast::All => Query::All,
        Ast::Intervals { field, rule } => intervals(schema, field, rule)?,
        Ast::Lenient(inner) => plan(&lenient(inner, schema, text_fields), schema, text_fields)?,
        Ast::Constant { inner, score } => match plan(inner, schema, text_fields)? {
            Query::Nothing => Query::Nothing,
            inner => Query::Constant {
                inner: Box::new(inner),
                score: *score,
            },
        },
        Ast::Named { inner, .. } => plan(inner, schema, text_fields)?,
        Ast::AtLeast { minimum, clauses } => {
            // A clause that analyzes to no token is dropped, as in a `Bool`.
            let mut clauses: Vec<Query> = clauses
                .iter()
                .map(|clause| plan(clause, schema, text_fields))
                .filter(|q| !matches!(q, Ok(Query::Nothing)))
                .collect::<Result<_>>()?;
            match *minimum {
                0 | 1 if clauses.len() == 1 => clauses.pop().unwrap_or(Query::Nothing),
                0 | 1 => Query::Any(clauses),
                minimum if minimum == clauses.len() => Query::Bool {
                    must: clauses,
                    should: Vec::new(),
                    must_not: Vec::new(),
                },
                // More than there are: an `AtLeast` that never matches.
                minimum => Query::AtLeast { clauses, minimum },
            }
        }
        Ast::BoolPrefix(query) => over_fields(query.field.as_deref(), text_fields, |field| {
            bool_prefix(schema, field, query)
        })?,
        Ast::Bool(clauses) => {
            let (mut must, mut should, mut must_not) = (Vec::new(), Vec::new(), Vec::new());
            for (occur, clause) in clauses {
                let query = plan(clause, schema, text_fields)?;
                match (occur, query) {
                    // A clause that analyzes to no token is dropped, required or not, as
                    // Lucene's query parser drops it (`+© +ndi` means `+ndi`).
                    (_, Query::Nothing) => {}
                    (Occur::Must, q) => must.push(q),
                    // The DSL's `term` asks a string that spells a number for the string
                    // or the number; on a mapped number field both plan to the same range.
                    (Occur::Should, q @ Query::IndexedRange { .. }) if should.contains(&q) => {}
                    (Occur::Should, q) => should.push(q),
                    (Occur::MustNot, q) => must_not.push(q),
                }
            }
            if must.is_empty() && should.is_empty() {
                if must_not.is_empty() {
                    return Ok(Query::Nothing);
                }
                must.push(Query::All);
            }
            if must_not.is_empty() && must.is_empty() && should.len() == 1 {
                return Ok(should.pop().unwrap_or(Query::Nothing));
            }
            if must_not.is_empty() && should.is_empty() && must.len() == 1 {
                return Ok(must.pop().unwrap_or(Query::Nothing));
            }
            Query::Bool {
                must,
                should,
                must_not,
            }
        }
    })
}

/// `match_bool_prefix` on one field: the text analyzed as the field is (or by the query's
/// analyzer), each token but the last a term (a fuzzy pattern with `fuzziness`), the last a
/// prefix scored 1; a keyword field's whole text is that one prefix of its whole values.
fn bool_prefix(schema: &Schema, field: &str, query: &BoolPrefix) -> Result<Query> {
    let whole = whole_view(schema, field);
    let keyword = whole.is_some() || matches!(mapped(schema, field)?, Some(FieldType::Keyword));
    if keyword && query.analyzer.is_some() {
        return Err(QueryError::Invalid(format!(
            "field {field:?} holds whole values: match_bool_prefix takes its whole value, not \
             an analyzer"
        )));
    }
    if let Some(whole) = whole {
        let prefix = Pattern::new(PatternKind::Prefix(query.text.clone()))
            .map_err(|e| QueryError::Invalid(e.0))?;
        return Ok(Query::Constant {
            inner: Box::new(whole.matching(schema, Arc::new(prefix))?),
            score: 1.0,
        });
    }
    let (field, terms, tokens) = match () {
        () if schema.is_unindexed_unmapped(field) => return Ok(Query::Nothing),
        () => match mapped(schema, field)? {
            Some(FieldType::Keyword) => (field, TermKind::Exact, vec![query.text.clone()]),
            Some(FieldType::Text) | None => {
                let analyzer = match query.analyzer {
                    Some(name) => schema.analyzer_named(name),
                    None => schema.analyzer_for(field),
                };
                let tokens = analyzer.tokens(&query.text).into_iter().map(|(_, t)| t);
                (field, TermKind::Token, tokens.collect())
            }
            Some(_) => {
                return Err(QueryError::Invalid(format!(
                    "field {field:?}: match_bool_prefix searches text and keyword fields; this \
                     one is mapped otherwise"
                )))
            }
        },
    };
    let pattern = |kind: PatternKind| -> Result<Query> {
        let pattern = Pattern::new(kind).map_err(|e| QueryError::Invalid(e.0))?;
        Ok(Query::Pattern {
            field: field.to_owned(),
            pattern: Arc::new(pattern),
            terms,
        })
    };
    let Some((last, rest)) = tokens.split_last() else {
        return Ok(Query::Nothing);
    };
    let mut clauses = Vec::with_capacity(tokens.len());
    for token in rest {
        let distance = query.fuzziness.map_or(0, |f| f.distance(token));
        clauses.push(match (distance, terms) {
            (0, TermKind::Token) => Query::Term {
                field: field.to_owned(),
                term: token.clone(),
            },
            _ => pattern(PatternKind::Fuzzy {
                term: token.clone(),
                distance,
                prefix_length: query.prefix_length,
            })?,
        });
    }
    clauses.push(Query::Constant {
        inner: Box::new(pattern(PatternKind::Prefix(last.clone()))?),
        score: 1.0,
    });
    let optional = clauses.len();
    let minimum = match (query.operator, query.minimum_should_match) {
        (Occur::Must, _) => optional,
        (_, Some(minimum)) => minimum.of(optional).max(1),
        (_, None) => 1,
    };
    // More required than there are clauses: an `AtLeast` that never matches (not `Nothing`,
    // which a `Bool` would drop).
    Ok(match minimum {
        1 if optional == 1 => clauses.pop().unwrap_or(Query::Nothing),
        1 => Query::Any(clauses),
        _ if minimum == optional => Query::Bool {
            must: clauses,
            should: Vec::new(),
            must_not: Vec::new(),
        },
        _ => Query::AtLeast { clauses, minimum },
    })
}

/// `intervals` on `field`: its `match` rules' text analyzed as the field is (or by the
/// rule's analyzer), a rule of several terms their `all_of`, of none a rule that matches
/// nothing. Intervals are token positions: only a text field (or a dynamic one) has them.
fn intervals(
    schema: &Schema,
    field: &str,
    rule: &crate::intervals::Rule<crate::intervals::MatchText>,
) -> Result<Query> {
    use crate::intervals::Rule;
    if whole_view(schema, field).is_some() {
        return Err(QueryError::Invalid(format!(
            "field {field:?} holds whole values: intervals need a text field's token positions"
        )));
    }
    if schema.is_unindexed_unmapped(field) {
        return Ok(Query::Nothing);
    }
    match mapped(schema, field)? {
        Some(FieldType::Text) | None => {}
        Some(_) => {
            return Err(QueryError::Invalid(format!(
                "field {field:?}: intervals search text fields (token positions); this one is \
                 mapped otherwise"
            )))
        }
    }
    let rule = rule.try_map(
        &mut |text: &crate::intervals::MatchText| -> Result<Rule<String>> {
            let analyzer = match text.analyzer {
                Some(name) => schema.analyzer_named(name),
                None => schema.analyzer_for(field),
            };
            let mut terms: Vec<Rule<String>> = analyzer
                .tokens(&text.text)
                .into_iter()
                .map(|(_, term)| Rule::Leaf(term))
                .collect();
            Ok(match terms.len() {
                0 => Rule::Any(Vec::new()),
                1 => terms.pop().expect("one term"),
                _ => Rule::All {
                    mode: text.mode,
                    max_gaps: text.max_gaps,
                    rules: terms,
                },
            })
        },
    )?;
    Ok(Query::Intervals {
        field: field.to_owned(),
        rule: Arc::new(rule),
    })
}

/// A numeric range (a term's number, `field:>5`) on a keyword field, as its texts: a point
/// is the number's text as JSON writes it (`3`, `80.0`), other bounds compare such texts
/// byte-wise.
fn keyword_number_range(schema: &Schema, field: &str, range: &NumericRange) -> Result<Query> {
    let text = |number: Number| match number {
        Number::Int(v) => v.to_string(),
        Number::Big(v) => v.to_string(),
        Number::Float(v) => {
            serde_json::Number::from_f64(v).map_or(v.to_string(), |n| n.to_string())
        }
    };
    if let (Bound::Included(lower), Bound::Included(upper)) = (range.lower, range.upper) {
        if lower == upper {
            return exact(schema, field, &text(lower));
        }
    }
    let text_of = |bound: Bound<Number>| match bound {
        Bound::Included(n) => Bound::Included(text(n)),
        Bound::Excluded(n) => Bound::Excluded(text(n)),
        Bound::Unbounded => Bound::Unbounded,
    };
    let kind = PatternKind::TermRange {
        lower: text_of(range.lower),
        upper: text_of(range.upper),
    };
    whole_values(field, kind)
}

/// The whole values of `field` that `kind` matches as written, case kept (a keyword's).
fn whole_values(field: &str, kind: PatternKind) -> Result<Query> {
    Ok(Query::Pattern {
        field: field.to_owned(),
        pattern: whole_value_pattern(field, kind)?,
        terms: TermKind::Exact,
    })
}

fn whole_value_pattern(field: &str, kind: PatternKind) -> Result<Arc<Pattern>> {
    let pattern = Pattern::as_written(kind, false)
        .map_err(|e| QueryError::Invalid(format!("field {field:?}: {}", e.0)))?;
    Ok(Arc::new(pattern).for_terms(TermKind::Exact))
}

/// The keys besides `@timestamp` a document may give its time under. A document sent through
/// the Elasticsearch API keeps such a key under its name too (quarry-server's live.rs): where
/// it is not mapped, a range on it is a range of dates (as Elasticsearch's dynamic date
/// detection maps a date string; an epoch number is read as the time it gave), answered from
/// the event's `_time`, the same instant, for the documents whose time it gave (their
/// `TIME_AS_SENT_FIELD` names it), and as any other field's range for the others.
pub const TIME_KEYS: [&str; 2] = ["timestamp", "time"];

/// A range of dates (in milliseconds) on the unmapped time key `field` (`TIME_KEYS`): the
/// events whose time it gave, by their time; the others as `otherwise`, the field's own range.
fn time_key_range(field: &str, range: NumericRange, otherwise: Query) -> Result<Query> {
    let nanos = |ms: i64| ms.saturating_mul(1_000_000);
    let start = match range.lower {
        Bound::Included(Number::Int(ms)) => nanos(ms),
        Bound::Excluded(Number::Int(ms)) => nanos(ms.saturating_add(1)),
        _ => i64::MIN,
    };
    let end = match range.upper {
        Bound::Included(Number::Int(ms)) => nanos(ms.saturating_add(1)),
        Bound::Excluded(Number::Int(ms)) => nanos(ms),
        _ => i64::MAX,
    };
    // The documents whose time the key gave: their time as sent is the key's name alone
    // (`"timestamp"`) or starts with it (`{"timestamp":...}`). Not the token `timestamp`:
    // `{"@timestamp":...}` holds that token too, and `@timestamp` is no such key.
    let key = serde_json::Value::from(field).to_string();
    let sent_here = Query::Any(vec![
        Query::Exact {
            field: TIME_AS_SENT_FIELD.to_owned(),
            value: key.clone(),
            tokens: Vec::new(),
        },
        Query::WholeValues {
            field: TIME_AS_SENT_FIELD.to_owned(),
            pattern: whole_value_pattern(
                TIME_AS_SENT_FIELD,
                PatternKind::Prefix(format!("{{{key}:")),
            )?,
            max_chars: None,
            long_values: true,
        },
    ]);
    Ok(Query::Any(vec![
        Query::Bool {
            must: vec![Query::TimeRange { start, end }, sent_here.clone()],
            should: Vec::new(),
            must_not: Vec::new(),
        },
        Query::Bool {
            must: vec![otherwise],
            should: Vec::new(),
            must_not: vec![sent_here],
        },
    ]))
}

/// A clause on a `constant_keyword` field: every event or none, as the field's one value
/// answers it (Elasticsearch's rewrite); `None` for any other clause.
fn constant_answer(ast: &Ast, schema: &Schema) -> Result<Option<Query>> {
    let mapping = schema.mapping();
    if mapping.constants.is_empty() {
        return Ok(None);
    }
    let constant = |field: &Option<String>| field.as_deref().and_then(|f| mapping.constant(f));
    let matches = match ast {
        Ast::Word { field, text } | Ast::Phrase { field, text, .. } => match constant(field) {
            Some(value) => value == text,
            None => return Ok(None),
        },
        Ast::Exact { field, value } | Ast::Token { field, value } => {
            match mapping.constant(field) {
                Some(constant) => constant == value,
                None => return Ok(None),
            }
        }
        Ast::Exists { field } if mapping.constant(field).is_some() => true,
        // A constant is one whole value: matched as keywords are, case kept.
        Ast::Pattern { field, pattern } => match constant(field) {
            Some(value) => pattern.for_terms(TermKind::Exact).matches(value),
            None => return Ok(None),
        },
        Ast::TypedRange {
            field,
            lower,
            upper,
            ..
        } => match mapping.constant(field) {
            Some(value) => {
                let kind = PatternKind::TermRange {
                    lower: lower.clone(),
                    upper: upper.clone(),
                };
                whole_value_pattern(field, kind)?.matches(value)
            }
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    Ok(Some(if matches { Query::All } else { Query::Nothing }))
}

/// The field a range or exists names.
fn field_of(ast: &Ast) -> Option<&str> {
    match ast {
        Ast::Range { field, .. } | Ast::TypedRange { field, .. } | Ast::Exists { field } => {
            Some(field)
        }
        _ => None,
    }
}

/// Whether `name` is an object of the mapping: a mapped field is under it.
fn is_mapped_object(schema: &Schema, name: &str) -> bool {
    let prefix = format!("{name}.");
    schema
        .mapping()
        .fields
        .keys()
        .any(|field| field.starts_with(&prefix) && !field.contains('*'))
}

fn date_reader(
    schema: &Schema,
    field: &str,
    ty: FieldType,
    format: Option<&str>,
    zone: Option<Zone>,
    now: i64,
) -> Result<DateReader> {
    let rules = schema
        .rules(field)
        .copied()
        .unwrap_or(FieldMapping::new(ty));
    DateReader::new(field, &rules, format, zone, now)
}

/// A value on a date field (every instant it names) or an ip field (an address or a CIDR
/// block), as a term, a word or a whole value.
fn typed_value(schema: &Schema, field: &str, ty: FieldType, text: &str) -> Result<Query> {
    if ty == FieldType::Ip {
        return Ok(match typed::ip_value(field, text)? {
            IpMatch::V4(range) => Query::IndexedRange {
                field: field.to_owned(),
                range,
            },
            IpMatch::V6(canonical) => Query::Exact {
                field: field.to_owned(),
                value: canonical,
                tokens: Vec::new(),
            },
        });
    }
    let reader = date_reader(schema, field, ty, None, None, time::now_nanos())?;
    Ok(Query::IndexedRange {
        field: field.to_owned(),
        range: reader.point(field, text)?,
    })
}

/// `ast` with each clause that cannot be planned over this schema (a value that does not fit
/// its field's type, a field that is not searchable) replaced by one that matches nothing
/// (`Ast::Lenient`).
fn lenient(ast: &Ast, schema: &Schema, text_fields: &[String]) -> Ast {
    match ast {
        Ast::Bool(clauses) => Ast::Bool(
            clauses
                .iter()
                .map(|(occur, clause)| (*occur, lenient(clause, schema, text_fields)))
                .collect(),
        ),
        Ast::AtLeast { minimum, clauses } => Ast::AtLeast {
            minimum: *minimum,
            clauses: clauses
                .iter()
                .map(|clause| lenient(clause, schema, text_fields))
                .collect(),
        },
        Ast::Boost { inner, boost } => Ast::Boost {
            inner: Box::new(lenient(inner, schema, text_fields)),
            boost: *boost,
        },
        Ast::Lenient(inner) => lenient(inner, schema, text_fields),
        Ast::Constant { inner, score } => Ast::Constant {
            inner: Box::new(lenient(inner, schema, text_fields)),
            score: *score,
        },
        Ast::Named { name, inner } => Ast::Named {
            name: name.clone(),
            inner: Box::new(lenient(inner, schema, text_fields)),
        },
        leaf => match plan(leaf, schema, text_fields) {
            Err(QueryError::Invalid(_)) => Ast::Bool(Vec::new()),
            _ => leaf.clone(),
        },
    }
}

/// `field = text` on a mapped number field. Its terms hold the values as the type reads them
/// (strings coerced, rounded to the type), its columns as sent.
fn number_equals(field: &str, text: &str) -> Result<Query> {
    // Past i64 the f64 terms are not exact; the decimal text is an exact term of its own.
    if let Some(big) = text
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|v| *v > i64::MAX as u64)
    {
        return Ok(Query::Exact {
            field: field.to_owned(),
            value: big.to_string(),
            tokens: Vec::new(),
        });
    }
    let number = Number::parse(text.trim()).ok_or_else(|| {
        QueryError::Invalid(format!(
            "field {field:?} is mapped as a number; {text:?} is not one"
        ))
    })?;
    Ok(Query::IndexedRange {
        field: field.to_owned(),
        range: NumericRange {
            lower: Bound::Included(number),
            upper: Bound::Included(number),
        },
    })
}

/// `field:="value"`: the value as the field's type reads it.
fn whole_value(schema: &Schema, field: &str, value: &str) -> Result<Query> {
    if schema.is_unindexed_unmapped(field) {
        return Ok(Query::Nothing);
    }
    match mapped(schema, field)? {
        Some(ty @ (FieldType::Date | FieldType::DateNanos | FieldType::Ip)) => {
            typed_value(schema, field, ty, value)
        }
        // A number's whole value is the number: `n:="2"` finds 2, 2.0 and "2".
        Some(FieldType::Number) => number_equals(field, value),
        _ => exact(schema, field, value),
    }
}

/// The whole value `value` of `field` (`Query::Exact`).
fn exact(schema: &Schema, field: &str, value: &str) -> Result<Query> {
    let kind = mapped(schema, field)?;
    let mut tokens = Vec::new();
    if value.len() > EXACT_TERM_LEN && kind != Some(FieldType::Keyword) {
        if schema.rules(field).is_some_and(|rules| !rules.stored) {
            return Err(QueryError::Invalid(format!(
                "field {field:?} is not stored (its mapping): an exact value longer than \
                 {EXACT_TERM_LEN} bytes is checked against the stored value"
            )));
        }
        tokens = schema
            .analyzer_for(field)
            .tokens(value)
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        tokens.sort_unstable();
        tokens.dedup();
    }
    Ok(Query::Exact {
        field: field.to_owned(),
        value: value.to_owned(),
        tokens,
    })
}

/// The document with id `value`: the one a client gave that `_id`, or the event whose
/// content id it is (doc_id.rs).
fn doc_id(schema: &Schema, value: &str) -> Result<Query> {
    let given = exact(schema, crate::doc_id::ID_FIELD, value)?;
    Ok(match crate::doc_id::parse_content_id(value) {
        Some((time, hash)) => Query::Any(vec![given, Query::ContentId { time, hash }]),
        None => given,
    })
}

/// A keyword view of a field's whole values (`X.keyword`, a keyword multi-field), as
/// `Mapping::whole_values` reads a name: the field, and the most characters a value the view
/// holds may have (its `ignore_above`).
#[derive(Debug, Clone, Copy)]
struct Whole<'f> {
    field: &'f str,
    max_chars: Option<u32>,
}

/// The keyword view `name` is, if it is one.
fn whole_view<'f>(schema: &Schema, name: &'f str) -> Option<Whole<'f>> {
    let (field, max_chars) = schema.mapping().whole_values(name)?;
    Some(Whole { field, max_chars })
}

impl Whole<'_> {
    fn holds(&self, value: &str) -> bool {
        self.max_chars
            .is_none_or(|limit| value.chars().count() <= limit as usize)
    }

    /// The view's value `value`: none when the view does not hold it.
    fn exact(&self, schema: &Schema, value: &str) -> Result<Query> {
        match self.holds(value) {
            true => whole_value(schema, self.field, value),
            false => Ok(no_match()),
        }
    }

    /// The view's values `pattern` matches (as written: `Pattern::for_terms`).
    fn matching(&self, schema: &Schema, pattern: Arc<Pattern>) -> Result<Query> {
        let field = self.field;
        if schema.is_unindexed_unmapped(field) {
            return Ok(Query::Nothing);
        }
        let long_values = match mapped(schema, field)? {
            // Every value has its exact term (up to the keyword's own `ignore_above`).
            Some(FieldType::Keyword) if self.max_chars.is_none() => {
                return Ok(Query::Pattern {
                    field: field.to_owned(),
                    pattern,
                    terms: TermKind::Exact,
                })
            }
            Some(FieldType::Keyword) => false,
            Some(FieldType::Text) | None => {
                if schema.rules(field).is_some_and(|rules| !rules.stored) {
                    return Err(QueryError::Invalid(format!(
                        "field {field:?} is not stored (its mapping): its whole values longer \
                         than {EXACT_TERM_LEN} bytes are read from the stored ones, so a \
                         pattern or range over them cannot be answered"
                    )));
                }
                // A value over EXACT_TERM_LEN bytes has more than a quarter as many chars.
                self.max_chars
                    .is_none_or(|limit| limit as usize * 4 > EXACT_TERM_LEN)
            }
            Some(_) => return Err(not_for_patterns(field)),
        };
        Ok(Query::WholeValues {
            field: field.to_owned(),
            pattern,
            max_chars: self.max_chars,
            long_values,
        })
    }
}

/// A query that matches nothing and, unlike `Query::Nothing`, is not dropped from a `Bool`
/// (a value a keyword view does not hold).
fn no_match() -> Query {
    Query::Any(Vec::new())
}

fn not_for_patterns(field: &str) -> QueryError {
    QueryError::Invalid(format!(
        "field {field:?}: prefix, wildcard, regex and fuzzy terms search text and keyword \
         fields; this one is mapped otherwise"
    ))
}

/// `per_field` of `field`, or of every text field (ORed) for a bare value.
fn over_fields(
    field: Option<&str>,
    text_fields: &[String],
    per_field: impl Fn(&str) -> Result<Query>,
) -> Result<Query> {
    match field {
        Some(field) => per_field(field),
        None => {
            let mut any = text_fields
                .iter()
                .map(|f| per_field(f))
                .filter(|q| !matches!(q, Ok(Query::Nothing)))
                .collect::<Result<Vec<Query>>>()?;
            Ok(match any.len() {
                0 => Query::Nothing,
                1 => any.pop().unwrap_or(Query::Nothing),
                _ => Query::Any(any),
            })
        }
    }
}

/// Refuses a field under a `nested` object: Quarry keeps those flattened, where
/// Elasticsearch answers them only inside a `nested` query, so a plain query would match
/// what Elasticsearch does not.
pub fn not_nested(schema: &Schema, field: &str) -> Result<()> {
    match schema.mapping().nested_parent(field) {
        Some(parent) => Err(QueryError::Invalid(format!(
            "field {field:?} is inside the nested object {parent:?}: Quarry keeps nested \
             objects flattened and does not search, aggregate or sort on their fields (nested \
             queries are not supported)"
        ))),
        None => Ok(()),
    }
}

/// The mapped type of `field` (`None`: dynamic), or an error if its mapping indexes nothing.
fn mapped(schema: &Schema, field: &str) -> Result<Option<FieldType>> {
    not_nested(schema, field)?;
    match schema.rules(field) {
        Some(rules) if !rules.ty.is_searchable() => Err(QueryError::Invalid(format!(
            "field {field:?} is mapped as {}: its values are kept, not indexed, so it cannot \
             be searched",
            rules.to_es_json()["type"]
        ))),
        Some(rules) if !rules.index => Err(QueryError::Invalid(format!(
            "field {field:?} is not indexed (its mapping says `index: false`), so it cannot \
             be searched"
        ))),
        Some(rules) => Ok(Some(rules.ty)),
        None => Ok(None),
    }
}

impl Query {
    /// Calls `f(field, term)` for every scored token (for collection statistics).
    pub fn for_each_term(&self, f: &mut impl FnMut(&str, &str)) {
        match self {
            Query::Term { field, term } => f(field, term),
            Query::Phrase { field, terms, .. } => terms.iter().for_each(|(_, t)| f(field, t)),
            other => other.clauses().for_each(|c| c.for_each_term(f)),
        }
    }

    /// Calls `f(field, value, tokens)` for every whole value that is scored (an `Exact` not
    /// under a `Constant`, which replaces its scores).
    pub fn for_each_scored_exact(&self, f: &mut impl FnMut(&str, &str, &[String])) {
        match self {
            Query::Exact {
                field,
                value,
                tokens,
            } => f(field, value, tokens),
            Query::Constant { .. } => {}
            other => other.clauses().for_each(|c| c.for_each_scored_exact(f)),
        }
    }

    /// The sub-queries of `Any`, `AtLeast`, `Boost`, `Constant` and `Bool`; none for a leaf.
    fn clauses(&self) -> impl Iterator<Item = &Query> {
        let (first, second, third): (&[Query], &[Query], &[Query]) = match self {
            Query::Any(clauses) | Query::AtLeast { clauses, .. } => (clauses, &[], &[]),
            Query::Boost { inner, .. } | Query::Constant { inner, .. } => {
                (std::slice::from_ref(&**inner), &[], &[])
            }
            Query::Bool {
                must,
                should,
                must_not,
            } => (must, should, must_not),
            _ => (&[], &[], &[]),
        };
        first.iter().chain(second).chain(third)
    }
}

impl Query {
    /// Every field the query names (bare words name the text fields they were expanded to).
    pub fn field_names(&self) -> std::collections::BTreeSet<&str> {
        let mut names = std::collections::BTreeSet::new();
        self.collect_field_names(&mut names);
        names
    }

    fn collect_field_names<'q>(&'q self, names: &mut std::collections::BTreeSet<&'q str>) {
        match self {
            Query::Term { field, .. }
            | Query::Phrase { field, .. }
            | Query::Exact { field, .. }
            | Query::Pattern { field, .. }
            | Query::WholeValues { field, .. }
            | Query::Intervals { field, .. }
            | Query::Range { field, .. }
            | Query::IndexedRange { field, .. }
            | Query::Exists { field } => {
                names.insert(field);
            }
            Query::TimeRange { .. } => {
                names.insert(TIME_FIELD);
            }
            // The time, and the stored fields it hashes (not named: any may be there).
            Query::ContentId { .. } => {
                names.insert(TIME_FIELD);
            }
            other => other.clauses().for_each(|c| c.collect_field_names(names)),
        }
    }

    /// The terms whose postings this query's scorers read in `block` (with their positions
    /// for phrases), found in its dictionary: a remote block fetches them as one batch before
    /// the scorers are made (`Searcher::prefetch`). Terms of patterns, ranges and the like
    /// are fetched as their scorers reach them.
    pub fn terms_in(
        &self,
        block: &quarry_format::BlockReader,
        out: &mut Vec<(quarry_format::postings::TermInfo, bool)>,
    ) -> Result<()> {
        let mut find = |field: &str, kind: TermKind, term: &[u8], positions: bool| {
            let Some(ordinal) = block.field_ordinal(field) else {
                return Ok(());
            };
            if let Some(info) = block.term_info(ordinal, kind, term)? {
                out.push((info, positions));
            }
            Ok::<(), QueryError>(())
        };
        match self {
            Query::Term { field, term } => find(field, TermKind::Token, term.as_bytes(), false)?,
            Query::Phrase { field, terms, .. } => {
                for (_, term) in terms {
                    find(field, TermKind::Token, term.as_bytes(), true)?;
                }
            }
            Query::Exact {
                field,
                value,
                tokens,
            } => {
                if tokens.is_empty() {
                    find(field, TermKind::Exact, value.as_bytes(), false)?;
                }
                for token in tokens {
                    find(field, TermKind::Token, token.as_bytes(), false)?;
                }
            }
            other => {
                for clause in other.clauses() {
                    clause.terms_in(block, out)?;
                }
            }
        }
        Ok(())
    }

    /// `self AND _time in [start, end)`; the time clause is a filter (it scores nothing).
    pub fn within(self, start: i64, end: i64) -> Query {
        if start == i64::MIN && end == i64::MAX {
            return self;
        }
        let time = Query::TimeRange { start, end };
        match self {
            Query::Nothing => Query::Nothing,
            Query::All => time,
            Query::Bool {
                mut must,
                should,
                must_not,
            } if !must.is_empty() => {
                must.push(time);
                Query::Bool {
                    must,
                    should,
                    must_not,
                }
            }
            other => Query::Bool {
                must: vec![other, time],
                should: Vec::new(),
                must_not: Vec::new(),
            },
        }
    }

    /// The same matches without what only scores them (`Constant`, `Boost`), for searches
    /// that score nothing (counts, aggregations, time sorts), which then see the structure
    /// their shortcuts look for (a bare time range, `All`).
    pub fn unscored(&self) -> Query {
        let all = |clauses: &[Query]| clauses.iter().map(Query::unscored).collect();
        match self {
            Query::Constant { inner, .. } | Query::Boost { inner, .. } => inner.unscored(),
            Query::Any(clauses) => Query::Any(all(clauses)),
            Query::AtLeast { clauses, minimum } => Query::AtLeast {
                clauses: all(clauses),
                minimum: *minimum,
            },
            Query::Bool {
                must,
                should,
                must_not,
            } => Query::Bool {
                must: all(must),
                should: all(should),
                must_not: all(must_not),
            },
            leaf => leaf.clone(),
        }
    }

    /// The time range this query is limited to by required `_time` clauses, and whether
    /// anything else filters (false: every event in the range matches).
    pub fn time_bounds(&self) -> ((i64, i64), bool) {
        match self {
            Query::All => ((i64::MIN, i64::MAX), false),
            // Scores only: the same matches.
            Query::Constant { inner, .. } | Query::Boost { inner, .. } => inner.time_bounds(),
            Query::TimeRange { start, end } => ((*start, *end), false),
            Query::Bool {
                must,
                should,
                must_not,
            } if should.is_empty() && must_not.is_empty() => {
                let mut bounds = (i64::MIN, i64::MAX);
                let mut filtered = false;
                for clause in must {
                    let ((start, end), other) = clause.time_bounds();
                    bounds = (bounds.0.max(start), bounds.1.min(end));
                    filtered |= other;
                }
                (bounds, filtered)
            }
            _ => ((i64::MIN, i64::MAX), true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::PatternKind;
    use quarry_format::{BlockReader, Value, TERMINATED};
    use quarry_store::mapping::Mapping;

    fn schema(mapped: &[(&str, FieldType)]) -> Schema {
        let mut mapping = Mapping::default();
        for (name, ty) in mapped {
            mapping
                .fields
                .insert((*name).to_owned(), FieldMapping::new(*ty));
        }
        Schema::new(Arc::new(quarry_index::Analyzer::default()), mapping)
    }

    fn exact(field: &str, value: &str) -> Query {
        Query::Exact {
            field: field.to_owned(),
            value: value.to_owned(),
            tokens: Vec::new(),
        }
    }

    fn point(field: &str, n: i64) -> Query {
        Query::Range {
            field: field.to_owned(),
            range: NumericRange {
                lower: Bound::Included(Number::Int(n)),
                upper: Bound::Included(Number::Int(n)),
            },
        }
    }

    /// `Web-0*` as the DSL builds it: lowercased for tokens, as written for whole values.
    fn web_prefix(field: &str) -> Ast {
        Ast::Pattern {
            field: Some(field.to_owned()),
            pattern: Arc::new(
                Pattern::as_written(PatternKind::Prefix("Web-0".into()), false).unwrap(),
            ),
        }
    }

    /// The field, term kind and pattern (as written) of a planned pattern.
    fn pattern_of(query: &Query) -> (&str, TermKind, String) {
        match query {
            Query::Constant { inner, score } if *score == 1.0 => pattern_of(inner),
            Query::Pattern {
                field,
                pattern,
                terms,
            } => (field, *terms, pattern.to_string()),
            Query::WholeValues { field, pattern, .. } => {
                (field, TermKind::Exact, pattern.to_string())
            }
            other => panic!("not a pattern: {other:?}"),
        }
    }

    #[test]
    fn keyword_subfields_are_whole_values() {
        let dynamic = schema(&[]);
        let word = |field: &str, text: &str| Ast::Word {
            field: Some(field.to_owned()),
            text: text.to_owned(),
        };
        let plan = |ast: &Ast, schema: &Schema| plan(ast, schema, &[]).unwrap();
        assert_eq!(
            plan(&word("host.keyword", "Web-07"), &dynamic),
            exact("host", "Web-07")
        );
        let phrase = Ast::Phrase {
            field: Some("host.keyword".into()),
            text: "disk full".into(),
            slop: 0,
        };
        assert_eq!(plan(&phrase, &dynamic), exact("host", "disk full"));
        let whole = Ast::Exact {
            field: "host.keyword".into(),
            value: "500".into(),
        };
        assert_eq!(plan(&whole, &dynamic), exact("host", "500"));
        let cases = [
            (
                "host.keyword",
                &dynamic,
                ("host", TermKind::Exact, "Web-0*"),
            ),
            ("host", &dynamic, ("host", TermKind::Token, "web-0*")),
        ];
        for (field, schema, want) in cases {
            let query = plan(&web_prefix(field), schema);
            let (field, terms, pattern) = pattern_of(&query);
            assert_eq!((field, terms, pattern.as_str()), want);
        }
        // A dynamic field's longer values have no exact term: read from its column, up to
        // Elasticsearch's dynamic `ignore_above`.
        assert!(matches!(
            plan(&web_prefix("host.keyword"), &dynamic),
            Query::Constant { inner, .. } if matches!(*inner, Query::WholeValues {
                max_chars: Some(256),
                long_values: true,
                ..
            })
        ));
        // A field mapped `keyword` holds whole values; a field named `x.keyword` is itself.
        let mapped = schema(&[("host", FieldType::Keyword), ("x.keyword", FieldType::Text)]);
        let query = plan(&web_prefix("host"), &mapped);
        assert_eq!(
            pattern_of(&query),
            ("host", TermKind::Exact, "Web-0*".into())
        );
        let query = plan(&web_prefix("x.keyword"), &mapped);
        assert_eq!(
            pattern_of(&query),
            ("x.keyword", TermKind::Token, "web-0*".into())
        );
        assert!(matches!(
            plan(&word("x.keyword", "a"), &mapped),
            Query::Term { .. }
        ));
    }

    /// A DSL `term` string that spells a number matches the string or the number (on a field
    /// mapped as a number, the number in its terms); a boolean, the whole value.
    #[test]
    fn term_strings_that_spell_numbers_match_numbers() {
        let term = |value: serde_json::Value, schema: &Schema| {
            let dsl = serde_json::json!({"term": {"status": value}});
            let ast = crate::dsl::compile(&dsl, "query", 0).unwrap();
            plan(&ast, schema, &[]).unwrap()
        };
        // A string of an unmapped field is text (Elasticsearch maps it so): one token.
        let token = |value: &str| Query::Term {
            field: "status".into(),
            term: value.into(),
        };
        let either = |n: i64| Query::Bool {
            must: Vec::new(),
            should: vec![token(&n.to_string()), point("status", n)],
            must_not: Vec::new(),
        };
        let dynamic = schema(&[]);
        assert_eq!(term("500".into(), &dynamic), either(500));
        assert_eq!(term("5xx".into(), &dynamic), token("5xx"));
        assert_eq!(term("5 xx".into(), &dynamic), Query::Nothing);
        assert_eq!(term(500.into(), &dynamic), point("status", 500));
        // A mapped number field is searched in its terms, which hold strings coerced.
        let numbers = schema(&[("status", FieldType::Number)]);
        let Query::Range { field, range } = point("status", 500) else {
            unreachable!()
        };
        let indexed = Query::IndexedRange { field, range };
        assert_eq!(term("500".into(), &numbers), indexed);
        assert_eq!(term(500.into(), &numbers), indexed);
        assert_eq!(term(true.into(), &dynamic), exact("status", "true"));
    }

    /// A dynamic field holds a boolean as a token, as a string holds a word: `:="true"`
    /// matches the boolean and the whole string `true`, never `it is true`.
    #[test]
    fn exact_true_matches_booleans_not_words() {
        let values = [
            Value::Bool(true),
            Value::Str("true".into()),
            Value::Str("it is true".into()),
            Value::Bool(false),
            Value::Str("false".into()),
        ];
        let mut segment =
            quarry_index::SegmentBuilder::new(Arc::new(quarry_index::Analyzer::default()));
        for (i, value) in values.iter().enumerate() {
            segment.add_event(i as i64, [("flag", value)]);
        }
        let path = std::path::Path::new("/flags/00000001.qblk");
        let (_, bytes) = segment.encode_block(path).unwrap();
        let block = Arc::new(BlockReader::from_bytes(path, Arc::new(bytes)).unwrap());
        let docs = |value: &str| {
            let ast = Ast::Exact {
                field: "flag".into(),
                value: value.into(),
            };
            let query = plan(&ast, &schema(&[]), &[]).unwrap();
            let blocks = [block.clone()];
            let stats = crate::weight::CollectionStats::unscored(&query, &blocks);
            let weight = crate::weight::Weight::new(
                &query,
                &stats,
                crate::bm25::Bm25Params::default(),
                crate::filter::Optimizations::ALL,
            );
            assert!(
                weight.single_postings(0, &block).unwrap().is_none(),
                "the exact term's postings are not all of {value:?}"
            );
            let mut docs = Vec::new();
            if let Some(mut scorer) = weight.scorer(0, &block).unwrap() {
                while scorer.doc() != TERMINATED {
                    docs.push(scorer.doc());
                    scorer.advance();
                }
            }
            docs
        };
        assert_eq!(docs("true"), [0, 1]);
        assert_eq!(docs("false"), [3, 4]);
    }
}
