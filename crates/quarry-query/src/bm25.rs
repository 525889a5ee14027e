//! BM25 as Lucene's `BM25Similarity` computes it (Lucene 8+, without the constant `k1 + 1`
//! factor):
//!
//! ```text
//! idf   = ln(1 + (docCount - df + 0.5) / (df + 0.5))
//! score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))
//! ```
//! where `docCount` is the number of docs with the field, `avgdl` its tokens per such doc, and
//! `dl` the doc's (quantized) field length. Statistics are summed over all blocks, so a score
//! does not depend on how the data was split into blocks.

use quarry_format::fieldnorm::id_to_length;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75 }
    }
}

/// Collection statistics of one field, summed over blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FieldStats {
    pub docs_with_field: u64,
    pub total_tokens: u64,
}

pub fn idf(doc_freq: u64, docs_with_field: u64) -> f32 {
    let n = docs_with_field.max(doc_freq) as f64;
    let df = doc_freq as f64;
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
}

/// `k1 * (1 - b + b * dl / avgdl)` for each field-length id: the per-doc denominator term,
/// precomputed once per field and query as Lucene does.
pub fn norm_cache(params: Bm25Params, stats: FieldStats) -> [f32; 256] {
    let avgdl = if stats.docs_with_field == 0 {
        1.0
    } else {
        (stats.total_tokens as f64 / stats.docs_with_field as f64) as f32
    };
    let mut cache = [0f32; 256];
    for (id, slot) in cache.iter_mut().enumerate() {
        let length = id_to_length(id as u8) as f32;
        *slot = params.k1 * (1.0 - params.b + params.b * length / avgdl);
    }
    cache
}

/// Norm caches already computed, by parameters and statistics: 256 divides per scored field
/// were about a tenth of a one-word TOP_10's instructions (callgrind, Wikipedia), and a
/// snapshot's statistics stay the same from query to query. Emptied when full (a server's
/// statistics change with every refresh).
static NORM_CACHES: std::sync::Mutex<Option<NormCaches>> = std::sync::Mutex::new(None);
type NormCaches = std::collections::HashMap<(u32, u32, u64, u64), std::sync::Arc<[f32; 256]>>;
const NORM_CACHES_HELD: usize = 256;

/// `norm_cache`, shared with every query of the same parameters and statistics.
pub fn shared_norm_cache(params: Bm25Params, stats: FieldStats) -> std::sync::Arc<[f32; 256]> {
    let key = (
        params.k1.to_bits(),
        params.b.to_bits(),
        stats.docs_with_field,
        stats.total_tokens,
    );
    // A poisoned lock only means another query panicked while holding it; the map itself is
    // always whole (one insert or clear at a time).
    let mut caches = NORM_CACHES.lock().unwrap_or_else(|e| e.into_inner());
    let caches = caches.get_or_insert_with(Default::default);
    if let Some(cache) = caches.get(&key) {
        return cache.clone();
    }
    if caches.len() >= NORM_CACHES_HELD {
        caches.clear();
    }
    let cache = std::sync::Arc::new(norm_cache(params, stats));
    caches.insert(key, cache.clone());
    cache
}

#[inline]
pub fn score(weight: f32, tf: u32, norm: f32) -> f32 {
    score_freq(weight, tf as f32, norm)
}

/// `score` with a fractional term frequency (a sloppy phrase's).
pub fn score_freq(weight: f32, tf: f32, norm: f32) -> f32 {
    weight * (tf / (tf + norm))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_lucene_formula() {
        // docCount 10, df 2: idf = ln(1 + 8.5 / 2.5) = ln(4.4)
        assert!((idf(2, 10) - 4.4f32.ln()).abs() < 1e-6);
        let stats = FieldStats {
            docs_with_field: 10,
            total_tokens: 100,
        };
        let cache = norm_cache(Bm25Params::default(), stats);
        // dl = 10 = avgdl: norm = k1
        assert!((cache[10] - 1.2).abs() < 1e-6);
        assert!((score(2.0, 3, cache[10]) - 2.0 * 3.0 / 4.2).abs() < 1e-6);
        assert_eq!(*shared_norm_cache(Bm25Params::default(), stats), cache);
        assert_eq!(*shared_norm_cache(Bm25Params::default(), stats), cache);
    }
}
