//! The WAL writer thread: group commit.
//!
//! Requests queue their records (in sequence order, under the live index's lock) and wait.
//! The thread takes everything queued, appends it, and makes it durable with one fdatasync
//! for all of it, then wakes every waiter: under load, one fsync serves every request that
//! arrived while the previous one ran, so the fsync rate of the disk bounds the number of
//! rounds, not the number of requests. Records queued without a waiter (`durability=async`)
//! are synced with the next round, or within `ASYNC_SYNC_INTERVAL`.
//!
//! A failed write or sync leaves the log's tail in an unknown state: every waiter of that
//! round and every later append answers with the error (nothing is acknowledged that may not
//! be durable), and the server reports itself not ready, until the live index asks for a
//! recovery ([`WalHandle::recover`], issue 26): once the disk has `RECOVERY_FREE_BYTES` free,
//! the records that were not made durable are cut off (`Wal::recover`) and appends go on.
//! Nothing stays latched.

use quarry_store::{Wal, WalRecord};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Completes when the record is durable (or the WAL failed: the error).
pub type WalWait = tokio::sync::oneshot::Receiver<Result<(), String>>;

const ASYNC_SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// A segment longer than this is closed and a new one started.
const SEGMENT_BYTES: u64 = 64 << 20;
/// Free space the WAL's file system must have before a failed log is written again: a few
/// large batches, so that a disk freed by a few bytes does not fail the next round at once.
pub const RECOVERY_FREE_BYTES: u64 = 16 << 20;

/// What a recovery answers: the last durable sequence number and every record on disk.
pub type Recovered = Result<(u64, Vec<WalRecord>), String>;

enum Command {
    Append {
        seq: u64,
        payload: Vec<u8>,
        done: Option<tokio::sync::oneshot::Sender<Result<(), String>>>,
    },
    /// Records through this sequence number are in committed blocks.
    Committed(u64),
    /// Answers once everything queued before it is durable (Ok) or cannot be (the error).
    Barrier(std::sync::mpsc::Sender<Result<(), String>>),
    /// After a failure: drop what was not durable and go on, if the disk has room.
    Recover(std::sync::mpsc::Sender<Recovered>),
    Close,
}

pub struct WalHandle {
    sender: Mutex<Sender<Command>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    failed: Arc<Mutex<Option<String>>>,
    /// Records queued and not yet written (a metric: the group commit's queue).
    queued: Arc<AtomicU64>,
    /// Their payload bytes (counted in the live index's memory, so a slow disk under
    /// `durability=async` ingest cannot grow the queue without bound).
    queued_bytes: Arc<AtomicU64>,
}

impl WalHandle {
    pub fn start(wal: Wal) -> WalHandle {
        let (sender, receiver) = channel();
        // A log that could not create a segment at open (a full disk) starts failed: ingest
        // is refused with the reason until a recovery creates one.
        let open_failure = wal.open_failure().map(str::to_owned);
        if let Some(error) = &open_failure {
            tracing::error!(%error, "write-ahead log cannot write: ingest is refused until it can");
        }
        let failed = Arc::new(Mutex::new(open_failure));
        let queued = Arc::new(AtomicU64::new(0));
        let queued_bytes = Arc::new(AtomicU64::new(0));
        let (thread_failed, thread_queued, thread_bytes) =
            (failed.clone(), queued.clone(), queued_bytes.clone());
        let thread = std::thread::Builder::new()
            .name("quarry-wal".into())
            .spawn(move || run(wal, receiver, thread_failed, thread_queued, thread_bytes))
            .expect("spawning the WAL thread");
        WalHandle {
            sender: Mutex::new(sender),
            thread: Mutex::new(Some(thread)),
            failed,
            queued,
            queued_bytes,
        }
    }

    /// Queues a record; with `durable`, returns what completes once it is fsynced.
    pub fn append(&self, seq: u64, payload: Vec<u8>, durable: bool) -> Option<WalWait> {
        let (done, wait) = if durable {
            let (tx, rx) = tokio::sync::oneshot::channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.queued_bytes
            .fetch_add(payload.len() as u64, Ordering::Relaxed);
        self.send(Command::Append { seq, payload, done });
        wait
    }

    /// Records queued and not yet written.
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }

    /// Payload bytes of those records.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes.load(Ordering::Relaxed)
    }

    pub fn committed(&self, seq: u64) {
        self.send(Command::Committed(seq));
    }

    /// Waits until every record queued so far is durable; the error if the log failed.
    pub fn barrier(&self) -> Result<(), String> {
        let (done, wait) = std::sync::mpsc::channel();
        self.send(Command::Barrier(done));
        wait.recv()
            .unwrap_or_else(|_| Err("the write-ahead log is closed".to_owned()))
    }

    /// After a failure: once the disk has room, drops the records that were not made durable
    /// and clears the failure; answers the last durable sequence number and the records on
    /// disk (for the caller to rebuild what it holds in memory). The caller holds whatever
    /// keeps new records from being queued meanwhile.
    pub fn recover(&self) -> Recovered {
        let (done, wait) = std::sync::mpsc::channel();
        self.send(Command::Recover(done));
        wait.recv()
            .unwrap_or_else(|_| Err("the write-ahead log is closed".to_owned()))
    }

    /// The error that stopped the WAL, if one did.
    pub fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Syncs what is queued and stops the thread.
    pub fn close(&self) {
        self.send(Command::Close);
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }

    fn send(&self, command: Command) {
        // The thread only exits on Close; after that a send fails and its waiter (dropped)
        // answers "WAL closed".
        let _ = self
            .sender
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(command);
    }
}

fn run(
    mut wal: Wal,
    receiver: std::sync::mpsc::Receiver<Command>,
    failed: Arc<Mutex<Option<String>>>,
    queued: Arc<AtomicU64>,
    queued_bytes: Arc<AtomicU64>,
) {
    let mut unsynced_since: Option<Instant> = None;
    let mut broken: Option<String> = wal.open_failure().map(str::to_owned);
    let mut round = Vec::new();
    loop {
        let first = match unsynced_since {
            None => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(since) => {
                receiver.recv_timeout(ASYNC_SYNC_INTERVAL.saturating_sub(since.elapsed()))
            }
        };
        let mut closing = false;
        match first {
            Ok(command) => round.push(command),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => closing = true,
        }
        while round.len() < 65_536 {
            match receiver.try_recv() {
                Ok(command) => round.push(command),
                Err(_) => break,
            }
        }
        let mut waiters = Vec::new();
        let (mut barriers, mut recoveries) = (Vec::new(), Vec::new());
        let mut committed = None;
        let (mut appended, mut appended_bytes) = (0, 0);
        for command in round.drain(..) {
            match command {
                Command::Append { seq, payload, done } => {
                    appended += 1;
                    appended_bytes += payload.len() as u64;
                    if broken.is_none() {
                        if let Err(error) = wal.append(seq, &payload) {
                            broken = Some(error.to_string());
                        }
                    }
                    unsynced_since.get_or_insert_with(Instant::now);
                    waiters.extend(done);
                }
                Command::Committed(seq) => committed = Some(committed.unwrap_or(0).max(seq)),
                Command::Barrier(done) => barriers.push(done),
                Command::Recover(done) => recoveries.push(done),
                Command::Close => closing = true,
            }
        }
        let sync_due = !waiters.is_empty()
            || !barriers.is_empty()
            || !recoveries.is_empty()
            || closing
            || unsynced_since.is_some_and(|since| since.elapsed() >= ASYNC_SYNC_INTERVAL);
        if sync_due && unsynced_since.is_some() && broken.is_none() {
            if let Err(error) = wal.sync() {
                broken = Some(error.to_string());
            }
            unsynced_since = None;
        }
        if broken.is_some() {
            unsynced_since = None;
        }
        let answer = match &broken {
            None => Ok(()),
            Some(error) => Err(format!("the write-ahead log failed: {error}")),
        };
        for waiter in waiters {
            let _ = waiter.send(answer.clone());
        }
        for barrier in barriers {
            let _ = barrier.send(answer.clone());
        }
        queued.fetch_sub(appended, Ordering::Relaxed);
        queued_bytes.fetch_sub(appended_bytes, Ordering::Relaxed);
        if let Some(error) = &broken {
            let mut failed = failed.lock().unwrap_or_else(|p| p.into_inner());
            if failed.is_none() {
                tracing::error!(%error, "write-ahead log failed; ingest is refused from now on");
                *failed = Some(error.clone());
            }
        }
        if broken.is_none() {
            let rotate = committed.is_some() || wal.segment_len() > SEGMENT_BYTES;
            if rotate {
                if let Err(error) = wal.rotate() {
                    broken = Some(error.to_string());
                }
            }
            if let Some(seq) = committed {
                if let Err(error) = wal.remove_through(seq) {
                    tracing::warn!(%error, "removing flushed WAL segments");
                }
            }
        }
        for recovery in recoveries {
            let answer = match &broken {
                None => wal.read_back().map(|records| (wal.synced_seq(), records)),
                Some(_) => match free_bytes(wal.dir()) {
                    Some(free) if free < RECOVERY_FREE_BYTES => {
                        let _ = recovery.send(Err(format!(
                            "{} has {free} bytes free, below the {RECOVERY_FREE_BYTES} the write-ahead log waits for",
                            wal.dir().display()
                        )));
                        continue;
                    }
                    _ => wal
                        .recover()
                        .and_then(|durable| Ok((durable, wal.read_back()?))),
                },
            };
            let answer = answer.map_err(|error| error.to_string());
            if answer.is_ok() && broken.take().is_some() {
                *failed.lock().unwrap_or_else(|p| p.into_inner()) = None;
                tracing::warn!(dir = %wal.dir().display(), "write-ahead log recovered: appends go on");
            }
            let _ = recovery.send(answer);
        }
        if closing {
            return;
        }
    }
}

/// Bytes an unprivileged writer can still use on the file system of `path` (None if unknown).
fn free_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stat` a writable statvfs.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    // The fields are u64 on Linux, narrower elsewhere.
    #[allow(clippy::useless_conversion)]
    let (blocks, size) = (u64::from(stat.f_bavail), u64::from(stat.f_frsize));
    Some(blocks * size)
}
