//! End-to-end tests of `quarry index` over repeated runs: the merge after indexing ends
//! (issue 9, defect 1), and re-indexing a file adds each line once, whatever happened to the
//! file in between (issue 9, defect 2).

use std::io::Write;
use std::path::{Path, PathBuf};
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
        &["merge", "--data", data_arg, "--memory-budget", "6MB"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let blocks = block_count(&data);
    assert!((2..=4).contains(&blocks), "{blocks} blocks after merge");
    assert_eq!(count(&data, "*"), 170_000);
    let output = quarry(&["check", "--data", data_arg]);
    assert!(output.status.success(), "{}", stderr(&output));
}

/// A data directory and helpers for the re-run tests.
struct Dir {
    _tmp: tempfile::TempDir,
    data: PathBuf,
}

impl Dir {
    fn new() -> (Dir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let root = tmp.path().to_path_buf();
        (Dir { _tmp: tmp, data }, root)
    }

    /// `quarry index --data DIR args...`
    fn index(&self, args: &[&Path]) -> Output {
        let mut all = vec!["index", "--data", self.data.to_str().unwrap()];
        all.extend(args.iter().map(|a| a.to_str().unwrap()));
        quarry(&all)
    }

    fn count(&self, query: &str) -> u64 {
        count(&self.data, query)
    }
}

/// `n` events whose message holds `word` and their number.
fn events(word: &str, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"time\": {}, \"message\": \"{word} number {i} {}\"}}\n",
                1_700_000_000 + i,
                "x".repeat(40)
            )
        })
        .collect()
}

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn assert_status(output: &Output, code: i32) {
    assert_eq!(output.status.code(), Some(code), "{}", stderr(output));
}

/// Defect 2: a touched file was a new source (identity was path, size and mtime) and was
/// indexed again in full.
#[test]
fn touched_file_adds_nothing() {
    let (dir, root) = Dir::new();
    let input = root.join("a.json");
    // Over one 4 MiB chunk, so the first and last chunk differ.
    std::fs::write(&input, events("alpha", 60_000)).unwrap();
    assert_status(&dir.index(&[&input]), 0);
    assert_eq!(dir.count("*"), 60_000);
    let file = std::fs::File::options().write(true).open(&input).unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(3600);
    file.set_modified(later).unwrap();
    drop(file);
    let output = dir.index(&[&input]);
    assert_status(&output, 0);
    assert!(
        stderr(&output).contains("a.json: already indexed"),
        "{}",
        stderr(&output)
    );
    assert_eq!(dir.count("*"), 60_000);
}

/// Defect 2: appending 10 lines indexed the whole file again.
#[test]
fn appended_lines_are_indexed_once() {
    let (dir, root) = Dir::new();
    let input = root.join("a.json");
    std::fs::write(&input, events("alpha", 60_000)).unwrap();
    assert_status(&dir.index(&[&input]), 0);
    let indexed = std::fs::metadata(&input).unwrap().len();
    append(&input, &events("appended", 10));
    let output = dir.index(&[&input]);
    assert_status(&output, 0);
    assert!(
        stderr(&output).contains(&format!("reading from byte {indexed}")),
        "{}",
        stderr(&output)
    );
    assert_eq!(dir.count("*"), 60_010);
    assert_eq!(dir.count("appended"), 10);
    assert_eq!(dir.count("\"appended number 7\""), 1);
    assert_eq!(dir.count("alpha"), 60_000);
    // And once more, unchanged.
    let output = dir.index(&[&input]);
    assert_status(&output, 0);
    assert!(stderr(&output).contains("already indexed"));
    assert_eq!(dir.count("*"), 60_010);
}

/// A last line without a newline is indexed at the end of the file; what is appended after it
/// is read as new lines, with or without a leading newline: nothing lost, nothing twice.
#[test]
fn appending_after_a_last_line_without_newline() {
    let (dir, root) = Dir::new();
    let input = root.join("a.json");
    std::fs::write(
        &input,
        "{\"message\": \"one\"}\n{\"message\": \"two\"}\n{\"message\": \"three\"}",
    )
    .unwrap();
    // (text appended, events after the run)
    let steps = [
        ("", 3),
        // Glued to the last line: a writer that did not know the file lacked a newline.
        ("{\"message\": \"four\"}\n", 4),
        // Again without a newline at the end ...
        ("{\"message\": \"five\"}", 5),
        // ... then a writer that puts the newline before each record.
        ("\n{\"message\": \"six\"}", 6),
        ("", 6),
    ];
    for (step, (text, expected)) in steps.iter().enumerate() {
        append(&input, text);
        let output = dir.index(&[&input]);
        assert_status(&output, 0);
        assert_eq!(
            dir.count("*"),
            *expected,
            "step {step}: {}",
            stderr(&output)
        );
    }
    for word in ["one", "two", "three", "four", "five", "six"] {
        assert_eq!(dir.count(word), 1, "{word}");
    }
}

/// A rewritten or truncated file is reported and left out; `--reindex-changed` reads it again.
#[test]
fn rewritten_or_truncated_file_is_reported_not_duplicated() {
    let (dir, root) = Dir::new();
    let input = root.join("a.json");
    std::fs::write(&input, events("alpha", 100)).unwrap();
    assert_status(&dir.index(&[&input]), 0);
    let indexed = std::fs::metadata(&input).unwrap().len();
    // (case, new content)
    let cases = [
        ("rewritten, same length", events("gamma", 100)),
        ("rewritten, longer", events("gamma", 150)),
        ("truncated", events("alpha", 50)),
    ];
    for (case, content) in &cases {
        std::fs::write(&input, content).unwrap();
        let output = dir.index(&[&input]);
        assert_status(&output, 1);
        let message = format!("{} was indexed up to byte {indexed}", input.display());
        assert!(
            stderr(&output).contains(&message) && stderr(&output).contains("content changed"),
            "{case}: {}",
            stderr(&output)
        );
        assert_eq!(dir.count("*"), 100, "{case}");
        assert_eq!(dir.count("gamma"), 0, "{case}");
    }
    // Another file in the same run is still indexed.
    let other = root.join("b.json");
    std::fs::write(&other, events("beta", 20)).unwrap();
    assert_status(&dir.index(&[&input, &other]), 1);
    assert_eq!(dir.count("beta"), 20);
    // Asked to, it reads the new content as a new file.
    std::fs::write(&input, events("gamma", 30)).unwrap();
    let output = quarry(&[
        "index",
        "--data",
        dir.data.to_str().unwrap(),
        "--reindex-changed",
        input.to_str().unwrap(),
    ]);
    assert_status(&output, 0);
    assert!(stderr(&output).contains("read again from its start"));
    assert_eq!(dir.count("gamma"), 30);
    assert_eq!(dir.count("alpha"), 100);
    assert_status(&dir.index(&[&input]), 0);
    assert_eq!(dir.count("*"), 150);
}

/// Standard input cannot be recognized again: each run says so.
#[test]
fn stdin_says_it_is_not_tracked() {
    let (dir, _root) = Dir::new();
    for run in 1..=2u64 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
            .args(["index", "--data", dir.data.to_str().unwrap(), "-"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(events("piped", 5).as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert_status(&output, 0);
        assert!(
            stderr(&output).contains("standard input is not tracked"),
            "{}",
            stderr(&output)
        );
        assert_eq!(dir.count("piped"), 5 * run);
    }
}

/// A file whose every line failed was recorded as done, and the re-run said "already
/// indexed" with status 0: now it says the file had rejected lines, with status 3 again.
#[test]
fn rejected_lines_are_reported_again_on_rerun() {
    let (dir, root) = Dir::new();
    let input = root.join("app.log");
    std::fs::write(
        &input,
        "2024-01-01 12:00:00 INFO started\n2024-01-01 12:00:01 WARN slow\n2024-01-01 12:00:02 ERROR down\n",
    )
    .unwrap();
    let output = dir.index(&[&input]);
    assert_status(&output, 3);
    assert!(stderr(&output).contains("app.log:3: invalid JSON"));
    let output = dir.index(&[&input]);
    assert_status(&output, 3);
    assert!(
        stderr(&output).contains("app.log: indexed by an earlier run with 3 rejected lines"),
        "{}",
        stderr(&output)
    );
    // Lines that fail after an append are numbered as in the file.
    append(&input, "{\"message\": \"fine\"}\nnot json\n");
    let output = dir.index(&[&input]);
    assert_status(&output, 3);
    assert!(
        stderr(&output).contains("app.log:5: invalid JSON"),
        "{}",
        stderr(&output)
    );
    assert_eq!(dir.count("*"), 1);
}

/// A file named twice in one run (here once through a symlink) was read twice.
#[test]
fn file_named_twice_is_read_once() {
    let (dir, root) = Dir::new();
    let input = root.join("a.json");
    std::fs::write(&input, events("alpha", 100)).unwrap();
    let link = root.join("link.json");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    let output = dir.index(&[&input, &link]);
    assert_status(&output, 0);
    assert!(stderr(&output).contains("named more than once"));
    assert_eq!(dir.count("*"), 100);
}

/// A compressed file's offsets are in its decompressed stream: a zstd file that grew by a
/// frame resumes after what was indexed.
#[test]
fn grown_compressed_file_resumes() {
    let (dir, root) = Dir::new();
    let input = root.join("a.json.zst");
    let frame = |text: String| zstd::encode_all(text.as_bytes(), 3).unwrap();
    std::fs::write(&input, frame(events("alpha", 100))).unwrap();
    assert_status(&dir.index(&[&input]), 0);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&input)
        .unwrap();
    file.write_all(&frame(events("beta", 7))).unwrap();
    drop(file);
    let output = dir.index(&[&input]);
    assert_status(&output, 0);
    assert!(
        stderr(&output).contains("reading from byte"),
        "{}",
        stderr(&output)
    );
    assert_eq!((dir.count("alpha"), dir.count("beta")), (100, 7));
    // Recompressed with other content: changed.
    std::fs::write(&input, frame(events("gamma", 120))).unwrap();
    assert_status(&dir.index(&[&input]), 1);
    assert_eq!(dir.count("*"), 107);
}

/// A data directory written by a version-1 catalog: a file still at the size and mtime it was
/// indexed with is fingerprinted and then resumes like any other; one that changed since
/// cannot be told from a rewrite and is reported.
#[test]
fn version_1_catalog_sources_are_upgraded_or_reported() {
    let (dir, root) = Dir::new();
    let kept = root.join("kept.json");
    let grown = root.join("grown.json");
    std::fs::write(&kept, events("kept", 40)).unwrap();
    std::fs::write(&grown, events("grown", 30)).unwrap();
    assert_status(&dir.index(&[&kept, &grown]), 0);
    // Rewrite the catalog as version 1 wrote it: sources keyed by path, size and mtime.
    let catalog_path = dir.data.join("catalog.json");
    let mut catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&catalog_path).unwrap()).unwrap();
    let mut sources = serde_json::Map::new();
    for path in [&kept, &grown] {
        let canonical = std::fs::canonicalize(path).unwrap();
        let meta = std::fs::metadata(path).unwrap();
        let mtime = meta
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = canonical.to_str().unwrap();
        sources.insert(
            format!("{name}|{}|{mtime}", meta.len()),
            serde_json::json!({
                "key": {"path": name, "size": meta.len(), "mtime_ns": mtime},
                "done": [[0, meta.len()]],
            }),
        );
    }
    catalog["version"] = 1.into();
    catalog["sources"] = sources.into();
    std::fs::write(&catalog_path, serde_json::to_vec(&catalog).unwrap()).unwrap();

    append(&grown, &events("more", 5));
    let output = dir.index(&[&kept, &grown]);
    assert_status(&output, 1);
    let text = stderr(&output);
    assert!(text.contains("kept.json: already indexed"), "{text}");
    assert!(
        text.contains("grown.json was indexed up to byte") && text.contains("older catalog"),
        "{text}"
    );
    assert_eq!(dir.count("*"), 70);
    // Fingerprinted now: the kept file resumes after an append.
    append(&kept, &events("later", 3));
    let output = dir.index(&[&kept]);
    assert_status(&output, 0);
    assert_eq!((dir.count("kept"), dir.count("later")), (40, 3));
}
