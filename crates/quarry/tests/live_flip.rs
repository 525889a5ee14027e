//! Issue 26, defect 1, end to end: bytes flipped in the block files of a running server, under
//! blocks it has open and has already queried, never change an answer silently. Each answer is
//! the intact one, or partial with a warning naming the block; a block found damaged is counted
//! by `/health/ready` and `/metrics` and left out of every later answer.
//!
//! CI flips a bounded number of bytes (`QUARRY_LIVE_FLIPS`, default 240) spread over every
//! section of the blocks; `bench/live-flip-soak.sh` runs the same test with thousands.

mod common;

use common::Server;
use quarry_format::{BlockReader, TermKind};
use serde_json::Value;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The requests repeated after every flip: tails, counts, a phrase, ranges, a histogram, and
/// the aggregations the campaign saw change (`stats(latency_ms)`, `terms(host)`).
const REQUESTS: &[&str] = &[
    "query=*&count=true&limit=20",
    "query=error&count=true&limit=10&sort=relevance",
    "query=%22Received%20block%22&count=true&limit=5",
    "query=status:%3E%3D500&count=true&limit=5&sort=time_asc",
    "query=latency_ms:%5B100%20TO%20900%5D&count=true&limit=0",
    "query=service:nginx&limit=0&aggs=stats(latency_ms)&aggs=terms(host,10)&aggs=percentiles(bytes)",
    "query=*&limit=0&aggs=terms(service,5)&aggs=cardinality(client_ip)",
    "query=level:error&limit=0&histogram=1h",
];

fn search(server: &Server, request: &str) -> Value {
    let (status, mut body) = server.get(&format!("/api/v1/default/search?{request}"));
    assert_eq!(status, 200, "{request}: {body}");
    body.as_object_mut().unwrap().remove("took_ms");
    body
}

fn answers(server: &Server) -> Vec<Value> {
    REQUESTS.iter().map(|r| search(server, r)).collect()
}

/// A section of a block file: name, offset, length.
type Section = (String, u64, u64);

/// The data directory's block files, with their sections.
fn blocks(data: &Path) -> Vec<(PathBuf, Vec<Section>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data.join("blocks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "qblk"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let reader = BlockReader::open(&path).unwrap();
            let sections = reader
                .manifest()
                .sections()
                .into_iter()
                .filter(|(_, s)| s.len > 0)
                .map(|(name, s)| (name, s.offset, s.len))
                .collect();
            (path, sections)
        })
        .collect()
}

/// Offsets in `path` of postings and positions bytes that `REQUESTS` read: those of
/// `message:error`, `message:received` and `message:block` (the phrase), `service:nginx`.
fn read_by_requests(path: &Path) -> Vec<(String, u64)> {
    let reader = BlockReader::open(path).unwrap();
    let manifest = reader.manifest();
    let mut out = Vec::new();
    for (field, term) in [
        ("message", "error"),
        ("message", "received"),
        ("message", "block"),
        ("service", "nginx"),
    ] {
        let Some(ordinal) = reader.field_ordinal(field) else {
            continue;
        };
        let Ok(Some(info)) = reader.term_info(ordinal, TermKind::Token, term.as_bytes()) else {
            continue;
        };
        for k in [0, 1, 2] {
            if u64::from(info.postings_len) > 0 {
                let at = info.postings_offset + u64::from(info.postings_len) * k / 3;
                out.push(("postings".to_owned(), manifest.postings.offset + at));
            }
            if info.positions_len > 0 && field == "message" {
                let at = info.positions_offset + info.positions_len * k / 3;
                out.push(("positions".to_owned(), manifest.positions.offset + at));
            }
        }
    }
    out
}

fn damaged_blocks(server: &Server) -> (u64, f64) {
    let (_, ready) = server.get("/health/ready");
    let metrics = server.send("GET", "/metrics", &[], b"");
    let text = String::from_utf8_lossy(&metrics.body);
    let gauge = text
        .lines()
        .filter(|l| l.starts_with("quarry_damaged_blocks{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    (ready["damaged_blocks"].as_u64().unwrap(), gauge)
}

#[test]
fn bytes_flipped_under_a_running_server_never_change_an_answer() {
    let flips: usize = std::env::var("QUARRY_LIVE_FLIPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240);
    let dir = tempfile::tempdir().unwrap();
    // `message` mapped `text` keeps its positions in the block (an unmapped field's come
    // from its values, whose flips `quarry-query`'s integrity test covers), so flips land in
    // the positions a phrase reads too.
    let mapping = dir.path().join("mapping.json");
    std::fs::write(&mapping, r#"{"properties": {"message": {"type": "text"}}}"#).unwrap();
    let mapping = mapping.to_str().unwrap();
    // Two blocks, so a damaged one costs only itself.
    let data = common::indexed_logs(
        dir.path(),
        30_000,
        &["--threads", "2", "--no-merge", "--mapping", mapping],
    );
    let blocks = blocks(&data);
    assert!(!blocks.is_empty());

    let mut server = Server::start(&data);
    let expected = answers(&server);
    for (request, answer) in REQUESTS.iter().zip(&expected) {
        assert_eq!(answer["partial"], false, "{request}");
        let matched = answer["count"].as_u64().unwrap_or(1) > 0
            && answer["aggregations"]
                .as_object()
                .is_none_or(|aggs| !aggs.is_empty());
        assert!(matched, "{request} matches nothing: {answer}");
    }

    // Every section of every block gets its share of the flips, spread over its bytes.
    let targets: Vec<(usize, String, u64)> = {
        let sections: Vec<(usize, &String, u64, u64)> = blocks
            .iter()
            .enumerate()
            .flat_map(|(b, (_, s))| s.iter().map(move |(n, o, l)| (b, n, *o, *l)))
            .collect();
        let per = flips.div_ceil(sections.len()).max(1) as u64;
        let mut targets = Vec::new();
        for (block, name, offset, len) in sections {
            let count = per.min(len);
            for i in 0..count {
                // A stride with an odd offset, so flips do not all land on the same byte of
                // a 128-doc group or a page.
                targets.push((
                    block,
                    name.clone(),
                    offset + (i * len + len / 3) / count % len,
                ));
            }
        }
        // Flips spread over a section mostly land in bytes no request reads (and change
        // nothing, rightly); a few more land in the postings and positions the requests do
        // read, so that the checks of those reads are exercised every run.
        for (block, (path, _)) in blocks.iter().enumerate() {
            targets.extend(
                read_by_requests(path)
                    .into_iter()
                    .map(|(n, o)| (block, n, o)),
            );
        }
        targets
    };
    let (mut caught, mut unchanged, mut restarts) = (0usize, 0usize, 0usize);
    let mut caught_in = std::collections::BTreeMap::<String, usize>::new();
    for (n, (block, section, offset)) in targets.iter().enumerate() {
        let path = &blocks[*block].0;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        let mut byte = [0u8];
        file.read_exact_at(&mut byte, *offset).unwrap();
        file.write_at(&[byte[0] ^ (1 << (n % 8))], *offset).unwrap();
        let got = answers(&server);
        file.write_at(&byte, *offset).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut found_damage = false;
        for ((request, answer), intact) in REQUESTS.iter().zip(&got).zip(&expected) {
            if answer["partial"] == true {
                let warnings = answer["warnings"].to_string();
                assert!(
                    warnings.contains(&name),
                    "{section}@{offset}: a partial answer to {request} names another block: {warnings}"
                );
                found_damage = true;
            } else {
                assert!(
                    answer == intact,
                    "a byte flipped at {offset} in {section} of {name} changed the answer to {request} silently:\n{answer}\nintact:\n{intact}"
                );
            }
        }
        if found_damage {
            caught += 1;
            *caught_in.entry(section.clone()).or_default() += 1;
            let (ready, gauge) = damaged_blocks(&server);
            assert_eq!(ready, 1, "/health/ready counts the damaged block");
            assert_eq!(gauge, 1.0, "/metrics counts the damaged block");
            // The block stays out (of answers that did not read it, too) until the server
            // opens it again: restored, it answers as before.
            assert_eq!(search(&server, REQUESTS[0])["partial"], true);
            drop(server);
            server = Server::start(&data);
            restarts += 1;
            assert_eq!(answers(&server), expected, "restored and reopened");
        } else {
            unchanged += 1;
        }
    }
    assert_eq!(damaged_blocks(&server), (0, 0.0));
    eprintln!(
        "{} flips under a running server: {caught} caught (partial, block named), {unchanged} unchanged, 0 silent; {restarts} restarts; caught by section: {caught_in:?}",
        targets.len()
    );
    // Sections smaller than their share give fewer flips: the count is at least most of it.
    assert!(targets.len() >= flips * 3 / 4, "{} flips", targets.len());
    for section in ["postings", "positions"] {
        assert!(caught_in.contains_key(section), "{section}: {caught_in:?}");
    }
}
