//! Cursors: where a time-sorted page ends, so the next one starts after it (`search_after`).
//! Its own module so that the searcher's request types and the time-order walks
//! (`timeline.rs`) both use it without depending on each other.

/// A position in time order: hits strictly after it (in the sort direction) come next.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Cursor {
    pub time: i64,
    pub block_id: u64,
    pub doc: u32,
}

impl Cursor {
    /// Parses the text `Hit::cursor` prints: `time:block:doc`.
    pub fn parse(text: &str) -> Option<Cursor> {
        let mut parts = text.split(':');
        let cursor = Cursor {
            time: parts.next()?.parse().ok()?,
            block_id: parts.next()?.parse().ok()?,
            doc: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(cursor)
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.time, self.block_id, self.doc)
    }
}
