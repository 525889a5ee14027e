//! End-to-end tests of `quarry index` over repeated runs: the merge after indexing ends
//! (issue 9, defect 1), and re-indexing a file adds each line once, whatever happened to the
//! file in between (issue 9, defect 2).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn quarry(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .output()
        .expect("run quarry")
}

/// Runs quarry, killing it and failing the test when it takes longer than `limit`.
fn quarry_within(limit: Duration, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run quarry");
    let started = Instant::now();
    while child.try_wait().expect("wait for quarry").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("wait for quarry");
            panic!(
                "quarry {args:?} still running after {limit:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("wait for quarry")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn count(data: &Path, query: &str) -> u64 {
    let output = quarry(&[
        "search",
        "--data",
        data.to_str().unwrap(),
        "--count",
        "--limit",
        "0",
        query,
    ]);
    assert!(output.status.success(), "{query}: {}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().last().expect("a count line");
    let json: serde_json::Value = serde_json::from_str(line).unwrap();
    json["count"].as_u64().unwrap()
}

fn block_count(data: &Path) -> usize {
    std::fs::read_dir(data.join("blocks")).unwrap().count()
}

/// Defect 1: with one thread and a small budget every block holds one 4 MiB input chunk, and
/// the old merge cut its output at the budget again, so merging ten blocks wrote ten or more
/// and `quarry index` never ended. 170,000 generated events (47 MB) make 12 such blocks.
#[test]
fn index_with_a_small_budget_finishes_merging() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("g.json");
    let data = tmp.path().join("d");
    let (input_arg, data_arg) = (input.to_str().unwrap(), data.to_str().unwrap());
    let output = quarry(&["gen-logs", "--events", "170000", "-o", input_arg]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = quarry_within(
        Duration::from_secs(180),
        &[
            "index",
            "--threads",
            "1",
            "--memory-budget",
            "1MB",
            "--data",
            data_arg,
            input_arg,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("indexed 170000 events"),
        "{}",
        stderr(&output)
    );
    let blocks = block_count(&data);
    assert!(blocks <= 10, "{blocks} blocks after the merge");
    assert_eq!(count(&data, "*"), 170_000);

    // `quarry merge` cuts its output at --target-block-size (--memory-budget, its old name,
    // still works): more than one block here, every event kept, the directory valid.
    let output = quarry_within(
        Duration::from_secs(180),
        &["merge", "--data", data_arg, "--memory-budget", "16MB"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let blocks = block_count(&data);
    assert!((2..=4).contains(&blocks), "{blocks} blocks after merge");
    assert_eq!(count(&data, "*"), 170_000);
    let output = quarry(&["check", "--data", data_arg]);
    assert!(output.status.success(), "{}", stderr(&output));
}
