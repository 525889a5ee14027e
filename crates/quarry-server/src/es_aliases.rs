//! Elasticsearch aliases: another name for one or more indices (tenants). A search of an
//! alias reads every index it names; a write goes to its write index, the one index it names
//! or the one marked `is_write_index` (else the write is refused, naming the alias). Aliases
//! are kept with the tenants they name, in the registry (`TenantSpec::aliases`), so deleting
//! an index deletes its aliases.
//!
//! Endpoints: `PUT|POST /{index}/_alias/{name}` (and `_aliases`), `DELETE` of the same,
//! `GET /_alias`, `/_alias/{name}`, `/{index}/_alias[/{name}]`, `HEAD` of the named forms,
//! `POST /_aliases` (`add` and `remove` actions), and `aliases` in a create-index body.
//! A filtered alias's search sees only the documents its filter matches (`filters_of`);
//! routing is kept and shown (an index is one shard, so it changes nothing).

use crate::admin::{self, Tenant};
use crate::es_api::{es_response, EsParams};
use crate::es_indices::{no_such_index, resolve, Missing};
use crate::tenants::{self, AliasSpec, TenantSpec};
use crate::{blocking, ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use quarry_store::mapping::glob_matches;
use serde_json::{json, Map, Value as JsonValue};
use std::collections::BTreeMap;
use std::sync::Arc;

/// An alias's options as a request gives them: `is_write_index`, `filter`, `routing`
/// (`index_routing`, `search_routing`); `is_hidden: false` and `must_exist` change nothing
/// here.
pub(crate) fn alias_options(value: &JsonValue, path: &str) -> Result<AliasSpec, ApiError> {
    let object = match value {
        JsonValue::Null => return Ok(AliasSpec::default()),
        JsonValue::Object(object) => object,
        _ => return Err(ApiError::bad_request(format!("{path}: expected an object"))),
    };
    let mut spec = AliasSpec::default();
    for (key, value) in object {
        match key.as_str() {
            "is_write_index" => {
                spec.is_write_index = Some(value.as_bool().ok_or_else(|| {
                    ApiError::bad_request(format!("{path}.is_write_index: expected true or false"))
                })?)
            }
            "is_hidden" if value == &JsonValue::Bool(false) => {}
            "filter" => {
                // Read now, so that a bad query is refused when the alias is made.
                let now = quarry_query::time::now_nanos();
                quarry_query::dsl::compile(value, &format!("{path}.filter"), now)
                    .map_err(crate::es_search::dsl_error)?;
                spec.filter = Some(value.to_string());
            }
            "routing" | "index_routing" | "search_routing" => {
                let routing = match value {
                    JsonValue::String(text) => text.clone(),
                    JsonValue::Number(n) => n.to_string(),
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "{path}.{key}: expected a string"
                        )))
                    }
                };
                if key != "search_routing" {
                    spec.index_routing = Some(routing.clone());
                }
                if key != "index_routing" {
                    spec.search_routing = Some(routing);
                }
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unsupported: {path}.{other} (Quarry's aliases take filter, routing, \
                     is_write_index)"
                )))
            }
        }
    }
    Ok(spec)
}

/// An alias name must be a valid name and not an index's.
pub(crate) fn check_alias_name(state: &AppState, alias: &str) -> Result<(), ApiError> {
    tenants::validate_name(alias).map_err(|reason| {
        ApiError::bad_request(format!("Invalid alias name [{alias}]: {reason}"))
            .with_kind("invalid_alias_name_exception")
    })?;
    if state.open_tenant(alias).is_some() {
        return Err(ApiError::bad_request(format!(
            "Invalid alias name [{alias}]: an index or data stream exists with the same name as the alias"
        ))
        .with_kind("invalid_alias_name_exception"));
    }
    Ok(())
}

/// The filters a search of `expression` applies to each index it reaches only through
/// filtered aliases (several: any of them), by index name; an index named itself, by a
/// pattern of index names, or through an alias without a filter is searched whole, as in
/// Elasticsearch.
pub(crate) fn filters_of(state: &AppState, expression: &str) -> BTreeMap<String, Vec<String>> {
    let mut filtered: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut whole: Vec<String> = Vec::new();
    for part in expression
        .split(',')
        .filter(|p| !p.is_empty() && !p.starts_with('-'))
    {
        let all = part == "_all";
        let pattern = all || part.contains('*');
        for tenant in state.all_tenants() {
            let spec = tenant.spec();
            if all || names_match(part, &spec.name) {
                whole.push(spec.name.clone());
            }
            for (alias, options) in &spec.aliases {
                let reached = if pattern {
                    !all && glob_matches(part, alias)
                } else {
                    part == alias
                };
                match (&options.filter, reached) {
                    (Some(filter), true) => filtered
                        .entry(spec.name.clone())
                        .or_default()
                        .push(filter.clone()),
                    (None, true) => whole.push(spec.name.clone()),
                    (_, false) => {}
                }
            }
        }
    }
    filtered.retain(|name, _| !whole.contains(name));
    filtered
}

/// Whether `name` is some tenant's alias.
pub(crate) fn is_alias(state: &AppState, name: &str) -> bool {
    state
        .all_tenants()
        .iter()
        .any(|tenant| tenant.spec().aliases.contains_key(name))
}

/// The tenants alias `name` names, with their options, in name order.
pub(crate) fn targets(state: &AppState, name: &str) -> Vec<(String, Arc<Tenant>, AliasSpec)> {
    let mut found: Vec<_> = state
        .all_tenants()
        .into_iter()
        .filter_map(|tenant| {
            let spec = tenant.spec();
            let options = spec.aliases.get(name)?.clone();
            Some((spec.name, tenant, options))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// The index a write to `name` goes to: `name` itself unless it is an alias; an alias's
/// write index, or a 400 when it has none.
pub(crate) fn write_index(state: &AppState, name: &str) -> Result<String, ApiError> {
    if state.open_tenant(name).is_some() {
        return Ok(name.to_owned());
    }
    let targets = targets(state, name);
    let marked: Vec<&String> = targets
        .iter()
        .filter(|(_, _, options)| options.is_write_index == Some(true))
        .map(|(index, _, _)| index)
        .collect();
    match (targets.as_slice(), marked.as_slice()) {
        ([], _) => Ok(name.to_owned()),
        (_, [one]) => Ok((*one).clone()),
        ([(index, _, options)], []) if options.is_write_index != Some(false) => Ok(index.clone()),
        _ => Err(ApiError::bad_request(format!(
            "no write index is defined for alias [{name}]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index"
        ))),
    }
}

/// The one index a single-document read of `name` reads: `name`, or the one index its alias
/// names (an alias of several is a 400, as in Elasticsearch).
pub(crate) fn single_index(state: &AppState, name: &str) -> Result<String, ApiError> {
    if state.open_tenant(name).is_some() {
        return Ok(name.to_owned());
    }
    match targets(state, name).as_slice() {
        [] => Ok(name.to_owned()),
        [(index, _, _)] => Ok(index.clone()),
        many => {
            let mut indices: Vec<&str> = many.iter().map(|(index, _, _)| index.as_str()).collect();
            indices.sort_unstable();
            Err(ApiError::bad_request(format!(
                "alias [{name}] has more than one index associated with it [{}], can't execute a single index op",
                indices.join(", ")
            )))
        }
    }
}

/// One change to the aliases.
enum Change {
    Add {
        index: String,
        alias: String,
        options: AliasSpec,
    },
    /// Removes the aliases matching `alias` (a name, a pattern or `_all`) from `index`.
    Remove { index: String, alias: String },
}

/// Adds to `changes` alias `alias` with `options` on each of `indices` (the name checked).
fn add_to_each(
    state: &AppState,
    alias: &str,
    indices: &[(String, Arc<Tenant>)],
    options: &AliasSpec,
    changes: &mut Vec<Change>,
) -> Result<(), ApiError> {
    check_alias_name(state, alias)?;
    for (index, _) in indices {
        changes.push(Change::Add {
            index: index.clone(),
            alias: alias.to_owned(),
            options: options.clone(),
        });
    }
    Ok(())
}

/// Applies `changes` to the registry and the open tenants, all or none (404 naming an alias
/// a removal finds on none of its indices).
async fn apply(state: &Arc<AppState>, changes: Vec<Change>) -> Result<(), ApiError> {
    let work = state.clone();
    blocking(move || {
        admin::update_specs_now(&work, |specs: &mut [TenantSpec]| {
            for change in &changes {
                match change {
                    Change::Add {
                        index,
                        alias,
                        options,
                    } => {
                        let spec = specs
                            .iter_mut()
                            .find(|spec| spec.name == *index)
                            .ok_or_else(|| no_such_index(index))?;
                        spec.aliases.insert(alias.clone(), options.clone());
                    }
                    Change::Remove { index, alias } => {
                        let spec = specs
                            .iter_mut()
                            .find(|spec| spec.name == *index)
                            .ok_or_else(|| no_such_index(index))?;
                        let before = spec.aliases.len();
                        spec.aliases.retain(|name, _| !names_match(alias, name));
                        if spec.aliases.len() == before {
                            return Err(aliases_missing(alias));
                        }
                    }
                }
            }
            // At most one write index per alias.
            let mut writers: BTreeMap<&str, usize> = BTreeMap::new();
            for spec in specs.iter() {
                for (alias, options) in &spec.aliases {
                    if options.is_write_index == Some(true) {
                        *writers.entry(alias).or_default() += 1;
                    }
                }
            }
            if let Some((alias, _)) = writers.iter().find(|(_, n)| **n > 1) {
                return Err(ApiError::bad_request(format!(
                    "alias [{alias}] has more than one write index"
                )));
            }
            Ok(())
        })
    })
    .await
}

/// Whether alias `name` is one of `expression`'s (a comma list of names and patterns,
/// `_all`).
fn names_match(expression: &str, name: &str) -> bool {
    expression
        .split(',')
        .any(|part| part == "_all" || glob_matches(part, name))
}

fn aliases_missing(alias: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("aliases [{alias}] missing"))
        .with_kind("aliases_not_found_exception")
}

/// `PUT|POST /{index}/_alias/{name}`: adds alias `name` (a comma list) to the indices.
pub(crate) async fn put(
    State(state): State<Arc<AppState>>,
    UrlPath((index, name)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("put alias")?;
        state.may_manage_indices(&headers)?;
        let options = crate::es_api::body_object(&body, "the alias body")?;
        let options = alias_options(&JsonValue::Object(options), "alias")?;
        let indices = resolve(&state, &index, &headers, Missing::REFUSE)?;
        if indices.is_empty() {
            return Err(no_such_index(&index));
        }
        let mut changes = Vec::new();
        for alias in name.split(',').filter(|a| !a.is_empty()) {
            add_to_each(&state, alias, &indices, &options, &mut changes)?;
        }
        apply(&state, changes).await?;
        Ok(json!({"acknowledged": true}).to_string())
    }
    .await;
    es_response(answer)
}

/// `DELETE /{index}/_alias/{name}`: removes the aliases `name` matches (names, patterns,
/// `_all`) from the indices; 404 when an index has none of them.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    UrlPath((index, name)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("delete alias")?;
        state.may_manage_indices(&headers)?;
        let indices = resolve(&state, &index, &headers, Missing::REFUSE)?;
        let holding: Vec<String> = indices
            .iter()
            .filter(|(_, tenant)| tenant.spec().aliases.keys().any(|a| names_match(&name, a)))
            .map(|(index, _)| index.clone())
            .collect();
        if holding.is_empty() {
            return Err(aliases_missing(&name));
        }
        let changes = holding
            .into_iter()
            .map(|index| Change::Remove {
                index,
                alias: name.clone(),
            })
            .collect();
        apply(&state, changes).await?;
        Ok(json!({"acknowledged": true}).to_string())
    }
    .await;
    es_response(answer)
}

/// `POST /_aliases`: `{"actions": [{"add": {...}}, {"remove": {...}}]}`, applied together.
pub(crate) async fn update(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("update aliases")?;
        state.may_manage_indices(&headers)?;
        let body = crate::es_api::body_object(&body, "the aliases body")?;
        if let Some(other) = body.keys().find(|k| *k != "actions") {
            return Err(ApiError::bad_request(format!(
                "unsupported: [{other}] in the aliases body"
            )));
        }
        let actions = body
            .get("actions")
            .and_then(JsonValue::as_array)
            .ok_or_else(|| ApiError::bad_request("actions: expected a list of actions"))?;
        let mut changes = Vec::new();
        for (i, action) in actions.iter().enumerate() {
            let path = format!("actions[{i}]");
            let (kind, options) = match action.as_object().map(|o| o.iter().collect::<Vec<_>>()) {
                Some(entries) if entries.len() == 1 => entries[0],
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "{path}: expected one of add, remove"
                    )))
                }
            };
            let path = format!("{path}.{kind}");
            let mut options = options
                .as_object()
                .cloned()
                .ok_or_else(|| ApiError::bad_request(format!("{path}: expected an object")))?;
            let list = |options: &mut Map<String, JsonValue>, one: &str, many: &str| {
                let mut names = Vec::new();
                if let Some(value) = options.remove(one) {
                    names.push(value);
                }
                if let Some(JsonValue::Array(values)) = options.remove(many) {
                    names.extend(values);
                }
                names
                    .into_iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>()
                    .ok_or_else(|| {
                        ApiError::bad_request(format!("{path}: {one} and {many} are names"))
                    })
            };
            let index_expressions = list(&mut options, "index", "indices")?;
            let aliases = list(&mut options, "alias", "aliases")?;
            if index_expressions.is_empty() || aliases.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "{path}: needs an index and an alias"
                )));
            }
            let mut indices = Vec::new();
            for expression in &index_expressions {
                indices.extend(resolve(&state, expression, &headers, Missing::REFUSE)?);
            }
            match kind.as_str() {
                "add" => {
                    let spec = alias_options(&JsonValue::Object(options), &path)?;
                    for alias in &aliases {
                        add_to_each(&state, alias, &indices, &spec, &mut changes)?;
                    }
                }
                "remove" => {
                    if let Some(other) = options.keys().find(|k| *k != "must_exist") {
                        return Err(ApiError::bad_request(format!(
                            "unsupported: {path}.{other}"
                        )));
                    }
                    for alias in &aliases {
                        for (index, _) in &indices {
                            changes.push(Change::Remove {
                                index: index.clone(),
                                alias: alias.clone(),
                            });
                        }
                    }
                }
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unsupported: alias action [{other}] (add and remove are)"
                    )))
                }
            }
        }
        apply(&state, changes).await?;
        Ok(json!({"acknowledged": true}).to_string())
    }
    .await;
    es_response(answer)
}

/// What `GET /_alias...` reads: the index expression (all indices without one) and alias
/// names (every alias without them).
fn listing(
    state: &Arc<AppState>,
    index: Option<&str>,
    name: Option<&str>,
    headers: &HeaderMap,
    params: &EsParams,
) -> Result<(StatusCode, JsonValue), ApiError> {
    params.check("get alias")?;
    let indices = resolve(
        state,
        index.unwrap_or("_all"),
        headers,
        crate::es_indices::missing_rule(params)?,
    )?;
    let mut out = Map::new();
    let mut seen: Vec<String> = Vec::new();
    for (index_name, tenant) in &indices {
        let mut aliases = Map::new();
        for (alias, options) in tenant.spec().aliases {
            if name.is_none_or(|name| names_match(name, &alias)) {
                aliases.insert(alias.clone(), options.to_es_json());
                seen.push(alias);
            }
        }
        // Without names, every index is listed; with them, those holding one.
        if name.is_none() || !aliases.is_empty() {
            out.insert(index_name.clone(), json!({ "aliases": aliases }));
        }
    }
    let missing: Vec<&str> = name
        .map(|names| {
            names
                .split(',')
                .filter(|n| !n.is_empty() && !n.contains('*') && *n != "_all")
                .filter(|n| !seen.iter().any(|s| s == n))
                .collect()
        })
        .unwrap_or_default();
    if missing.is_empty() {
        return Ok((StatusCode::OK, JsonValue::Object(out)));
    }
    // Elasticsearch's answer for names it did not find: the rest, with an error string.
    let message = match missing.as_slice() {
        [one] => format!("alias [{one}] missing"),
        many => format!("aliases [{}] missing", many.join(",")),
    };
    out.insert("error".into(), message.into());
    out.insert("status".into(), 404.into());
    Ok((StatusCode::NOT_FOUND, JsonValue::Object(out)))
}

fn listing_response(answer: Result<(StatusCode, JsonValue), ApiError>) -> Response {
    match answer {
        Ok((status, body)) => {
            let mut response = es_response(Ok(body.to_string()));
            *response.status_mut() = status;
            response
        }
        Err(error) => es_response(Err(error)),
    }
}

/// `GET /_alias`.
pub(crate) async fn get_all(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = EsParams::parse(query.as_deref())
        .and_then(|params| listing(&state, None, None, &headers, &params));
    listing_response(answer)
}

/// `GET /_alias/{name}`.
pub(crate) async fn get_named(
    State(state): State<Arc<AppState>>,
    UrlPath(name): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = EsParams::parse(query.as_deref())
        .and_then(|params| listing(&state, None, Some(&name), &headers, &params));
    listing_response(answer)
}

/// `GET /{index}/_alias`.
pub(crate) async fn get_of_index(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = EsParams::parse(query.as_deref())
        .and_then(|params| listing(&state, Some(&index), None, &headers, &params));
    listing_response(answer)
}

/// `GET /{index}/_alias/{name}`.
pub(crate) async fn get_of_index_named(
    State(state): State<Arc<AppState>>,
    UrlPath((index, name)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = EsParams::parse(query.as_deref())
        .and_then(|params| listing(&state, Some(&index), Some(&name), &headers, &params));
    listing_response(answer)
}

/// `HEAD /_alias/{name}`: 200 when every name is found.
pub(crate) async fn exists(
    State(state): State<Arc<AppState>>,
    UrlPath(name): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    exists_answer(&state, None, &name, query.as_deref(), &headers)
}

/// `HEAD /{index}/_alias/{name}`.
pub(crate) async fn exists_of_index(
    State(state): State<Arc<AppState>>,
    UrlPath((index, name)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    exists_answer(&state, Some(&index), &name, query.as_deref(), &headers)
}

fn exists_answer(
    state: &Arc<AppState>,
    index: Option<&str>,
    name: &str,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let status = match EsParams::parse(query)
        .and_then(|params| listing(state, index, Some(name), headers, &params))
    {
        Ok((StatusCode::OK, body)) if body.as_object().is_some_and(|o| !o.is_empty()) => {
            StatusCode::OK
        }
        Ok(_) => StatusCode::NOT_FOUND,
        Err(error) => error.status,
    };
    let mut response = status.into_response();
    crate::es_api::mark_elasticsearch(&mut response);
    response
}
