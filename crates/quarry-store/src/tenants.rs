//! The tenant registry: which tenants exist, their key hashes, retention, quotas, search
//! limits and aliases. Part of the metastore (what a server needs to know beside the blocks):
//! a server reads and changes it only through [`TenantRegistry`]. [`LocalTenants`], the
//! embedded default, keeps it in `DATA/tenants.json`, written like the catalog (temporary
//! file, fsync, rename, fsync of the directory); a PostgreSQL registry fills the same trait
//! when Quarry scales out. Keys are kept only as their SHA-256 (hashing and checking keys is
//! the server's).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// The tenant of a server without an admin token, and the default `_index` of bulk requests.
pub const DEFAULT_TENANT: &str = "default";

/// Longest tenant name: a directory name everywhere, and short enough to read in a URL.
pub const MAX_NAME_LEN: usize = 63;

/// Names that would collide with the API's own paths (`/api/v1/tenants/...`).
const RESERVED_NAMES: &[&str] = &["tenants", "openapi.json"];

/// Checks a tenant name: 1 to 63 bytes of `a-z`, `0-9`, `-`, `_` and the lowercase letters
/// and digits of other scripts (`logs-中文`, as Elasticsearch allows in index names),
/// starting with a letter or a digit. Nothing else can reach a file path (`..`, `/`, `%2e`,
/// NUL, spaces and punctuation of any script are refused).
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a tenant name cannot be empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "a tenant name has at most {MAX_NAME_LEN} characters, this one {}",
            name.len()
        ));
    }
    let letter = |c: char| {
        c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || !c.is_ascii() && c.is_alphanumeric() && !c.is_uppercase()
    };
    if let Some(bad) = name.chars().find(|&c| !letter(c) && c != '-' && c != '_') {
        return Err(format!(
            "a tenant name is made of lowercase letters, digits, '-' and '_'; {bad:?} is not \
             allowed in {name:?}"
        ));
    }
    if !name.starts_with(letter) {
        return Err(format!(
            "a tenant name starts with a letter or a digit: {name:?}"
        ));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(format!("{name:?} is reserved"));
    }
    Ok(())
}

/// Per-tenant limits; `None` is unlimited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quotas {
    /// Sustained ingest rate, in bytes of request body (as decoded) per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest_bytes_per_second: Option<u64>,
    /// Bytes that may arrive at once above the sustained rate (default: one second's worth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest_burst_bytes: Option<u64>,
    /// Block bytes stored, beyond which ingest is refused until retention frees some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_bytes: Option<u64>,
    /// Events in one request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_per_request: Option<u64>,
}

/// Elasticsearch's per-index search limits a tenant was created with (`settings` of `PUT
/// /{index}`); `None` is Elasticsearch's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchLimits {
    /// `index.max_result_window`: `from + size` of a search, `size` of a scroll's pages
    /// (10,000, also Quarry's most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_window: Option<u64>,
    /// `index.max_docvalue_fields_search`: entries of `docvalue_fields` (100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_docvalue_fields_search: Option<u64>,
    /// `index.max_script_fields` (32): kept and shown; Quarry runs no scripts, so no search
    /// has script fields to count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_script_fields: Option<u64>,
    /// `index.max_terms_count`: values of one `terms` query, a lookup's too (65,536).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_terms_count: Option<u64>,
    /// `index.highlight.max_analyzed_offset`: the longest text a highlight analyzes (a longer
    /// one is a 400 unless its field has offsets or the request sets `max_analyzer_offset`;
    /// unbounded by default here, 1,000,000 in Elasticsearch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_analyzed_offset: Option<u64>,
    /// `index.max_slices_per_scroll`: `slice.max` of a sliced scroll (1,024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_slices_per_scroll: Option<u64>,
}

impl SearchLimits {
    pub fn is_default(&self) -> bool {
        *self == SearchLimits::default()
    }

    /// Each limit of `self`, else `other`'s.
    pub fn or(&self, other: &SearchLimits) -> SearchLimits {
        SearchLimits {
            max_result_window: self.max_result_window.or(other.max_result_window),
            max_docvalue_fields_search: self
                .max_docvalue_fields_search
                .or(other.max_docvalue_fields_search),
            max_script_fields: self.max_script_fields.or(other.max_script_fields),
            max_terms_count: self.max_terms_count.or(other.max_terms_count),
            max_analyzed_offset: self.max_analyzed_offset.or(other.max_analyzed_offset),
            max_slices_per_scroll: self.max_slices_per_scroll.or(other.max_slices_per_scroll),
        }
    }

    /// The strictest of each limit over several indices searched as one.
    pub fn strictest<'a>(all: impl IntoIterator<Item = &'a SearchLimits>) -> SearchLimits {
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        all.into_iter()
            .fold(SearchLimits::default(), |acc, l| SearchLimits {
                max_result_window: min(acc.max_result_window, l.max_result_window),
                max_docvalue_fields_search: min(
                    acc.max_docvalue_fields_search,
                    l.max_docvalue_fields_search,
                ),
                max_script_fields: min(acc.max_script_fields, l.max_script_fields),
                max_terms_count: min(acc.max_terms_count, l.max_terms_count),
                max_analyzed_offset: min(acc.max_analyzed_offset, l.max_analyzed_offset),
                max_slices_per_scroll: min(acc.max_slices_per_scroll, l.max_slices_per_scroll),
            })
    }
}

/// A tenant as the registry keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantSpec {
    pub name: String,
    /// SHA-256 of the API key, hex; `None` for the keyless `default` tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_sha256: Option<String>,
    /// Events older than this (by `_time`) are deleted, a block at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_seconds: Option<u64>,
    #[serde(default)]
    pub quotas: Quotas,
    /// When it was created (RFC 3339).
    pub created: String,
    #[serde(default, skip_serializing_if = "SearchLimits::is_default")]
    pub search_limits: SearchLimits,
    /// Elasticsearch aliases naming this tenant (es_aliases.rs), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aliases: BTreeMap<String, AliasSpec>,
    /// Closed (Elasticsearch's `_close`): kept, but neither searched nor written until
    /// opened again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed: bool,
}

/// One alias of a tenant: searches of the alias read every tenant it names; writes go to
/// its write index (the only tenant it names, or the one marked `is_write_index`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AliasSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_write_index: Option<bool>,
    /// A query (Elasticsearch's DSL, as JSON text) that a search through the alias applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Routing of writes and searches through the alias: kept and shown; an index is one
    /// shard, so it changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_routing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_routing: Option<String>,
}

impl AliasSpec {
    /// The options as Elasticsearch shows them (`GET /_alias`).
    pub fn to_es_json(&self) -> serde_json::Value {
        let mut shown = serde_json::Map::new();
        if let Some(filter) = &self.filter {
            let filter = serde_json::from_str(filter).unwrap_or(serde_json::Value::Null);
            shown.insert("filter".into(), filter);
        }
        if let Some(routing) = &self.index_routing {
            shown.insert("index_routing".into(), routing.clone().into());
        }
        if let Some(routing) = &self.search_routing {
            shown.insert("search_routing".into(), routing.clone().into());
        }
        if let Some(write) = self.is_write_index {
            shown.insert("is_write_index".into(), write.into());
        }
        serde_json::Value::Object(shown)
    }
}

/// Where the tenants are registered. The keyless `default` tenant is implicit and never
/// listed. Callers serialise changes (the server holds one lock over the registry and its
/// open tenants), so an implementation need not guard read-modify-write against itself.
pub trait TenantRegistry: Send + Sync {
    /// Every registered tenant, in the order they were registered.
    fn tenants(&self) -> io::Result<Vec<TenantSpec>>;
    /// In one durable commit (after a crash, all or none): each spec of `put` added, or
    /// replacing the spec of the same name, and the tenants named in `removed` dropped.
    fn commit(&self, put: &[TenantSpec], removed: &[&str]) -> io::Result<()>;
}

/// The registry of a local data directory: `DATA/tenants.json`.
#[derive(Debug, Clone)]
pub struct LocalTenants {
    data: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryFile {
    version: u32,
    tenants: Vec<TenantSpec>,
}

const REGISTRY_VERSION: u32 = 1;
const REGISTRY_FILE: &str = "tenants.json";

impl LocalTenants {
    pub fn new(data: &Path) -> LocalTenants {
        LocalTenants {
            data: data.to_path_buf(),
        }
    }

    fn invalid(&self, reason: impl std::fmt::Display) -> io::Error {
        let path = self.data.join(REGISTRY_FILE);
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {reason}", path.display()),
        )
    }

    /// Replaces the file durably: after a crash it is the old one or the new one.
    fn store(&self, tenants: Vec<TenantSpec>) -> io::Result<()> {
        let file = RegistryFile {
            version: REGISTRY_VERSION,
            tenants,
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(io::Error::other)?;
        let temporary = self.data.join(format!("{REGISTRY_FILE}.tmp"));
        {
            use std::io::Write;
            let mut out = std::fs::File::create(&temporary)?;
            out.write_all(&bytes)?;
            out.sync_all()?;
        }
        std::fs::rename(&temporary, self.data.join(REGISTRY_FILE))?;
        std::fs::File::open(&self.data)?.sync_all()
    }
}

impl TenantRegistry for LocalTenants {
    fn tenants(&self) -> io::Result<Vec<TenantSpec>> {
        let text = match std::fs::read(self.data.join(REGISTRY_FILE)) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let file: RegistryFile = serde_json::from_slice(&text).map_err(|e| self.invalid(e))?;
        if file.version != REGISTRY_VERSION {
            return Err(self.invalid(format_args!(
                "version {} (this build reads {REGISTRY_VERSION})",
                file.version
            )));
        }
        for spec in &file.tenants {
            validate_name(&spec.name).map_err(|reason| self.invalid(reason))?;
        }
        Ok(file.tenants)
    }

    fn commit(&self, put: &[TenantSpec], removed: &[&str]) -> io::Result<()> {
        let mut tenants = self.tenants()?;
        tenants.retain(|spec| !removed.contains(&spec.name.as_str()));
        for spec in put {
            match tenants.iter_mut().find(|old| old.name == spec.name) {
                Some(old) => *old = spec.clone(),
                None => tenants.push(spec.clone()),
            }
        }
        self.store(tenants)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_reach_a_path_are_refused() {
        for bad in [
            "",
            "..",
            "../x",
            "a/b",
            "%2e%2e",
            ".hidden",
            "-x",
            "_x",
            "A",
            "Ünï",
            "a b",
            "a\0b",
            "tenants",
            "a\u{2215}b",
            "a\u{ff0f}b",
            "a\u{3000}b",
            "a·b",
            "-中文",
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(validate_name(&"a".repeat(MAX_NAME_LEN + 1)).is_err());
        for good in [
            "a",
            "team-1",
            "payments_eu",
            "0x",
            "ünï",
            "test-weird-index-中文",
            &"a".repeat(MAX_NAME_LEN),
        ] {
            validate_name(good).unwrap();
        }
    }

    fn spec(name: &str) -> TenantSpec {
        TenantSpec {
            name: name.into(),
            key_sha256: Some("ab".repeat(32)),
            retention_seconds: Some(86_400),
            quotas: Quotas {
                ingest_bytes_per_second: Some(1 << 20),
                events_per_request: Some(10),
                ..Quotas::default()
            },
            created: "2026-11-23T00:00:00Z".into(),
            search_limits: SearchLimits {
                max_result_window: Some(500),
                ..SearchLimits::default()
            },
            aliases: [("logs".to_owned(), AliasSpec::default())].into(),
            closed: false,
        }
    }

    /// Commits against a model (a list replaced in memory), across reopening the directory.
    #[test]
    fn local_registry_commits_like_its_model_and_replaces_durably() {
        let dir = tempfile::tempdir().unwrap();
        let registry = LocalTenants::new(dir.path());
        assert_eq!(registry.tenants().unwrap(), []);
        let (a, b, c) = (spec("team-a"), spec("team-b"), spec("team-c"));
        registry.commit(&[a.clone(), b.clone()], &[]).unwrap();
        assert_eq!(registry.tenants().unwrap(), [a.clone(), b.clone()]);
        let mut a2 = a.clone();
        a2.closed = true;
        a2.retention_seconds = None;
        registry
            .commit(&[c.clone(), a2.clone()], &["team-b"])
            .unwrap();
        assert_eq!(
            LocalTenants::new(dir.path()).tenants().unwrap(),
            [a2.clone(), c.clone()]
        );
        registry
            .commit(&[], &["team-a", "team-c", "nobody"])
            .unwrap();
        assert_eq!(registry.tenants().unwrap(), []);
        assert!(!dir.path().join("tenants.json.tmp").exists());
    }

    #[test]
    fn a_damaged_or_newer_registry_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let registry = LocalTenants::new(dir.path());
        std::fs::write(dir.path().join("tenants.json"), "{").unwrap();
        let error = registry.tenants().unwrap_err().to_string();
        assert!(error.contains("tenants.json"), "{error}");
        std::fs::write(
            dir.path().join("tenants.json"),
            r#"{"version": 2, "tenants": []}"#,
        )
        .unwrap();
        let error = registry.tenants().unwrap_err().to_string();
        assert!(error.contains("version 2"), "{error}");
        std::fs::write(
            dir.path().join("tenants.json"),
            r#"{"version": 1, "tenants": [{"name": "../x", "created": ""}]}"#,
        )
        .unwrap();
        assert!(registry.tenants().is_err());
        // A failed read leaves the file as it was.
        assert!(registry.commit(&[spec("team-a")], &[]).is_err());
    }
}
