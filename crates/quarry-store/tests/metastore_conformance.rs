//! One conformance suite for every metastore: the data directory's catalog and tenant registry
//! (`Catalog`, `LocalTenants`) and PostgreSQL's (`PgMetastore`, `PgTenants`, on a throwaway
//! cluster). Each check runs against a brute-force model (a list of blocks, a map of WAL
//! checkpoints, a list of tenant specs) and across reopening, so both implementations must give
//! the same answers, not merely plausible ones.

#[path = "support/postgresql.rs"]
mod postgresql;

use quarry_store::catalog::CatalogError;
use quarry_store::postgres::{PgMetastore, PgTenants, Postgres};
use quarry_store::tenants::{AliasSpec, Quotas, SearchLimits};
use quarry_store::{
    BlockEntry, Catalog, LocalTenants, Mapping, Metastore, Settings, TenantRegistry, TenantSpec,
};
use std::collections::BTreeMap;
use std::sync::Arc;

type Opened = Result<Box<dyn Metastore>, CatalogError>;
type Open = Box<dyn Fn(&str, Settings) -> Opened>;

/// A place to keep catalogs and a registry, with a way to open each.
struct Backend {
    name: &'static str,
    /// Opens catalog `name` for writing with these settings if new.
    open: Open,
    registry: Box<dyn Fn() -> Box<dyn TenantRegistry>>,
    _keep: Box<dyn std::any::Any>,
}

fn local() -> Backend {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let data = root.clone();
    Backend {
        name: "local",
        open: Box::new(move |name, settings| {
            // A lock just released can still be held for a moment by a child process another
            // test thread forked (the PostgreSQL harness spawns initdb and pg_ctl): between
            // fork and exec the child shares the lock's file description. So a reopen waits a
            // little; a lock held by a catalog still open stays held and is still refused.
            let started = std::time::Instant::now();
            loop {
                match Catalog::open_or_create(&root.join(name), settings.clone()) {
                    Err(CatalogError::Locked { .. })
                        if started.elapsed() < std::time::Duration::from_millis(500) =>
                    {
                        std::thread::sleep(std::time::Duration::from_millis(20))
                    }
                    opened => return Ok(Box::new(opened?)),
                }
            }
        }),
        registry: Box::new(move || Box::new(LocalTenants::new(&data))),
        _keep: Box::new(dir),
    }
}

/// The writer the conformance checks open PostgreSQL catalogs as (one, like the local
/// catalog's directory).
const WRITER: &str = "node-a";

fn postgres(cluster: &postgresql::PostgreSql, database: &str) -> Backend {
    let url = cluster.database(database);
    let pg = Postgres::connect(&url).unwrap();
    let registry_pg = pg.clone();
    Backend {
        name: "postgres",
        open: Box::new(move |name, settings| {
            Ok(Box::new(PgMetastore::open_or_create(
                pg.clone(),
                name,
                WRITER,
                settings,
            )?))
        }),
        registry: Box::new(move || Box::new(PgTenants::new(registry_pg.clone()))),
        _keep: Box::new(()),
    }
}

/// Runs `check` against every backend this machine has.
fn conforms(check: fn(&Backend)) {
    check(&local());
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    // One database per check: a fresh metastore each time, as the local one gets.
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    check(&postgres(
        &cluster,
        &format!("conformance_{}_{n}", std::process::id()),
    ));
}

fn settings() -> Settings {
    Settings {
        stop_words: vec!["the".into(), "a".into()],
        mapping: Mapping::from_json(r#"{"properties": {"host": {"type": "keyword"}}}"#).unwrap(),
    }
}

fn entry(id: u64, seed: u64) -> BlockEntry {
    BlockEntry {
        id,
        docs: 1 + seed % 1000,
        time_min: seed as i64 * 1_000,
        time_max: seed as i64 * 1_000 + 999,
        bytes: 4096 + seed * 7,
        open_from: seed * 3,
    }
}

/// splitmix64: a seeded sequence for the random walks.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn a_new_catalog_has_its_settings_and_nothing_else() {
    conforms(|backend| {
        let catalog = (backend.open)("team-a", settings()).unwrap();
        assert_eq!(catalog.settings(), &settings(), "{}", backend.name);
        assert!(catalog.blocks().is_empty());
        assert_eq!(catalog.wal_committed("team-a"), 0);
        drop(catalog);
        // An existing catalog keeps its own settings.
        let again = (backend.open)("team-a", Settings::default()).unwrap();
        assert_eq!(again.settings(), &settings(), "{}", backend.name);
    });
}

/// A random walk of flushes, merges and mapping changes, checked against a model after every
/// step and after reopening every few steps.
#[test]
fn commits_match_a_model_across_reopening() {
    conforms(|backend| {
        for seed in 1..=3u64 {
            let name = format!("walk-{seed}");
            let mut rng = Rng(seed);
            let mut model_blocks: Vec<BlockEntry> = Vec::new();
            let mut model_wal: BTreeMap<String, u64> = BTreeMap::new();
            let mut model_mapping = settings().mapping;
            // Every id a committed block ever had: never handed out again (the local catalog
            // may hand out again an id whose block was never committed; PostgreSQL never does).
            let mut committed_ids: Vec<u64> = Vec::new();
            let mut catalog = (backend.open)(&name, settings()).unwrap();
            for step in 0..60 {
                match rng.below(10) {
                    0..=4 => {
                        let mut entries = Vec::new();
                        for _ in 0..=rng.below(3) {
                            let id = catalog.allocate_block_id().unwrap();
                            entries.push(entry(id, rng.below(1 << 20)));
                        }
                        let wal = ["team-a", "team-b"][rng.below(2) as usize];
                        let seq = rng.below(1000);
                        catalog.commit_flush(entries.clone(), wal, seq).unwrap();
                        let committed = model_wal.entry(wal.to_owned()).or_default();
                        *committed = (*committed).max(seq);
                        for entry in &entries {
                            assert!(
                                !committed_ids.contains(&entry.id),
                                "{}: id {} handed out again",
                                backend.name,
                                entry.id
                            );
                            committed_ids.push(entry.id);
                        }
                        model_blocks.extend(entries);
                    }
                    5..=7 if !model_blocks.is_empty() => {
                        let removed: Vec<u64> = model_blocks
                            .iter()
                            .filter(|_| rng.below(3) == 0)
                            .map(|b| b.id)
                            .collect();
                        let mut added = Vec::new();
                        for _ in 0..rng.below(3) {
                            let id = catalog.allocate_block_id().unwrap();
                            assert!(!committed_ids.contains(&id), "{}: id {id}", backend.name);
                            committed_ids.push(id);
                            added.push(entry(id, rng.below(1 << 20)));
                        }
                        catalog.replace_blocks(&removed, added.clone()).unwrap();
                        model_blocks.retain(|b| !removed.contains(&b.id));
                        model_blocks.extend(added);
                    }
                    8 => {
                        let field = format!("f{}", rng.below(5));
                        let ty = ["keyword", "long", "text"][rng.below(3) as usize];
                        let update = Mapping::from_json(&format!(
                            r#"{{"properties": {{"{field}": {{"type": "{ty}"}}}}}}"#
                        ))
                        .unwrap();
                        match model_mapping.merged(&update) {
                            Ok(merged) => {
                                assert_eq!(catalog.set_mapping(&update).unwrap(), merged);
                                model_mapping = merged;
                            }
                            Err(_) => {
                                // A conflicting change is refused and changes nothing.
                                let error = catalog.set_mapping(&update).unwrap_err();
                                assert!(
                                    matches!(error, CatalogError::Mapping(_)),
                                    "{}: {error}",
                                    backend.name
                                );
                            }
                        }
                    }
                    _ => {
                        drop(catalog);
                        catalog = (backend.open)(&name, Settings::default()).unwrap();
                    }
                }
                let context = format!("{} seed {seed} step {step}", backend.name);
                assert_eq!(catalog.blocks(), &model_blocks[..], "{context}");
                assert_eq!(catalog.settings().mapping, model_mapping, "{context}");
                assert_eq!(catalog.settings().stop_words, settings().stop_words);
                for wal in ["team-a", "team-b", "team-c"] {
                    let expected = model_wal.get(wal).copied().unwrap_or(0);
                    assert_eq!(catalog.wal_committed(wal), expected, "{context} {wal}");
                }
                // New ids are above every committed one.
                if let Some(&max) = committed_ids.iter().max() {
                    let id = catalog.allocate_block_id().unwrap();
                    assert!(id > max, "{context}: id {id} after {max}");
                }
            }
        }
    });
}

/// Catalogs of different names never see each other's blocks.
#[test]
fn catalogs_are_apart() {
    conforms(|backend| {
        let mut a = (backend.open)("team-a", settings()).unwrap();
        let mut b = (backend.open)("team-b", Settings::default()).unwrap();
        let id = a.allocate_block_id().unwrap();
        a.commit_flush(vec![entry(id, 1)], "team-a", 5).unwrap();
        assert!(b.blocks().is_empty());
        assert_eq!(b.wal_committed("team-a"), 0);
        let id = b.allocate_block_id().unwrap();
        b.commit_flush(vec![entry(id, 2)], "team-b", 7).unwrap();
        drop((a, b));
        let a = (backend.open)("team-a", settings()).unwrap();
        assert_eq!(a.blocks().len(), 1, "{}", backend.name);
        assert_eq!(a.blocks()[0].time_min, entry(0, 1).time_min);
        assert_eq!(a.settings(), &settings());
        let b = (backend.open)("team-b", settings()).unwrap();
        assert_eq!(b.settings(), &Settings::default(), "{}", backend.name);
        assert_eq!(b.wal_committed("team-b"), 7);
    });
}

/// Two writers of one catalog never both commit: either the second cannot open it (the local
/// lock) or the first is fenced off from then on (PostgreSQL), and a refused commit changes
/// nothing.
#[test]
fn two_writers_never_both_commit() {
    conforms(|backend| {
        let mut first = (backend.open)("team-a", settings()).unwrap();
        let id = first.allocate_block_id().unwrap();
        first.commit_flush(vec![entry(id, 1)], "team-a", 1).unwrap();
        let second = match (backend.open)("team-a", settings()) {
            Err(CatalogError::Locked { .. }) => return,
            Err(other) => panic!("{}: {other}", backend.name),
            Ok(second) => second,
        };
        let refused = first.commit_flush(vec![entry(999_999, 2)], "team-a", 2);
        assert!(
            matches!(refused, Err(CatalogError::Fenced { .. })),
            "{}: {refused:?}",
            backend.name
        );
        let message = refused.unwrap_err().to_string();
        assert!(message.contains("team-a"), "{message}");
        assert!(first.replace_blocks(&[id], Vec::new()).is_err());
        assert!(first.allocate_block_id().is_err());
        let update = Mapping::from_json(r#"{"properties": {"x": {"type": "long"}}}"#).unwrap();
        assert!(first.set_mapping(&update).is_err());
        drop((first, second));
        let reopened = (backend.open)("team-a", settings()).unwrap();
        assert_eq!(reopened.blocks(), &[entry(id, 1)]);
        assert_eq!(reopened.wal_committed("team-a"), 1);
        assert_eq!(reopened.settings(), &settings());
    });
}

/// Several indexers write one catalog in PostgreSQL, each as its own writer: a random walk of
/// flushes and merges by two writers against a model. Each writer lists, replaces and
/// checkpoints only its own blocks; a replica lists everyone's, with their writers; mappings
/// both grow are merged, not overwritten; reopening a writer fences off only its old self.
#[test]
fn writers_of_one_catalog_work_side_by_side() {
    use quarry_store::postgres::PgReplica;
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let pg = Postgres::connect(&cluster.database("side_by_side")).unwrap();
    let names = ["node-a", "node-b"];
    let mut writers: Vec<PgMetastore> = names
        .iter()
        .map(|w| PgMetastore::open_or_create(pg.clone(), "team-a", w, settings()).unwrap())
        .collect();
    let mut model: Vec<Vec<BlockEntry>> = vec![Vec::new(), Vec::new()];
    let mut checkpoints = [0u64; 2];
    let mut rng = Rng(7);
    for step in 0..60u64 {
        let w = rng.below(2) as usize;
        if rng.below(3) > 0 || model[w].len() < 2 {
            let id = writers[w].allocate_block_id().unwrap();
            let seq = checkpoints[w] + 1 + rng.below(5);
            writers[w]
                .commit_flush(vec![entry(id, step)], "team-a", seq)
                .unwrap();
            model[w].push(entry(id, step));
            checkpoints[w] = seq;
        } else {
            // A merge of this writer's two oldest blocks; asking to retire the other's
            // newest too is refused whole (the writer's view of its own blocks is wrong: its
            // merge output would list that block's events twice).
            let gone: Vec<u64> = model[w][..2].iter().map(|b| b.id).collect();
            let id = writers[w].allocate_block_id().unwrap();
            if let Some(other) = model[1 - w].last() {
                let asked = [gone.clone(), vec![other.id]].concat();
                let refused = writers[w].replace_blocks(&asked, vec![entry(id, step)]);
                assert!(refused.is_err(), "{refused:?}");
                assert_eq!(writers[w].blocks(), &model[w][..]);
            }
            writers[w]
                .replace_blocks(&gone, vec![entry(id, step)])
                .unwrap();
            model[w].drain(..2);
            model[w].push(entry(id, step));
        }
        for (i, writer) in writers.iter().enumerate() {
            assert_eq!(
                writer.blocks(),
                &model[i][..],
                "writer {i} after step {step}"
            );
            assert_eq!(writer.wal_committed("team-a"), checkpoints[i]);
        }
    }
    let replica = PgReplica::open(pg.clone(), "team-a").unwrap();
    let mut listed: Vec<u64> = replica.blocks().iter().map(|b| b.id).collect();
    listed.sort_unstable();
    let mut expected: Vec<u64> = model.iter().flatten().map(|b| b.id).collect();
    expected.sort_unstable();
    assert_eq!(listed, expected);
    for (i, blocks) in model.iter().enumerate() {
        for block in blocks {
            assert_eq!(replica.writer_of(block.id), Some(names[i]));
        }
    }

    // Each writer reads the other's blocks, and who wrote them, on refresh.
    for (i, writer) in writers.iter_mut().enumerate() {
        writer.refresh().unwrap();
        assert_eq!(writer.others(), &model[1 - i][..]);
        assert_eq!(writer.blocks(), &model[i][..]);
        for block in &model[1 - i] {
            assert_eq!(writer.writer_of(block.id), Some(names[1 - i]));
        }
    }

    // Both grow the mapping: the stored mapping has both fields, and each writer is told.
    let x = Mapping::from_json(r#"{"properties": {"x": {"type": "long"}}}"#).unwrap();
    let y = Mapping::from_json(r#"{"properties": {"y": {"type": "ip"}}}"#).unwrap();
    writers[0].set_mapping(&x).unwrap();
    let in_force = writers[1].set_mapping(&y).unwrap();
    assert!(in_force.rules("x").is_some() && in_force.rules("y").is_some());
    let (stored, _) = PgMetastore::read(&pg, "team-a").unwrap();
    assert_eq!(stored.mapping, in_force);
    // The first learns of the second's field when it reads again.
    assert!(writers[0].settings().mapping.rules("y").is_none());
    assert!(writers[0].refresh().unwrap());
    assert_eq!(writers[0].settings().mapping, in_force);

    // Writer b restarted: its old self is fenced off, writer a is not.
    let restarted =
        PgMetastore::open_or_create(pg.clone(), "team-a", "node-b", settings()).unwrap();
    assert_eq!(restarted.blocks(), &model[1][..]);
    assert_eq!(restarted.wal_committed("team-a"), checkpoints[1]);
    let stale = writers[1].commit_flush(vec![entry(999_999, 1)], "team-a", 1_000);
    assert!(
        matches!(stale, Err(CatalogError::Fenced { .. })),
        "{stale:?}"
    );
    let id = writers[0].allocate_block_id().unwrap();
    writers[0]
        .commit_flush(vec![entry(id, 99)], "team-a", checkpoints[0] + 1)
        .unwrap();
}

/// A writer silent for long enough has its blocks taken over by a live one, which then merges
/// them as its own; the silent one, alive after all, is fenced off, opens the catalog again
/// with none of its own and its WAL checkpoint, and commits again. Another process of the
/// same writer stays fenced off. Every block is listed once, by one writer, throughout.
#[test]
fn a_silent_writers_blocks_are_taken_over() {
    use quarry_store::postgres::PgReplica;
    use std::time::Duration;
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let pg = Postgres::connect(&cluster.database("adoption")).unwrap();
    let open = |writer: &str| PgMetastore::open_or_create(pg.clone(), "team-a", writer, settings());
    let (mut a, mut b) = (open("node-a").unwrap(), open("node-b").unwrap());
    let commit = |writer: &mut PgMetastore, seed: u64, seq: u64| {
        let id = writer.allocate_block_id().unwrap();
        writer
            .commit_flush(vec![entry(id, seed)], "team-a", seq)
            .unwrap();
        entry(id, seed)
    };
    let a_blocks = vec![commit(&mut a, 1, 10), commit(&mut a, 2, 20)];
    let b_blocks = vec![commit(&mut b, 3, 5)];
    let listed_once = || {
        let replica = PgReplica::open(pg.clone(), "team-a").unwrap();
        let mut ids: Vec<u64> = replica.blocks().iter().map(|b| b.id).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "a block listed twice");
        replica
    };

    // Both beat: nothing is taken while a has been heard from within the hour.
    a.refresh().unwrap();
    assert_eq!(
        b.adopt_silent(Duration::from_secs(3600)).unwrap(),
        Vec::<u64>::new()
    );
    assert_eq!(b.blocks(), &b_blocks[..]);

    // a silent (any silence counts with 0): b takes its blocks, in the order committed.
    std::thread::sleep(Duration::from_millis(20));
    let taken = b.adopt_silent(Duration::ZERO).unwrap();
    assert_eq!(taken, a_blocks.iter().map(|e| e.id).collect::<Vec<_>>());
    assert_eq!(
        b.blocks(),
        &[b_blocks.clone(), a_blocks.clone()].concat()[..]
    );
    assert!(b.others().is_empty());
    let replica = listed_once();
    for block in &a_blocks {
        assert_eq!(replica.writer_of(block.id), Some("node-b"));
    }
    // Taking again finds nothing.
    assert!(b.adopt_silent(Duration::ZERO).unwrap().is_empty());
    // b merges them with its own.
    let merged_id = b.allocate_block_id().unwrap();
    let all: Vec<u64> = b.blocks().iter().map(|e| e.id).collect();
    b.replace_blocks(&all, vec![entry(merged_id, 9)]).unwrap();
    assert_eq!(b.blocks(), &[entry(merged_id, 9)][..]);

    // a was alive after all: fenced off, whatever it tries; its stale merge is refused.
    let id = a.allocate_block_id();
    assert!(matches!(id, Err(CatalogError::Fenced { .. })), "{id:?}");
    let stale = a.commit_flush(vec![entry(777_777, 4)], "team-a", 30);
    assert!(
        matches!(stale, Err(CatalogError::Fenced { .. })),
        "{stale:?}"
    );
    assert!(matches!(a.refresh(), Err(CatalogError::Fenced { .. })));
    // It opens the catalog again: no blocks of its own, its checkpoint kept.
    assert!(a.reopen_if_adopted().unwrap());
    assert!(a.blocks().is_empty());
    assert_eq!(a.wal_committed("team-a"), 20);
    assert_eq!(a.others(), &[entry(merged_id, 9)][..]);
    let stale = a.replace_blocks(&[a_blocks[0].id], Vec::new());
    assert!(stale.is_err(), "{stale:?}");
    let again = commit(&mut a, 5, 30);
    assert_eq!(a.blocks(), &[again.clone()][..]);
    assert_eq!(a.wal_committed("team-a"), 30);
    b.refresh().unwrap();
    assert_eq!(b.others(), &[again.clone()][..]);
    let replica = listed_once();
    assert_eq!(replica.blocks().len(), 2);
    assert_eq!(replica.writer_of(again.id), Some("node-a"));

    // A second process of b fences the first, which stays fenced off: it was not taken over.
    let mut b2 = open("node-b").unwrap();
    assert!(matches!(b.refresh(), Err(CatalogError::Fenced { .. })));
    assert!(!b.reopen_if_adopted().unwrap());
    assert!(matches!(
        b.allocate_block_id(),
        Err(CatalogError::Fenced { .. })
    ));
    assert_eq!(b2.blocks(), &[entry(merged_id, 9)][..]);
    commit(&mut b2, 6, 40);
    listed_once();
}

fn spec(name: &str, seed: u64) -> TenantSpec {
    TenantSpec {
        name: name.into(),
        key_sha256: (!seed.is_multiple_of(3)).then(|| format!("{seed:064x}")),
        retention_seconds: seed.is_multiple_of(2).then_some(seed * 3600),
        quotas: Quotas {
            ingest_bytes_per_second: Some(seed + 1),
            stored_bytes: seed.is_multiple_of(4).then_some(1 << 30),
            ..Quotas::default()
        },
        created: format!("2026-11-{:02}T00:00:00Z", 1 + seed % 28),
        search_limits: SearchLimits {
            max_result_window: seed.is_multiple_of(5).then_some(500),
            ..SearchLimits::default()
        },
        aliases: if !seed.is_multiple_of(2) {
            [(
                format!("alias-{seed}"),
                AliasSpec {
                    filter: Some(r#"{"term": {"host": "a"}}"#.into()),
                    ..AliasSpec::default()
                },
            )]
            .into()
        } else {
            BTreeMap::new()
        },
        closed: seed.is_multiple_of(7),
    }
}

/// Registry commits (put, replace, remove, several at once) against a list kept in memory.
#[test]
fn tenant_registry_matches_a_model() {
    conforms(|backend| {
        let mut rng = Rng(42);
        let mut model: Vec<TenantSpec> = Vec::new();
        let names = ["team-a", "team-b", "logs-中文", "x1", "payments_eu"];
        for step in 0..40 {
            let registry = (backend.registry)();
            let mut put = Vec::new();
            for _ in 0..rng.below(3) {
                let name = names[rng.below(names.len() as u64) as usize];
                if put.iter().any(|s: &TenantSpec| s.name == name) {
                    continue;
                }
                put.push(spec(name, rng.below(1000)));
            }
            let removed: Vec<&str> = names
                .iter()
                .copied()
                .filter(|name| rng.below(6) == 0 && !put.iter().any(|s| s.name == *name))
                .collect();
            registry.commit(&put, &removed).unwrap();
            model.retain(|s| !removed.contains(&s.name.as_str()));
            for spec in put {
                match model.iter_mut().find(|s| s.name == spec.name) {
                    Some(old) => *old = spec,
                    None => model.push(spec),
                }
            }
            assert_eq!(
                (backend.registry)().tenants().unwrap(),
                model,
                "{} step {step}",
                backend.name
            );
        }
    });
}

/// A PostgreSQL metastore reached at a port where nothing listens is an error naming the
/// database, promptly; and a second connection to a migrated database migrates nothing again.
#[test]
fn postgres_errors_name_the_database_and_migrations_run_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://quarry:hidden@127.0.0.1:{port}/quarry");
    let error = Postgres::connect(&url).unwrap_err().to_string();
    assert!(error.contains(&format!("127.0.0.1:{port}")), "{error}");
    assert!(!error.contains("hidden"), "{error}");
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let url = cluster.database("migrations");
    let first = Postgres::connect(&url).unwrap();
    let second = Postgres::connect(&url).unwrap();
    let versions = second
        .run(|client| {
            Ok(client
                .query(
                    "SELECT version FROM quarry_migrations ORDER BY version",
                    &[],
                )?
                .iter()
                .map(|row| row.get::<_, i32>(0))
                .collect::<Vec<i32>>())
        })
        .unwrap();
    assert_eq!(versions, [1, 2, 3, 4]);
    // A session stopped in a transaction does not hold its locks for ever.
    let idle: String = second
        .run(|client| {
            Ok(client
                .query_one("SHOW idle_in_transaction_session_timeout", &[])?
                .get(0))
        })
        .unwrap();
    assert_eq!(idle, "15s");
    // Both connections see one catalog.
    let mut writer = PgMetastore::open_or_create(first, "team-a", WRITER, settings()).unwrap();
    let id = writer.allocate_block_id().unwrap();
    writer
        .commit_flush(vec![entry(id, 3)], "team-a", 9)
        .unwrap();
    let reader =
        PgMetastore::open_or_create(Arc::clone(&second), "team-a", WRITER, settings()).unwrap();
    assert_eq!(reader.blocks(), &[entry(id, 3)]);
}

/// A TCP proxy between the metastore and PostgreSQL that, when armed, cuts both connections
/// the moment the client sends `COMMIT`: either after passing it on (the commit lands, the
/// client never hears so) or before (it does not land).
mod cutting_proxy {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::sync::Arc;

    pub const PASS: u8 = 0;
    pub const CUT_AFTER_COMMIT: u8 = 1;
    pub const CUT_BEFORE_COMMIT: u8 = 2;

    pub struct Proxy {
        pub port: u16,
        pub mode: Arc<AtomicU8>,
    }

    pub fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(PASS));
        let shared = mode.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let mode = shared.clone();
                let (client_in, server_out) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                // Once set, nothing more reaches the client.
                let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let cut_reply = cut.clone();
                // Server to client: as it comes, until cut.
                std::thread::spawn(move || {
                    let (mut from, mut to) = (server, client);
                    let mut buffer = [0u8; 8192];
                    while let Ok(n) = from.read(&mut buffer) {
                        if n == 0
                            || cut_reply.load(Ordering::SeqCst)
                            || to.write_all(&buffer[..n]).is_err()
                        {
                            break;
                        }
                    }
                    let _ = to.shutdown(Shutdown::Both);
                });
                // Client to server: watching for COMMIT.
                std::thread::spawn(move || {
                    let (mut from, mut to) = (client_in, server_out);
                    let mut buffer = [0u8; 8192];
                    while let Ok(n) = from.read(&mut buffer) {
                        if n == 0 {
                            break;
                        }
                        let chunk = &buffer[..n];
                        let commit = chunk.windows(7).any(|w| w == b"COMMIT\0");
                        let armed = mode.load(Ordering::SeqCst);
                        if commit && armed != PASS {
                            mode.store(PASS, Ordering::SeqCst);
                            cut.store(true, Ordering::SeqCst);
                            if armed == CUT_AFTER_COMMIT {
                                let _ = to.write_all(chunk);
                                // Let the server commit before the client is cut off.
                                std::thread::sleep(std::time::Duration::from_millis(300));
                            }
                            let _ = from.shutdown(Shutdown::Both);
                            let _ = to.shutdown(Shutdown::Both);
                            break;
                        }
                        if to.write_all(chunk).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Proxy { port, mode }
    }
}

/// A commit whose connection breaks is never reported wrongly: when COMMIT reached the
/// database the flush is reported done (a retry would store its events twice), when it did
/// not the flush fails and nothing of it is listed.
#[test]
fn a_commit_cut_off_in_flight_is_reported_as_it_landed() {
    use std::sync::atomic::Ordering;
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let direct = cluster.database("in_doubt");
    let port: u16 = direct
        .rsplit(':')
        .next()
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .parse()
        .unwrap();
    let proxy = cutting_proxy::start(port);
    let through_proxy = direct.replace(&format!(":{port}/"), &format!(":{}/", proxy.port));
    let pg = Postgres::connect(&through_proxy).unwrap();
    let mut catalog =
        PgMetastore::open_or_create(pg.clone(), "team-a", WRITER, settings()).unwrap();

    let landed_id = catalog.allocate_block_id().unwrap();
    proxy
        .mode
        .store(cutting_proxy::CUT_AFTER_COMMIT, Ordering::SeqCst);
    catalog
        .commit_flush(vec![entry(landed_id, 1)], "team-a", 10)
        .unwrap();
    assert_eq!(catalog.blocks(), &[entry(landed_id, 1)]);

    let lost_id = catalog.allocate_block_id().unwrap();
    proxy
        .mode
        .store(cutting_proxy::CUT_BEFORE_COMMIT, Ordering::SeqCst);
    assert!(catalog
        .commit_flush(vec![entry(lost_id, 2)], "team-a", 20)
        .is_err());
    assert_eq!(catalog.blocks(), &[entry(landed_id, 1)]);
    assert_eq!(catalog.wal_committed("team-a"), 10);

    // What the database holds agrees.
    drop(catalog);
    let reopened = PgMetastore::open_or_create(
        Postgres::connect(&direct).unwrap(),
        "team-a",
        WRITER,
        settings(),
    )
    .unwrap();
    assert_eq!(reopened.blocks(), &[entry(landed_id, 1)]);
    assert_eq!(reopened.wal_committed("team-a"), 10);
}

fn beat<'a>(endpoint: &'a str, role: &'a str, node: &'a str) -> quarry_store::members::Beat<'a> {
    quarry_store::members::Beat {
        endpoint,
        role,
        node,
        http: "",
        capacity: 0,
    }
}

/// The membership table: nodes beat, roots list those whose beat is recent (by the database's
/// clock), a node that leaves is gone at once, and one that stops beating drops out.
#[test]
fn members_beat_and_drop_out() {
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let postgres = Postgres::connect(&cluster.database("members")).unwrap();
    let members = quarry_store::members::Members::new(Arc::clone(&postgres));
    let alive = || -> Vec<(String, String)> {
        members
            .live(std::time::Duration::from_secs(5))
            .unwrap()
            .into_iter()
            .map(|m| (m.endpoint, m.role))
            .collect()
    };
    assert!(alive().is_empty());
    members
        .beat(&beat("http://127.0.0.1:1", "indexer", "n1"))
        .unwrap();
    members
        .beat(&beat("http://127.0.0.1:2", "searcher", "n2"))
        .unwrap();
    members
        .beat(&beat("http://127.0.0.1:2", "searcher", "n2"))
        .unwrap();
    assert_eq!(
        alive(),
        [
            ("http://127.0.0.1:1".to_owned(), "indexer".to_owned()),
            ("http://127.0.0.1:2".to_owned(), "searcher".to_owned()),
        ]
    );
    members.leave("http://127.0.0.1:1").unwrap();
    assert_eq!(alive().len(), 1);
    // A beat 10 s old: dropped out.
    postgres
        .run(|client| {
            client.execute(
                "UPDATE quarry_nodes SET heartbeat = now() - interval '10 seconds'",
                &[],
            )?;
            Ok(())
        })
        .unwrap();
    assert!(alive().is_empty());
    members
        .beat(&beat("http://127.0.0.1:2", "searcher", "n2"))
        .unwrap();
    assert_eq!(alive().len(), 1);
    // An indexer that stopped beating without leaving is absent; a searcher is never.
    let absent = || -> Vec<String> {
        members
            .absent_writers(std::time::Duration::from_secs(5))
            .unwrap()
            .into_iter()
            .map(|m| m.endpoint)
            .collect()
    };
    members
        .beat(&beat("http://127.0.0.1:3", "indexer", "n3"))
        .unwrap();
    members
        .beat(&beat("http://127.0.0.1:4", "searcher", "n4"))
        .unwrap();
    assert!(absent().is_empty());
    postgres
        .run(|client| {
            client.execute(
                "UPDATE quarry_nodes SET heartbeat = now() - interval '10 seconds'",
                &[],
            )?;
            Ok(())
        })
        .unwrap();
    assert_eq!(absent(), ["http://127.0.0.1:3"]);
    // Back at another address: its old row goes.
    members
        .beat(&beat("http://127.0.0.1:5", "indexer", "n3"))
        .unwrap();
    assert!(absent().is_empty());
    assert_eq!(
        alive(),
        [("http://127.0.0.1:5".to_owned(), "indexer".to_owned())]
    );
}

/// Traffic control's shared state: rates reported per node are summed per tenant (a node's
/// report replaces its previous one), a lease has one holder until it lapses, and each stored
/// routing table is a new version.
#[test]
fn traffic_rates_routes_and_leases() {
    use quarry_store::members::Traffic;
    use std::time::Duration;
    let Some(cluster) = postgresql::PostgreSql::start() else {
        return;
    };
    let postgres = Postgres::connect(&cluster.database("traffic")).unwrap();
    let traffic = Traffic::new(Arc::clone(&postgres));
    let minute = Duration::from_secs(60);
    assert!(traffic.rates(minute).unwrap().is_empty());
    traffic
        .report_rates("n1", &[("a".into(), 100), ("b".into(), 7)])
        .unwrap();
    traffic
        .report_rates("n2", &[("a".into(), 50), ("c".into(), 1)])
        .unwrap();
    assert_eq!(
        traffic.rates(minute).unwrap(),
        [
            ("a".to_owned(), 150),
            ("b".to_owned(), 7),
            ("c".to_owned(), 1)
        ]
    );
    // n1 no longer takes b.
    traffic.report_rates("n1", &[("a".into(), 10)]).unwrap();
    assert_eq!(
        traffic.rates(minute).unwrap(),
        [("a".to_owned(), 60), ("c".to_owned(), 1)]
    );

    assert_eq!(traffic.routes().unwrap(), None);
    assert_eq!(traffic.store_routes("{}").unwrap(), 1);
    assert_eq!(traffic.store_routes(r#"{"a":[]}"#).unwrap(), 2);
    assert_eq!(
        traffic.routes().unwrap(),
        Some((2, r#"{"a":[]}"#.to_owned()))
    );

    let ttl = Duration::from_secs(30);
    assert!(traffic.lease("router", "n1", ttl).unwrap());
    assert!(traffic.lease("router", "n1", ttl).unwrap());
    assert!(!traffic.lease("router", "n2", ttl).unwrap());
    postgres
        .run(|client| {
            client.execute(
                "UPDATE quarry_leases SET until = now() - interval '1 second'",
                &[],
            )?;
            Ok(())
        })
        .unwrap();
    assert!(traffic.lease("router", "n2", ttl).unwrap());
    assert!(!traffic.lease("router", "n1", ttl).unwrap());
}
