//! The machine's physical limits for ingest, measured on the file system that holds the
//! engines' data:
//!
//! - **fsync/s**: a loop of append 4 KiB + `fdatasync` on one file, a WAL's worst case (one
//!   record per sync; the file grows, so each sync also writes the size). An engine that
//!   acknowledges a request only after a sync acknowledges at most about this many requests a
//!   second unless it groups them.
//! - **sequential write MB/s**: `WRITE_BYTES` written in 1 MiB `write`s, then one `fdatasync`,
//!   timed to the end of the sync: the most raw bytes per second any engine could persist.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
pub struct DiskRecord {
    pub fsync_per_s: f64,
    pub fsync_p50_us: f64,
    pub fsync_p99_us: f64,
    pub seq_write_mb_per_s: f64,
    pub seq_write_bytes: u64,
    pub dir: String,
}

fn fdatasync(file: &File) -> anyhow::Result<()> {
    // SAFETY: the descriptor is open for as long as `file` lives.
    if unsafe { libc::fdatasync(file.as_raw_fd()) } != 0 {
        return Err(std::io::Error::last_os_error()).context("fdatasync");
    }
    Ok(())
}

/// Runs both measurements in `dir`; each leaves no file behind.
pub fn measure(
    dir: &Path,
    fsync_duration: Duration,
    write_bytes: u64,
) -> anyhow::Result<DiskRecord> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (fsync_per_s, mut syncs) = fsync_rate(&dir.join("fsync-probe"), fsync_duration)?;
    syncs.sort_unstable();
    let seq_write_mb_per_s = sequential_write(&dir.join("write-probe"), write_bytes)?;
    Ok(DiskRecord {
        fsync_per_s,
        fsync_p50_us: crate::stats::percentile(&syncs, 500).as_secs_f64() * 1e6,
        fsync_p99_us: crate::stats::percentile(&syncs, 990).as_secs_f64() * 1e6,
        seq_write_mb_per_s,
        seq_write_bytes: write_bytes,
        dir: dir.display().to_string(),
    })
}

/// Syncs per second, and each sync's duration.
fn fsync_rate(path: &Path, duration: Duration) -> anyhow::Result<(f64, Vec<Duration>)> {
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    let block = [0x5au8; 4096];
    let mut syncs = Vec::new();
    let started = Instant::now();
    while started.elapsed() < duration || syncs.is_empty() {
        file.write_all(&block)?;
        let before = Instant::now();
        fdatasync(&file)?;
        syncs.push(before.elapsed());
    }
    let rate = syncs.len() as f64 / started.elapsed().as_secs_f64();
    drop(file);
    fs::remove_file(path)?;
    Ok((rate, syncs))
}

/// MB (10^6 bytes) per second from the first write to the end of the sync.
fn sequential_write(path: &Path, bytes: u64) -> anyhow::Result<f64> {
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    // Incompressible bytes (xorshift), so no layer below gets the data cheaper than an engine's.
    let mut chunk = vec![0u8; 1 << 20];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for word in chunk.chunks_exact_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        word.copy_from_slice(&state.to_le_bytes());
    }
    let started = Instant::now();
    let mut written = 0u64;
    while written < bytes {
        let length = (bytes - written).min(chunk.len() as u64) as usize;
        file.write_all(&chunk[..length])?;
        written += length as u64;
    }
    fdatasync(&file)?;
    let seconds = started.elapsed().as_secs_f64();
    drop(file);
    fs::remove_file(path)?;
    Ok(bytes as f64 / 1e6 / seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_small_disk_run() {
        let dir = std::env::temp_dir().join(format!("ingest-disk-{}", std::process::id()));
        let record = measure(&dir, Duration::from_millis(50), 3 << 20).unwrap();
        assert!(record.fsync_per_s > 0.0 && record.seq_write_mb_per_s > 0.0);
        assert!(record.fsync_p50_us <= record.fsync_p99_us);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        fs::remove_dir_all(&dir).unwrap();
    }
}
