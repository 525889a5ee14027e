//! Tenants: who may read and write which events.
//!
//! A tenant has a name, an API key, a retention and quotas. The registry is the metastore's
//! (`quarry_store::tenants`: `DATA/tenants.json` on one machine) and holds each key only as
//! its SHA-256: a key is shown once, when the tenant is created. Keys are 256 random bits, so a plain hash is enough (a slow password hash guards
//! guessable secrets; these are not). Comparisons run in constant time (`subtle`).
//!
//! Each tenant's events live apart: its own catalog directory (`DATA/tenants/NAME/`, block
//! files and catalog) and its own WAL (`DATA/wal/NAME/`), so two tenants never share a block
//! nor a WAL record, and deleting a tenant removes two directories. The keyless tenant
//! `default`, the only one a server without an admin token has, keeps the data directory's
//! own catalog, the one `quarry index` and `quarry search` use.

pub use quarry_store::tenants::{
    validate_name, AliasSpec, LocalTenants, Quotas, SearchLimits, TenantRegistry, TenantSpec,
    DEFAULT_TENANT, MAX_NAME_LEN,
};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;
use subtle::ConstantTimeEq;

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
