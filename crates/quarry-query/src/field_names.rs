//! The fields a query names, resolved before it is planned (`Searcher::plan`):
//!
//! - a text multi-field of the mapping (`title.fvh`; `quarry_store::mapping::MultiField`)
//!   is a view of its parent's own index, answered as the parent (a keyword multi-field,
//!   `title.raw`, keeps its name: the planner reads it as the parent's whole values up to its
//!   `ignore_above`, query.rs);
//! - a name with `*` (`fields: ["title*"]` in a `multi_match` or a `query_string`, as
//!   Elasticsearch allows) is every known field it matches, each asked on its own and the
//!   answers ORed. A pattern that matches no field is left as written, so that it matches
//!   nothing (an empty OR would be dropped from a `bool`, and match more).

use crate::parser::{Ast, Occur};
use quarry_store::mapping::{glob_matches, Mapping, MultiField};
use std::collections::BTreeSet;

/// `ast` with every field name resolved over `mapping` and the `known` field names (those of
/// the blocks; asked only when a pattern is named). `None`: nothing to resolve.
pub fn resolve(
    ast: &Ast,
    mapping: &Mapping,
    known: impl FnOnce() -> BTreeSet<String>,
) -> Option<Ast> {
    // Only a query that names a pattern or a multi-field is rewritten (and copied).
    let (mut pattern, mut multi) = (false, false);
    visit_fields(ast, &mut |field| {
        pattern |= field.contains('*');
        multi |= matches!(
            mapping.multi_field(field),
            Some((_, MultiField::Tokens { .. }))
        );
    });
    if !pattern && !multi {
        return None;
    }
    let known = match pattern {
        true => {
            let mut known = known();
            let mapped = mapping.fields.keys().filter(|name| !name.contains('*'));
            known.extend(mapped.chain(mapping.multi_fields.keys()).cloned());
            known
        }
        false => BTreeSet::new(),
    };
    Some(rewrite(ast, &|name: &str| names_for(name, mapping, &known)))
}

/// What `name` stands for: the fields a pattern matches (each resolved), or the parent that
/// answers a text multi-field.
fn names_for(name: &str, mapping: &Mapping, known: &BTreeSet<String>) -> Vec<String> {
    let one = |name: &str| match mapping.multi_field(name) {
        Some((parent, MultiField::Tokens { .. })) => parent.to_owned(),
        _ => name.to_owned(),
    };
    if !name.contains('*') {
        return vec![one(name)];
    }
    let matched: BTreeSet<String> = known
        .iter()
        .filter(|known| glob_matches(name, known))
        .map(|known| one(known))
        .collect();
    if matched.is_empty() {
        vec![name.to_owned()]
    } else {
        matched.into_iter().collect()
    }
}

fn visit_fields(ast: &Ast, see: &mut impl FnMut(&str)) {
    match ast {
        Ast::Bool(clauses) => clauses.iter().for_each(|(_, c)| visit_fields(c, see)),
        Ast::AtLeast { clauses, .. } => clauses.iter().for_each(|c| visit_fields(c, see)),
        Ast::Boost { inner, .. }
        | Ast::Constant { inner, .. }
        | Ast::Lenient(inner)
        | Ast::Named { inner, .. } => visit_fields(inner, see),
        other => {
            if let Some(field) = own_field(other) {
                see(field)
            }
        }
    }
}

/// The field a leaf clause names itself (bare words name none).
fn own_field(ast: &Ast) -> Option<&str> {
    match ast {
        Ast::Word { field, .. } | Ast::Phrase { field, .. } | Ast::Pattern { field, .. } => {
            field.as_deref()
        }
        Ast::Exact { field, .. }
        | Ast::Token { field, .. }
        | Ast::Range { field, .. }
        | Ast::TypedRange { field, .. }
        | Ast::Exists { field }
        | Ast::Match { field, .. }
        | Ast::Intervals { field, .. } => Some(field),
        Ast::BoolPrefix(query) => query.field.as_deref(),
        _ => None,
    }
}

/// `ast` with each leaf's field replaced by the `names` it stands for (several: ORed).
fn rewrite(ast: &Ast, names: &impl Fn(&str) -> Vec<String>) -> Ast {
    let inner = |inner: &Ast| Box::new(rewrite(inner, names));
    match ast {
        Ast::Bool(clauses) => Ast::Bool(
            clauses
                .iter()
                .map(|(occur, clause)| (*occur, rewrite(clause, names)))
                .collect(),
        ),
        Ast::AtLeast { minimum, clauses } => Ast::AtLeast {
            minimum: *minimum,
            clauses: clauses.iter().map(|c| rewrite(c, names)).collect(),
        },
        Ast::Boost { inner: i, boost } => Ast::Boost {
            inner: inner(i),
            boost: *boost,
        },
        Ast::Constant { inner: i, score } => Ast::Constant {
            inner: inner(i),
            score: *score,
        },
        Ast::Lenient(i) => Ast::Lenient(inner(i)),
        Ast::Named { name, inner: i } => Ast::Named {
            name: name.clone(),
            inner: inner(i),
        },
        leaf => {
            let Some(field) = own_field(leaf) else {
                return leaf.clone();
            };
            let mut each: Vec<Ast> = names(field)
                .into_iter()
                .map(|name| {
                    let mut renamed = leaf.clone();
                    rename(&mut renamed, field, &name);
                    renamed
                })
                .collect();
            match each.len() {
                1 => each.pop().unwrap_or_else(|| leaf.clone()),
                _ => Ast::Bool(each.into_iter().map(|a| (Occur::Should, a)).collect()),
            }
        }
    }
}

/// `ast` with field `from` named `to` wherever it is named (a `match` names its field in its
/// words too).
fn rename(ast: &mut Ast, from: &str, to: &str) {
    let set = |field: &mut String| {
        if field == from {
            *field = to.to_owned();
        }
    };
    match ast {
        Ast::Word { field, .. } | Ast::Phrase { field, .. } | Ast::Pattern { field, .. } => {
            if let Some(field) = field {
                set(field)
            }
        }
        Ast::Exact { field, .. }
        | Ast::Token { field, .. }
        | Ast::Range { field, .. }
        | Ast::Exists { field }
        | Ast::Intervals { field, .. } => set(field),
        Ast::TypedRange {
            field, otherwise, ..
        } => {
            set(field);
            rename(otherwise, from, to);
        }
        Ast::Match { field, words, .. } => {
            set(field);
            rename(words, from, to);
        }
        Ast::BoolPrefix(query) => {
            if let Some(field) = &mut query.field {
                set(field)
            }
        }
        Ast::Bool(clauses) => clauses.iter_mut().for_each(|(_, c)| rename(c, from, to)),
        Ast::AtLeast { clauses, .. } => clauses.iter_mut().for_each(|c| rename(c, from, to)),
        Ast::Boost { inner, .. }
        | Ast::Constant { inner, .. }
        | Ast::Lenient(inner)
        | Ast::Named { inner, .. } => rename(inner, from, to),
        Ast::All => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;

    fn mapping() -> Mapping {
        Mapping::from_json(
            r#"{"properties": {"title": {"type": "text", "fields": {
                "raw": {"type": "keyword"}, "fvh": {"type": "text"},
                "short": {"type": "keyword", "ignore_above": 5}
            }}}}"#,
        )
        .unwrap()
    }

    fn resolved(query: &str) -> String {
        let ast = parse(query).unwrap();
        let in_blocks = || BTreeSet::from(["body".to_owned(), "title".to_owned()]);
        resolve(&ast, &mapping(), in_blocks)
            .unwrap_or(ast)
            .to_string()
    }

    #[test]
    fn text_multi_fields_are_answered_by_their_parents() {
        assert_eq!(
            resolved("title.fvh:fox"),
            parse("title:fox").unwrap().to_string()
        );
        assert_eq!(
            resolved("_exists_:title.fvh"),
            parse("_exists_:title").unwrap().to_string()
        );
        // Keyword multi-fields keep their names: the planner reads them (query.rs).
        for kept in [
            "title.raw:=\"The fox\"",
            "_exists_:title.short",
            "other.raw:x",
        ] {
            assert_eq!(resolved(kept), parse(kept).unwrap().to_string());
        }
    }

    #[test]
    fn patterns_are_every_field_they_match() {
        // As a DSL `multi_match` over `fields: ["title*"]` writes it.
        let word = |field: &str| Ast::Word {
            field: Some(field.into()),
            text: "fox".into(),
        };
        let resolve_word = |field: &str| {
            let in_blocks = || BTreeSet::from(["body".to_owned(), "title".to_owned()]);
            resolve(&word(field), &mapping(), in_blocks)
                .unwrap()
                .to_string()
        };
        // `title*` is title, title.fvh (title again), title.raw and title.short (its whole
        // values).
        assert_eq!(
            resolve_word("title*"),
            parse("title:fox OR title.raw:fox OR title.short:fox")
                .unwrap()
                .to_string()
        );
        assert_eq!(resolve_word("b*"), parse("body:fox").unwrap().to_string());
        assert_eq!(resolve_word("nothing*"), word("nothing*").to_string());
    }
}
