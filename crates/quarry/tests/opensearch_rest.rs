//! OpenSearch's own REST API YAML test suite against `quarry serve`: `compat/opensearch/run.py`
//! runs the suite's cases (from the Maven artifact `org.opensearch:rest-api-spec`) and fails
//! only on a case that fails without being listed in `compat/opensearch/known-failures.txt`,
//! so the list can only shrink. The table it prints is in COMPATIBILITY.md; this run writes
//! it to `target/opensearch-compat.md`.
//!
//! Needs a Python with PyYAML (`QUARRY_PYTHON`, default `python3`) and the unzipped
//! `rest-api-spec/` (`QUARRY_OPENSEARCH_SPEC`, default `target/opensearch-rest-api-spec`).
//! Without either the test says so and passes, unless `QUARRY_REQUIRE_OPENSEARCH_SUITE` is
//! set, as `.ci/run` sets it after fetching both: in CI it always runs.

use std::path::Path;
use std::process::{Command, Output};

const RUNNER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../compat/opensearch/run.py"
);
const DEFAULT_SPEC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../target/opensearch-rest-api-spec"
);
const MARKDOWN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../target/opensearch-compat.md"
);

#[test]
fn opensearch_rest_yaml_suite_has_no_new_failures() {
    let python = std::env::var("QUARRY_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let spec = std::env::var("QUARRY_OPENSEARCH_SPEC").unwrap_or_else(|_| DEFAULT_SPEC.to_owned());
    let has_yaml = Command::new(&python)
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    let has_spec = Path::new(&spec).join("api").is_dir() && Path::new(&spec).join("test").is_dir();
    if !has_yaml || !has_spec {
        let missing = if has_yaml {
            format!("no OpenSearch rest-api-spec (api/ and test/) at {spec}")
        } else {
            format!("{python} cannot import yaml (pip install pyyaml)")
        };
        assert!(
            std::env::var_os("QUARRY_REQUIRE_OPENSEARCH_SUITE").is_none(),
            "QUARRY_REQUIRE_OPENSEARCH_SUITE is set but {missing}"
        );
        eprintln!("skipped: {missing} (see .ci/run for how to fetch it)");
        return;
    }
    let run = |extra: &[&str]| -> Output {
        Command::new(&python)
            .arg(RUNNER)
            .args(["--quarry", env!("CARGO_BIN_EXE_quarry"), "--spec", &spec])
            .args(extra)
            .output()
            .expect("run compat/opensearch/run.py")
    };
    // The runner first proves it fails what must fail, so that its passes mean something.
    let selftest = run(&["--selftest"]);
    let selftest_output = text(&selftest);
    eprintln!("{selftest_output}");
    assert!(
        selftest.status.success(),
        "the runner's self-test failed:\n{selftest_output}"
    );
    let suite = run(&["--markdown", MARKDOWN]);
    let suite_output = text(&suite);
    // Shown with --nocapture, and with the failure message otherwise.
    eprintln!("{suite_output}");
    assert!(
        suite.status.success(),
        "OpenSearch REST cases fail that known-failures.txt does not list:\n{suite_output}"
    );
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
