//! The index behind the server: one `IndexWriter`, documents acknowledged only once a commit
//! holds them, and a reader reloaded after each commit, so an acknowledged event is durable and
//! searchable (Quickwit's `commit=force` contract, without its timer).
//!
//! **Group commit.** A commit flushes every document added before it, whoever added it, and
//! costs the same for one request's documents as for eight. So requests add their documents
//! concurrently (the writer's `add_document` takes `&self`, under the read side of a lock), then
//! wait for a commit that covers them; the first waiter that finds no commit running runs one
//! (the write side of the lock: tantivy's `commit` takes `&mut self`) for everyone waiting.
//! With one client this is one commit per request; with C clients, up to C requests share one.
//!
//! Generations: documents added while `open_generation` is `g` belong to generation `g`; a
//! commit bumps it under the write lock (so no add straddles it) and, once durable and the
//! reader reloaded, publishes `durable = g`. A request whose documents are in `g` is
//! acknowledged when `durable >= g`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, RwLock};

use anyhow::Context;
use tantivy::collector::Count;
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::TermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::schema::{self, Fields};

pub struct EngineOptions {
    /// Indexing threads of the writer.
    pub threads: usize,
    /// Memory budget of each indexing thread.
    pub heap_bytes_per_thread: usize,
}

pub struct Engine {
    index: Index,
    pub fields: Fields,
    /// `None` once shut down.
    writer: RwLock<Option<IndexWriter>>,
    reader: IndexReader,
    open_generation: AtomicU64,
    commits: Mutex<CommitState>,
    committed: Condvar,
}

#[derive(Default)]
struct CommitState {
    durable: u64,
    running: bool,
}

impl Engine {
    /// Creates the index in `dir` (an existing index there is opened and appended to).
    pub fn open(dir: &Path, options: &EngineOptions) -> anyhow::Result<Engine> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let directory = tantivy::directory::MmapDirectory::open(dir)
            .with_context(|| format!("opening {}", dir.display()))?;
        let index = Index::open_or_create(directory, schema::build())
            .with_context(|| format!("opening an index in {}", dir.display()))?;
        schema::register_tokenizers(&index);
        let fields = Fields::of(&index.schema())?;
        let writer: IndexWriter = index.writer_with_options(
            IndexWriterOptions::builder()
                .num_worker_threads(options.threads)
                .memory_budget_per_thread(options.heap_bytes_per_thread)
                .num_merge_threads(1)
                .build(),
        )?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Engine {
            index,
            fields,
            writer: RwLock::new(Some(writer)),
            reader,
            open_generation: AtomicU64::new(1),
            commits: Mutex::new(CommitState::default()),
            committed: Condvar::new(),
        })
    }

    /// Adds `documents` and returns once a commit holds them and the reader sees them.
    pub fn add_durably(&self, documents: Vec<TantivyDocument>) -> anyhow::Result<()> {
        let generation = {
            let writer = self.writer.read().unwrap_or_else(|p| p.into_inner());
            let writer = writer.as_ref().context("the engine is shutting down")?;
            for document in documents {
                writer.add_document(document)?;
            }
            // Read under the lock a commit needs exclusively: these documents are in it.
            self.open_generation.load(Ordering::SeqCst)
        };
        let mut state = self.commits.lock().unwrap_or_else(|p| p.into_inner());
        while state.durable < generation {
            if state.running {
                state = self
                    .committed
                    .wait(state)
                    .unwrap_or_else(|p| p.into_inner());
                continue;
            }
            state.running = true;
            drop(state);
            let outcome = self.commit();
            state = self.commits.lock().unwrap_or_else(|p| p.into_inner());
            state.running = false;
            if let Ok(durable) = outcome {
                state.durable = state.durable.max(durable);
            }
            self.committed.notify_all();
            // A failed commit fails the request that ran it; the others try again.
            outcome?;
        }
        Ok(())
    }

    /// Commits what was added, reloads the reader; returns the generation now durable.
    fn commit(&self) -> anyhow::Result<u64> {
        let generation = {
            let mut writer = self.writer.write().unwrap_or_else(|p| p.into_inner());
            let writer = writer.as_mut().context("the engine is shutting down")?;
            let generation = self.open_generation.fetch_add(1, Ordering::SeqCst);
            writer.commit().context("commit")?;
            generation
        };
        self.reader.reload().context("reloading the reader")?;
        Ok(generation)
    }

    /// Events whose `marker` is `value` (lowercased, as the keyword analyzer indexed it), in
    /// the reader's current view.
    pub fn count_marker(&self, value: &str) -> anyhow::Result<usize> {
        let term = Term::from_field_text(self.fields.marker, &value.to_lowercase());
        let query = TermQuery::new(term, IndexRecordOption::Basic);
        Ok(self.reader.searcher().search(&query, &Count)?)
    }

    /// Commits what is left, waits for running merges, closes the writer.
    pub fn shut_down(&self) -> anyhow::Result<()> {
        let writer = self
            .writer
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(mut writer) = writer {
            writer.commit().context("final commit")?;
            writer
                .wait_merging_threads()
                .context("waiting for merges")?;
        }
        Ok(())
    }

    pub fn index(&self) -> &Index {
        &self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bulk::{self, Item};

    fn documents(engine: &Engine, body: &str) -> Vec<TantivyDocument> {
        bulk::parse(body.as_bytes(), &engine.fields)
            .into_iter()
            .map(|item| match item {
                Item::Document(document) => document,
                Item::Failed(reason) => panic!("{reason}"),
            })
            .collect()
    }

    #[test]
    fn acknowledged_is_searchable_and_concurrent_requests_share_commits() {
        let dir = std::env::temp_dir().join(format!("tantivy-ingest-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let engine = Engine::open(
            &dir,
            &EngineOptions {
                threads: 1,
                heap_bytes_per_thread: 20_000_000,
            },
        )
        .unwrap();
        std::thread::scope(|scope| {
            for client in 0..4 {
                let engine = &engine;
                scope.spawn(move || {
                    for request in 0..5 {
                        let marker = format!("M{client}-{request}");
                        let body = format!(
                            "{{\"index\":{{}}}}\n{{\"_time\":\"2026-11-01T00:00:00.000Z\",\"marker\":\"{marker}\"}}\n"
                        );
                        engine.add_durably(documents(engine, &body)).unwrap();
                        assert_eq!(engine.count_marker(&marker).unwrap(), 1);
                    }
                });
            }
        });
        assert_eq!(engine.count_marker("nothing").unwrap(), 0);
        let commits = engine.open_generation.load(Ordering::SeqCst) - 1;
        assert!((1..=20).contains(&commits), "{commits} commits");
        engine.shut_down().unwrap();
        let reopened = Index::open_in_dir(&dir).unwrap();
        assert_eq!(reopened.reader().unwrap().searcher().num_docs(), 20);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
