//! Tenants: who may read and write which events.
//!
//! A tenant has a name, an API key, a retention and quotas. The registry lives in
//! `DATA/tenants.json`, written like the catalog (temporary file, fsync, rename, fsync of the
//! directory), and holds each key only as its SHA-256: a key is shown once, when the tenant is
//! created. Keys are 256 random bits, so a plain hash is enough (a slow password hash guards
//! guessable secrets; these are not). Comparisons run in constant time (`subtle`).
//!
//! Each tenant's events live apart: its own catalog directory (`DATA/tenants/NAME/`, block
//! files and catalog) and its own WAL (`DATA/wal/NAME/`), so two tenants never share a block
//! nor a WAL record, and deleting a tenant removes two directories. The keyless tenant
//! `default`, the only one a server without an admin token has, keeps the data directory's
//! own catalog, the one `quarry index` and `quarry search` use.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use subtle::ConstantTimeEq;

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

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryFile {
    version: u32,
    tenants: Vec<TenantSpec>,
}

const REGISTRY_VERSION: u32 = 1;
const REGISTRY_FILE: &str = "tenants.json";

/// The tenants `data` holds (none when it has no registry yet).
pub fn load(data: &Path) -> std::io::Result<Vec<TenantSpec>> {
    let path = data.join(REGISTRY_FILE);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let file: RegistryFile = serde_json::from_slice(&text).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })?;
    if file.version != REGISTRY_VERSION {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: version {} (this build reads {REGISTRY_VERSION})",
                path.display(),
                file.version
            ),
        ));
    }
    for spec in &file.tenants {
        validate_name(&spec.name).map_err(|reason| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {reason}", path.display()),
            )
        })?;
    }
    Ok(file.tenants)
}

/// Replaces the registry durably: after a crash it is the old one or the new one.
pub fn store(data: &Path, tenants: &[TenantSpec]) -> std::io::Result<()> {
    let file = RegistryFile {
        version: REGISTRY_VERSION,
        tenants: tenants.to_vec(),
    };
    let bytes = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
    let temporary = data.join(format!("{REGISTRY_FILE}.tmp"));
    {
        use std::io::Write;
        let mut out = std::fs::File::create(&temporary)?;
        out.write_all(&bytes)?;
        out.sync_all()?;
    }
    std::fs::rename(&temporary, data.join(REGISTRY_FILE))?;
    sync_dir(data)
}

pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Where a tenant's catalog and block files are.
pub fn catalog_dir(data: &Path, tenant: &str) -> PathBuf {
    if tenant == DEFAULT_TENANT {
        data.to_path_buf()
    } else {
        data.join("tenants").join(tenant)
    }
}

/// Where a tenant's WAL segments are.
pub fn wal_dir(data: &Path, tenant: &str) -> PathBuf {
    data.join("wal").join(tenant)
}

/// A new API key: `qk_` and 256 random bits in hex.
pub fn new_key() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(format!("qk_{}", hex(&bytes)))
}

/// The SHA-256 of a secret (an API key or the admin token).
pub fn secret_hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// A stored hash from its hex (`None` when malformed: then no key matches it).
pub fn parse_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        let digits = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(out)
}

/// Equality of two hashes in time independent of where they differ.
pub fn hashes_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

/// The ingest rate quota: a token bucket of bytes, refilled at the sustained rate up to the
/// burst.
#[derive(Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    pub fn new(bytes_per_second: u64, burst: Option<u64>) -> TokenBucket {
        let rate = bytes_per_second.max(1) as f64;
        let burst = burst.unwrap_or(bytes_per_second).max(1) as f64;
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            at: Instant::now(),
        }
    }

    /// Takes `bytes` if the bucket holds them; otherwise takes nothing and says how many
    /// seconds until it will (at least 1, as `Retry-After` counts whole seconds). A request
    /// larger than the burst is allowed when the bucket is full, so that no request size is
    /// refused for ever.
    pub fn take(&mut self, bytes: u64, now: Instant) -> Result<(), u64> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.at = now;
        let bytes = bytes as f64;
        if bytes <= self.tokens || self.tokens >= self.burst {
            self.tokens -= bytes;
            return Ok(());
        }
        let wait = (bytes.min(self.burst) - self.tokens) / self.rate;
        Err(wait.ceil().max(1.0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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

    #[test]
    fn keys_are_random_and_only_their_hash_matches() {
        let a = new_key().unwrap();
        let b = new_key().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 3 + 64);
        let stored = hex(&secret_hash(&a));
        let parsed = parse_hash(&stored).unwrap();
        assert!(hashes_equal(&parsed, &secret_hash(&a)));
        assert!(!hashes_equal(&parsed, &secret_hash(&b)));
        assert_eq!(parse_hash("zz"), None);
        assert_eq!(parse_hash(&"g".repeat(64)), None);
    }

    #[test]
    fn registry_round_trips_and_replaces_durably() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), []);
        let spec = TenantSpec {
            name: "team-a".into(),
            key_sha256: Some(hex(&secret_hash("k"))),
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
        };
        store(dir.path(), std::slice::from_ref(&spec)).unwrap();
        assert_eq!(load(dir.path()).unwrap(), [spec]);
        store(dir.path(), &[]).unwrap();
        assert_eq!(load(dir.path()).unwrap(), []);
        assert!(!dir.path().join("tenants.json.tmp").exists());
        std::fs::write(dir.path().join("tenants.json"), "{").unwrap();
        assert!(load(dir.path()).is_err());
    }

    /// The bucket against a model: over any sequence of requests, what it lets through never
    /// exceeds the burst plus the rate times the time elapsed.
    #[test]
    fn token_bucket_admits_the_rate_and_the_burst() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(1000, Some(4000));
        let mut admitted = 0u64;
        for step in 0..200u64 {
            let now = start + Duration::from_millis(step * 50);
            if bucket.take(700, now).is_ok() {
                admitted += 700;
            }
            let allowed = 4000 + 1000 * step * 50 / 1000;
            assert!(admitted <= allowed, "step {step}: {admitted} > {allowed}");
        }
        // 10 s at 1000 B/s after a 4000 B burst: about 14000 B.
        assert!((12_600..=14_700).contains(&admitted), "{admitted}");
        // Refused requests are told when to come back.
        let mut empty = TokenBucket::new(100, Some(100));
        empty.take(100, start).unwrap();
        assert_eq!(empty.take(100, start), Err(1));
        assert_eq!(empty.take(50, start + Duration::from_millis(600)), Ok(()));
    }
}
