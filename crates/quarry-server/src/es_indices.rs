//! Elasticsearch's index APIs, where an index is a Quarry tenant: `PUT /{index}` (create, with
//! `mappings`), `DELETE /{index}`, `HEAD`/`GET /{index}`, `/{index}/_refresh` (a no-op:
//! events are searchable once acknowledged), `GET /_cluster/health`, `GET /_cat/indices`, and
//! index expressions (`logs-*`, `_all`, `a,b`) resolved over the tenants a key may read.
//!
//! Who may create and delete: with keys on, the admin token (a new index is a tenant without
//! a key of its own: the admin API issues keys); keyless, anyone who can reach the server,
//! which listens on loopback only and already lets every caller write the `default` tenant.

use crate::admin::{self, Tenant};
use crate::es_api::{es_response, EsParams};
use crate::tenants::{self, AliasSpec, SearchLimits, TenantSpec, DEFAULT_TENANT};
use crate::{blocking, ApiError, AppState};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use quarry_store::mapping::glob_matches;
use quarry_store::Mapping;
use serde_json::{json, Map, Value as JsonValue};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every index setting Quarry takes (nested or dotted, with or without `index.`): the search
/// limits (`SearchLimits`), then the no-ops; walked by `crates/quarry/tests/es_options/`.
pub const INDEX_SETTINGS: &[&str] = &[
    "index.max_result_window",
    "index.max_docvalue_fields_search",
    "index.max_script_fields",
    "index.max_terms_count",
    "index.highlight.max_analyzed_offset",
    "index.max_slices_per_scroll",
    // No-ops: Quarry keeps one index per tenant (no shards to route to or split) with no
    // replicas of its own (durability is the WAL's and, in a cluster, the object store's),
    // and events are searchable as soon as they are acknowledged, sooner than any refresh
    // interval.
    "index.number_of_shards",
    "index.number_of_replicas",
    "index.refresh_interval",
    "index.auto_expand_replicas",
    "index.number_of_routing_shards",
];

/// The keys of a create-index body.
pub const CREATE_INDEX_KEYS: &[&str] = &["mappings", "settings", "aliases"];

/// `PUT /{index}`: creates the tenant, with the body's `mappings`.
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("create index")?;
        state.may_manage_indices(&headers)?;
        tenants::validate_name(&index).map_err(|reason| {
            ApiError::bad_request(format!("invalid index name [{index}]: {reason}"))
        })?;
        let (mapping, search_limits, aliases) = create_body(&body)?;
        if state.open_tenant(&index).is_some() {
            return Err(already_exists(&index));
        }
        alias_collision(&state, &index)?;
        for alias in aliases.keys() {
            crate::es_aliases::check_alias_name(&state, alias)?;
            if *alias == index {
                return Err(ApiError::bad_request(format!(
                    "Invalid alias name [{alias}]: an index or data stream exists with the same name as the alias"
                ))
                .with_kind("invalid_alias_name_exception"));
            }
        }
        let spec = TenantSpec {
            name: index.clone(),
            key_sha256: None,
            retention_seconds: None,
            quotas: Default::default(),
            created: quarry_index::event::format_time(quarry_query::time::now_nanos()),
            search_limits,
            aliases,
            closed: false,
        };
        let tenant = admin::add_tenant(&state, spec).await.map_err(|error| {
            if error.status == StatusCode::CONFLICT {
                already_exists(&index)
            } else {
                error
            }
        })?;
        if let Some(mapping) = mapping {
            let live = tenant.live.clone();
            let applied = blocking(move || {
                live.set_mapping(&mapping)
                    .map_err(|e| ApiError::bad_request(e.to_string()))
            })
            .await;
            if let Err(error) = applied {
                // The index is created whole or not at all.
                let _ = admin::remove_tenant(&state, &index).await;
                return Err(error);
            }
        }
        Ok(json!({"acknowledged": true, "shards_acknowledged": true, "index": index}).to_string())
    }
    .await;
    es_response(answer)
}

/// Creates the index a write names when it does not exist (Elasticsearch's automatic index
/// creation), without a mapping; the caller has checked who may.
pub(crate) fn create_for_write(state: &AppState, index: &str) -> Result<Arc<Tenant>, ApiError> {
    tenants::validate_name(index).map_err(|reason| {
        ApiError::bad_request(format!("invalid index name [{index}]: {reason}"))
    })?;
    alias_collision(state, index)?;
    let spec = TenantSpec {
        name: index.to_owned(),
        key_sha256: None,
        retention_seconds: None,
        quotas: Default::default(),
        created: quarry_index::event::format_time(quarry_query::time::now_nanos()),
        search_limits: Default::default(),
        aliases: Default::default(),
        closed: false,
    };
    match admin::add_tenant_now(state, spec) {
        // Created meanwhile by another request: use it.
        Err(error) if error.status == StatusCode::CONFLICT => {
            state.open_tenant(index).ok_or_else(|| no_such_index(index))
        }
        other => other,
    }
}

/// Elasticsearch answers an existing index with 400 `resource_already_exists_exception`.
fn already_exists(index: &str) -> ApiError {
    ApiError::bad_request(format!("index [{index}] already exists"))
        .with_kind("resource_already_exists_exception")
}

/// A create-index body's mapping and search limits: `mappings` is read, `settings` may hold
/// no-ops and search limits (`INDEX_SETTINGS`) (`SearchLimits`), and anything else
/// (`aliases`) is refused by name.
fn create_body(body: &[u8]) -> Result<CreateBody, ApiError> {
    let mut mapping = None;
    let mut limits = SearchLimits::default();
    let mut aliases = BTreeMap::new();
    for (key, value) in &crate::es_api::body_object(body, "the create-index body")? {
        if !CREATE_INDEX_KEYS.contains(&key.as_str()) {
            return Err(ApiError::bad_request(format!(
                "unsupported: [{key}] in a create-index body (Quarry reads mappings, settings and aliases)"
            )));
        }
        match key.as_str() {
            "mappings" => {
                mapping = Some(
                    Mapping::from_value(&json!({ "mappings": value })).map_err(|e| {
                        // A parameter a type does not take: OpenSearch's own wording and
                        // kind, which name the field.
                        if e.message.starts_with("Mapping definition for [") {
                            ApiError::bad_request(e.message).with_kind("mapper_parsing_exception")
                        } else {
                            ApiError::bad_request(e.to_string())
                        }
                    })?,
                )
            }
            "settings" => read_settings(value, &mut limits)?,
            "aliases" => {
                let object = value.as_object().ok_or_else(|| {
                    ApiError::bad_request("aliases: expected an object of aliases")
                })?;
                for (alias, options) in object {
                    let options =
                        crate::es_aliases::alias_options(options, &format!("aliases.{alias}"))?;
                    aliases.insert(alias.clone(), options);
                }
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unsupported: [{other}] in a create-index body (Quarry reads mappings, settings and aliases)"
                )))
            }
        }
    }
    Ok((mapping, limits, aliases))
}

/// Reads index settings (nested or dotted, with or without `index.`) into `limits`: the
/// search limits (`SearchLimits`), `null` for a limit's default; the no-ops
/// (`INDEX_SETTINGS`); anything else is refused by name.
fn read_settings(value: &JsonValue, limits: &mut SearchLimits) -> Result<(), ApiError> {
    let mut flat = Vec::new();
    flatten("", value, &mut flat);
    for (name, value) in flat {
        // `"settings": {}` and `"index": {}` set nothing.
        if value.as_object().is_some_and(Map::is_empty) && matches!(name.as_str(), "" | "index") {
            continue;
        }
        let name = if name.starts_with("index.") {
            name
        } else {
            format!("index.{name}")
        };
        if !INDEX_SETTINGS.contains(&name.as_str()) {
            return Err(ApiError::bad_request(format!(
                "unsupported: index setting [{name}] (Quarry takes {})",
                INDEX_SETTINGS.join(", ")
            )));
        }
        let limit = match name.as_str() {
            "index.max_result_window" => Some(&mut limits.max_result_window),
            "index.max_docvalue_fields_search" => Some(&mut limits.max_docvalue_fields_search),
            "index.max_script_fields" => Some(&mut limits.max_script_fields),
            "index.max_terms_count" => Some(&mut limits.max_terms_count),
            "index.highlight.max_analyzed_offset" => Some(&mut limits.max_analyzed_offset),
            "index.max_slices_per_scroll" => Some(&mut limits.max_slices_per_scroll),
            _ => None,
        };
        if let Some(limit) = limit {
            if value.is_null() {
                *limit = None;
                continue;
            }
            let n = value
                .as_u64()
                .or_else(|| value.as_str().and_then(|t| t.parse().ok()))
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "index setting [{name}]: expected a whole number, got {value}"
                    ))
                })?;
            if name == "index.max_result_window" && n > crate::MAX_SEARCH_LIMIT as u64 {
                return Err(ApiError::bad_request(format!(
                    "unsupported: index setting [{name}] = {n}: Quarry returns at most {} hits a page (scroll or search_after for more)",
                    crate::MAX_SEARCH_LIMIT
                )));
            }
            *limit = Some(n);
            continue;
        }
    }
    Ok(())
}

/// `PUT /_settings`, `PUT /{index}/_settings`: changes the search limits of the indices named
/// (`read_settings`); the no-op settings are taken, anything else refused by name.
pub(crate) async fn put_settings(
    State(state): State<Arc<AppState>>,
    index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("update settings")?;
        state.may_manage_indices(&headers)?;
        let body = crate::es_api::body_object(&body, "the settings body")?;
        let settings = match body.get("settings") {
            Some(inner) if body.len() == 1 => inner.clone(),
            _ => JsonValue::Object(body),
        };
        // Read once, to refuse what is not a setting before anything changes.
        let mut given = SearchLimits::default();
        read_settings(&settings, &mut given)?;
        let preserve = params.flag("preserve_existing", false)?;
        let expression = crate::es_api::all_or(index);
        let mut rules = missing_rule(&params)?;
        if params.get("expand_wildcards").is_none() {
            (rules.open, rules.closed) = (true, true);
        }
        let names: Vec<String> = resolve(&state, &expression, &headers, rules)?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        let work = state.clone();
        blocking(move || {
            admin::update_specs_now(&work, |specs: &mut [TenantSpec]| {
                for spec in specs.iter_mut().filter(|spec| names.contains(&spec.name)) {
                    let before = spec.search_limits.clone();
                    read_settings(&settings, &mut spec.search_limits)?;
                    if preserve {
                        // Only the limits not set before are set.
                        spec.search_limits = before.or(&spec.search_limits);
                    }
                }
                Ok(())
            })
        })
        .await?;
        Ok(json!({"acknowledged": true}).to_string())
    }
    .await;
    es_response(answer)
}

/// A create-index body's mapping, search limits and aliases.
type CreateBody = (Option<Mapping>, SearchLimits, BTreeMap<String, AliasSpec>);

/// An index may not take an alias's name.
fn alias_collision(state: &AppState, index: &str) -> Result<(), ApiError> {
    if crate::es_aliases::is_alias(state, index) {
        return Err(ApiError::bad_request(format!(
            "Invalid index name [{index}], already exists as alias"
        ))
        .with_kind("invalid_index_name_exception"));
    }
    Ok(())
}

/// A JSON tree's leaves with their dotted paths.
pub(crate) fn flatten(prefix: &str, value: &JsonValue, out: &mut Vec<(String, JsonValue)>) {
    match value {
        JsonValue::Object(object) if !object.is_empty() => {
            for (key, value) in object {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, value, out);
            }
        }
        leaf => out.push((prefix.to_owned(), leaf.clone())),
    }
}

/// `DELETE /{index}`: deletes the named tenants (a comma list; wildcards are refused, as
/// Elasticsearch refuses them by default: a deletion names what it deletes).
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("delete index")?;
        let ignore_unavailable = params.flag("ignore_unavailable", false)?;
        state.may_manage_indices(&headers)?;
        let names: Vec<&str> = index.split(',').filter(|n| !n.is_empty()).collect();
        if let Some(pattern) = names.iter().find(|n| is_pattern(n)) {
            return Err(ApiError::bad_request(format!(
                "deleting [{pattern}]: a deletion names each index (no wildcards or _all)"
            )));
        }
        if let Some(alias) = names.iter().find(|n| crate::es_aliases::is_alias(&state, n)) {
            return Err(ApiError::bad_request(format!(
                "The provided expression [{alias}] matches an alias, specify the corresponding concrete indices instead."
            )));
        }
        if names.contains(&DEFAULT_TENANT) {
            return Err(ApiError::bad_request(
                "the default index holds the data directory's own catalog and cannot be deleted",
            ));
        }
        let missing: Vec<&&str> = names
            .iter()
            .filter(|name| state.open_tenant(name).is_none())
            .collect();
        if let (Some(name), false) = (missing.first(), ignore_unavailable) {
            return Err(no_such_index(name));
        }
        for name in names {
            if state.open_tenant(name).is_some() {
                admin::remove_tenant(&state, name).await?;
            }
        }
        Ok(json!({"acknowledged": true}).to_string())
    }
    .await;
    es_response(answer)
}

pub(crate) fn no_such_index(name: &str) -> ApiError {
    let mut error = ApiError::new(StatusCode::NOT_FOUND, format!("no such index [{name}]"));
    error.index = Some(name.to_owned());
    error
}

/// `HEAD /{index}`: 200 when every index named exists and the key may read it, else 404.
pub(crate) async fn exists(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let status = match EsParams::parse(query.as_deref()).and_then(|params| {
        params.check("index exists")?;
        resolve(&state, &index, &headers, missing_rule(&params)?)
    }) {
        Ok(found) if !found.is_empty() => StatusCode::OK,
        Ok(_) => StatusCode::NOT_FOUND,
        Err(error) => error.status,
    };
    let mut response = status.into_response();
    crate::es_api::mark_elasticsearch(&mut response);
    response
}

/// `GET /{index}`: each index's mappings and settings.
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("get index")?;
        let mut out = Map::new();
        for (name, tenant) in resolve(&state, &index, &headers, missing_rule(&params)?)? {
            let mapping = crate::es_search::mapping_of(&state, &tenant).await?;
            let spec = tenant.spec();
            let settings = index_settings(&name, &spec);
            out.insert(
                name.clone(),
                json!({
                    "aliases": spec
                        .aliases
                        .iter()
                        .map(|(name, options)| (name.clone(), options.to_es_json()))
                        .collect::<Map<String, JsonValue>>(),
                    "mappings": mapping,
                    "settings": {"index": settings},
                }),
            );
        }
        Ok::<_, ApiError>(JsonValue::Object(out).to_string())
    }
    .await;
    es_response(answer)
}

/// An index's settings as Elasticsearch shows them under `index` (values as strings): one
/// shard, no replicas, and the search limits the index was given.
fn index_settings(name: &str, spec: &TenantSpec) -> JsonValue {
    let created_ms = quarry_query::time::parse_time(&spec.created, 0)
        .map(|nanos| (nanos / 1_000_000).to_string())
        .unwrap_or_else(|_| "0".to_owned());
    let mut settings = json!({
        "number_of_shards": "1",
        "number_of_replicas": "0",
        "provided_name": name,
        "creation_date": created_ms,
        "uuid": name,
    });
    let limits = &spec.search_limits;
    for (key, value) in [
        ("max_result_window", limits.max_result_window),
        (
            "max_docvalue_fields_search",
            limits.max_docvalue_fields_search,
        ),
        ("max_script_fields", limits.max_script_fields),
        ("max_terms_count", limits.max_terms_count),
        ("max_slices_per_scroll", limits.max_slices_per_scroll),
    ] {
        if let Some(value) = value {
            settings[key] = value.to_string().into();
        }
    }
    if let Some(value) = limits.max_analyzed_offset {
        settings["highlight"] = json!({"max_analyzed_offset": value.to_string()});
    }
    settings
}

/// `GET /_settings`, `GET /{index}/_settings`: each index's settings (`flat_settings`:
/// as `index.name` keys).
pub(crate) async fn settings(
    State(state): State<Arc<AppState>>,
    index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = (|| {
        let params = EsParams::parse(query.as_deref())?;
        params.check("get settings")?;
        state.require_some_key(&headers)?;
        let flat = params.flag("flat_settings", false)?;
        let expression = crate::es_api::all_or(index);
        let mut out = Map::new();
        for (name, tenant) in resolve(&state, &expression, &headers, missing_rule(&params)?)? {
            let settings = index_settings(&name, &tenant.spec());
            let settings = if flat {
                let mut pairs = Vec::new();
                flatten("index", &settings, &mut pairs);
                JsonValue::Object(pairs.into_iter().collect())
            } else {
                json!({ "index": settings })
            };
            out.insert(name, json!({ "settings": settings }));
        }
        Ok(JsonValue::Object(out).to_string())
    })();
    es_response(answer)
}

/// `POST /{index}/_close`: the indices stay, but are neither searched nor written until
/// opened (a search naming one is a 400 `index_closed_exception`; patterns leave them out
/// unless `expand_wildcards` asks for closed indices).
pub(crate) async fn close(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    es_response(set_closed(state, index, query, headers, true).await)
}

/// `POST /{index}/_open`: closed indices are searched and written again.
pub(crate) async fn open(
    State(state): State<Arc<AppState>>,
    UrlPath(index): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    es_response(set_closed(state, index, query, headers, false).await)
}

async fn set_closed(
    state: Arc<AppState>,
    index: String,
    query: Option<String>,
    headers: HeaderMap,
    closed: bool,
) -> Result<String, ApiError> {
    let params = EsParams::parse(query.as_deref())?;
    // The waits and timeouts are for shards a single node has at once.
    params.check(if closed { "close index" } else { "open index" })?;
    state.may_manage_indices(&headers)?;
    let mut rules = missing_rule(&params)?;
    if params.get("expand_wildcards").is_none() {
        // Patterns name the indices whose state changes.
        (rules.open, rules.closed) = (true, true);
    }
    let names: Vec<String> = resolve(&state, &index, &headers, rules)?
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let work = state.clone();
    let changed = names.clone();
    blocking(move || {
        admin::update_specs_now(&work, |specs: &mut [TenantSpec]| {
            for spec in specs.iter_mut().filter(|spec| changed.contains(&spec.name)) {
                spec.closed = closed;
            }
            Ok(())
        })
    })
    .await?;
    let mut answer = json!({"acknowledged": true, "shards_acknowledged": true});
    if closed {
        let indices: Map<String, JsonValue> = names
            .into_iter()
            .map(|name| (name, json!({"closed": true})))
            .collect();
        answer["indices"] = indices.into();
    }
    Ok(answer.to_string())
}

/// `/_refresh`, `/{index}/_refresh`: nothing to do (acknowledged events are searchable), but
/// an unknown index is still a 404.
pub(crate) async fn refresh(
    State(state): State<Arc<AppState>>,
    index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = (|| {
        let params = EsParams::parse(query.as_deref())?;
        params.check("refresh")?;
        let expression = crate::es_api::all_or(index);
        let found = resolve(&state, &expression, &headers, missing_rule(&params)?)?;
        let shards = found.len();
        Ok(json!({"_shards": {"total": shards, "successful": shards, "failed": 0}}).to_string())
    })();
    es_response(answer)
}

/// `GET /_cluster/health` (Grafana's health check) and `/_cluster/health/{index}`: a single
/// node that serves is green.
pub(crate) async fn cluster_health(
    State(state): State<Arc<AppState>>,
    index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = (|| {
        let params = EsParams::parse(query.as_deref())?;
        // The waits are for a state a single node that answers is already in.
        params.check("cluster health")?;
        let level = params.get("level").unwrap_or("cluster");
        if !matches!(level, "cluster" | "indices") {
            return Err(ApiError::bad_request(format!(
                "unsupported: cluster health level [{level}] (cluster or indices)"
            )));
        }
        state.require_some_key(&headers)?;
        let expression = crate::es_api::all_or(index);
        let found = resolve(&state, &expression, &headers, missing_rule(&params)?)?;
        let shards = found.len();
        let mut health = json!({
            "cluster_name": "quarry",
            "status": "green",
            "timed_out": false,
            "number_of_nodes": 1,
            "number_of_data_nodes": 1,
            "discovered_master": true,
            "discovered_cluster_manager": true,
            "active_primary_shards": shards,
            "active_shards": shards,
            "relocating_shards": 0,
            "initializing_shards": 0,
            "unassigned_shards": 0,
            "delayed_unassigned_shards": 0,
            "number_of_pending_tasks": 0,
            "number_of_in_flight_fetch": 0,
            "task_max_waiting_in_queue_millis": 0,
            "active_shards_percent_as_number": 100.0,
        });
        if level == "indices" {
            let indices: Map<String, JsonValue> = found
                .iter()
                .map(|(name, _)| {
                    let shard = json!({
                        "status": "green", "number_of_shards": 1, "number_of_replicas": 0,
                        "active_primary_shards": 1, "active_shards": 1, "relocating_shards": 0,
                        "initializing_shards": 0, "unassigned_shards": 0,
                    });
                    (name.clone(), shard)
                })
                .collect();
            health["indices"] = indices.into();
        }
        Ok(health.to_string())
    })();
    es_response(answer)
}

/// `GET /_cat/indices[/{index}]`: a text table (`v` for headers, `h` to choose columns) or
/// JSON (`format=json`).
pub(crate) async fn cat_indices(
    State(state): State<Arc<AppState>>,
    index: Option<UrlPath<String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let answer = async {
        let params = EsParams::parse(query.as_deref())?;
        params.check("cat indices")?;
        state.require_some_key(&headers)?;
        let expression = crate::es_api::all_or(index);
        let found = resolve(&state, &expression, &headers, missing_rule(&params)?)?;
        const COLUMNS: &[&str] = &[
            "health",
            "status",
            "index",
            "uuid",
            "pri",
            "rep",
            "docs.count",
            "docs.deleted",
            "store.size",
            "pri.store.size",
        ];
        let columns: Vec<&str> = match params.get("h") {
            None => COLUMNS.to_vec(),
            Some(list) => list.split(',').collect(),
        };
        if let Some(unknown) = columns.iter().find(|c| !COLUMNS.contains(c)) {
            return Err(ApiError::bad_request(format!(
                "unsupported: _cat/indices column [{unknown}] ({})",
                COLUMNS.join(", ")
            )));
        }
        let mut rows: Vec<Vec<String>> = Vec::with_capacity(found.len());
        for (name, tenant) in &found {
            let (events, bytes) = docs_and_bytes(&state, tenant).await?;
            rows.push(
                columns
                    .iter()
                    .map(|column| match *column {
                        "health" => "green".to_owned(),
                        "status" => "open".to_owned(),
                        "index" | "uuid" => name.clone(),
                        "pri" => "1".to_owned(),
                        "rep" | "docs.deleted" => "0".to_owned(),
                        "docs.count" => events.to_string(),
                        _ => bytes.to_string(),
                    })
                    .collect(),
            );
        }
        match params.get("format") {
            Some("json") => Ok(JsonValue::Array(
                rows.iter()
                    .map(|row| {
                        columns
                            .iter()
                            .zip(row)
                            .map(|(c, v)| (c.to_string(), JsonValue::from(v.clone())))
                            .collect::<Map<_, _>>()
                            .into()
                    })
                    .collect(),
            )
            .to_string()),
            None | Some("text" | "txt") => {
                let mut table = Vec::new();
                if params.flag("v", false)? {
                    table.push(columns.iter().map(|c| c.to_string()).collect::<Vec<_>>());
                }
                table.extend(rows);
                Ok(text_table(&table))
            }
            Some(other) => Err(ApiError::bad_request(format!(
                "unsupported: _cat format [{other}] (json or text)"
            ))),
        }
    }
    .await;
    es_response(answer)
}

/// An index's events and the bytes of its blocks: this node's, or with `--peers` summed over
/// every node's share (a node or block missing: a 503 naming it, never a smaller count).
async fn docs_and_bytes(state: &AppState, tenant: &crate::Tenant) -> Result<(u64, u64), ApiError> {
    let Some(root) = &state.root else {
        let events = tenant.live.published_snapshot().doc_count();
        return Ok((events, tenant.live.stored_bytes()));
    };
    let name = tenant.name();
    let answer = root
        .fields(&name)
        .await
        .map_err(|error| ApiError::bad_request(error.to_string()))?;
    let missing = crate::cluster_warnings(answer.failed_blocks, answer.failed_leaves);
    if let Some(lacking) = missing.first() {
        return Err(ApiError::unavailable(format!(
            "the size of [{name}] would lack a part: {lacking}"
        )));
    }
    Ok((answer.docs, answer.bytes))
}

/// Rows as left-aligned columns separated by a space.
fn text_table(rows: &[Vec<String>]) -> String {
    let width = |column: usize| rows.iter().map(|r| r[column].len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len)).map(width).collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(value, &width)| format!("{value:width$}"))
            .collect();
        out.push_str(line.join(" ").trim_end());
        out.push('\n');
    }
    out
}

/// How an index expression is read: what a name that is not there costs, what patterns
/// match (`ignore_unavailable`, `expand_wildcards`), and whether the caller reads the
/// indices' data (a closed index cannot be searched).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Missing {
    /// Left out (`ignore_unavailable=true`), else a 404 naming it (Elasticsearch's default
    /// for a concrete name); for a reader, a closed index likewise (else a 400).
    pub skip: bool,
    /// Patterns match open indices, closed ones (`expand_wildcards`: open by default).
    pub open: bool,
    pub closed: bool,
    /// A search or count: closed indices are never read.
    pub reads: bool,
    /// A pattern that matches no index, or an expression that leaves none, is taken
    /// (`allow_no_indices`, true by default), else a 404 naming it.
    pub allow_none: bool,
}

impl Missing {
    /// A missing name is a 404; patterns match open indices.
    pub(crate) const REFUSE: Missing = Missing {
        skip: false,
        open: true,
        closed: false,
        reads: false,
        allow_none: true,
    };

    /// The same rules for a caller that reads the indices' data.
    pub(crate) fn reading(self) -> Missing {
        Missing {
            reads: true,
            ..self
        }
    }
}

/// The rules the URL asks for: `ignore_unavailable=true` leaves out an index that is not
/// there; `expand_wildcards` (`open`, `closed`, `all`, `none`, `hidden`, comma lists) says
/// which indices patterns match; `allow_no_indices=false` makes a pattern that matches none
/// a 404.
pub(crate) fn missing_rule(params: &EsParams) -> Result<Missing, ApiError> {
    let mut rules = Missing {
        skip: params.flag("ignore_unavailable", false)?,
        allow_none: params.flag("allow_no_indices", true)?,
        ..Missing::REFUSE
    };
    if let Some(list) = params.get("expand_wildcards") {
        (rules.open, rules.closed) = (false, false);
        for part in list.split(',') {
            match part {
                "open" => rules.open = true,
                "closed" => rules.closed = true,
                "all" => (rules.open, rules.closed) = (true, true),
                // Quarry has no hidden indices.
                "none" | "hidden" => {}
                other => {
                    return Err(ApiError::bad_request(format!(
                        "expand_wildcards: [{other}] is not open, closed, hidden, none or all"
                    )))
                }
            }
        }
    }
    Ok(rules)
}

/// The error for a search of closed index `name`.
fn closed_index(name: &str) -> ApiError {
    let mut error = ApiError::bad_request("closed").with_kind("index_closed_exception");
    error.index = Some(name.to_owned());
    error
}

fn is_pattern(name: &str) -> bool {
    name == "_all" || name.contains('*')
}

/// The tenants an index expression names, in name order without repeats: a comma list of
/// names and patterns (`*` anywhere, `_all`), patterns over the tenants the request's key may
/// read. A concrete name the key may not read is 401, as `authorize` answers; one that does
/// not exist is 404 (or skipped).
pub(crate) fn resolve(
    state: &Arc<AppState>,
    expression: &str,
    headers: &HeaderMap,
    missing: Missing,
) -> Result<Vec<(String, Arc<Tenant>)>, ApiError> {
    let mut found: Vec<(String, Arc<Tenant>)> = Vec::new();
    for part in expression.split(',').filter(|p| !p.is_empty()) {
        let named = date_math_name(part, quarry_query::time::now_nanos())?;
        let part = named.as_str();
        if let Some(excluded) = part.strip_prefix('-') {
            found.retain(|(name, _)| !glob_matches(excluded, name));
            continue;
        }
        if is_pattern(part) {
            // A pattern matches indices, and the aliases of indices (which it reads).
            let pattern = if part == "_all" { "*" } else { part };
            let before = found.len();
            for tenant in state.all_tenants() {
                let spec = tenant.spec();
                let matches = glob_matches(pattern, &spec.name)
                    || (part != "_all" && spec.aliases.keys().any(|a| glob_matches(pattern, a)));
                let expanded = if spec.closed {
                    missing.closed
                } else {
                    missing.open
                };
                if matches && expanded && state.authorize(&spec.name, headers).is_ok() {
                    if spec.closed && missing.reads && !missing.skip {
                        return Err(closed_index(&spec.name));
                    }
                    if spec.closed && missing.reads {
                        continue;
                    }
                    found.push((spec.name, tenant));
                }
            }
            if found.len() == before && !missing.allow_none {
                return Err(no_such_index(part));
            }
            continue;
        }
        let mut named = Vec::new();
        match state.authorize(part, headers) {
            Ok(tenant) => named.push((part.to_owned(), tenant)),
            Err(error) if error.status == StatusCode::NOT_FOUND => {
                // An alias: every index it names, each as the key may read it.
                let targets = crate::es_aliases::targets(state, part);
                if targets.is_empty() && !missing.skip {
                    return Err(no_such_index(part));
                }
                for (name, _, _) in targets {
                    named.push((name.clone(), state.authorize(&name, headers)?));
                }
            }
            Err(error) => return Err(error),
        }
        for (name, tenant) in named {
            if missing.reads && tenant.is_closed() {
                if missing.skip {
                    continue;
                }
                return Err(closed_index(&name));
            }
            found.push((name, tenant));
        }
    }
    // Names left out by `ignore_unavailable` leave nothing either.
    if found.is_empty() && !missing.allow_none {
        return Err(no_such_index(expression));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found.dedup_by(|a, b| a.0 == b.0);
    Ok(found)
}

/// An index name with date math (`<logstash-{now/d}>`, `<logs-{now/M{yyyy.MM}}>`): the text
/// with each `{date math{format}}` replaced by that time in the format (default
/// `yyyy.MM.dd`), in UTC; other names as they are.
pub(crate) fn date_math_name(name: &str, now: i64) -> Result<String, ApiError> {
    let Some(inner) = name.strip_prefix('<').and_then(|n| n.strip_suffix('>')) else {
        return Ok(name.to_owned());
    };
    let bad =
        |why: &str| ApiError::bad_request(format!("invalid date math index name [{name}]: {why}"));
    let mut out = String::new();
    let mut rest = inner;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        // `{math}` or `{math{format}}`.
        let (math, format, tail) = match (after.find('{'), after.find('}')) {
            (Some(f), Some(c)) if f < c => {
                let close = after[f..].find("}}").ok_or_else(|| bad("unclosed {"))? + f;
                (&after[..f], &after[f + 1..close], &after[close + 2..])
            }
            (_, Some(c)) => (&after[..c], "yyyy.MM.dd", &after[c + 1..]),
            _ => return Err(bad("unclosed {")),
        };
        if format.contains('|') {
            return Err(bad("a time zone is not supported (UTC is used)"));
        }
        let time = quarry_query::time::parse_time(math, now).map_err(|e| bad(&e))?;
        let format = crate::es_aggs::DateFormat::parse(format).map_err(|e| bad(&e))?;
        out.push_str(&format.format(time, quarry_query::time::Zone::Utc));
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

impl AppState {
    /// Creating and deleting indices: the admin token when keys are on; keyless, anyone (the
    /// server is on loopback, module doc).
    pub(crate) fn may_manage_indices(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if self.admin.is_some() {
            self.require_admin(headers)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_index_patterns() {
        for (pattern, name, expected) in [
            ("*", "logs", true),
            ("logs-*", "logs-2026", true),
            ("logs-*", "logs", false),
            ("*-prod", "web-prod", true),
            ("*-prod", "web-production", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "acb", false),
            ("a*a", "a", false),
            ("a*a", "aa", true),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ] {
            assert_eq!(glob_matches(pattern, name), expected, "{pattern} {name}");
        }
    }

    #[test]
    fn date_math_names_read_their_time() {
        // 2026-11-27T05:30:00Z
        let now = 1_795_757_400_000_000_000;
        for (name, want) in [
            ("logs", "logs"),
            ("<logs-{now/d}>", "logs-2026.11.27"),
            ("<logs-{now/M}>", "logs-2026.11.01"),
            ("<logs-{now/M{yyyy.MM}}>", "logs-2026.11"),
            ("<logs-{now-1d/d}-x>", "logs-2026.11.26-x"),
        ] {
            assert_eq!(date_math_name(name, now).unwrap(), want, "{name}");
        }
        assert!(date_math_name("<logs-{now/d>", now).is_err());
    }

    #[test]
    fn create_bodies_read_mappings_and_refuse_what_they_cannot_honour() {
        let mapping = create_body(
            br#"{"settings": {"number_of_shards": 1, "index": {"number_of_replicas": 0}},
                 "mappings": {"properties": {"status": {"type": "long"}}}}"#,
        )
        .unwrap()
        .0
        .expect("a mapping");
        assert!(mapping.fields.contains_key("status"));
        assert!(create_body(b"").unwrap().0.is_none());
        let (_, limits, _) = create_body(
            br#"{"settings": {"max_result_window": 4, "index.max_script_fields": "2",
                "index": {"max_slices_per_scroll": 9}}}"#,
        )
        .unwrap();
        assert_eq!(
            limits,
            SearchLimits {
                max_result_window: Some(4),
                max_docvalue_fields_search: None,
                max_script_fields: Some(2),
                max_terms_count: None,
                max_analyzed_offset: None,
                max_slices_per_scroll: Some(9),
            }
        );
        for (body, named) in [
            (
                r#"{"aliases": {"a": {"is_hidden": true}}}"#,
                "aliases.a.is_hidden",
            ),
            (
                r#"{"aliases": {"a": {"filter": {"no_such_query": {}}}}}"#,
                "no_such_query",
            ),
            (
                r#"{"settings": {"index": {"analysis": {"analyzer": {}}}}}"#,
                "index.analysis",
            ),
            (
                r#"{"settings": {"max_result_window": "many"}}"#,
                "index.max_result_window",
            ),
        ] {
            let refused = create_body(body.as_bytes()).unwrap_err();
            assert!(
                refused.message.contains(named),
                "{named}: {}",
                refused.message
            );
        }
    }
}
