//! `quarry gen-logs`: writes generated events (`quarry-loggen`) as JSON lines.

use anyhow::{bail, Context, Result};
use chrono::DateTime;
use indicatif::{ProgressBar, ProgressStyle};
use quarry_loggen::{write_events, GeneratorConfig};
use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// zstd level of `.zst` output: fast, and about as small as level 19 on such repetitive text
/// relative to the time it takes.
const ZSTD_LEVEL: i32 = 3;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Events follow bench/logs/PROTOCOL.md: `_time` (RFC 3339 UTC, ms), `tenant`, `service`, `host`, \
`level`, `message`; request events (service `nginx`, about half) also have `method`, `path`, \
`status`, `latency_ms`, `bytes`, `client_ip`. Messages of the other services come from the \
Loghub templates (https://github.com/logpai/loghub). By default the events cover the day that \
ends now, so `--start now-1d` searches find them; with --start (or --end) given, the same \
arguments give the same bytes on every machine.")]
pub struct GenLogsArgs {
    /// Number of events to write (exactly)
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Random seed; the output is a function of all the arguments
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Start of the time range, RFC 3339, inclusive [default: end - 1 day]
    #[arg(long, value_parser = parse_time_ms, value_name = "TIME")]
    start: Option<i64>,
    /// End of the time range, RFC 3339, exclusive [default: start + 1 day, or now without
    /// --start]
    #[arg(long, value_parser = parse_time_ms, value_name = "TIME")]
    end: Option<i64>,
    /// Number of tenants (`tenant-0001` ... ), sized by a Zipf distribution
    #[arg(long, default_value_t = 1)]
    tenants: u32,
    /// Exponent of the Zipf distribution of events over tenants
    #[arg(long, default_value_t = 0.99)]
    zipf: f64,
    /// Number of hosts (`host-001` ...); each service runs on a subset
    #[arg(long, default_value_t = 300)]
    hosts: u32,
    /// Output file; a `.zst` name is zstd-compressed; `-` or none writes to stdout
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Milliseconds since the epoch of an RFC 3339 time.
fn parse_time_ms(text: &str) -> Result<i64, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|time| time.timestamp_millis())
        .map_err(|error| {
            format!("'{text}' is not an RFC 3339 time ({error}), e.g. 2026-11-01T00:00:00Z")
        })
}

pub fn gen_logs(args: GenLogsArgs) -> Result<ExitCode> {
    const DAY_MS: i64 = 86_400_000;
    let (start_ms, end_ms) = match (args.start, args.end) {
        (Some(start), Some(end)) => (start, end),
        (Some(start), None) => (start, start + DAY_MS),
        (None, Some(end)) => (end - DAY_MS, end),
        (None, None) => {
            // Whole seconds, so two runs in the same second write the same bytes.
            let now_ms = chrono::Utc::now().timestamp() * 1000;
            (now_ms - DAY_MS, now_ms)
        }
    };
    if end_ms <= start_ms {
        bail!("--end must be after --start");
    }
    let config = GeneratorConfig {
        seed: args.seed,
        events: args.events,
        start_ms,
        end_ms,
        tenants: args.tenants,
        tenant_zipf_exponent: args.zipf,
        hosts: args.hosts,
    };
    let path = args.output.filter(|path| path.as_os_str() != "-");
    let started = Instant::now();
    let Some(path) = path else {
        write_events(&config, std::io::stdout().lock(), |_| {})?;
        return Ok(ExitCode::SUCCESS);
    };

    let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let bar = if std::io::stderr().is_terminal() {
        progress_bar(args.events)
    } else {
        ProgressBar::hidden()
    };
    let progress = |written| bar.set_position(written);
    let compressed = path.extension().is_some_and(|extension| extension == "zst");
    let written = if compressed {
        let mut encoder = zstd::Encoder::new(file, ZSTD_LEVEL)?;
        let written = write_events(&config, &mut encoder, progress)?;
        encoder.finish()?.sync_all()?;
        written
    } else {
        let mut file = file;
        let written = write_events(&config, &mut file, progress)?;
        file.flush()?;
        written
    };
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {written} events ({:.1} MB) to {} in {seconds:.2} s: {:.0} events/s",
        bytes as f64 / 1e6,
        path.display(),
        if seconds > 0.0 {
            written as f64 / seconds
        } else {
            0.0
        },
    );
    Ok(ExitCode::SUCCESS)
}

fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} events, {eta} left",
        )
        // unwrap: the template is a constant known to parse.
        .unwrap(),
    );
    bar
}
