//! What one search's reads cost a remote store (issue 28: "GETs, bytes fetched, cache hits per
//! query"). A search runs on one thread, and on the threads it starts to fetch in parallel;
//! it puts a [`FetchCounts`] in scope on each ([`FetchCounts::scope`]), and a block source that
//! fetches ([`super::BlockSource::fetch`]) adds to whichever is in scope on the thread that
//! asked. Without one in scope (opening blocks, merges), nothing is counted here; the store's
//! totals count everything.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One search's fetches from a remote store.
#[derive(Debug, Default)]
pub struct FetchCounts {
    /// Batches of ranged reads sent (each one round trip: its ranges go in parallel).
    pub round_trips: AtomicU64,
    /// Ranges read (the store may coalesce neighbours into one request).
    pub ranges: AtomicU64,
    pub bytes: AtomicU64,
    /// Reads the local copy answered without a request.
    pub cache_hits: AtomicU64,
}

thread_local! {
    static IN_SCOPE: RefCell<Option<Arc<FetchCounts>>> = const { RefCell::new(None) };
}

/// Puts back what was in scope before, even if the work panics.
struct Restore(Option<Arc<FetchCounts>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        IN_SCOPE.with(|slot| *slot.borrow_mut() = previous);
    }
}

impl FetchCounts {
    /// Runs `work` with the fetches it makes on this thread counted in `self`.
    pub fn scope<R>(self: &Arc<Self>, work: impl FnOnce() -> R) -> R {
        let previous = IN_SCOPE.with(|slot| slot.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        work()
    }

    /// The counts in scope on this thread, to carry into threads a search starts.
    pub fn in_scope() -> Option<Arc<FetchCounts>> {
        IN_SCOPE.with(|slot| slot.borrow().clone())
    }

    /// Runs `work` in the scope of `counts` if there is one.
    pub fn within<R>(counts: Option<&Arc<FetchCounts>>, work: impl FnOnce() -> R) -> R {
        match counts {
            Some(counts) => counts.scope(work),
            None => work(),
        }
    }

    /// Counts a round trip of `ranges` ranges and `bytes` bytes, for the search in scope.
    pub fn record_fetch(ranges: u64, bytes: u64) {
        if let Some(counts) = Self::in_scope() {
            counts.round_trips.fetch_add(1, Ordering::Relaxed);
            counts.ranges.fetch_add(ranges, Ordering::Relaxed);
            counts.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Counts a read the local copy answered, for the search in scope.
    pub fn record_cache_hit() {
        if let Some(counts) = Self::in_scope() {
            counts.cache_hits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether anything was counted (a search that read only local blocks counts nothing).
    pub fn is_empty(&self) -> bool {
        self.round_trips.load(Ordering::Relaxed) == 0
            && self.cache_hits.load(Ordering::Relaxed) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches_count_for_the_scope_of_the_thread_that_made_them() {
        let outer = Arc::new(FetchCounts::default());
        let inner = Arc::new(FetchCounts::default());
        FetchCounts::record_fetch(1, 10); // no scope: not counted
        outer.scope(|| {
            FetchCounts::record_fetch(2, 100);
            inner.scope(FetchCounts::record_cache_hit);
            // Carried into a thread the search starts.
            let carried = FetchCounts::in_scope();
            std::thread::scope(|s| {
                s.spawn(|| {
                    FetchCounts::within(carried.as_ref(), || FetchCounts::record_fetch(3, 1000))
                });
                // A thread it did not carry into counts nothing.
                s.spawn(|| FetchCounts::record_fetch(5, 5));
            });
            FetchCounts::record_cache_hit();
        });
        FetchCounts::record_cache_hit(); // the scope is over
        assert_eq!(outer.round_trips.load(Ordering::Relaxed), 2);
        assert_eq!(outer.ranges.load(Ordering::Relaxed), 5);
        assert_eq!(outer.bytes.load(Ordering::Relaxed), 1100);
        assert_eq!(outer.cache_hits.load(Ordering::Relaxed), 1);
        assert_eq!(inner.cache_hits.load(Ordering::Relaxed), 1);
        assert!(inner.round_trips.load(Ordering::Relaxed) == 0 && !inner.is_empty());
        assert!(FetchCounts::in_scope().is_none());
    }
}
