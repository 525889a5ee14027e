//! What the kernel knows about the engine process: CPU time (`/proc/PID/stat`), peak resident
//! memory (`VmHWM` in `/proc/PID/status`), and the size of its data directory.

use std::fs;
use std::path::Path;

use anyhow::Context;

/// User plus system CPU seconds the process (all its threads) has used so far.
pub fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    parse_cpu_ticks(&stat)
        .map(|ticks| ticks as f64 / clock_ticks_per_second())
        .with_context(|| format!("malformed /proc/{pid}/stat"))
}

/// `utime + stime` of a `/proc/PID/stat` line: fields 14 and 15, counted after the command name,
/// which is in parentheses and may itself hold spaces or parentheses.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name: field 3 (state) is the first, so utime (14) is the 12th.
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// The process's peak resident set size in bytes (`VmHWM`).
pub fn peak_rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    parse_kib_field(&status, "VmHWM:")
        .map(|kib| kib * 1024)
        .with_context(|| format!("no VmHWM in /proc/{pid}/status"))
}

fn parse_kib_field(status: &str, name: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// What `du -sb` prints: the apparent size of every file and directory under `path`.
pub fn disk_bytes(path: &Path) -> anyhow::Result<u64> {
    let metadata =
        fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    let mut total = metadata.len();
    if metadata.is_dir() {
        for entry in fs::read_dir(path).with_context(|| format!("listing {}", path.display()))? {
            total += disk_bytes(&entry?.path())?;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_fields() {
        let stat = "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1500 250 0 0 20 0 30 0";
        assert_eq!(parse_cpu_ticks(stat), Some(1750));
        assert_eq!(parse_cpu_ticks("garbage"), None);
        let status = "Name:\tjava\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(parse_kib_field(status, "VmHWM:"), Some(123456));
    }

    #[test]
    fn measures_this_process() {
        let pid = std::process::id();
        assert!(cpu_seconds(pid).unwrap() >= 0.0);
        assert!(peak_rss_bytes(pid).unwrap() > 0);
    }

    #[test]
    fn sums_a_directory_like_du() {
        let dir = std::env::temp_dir().join(format!("ingest-du-{}", std::process::id()));
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("a"), [0u8; 100]).unwrap();
        fs::write(dir.join("sub/b"), [0u8; 11]).unwrap();
        let dirs = fs::metadata(&dir).unwrap().len() + fs::metadata(dir.join("sub")).unwrap().len();
        assert_eq!(disk_bytes(&dir).unwrap(), 111 + dirs);
        fs::remove_dir_all(&dir).unwrap();
    }
}
