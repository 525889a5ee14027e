//! Documents by id: Elasticsearch's `_id`, `_version`, `_seq_no`, replace and delete, over
//! events that never change.
//!
//! An event written with an `_id` is a *document*. It carries its sequence number in the
//! hidden field `_seq_no` (numbered per tenant from 0, in the order writes were decided) and
//! its version in `_version` where that is not 1.
//! Replacing a document writes a new event with a higher sequence number; deleting it writes
//! nothing but a line here. Which event of an id a search sees is decided by rule, not by
//! changing blocks:
//!
//! - the ids this table lists (written more than once, deleted, or with a version that is
//!   not 1) are *resolved*: of the events holding such an id, only the one with the highest
//!   sequence number is live, and none whose number is below the id's last delete
//!   (`Entry::floor`); the rest are the searcher's deleted docs
//!   (`quarry_query::Searcher::with_deleted`), left out of every search, count and
//!   aggregation;
//! - any other id's one event is live, at version 1.
//!
//! **Order of writes.** A change is written here (appended, fsynced) before the event that
//! makes it goes to the WAL. A crash (or a refused ingest) between the two leaves the table
//! naming a write that never happened: the rule above then keeps the id's previous event
//! live (the highest sequence number there is), at the version that event holds, so no
//! document is ever duplicated or lost by a crash.
//!
//! **Decisions** (version checks, `create` of an existing id) are taken under one lock per
//! tenant, from this table, the writes not yet visible (`recent`), and the published
//! snapshot, so two requests writing one id are ordered. `recent` holds every write until
//! the request that made it is answered (its events are visible by then).
//!
//! The file `documents.log` (beside the tenant's catalog) holds one JSON line per change and
//! `{"reserve": N}` lines: sequence numbers are handed out below the last reserve, so a
//! restart never hands out a number again. It is rewritten whole when it holds many
//! superseded lines.

use quarry_format::BlockReader;
use quarry_query::parser::{Ast, Occur};
use quarry_query::{SearchRequest, Searcher, SortOrder};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The hidden fields holding a document's sequence number and its version (where not 1).
pub(crate) use quarry_store::mapping::{SEQ_FIELD, VERSION_FIELD};
/// Sequence numbers reserved in the file at once.
const RESERVE: u64 = 1_024;
/// Elasticsearch's primary term: Quarry has one copy of each document, never re-elected.
pub(crate) const PRIMARY_TERM: u64 = 1;

/// Writes a request decided: (id, sequence number), for `DocTable::answered`.
pub(crate) type Written = Vec<(String, u64)>;

/// The last write of a listed id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The version the last write gave the document (or its delete).
    pub version: u64,
    /// The last write's sequence number.
    pub seq: u64,
    /// The sequence number of the id's last delete: events numbered below it are dead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<u64>,
}

impl Entry {
    /// Whether the last write was a delete.
    pub fn deleted(&self) -> bool {
        self.floor == Some(self.seq)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Reserve { reserve: u64 },
    Change { id: String, entry: Entry },
}

/// One tenant's table of documents (see the module's notes).
pub(crate) struct DocTable {
    path: PathBuf,
    inner: Mutex<Inner>,
}

struct Inner {
    file: File,
    lines: usize,
    next_seq: u64,
    reserved: u64,
    /// Ids to resolve; shared with the snapshots built from it.
    entries: Arc<HashMap<String, Entry>>,
    /// Changed whenever `entries` is.
    generation: u64,
    /// Writes decided and not yet answered (maybe not yet visible).
    recent: HashMap<String, Entry>,
}

/// What a document id is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Never written (or forgotten).
    Missing,
    /// Live, at this version and sequence number.
    Live { version: u64, seq: u64 },
    /// Deleted at this version.
    Deleted { version: u64 },
}

/// How a write checks the document it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Conditions {
    pub if_seq_no: Option<u64>,
    pub if_primary_term: Option<u64>,
    /// `version` with `version_type` external or external_gte.
    pub external: Option<(u64, bool)>,
}

/// What a write does to a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Write it, replacing any live one.
    Index,
    /// Write it unless one is live.
    Create,
    Delete,
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 409, `version_conflict_engine_exception`.
    Conflict(String),
    /// 404: a delete of a document that is not there.
    NotFound,
}

/// A decided write: the version it gives and whether the document was live before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decision {
    pub version: u64,
    pub existed: bool,
}

/// Decides a write of document `id` in `state`, as Elasticsearch does.
pub(crate) fn decide(
    id: &str,
    op: Op,
    conditions: &Conditions,
    state: State,
) -> Result<Decision, Refusal> {
    let (current_version, current_seq, live) = match state {
        State::Missing => (None, None, false),
        State::Live { version, seq } => (Some(version), Some(seq), true),
        State::Deleted { version } => (Some(version), None, false),
    };
    if let (Some(seq), term) = (conditions.if_seq_no, conditions.if_primary_term) {
        let term = term.unwrap_or(PRIMARY_TERM);
        match current_seq {
            None => {
                return Err(Refusal::Conflict(format!(
                    "[{id}]: version conflict, required seqNo [{seq}], primary term [{term}] but no document was found"
                )))
            }
            Some(current) if current != seq || term != PRIMARY_TERM => {
                return Err(Refusal::Conflict(format!(
                    "[{id}]: version conflict, required seqNo [{seq}], primary term [{term}]. current document has seqNo [{current}] and primary term [{PRIMARY_TERM}]"
                )))
            }
            Some(_) => {}
        }
    }
    if op == Op::Create && live {
        return Err(Refusal::Conflict(format!(
            "[{id}]: version conflict, document already exists (current version [{}])",
            current_version.unwrap_or(1)
        )));
    }
    if op == Op::Delete && !live && conditions.external.is_none() {
        return Err(Refusal::NotFound);
    }
    let version = match (conditions.external, current_version) {
        (Some((given, gte)), Some(current)) => {
            let fine = if gte {
                given >= current
            } else {
                given > current
            };
            if !fine {
                let relation = if gte {
                    "is higher than"
                } else {
                    "is higher or equal to"
                };
                return Err(Refusal::Conflict(format!(
                    "[{id}]: version conflict, current version [{current}] {relation} the one provided [{given}]"
                )));
            }
            given
        }
        (Some((given, _)), None) => given,
        (None, Some(current)) => current + 1,
        (None, None) => 1,
    };
    Ok(Decision {
        version,
        existed: live,
    })
}

impl DocTable {
    /// Opens (or creates) the table of the tenant whose catalog is in `dir`.
    pub(crate) fn open(dir: &Path) -> std::io::Result<DocTable> {
        let path = dir.join("documents.log");
        let mut entries = HashMap::new();
        let mut reserved = 0;
        let mut lines = 0;
        if let Ok(file) = File::open(&path) {
            for line in BufReader::new(file).lines() {
                let line = line?;
                // A torn last line (a crash mid-append) was never acknowledged.
                match serde_json::from_str::<Line>(&line) {
                    Ok(Line::Reserve { reserve }) => reserved = reserved.max(reserve),
                    Ok(Line::Change { id, entry }) => {
                        entries.insert(id, entry);
                    }
                    Err(_) => continue,
                }
                lines += 1;
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let table = DocTable {
            path,
            inner: Mutex::new(Inner {
                file,
                lines,
                next_seq: reserved,
                reserved,
                entries: Arc::new(entries),
                generation: 0,
                recent: HashMap::new(),
            }),
        };
        if lines > 0 {
            // Numbers below the last reserve may have been handed out: start above it.
            table.lock().rewrite(&table.path)?;
        }
        Ok(table)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the table's lock for deciding writes.
    pub(crate) fn writer(&self) -> Writer<'_> {
        Writer {
            table: self,
            inner: self.lock(),
            changes: Vec::new(),
        }
    }

    /// The ids to resolve and their generation (changed whenever they are).
    pub(crate) fn entries(&self) -> (Arc<HashMap<String, Entry>>, u64) {
        let inner = self.lock();
        (inner.entries.clone(), inner.generation)
    }

    /// Forgets the recent writes `ids` made (their request is answered: they are visible),
    /// unless a later write replaced them.
    pub(crate) fn answered(&self, writes: &[(String, u64)]) {
        let mut inner = self.lock();
        for (id, seq) in writes {
            if inner.recent.get(id).is_some_and(|entry| entry.seq == *seq) {
                inner.recent.remove(id);
            }
        }
    }
}

/// Lines as the file holds them: one JSON object each.
fn encode(lines: &[Line]) -> std::io::Result<Vec<u8>> {
    let mut text = Vec::new();
    for line in lines {
        serde_json::to_writer(&mut text, line).map_err(std::io::Error::other)?;
        text.push(b'\n');
    }
    Ok(text)
}

impl Inner {
    fn append(&mut self, lines: &[Line]) -> std::io::Result<()> {
        self.file.write_all(&encode(lines)?)?;
        self.file.sync_data()?;
        self.lines += lines.len();
        Ok(())
    }

    /// Writes the file anew: the entries and a reserve above every number handed out.
    fn rewrite(&mut self, path: &Path) -> std::io::Result<()> {
        self.reserved = self.next_seq + RESERVE;
        let mut lines: Vec<Line> = vec![Line::Reserve {
            reserve: self.reserved,
        }];
        lines.extend(self.entries.iter().map(|(id, entry)| Line::Change {
            id: id.clone(),
            entry: *entry,
        }));
        let temporary = path.with_extension("log.new");
        {
            let mut file = File::create(&temporary)?;
            file.write_all(&encode(&lines)?)?;
            file.sync_all()?;
        }
        std::fs::rename(&temporary, path)?;
        if let Some(dir) = path.parent() {
            File::open(dir)?.sync_all()?;
        }
        self.file = OpenOptions::new().append(true).open(path)?;
        self.lines = lines.len();
        Ok(())
    }
}

/// The table locked for deciding writes; `commit` makes the decided changes durable.
pub(crate) struct Writer<'a> {
    table: &'a DocTable,
    inner: MutexGuard<'a, Inner>,
    changes: Vec<Change>,
}

impl Writer<'_> {
    /// The last write of `id` decided and not yet answered: by this writer, else by a
    /// request under way.
    fn pending(&self, id: &str) -> Option<Entry> {
        self.changes
            .iter()
            .rev()
            .find(|change| change.id == id)
            .map(|change| change.entry)
            .or_else(|| self.inner.recent.get(id).copied())
    }

    /// The state of each of `ids` (recent writes, the table, then the searcher's events).
    pub(crate) fn states(
        &self,
        searcher: &Searcher,
        ids: &[&str],
    ) -> Result<HashMap<String, State>, quarry_query::QueryError> {
        let mut states = HashMap::new();
        let mut look_up = Vec::new();
        for id in ids {
            match self.pending(id) {
                Some(entry) => {
                    states.insert((*id).to_owned(), state_of(&entry));
                }
                None => look_up.push(*id),
            }
        }
        // The live event of each other id (the searcher leaves out dead ones), at the version
        // it holds (the table's may name a write that failed after it was decided).
        for (id, seq, version) in live_events(searcher, &look_up)? {
            states.insert(
                id,
                State::Live {
                    version,
                    seq: seq.unwrap_or(0),
                },
            );
        }
        for id in look_up {
            if !states.contains_key(id) {
                let state = match self.inner.entries.get(id) {
                    Some(entry) if entry.deleted() => State::Deleted {
                        version: entry.version,
                    },
                    _ => State::Missing,
                };
                states.insert(id.to_owned(), state);
            }
        }
        Ok(states)
    }

    /// The next sequence number.
    pub(crate) fn next_seq(&mut self) -> std::io::Result<u64> {
        if self.inner.next_seq >= self.inner.reserved {
            let reserve = self.inner.next_seq + RESERVE;
            self.inner.append(&[Line::Reserve { reserve }])?;
            self.inner.reserved = reserve;
        }
        let seq = self.inner.next_seq;
        self.inner.next_seq += 1;
        Ok(seq)
    }

    /// Records a decided write: `id` now at `version`, by the write numbered `seq` (a delete
    /// when `deleted`), given the state `was` it was in.
    pub(crate) fn record(&mut self, id: &str, version: u64, seq: u64, deleted: bool, was: State) {
        let floor = if deleted {
            Some(seq)
        } else {
            match self.pending(id) {
                Some(entry) => entry.floor,
                None => self.inner.entries.get(id).and_then(|entry| entry.floor),
            }
        };
        // An id is listed once it has had an event before (replaced, deleted) or its version
        // is not the 1 an unlisted id's event is given.
        let listed = was != State::Missing || version != 1 || deleted;
        self.changes.push(Change {
            id: id.to_owned(),
            entry: Entry {
                version,
                seq,
                floor,
            },
            listed,
        });
    }

    /// Makes the decided writes durable (the lines listed ids need) and visible to the next
    /// snapshot's resolution; returns the writes to pass to `DocTable::answered` once the
    /// request is answered.
    pub(crate) fn commit(mut self, live: &crate::live::LiveIndex) -> std::io::Result<Written> {
        let changes = std::mem::take(&mut self.changes);
        let lines: Vec<Line> = changes
            .iter()
            .filter(|change| change.listed || self.inner.entries.contains_key(&change.id))
            .map(|change| Line::Change {
                id: change.id.clone(),
                entry: change.entry,
            })
            .collect();
        if !lines.is_empty() {
            self.inner.append(&lines)?;
            let entries = Arc::make_mut(&mut self.inner.entries);
            let mut added = Vec::new();
            for line in &lines {
                if let Line::Change { id, entry } = line {
                    if entries.insert(id.clone(), *entry).is_none() {
                        added.push(id.clone());
                    }
                }
            }
            self.inner.generation += 1;
            live.set_documents(self.inner.entries.clone(), self.inner.generation, added);
        }
        let mut written = Vec::with_capacity(changes.len());
        for change in changes {
            written.push((change.id.clone(), change.entry.seq));
            self.inner.recent.insert(change.id, change.entry);
        }
        if self.inner.lines > 4 * self.inner.entries.len() + 10_000 {
            let path = self.table.path.clone();
            self.inner.rewrite(&path)?;
        }
        Ok(written)
    }
}

/// A write decided under a `Writer`.
struct Change {
    id: String,
    entry: Entry,
    /// The id must be listed (resolved by the snapshots).
    listed: bool,
}

fn state_of(entry: &Entry) -> State {
    if entry.deleted() {
        State::Deleted {
            version: entry.version,
        }
    } else {
        State::Live {
            version: entry.version,
            seq: entry.seq,
        }
    }
}

/// The live events of `ids` in `searcher`: each id, its `_seq_no` (None for events written
/// before documents had one) and its version.
fn live_events(
    searcher: &Searcher,
    ids: &[&str],
) -> Result<Vec<(String, Option<u64>, u64)>, quarry_query::QueryError> {
    let mut found = Vec::new();
    for chunk in ids.chunks(1_000) {
        if chunk.is_empty() {
            continue;
        }
        let request = SearchRequest {
            ast: Some(ids_query(chunk)),
            sort: SortOrder::TimeAsc,
            limit: crate::MAX_SEARCH_LIMIT,
            ..Default::default()
        };
        for hit in searcher.execute(&request)?.hits {
            if let (Some(id), seq, version) = document_of(hit.event) {
                found.push((id, seq, version));
            }
        }
    }
    Ok(found)
}

fn ids_query(ids: &[&str]) -> Ast {
    Ast::Bool(
        ids.iter()
            .map(|id| {
                let exact = Ast::Exact {
                    field: quarry_query::doc_id::ID_FIELD.to_owned(),
                    value: (*id).to_owned(),
                };
                (Occur::Should, exact)
            })
            .collect(),
    )
}

/// An event's document id, sequence number and version (1 unless it holds another).
fn document_of(fields: Vec<(String, quarry_format::Value)>) -> (Option<String>, Option<u64>, u64) {
    let (mut id, mut seq, mut version) = (None, None, 1);
    for (name, value) in fields {
        match (name.as_str(), value) {
            (quarry_query::doc_id::ID_FIELD, quarry_format::Value::Str(text)) => id = Some(text),
            (SEQ_FIELD, value) => seq = as_u64(&value),
            (VERSION_FIELD, value) => version = as_u64(&value).unwrap_or(1),
            _ => {}
        }
    }
    (id, seq, version)
}

fn as_u64(value: &quarry_format::Value) -> Option<u64> {
    match value {
        quarry_format::Value::U64(n) => Some(*n),
        quarry_format::Value::I64(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}

/// The events of listed ids in one block: (id, doc, sequence number).
pub(crate) type Occurrences = Arc<Vec<(String, u32, Option<u64>)>>;

/// Finds the events of the listed ids in `block`.
pub(crate) fn occurrences(
    block: &Arc<BlockReader>,
    schema: &Arc<quarry_index::Schema>,
    entries: &HashMap<String, Entry>,
) -> Result<Occurrences, quarry_query::QueryError> {
    let mut found = Vec::new();
    if block
        .field_ordinal(quarry_query::doc_id::ID_FIELD)
        .is_none()
    {
        return Ok(Arc::new(found));
    }
    let searcher = Searcher::from_shared_with(vec![block.clone()], schema.clone());
    let ids: Vec<&str> = entries.keys().map(String::as_str).collect();
    for chunk in ids.chunks(1_000) {
        let query = searcher.plan(&ids_query(chunk))?;
        let hits = searcher.search(
            &query,
            &quarry_query::HitsRequest {
                // Every match: at most the block's docs.
                limit: block.doc_count() as usize,
                count: false,
                sort: SortOrder::TimeAsc,
                after: None,
            },
        )?;
        for hit in hits.hits {
            let fields = searcher.fields(&hit, &[quarry_query::doc_id::ID_FIELD, SEQ_FIELD])?;
            if let (Some(id), seq, _) = document_of(fields) {
                found.push((id, hit.doc, seq));
            }
        }
    }
    Ok(Arc::new(found))
}

/// The dead docs of each block (by `quarry_query::searcher::block_key`): of the events of a
/// listed id, all but the one with the highest sequence number, and those below its floor.
pub(crate) fn dead_docs(
    found: &[(usize, Occurrences)],
    entries: &HashMap<String, Entry>,
) -> HashMap<usize, Arc<[u32]>> {
    // The live event of each id: (sequence number, block key, doc).
    let mut best: HashMap<&str, (Option<u64>, usize, u32)> = HashMap::new();
    for (key, events) in found {
        for (id, doc, seq) in events.iter() {
            let candidate = (*seq, *key, *doc);
            best.entry(id.as_str())
                .and_modify(|current| {
                    if candidate.0 > current.0 {
                        *current = candidate;
                    }
                })
                .or_insert(candidate);
        }
    }
    let mut dead: HashMap<usize, Vec<u32>> = HashMap::new();
    for (key, events) in found {
        for (id, doc, seq) in events.iter() {
            let floor = entries.get(id).and_then(|entry| entry.floor);
            let below_floor = floor.is_some_and(|floor| seq.is_none_or(|seq| seq < floor));
            let live = best
                .get(id.as_str())
                .is_some_and(|(_, k, d)| k == key && d == doc);
            if below_floor || !live {
                dead.entry(*key).or_default().push(*doc);
            }
        }
    }
    dead.into_iter()
        .map(|(key, mut docs)| {
            docs.sort_unstable();
            docs.dedup();
            (key, Arc::from(docs))
        })
        .collect()
}
