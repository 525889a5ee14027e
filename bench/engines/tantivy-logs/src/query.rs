//! The protocol's query language ([`logs_driver::protocol::Filter`]) as tantivy queries.
//!
//! | clause | tantivy query |
//! |---|---|
//! | `*` | `AllQuery` |
//! | word, `message:w`, `path:w` | the word through the field's analyzer: one token → `TermQuery`, several → `PhraseQuery`, none → `EmptyQuery` |
//! | `keyword:v` | `TermQuery` on the value through the keyword analyzer (lowercased) |
//! | `integer:v` | `TermQuery` on the i64 term (inverted index) |
//! | `integer:[lo TO hi]`, `_time:[lo TO hi]` | `RangeQuery`, which tantivy runs on the fast field (column) |
//! | `_time:v` | `RangeQuery` `[v, v]`: tantivy indexes dates in the inverted index at second precision only, the column keeps milliseconds |
//! | wildcard `tim*`, `*eout`, `t?me` on a text field | `RegexQuery` of the wildcard (`*` → `.*`, `?` → `.`): tantivy has no wildcard query |
//! | `/regex/` | `RegexQuery`, the regex as written |
//! | `word~N` | `FuzzyTermQuery` with `transposition_cost_one` (Damerau, as Lucene and Quarry count) |
//!
//! Several clauses are a `BooleanQuery` of `Must` clauses. Nothing is scored: every collector
//! the server uses orders by a column or counts.

use std::ops::Bound;

use anyhow::Context;
use logs_driver::protocol::{Clause, Filter, Pattern};
use logs_driver::schema::TIME;
use tantivy::query::{
    AllQuery, BooleanQuery, EmptyQuery, FuzzyTermQuery, Occur, PhraseQuery, Query, RangeQuery,
    RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DateTime, Index, Term};

use crate::schema::Fields;

pub fn build(index: &Index, fields: &Fields, filter: &Filter) -> anyhow::Result<Box<dyn Query>> {
    let mut clauses = filter
        .clauses
        .iter()
        .map(|clause| build_clause(index, fields, clause))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(match clauses.len() {
        0 => Box::new(AllQuery),
        1 => clauses.remove(0),
        _ => Box::new(BooleanQuery::new(
            clauses.into_iter().map(|q| (Occur::Must, q)).collect(),
        )),
    })
}

fn build_clause(index: &Index, fields: &Fields, clause: &Clause) -> anyhow::Result<Box<dyn Query>> {
    let field = |name: &str| {
        fields
            .get(name)
            .with_context(|| format!("no field {name:?}"))
    };
    Ok(match clause {
        Clause::Word { field: name, word } => analyzed(index, field(name)?, word)?,
        Clause::Keyword { field: name, value } => analyzed(index, field(name)?, value)?,
        Clause::Pattern {
            field: name,
            pattern,
        } => {
            let field = field(name)?;
            match pattern {
                Pattern::Wildcard(wildcard) => Box::new(RegexQuery::from_pattern(
                    &Pattern::wildcard_regex(wildcard),
                    field,
                )?),
                Pattern::Regex(regex) => Box::new(RegexQuery::from_pattern(regex, field)?),
                Pattern::Fuzzy { term, distance } => Box::new(FuzzyTermQuery::new(
                    Term::from_field_text(field, term),
                    *distance,
                    true,
                )),
            }
        }
        Clause::Equals { field: name, value } if name == TIME => {
            time_range(field(name)?, *value, *value)
        }
        Clause::Equals { field: name, value } => Box::new(TermQuery::new(
            Term::from_field_i64(field(name)?, *value),
            IndexRecordOption::Basic,
        )),
        Clause::Range {
            field: name,
            lo,
            hi,
        } if name == TIME => time_range(field(name)?, *lo, *hi),
        Clause::Range {
            field: name,
            lo,
            hi,
        } => {
            let field = field(name)?;
            Box::new(RangeQuery::new(
                Bound::Included(Term::from_field_i64(field, *lo)),
                Bound::Included(Term::from_field_i64(field, *hi)),
            ))
        }
    })
}

fn time_range(field: Field, lo: i64, hi: i64) -> Box<dyn Query> {
    let term = |millis| Term::from_field_date(field, DateTime::from_timestamp_millis(millis));
    Box::new(RangeQuery::new(
        Bound::Included(term(lo)),
        Bound::Included(term(hi)),
    ))
}

/// The text through the field's analyzer, as the indexed values went through it.
fn analyzed(index: &Index, field: Field, text: &str) -> anyhow::Result<Box<dyn Query>> {
    let mut analyzer = index.tokenizer_for_field(field)?;
    let mut stream = analyzer.token_stream(text);
    let mut terms: Vec<(usize, Term)> = Vec::new();
    while stream.advance() {
        let token = stream.token();
        terms.push((token.position, Term::from_field_text(field, &token.text)));
    }
    Ok(match terms.len() {
        0 => Box::new(EmptyQuery),
        1 => Box::new(TermQuery::new(terms.remove(0).1, IndexRecordOption::Basic)),
        _ => Box::new(PhraseQuery::new_with_offset(terms)),
    })
}
