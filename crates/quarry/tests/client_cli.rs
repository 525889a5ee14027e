//! The CLI as a client of a real `quarry serve`: `quarry tenants` create/list/show/delete,
//! `quarry ingest` (batches, bad lines reported as FILE:LINE, text, compressed input,
//! retries on 429), `quarry search --server` printing what `quarry search --data` prints,
//! and the messages for a missing server and a refused key.

mod common;

use common::Server;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const ADMIN: &str = "client-admin-token";

/// `quarry ARGS` with `env` and nothing from the caller's QUARRY_* variables; stdin empty
/// (not a terminal).
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    run_with_stdin(args, env, b"")
}

fn run_with_stdin(args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
    for name in [
        "QUARRY_SERVER",
        "QUARRY_TENANT",
        "QUARRY_API_KEY",
        "QUARRY_ADMIN_TOKEN",
        "QUARRY_DATA",
    ] {
        command.env_remove(name);
    }
    let mut child = command
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run quarry");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts success and returns stdout.
fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status,
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

/// A server with tenants (started with an admin token), and its URL.
fn start_with_admin(data: &Path) -> (Server, String) {
    let server = Server::spawn(
        &["--data", data.to_str().unwrap(), "--listen", "127.0.0.1:0"],
        &[("QUARRY_ADMIN_TOKEN", ADMIN)],
        Path::new("."),
    );
    let url = server_url(&server);
    (server, url)
}

/// The environment of an admin's CLI for the server at `url`.
fn admin_env(url: &str) -> [(&str, &str); 2] {
    [("QUARRY_SERVER", url), ("QUARRY_ADMIN_TOKEN", ADMIN)]
}

fn server_url(server: &Server) -> String {
    format!("http://{}", server.addr)
}

/// `{"count": N}` of `quarry search --server URL ... --count --limit 0 QUERY`.
fn remote_count(server: &str, tenant: &str, key: &str, query: &str) -> u64 {
    let output = ok(run(
        &[
            "search", "--server", server, "--tenant", tenant, "--count", "--limit", "0", query,
        ],
        &[("QUARRY_API_KEY", key)],
    ));
    let line: serde_json::Value = serde_json::from_str(output.trim()).unwrap();
    line["count"].as_u64().unwrap()
}

#[test]
fn tenants_are_created_listed_shown_and_deleted_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = start_with_admin(&dir.path().join("d"));
    let admin = admin_env(&url);

    let created = run(
        &[
            "tenants",
            "create",
            "payments",
            "--retention",
            "30d",
            "--ingest-rate",
            "10MB",
            "--stored-bytes",
            "1GB",
            "--events-per-request",
            "100000",
        ],
        &admin,
    );
    assert!(
        stderr(&created).contains("shown this once"),
        "{}",
        stderr(&created)
    );
    let key = ok(created).trim().to_owned();
    assert!(key.starts_with("qk_"), "{key:?}");

    // The key printed works for ingest.
    let events = dir.path().join("events.json");
    std::fs::write(
        &events,
        "{\"message\": \"paid\"}\n{\"message\": \"paid twice\"}\n",
    )
    .unwrap();
    ok(run(
        &["ingest", "--tenant", "payments", events.to_str().unwrap()],
        &[("QUARRY_SERVER", url.as_str()), ("QUARRY_API_KEY", &key)],
    ));
    assert_eq!(remote_count(&url, "payments", &key, "paid"), 2);

    let list = ok(run(&["tenants", "list"], &admin));
    let row = list
        .lines()
        .find(|line| line.starts_with("payments "))
        .unwrap_or_else(|| panic!("no payments row in\n{list}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..2], ["payments", "2"], "{row}");
    assert!(row.contains("30d"), "{row}");
    assert!(
        row.contains("ingest 10.0 MB/s, stored 1.0 GB, 100000 events/request"),
        "{row}"
    );
    assert!(
        list.lines().any(|line| line.starts_with("default ")),
        "{list}"
    );

    let shown = ok(run(&["tenants", "show", "payments"], &admin));
    assert!(shown.contains("retention: 30d"), "{shown}");
    assert!(shown.contains("events:    2"), "{shown}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(run(&["tenants", "show", "--json", "payments"], &admin))).unwrap();
    assert_eq!(json["quotas"]["events_per_request"], 100000);

    // A second create of the name, a wrong admin token, no token: the server's reasons.
    let again = run(&["tenants", "create", "payments"], &admin);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("409"), "{}", stderr(&again));
    let wrong = run(
        &["tenants", "list", "--admin-token", "wrong"],
        &[("QUARRY_SERVER", url.as_str())],
    );
    assert!(!wrong.status.success());
    assert!(
        stderr(&wrong).contains("the server refused the key"),
        "{}",
        stderr(&wrong)
    );
    let none = run(&["tenants", "list"], &[("QUARRY_SERVER", url.as_str())]);
    assert!(
        stderr(&none).contains("pass --admin-token or QUARRY_ADMIN_TOKEN"),
        "{}",
        stderr(&none)
    );

    // Without --yes and without a terminal to confirm on, nothing is deleted.
    let refused = run(&["tenants", "delete", "payments"], &admin);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("without --yes"),
        "{}",
        stderr(&refused)
    );
    assert!(ok(run(&["tenants", "list"], &admin)).contains("payments"));

    ok(run(&["tenants", "delete", "--yes", "payments"], &admin));
    assert!(!ok(run(&["tenants", "list"], &admin)).contains("payments"));
    // Its key reaches nothing now.
    let gone = run(
        &["search", "--server", &url, "--tenant", "payments", "paid"],
        &[("QUARRY_API_KEY", &key)],
    );
    assert!(!gone.status.success());
    assert!(
        stderr(&gone).contains("the server refused the key"),
        "{}",
        stderr(&gone)
    );
}

/// `n` NDJSON events, each `{"message": "event I wordI%3", "n": I}`.
fn event_line(i: usize) -> String {
    format!(
        "{}\n",
        serde_json::json!({"message": format!("event {i} word{}", i % 3), "n": i})
    )
}

#[test]
fn ingest_reports_each_bad_line_as_file_and_line_and_sends_the_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = start_with_admin(&dir.path().join("d"));
    let created = run(&["tenants", "create", "logs"], &admin_env(&url));
    let key = ok(created).trim().to_owned();

    // 3000 good events, a malformed line in the first batch and one in the fifth, and a blank
    // line between (the server numbers it; it is no event).
    let mut text = String::new();
    let mut bad_lines = Vec::new();
    for i in 0..3000 {
        text.push_str(&event_line(i));
        if i == 99 {
            text.push_str("{\"message\": \"cut off\n");
            bad_lines.push(text.lines().count());
        }
        if i == 1500 {
            text.push('\n');
        }
        if i == 2222 {
            text.push_str("not json at all\n");
            bad_lines.push(text.lines().count());
        }
    }
    let file = dir.path().join("events.json");
    std::fs::write(&file, &text).unwrap();
    let name = file.to_str().unwrap();

    let output = run(
        &["ingest", "--tenant", "logs", "--batch-size", "500", name],
        &[("QUARRY_SERVER", url.as_str()), ("QUARRY_API_KEY", &key)],
    );
    let report = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{report}");
    for line in &bad_lines {
        assert!(
            report.contains(&format!("{name}:{line}: ")),
            "{line}: {report}"
        );
    }
    assert_eq!(
        report.matches(&format!("{name}:")).count(),
        2,
        "exactly the two bad lines: {report}"
    );
    assert!(
        report.contains("ingested 3000 events") && report.contains("2 lines failed"),
        "{report}"
    );

    // What the server holds is exactly the good events: counted from the file.
    let good: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    assert_eq!(good.len(), 3000);
    let word1 = good
        .iter()
        .filter(|event| event["message"].as_str().unwrap().ends_with(" word1"))
        .count() as u64;
    assert_eq!(remote_count(&url, "logs", &key, "word1"), word1);
    assert_eq!(remote_count(&url, "logs", &key, "event"), 3000);
    assert_eq!(remote_count(&url, "logs", &key, "cut"), 0);
}

#[test]
fn text_ingest_sends_plain_log_lines_from_compressed_files_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let url = server_url(&server);
    let log = "2026-11-23T12:50:24.123Z payment service started\n\
               Nov 23 12:50:25 host-1 sshd[42]: accepted publickey for alice\n\
               a line without a timestamp\n";
    let file = dir.path().join("app.log.zst");
    std::fs::write(&file, zstd::encode_all(log.as_bytes(), 3).unwrap()).unwrap();
    let server_env = [("QUARRY_SERVER", url.as_str())];
    let sent = run(&["ingest", "--text", file.to_str().unwrap()], &server_env);
    assert!(
        stderr(&sent).contains("ingested 3 events"),
        "{}",
        stderr(&sent)
    );
    ok(sent);
    ok(run_with_stdin(
        &["ingest", "--text", "-"],
        &server_env,
        b"2026-11-23 12:50:26,500 INFO from stdin\n",
    ));

    let hits = ok(run(
        &[
            "search",
            "--server",
            &url,
            "--sort",
            "time-asc",
            "--limit",
            "10",
            "sshd OR stdin OR payment",
        ],
        &[],
    ));
    let hits: Vec<serde_json::Value> = hits
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let found: Vec<(&str, &str)> = hits
        .iter()
        .map(|hit| {
            (
                hit["_time"].as_str().unwrap(),
                hit["event"]["message"].as_str().unwrap(),
            )
        })
        .collect();
    // Syslog lines carry no year: the server takes the clock's, so only the others are fixed.
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.contains(&(
        "2026-11-23T12:50:24.123Z",
        "2026-11-23T12:50:24.123Z payment service started"
    )));
    assert!(found.contains(&(
        "2026-11-23T12:50:26.500Z",
        "2026-11-23 12:50:26,500 INFO from stdin"
    )));
    assert_eq!(remote_count(&url, "default", "", "timestamp"), 1);
}

#[test]
fn search_through_the_server_prints_what_the_local_search_prints() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let input = dir.path().join("g.json.gz");
    let plain = dir.path().join("g.json");
    ok(run(
        &[
            "gen-logs",
            "--events",
            "3000",
            "--seed",
            "7",
            "--start",
            "2026-11-01T00:00:00Z",
            "--end",
            "2026-11-02T00:00:00Z",
            "-o",
            plain.to_str().unwrap(),
        ],
        &[],
    ));
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&input).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(&std::fs::read(&plain).unwrap()).unwrap();
    gz.finish().unwrap();

    let server = Server::start(&data);
    let url = server_url(&server);
    ok(run(
        &[
            "ingest",
            "--server",
            &url,
            "--batch-size",
            "700",
            input.to_str().unwrap(),
        ],
        &[],
    ));
    // Stopped and started again, so that both searches read the same block files (a hit's
    // cursor names its block; events in memory are in other blocks than after the flush).
    assert!(server.terminate());
    let server = Server::start(&data);
    let url = server_url(&server);

    let first_page = ok(run(
        &[
            "search",
            "--server",
            &url,
            "--sort",
            "time-desc",
            "--limit",
            "3",
            "level:ERROR",
        ],
        &[],
    ));
    let last = first_page.lines().last().unwrap();
    let cursor: serde_json::Value = serde_json::from_str(last).unwrap();
    let cursor = cursor["_cursor"].as_str().unwrap().to_owned();
    let queries: Vec<Vec<&str>> = vec![
        vec!["--limit", "5", "failed OR error"],
        vec!["--sort", "time-desc", "--limit", "3", "level:ERROR"],
        vec![
            "--sort",
            "time-desc",
            "--limit",
            "3",
            "--after",
            &cursor,
            "level:ERROR",
        ],
        vec![
            "--sort",
            "time-asc",
            "--limit",
            "4",
            "--count",
            "service:nginx",
        ],
        vec![
            "--limit",
            "0",
            "--count",
            "--start",
            "2026-11-01T06:00:00Z",
            "--end",
            "2026-11-01T18:00:00Z",
            "status:>=400",
        ],
        vec![
            "--limit",
            "0",
            "--histogram",
            "1h",
            "--agg",
            "percentiles(latency_ms)",
            "service:nginx",
        ],
        vec![
            "--limit",
            "0",
            "--agg",
            "terms(level, 5)",
            "--agg",
            "stats(latency_ms)",
            "*",
        ],
    ];
    let mut remote = Vec::new();
    for query in &queries {
        let mut args = vec!["search", "--server", url.as_str()];
        args.extend_from_slice(query);
        remote.push(ok(run(&args, &[])));
    }
    let bad_remote = run(&["search", "--server", &url, "level:(ERROR OR"], &[]);
    assert!(server.terminate());

    for (query, remote) in queries.iter().zip(&remote) {
        let mut args = vec!["search", "--data", data.to_str().unwrap()];
        args.extend_from_slice(query);
        let local = ok(run(&args, &[]));
        assert!(!local.is_empty(), "{query:?}");
        assert_eq!(remote, &local, "{query:?}");
    }
    // A bad query: the same message and caret, status 2.
    let bad_local = run(
        &[
            "search",
            "--data",
            data.to_str().unwrap(),
            "level:(ERROR OR",
        ],
        &[],
    );
    assert_eq!(bad_remote.status.code(), Some(2));
    assert_eq!(bad_local.status.code(), Some(2));
    assert_eq!(stderr(&bad_remote), stderr(&bad_local));
    assert!(stderr(&bad_remote).contains('^'), "{}", stderr(&bad_remote));
}

#[test]
fn ingest_waits_out_429_answers_as_retry_after_says() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = start_with_admin(&dir.path().join("d"));
    let admin = admin_env(&url);
    // 20 KB/s with a 20 KB burst: 600 events of ~60 bytes in batches of 100 (~6 KB) run out
    // of tokens after three batches, and the server answers 429 with Retry-After.
    let key = ok(run(
        &[
            "tenants",
            "create",
            "slow",
            "--ingest-rate",
            "20000",
            "--ingest-burst",
            "20000",
        ],
        &admin,
    ))
    .trim()
    .to_owned();
    let text: String = (0..600).map(event_line).collect();
    let output = run_with_stdin(
        &["ingest", "--tenant", "slow", "--batch-size", "100", "-"],
        &[("QUARRY_SERVER", url.as_str()), ("QUARRY_API_KEY", &key)],
        text.as_bytes(),
    );
    let report = stderr(&output);
    assert!(output.status.success(), "{report}");
    assert!(report.contains("the server answered 429"), "{report}");
    assert!(report.contains("retrying in"), "{report}");
    assert!(report.contains("ingested 600 events"), "{report}");
    assert_eq!(remote_count(&url, "slow", &key, "event"), 600);
}

#[test]
fn no_server_and_a_refused_key_are_said_plainly() {
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let expected = format!("no Quarry server at {url} (start one with `quarry serve`)");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("e.json");
    std::fs::write(&file, event_line(1)).unwrap();
    for args in [
        vec!["ingest", "--server", &url, file.to_str().unwrap()],
        vec!["search", "--server", &url, "anything"],
        vec!["tenants", "list", "--server", &url],
    ] {
        let output = run(&args, &[]);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&output).contains(&expected),
            "{args:?}: {}",
            stderr(&output)
        );
    }

    let (_server, url) = start_with_admin(&dir.path().join("d"));
    let output = run(
        &["ingest", "--server", &url, file.to_str().unwrap()],
        &[("QUARRY_API_KEY", "qk_wrong")],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("the server refused the key (invalid API key for this tenant)"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("lines 1-1 were not ingested"),
        "{}",
        stderr(&output)
    );
}
