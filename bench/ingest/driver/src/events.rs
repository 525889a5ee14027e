//! The input: a JSON-lines event file (`quarry gen-logs`), read once, cut into request bodies
//! before the clock starts so client threads only send.

use std::io::BufRead;
use std::path::Path;

use anyhow::Context;

/// How events are framed in a request.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Elasticsearch `_bulk`: an action line before each event.
    Bulk,
    /// One event per line, nothing else (Quarry's `/ingest`).
    Ndjson,
    /// One event per line, as `Ndjson`, to an endpoint whose answer says nothing per event
    /// (VictoriaLogs' `/insert/jsonline`: an empty 200, a line it cannot parse skipped with a
    /// logged warning): only the status is checked, and `--count-path` counts what was kept.
    Jsonline,
}

/// The action line before every event of a bulk body.
pub const BULK_ACTION: &[u8] = b"{\"index\":{\"_index\":\"default\"}}\n";

impl Format {
    pub fn content_type(self) -> &'static str {
        "application/x-ndjson"
    }

    /// Appends one event (a JSON object, no line break) to a request body.
    pub fn push_event(self, body: &mut Vec<u8>, event: &[u8]) {
        if self == Format::Bulk {
            body.extend_from_slice(BULK_ACTION);
        }
        body.extend_from_slice(event);
        body.push(b'\n');
    }
}

/// The request bodies of one run and what they hold.
pub struct Requests {
    pub bodies: Vec<Vec<u8>>,
    pub events: u64,
    /// The events' JSON, one line break each: what "raw bytes" means in every figure.
    pub raw_bytes: u64,
}

/// Reads up to `limit` events of `path` (plain or zstd) and frames `batch` of them per body.
pub fn load(
    path: &Path,
    format: Format,
    batch: usize,
    limit: Option<u64>,
) -> anyhow::Result<Requests> {
    anyhow::ensure!(batch > 0, "the batch size must be at least 1");
    let mut lines = logs_driver::input::open(path)?;
    let mut requests = Requests {
        bodies: Vec::new(),
        events: 0,
        raw_bytes: 0,
    };
    let mut body = Vec::new();
    let mut in_body = 0;
    let mut line = Vec::new();
    while limit.is_none_or(|limit| requests.events < limit) {
        line.clear();
        let read = lines
            .read_until(b'\n', &mut line)
            .with_context(|| format!("reading {}", path.display()))?;
        if read == 0 {
            break;
        }
        let event = line.trim_ascii();
        if event.is_empty() {
            continue;
        }
        format.push_event(&mut body, event);
        requests.events += 1;
        requests.raw_bytes += event.len() as u64 + 1;
        in_body += 1;
        if in_body == batch {
            requests.bodies.push(std::mem::take(&mut body));
            in_body = 0;
        }
    }
    if in_body > 0 {
        requests.bodies.push(body);
    }
    Ok(requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_events_in_batches() {
        let path = std::env::temp_dir().join(format!("ingest-events-{}.json", std::process::id()));
        std::fs::write(&path, "{\"a\":1}\n\n{\"a\":2}  \n{\"a\":3}\n").unwrap();
        let bulk = load(&path, Format::Bulk, 2, None).unwrap();
        assert_eq!((bulk.events, bulk.raw_bytes, bulk.bodies.len()), (3, 24, 2));
        assert_eq!(
            String::from_utf8(bulk.bodies[1].clone()).unwrap(),
            "{\"index\":{\"_index\":\"default\"}}\n{\"a\":3}\n"
        );
        let ndjson = load(&path, Format::Ndjson, 2, Some(2)).unwrap();
        assert_eq!(ndjson.bodies, [b"{\"a\":1}\n{\"a\":2}\n".to_vec()]);
        std::fs::remove_file(&path).unwrap();
    }
}
