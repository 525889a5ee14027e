//! A search body's `suggest`: Elasticsearch's term, phrase and completion suggesters.
//!
//! The term and phrase suggesters correct a text from a field's terms (quarry-query's
//! `suggest.rs`, whose module doc gives the models). The completion suggester completes a
//! prefix from a `completion` field's inputs: every input starting with the prefix, case
//! aside (the `simple` analyzer's reading), one option per document, ordered by the input
//! (each input weighs 1; inputs with weights are not supported), then newest first; `size`
//! (5) options, `skip_duplicates` one per input. Every other option of a suggester is
//! refused by name.

use crate::es_hits::{HitView, QueryWords};
use crate::{event_json, ApiError};
use quarry_format::TermKind;
use quarry_query::parser::Ast;
use quarry_query::pattern::{Pattern, PatternKind};
use quarry_query::suggest::{PhraseOptions, SuggestMode, TermOptions};
use quarry_query::{SearchRequest, Searcher, SortOrder};
use serde_json::{json, Map, Value as JsonValue};
use std::collections::{BTreeSet, HashSet};

/// The suggesters of one search body, by name, in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Suggest {
    suggesters: Vec<(String, Suggester)>,
}

#[derive(Clone, Debug)]
enum Suggester {
    Term {
        text: String,
        options: TermOptions,
    },
    Phrase {
        text: String,
        options: PhraseOptions,
    },
    Completion {
        prefix: String,
        field: String,
        size: usize,
        skip_duplicates: bool,
    },
}

impl Suggester {
    fn kind(&self) -> &'static str {
        match self {
            Suggester::Term { .. } => "term",
            Suggester::Phrase { .. } => "phrase",
            Suggester::Completion { .. } => "completion",
        }
    }
}

fn bad(message: String) -> ApiError {
    ApiError::bad_request(message)
}

fn string(value: &JsonValue, path: &str) -> Result<String, ApiError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| bad(format!("{path}: expected a string")))
}

fn number(value: &JsonValue, path: &str) -> Result<f64, ApiError> {
    let number = match value {
        JsonValue::String(text) => text.parse().ok(),
        other => other.as_f64(),
    };
    number
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| bad(format!("{path}: expected a number")))
}

fn count(value: &JsonValue, path: &str) -> Result<usize, ApiError> {
    let n = number(value, path)?;
    match n.fract() == 0.0 {
        true => Ok(n as usize),
        false => Err(bad(format!("{path}: expected a whole number"))),
    }
}

impl Suggest {
    pub(crate) fn is_empty(&self) -> bool {
        self.suggesters.is_empty()
    }

    /// Reads a body's `suggest`.
    pub(crate) fn parse(value: &JsonValue) -> Result<Suggest, ApiError> {
        let object = value
            .as_object()
            .ok_or_else(|| bad("suggest: expected an object of suggesters".into()))?;
        let global = match object.get("text") {
            Some(text) => Some(string(text, "suggest.text")?),
            None => None,
        };
        let mut suggesters = Vec::new();
        for (name, body) in object.iter().filter(|(name, _)| *name != "text") {
            let path = format!("suggest.{name}");
            let body = body
                .as_object()
                .ok_or_else(|| bad(format!("{path}: expected a suggester")))?;
            let mut text = global.clone();
            let mut prefix = None;
            let mut suggester = None;
            for (key, value) in body {
                let at = format!("{path}.{key}");
                match key.as_str() {
                    "text" => text = Some(string(value, &at)?),
                    "prefix" => prefix = Some(string(value, &at)?),
                    "term" | "phrase" | "completion" if suggester.is_none() => {
                        suggester = Some((key.as_str(), value))
                    }
                    "term" | "phrase" | "completion" => {
                        return Err(bad(format!("{path}: one suggester type per suggestion")))
                    }
                    other => return Err(bad(format!("unsupported: {path}.{other}"))),
                }
            }
            let Some((kind, options)) = suggester else {
                return Err(bad(format!(
                    "{path}: expected a term, phrase or completion suggester"
                )));
            };
            let options = options
                .as_object()
                .ok_or_else(|| bad(format!("{path}.{kind}: expected an object")))?;
            let at = format!("{path}.{kind}");
            check_options(kind, options, &at)?;
            let field = options
                .get("field")
                .ok_or_else(|| bad(format!("{at}: a suggester needs its `field`")))
                .and_then(|f| string(f, &format!("{at}.field")))?;
            let field = quarry_query::dsl::field_name(&field).to_owned();
            let read = match kind {
                "completion" => Suggester::Completion {
                    prefix: prefix.or(text).ok_or_else(|| {
                        bad(format!("{path}: the completion suggester needs a `prefix`"))
                    })?,
                    field,
                    size: match options.get("size") {
                        Some(size) => count(size, &format!("{at}.size"))?,
                        None => 5,
                    },
                    skip_duplicates: completion_options(options, &at)?,
                },
                "term" => Suggester::Term {
                    text: text.ok_or_else(|| bad(format!("{path}: a suggester needs `text`")))?,
                    options: term_options(options, &at, TermOptions::new(field))?,
                },
                _ => Suggester::Phrase {
                    text: text.ok_or_else(|| bad(format!("{path}: a suggester needs `text`")))?,
                    options: phrase_options(options, &at, field)?,
                },
            };
            suggesters.push((name.clone(), read));
        }
        Ok(Suggest { suggesters })
    }

    /// Runs every suggester over `searcher` (reading `indices`, in order), each answer under
    /// its name (`kind#name` with `typed_keys`).
    pub(crate) fn run(
        &self,
        searcher: &Searcher,
        indices: &[String],
        typed: bool,
    ) -> Result<Map<String, JsonValue>, ApiError> {
        let mut out = Map::new();
        for (name, suggester) in &self.suggesters {
            let answer = match suggester {
                Suggester::Term { text, options } => {
                    let entries = searcher
                        .suggest_terms(text, options)
                        .map_err(ApiError::from_query)?;
                    entries
                        .into_iter()
                        .map(|entry| {
                            let options: Vec<JsonValue> = entry
                                .options
                                .iter()
                                .map(|c| json!({"text": c.text, "score": c.score, "freq": c.freq}))
                                .collect();
                            json!({"text": entry.text, "offset": entry.offset,
                                   "length": entry.length, "options": options})
                        })
                        .collect()
                }
                Suggester::Phrase { text, options } => {
                    let (entry, phrases) = searcher
                        .suggest_phrase(text, options)
                        .map_err(ApiError::from_query)?;
                    let options: Vec<JsonValue> = phrases
                        .into_iter()
                        .map(|phrase| {
                            let mut option = json!({"text": phrase.text, "score": phrase.score});
                            if let Some(highlighted) = phrase.highlighted {
                                option["highlighted"] = highlighted.into();
                            }
                            option
                        })
                        .collect();
                    vec![json!({"text": entry.text, "offset": entry.offset,
                                "length": entry.length, "options": options})]
                }
                Suggester::Completion {
                    prefix,
                    field,
                    size,
                    skip_duplicates,
                } => vec![completions(
                    searcher,
                    indices,
                    prefix,
                    field,
                    *size,
                    *skip_duplicates,
                )?],
            };
            let key = match typed {
                true => format!("{}#{name}", suggester.kind()),
                false => name.clone(),
            };
            out.insert(key, answer.into());
        }
        Ok(out)
    }
}

/// Every option of each suggester (issue 27, item 0, walked by `crates/quarry/tests/
/// es_options`); any other is a 400 naming it. A suggestion itself takes `text`, `prefix`
/// and one suggester.
pub const SUGGEST_OPTIONS: &[(&str, &[&str])] = &[
    ("term", &TERM_OPTIONS),
    ("phrase", &PHRASE_OPTIONS),
    ("completion", &["field", "size", "skip_duplicates"]),
    ("direct_generator", &DIRECT_GENERATOR_OPTIONS),
];

const TERM_OPTIONS: [&str; 15] = [
    "field",
    "size",
    "suggest_mode",
    "sort",
    "max_edits",
    "prefix_length",
    "prefix_len",
    "min_word_length",
    "min_word_len",
    "min_doc_freq",
    "max_term_freq",
    "accuracy",
    // Quarry's only string distance: edits with swaps, as `internal` (the default) and
    // `damerau_levenshtein` count them; any other is refused.
    "string_distance",
    // Candidates are every term within the edits: no inspection bound can leave one out,
    // and one shard has every term.
    "max_inspections",
    "shard_size",
];

/// The phrase suggester's own options, besides `field`, `size`, `shard_size` and
/// `direct_generator`.
const PHRASE_OWN_OPTIONS: [&str; 8] = [
    "real_word_error_likelihood",
    "max_errors",
    "confidence",
    "highlight",
    // Quarry's model is over single words: taken only as unigrams (1, true, " ").
    "gram_size",
    "separator",
    "force_unigrams",
    // The text's words are bounded anyway by the error budget's rewrites.
    "token_limit",
];

const PHRASE_OPTIONS: [&str; 12] = crate::es_api::joined(
    &["field", "size", "shard_size", "direct_generator"],
    &PHRASE_OWN_OPTIONS,
);

/// A phrase suggester's `direct_generator`: how each word's candidates are found, with the
/// term suggester's meaning of each option.
const DIRECT_GENERATOR_OPTIONS: [&str; 9] = [
    "field",
    "size",
    "suggest_mode",
    "max_edits",
    "prefix_length",
    "min_word_length",
    "max_inspections",
    "min_doc_freq",
    "max_term_freq",
];

/// 400 naming the first of `options` that suggester `kind` does not take.
fn check_options(kind: &str, options: &Map<String, JsonValue>, path: &str) -> Result<(), ApiError> {
    let known = SUGGEST_OPTIONS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[][..], |(_, keys)| *keys);
    match options.keys().find(|key| !known.contains(&key.as_str())) {
        Some(other) => Err(bad(format!("unsupported: {path}.{other}"))),
        None => Ok(()),
    }
}

/// The term suggester's options (and a phrase suggester's `direct_generator`'s, a subset).
fn term_options(
    options: &Map<String, JsonValue>,
    path: &str,
    mut read: TermOptions,
) -> Result<TermOptions, ApiError> {
    for (key, value) in options {
        let at = format!("{path}.{key}");
        match key.as_str() {
            "field" => {}
            "size" => read.size = count(value, &at)?,
            "suggest_mode" => {
                read.mode = match value.as_str() {
                    Some("missing") => SuggestMode::Missing,
                    Some("popular") => SuggestMode::Popular,
                    Some("always") => SuggestMode::Always,
                    _ => return Err(bad(format!("{at}: expected missing, popular or always"))),
                }
            }
            "sort" => {
                read.by_frequency = match value.as_str() {
                    Some("score") => false,
                    Some("frequency") => true,
                    _ => return Err(bad(format!("{at}: expected score or frequency"))),
                }
            }
            "max_edits" => match count(value, &at)? {
                n @ 1..=2 => read.max_edits = n as u8,
                _ => return Err(bad(format!("{at}: expected 1 or 2"))),
            },
            "prefix_length" | "prefix_len" => read.prefix_length = count(value, &at)?,
            "min_word_length" | "min_word_len" => read.min_word_length = count(value, &at)?,
            "min_doc_freq" => read.min_doc_freq = number(value, &at)?,
            "max_term_freq" => read.max_term_freq = number(value, &at)?,
            "accuracy" => read.accuracy = number(value, &at)? as f32,
            "string_distance"
                if matches!(value.as_str(), Some("internal" | "damerau_levenshtein")) => {}
            "max_inspections" | "shard_size" => {
                count(value, &at)?;
            }
            _ => return Err(bad(format!("unsupported: {at}"))),
        }
    }
    Ok(read)
}

fn phrase_options(
    options: &Map<String, JsonValue>,
    path: &str,
    field: String,
) -> Result<PhraseOptions, ApiError> {
    let mut read = PhraseOptions::new(field.clone());
    for (key, value) in options {
        let at = format!("{path}.{key}");
        match key.as_str() {
            "field" => {}
            "size" => read.size = count(value, &at)?,
            // One shard has every term.
            "shard_size" => {
                count(value, &at)?;
            }
            "direct_generator" => {
                let [generator] = value.as_array().map(Vec::as_slice).unwrap_or_default() else {
                    return Err(bad(format!(
                        "unsupported: {at} other than a list of one generator"
                    )));
                };
                let at = format!("{at}[0]");
                let generator = generator
                    .as_object()
                    .ok_or_else(|| bad(format!("{at}: expected an object")))?;
                check_options("direct_generator", generator, &at)?;
                if generator.get("field").and_then(JsonValue::as_str) != Some(field.as_str()) {
                    return Err(bad(format!(
                        "unsupported: {at}.field other than the suggester's own field [{field}]"
                    )));
                }
                read.words = term_options(generator, &at, read.words.clone())?;
            }
            "real_word_error_likelihood" => read.real_word_error_likelihood = number(value, &at)?,
            "max_errors" => read.max_errors = number(value, &at)?,
            "confidence" => read.confidence = number(value, &at)?,
            "highlight" => {
                let tags = value
                    .as_object()
                    .ok_or_else(|| bad(format!("{at}: expected pre_tag and post_tag")))?;
                let tag = |name: &str| match tags.get(name) {
                    Some(tag) => string(tag, &format!("{at}.{name}")),
                    None => Err(bad(format!("{at}: expected pre_tag and post_tag"))),
                };
                read.highlight = Some((tag("pre_tag")?, tag("post_tag")?));
                if let Some(other) = tags.keys().find(|k| !k.ends_with("_tag")) {
                    return Err(bad(format!("unsupported: {at}.{other}")));
                }
            }
            "gram_size" if count(value, &at)? == 1 => {}
            "force_unigrams" if value == &JsonValue::Bool(true) => {}
            "separator" if value.as_str() == Some(" ") => {}
            "token_limit" => {
                count(value, &at)?;
            }
            _ => return Err(bad(format!("unsupported: {at} = {value}"))),
        }
    }
    Ok(read)
}

/// The completion suggester's own options (besides `field` and `size`): `skip_duplicates`.
fn completion_options(options: &Map<String, JsonValue>, path: &str) -> Result<bool, ApiError> {
    let mut skip_duplicates = false;
    for (key, value) in options {
        match key.as_str() {
            "field" | "size" => {}
            "skip_duplicates" => {
                skip_duplicates = value
                    .as_bool()
                    .ok_or_else(|| bad(format!("{path}.{key}: expected true or false")))?
            }
            other => return Err(bad(format!("unsupported: {path}.{other}"))),
        }
    }
    Ok(skip_duplicates)
}

/// The completion suggester's entry: the prefix and its options.
fn completions(
    searcher: &Searcher,
    indices: &[String],
    prefix: &str,
    field: &str,
    size: usize,
    skip_duplicates: bool,
) -> Result<JsonValue, ApiError> {
    if !searcher.schema().mapping().completions.contains(field) {
        return Err(bad(format!(
            "Field [{field}] is not a completion suggest field"
        )));
    }
    let pattern = Pattern::as_written(PatternKind::Prefix(prefix.to_owned()), true)
        .map_err(|e| bad(format!("completion prefix {prefix:?}: {e}")))?;
    let pattern = std::sync::Arc::new(pattern).for_terms(TermKind::Exact);
    // By the input as the `simple` analyzer reads it (lowercased), then as sent.
    let mut inputs: BTreeSet<(String, String)> = BTreeSet::new();
    for block in searcher.blocks() {
        for (input, _) in pattern
            .terms_in(block, field, TermKind::Exact)
            .map_err(|e| ApiError::from_query(e.into()))?
        {
            inputs.insert((input.to_lowercase(), input));
        }
    }
    let mut options = Vec::new();
    let mut seen = HashSet::new();
    for (_, input) in inputs {
        if options.len() >= size {
            break;
        }
        let request = SearchRequest {
            ast: Some(Ast::Exact {
                field: field.to_owned(),
                value: input.clone(),
            }),
            sort: SortOrder::TimeDesc,
            limit: size,
            ..SearchRequest::default()
        };
        let response = searcher.execute(&request).map_err(ApiError::from_query)?;
        for hit in response.hits {
            let id = quarry_query::doc_id::id_of(hit.time, &hit.event);
            let index = match indices {
                [one] => one.clone(),
                many => many
                    .get(Searcher::part_of(hit.location.block_id))
                    .cloned()
                    .unwrap_or_default(),
            };
            if options.len() >= size || !seen.insert((index.clone(), id.clone())) {
                continue;
            }
            let mut shown = json!({});
            HitView::default().render(
                &mut shown,
                &event_json(&hit.event),
                hit.time,
                &QueryWords::default(),
            );
            options.push(json!({
                "text": input,
                "_index": index,
                "_id": id,
                "_score": 1.0,
                "_source": shown["_source"],
            }));
            if skip_duplicates {
                break;
            }
        }
    }
    Ok(json!({
        "text": prefix,
        "offset": 0,
        "length": prefix.chars().count(),
        "options": options,
    }))
}
