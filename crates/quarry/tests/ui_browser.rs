//! The web UI (issue 15) served by `quarry serve`: `GET /` is the page for a browser and
//! Elasticsearch's info JSON for everyone else, assets are cached by their hashed names; and
//! the page itself in a real browser (`ui/tests/browser.mjs`: playwright-core driving Debian's
//! chromium) against a real server with generated logs: a query, the histogram and the table,
//! zoom by drag, a click on a field value, a row expanded, paging by scrolling, the live tail,
//! a bad query's error at its position. Each shown figure is checked against the API.
//!
//! The browser test needs `chromium` (or `QUARRY_CHROMIUM`) and `ui/node_modules` (`npm ci`
//! in `ui/`). Without them it says so and passes, unless `QUARRY_REQUIRE_BROWSER` is set, as
//! `.ci/run` sets it after installing both: in CI it always runs. Screenshots of each state
//! and the measured timings (`metrics.json`) go to `target/ui-screenshots/`.

mod common;

use common::{quarry, Server};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn root_serves_the_page_to_browsers_and_elasticsearch_info_to_clients() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let browser_accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

    let page = server.send("GET", "/", &[("Accept", browser_accept)], b"");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    assert!(page.header("vary").unwrap().contains("Accept"));
    let html = String::from_utf8(page.body.clone()).unwrap();
    assert!(html.contains("<title>Quarry</title>"), "{html}");
    // The page's script, by its content-hashed name.
    let script = html
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    assert!(
        script.starts_with("/ui/assets/index-") && script.ends_with(".js"),
        "{script}"
    );

    let plain = server.send("GET", script, &[], b"");
    assert_eq!(plain.status, 200);
    assert_eq!(
        plain.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(
        plain.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(plain.header("content-encoding"), None);
    let gzipped = server.send(
        "GET",
        script,
        &[("Accept-Encoding", "gzip, deflate, br")],
        b"",
    );
    assert_eq!(gzipped.header("content-encoding"), Some("gzip"));
    assert!(gzipped.body.len() < plain.body.len() / 2);
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gzipped.body[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, plain.body);
    assert_eq!(
        server.send("GET", "/ui/assets/nope.js", &[], b"").status,
        404
    );
    assert_eq!(server.send("GET", "/ui/", &[], b"").body, page.body);

    // Everything that does not ask for HTML gets Elasticsearch's answer, as before.
    for accept in [None, Some("application/json"), Some("*/*")] {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let info = server.send("GET", "/", &headers, b"");
        assert_eq!(info.status, 200);
        assert_eq!(info.header("x-elastic-product"), Some("Elasticsearch"));
        assert_eq!(info.json()["version"]["number"], "8.11.0", "{accept:?}");
    }
    let head = server.send("HEAD", "/", &[("Accept", browser_accept)], b"");
    assert_eq!(head.status, 200);
    assert_eq!(head.header("x-elastic-product"), Some("Elasticsearch"));
}

/// What the browser test needs, or why it cannot run.
fn browser_tools() -> Result<(String, PathBuf), String> {
    let chromium = std::env::var("QUARRY_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        return Err(format!(
            "no chromium at {chromium} (apt-get install chromium, or set QUARRY_CHROMIUM)"
        ));
    }
    let ui = repo_root().join("ui");
    if !ui.join("node_modules/playwright-core").is_dir() {
        return Err("ui/node_modules is missing (cd ui && npm ci)".into());
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Err("no node on PATH".into());
    }
    Ok((chromium, ui))
}

#[test]
fn the_web_ui_works_in_a_real_browser() {
    let (chromium, ui) = match browser_tools() {
        Ok(tools) => tools,
        Err(reason) => {
            assert!(
                std::env::var_os("QUARRY_REQUIRE_BROWSER").is_none(),
                "QUARRY_REQUIRE_BROWSER is set but {reason}"
            );
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let input = dir.path().join("logs.json");
    // Enough events that scrolling pages through 100,000 rows.
    let events = std::env::var("QUARRY_UI_TEST_EVENTS").unwrap_or_else(|_| "120000".into());
    let (from, to) = ("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z");
    let output = quarry(&[
        "gen-logs",
        "--events",
        &events,
        "--start",
        from,
        "--end",
        to,
        "-o",
        input.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let server = Server::start(&data);
    let shots = repo_root().join("target/ui-screenshots");
    let url = format!("http://{}", server.addr);
    run_browser(
        &ui,
        &chromium,
        &shots,
        &["--url", &url, "--from", from, "--to", to],
    );
    drop(server);

    // A server with keys: the page asks for the tenant's key on the 401 and searches with it.
    let mut keyed = Server::spawn(
        &[
            "--data",
            dir.path().join("k").to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        &[("QUARRY_ADMIN_TOKEN", "ui-admin")],
        Path::new("."),
    );
    keyed.token = Some("ui-admin".into());
    let (status, created) =
        keyed.request("POST", "/api/v1/tenants", Some(r#"{"name": "payments"}"#));
    assert_eq!(status, 201, "{created}");
    let key = created["api_key"].as_str().unwrap().to_owned();
    keyed.token = Some(key.clone());
    let events: String = (0..50)
        .map(|i| format!("{{\"message\": \"payment {i} failed\", \"level\": \"error\"}}\n"))
        .collect();
    let (status, ingested) = keyed.request("POST", "/api/v1/payments/ingest", Some(&events));
    assert_eq!(
        (status, ingested["ingested"].as_u64()),
        (200, Some(50)),
        "{ingested}"
    );
    let url = format!("http://{}", keyed.addr);
    run_browser(
        &ui,
        &chromium,
        &shots,
        &[
            "--url",
            &url,
            "--auth-tenant",
            "payments",
            "--auth-key",
            &key,
        ],
    );
}

/// Runs `ui/tests/browser.mjs` with `args` (and `--shots`), printing what it printed, and
/// fails the test if it failed.
fn run_browser(ui: &Path, chromium: &str, shots: &Path, args: &[&str]) {
    let output = Command::new("node")
        .arg(ui.join("tests/browser.mjs"))
        .args(args)
        .args(["--shots", shots.to_str().unwrap()])
        .env("QUARRY_CHROMIUM", chromium)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}");
    assert!(
        output.status.success(),
        "ui/tests/browser.mjs {args:?} failed (screenshots in {}):\n{stdout}\n{}",
        shots.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}
