//! A trigram index over one block's token terms of one field, for wildcards that start with
//! `*` (`*timeout*`, `*eout`), which no automaton can prune: without it such a pattern walks
//! every key of the field's term dictionary (0.1 s per block of 2.5M log events; BENCHMARKS.md,
//! "Substring patterns: a trigram index over the term dictionary").
//!
//! For each term of the field it keeps the term's bytes and FST ordinal, and for each byte
//! trigram the sorted list of the terms holding it. A pattern's literals (each at least three
//! bytes) give trigrams that every matching term must hold; intersecting their lists gives the
//! candidates, and the pattern's automaton decides each one, so the answer is exactly the walk's.
//!
//! The index is built in memory on a pattern's first use in a block, from the term dictionary,
//! and kept in a cache bounded by its bytes, keyed by the reader's process-unique id (a block
//! replaced by a merge never answers from another block's terms). A field whose index would
//! be larger than `MAX_INDEX_BYTES` is not indexed: its patterns walk the dictionary. Writing
//! the index into the block file is a format change (Step 6).

use fst::{IntoStreamer, Streamer};
use hashbrown::HashMap;
use quarry_format::BlockReader;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The largest index built for one block and field.
const MAX_INDEX_BYTES: usize = 96 << 20;

/// Entries (built or walked once) the cache keeps at most.
const MAX_ENTRIES: usize = 4096;

/// What the cache holds at most, all blocks and fields together.
const CACHE_BYTES: usize = 384 << 20;

pub(crate) struct TermTrigrams {
    /// The terms' bytes, one after the other: term `i` is `bytes[offsets[i]..offsets[i + 1]]`.
    bytes: Vec<u8>,
    offsets: Vec<u32>,
    /// Term `i`'s ordinal in the block's term dictionary.
    ordinals: Vec<u64>,
    /// Trigram (three bytes, big-endian in a u32) to the terms holding it, ascending.
    postings: HashMap<u32, Vec<u32>>,
}

fn trigram(bytes: &[u8]) -> u32 {
    u32::from(bytes[0]) << 16 | u32::from(bytes[1]) << 8 | u32::from(bytes[2])
}

impl TermTrigrams {
    /// Indexes the keys of `block` that start with `prefix` (one field's token terms); `None`
    /// when the index would pass `MAX_INDEX_BYTES`.
    fn build(block: &BlockReader, prefix: &[u8]) -> Option<TermTrigrams> {
        let mut index = TermTrigrams::new();
        let mut posted = 0usize;
        let mut stream = block.term_dictionary().range().ge(prefix).into_stream();
        while let Some((key, ordinal)) = stream.next() {
            let Some(term) = key.strip_prefix(prefix) else {
                break;
            };
            posted += index.push(term, ordinal)?;
            if index.bytes.len() + 12 * index.ordinals.len() + 4 * posted > MAX_INDEX_BYTES {
                return None;
            }
        }
        Some(index)
    }

    fn new() -> TermTrigrams {
        TermTrigrams {
            bytes: Vec::new(),
            offsets: vec![0],
            ordinals: Vec::new(),
            postings: HashMap::new(),
        }
    }

    /// Adds the next term (terms come in ascending order); returns how many trigram lists it
    /// joined, `None` past 2^32 terms or bytes.
    fn push(&mut self, term: &[u8], ordinal: u64) -> Option<usize> {
        let id = u32::try_from(self.ordinals.len()).ok()?;
        self.bytes.extend_from_slice(term);
        self.offsets.push(u32::try_from(self.bytes.len()).ok()?);
        self.ordinals.push(ordinal);
        let mut joined = 0;
        for window in term.windows(3) {
            let list = self.postings.entry(trigram(window)).or_default();
            // A trigram twice in one term is listed once.
            if list.last() != Some(&id) {
                list.push(id);
                joined += 1;
            }
        }
        Some(joined)
    }

    fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + 4 * self.offsets.capacity()
            + 8 * self.ordinals.capacity()
            + self
                .postings
                .values()
                .map(|list| 4 * list.capacity() + 16)
                .sum::<usize>()
    }

    /// The terms holding every trigram of every literal, ascending; `None` when the literals
    /// have no trigram (each is shorter than three bytes), so the index cannot narrow them.
    pub(crate) fn candidates(&self, literals: &[Vec<u8>]) -> Option<Vec<u32>> {
        let mut lists: Vec<&[u32]> = Vec::new();
        for literal in literals {
            for window in literal.windows(3) {
                lists.push(
                    self.postings
                        .get(&trigram(window))
                        .map_or(&[][..], Vec::as_slice),
                );
            }
        }
        lists.sort_by_key(|list| list.len());
        let (first, rest) = lists.split_first()?;
        let mut candidates = first.to_vec();
        for list in rest {
            if candidates.is_empty() {
                break;
            }
            let mut from = 0;
            candidates.retain(|&id| {
                from += list[from..].partition_point(|&other| other < id);
                list.get(from) == Some(&id)
            });
        }
        Some(candidates)
    }

    pub(crate) fn term(&self, id: u32) -> &[u8] {
        let id = id as usize;
        &self.bytes[self.offsets[id] as usize..self.offsets[id + 1] as usize]
    }

    pub(crate) fn ordinal(&self, id: u32) -> u64 {
        self.ordinals[id as usize]
    }
}

/// What the cache knows of one block's field.
enum Entry {
    /// One pattern walked its dictionary: the next one builds the index (so a one-shot search,
    /// `quarry search` from the command line, never pays for an index it would not use again).
    Walked,
    /// Built, or `None`: too large to index.
    Built(Option<Arc<TermTrigrams>>),
}

/// The indexes built, least recently used first, with their bytes (an index is tens of MB: a
/// sharded cache such as quick_cache would refuse items larger than a shard).
struct Cache {
    entries: std::collections::VecDeque<((u64, u16), Entry, usize)>,
    bytes: usize,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            entries: std::collections::VecDeque::new(),
            bytes: 0,
        })
    })
}

/// The index of field `ordinal`'s token terms in `block` (whose keys start with `prefix`):
/// `None` the first time a pattern asks (it walks the dictionary), built the second time,
/// kept after that; `None` also for a field too large to index.
pub(crate) fn index_for(
    block: &BlockReader,
    ordinal: u16,
    prefix: &[u8],
) -> Option<Arc<TermTrigrams>> {
    let key = (block.uid(), ordinal);
    let lock = || cache().lock().unwrap_or_else(PoisonError::into_inner);
    {
        let mut cache = lock();
        match cache.entries.iter().position(|(k, _, _)| *k == key) {
            None => {
                cache.entries.push_back((key, Entry::Walked, 0));
                cache.trim();
                return None;
            }
            Some(at) => {
                let entry = cache.entries.remove(at).expect("found just above");
                if let Entry::Built(index) = &entry.1 {
                    let index = index.clone();
                    cache.entries.push_back(entry);
                    return index;
                }
            }
        }
    }
    // Built outside the lock: two queries may both build it, and the second one's is kept.
    let index = TermTrigrams::build(block, prefix).map(Arc::new);
    let bytes = index.as_ref().map_or(0, |index| index.heap_bytes());
    let mut cache = lock();
    cache.entries.retain(|(k, _, _)| *k != key);
    cache
        .entries
        .push_back((key, Entry::Built(index.clone()), bytes));
    cache.bytes = cache.entries.iter().map(|(_, _, b)| b).sum();
    cache.trim();
    index
}

impl Cache {
    /// Drops the least recently used entries past the byte and entry bounds (the newest
    /// stays, whatever its size).
    fn trim(&mut self) {
        while (self.bytes > CACHE_BYTES || self.entries.len() > MAX_ENTRIES)
            && self.entries.len() > 1
        {
            if let Some((_, _, evicted)) = self.entries.pop_front() {
                self.bytes -= evicted;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_hold_every_trigram() {
        let terms = [
            "timeout", "timeouts", "outage", "layout", "about", "ou", "aaaa",
        ];
        let mut index = TermTrigrams::new();
        for (id, term) in terms.iter().enumerate() {
            index.push(term.as_bytes(), id as u64 * 10).unwrap();
        }
        let ids = |literals: &[&str]| {
            let literals: Vec<Vec<u8>> = literals.iter().map(|l| l.as_bytes().to_vec()).collect();
            index.candidates(&literals)
        };
        assert_eq!(ids(&["out"]), Some(vec![0, 1, 2, 3, 4]));
        assert_eq!(ids(&["meou"]), Some(vec![0, 1]));
        assert_eq!(
            ids(&["out", "ts"]),
            Some(vec![0, 1, 2, 3, 4]),
            "ts has no trigram"
        );
        assert_eq!(ids(&["tim", "uts"]), Some(vec![1]));
        assert_eq!(ids(&["aaa"]), Some(vec![6]));
        assert_eq!(ids(&["zzz"]), Some(vec![]));
        assert_eq!(ids(&["ou"]), None);
        assert_eq!(index.term(3), b"layout");
        assert_eq!(index.ordinal(3), 30);
    }
}
