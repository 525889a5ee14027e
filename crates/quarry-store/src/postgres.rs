//! The metastore on PostgreSQL: the catalogs ([`PgMetastore`], one per tenant) and the tenant
//! registry ([`PgTenants`]) in a database that several Quarry nodes share, in place of the
//! data directory's `catalog.json` and `tenants.json`. Same traits, same answers: the
//! conformance suite (`tests/metastore_conformance.rs`) runs against both.
//!
//! - **Transactions.** Every commit is one transaction: a flush's blocks and its WAL
//!   checkpoint, a merge's outputs and the retirement of its inputs, a registry change.
//! - **Several writers per catalog, each fenced.** Every indexer writing a tenant is a writer
//!   (its data directory's WAL for the tenant, named by [`crate::metastore::writer_id`]).
//!   Opening a catalog for writing increments that writer's `epoch` (`quarry_writers`); every
//!   commit and every id taken checks it under a row lock. A second process on the same WAL
//!   (a node restarted while its old self still runs) fences the first off: it gets
//!   [`CatalogError::Fenced`] and commits nothing more. Other writers are not disturbed.
//! - **A writer's blocks are its own.** Each block names its writer; a writer lists, merges
//!   and expires only its own, so its view of them is exact without reading the others' and
//!   two writers never retire the same block (a commit that would retire a block that is not
//!   the writer's is refused whole). Readers ([`PgReplica`]) see every writer's.
//! - **A silent writer's blocks are taken over.** Writers beat (`quarry_writers.seen`) each
//!   time they read the catalog again; a live writer takes over the blocks of one silent for
//!   long enough ([`Metastore::adopt_silent`]), deleting its row, which fences it off: should
//!   it be alive after all, it opens the catalog again with no blocks of its own
//!   ([`Metastore::reopen_if_adopted`]) before committing anything more.
//! - **Block ids are taken in the database** (`next_block_id`, one statement per block), so an
//!   id is never handed out twice, not even to a writer fenced off after taking it: a block
//!   object written under an id can only ever be that block.
//! - **Schema** in `migrations/`, applied in order at connect ([`migrate`]) in one transaction
//!   under an advisory lock; a database migrated by a newer build is refused, not guessed at.
//!
//! The `postgres` crate's client is synchronous and runs its own small runtime, which must not
//! be entered from an async task: each [`Postgres`] keeps its connection on a thread of its
//! own and hands it work over a channel, so callers anywhere (async handlers, blocking threads,
//! the CLI) block only on the answer, as they do on the local catalog's fsync. A broken
//! connection is reopened for the next request. TLS is not supported yet (`sslmode=disable`
//! is what a loopback or private-network database needs).

use crate::catalog::{BlockEntry, CatalogError, Result, Settings};
use crate::mapping::Mapping;
use crate::metastore::Metastore;
use crate::tenants::{validate_name, TenantRegistry, TenantSpec};
use ::postgres::{Client, NoTls, Transaction};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The schema, in order; the version of a migration is its position (from 1).
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_metastore.sql"),
    include_str!("../migrations/0002_nodes.sql"),
    include_str!("../migrations/0003_writers.sql"),
    include_str!("../migrations/0004_writer_beats.sql"),
];

/// How long a session may sit in a transaction without sending anything before the database
/// ends it (every transaction of Quarry's runs its statements back to back).
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(15);

/// Key of the advisory lock held while migrating (any constant; "QRRY").
const MIGRATION_LOCK: i64 = 0x5152_5259;

type Job = Box<dyn FnOnce(std::result::Result<&mut Client, ::postgres::Error>) + Send>;

/// A connection to the metastore's database, on its own thread.
pub struct Postgres {
    /// The URL without its password, for messages.
    shown: String,
    jobs: Mutex<mpsc::Sender<Job>>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("url", &self.shown)
            .finish()
    }
}

impl Postgres {
    /// Connects to `url` (`postgres://user@host:port/db`, or the key=value form) and brings
    /// the schema up to date.
    pub fn connect(url: &str) -> Result<Arc<Postgres>> {
        let mut config: ::postgres::Config = url.parse().map_err(|e| CatalogError::Postgres {
            url: shown_url(url),
            message: format!("not a PostgreSQL connection URL: {e}"),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        // A node that stops in the middle of a transaction (paused, cut off) would hold its
        // row locks, and with them the other writers' takeover of its blocks, for as long as
        // its session lasts: the database ends such a session after a while.
        let options = format!(
            "{} -c idle_in_transaction_session_timeout={}",
            config.get_options().unwrap_or_default(),
            IDLE_IN_TRANSACTION.as_millis()
        );
        config.options(options.trim_start());
        let (sender, jobs) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("quarry-postgres".into())
            .spawn(move || {
                let mut client: Option<Client> = None;
                for job in jobs {
                    if client.as_ref().is_none_or(Client::is_closed) {
                        client = None;
                        match config.connect(NoTls) {
                            Ok(connected) => client = Some(connected),
                            Err(error) => {
                                job(Err(error));
                                continue;
                            }
                        }
                    }
                    // unwrap: connected just above.
                    job(Ok(client.as_mut().unwrap()));
                }
            })
            .map_err(|source| CatalogError::Io {
                path: "quarry-postgres thread".into(),
                source,
            })?;
        let postgres = Arc::new(Postgres {
            shown: shown_url(url),
            jobs: Mutex::new(sender),
        });
        postgres.run(migrate)?;
        Ok(postgres)
    }

    /// The URL without its password.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// Runs `work` on the connection's thread and waits for its answer.
    pub fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<R, PgFailure> + Send + 'static,
    ) -> Result<R> {
        self.run_raw(work)
            .map_err(|failure| failure.into_error(&self.shown))
    }

    /// `run` for work that may safely run twice (reads, taking an id): once more on a new
    /// connection when the one at hand turns out broken (the database restarted since the
    /// last request).
    pub fn run_idempotent<R: Send + 'static>(
        &self,
        work: impl Fn(&mut Client) -> Result<R, PgFailure> + Send + Sync + 'static,
    ) -> Result<R> {
        let work = Arc::new(work);
        let first = work.clone();
        match self.run_raw(move |client| first(client)) {
            Err(failure) if failure.in_doubt() => self.run(move |client| work(client)),
            other => other.map_err(|failure| failure.into_error(&self.shown)),
        }
    }

    /// `run`, the failure as it happened.
    fn run_raw<R: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<R, PgFailure> + Send + 'static,
    ) -> Result<R, PgFailure> {
        let (reply, answer) = mpsc::channel();
        let job: Job = Box::new(move |client| {
            let result = match client {
                Ok(client) => work(client),
                Err(error) => Err(PgFailure::Db(error)),
            };
            let _ = reply.send(result);
        });
        let sent = self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(job);
        match sent {
            Ok(()) => answer.recv().unwrap_or_else(|_| {
                Err(PgFailure::Other("the connection's thread stopped".into()))
            }),
            Err(_) => Err(PgFailure::Other("the connection's thread stopped".into())),
        }
    }
}

/// What went wrong on the connection's thread (turned into a [`CatalogError`] naming the
/// database by [`Postgres::run`]).
#[derive(Debug)]
pub enum PgFailure {
    Db(::postgres::Error),
    /// Another node opened the catalog for writing after this one did.
    Fenced {
        catalog: String,
    },
    Catalog(CatalogError),
    Other(String),
}

impl From<::postgres::Error> for PgFailure {
    fn from(error: ::postgres::Error) -> PgFailure {
        PgFailure::Db(error)
    }
}

impl From<CatalogError> for PgFailure {
    fn from(error: CatalogError) -> PgFailure {
        PgFailure::Catalog(error)
    }
}

impl PgFailure {
    /// Whether a commit that failed so may have been committed all the same: the connection
    /// failed (possibly after COMMIT was sent) rather than the server refusing a statement.
    fn in_doubt(&self) -> bool {
        matches!(self, PgFailure::Db(error) if error.as_db_error().is_none())
    }

    fn into_error(self, url: &str) -> CatalogError {
        let url = url.to_owned();
        match self {
            PgFailure::Db(error) => {
                // The server's own message says most ("relation ... does not exist", "password
                // authentication failed"); the client's Display alone is often just "db error".
                let message = match error.as_db_error() {
                    Some(db) => format!("{} ({})", db.message(), db.code().code()),
                    None => error.to_string(),
                };
                CatalogError::Postgres { url, message }
            }
            PgFailure::Fenced { catalog } => CatalogError::Fenced { url, catalog },
            PgFailure::Catalog(error) => error,
            PgFailure::Other(message) => CatalogError::Postgres { url, message },
        }
    }
}

/// `url` without its password.
pub(crate) fn shown_url(url: &str) -> String {
    // postgres://user:password@host/db → postgres://user@host/db
    if let Some((scheme, rest)) = url.split_once("://") {
        if let Some((credentials, host)) = rest.split_once('@') {
            let user = credentials.split(':').next().unwrap_or("");
            return format!("{scheme}://{user}@{host}");
        }
    }
    if url.contains("password") {
        return "(a connection string with a password)".into();
    }
    url.to_owned()
}

/// Applies the migrations the database lacks, in one transaction under an advisory lock.
fn migrate(client: &mut Client) -> Result<(), PgFailure> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS quarry_migrations (
             version INTEGER PRIMARY KEY,
             applied TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )?;
    let current: i32 = tx
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM quarry_migrations",
            &[],
        )?
        .get(0);
    let known = MIGRATIONS.len() as i32;
    if current > known {
        return Err(PgFailure::Other(format!(
            "the metastore's schema is at version {current}, newer than this build knows \
             ({known}): upgrade Quarry"
        )));
    }
    for (version, sql) in (1..).zip(MIGRATIONS).skip(current as usize) {
        tx.batch_execute(sql)?;
        tx.execute(
            "INSERT INTO quarry_migrations (version) VALUES ($1)",
            &[&version],
        )?;
    }
    tx.commit()?;
    Ok(())
}

fn to_db(value: u64, what: &str) -> Result<i64, PgFailure> {
    i64::try_from(value).map_err(|_| PgFailure::Other(format!("{what} {value} exceeds 2^63")))
}

/// Block ids as the database's BIGINT (ids above 2^63 are never handed out).
fn db_ids(ids: impl IntoIterator<Item = u64>) -> Vec<i64> {
    ids.into_iter()
        .map(|id| i64::try_from(id).unwrap_or(i64::MAX))
        .collect()
}

fn from_db(value: i64, what: &str) -> Result<u64, PgFailure> {
    u64::try_from(value)
        .map_err(|_| PgFailure::Other(format!("{what} {value} in the metastore is negative")))
}

/// Locks the row of `writer` in the catalog and checks that `epoch` is still its token.
fn fence(
    tx: &mut Transaction<'_>,
    catalog: &str,
    writer: &str,
    epoch: i64,
) -> Result<(), PgFailure> {
    let row = tx.query_opt(
        "SELECT epoch FROM quarry_writers WHERE catalog = $1 AND writer = $2 FOR UPDATE",
        &[&catalog, &writer],
    )?;
    match row.map(|row| row.get::<_, i64>(0)) {
        Some(current) if current == epoch => Ok(()),
        _ => Err(PgFailure::Fenced {
            catalog: catalog.to_owned(),
        }),
    }
}

fn insert_blocks(
    tx: &mut Transaction<'_>,
    catalog: &str,
    writer: &str,
    entries: &[BlockEntry],
) -> Result<(), PgFailure> {
    let insert = tx.prepare(
        "INSERT INTO quarry_blocks (catalog, id, docs, time_min, time_max, bytes, open_from, writer)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )?;
    for entry in entries {
        tx.execute(
            &insert,
            &[
                &catalog,
                &to_db(entry.id, "block id")?,
                &to_db(entry.docs, "docs")?,
                &entry.time_min,
                &entry.time_max,
                &to_db(entry.bytes, "bytes")?,
                &to_db(entry.open_from, "open_from")?,
                &writer,
            ],
        )?;
    }
    Ok(())
}

/// The block a row lists, its first columns `id, docs, time_min, time_max, bytes, open_from`.
fn block_of(row: &::postgres::Row) -> Result<BlockEntry, PgFailure> {
    Ok(BlockEntry {
        id: from_db(row.get(0), "block id")?,
        docs: from_db(row.get(1), "docs")?,
        time_min: row.get(2),
        time_max: row.get(3),
        bytes: from_db(row.get(4), "bytes")?,
        open_from: from_db(row.get(5), "open_from")?,
    })
}

/// The settings (as stored, `settings`), blocks and WAL checkpoints of catalog `catalog`.
fn load(tx: &mut Transaction<'_>, catalog: &str, settings: &str) -> Result<Loaded, PgFailure> {
    let settings = parse_settings(catalog, settings)?;
    let mut blocks = Vec::new();
    let mut writers = Vec::new();
    for row in tx.query(
        "SELECT id, docs, time_min, time_max, bytes, open_from, writer FROM quarry_blocks
         WHERE catalog = $1 ORDER BY seq",
        &[&catalog],
    )? {
        writers.push(row.get::<_, String>(6));
        blocks.push(block_of(&row)?);
    }
    let mut wal = BTreeMap::new();
    for row in tx.query(
        "SELECT wal, seq FROM quarry_wal_checkpoints WHERE catalog = $1",
        &[&catalog],
    )? {
        wal.insert(row.get::<_, String>(0), from_db(row.get(1), "WAL seq")?);
    }
    Ok(Loaded {
        settings,
        blocks,
        writers,
        wal,
    })
}

/// `load` of a catalog the transaction knows exists.
fn load_existing(tx: &mut Transaction<'_>, catalog: &str) -> Result<Loaded, PgFailure> {
    let settings: String = tx
        .query_one(
            "SELECT settings FROM quarry_catalogs WHERE name = $1",
            &[&catalog],
        )?
        .get(0);
    load(tx, catalog, &settings)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn parse_settings(catalog: &str, settings: &str) -> Result<Settings, PgFailure> {
    serde_json::from_str(settings)
        .map_err(|e| PgFailure::Other(format!("catalog {catalog:?}: settings: {e}")))
}

/// A catalog state as the database holds it.
#[derive(Default)]
struct Loaded {
    settings: Settings,
    blocks: Vec<BlockEntry>,
    /// The writer of each block, in the same order.
    writers: Vec<String>,
    wal: BTreeMap<String, u64>,
}

/// The key of a writer's WAL checkpoint: the writer and the WAL's name.
fn wal_key(writer: &str, wal: &str) -> String {
    format!("{writer}/{wal}")
}

/// One tenant's catalog in PostgreSQL, opened for writing by one writer (fencing off an
/// earlier process of the same writer). Holds the writer's committed state in memory, as the
/// local catalog does, and changes it only after the database committed.
#[derive(Debug)]
pub struct PgMetastore {
    postgres: Arc<Postgres>,
    name: String,
    writer: String,
    epoch: i64,
    settings: Settings,
    /// This writer's blocks.
    blocks: Vec<BlockEntry>,
    /// The other writers' blocks as last read (`refresh`), and who wrote each.
    others: Vec<BlockEntry>,
    writers: std::collections::HashMap<u64, String>,
    wal: BTreeMap<String, u64>,
    /// Set when a commit's outcome could not be learned: this catalog then commits nothing
    /// more until it is opened again (which reads what the database holds).
    poisoned: Option<String>,
    /// The local directory's lock (`catalog::lock_dir`), when a server's WAL and files for
    /// this catalog are there.
    _lock: Option<std::fs::File>,
}

/// How often, and how long apart, a commit whose outcome is in doubt asks whether it landed.
const DOUBT_CHECKS: u32 = 10;
const DOUBT_PAUSE: Duration = Duration::from_millis(500);

/// Whether a commit landed, asked of the database after the connection failed during it.
type Landed = Box<dyn Fn(&mut Client) -> Result<bool, PgFailure> + Send + Sync>;

impl PgMetastore {
    /// Opens catalog `name` as `writer`, creating it with `settings` if the database has
    /// none yet (an existing one keeps its own); an earlier process of the same writer is
    /// fenced off.
    pub fn open_or_create(
        postgres: Arc<Postgres>,
        name: &str,
        writer: &str,
        settings: Settings,
    ) -> Result<PgMetastore> {
        let catalog = name.to_owned();
        let me = writer.to_owned();
        let initial = serde_json::to_string(&settings).map_err(|e| CatalogError::Postgres {
            url: postgres.shown.clone(),
            message: e.to_string(),
        })?;
        let (epoch, loaded) = postgres.run(move |client| {
            let mut tx = client.transaction()?;
            tx.execute(
                "INSERT INTO quarry_catalogs (name, settings, next_block_id)
                 VALUES ($1, $2, 1) ON CONFLICT (name) DO NOTHING",
                &[&catalog, &initial],
            )?;
            let epoch: i64 = tx
                .query_one(
                    "INSERT INTO quarry_writers (catalog, writer, epoch) VALUES ($1, $2, 1)
                     ON CONFLICT (catalog, writer)
                     DO UPDATE SET epoch = quarry_writers.epoch + 1, seen = now()
                     RETURNING epoch",
                    &[&catalog, &me],
                )?
                .get(0);
            let loaded = load_existing(&mut tx, &catalog)?;
            tx.commit()?;
            Ok((epoch, loaded))
        })?;
        let mut opened = PgMetastore {
            postgres,
            name: name.to_owned(),
            writer: writer.to_owned(),
            epoch,
            settings: loaded.settings.clone(),
            blocks: Vec::new(),
            others: Vec::new(),
            writers: Default::default(),
            wal: loaded.wal.clone(),
            poisoned: None,
            _lock: None,
        };
        opened.take_view(loaded);
        Ok(opened)
    }

    /// Runs the commit `work`. When the connection fails during it, the commit may or may not
    /// have landed (COMMIT may have been sent): a retry of a flush that did land would store
    /// its events twice. So the outcome is asked of the database (`landed`) until it answers;
    /// if it never does, the catalog is poisoned: it commits nothing more until reopened,
    /// which reads the truth (a restart; the WAL keeps every event meanwhile).
    fn commit(
        &mut self,
        work: impl FnOnce(&mut Client) -> Result<(), PgFailure> + Send + 'static,
        landed: Landed,
    ) -> Result<()> {
        if let Some(reason) = &self.poisoned {
            return Err(CatalogError::Postgres {
                url: self.postgres.shown.clone(),
                message: reason.clone(),
            });
        }
        let failure = match self.postgres.run_raw(work) {
            Ok(()) => return Ok(()),
            Err(failure) if !failure.in_doubt() => {
                return Err(failure.into_error(&self.postgres.shown))
            }
            Err(failure) => failure,
        };
        let landed = Arc::new(landed);
        for attempt in 0..DOUBT_CHECKS {
            if attempt > 0 {
                std::thread::sleep(DOUBT_PAUSE);
            }
            let check = landed.clone();
            match self.postgres.run_raw(move |client| check(client)) {
                Ok(true) => return Ok(()),
                Ok(false) => return Err(failure.into_error(&self.postgres.shown)),
                Err(_) => continue,
            }
        }
        let reason = format!(
            "a commit to catalog {:?} failed with the connection and the database did not say \
             whether it landed; this node commits nothing more to it until it restarts",
            self.name
        );
        tracing::error!(catalog = %self.name, "{reason}");
        self.poisoned = Some(reason);
        Err(failure.into_error(&self.postgres.shown))
    }

    /// Takes the blocks of a catalog state read: this writer's own (which only it changes:
    /// its list is authoritative once open) and the others'.
    fn take_view(&mut self, loaded: Loaded) {
        let (mut own, mut others) = (Vec::new(), Vec::new());
        self.writers.clear();
        for (block, writer) in loaded.blocks.into_iter().zip(loaded.writers) {
            if writer == self.writer {
                own.push(block);
            } else {
                others.push(block);
                self.writers
                    .insert(others.last().map_or(0, |b| b.id), writer);
            }
        }
        self.blocks = own;
        self.others = others;
        self.settings = loaded.settings;
    }

    /// Says this writer is alive (`quarry_writers.seen`); `Fenced` when its row is gone (its
    /// blocks were taken over) or holds another epoch (another process of it).
    fn beat(&self) -> Result<()> {
        let (catalog, writer, epoch) = (self.name.clone(), self.writer.clone(), self.epoch);
        self.postgres.run_idempotent(move |client| {
            let beaten = client.execute(
                "UPDATE quarry_writers SET seen = now()
                 WHERE catalog = $1 AND writer = $2 AND epoch = $3",
                &[&catalog, &writer, &epoch],
            )?;
            match beaten {
                1 => Ok(()),
                _ => Err(PgFailure::Fenced {
                    catalog: catalog.clone(),
                }),
            }
        })
    }

    /// Keeps `lock` (a local directory's) for as long as this catalog is open.
    pub fn holding(mut self, lock: std::fs::File) -> PgMetastore {
        self._lock = Some(lock);
        self
    }

    /// The committed settings and blocks of catalog `name`, for a reader (no writer is
    /// fenced off). A catalog the database does not have is an error naming it.
    pub fn read(postgres: &Postgres, name: &str) -> Result<(Settings, Vec<BlockEntry>)> {
        PgMetastore::read_if_any(postgres, name)?.ok_or_else(|| CatalogError::Postgres {
            url: postgres.url().to_owned(),
            message: format!(
                "the metastore has no catalog {name:?} (nothing was ever written to it)"
            ),
        })
    }

    /// `read`, with `None` for a catalog the database does not have (yet).
    pub fn read_if_any(
        postgres: &Postgres,
        name: &str,
    ) -> Result<Option<(Settings, Vec<BlockEntry>)>> {
        Ok(PgMetastore::read_state(postgres, name)?.map(|state| (state.settings, state.blocks)))
    }

    /// Every writer's blocks and their writers, in one snapshot.
    fn read_state(postgres: &Postgres, name: &str) -> Result<Option<Loaded>> {
        let catalog = name.to_owned();
        postgres.run_idempotent(move |client| {
            // One snapshot for the settings and the blocks.
            let mut tx = client
                .build_transaction()
                .isolation_level(::postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let Some(row) = tx.query_opt(
                "SELECT settings FROM quarry_catalogs WHERE name = $1",
                &[&catalog],
            )?
            else {
                return Ok(None);
            };
            let settings: String = row.get(0);
            let loaded = load(&mut tx, &catalog, &settings)?;
            tx.commit()?;
            Ok(Some(loaded))
        })
    }

    /// The catalog's name (its tenant).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Removes catalog `name` and everything it lists (its blocks' bytes are the caller's to
    /// delete from the block store). Whoever writes it is fenced off.
    pub fn drop_catalog(postgres: &Postgres, name: &str) -> Result<()> {
        let catalog = name.to_owned();
        postgres.run(move |client| {
            client.execute("DELETE FROM quarry_catalogs WHERE name = $1", &[&catalog])?;
            Ok(())
        })
    }
}

impl Metastore for PgMetastore {
    fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Other writers may have grown the mapping since this one read it: the update is merged
    /// into the stored mapping, under its row's lock, and the result is what is in force.
    fn set_mapping(&mut self, update: &Mapping) -> Result<Mapping> {
        // Checked against what this writer knows first: a conflict needs no round trip.
        self.settings.mapping.merged(update)?;
        let (catalog, writer, epoch) = (self.name.clone(), self.writer.clone(), self.epoch);
        let update = update.clone();
        let stored = Arc::new(Mutex::new(None::<(String, Settings)>));
        let written = stored.clone();
        let check_catalog = catalog.clone();
        let check = stored.clone();
        self.commit(
            move |client| {
                let mut tx = client.transaction()?;
                fence(&mut tx, &catalog, &writer, epoch)?;
                let text: String = tx
                    .query_one(
                        "SELECT settings FROM quarry_catalogs WHERE name = $1 FOR UPDATE",
                        &[&catalog],
                    )?
                    .get(0);
                let mut settings = parse_settings(&catalog, &text)?;
                settings.mapping = settings
                    .mapping
                    .merged(&update)
                    .map_err(|e| PgFailure::Other(e.to_string()))?;
                let merged = serde_json::to_string(&settings)
                    .map_err(|e| PgFailure::Other(e.to_string()))?;
                if merged != text {
                    tx.execute(
                        "UPDATE quarry_catalogs SET settings = $2 WHERE name = $1",
                        &[&catalog, &merged],
                    )?;
                }
                tx.commit()?;
                *lock(&written) = Some((merged, settings));
                Ok(())
            },
            Box::new(move |client| {
                let row = client.query_opt(
                    "SELECT settings FROM quarry_catalogs WHERE name = $1",
                    &[&check_catalog],
                )?;
                let expected = lock(&check).as_ref().map(|(text, _)| text.clone());
                Ok(row.is_some_and(|row| Some(row.get::<_, String>(0)) == expected))
            }),
        )?;
        let Some((_, settings)) = lock(&stored).take() else {
            // Landed, though its answer was lost: read what is in force.
            let (settings, _) = PgMetastore::read(&self.postgres, &self.name)?;
            self.settings = settings;
            return Ok(self.settings.mapping.clone());
        };
        self.settings = settings;
        Ok(self.settings.mapping.clone())
    }

    fn blocks(&self) -> &[BlockEntry] {
        &self.blocks
    }

    fn allocate_block_id(&mut self) -> Result<u64> {
        // An id taken and lost (its answer lost with a broken connection) is only skipped.
        let (catalog, writer, epoch) = (self.name.clone(), self.writer.clone(), self.epoch);
        self.postgres.run_idempotent(move |client| {
            let row = client.query_opt(
                "UPDATE quarry_catalogs SET next_block_id = next_block_id + 1
                 WHERE name = $1 AND EXISTS (
                     SELECT 1 FROM quarry_writers
                     WHERE catalog = $1 AND writer = $2 AND epoch = $3)
                 RETURNING next_block_id - 1",
                &[&catalog, &writer, &epoch],
            )?;
            match row {
                Some(row) => from_db(row.get(0), "block id"),
                None => Err(PgFailure::Fenced {
                    catalog: catalog.clone(),
                }),
            }
        })
    }

    fn commit_flush(&mut self, entries: Vec<BlockEntry>, tenant: &str, wal_seq: u64) -> Result<()> {
        let committed = self.wal_committed(tenant).max(wal_seq);
        let (catalog, writer, epoch) = (self.name.clone(), self.writer.clone(), self.epoch);
        let (added, wal) = (entries.clone(), wal_key(&self.writer, tenant));
        let landed = landed_check(&catalog, &entries, &[], Some((&wal, committed)));
        self.commit(
            move |client| {
                let mut tx = client.transaction()?;
                fence(&mut tx, &catalog, &writer, epoch)?;
                insert_blocks(&mut tx, &catalog, &writer, &added)?;
                tx.execute(
                    "INSERT INTO quarry_wal_checkpoints (catalog, wal, seq) VALUES ($1, $2, $3)
                     ON CONFLICT (catalog, wal) DO UPDATE SET seq = EXCLUDED.seq",
                    &[&catalog, &wal, &to_db(committed, "WAL seq")?],
                )?;
                tx.commit()?;
                Ok(())
            },
            landed,
        )?;
        self.blocks.extend(entries);
        self.wal.insert(wal_key(&self.writer, tenant), committed);
        Ok(())
    }

    fn replace_blocks(&mut self, removed: &[u64], added: Vec<BlockEntry>) -> Result<()> {
        let (catalog, writer, epoch) = (self.name.clone(), self.writer.clone(), self.epoch);
        let gone = db_ids(removed.iter().copied());
        let new = added.clone();
        let landed = landed_check(&catalog, &added, removed, None);
        self.commit(
            move |client| {
                let mut tx = client.transaction()?;
                fence(&mut tx, &catalog, &writer, epoch)?;
                // Only this writer's own blocks: never one another writer lists. A block
                // this writer thinks its own and is not would be listed twice (its merge
                // output beside it): refused whole.
                let retired = tx.execute(
                    "DELETE FROM quarry_blocks WHERE catalog = $1 AND writer = $3 AND id = ANY($2)",
                    &[&catalog, &gone, &writer],
                )?;
                if retired != gone.len() as u64 {
                    return Err(PgFailure::Other(format!(
                        "catalog {catalog:?}: {} of the {} blocks to retire are not writer \
                         {writer:?}'s; nothing committed",
                        gone.len() as u64 - retired,
                        gone.len()
                    )));
                }
                insert_blocks(&mut tx, &catalog, &writer, &new)?;
                tx.commit()?;
                Ok(())
            },
            landed,
        )?;
        self.blocks.retain(|b| !removed.contains(&b.id));
        self.blocks.extend(added);
        Ok(())
    }

    fn wal_committed(&self, tenant: &str) -> u64 {
        self.wal
            .get(&wal_key(&self.writer, tenant))
            .copied()
            .unwrap_or(0)
    }

    fn writer(&self) -> Option<&str> {
        Some(&self.writer)
    }

    fn others(&self) -> &[BlockEntry] {
        &self.others
    }

    fn writer_of(&self, id: u64) -> Option<&str> {
        match self.writers.get(&id) {
            Some(writer) => Some(writer),
            None => self
                .blocks
                .iter()
                .any(|b| b.id == id)
                .then_some(self.writer.as_str()),
        }
    }

    /// In one transaction: the writers of this catalog silent for `silent` or more lose
    /// their rows (fencing them off) and their blocks become this writer's; so do blocks of
    /// no writer (committed before writers were recorded). This writer must be live itself.
    fn adopt_silent(&mut self, silent: std::time::Duration) -> Result<Vec<u64>> {
        let (catalog, writer, epoch) = (self.name.clone(), self.writer.clone(), self.epoch);
        let seconds = silent.as_secs_f64();
        let adopted = Arc::new(Mutex::new(Vec::new()));
        let taken = adopted.clone();
        // Adopting twice is harmless (the second finds nothing left to take).
        self.postgres.run_idempotent(move |client| {
            let mut tx = client.transaction()?;
            fence(&mut tx, &catalog, &writer, epoch)?;
            let silent: Vec<String> = tx
                .query(
                    // A writer whose row is locked is in a commit: not silent.
                    "DELETE FROM quarry_writers
                     WHERE catalog = $1 AND writer IN (
                         SELECT writer FROM quarry_writers
                         WHERE catalog = $1 AND writer <> $2
                           AND seen < now() - make_interval(secs => $3)
                         FOR UPDATE SKIP LOCKED)
                     RETURNING writer",
                    &[&catalog, &writer, &seconds],
                )?
                .iter()
                .map(|row| row.get(0))
                .collect();
            let mut blocks = Vec::new();
            for row in tx.query(
                "UPDATE quarry_blocks b SET writer = $2
                 WHERE b.catalog = $1 AND b.writer <> $2
                   AND (b.writer = ANY($3) OR NOT EXISTS (
                       SELECT 1 FROM quarry_writers w
                       WHERE w.catalog = b.catalog AND w.writer = b.writer))
                 RETURNING id, docs, time_min, time_max, bytes, open_from, seq",
                &[&catalog, &writer, &silent],
            )? {
                blocks.push((row.get::<_, i64>(6), block_of(&row)?));
            }
            tx.commit()?;
            if !silent.is_empty() || !blocks.is_empty() {
                tracing::info!(catalog = %catalog, writers = ?silent, blocks = blocks.len(),
                    "took over the blocks of writers that fell silent");
            }
            // In the order they were committed, as a catalog lists them.
            blocks.sort_by_key(|(seq, _)| *seq);
            *lock(&taken) = blocks.into_iter().map(|(_, entry)| entry).collect();
            Ok(())
        })?;
        let adopted: Vec<BlockEntry> = std::mem::take(&mut *lock(&adopted));
        let ids: Vec<u64> = adopted.iter().map(|b| b.id).collect();
        self.others.retain(|b| !ids.contains(&b.id));
        for id in &ids {
            self.writers.remove(id);
        }
        self.blocks.extend(adopted);
        Ok(ids)
    }

    /// After `Fenced`: when this writer's row is gone (another writer took its blocks over),
    /// opens the catalog again as this writer, with no blocks of its own but what it commits
    /// from now on; its WAL checkpoint is kept. A row of another epoch (another process of
    /// this writer) leaves it fenced off.
    fn reopen_if_adopted(&mut self) -> Result<bool> {
        let (catalog, writer) = (self.name.clone(), self.writer.clone());
        let reopened = self.postgres.run(move |client| {
            let mut tx = client.transaction()?;
            let exists = tx
                .query_opt(
                    "SELECT 1 FROM quarry_writers WHERE catalog = $1 AND writer = $2 FOR UPDATE",
                    &[&catalog, &writer],
                )?
                .is_some();
            if exists {
                return Ok(None);
            }
            let epoch: i64 = tx
                .query_one(
                    "INSERT INTO quarry_writers (catalog, writer, epoch) VALUES ($1, $2, 1)
                     RETURNING epoch",
                    &[&catalog, &writer],
                )?
                .get(0);
            let loaded = load_existing(&mut tx, &catalog)?;
            tx.commit()?;
            Ok(Some((epoch, loaded)))
        })?;
        let Some((epoch, loaded)) = reopened else {
            return Ok(false);
        };
        self.epoch = epoch;
        self.wal = loaded.wal.clone();
        self.poisoned = None;
        self.take_view(loaded);
        Ok(true)
    }

    /// Reads the other writers' blocks and the settings again (this writer's own blocks are
    /// what it committed; a read cannot know them better).
    fn refresh(&mut self) -> Result<bool> {
        self.beat()?;
        let Some(state) = PgMetastore::read_state(&self.postgres, &self.name)? else {
            return Ok(false);
        };
        let (own, wal) = (std::mem::take(&mut self.blocks), self.wal.clone());
        let (others_before, settings_before) = (self.others.clone(), self.settings.clone());
        self.take_view(state);
        self.blocks = own;
        self.wal = wal;
        Ok(self.others != others_before || self.settings != settings_before)
    }
}

/// Whether a commit of blocks landed: the blocks it added are listed (one transaction: all
/// or none), or, adding none, the blocks it removed are gone, or, with neither, the WAL
/// checkpoint it set is there.
fn landed_check(
    catalog: &str,
    added: &[BlockEntry],
    removed: &[u64],
    wal: Option<(&str, u64)>,
) -> Landed {
    let catalog = catalog.to_owned();
    let added = db_ids(added.iter().map(|b| b.id));
    let removed = db_ids(removed.iter().copied());
    let wal = wal.map(|(name, seq)| (name.to_owned(), i64::try_from(seq).unwrap_or(i64::MAX)));
    Box::new(move |client| {
        let listed = |client: &mut Client, ids: &Vec<i64>| -> Result<i64, PgFailure> {
            Ok(client
                .query_one(
                    "SELECT count(*) FROM quarry_blocks WHERE catalog = $1 AND id = ANY($2)",
                    &[&catalog, ids],
                )?
                .get(0))
        };
        if !added.is_empty() {
            return Ok(listed(client, &added)? == added.len() as i64);
        }
        if !removed.is_empty() {
            return Ok(listed(client, &removed)? == 0);
        }
        match &wal {
            Some((name, seq)) => {
                let row = client.query_opt(
                    "SELECT seq FROM quarry_wal_checkpoints WHERE catalog = $1 AND wal = $2",
                    &[&catalog, name],
                )?;
                Ok(row.is_some_and(|row| row.get::<_, i64>(0) >= *seq))
            }
            None => Ok(true),
        }
    })
}

/// A searcher's view of a catalog in PostgreSQL: the committed settings and blocks as of the
/// last `refresh` (one read-only snapshot each), every write refused. A catalog no indexer
/// has created yet reads as empty.
pub struct PgReplica {
    postgres: Arc<Postgres>,
    name: String,
    settings: Settings,
    blocks: Vec<BlockEntry>,
    writers: std::collections::HashMap<u64, String>,
}

impl PgReplica {
    pub fn open(postgres: Arc<Postgres>, name: &str) -> Result<PgReplica> {
        let mut replica = PgReplica {
            postgres,
            name: name.to_owned(),
            settings: Settings::default(),
            blocks: Vec::new(),
            writers: Default::default(),
        };
        replica.refresh()?;
        Ok(replica)
    }

    fn read_only(&self) -> CatalogError {
        CatalogError::ReadOnly {
            catalog: self.name.clone(),
        }
    }
}

impl Metastore for PgReplica {
    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn set_mapping(&mut self, _: &Mapping) -> Result<Mapping> {
        Err(self.read_only())
    }

    fn blocks(&self) -> &[BlockEntry] {
        &self.blocks
    }

    fn allocate_block_id(&mut self) -> Result<u64> {
        Err(self.read_only())
    }

    fn commit_flush(&mut self, _: Vec<BlockEntry>, _: &str, _: u64) -> Result<()> {
        Err(self.read_only())
    }

    fn replace_blocks(&mut self, _: &[u64], _: Vec<BlockEntry>) -> Result<()> {
        Err(self.read_only())
    }

    fn wal_committed(&self, _: &str) -> u64 {
        0
    }

    fn is_replica(&self) -> bool {
        true
    }

    fn refresh(&mut self) -> Result<bool> {
        let state = PgMetastore::read_state(&self.postgres, &self.name)?.unwrap_or_default();
        let changed = state.settings != self.settings || state.blocks != self.blocks;
        self.writers = state
            .blocks
            .iter()
            .map(|b| b.id)
            .zip(state.writers)
            .collect();
        self.settings = state.settings;
        self.blocks = state.blocks;
        Ok(changed)
    }

    fn writer_of(&self, id: u64) -> Option<&str> {
        self.writers.get(&id).map(String::as_str)
    }
}

/// The tenant registry in PostgreSQL (`quarry_tenants`).
#[derive(Debug, Clone)]
pub struct PgTenants {
    postgres: Arc<Postgres>,
}

impl PgTenants {
    pub fn new(postgres: Arc<Postgres>) -> PgTenants {
        PgTenants { postgres }
    }
}

fn io_error(error: CatalogError) -> std::io::Error {
    std::io::Error::other(error)
}

impl TenantRegistry for PgTenants {
    fn tenants(&self) -> std::io::Result<Vec<TenantSpec>> {
        self.postgres
            .run_idempotent(|client| {
                let mut specs = Vec::new();
                for row in client.query("SELECT spec FROM quarry_tenants ORDER BY position", &[])? {
                    let text: String = row.get(0);
                    let spec: TenantSpec = serde_json::from_str(&text)
                        .map_err(|e| PgFailure::Other(format!("quarry_tenants: {e}")))?;
                    validate_name(&spec.name)
                        .map_err(|reason| PgFailure::Other(format!("quarry_tenants: {reason}")))?;
                    specs.push(spec);
                }
                Ok(specs)
            })
            .map_err(io_error)
    }

    fn commit(&self, put: &[TenantSpec], removed: &[&str]) -> std::io::Result<()> {
        let removed: Vec<String> = removed.iter().map(|&name| name.to_owned()).collect();
        let mut rows = Vec::with_capacity(put.len());
        for spec in put {
            let text = serde_json::to_string(spec).map_err(std::io::Error::other)?;
            rows.push((spec.name.clone(), spec.key_sha256.clone(), text));
        }
        self.postgres
            .run(move |client| {
                let mut tx = client.transaction()?;
                tx.execute(
                    "DELETE FROM quarry_tenants WHERE name = ANY($1)",
                    &[&removed],
                )?;
                for (name, key, spec) in &rows {
                    tx.execute(
                        "INSERT INTO quarry_tenants (name, key_sha256, spec) VALUES ($1, $2, $3)
                         ON CONFLICT (name) DO UPDATE
                         SET key_sha256 = EXCLUDED.key_sha256, spec = EXCLUDED.spec",
                        &[name, key, spec],
                    )?;
                }
                tx.commit()?;
                Ok(())
            })
            .map_err(io_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            shown_url("postgres://quarry:secret@db:5432/quarry"),
            "postgres://quarry@db:5432/quarry"
        );
        assert_eq!(
            shown_url("postgres://quarry@127.0.0.1/q"),
            "postgres://quarry@127.0.0.1/q"
        );
        assert!(!shown_url("host=db password=secret").contains("secret"));
    }

    #[test]
    fn a_bad_url_is_an_error_naming_it() {
        let error = Postgres::connect("postgres://a:b@[bad")
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a PostgreSQL connection URL"), "{error}");
        assert!(!error.contains(":b@"), "{error}");
    }
}
