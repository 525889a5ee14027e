//! The Elasticsearch bulk API as shippers use it: the official Python client's
//! `helpers.bulk`, and Filebeat- and Vector-shaped raw requests (`tests/es_client.py`), against
//! the real server.
//!
//! Needs a Python with the `elasticsearch` package: `QUARRY_PYTHON` (default `python3`).
//! Without one the test says so and passes, unless `QUARRY_REQUIRE_ES_CLIENT` is set, as
//! `.ci/run` sets it after installing the client: in CI it always runs.

mod common;

use common::Server;
use std::process::Command;

/// A Python with the official client, or None (the test is skipped, unless CI requires it).
fn python_with_client() -> Option<String> {
    let python = std::env::var("QUARRY_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let has_client = Command::new(&python)
        .args(["-c", "import elasticsearch"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_client {
        assert!(
            std::env::var_os("QUARRY_REQUIRE_ES_CLIENT").is_none(),
            "QUARRY_REQUIRE_ES_CLIENT is set but {python} cannot import elasticsearch"
        );
        eprintln!(
            "skipped: {python} has no `elasticsearch` package (pip install 'elasticsearch>=8,<9')"
        );
        return None;
    }
    Some(python)
}

#[test]
fn the_elasticsearch_python_client_bulk_indexes_into_quarry() {
    let Some(python) = python_with_client() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/es_client.py");
    let output = Command::new(&python)
        .arg(script)
        .arg(format!("http://{}", server.addr))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Indices, counts, `helpers.scan`, scrolls, points in time and tenant keys as basic_auth and
/// api_key, through the official client (`tests/es_client_search.py`).
#[test]
fn the_elasticsearch_python_client_scans_counts_and_manages_indices() {
    let Some(python) = python_with_client() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(&dir.path().join("d"), &["--admin-token", "admin-secret"]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/es_client_search.py");
    let output = Command::new(&python)
        .arg(script)
        .arg(format!("http://{}", server.addr))
        .arg("admin-secret")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
