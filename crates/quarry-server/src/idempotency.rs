//! `Idempotency-Key` on `POST /api/v1/{tenant}/ingest` (issue 26): a client that did not get
//! an answer (a timeout, a dropped connection, a restart of its own) retries with the same key
//! and the batch is stored once. The first request with a key is processed; while it is under
//! way, another with the key gets 409; once it is acknowledged, a request with the key gets
//! the same answer again (with `Idempotent-Replayed: true`) and stores nothing. A request that
//! failed leaves no trace of its key, and stored nothing (a refused batch is never stored:
//! `LiveIndex::recover_wal`), so its retry is processed as new.
//!
//! Keys are kept per tenant, in memory, for `KEEP_FOR` and at most `MAX_KEYS` of them (the
//! oldest go first): a retry after the server itself restarted is not recognized.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an acknowledged key is remembered: retries come within minutes; a day covers a
/// shipper that was down overnight.
pub const KEEP_FOR: Duration = Duration::from_secs(24 * 3600);
/// Keys remembered per tenant at most (~100 bytes each with the answer's summary).
pub const MAX_KEYS: usize = 100_000;
/// The longest key accepted (a UUID is 36 characters; the IETF draft allows any string).
pub const MAX_KEY_LEN: usize = 255;

#[derive(Default)]
pub(crate) struct IdempotencyKeys {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Acknowledged keys and their answers; `None` while the first request is under way.
    keys: HashMap<String, Option<serde_json::Value>>,
    /// Acknowledged keys, oldest first, to forget them by age and count.
    order: VecDeque<(Instant, String)>,
}

/// What a request with a key should do.
pub(crate) enum Claim {
    /// Process it; `complete` the guard with the answer once acknowledged.
    New(KeyGuard),
    /// Acknowledged before: answer this again, store nothing.
    Done(serde_json::Value),
    /// A request with this key is under way.
    UnderWay,
}

impl IdempotencyKeys {
    pub(crate) fn claim(self: &Arc<Self>, key: &str) -> Claim {
        let mut inner = self.lock();
        inner.forget_old(Instant::now());
        match inner.keys.get(key) {
            Some(Some(answer)) => Claim::Done(answer.clone()),
            Some(None) => Claim::UnderWay,
            None => {
                inner.keys.insert(key.to_owned(), None);
                Claim::New(KeyGuard {
                    keys: self.clone(),
                    key: key.to_owned(),
                    completed: false,
                })
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn forget_old(&mut self, now: Instant) {
        while let Some((at, key)) = self.order.front() {
            if now.duration_since(*at) < KEEP_FOR && self.order.len() <= MAX_KEYS {
                break;
            }
            self.keys.remove(key);
            self.order.pop_front();
        }
    }
}

/// A key whose first request is under way: completed with its answer, or released (dropped)
/// when the request failed. Owned by the task that processes the request, which runs to its
/// end even when the client goes away, so a batch that was stored always completes its key.
pub(crate) struct KeyGuard {
    keys: Arc<IdempotencyKeys>,
    key: String,
    completed: bool,
}

impl KeyGuard {
    pub(crate) fn complete(mut self, answer: &serde_json::Value) {
        let mut inner = self.keys.lock();
        inner.keys.insert(self.key.clone(), Some(answer.clone()));
        inner.order.push_back((Instant::now(), self.key.clone()));
        inner.forget_old(Instant::now());
        self.completed = true;
    }
}

impl Drop for KeyGuard {
    fn drop(&mut self) {
        if !self.completed {
            self.keys.lock().keys.remove(&self.key);
        }
    }
}

/// The request's key: None without the header; an error for a key that is empty, too long
/// or not visible ASCII.
pub(crate) fn key_of(headers: &axum::http::HeaderMap) -> Result<Option<String>, String> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .map(|v| v.trim().trim_matches('"'))
        .filter(|v| {
            !v.is_empty() && v.len() <= MAX_KEY_LEN && v.bytes().all(|b| b.is_ascii_graphic())
        })
        .ok_or_else(|| {
            format!("Idempotency-Key must be 1 to {MAX_KEY_LEN} visible ASCII characters")
        })?;
    Ok(Some(key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_processed_once_answered_again_and_released_on_failure() {
        let keys = Arc::new(IdempotencyKeys::default());
        let Claim::New(first) = keys.claim("a") else {
            panic!("new key")
        };
        assert!(matches!(keys.claim("a"), Claim::UnderWay));
        drop(first); // failed: released
        let Claim::New(again) = keys.claim("a") else {
            panic!("released key is new")
        };
        again.complete(&serde_json::json!({"ingested": 3}));
        match keys.claim("a") {
            Claim::Done(answer) => assert_eq!(answer["ingested"], 3),
            _ => panic!("acknowledged key answers again"),
        }
        assert!(matches!(keys.claim("b"), Claim::New(_)));
    }

    #[test]
    fn old_and_surplus_keys_are_forgotten() {
        let mut inner = Inner::default();
        let now = Instant::now();
        for i in 0..MAX_KEYS + 5 {
            inner
                .keys
                .insert(i.to_string(), Some(serde_json::Value::Null));
            inner.order.push_back((now, i.to_string()));
        }
        inner.forget_old(now);
        assert_eq!(inner.keys.len(), MAX_KEYS);
        assert!(!inner.keys.contains_key("0") && inner.keys.contains_key("5"));
        inner.forget_old(now + KEEP_FOR);
        assert!(inner.keys.is_empty());
    }
}
