//! A deterministic generator of realistic log events, for benchmarks and tests.
//!
//! Events follow the schema of `bench/logs/PROTOCOL.md`: `_time` (RFC 3339 UTC, milliseconds),
//! `tenant`, `service`, `host`, `level`, `message`, and for request events (service `nginx`,
//! about half) `method`, `path`, `status`, `latency_ms`, `bytes`, `client_ip`. They are
//! written as JSON lines sorted by `_time`.
//!
//! - Times: `timeline.rs`, exactly N times in [start, end) at a diurnal rate with bursts.
//! - System events: `loghub.rs`, messages from the Loghub templates of eleven systems, filled
//!   with values seen in the real logs or fresh ones of the same shape.
//! - Request events: `requests.rs`, an nginx access log of an API with Zipfian paths and
//!   clients.
//! - Tenants are Zipfian over `tenants` (seed 001 §6.1); hosts are `host-NNN`, each service on
//!   its own subset of them.
//!
//! Invariant: the same `GeneratorConfig` gives the same bytes on every machine. All randomness
//! comes from `random.rs` (PCG-64 split into named streams, `libm` for floating-point
//! functions), and nothing iterates a hash map.

mod error;
mod json;
mod loghub;
mod random;
mod requests;
mod timeline;

pub use error::LoggenError;
pub use json::push_rfc3339_millis;
pub use loghub::{loghub_services, loghub_templates};
pub use timeline::{diurnal_rate, Burst};

use loghub::Systems;
use random::{stream, Random, WeightedTable};
use requests::Requests;
use std::io::Write;
use timeline::{Timeline, MS_PER_DAY};

/// 2026-11-01T00:00:00Z, the default start.
pub const DEFAULT_START_MS: i64 = 1_793_491_200_000;
/// Times must stay in years 1970..=9999 to print as RFC 3339.
const MAX_TIME_MS: i64 = 253_402_300_800_000;
/// Share of events that are requests.
const REQUEST_SHARE: f64 = 0.5;
/// Skew of traffic over the hosts of one service.
const HOST_ZIPF_EXPONENT: f64 = 0.5;
/// Share of all hosts that run each service (`nginx` first, then the Loghub systems in
/// `loghub_services` order): a storage or compute tier is wide, ZooKeeper is a small quorum.
const HOST_SHARES: [(&str, f64); 12] = [
    ("nginx", 0.16),
    ("android", 0.03),
    ("bgl", 0.10),
    ("hadoop", 0.12),
    ("hdfs", 0.20),
    ("hpc", 0.10),
    ("linux", 0.05),
    ("openssh", 0.05),
    ("spark", 0.12),
    ("thunderbird", 0.10),
    ("windows", 0.04),
    ("zookeeper", 0.01),
];
/// Output is handed to the writer in pieces of about this many bytes.
const WRITE_CHUNK_BYTES: usize = 1 << 18;

/// What to generate. Every field takes part in the output: change any and the bytes change.
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratorConfig {
    pub seed: u64,
    /// Exactly this many events are generated.
    pub events: u64,
    /// Start of the time range in ms since the epoch (inclusive).
    pub start_ms: i64,
    /// End of the time range in ms since the epoch (exclusive).
    pub end_ms: i64,
    /// Number of tenants, `tenant-0001` (the largest) to `tenant-T`.
    pub tenants: u32,
    /// Exponent of the Zipf distribution of events over tenants.
    pub tenant_zipf_exponent: f64,
    /// Number of hosts, `host-001` to `host-H`.
    pub hosts: u32,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        Self {
            seed: 42,
            events: 1_000_000,
            start_ms: DEFAULT_START_MS,
            end_ms: DEFAULT_START_MS + MS_PER_DAY,
            tenants: 1,
            tenant_zipf_exponent: 0.99,
            hosts: 300,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }

    /// The level named as `as_str` prints it.
    pub fn parse(name: &str) -> Option<Level> {
        [Level::Debug, Level::Info, Level::Warn, Level::Error]
            .into_iter()
            .find(|level| level.as_str() == name)
    }

    /// 5xx is an error, 4xx a warning, anything else information.
    pub fn of_status(status: u16) -> Level {
        match status {
            500.. => Level::Error,
            400..=499 => Level::Warn,
            _ => Level::Info,
        }
    }
}

/// The fields only request events have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: &'static str,
    pub path: &'static str,
    pub status: u16,
    pub latency_ms: u32,
    pub bytes: u64,
    pub client_ip: [u8; 4],
}

/// One generated event; `message` borrows the generator's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    pub time_ms: i64,
    /// 1-based: tenant 1 is `tenant-0001`, the largest.
    pub tenant: u32,
    pub service: &'static str,
    /// 1-based: host 1 is `host-001`.
    pub host: u32,
    pub level: Level,
    pub message: &'a str,
    pub request: Option<Request>,
}

impl Event<'_> {
    /// Appends the event as one JSON object (no newline).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        json::write_event(self, out);
    }
}

/// The hosts that run one service and how traffic spreads over them.
#[derive(Debug)]
struct HostPool {
    hosts: Vec<u32>,
    table: WeightedTable,
}

/// Produces the events of a `GeneratorConfig`, in time order.
#[derive(Debug)]
pub struct Generator {
    timeline: Timeline,
    random: Random,
    systems: Systems,
    requests: Requests,
    tenants: WeightedTable,
    /// `nginx` first, then the Loghub systems in `Systems` order.
    host_pools: Vec<HostPool>,
    message: String,
}

impl Generator {
    pub fn new(config: &GeneratorConfig) -> Result<Self, LoggenError> {
        if config.start_ms < 0 || config.end_ms > MAX_TIME_MS || config.end_ms <= config.start_ms {
            return Err(LoggenError::TimeRange {
                start_ms: config.start_ms,
                end_ms: config.end_ms,
            });
        }
        if config.tenants == 0 {
            return Err(LoggenError::ZeroCount { name: "tenants" });
        }
        if config.hosts == 0 {
            return Err(LoggenError::ZeroCount { name: "hosts" });
        }
        if !(config.tenant_zipf_exponent.is_finite() && config.tenant_zipf_exponent >= 0.0) {
            return Err(LoggenError::ZipfExponent {
                exponent: config.tenant_zipf_exponent,
            });
        }

        let mut setup = Random::new(config.seed, stream::SETUP);
        let systems = Systems::load()?;
        let host_pools = std::iter::once("nginx")
            .chain(loghub_services())
            .map(|service| {
                let share = HOST_SHARES
                    .iter()
                    .find(|(name, _)| *name == service)
                    .map_or(0.05, |&(_, share)| share);
                host_pool(config.hosts, share, &mut setup)
            })
            .collect();
        let timeline = Timeline::new(
            config.start_ms,
            config.end_ms,
            config.events,
            &mut setup,
            Random::new(config.seed, stream::TIMES),
        );
        Ok(Self {
            timeline,
            random: Random::new(config.seed, stream::EVENTS),
            systems,
            requests: Requests::new(config.seed),
            tenants: WeightedTable::zipf(config.tenants as usize, config.tenant_zipf_exponent),
            host_pools,
            message: String::with_capacity(512),
        })
    }

    /// Events not generated yet.
    pub fn remaining(&self) -> u64 {
        self.timeline.remaining()
    }

    /// The bursts of the time range: more events, and more 5xx answers.
    pub fn bursts(&self) -> &[Burst] {
        self.timeline.bursts()
    }

    /// The next event in time order; `None` after the configured count.
    pub fn next_event(&mut self) -> Option<Event<'_>> {
        let (time_ms, in_burst) = self.timeline.next()?;
        let random = &mut self.random;
        let tenant = self.tenants.sample(random) as u32 + 1;
        self.message.clear();
        let (pool, service, level, request) = if random.chance(REQUEST_SHARE) {
            let request = self.requests.draw(random, in_burst, &mut self.message);
            (0, "nginx", Level::of_status(request.status), Some(request))
        } else {
            let system = self.systems.draw_system(random);
            let level = self.systems.draw_message(system, random, &mut self.message);
            (1 + system, self.systems.service(system), level, None)
        };
        let pool = &self.host_pools[pool];
        let host = pool.hosts[pool.table.sample(random)];
        Some(Event {
            time_ms,
            tenant,
            service,
            host,
            level,
            message: &self.message,
            request,
        })
    }
}

/// A random subset of `ceil(hosts * share)` hosts (at least one), by a partial Fisher-Yates
/// shuffle of `1..=hosts`.
fn host_pool(hosts: u32, share: f64, random: &mut Random) -> HostPool {
    let size = ((f64::from(hosts) * share).ceil() as usize).clamp(1, hosts as usize);
    let mut all: Vec<u32> = (1..=hosts).collect();
    for i in 0..size {
        let j = i + random.below((all.len() - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(size);
    HostPool {
        table: WeightedTable::zipf(size, HOST_ZIPF_EXPONENT),
        hosts: all,
    }
}

/// Writes the events of `config` to `out` as JSON lines and returns how many; `progress` is
/// called with the running count after each chunk handed to `out`.
pub fn write_events(
    config: &GeneratorConfig,
    mut out: impl Write,
    mut progress: impl FnMut(u64),
) -> Result<u64, LoggenError> {
    let mut generator = Generator::new(config)?;
    let mut buffer = Vec::with_capacity(WRITE_CHUNK_BYTES + 4096);
    let mut written = 0;
    while let Some(event) = generator.next_event() {
        event.write_json(&mut buffer);
        buffer.push(b'\n');
        written += 1;
        if buffer.len() >= WRITE_CHUNK_BYTES {
            out.write_all(&buffer)?;
            buffer.clear();
            progress(written);
        }
    }
    out.write_all(&buffer)?;
    out.flush()?;
    progress(written);
    Ok(written)
}

#[cfg(test)]
mod tests;
