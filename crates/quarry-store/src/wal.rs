//! The write-ahead log: what a server acknowledged and has not yet written into a committed
//! block.
//!
//! ```text
//! DIR/wal/TENANT/00000000000000000001.wal   a segment, named by its first record's sequence
//! segment = header record*
//! header  = "QWAL" version:u32le
//! record  = len:u32le crc:u32le seq:u64le payload[len]       crc = crc32(seq ‖ payload)
//! ```
//!
//! A record's payload is opaque here (the server's batch of events). Sequence numbers
//! increase by one from record to record across segments. The catalog keeps, per tenant, the
//! last sequence number whose events are in committed blocks ([`crate::Catalog::wal_committed`]);
//! replay hands back every record and the caller skips those, so a crash between a block
//! commit and the removal of its segments replays nothing twice.
//!
//! **Torn tails.** A crash can leave the last segment ending in part of a record (or in bytes
//! the file system had allocated but not written). Reading stops at the first record whose
//! length runs past the end or whose checksum does not match, and [`Wal::open`] truncates the
//! segment there, so the next append follows the last whole record. Such a record was never
//! acknowledged: acknowledgement comes after the fsync that makes the whole record durable.
//! The same stop in a segment that is *not* the last one is damage (a whole later segment
//! exists, so that tail was once complete): it is reported in [`Replay::damaged`], never
//! skipped over silently, and never misread, because nothing after an unverifiable length can
//! be trusted.
//!
//! **Segments and removal.** New records go to the newest segment; [`Wal::rotate`] starts a
//! new one (on open, past a size, and when a flush asks so that the flushed records sit in
//! segments of their own). [`Wal::remove_through`] deletes the segments whose records are all
//! at or below a committed sequence number.
//!
//! **Failed writes.** A write or sync that fails (a full disk, an I/O error) leaves the
//! segment's tail in an unknown state. The records appended since the last successful sync
//! were never acknowledged; [`Wal::recover`] drops them: it cuts the segment back to what the
//! last sync made durable (shrinking a file needs no free space) on a new file handle, syncs
//! that, and appends go on from the last durable record. Nothing is latched: once the disk
//! has room again, the log works as before.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"QWAL";
const WAL_VERSION: u32 = 1;
const HEADER_LEN: u64 = 8;
const RECORD_HEAD: usize = 16;
/// A record longer than this is not one the server writes (its body limit is far lower): a
/// length beyond it is garbage, not a reason to allocate.
pub const MAX_RECORD_LEN: usize = 1 << 30;
const EXTENSION: &str = "wal";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a Quarry WAL segment ({reason})")]
    NotWal { path: PathBuf, reason: &'static str },
    #[error("WAL sequence numbers must increase: got {got} after {last}")]
    OutOfOrder { last: u64, got: u64 },
    #[error("WAL record of {len} bytes is over the limit of {MAX_RECORD_LEN}")]
    TooLong { len: usize },
}

pub type Result<T, E = WalError> = std::result::Result<T, E>;

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecord {
    pub seq: u64,
    pub payload: Vec<u8>,
}

/// Damage found while reading a segment that is not the last: everything from `offset` on in
/// `path` could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalDamage {
    pub path: PathBuf,
    pub offset: u64,
    pub reason: &'static str,
}

/// What [`Wal::open`] read.
#[derive(Debug, Default)]
pub struct Replay {
    /// Every whole record, in sequence order.
    pub records: Vec<WalRecord>,
    /// Bytes of torn tail dropped from the last segment (0 after a clean stop).
    pub torn_bytes: u64,
    pub damaged: Vec<WalDamage>,
}

struct Segment {
    path: PathBuf,
    /// Sequence number of its last record; None while it has none.
    last_seq: Option<u64>,
}

/// An open WAL directory, appending to its newest segment.
pub struct Wal {
    dir: PathBuf,
    /// Oldest first; the last one is `out`'s when there is an `out`.
    segments: Vec<Segment>,
    /// The segment being written; None after `open` could not create one (a full disk): the
    /// first append or `recover` creates it.
    out: Option<BufWriter<File>>,
    /// Why `open` could not create a segment.
    open_failure: Option<String>,
    out_len: u64,
    /// Sequence number of the last record appended or read (0: none ever).
    last_seq: u64,
    /// What the last successful sync made durable: the segment's length then, and the last
    /// record's sequence number. [`Wal::recover`] goes back to it.
    synced_len: u64,
    synced_seq: u64,
}

impl Wal {
    /// Opens (creating) the WAL in `dir`, reads back every record, drops a torn tail, and
    /// starts a new segment for appends. `min_next_seq` is the smallest sequence number the
    /// next append may use (one past what the catalog has committed, in case the segments
    /// holding those records were already removed).
    pub fn open(dir: &Path, min_next_seq: u64) -> Result<(Wal, Replay)> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let path = entry.map_err(io(dir))?.path();
            if path.extension().and_then(|e| e.to_str()) != Some(EXTENSION) {
                continue;
            }
            let first_seq = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<u64>().ok());
            match first_seq {
                Some(first_seq) => names.push((first_seq, path)),
                None => {
                    return Err(WalError::NotWal {
                        path,
                        reason: "name is not a sequence number",
                    })
                }
            }
        }
        names.sort();
        let mut replay = Replay::default();
        let mut segments = Vec::with_capacity(names.len() + 1);
        let count = names.len();
        for (i, (_, path)) in names.into_iter().enumerate() {
            let is_last = i + 1 == count;
            let read = read_segment(&path)?;
            let last_seq = read.records.last().map(|r| r.seq);
            if let Some((offset, reason)) = read.stop {
                if is_last {
                    replay.torn_bytes = read.file_len - offset;
                    let file = OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .map_err(io(&path))?;
                    file.set_len(offset).map_err(io(&path))?;
                    file.sync_all().map_err(io(&path))?;
                } else {
                    replay.damaged.push(WalDamage {
                        path: path.clone(),
                        offset,
                        reason,
                    });
                }
            }
            replay.records.extend(read.records);
            segments.push(Segment { path, last_seq });
        }
        replay.records.sort_by_key(|r| r.seq);
        let last_seq = replay
            .records
            .last()
            .map_or(0, |r| r.seq)
            .max(min_next_seq.saturating_sub(1));
        // Drop empty segments (a crash right after a rotation leaves one).
        segments.retain(|s| {
            let empty = s.last_seq.is_none();
            if empty {
                let _ = std::fs::remove_file(&s.path);
            }
            !empty
        });
        // A full disk must not keep the server from starting and answering searches: without
        // a segment, appends fail (and the server refuses ingest, saying why) until one can
        // be created.
        let (out, open_failure) = match create_segment(dir, last_seq + 1) {
            Ok((out, segment)) => {
                segments.push(segment);
                (Some(out), None)
            }
            Err(error) => (None, Some(error.to_string())),
        };
        Ok((
            Wal {
                dir: dir.to_path_buf(),
                segments,
                out,
                open_failure,
                out_len: HEADER_LEN,
                last_seq,
                synced_len: HEADER_LEN,
                synced_seq: last_seq,
            },
            replay,
        ))
    }

    /// The directory of the segments.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Why `open` could not create a segment to append to (a full disk), if it could not.
    pub fn open_failure(&self) -> Option<&str> {
        self.open_failure.as_deref()
    }

    /// The segment being written and its path, created if `open` could not.
    fn out(&mut self) -> Result<(&mut BufWriter<File>, &Path)> {
        if self.out.is_none() {
            let (out, segment) = create_segment(&self.dir, self.last_seq + 1)?;
            (self.out, self.out_len, self.synced_len) = (Some(out), HEADER_LEN, HEADER_LEN);
            self.segments.push(segment);
            self.open_failure = None;
        }
        let path = &self
            .segments
            .last()
            .expect("a segment whenever there is an out")
            .path;
        Ok((self.out.as_mut().expect("created above"), path))
    }

    /// The sequence number of the last record (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Bytes in the segment being written.
    pub fn segment_len(&self) -> u64 {
        self.out_len
    }

    /// Appends a record (buffered: durable after [`Wal::sync`]). `seq` must be one past the
    /// last.
    pub fn append(&mut self, seq: u64, payload: &[u8]) -> Result<()> {
        if seq != self.last_seq + 1 {
            return Err(WalError::OutOfOrder {
                last: self.last_seq,
                got: seq,
            });
        }
        if payload.len() > MAX_RECORD_LEN {
            return Err(WalError::TooLong { len: payload.len() });
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&seq.to_le_bytes());
        crc.update(payload);
        let mut head = [0u8; RECORD_HEAD];
        head[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        head[4..8].copy_from_slice(&crc.finalize().to_le_bytes());
        head[8..16].copy_from_slice(&seq.to_le_bytes());
        let (out, path) = self.out()?;
        out.write_all(&head).map_err(io(path))?;
        out.write_all(payload).map_err(io(path))?;
        self.out_len += (RECORD_HEAD + payload.len()) as u64;
        self.last_seq = seq;
        self.segments
            .last_mut()
            .expect("always one segment")
            .last_seq = Some(seq);
        Ok(())
    }

    /// Makes every appended record durable (one fdatasync for all of them: group commit).
    pub fn sync(&mut self) -> Result<()> {
        let Some(out) = &mut self.out else {
            // Nothing was appended since `open` (an append creates the segment).
            return Ok(());
        };
        let path = &self
            .segments
            .last()
            .expect("a segment whenever there is an out")
            .path;
        out.flush().map_err(io(path))?;
        out.get_ref().sync_data().map_err(io(path))?;
        (self.synced_len, self.synced_seq) = (self.out_len, self.last_seq);
        Ok(())
    }

    /// The last record the last successful sync made durable.
    pub fn synced_seq(&self) -> u64 {
        self.synced_seq
    }

    /// After a failed append or sync: drops every record appended since the last successful
    /// sync (none was acknowledged), cutting the segment back to its durable length on a new
    /// file handle (an fd whose write-back failed may report later syncs as good), and syncs
    /// that. Returns the last durable sequence number: the next append is one past it. Fails,
    /// changing nothing the next try depends on, while the file system refuses even that.
    pub fn recover(&mut self) -> Result<u64> {
        if self.out.is_none() {
            self.out()?;
            return Ok(self.synced_seq);
        }
        let path = self
            .segments
            .last()
            .expect("a segment whenever there is an out")
            .path
            .clone();
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        file.set_len(self.synced_len).map_err(io(&path))?;
        file.sync_all().map_err(io(&path))?;
        let mut file = file;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(self.synced_len))
            .map_err(io(&path))?;
        // The old writer's buffer holds the dropped records: discarded, never written.
        let old = self.out.replace(BufWriter::with_capacity(1 << 20, file));
        drop(old.map(BufWriter::into_parts));
        self.out_len = self.synced_len;
        self.last_seq = self.synced_seq;
        let durable = self.synced_seq;
        let segment = self
            .segments
            .last_mut()
            .expect("a segment whenever there is an out");
        if segment.last_seq.is_some_and(|last| last > durable) {
            // Nothing of this segment was durable if its first record is past the last
            // durable one (it starts at `durable + 1` or later).
            let first = segment_first_seq(&segment.path);
            segment.last_seq = (first <= durable).then_some(durable);
        }
        Ok(durable)
    }

    /// Every record in the segments on disk, in sequence order (what a restart would replay).
    /// Appended records must have been synced (or dropped by `recover`) first.
    pub fn read_back(&self) -> Result<Vec<WalRecord>> {
        let mut records = Vec::new();
        for segment in &self.segments {
            records.extend(read_segment(&segment.path)?.records);
        }
        records.sort_by_key(|r| r.seq);
        Ok(records)
    }

    /// Syncs, then starts a new segment (unless the current one is still empty).
    pub fn rotate(&mut self) -> Result<()> {
        let writing_empty = self.segments.last().is_none_or(|s| s.last_seq.is_none());
        if self.out.is_none() || writing_empty {
            return Ok(());
        }
        self.sync()?;
        let (out, segment) = create_segment(&self.dir, self.last_seq + 1)?;
        self.out = Some(out);
        self.out_len = HEADER_LEN;
        self.synced_len = HEADER_LEN;
        self.segments.push(segment);
        Ok(())
    }

    /// Deletes every segment, except the one being written, whose records all have sequence
    /// numbers at or below `seq` (they are in committed blocks).
    pub fn remove_through(&mut self, seq: u64) -> Result<()> {
        let keep_from = self.segments.len() - usize::from(self.out.is_some());
        let mut removed = 0;
        for segment in &self.segments[..keep_from] {
            if segment.last_seq.is_some_and(|last| last > seq) {
                break;
            }
            std::fs::remove_file(&segment.path).map_err(io(&segment.path))?;
            removed += 1;
        }
        self.segments.drain(..removed);
        Ok(())
    }

    /// Paths of the segments on disk, oldest first.
    pub fn segment_paths(&self) -> Vec<PathBuf> {
        self.segments.iter().map(|s| s.path.clone()).collect()
    }
}

/// The first sequence number a segment may hold, from its name (0 if it has no number).
fn segment_first_seq(path: &Path) -> u64 {
    path.file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WalError {
    let path = path.to_path_buf();
    move |source| WalError::Io { path, source }
}

fn create_segment(dir: &Path, first_seq: u64) -> Result<(BufWriter<File>, Segment)> {
    let path = dir.join(format!("{first_seq:020}.{EXTENSION}"));
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    let mut header = [0u8; HEADER_LEN as usize];
    header[0..4].copy_from_slice(MAGIC);
    header[4..8].copy_from_slice(&WAL_VERSION.to_le_bytes());
    file.write_all(&header).map_err(io(&path))?;
    file.sync_all().map_err(io(&path))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    Ok((
        BufWriter::with_capacity(1 << 20, file),
        Segment {
            path,
            last_seq: None,
        },
    ))
}

struct SegmentRead {
    records: Vec<WalRecord>,
    file_len: u64,
    /// Where reading stopped before the end, and why.
    stop: Option<(u64, &'static str)>,
}

fn read_segment(path: &Path) -> Result<SegmentRead> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(io(path))?;
    let file_len = bytes.len() as u64;
    if bytes.len() < HEADER_LEN as usize {
        // A crash while creating the segment: no record can be in it.
        return Ok(SegmentRead {
            records: Vec::new(),
            file_len,
            stop: Some((0, "segment header is incomplete")),
        });
    }
    if &bytes[0..4] != MAGIC {
        return Err(WalError::NotWal {
            path: path.to_path_buf(),
            reason: "bad magic",
        });
    }
    let version = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if version != WAL_VERSION {
        return Err(WalError::NotWal {
            path: path.to_path_buf(),
            reason: "unknown version",
        });
    }
    let mut records = Vec::new();
    let mut at = HEADER_LEN as usize;
    let mut stop = None;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < RECORD_HEAD {
            stop = Some((at as u64, "record header is incomplete"));
            break;
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        let seq_bytes = &rest[8..16];
        if len > MAX_RECORD_LEN || rest.len() - RECORD_HEAD < len {
            stop = Some((at as u64, "record runs past the end of the segment"));
            break;
        }
        let payload = &rest[RECORD_HEAD..RECORD_HEAD + len];
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(seq_bytes);
        hasher.update(payload);
        if hasher.finalize() != crc {
            stop = Some((at as u64, "record checksum does not match"));
            break;
        }
        let seq = u64::from_le_bytes(seq_bytes.try_into().expect("8 bytes"));
        if records.last().is_some_and(|r: &WalRecord| r.seq >= seq) {
            stop = Some((at as u64, "sequence number does not increase"));
            break;
        }
        records.push(WalRecord {
            seq,
            payload: payload.to_vec(),
        });
        at += RECORD_HEAD + len;
    }
    Ok(SegmentRead {
        records,
        file_len,
        stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(seq: u64) -> Vec<u8> {
        format!("record {seq} ")
            .repeat(seq as usize % 7 + 1)
            .into_bytes()
    }

    fn append_all(wal: &mut Wal, seqs: std::ops::RangeInclusive<u64>) {
        for seq in seqs {
            wal.append(seq, &payload(seq)).unwrap();
        }
        wal.sync().unwrap();
    }

    fn seqs(replay: &Replay) -> Vec<u64> {
        replay.records.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn records_come_back_in_order_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, replay) = Wal::open(dir.path(), 1).unwrap();
        assert!(replay.records.is_empty());
        append_all(&mut wal, 1..=5);
        wal.rotate().unwrap();
        append_all(&mut wal, 6..=9);
        drop(wal);
        let (wal, replay) = Wal::open(dir.path(), 1).unwrap();
        assert_eq!(seqs(&replay), (1..=9).collect::<Vec<_>>());
        for record in &replay.records {
            assert_eq!(record.payload, payload(record.seq));
        }
        assert_eq!(replay.torn_bytes, 0);
        assert_eq!(wal.last_seq(), 9);
    }

    /// Issue 26, defect 4: after a failed write or sync, `recover` drops what was not
    /// durable (records appended, some even written out by a full buffer, never synced) and
    /// the log goes on from the last durable record, in this process and after a restart.
    #[test]
    fn recover_drops_what_the_last_sync_did_not_make_durable() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 1).unwrap();
        append_all(&mut wal, 1..=4);
        wal.rotate().unwrap();
        append_all(&mut wal, 5..=6);
        // Not synced: 7 stays in the buffer, 8 is large enough to be written out.
        wal.append(7, &payload(7)).unwrap();
        wal.append(8, &vec![b'x'; 3 << 20]).unwrap();
        assert_eq!(wal.recover().unwrap(), 6);
        assert_eq!(wal.last_seq(), 6);
        let seqs_read: Vec<u64> = wal.read_back().unwrap().iter().map(|r| r.seq).collect();
        assert_eq!(seqs_read, (1..=6).collect::<Vec<_>>());
        assert!(matches!(
            wal.append(9, b"x"),
            Err(WalError::OutOfOrder { last: 6, got: 9 })
        ));
        append_all(&mut wal, 7..=8);
        // A fresh segment with nothing durable in it goes back to empty.
        wal.rotate().unwrap();
        wal.append(9, &payload(9)).unwrap();
        assert_eq!(wal.recover().unwrap(), 8);
        append_all(&mut wal, 9..=10);
        drop(wal);
        let (wal, replay) = Wal::open(dir.path(), 1).unwrap();
        assert_eq!(seqs(&replay), (1..=10).collect::<Vec<_>>());
        for record in &replay.records {
            assert_eq!(record.payload, payload(record.seq));
        }
        assert_eq!((replay.torn_bytes, wal.last_seq()), (0, 10));
    }

    #[test]
    fn appends_must_follow_the_last_sequence_number() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 11).unwrap();
        assert!(matches!(
            wal.append(5, b"x"),
            Err(WalError::OutOfOrder { last: 10, got: 5 })
        ));
        wal.append(11, b"x").unwrap();
    }

    /// Cut the last segment at every length inside its last record: the records before it
    /// come back, the torn bytes are dropped, and appends continue after them.
    #[test]
    fn a_torn_tail_is_dropped_at_every_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 1).unwrap();
        append_all(&mut wal, 1..=3);
        let path = wal.segment_paths().last().unwrap().clone();
        let before_last = std::fs::metadata(&path).unwrap().len();
        append_all(&mut wal, 4..=4);
        drop(wal);
        let whole = std::fs::read(&path).unwrap();
        for cut in before_last..whole.len() as u64 {
            std::fs::write(&path, &whole[..cut as usize]).unwrap();
            // Other segments from earlier iterations' opens hold nothing; remove them.
            for entry in std::fs::read_dir(dir.path()).unwrap() {
                let other = entry.unwrap().path();
                if other != path {
                    std::fs::remove_file(other).unwrap();
                }
            }
            let (mut wal, replay) = Wal::open(dir.path(), 1).unwrap();
            assert_eq!(seqs(&replay), vec![1, 2, 3], "cut at {cut}");
            assert_eq!(replay.torn_bytes, cut - before_last);
            assert!(replay.damaged.is_empty());
            assert_eq!(std::fs::metadata(&path).unwrap().len(), before_last);
            append_all(&mut wal, 4..=4);
        }
    }

    /// Flip each byte of the last record: it is never read back as something else.
    #[test]
    fn a_flipped_byte_is_never_misread() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 1).unwrap();
        append_all(&mut wal, 1..=2);
        let path = wal.segment_paths().last().unwrap().clone();
        let start = std::fs::metadata(&path).unwrap().len() as usize;
        append_all(&mut wal, 3..=3);
        drop(wal);
        let whole = std::fs::read(&path).unwrap();
        for at in start..whole.len() {
            let mut bytes = whole.clone();
            bytes[at] ^= 0x20;
            for entry in std::fs::read_dir(dir.path()).unwrap() {
                std::fs::remove_file(entry.unwrap().path()).unwrap();
            }
            std::fs::write(&path, &bytes).unwrap();
            let (_, replay) = Wal::open(dir.path(), 1).unwrap();
            let got = seqs(&replay);
            assert_eq!(got, vec![1, 2], "flip at {at}");
        }
    }

    #[test]
    fn damage_before_the_last_segment_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 1).unwrap();
        append_all(&mut wal, 1..=3);
        let first = wal.segment_paths()[0].clone();
        wal.rotate().unwrap();
        append_all(&mut wal, 4..=5);
        drop(wal);
        let mut bytes = std::fs::read(&first).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&first, &bytes).unwrap();
        let (_, replay) = Wal::open(dir.path(), 1).unwrap();
        assert_eq!(seqs(&replay), vec![1, 2, 4, 5]);
        assert_eq!(replay.damaged.len(), 1);
        assert_eq!(replay.damaged[0].path, first);
    }

    #[test]
    fn committed_segments_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 1).unwrap();
        append_all(&mut wal, 1..=3);
        wal.rotate().unwrap();
        append_all(&mut wal, 4..=6);
        wal.rotate().unwrap();
        append_all(&mut wal, 7..=7);
        wal.remove_through(5).unwrap();
        assert_eq!(wal.segment_paths().len(), 2);
        wal.remove_through(7).unwrap();
        // The segment being written stays.
        assert_eq!(wal.segment_paths().len(), 1);
        drop(wal);
        let (wal, replay) = Wal::open(dir.path(), 8).unwrap();
        assert_eq!(seqs(&replay), vec![7]);
        assert_eq!(wal.last_seq(), 7);
    }
}
