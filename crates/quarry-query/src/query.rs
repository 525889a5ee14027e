//! Analyzed queries: the parser's `Ast` with its text run through the analyzer and bare words
//! expanded over the text fields.

use crate::parser::{Ast, Occur};
use quarry_index::Analyzer;

#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// One token in one field.
    Term {
        field: String,
        term: String,
    },
    /// Tokens at fixed relative positions in one field.
    Phrase {
        field: String,
        terms: Vec<(u32, String)>,
    },
    /// A whole string value, byte for byte.
    Exact {
        field: String,
        value: String,
    },
    /// Matches when any clause matches; the score is the sum of the matching clauses' scores
    /// (a bare word over several fields, as Lucene's MultiFieldQueryParser builds it).
    Any(Vec<Query>),
    Bool {
        must: Vec<Query>,
        should: Vec<Query>,
        must_not: Vec<Query>,
    },
    All,
    /// Matches nothing (a word that analyzes to no tokens, or a `Bool` left without clauses).
    Nothing,
}

/// Analyzes `ast`; `text_fields` are the fields bare words search.
pub fn plan(ast: &Ast, analyzer: &Analyzer, text_fields: &[String]) -> Query {
    match ast {
        Ast::Word { field, text } | Ast::Phrase { field, text } => {
            let tokens = analyzer.tokens(text);
            if tokens.is_empty() {
                return Query::Nothing;
            }
            let per_field = |field: &str| {
                if tokens.len() == 1 {
                    Query::Term {
                        field: field.to_owned(),
                        term: tokens[0].1.clone(),
                    }
                } else {
                    Query::Phrase {
                        field: field.to_owned(),
                        terms: tokens.clone(),
                    }
                }
            };
            match field {
                Some(field) => per_field(field),
                None => match text_fields {
                    [] => Query::Nothing,
                    [only] => per_field(only),
                    many => Query::Any(many.iter().map(|f| per_field(f)).collect()),
                },
            }
        }
        Ast::Exact { field, value } => Query::Exact {
            field: field.clone(),
            value: value.clone(),
        },
        Ast::All => Query::All,
        Ast::Bool(clauses) => {
            let (mut must, mut should, mut must_not) = (Vec::new(), Vec::new(), Vec::new());
            for (occur, clause) in clauses {
                let query = plan(clause, analyzer, text_fields);
                match (occur, query) {
                    // A clause that analyzes to no token is dropped, required or not, as
                    // Lucene's query parser drops it (`+© +ndi` means `+ndi`).
                    (_, Query::Nothing) => {}
                    (Occur::Must, q) => must.push(q),
                    (Occur::Should, q) => should.push(q),
                    (Occur::MustNot, q) => must_not.push(q),
                }
            }
            if must.is_empty() && should.is_empty() {
                if must_not.is_empty() {
                    return Query::Nothing;
                }
                must.push(Query::All);
            }
            if must_not.is_empty() && must.is_empty() && should.len() == 1 {
                return should.pop().unwrap_or(Query::Nothing);
            }
            if must_not.is_empty() && should.is_empty() && must.len() == 1 {
                return must.pop().unwrap_or(Query::Nothing);
            }
            Query::Bool {
                must,
                should,
                must_not,
            }
        }
    }
}

impl Query {
    /// Calls `f(field, term)` for every scored token (for collection statistics).
    pub fn for_each_term(&self, f: &mut impl FnMut(&str, &str)) {
        match self {
            Query::Term { field, term } => f(field, term),
            Query::Phrase { field, terms } => terms.iter().for_each(|(_, t)| f(field, t)),
            Query::Any(clauses) => clauses.iter().for_each(|c| c.for_each_term(f)),
            Query::Bool {
                must,
                should,
                must_not,
            } => must
                .iter()
                .chain(should)
                .chain(must_not)
                .for_each(|c| c.for_each_term(f)),
            Query::Exact { .. } | Query::All | Query::Nothing => {}
        }
    }
}
