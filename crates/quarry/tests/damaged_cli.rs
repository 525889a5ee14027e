//! Damaged data directories (issue 9, defect 5) and the search answers' edges that used to be
//! silent: a damaged block costs that block, named, never the whole answer nor a different
//! answer for the rest; `check` lists every damaged block and `check --repair` sets them
//! aside. Also: unknown field names are reported, histograms are bounded by the matches.

use quarry_format::BlockReader;
use quarry_index::Analyzer;
use quarry_query::Searcher;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn quarry(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .output()
        .expect("run quarry")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn search(data: &Path, extra: &[&str], query: &str) -> Output {
    let mut args = vec!["search", "--data", data.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(query);
    quarry(&args)
}

fn count_of(output: &Output) -> u64 {
    let stdout = text(&output.stdout);
    let line = stdout.lines().last().unwrap_or_else(|| {
        panic!("no output; stderr: {}", text(&output.stderr));
    });
    let value: serde_json::Value = serde_json::from_str(line).unwrap();
    value["count"].as_u64().unwrap()
}

/// A data directory of four blocks of generated logs (one index run each).
fn indexed(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let data = dir.join("d");
    for seed in 1..=4 {
        let input = dir.join(format!("g{seed}.json"));
        let gen = quarry(&[
            "gen-logs",
            "--events",
            "5000",
            "--seed",
            &seed.to_string(),
            "-o",
            input.to_str().unwrap(),
        ]);
        assert!(gen.status.success(), "{}", text(&gen.stderr));
        let index = quarry(&[
            "index",
            "--data",
            data.to_str().unwrap(),
            input.to_str().unwrap(),
        ]);
        assert!(index.status.success(), "{}", text(&index.stderr));
    }
    let mut blocks: Vec<PathBuf> = std::fs::read_dir(data.join("blocks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    blocks.sort();
    assert_eq!(blocks.len(), 4);
    (data, blocks)
}

/// Matches of `query` in one block alone.
fn block_count(path: &Path, query: &str) -> u64 {
    let searcher = Searcher::new(vec![BlockReader::open(path).unwrap()], Analyzer::default());
    searcher.count(&searcher.parse(query).unwrap()).unwrap()
}

#[test]
fn damaged_blocks_are_skipped_named_listed_and_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let (data, blocks) = indexed(dir.path());
    let queries = ["error", "\"authentication failure\"", "status:>=500", "*"];
    let totals: Vec<u64> = queries
        .iter()
        .map(|q| {
            let output = search(&data, &["--count", "--limit", "0"], q);
            assert!(output.status.success(), "{}", text(&output.stderr));
            count_of(&output)
        })
        .collect();
    let in_block = |block: usize| -> Vec<u64> {
        queries
            .iter()
            .map(|q| block_count(&blocks[block], q))
            .collect()
    };
    let (in_0, in_1, in_2) = (in_block(0), in_block(1), in_block(2));
    assert!(
        in_0.iter().chain(&in_1).all(|&c| c > 0),
        "{in_0:?} {in_1:?}"
    );

    // Block 0: one byte of its postings flipped (it opens; a query fails on reading it).
    let reader = BlockReader::open(&blocks[0]).unwrap();
    let postings = reader.manifest().postings;
    drop(reader);
    let mut bytes = std::fs::read(&blocks[0]).unwrap();
    for offset in (postings.offset..postings.offset + postings.len).step_by(4096) {
        bytes[offset as usize] ^= 0x40;
    }
    std::fs::write(&blocks[0], &bytes).unwrap();
    // Block 1: truncated (fails to open). Block 2: gone.
    let len = std::fs::metadata(&blocks[1]).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&blocks[1])
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    std::fs::remove_file(&blocks[2]).unwrap();

    let name = |block: usize| {
        blocks[block]
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    };
    for (i, query) in queries.iter().enumerate() {
        let output = search(&data, &["--count", "--limit", "3"], query);
        assert_eq!(
            output.status.code(),
            Some(3),
            "{query}: {}",
            text(&output.stderr)
        );
        let stderr = text(&output.stderr);
        // Blocks 1 and 2 cannot be opened; block 0 is left out only by queries that read its
        // postings (`*` reads none of them, so its answer there is whole and right).
        for block in [1, 2] {
            assert!(
                stderr.contains(&name(block)),
                "{query}: {} not named in {stderr}",
                name(block)
            );
        }
        let block_0_left_out = stderr.contains(&name(0));
        assert_eq!(block_0_left_out, *query != "*", "{query}: {stderr}");
        assert!(stderr.contains("partial"), "{stderr}");
        let lost = in_1[i] + in_2[i] + if block_0_left_out { in_0[i] } else { 0 };
        assert_eq!(count_of(&output), totals[i] - lost, "{query}");
    }

    let check = quarry(&["check", "--data", data.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(1));
    let stdout = text(&check.stdout);
    assert_eq!(stdout.matches("FAILED").count(), 3, "{stdout}");
    assert!(
        stdout.contains(&format!("{} blocks checked, 3 failed", blocks.len())),
        "{stdout}"
    );

    let repair = quarry(&["check", "--data", data.to_str().unwrap(), "--repair"]);
    assert!(repair.status.success(), "{}", text(&repair.stderr));
    let stdout = text(&repair.stdout);
    assert!(
        stdout.contains("losing block") && stdout.contains("events lost"),
        "{stdout}"
    );
    assert!(data
        .join("damaged")
        .join(blocks[0].file_name().unwrap())
        .exists());

    let check = quarry(&["check", "--data", data.to_str().unwrap()]);
    assert!(check.status.success(), "{}", text(&check.stdout));
    for (i, query) in queries.iter().enumerate() {
        let output = search(&data, &["--count", "--limit", "0"], query);
        assert!(output.status.success(), "{query}: {}", text(&output.stderr));
        assert_eq!(
            count_of(&output),
            totals[i] - in_0[i] - in_1[i] - in_2[i],
            "{query}"
        );
    }
}

#[test]
fn unknown_fields_are_named_and_histograms_follow_the_matches() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("events.json");
    let data = dir.path().join("d");
    // 500 events a minute apart, and one twelve years earlier that says nothing of errors.
    let mut lines = vec![r#"{"_time": "2014-01-01T00:00:00Z", "message": "startup"}"#.to_owned()];
    for i in 0..500 {
        let level = if i % 5 == 0 { "error" } else { "info" };
        lines.push(format!(
            r#"{{"_time": {}, "level": "{level}", "message": "request {i}"}}"#,
            1_790_000_000 + i * 60
        ));
    }
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let index = quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(index.status.success(), "{}", text(&index.stderr));

    let output = search(&data, &["--limit", "0", "--count"], "levle:error");
    assert!(output.status.success());
    assert_eq!(count_of(&output), 0);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("\"levle\"") && stderr.contains("no block has"),
        "{stderr}"
    );
    let output = search(&data, &["--limit", "0", "--count"], "level:error");
    assert!(text(&output.stderr).is_empty(), "{}", text(&output.stderr));
    assert_eq!(count_of(&output), 100);

    // One-hour buckets: the matches span 500 minutes, the data twelve years.
    let output = search(&data, &["--limit", "0", "--histogram", "1h"], "level:error");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let value: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    let buckets = value["histogram"].as_array().unwrap();
    assert!(
        (8..=10).contains(&buckets.len()),
        "{} buckets",
        buckets.len()
    );
    let total: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 100);
    // `auto` aims at about 100 buckets over the matches' span, not one bucket a year.
    let output = search(
        &data,
        &["--limit", "0", "--histogram", "auto"],
        "level:error",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let value: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    let buckets = value["histogram"].as_array().unwrap();
    assert!(
        (20..=110).contains(&buckets.len()),
        "{} buckets",
        buckets.len()
    );
    let total: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 100);
}

#[test]
fn errors_name_the_cause_once_and_help_tells_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let output = search(&missing, &[], "error");
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
    assert!(stderr.contains("no data directory"), "{stderr}");
    let help = text(&quarry(&["search", "--help"]).stdout);
    assert!(!help.contains("created by `index`"), "{help}");
}

/// README's `--start now-1d` example: generated events end now by default, so it finds them.
#[test]
fn generated_logs_end_now_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.json");
    let data = dir.path().join("d");
    let gen = quarry(&[
        "gen-logs",
        "--events",
        "2000",
        "-o",
        input.to_str().unwrap(),
    ]);
    assert!(gen.status.success(), "{}", text(&gen.stderr));
    let index = quarry(&[
        "index",
        "--data",
        data.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(index.status.success(), "{}", text(&index.stderr));
    let output = search(
        &data,
        &["--count", "--limit", "0", "--start", "now-1d"],
        "*",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(count_of(&output), 2000);
    let output = search(
        &data,
        &["--count", "--limit", "0", "--start", "now-1h"],
        "*",
    );
    let last_hour = count_of(&output);
    assert!(0 < last_hour && last_hour < 2000, "{last_hour}");
}

/// The merge after `index` leaves a damaged block out instead of failing the run.
#[test]
fn merging_leaves_a_damaged_block_out() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let index = |i: u32, extra: &[&str]| {
        let input = dir.path().join(format!("e{i}.json"));
        std::fs::write(
            &input,
            format!(
                "{{\"_time\": {}, \"message\": \"event {i}\"}}\n",
                1_790_000_000 + i
            ),
        )
        .unwrap();
        let mut args = vec!["index", "--data", data.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push(input.to_str().unwrap());
        quarry(&args)
    };
    for i in 0..11 {
        let output = index(i, &["--no-merge"]);
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let first = data.join("blocks").join("00000001.qblk");
    let len = std::fs::metadata(&first).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&first)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let output = index(11, &[]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("00000001.qblk") && stderr.contains("left out of merging"),
        "{stderr}"
    );
    let blocks = std::fs::read_dir(data.join("blocks")).unwrap().count();
    assert!(blocks < 12, "{blocks} blocks: nothing was merged");
    let output = search(&data, &["--count", "--limit", "0"], "event");
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(count_of(&output), 11);
}
