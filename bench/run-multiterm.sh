#!/usr/bin/env bash
# Multi-term queries over the Wikipedia sample (issue 12): prefix, wildcard (leading, inner,
# substring), fuzzy (1 and 2 edits), regex, phrase slop, string term ranges, and some combined
# with plain terms, asked of Quarry, tantivy and Lucene as COUNTs. Prints every query's count in
# each engine and the queries where they differ, then latency per kind (round trip and engine
# time: mean, p50, p99) with the quarry/tantivy and quarry/lucene ratios, and writes
# bench/results/multiterm.json. See bench/multiterm/README.md.
#
#   bench/run-multiterm.sh
#   CHECK_ONLY=1 bench/run-multiterm.sh        # counts only: one untimed pass per engine
#
# Environment:
#   WORK_DIR     indexes (those of run-search.sh: tantivy-index, quarry-data, lucene-index),
#                answers and records (default: /tmp/quarry-bench); the indexes are built with
#                run-search.sh when missing
#   QUERY_SET    the query file (default: bench/multiterm/wiki-queries.tsv)
#   ENGINES      engines to run (default: "tantivy quarry lucene"); the others' answers and
#                records already in WORK_DIR are used for the comparison and the tables
#   WARMUP       untimed passes over the query set (default: 2)
#   REPEAT       timed passes (default: 5)
#   CHECK_ONLY   1: one pass, no timing (WARMUP=0 REPEAT=1), for the count comparison
#   RESULTS      metric list to write (default: bench/results/multiterm.json)
#   QUARRY_BIN, LUCENE_JAVA_HOME, LUCENE_JVM_OPTS, WIKI_FILE  as for run-search.sh
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
WORK_DIR=${WORK_DIR:-/tmp/quarry-bench}
QUERY_SET=${QUERY_SET:-$BENCH_DIR/multiterm/wiki-queries.tsv}
ENGINES=${ENGINES:-tantivy quarry lucene}
CHECK_ONLY=${CHECK_ONLY:-0}
if [[ $CHECK_ONLY == 1 ]]; then
    WARMUP=0
    REPEAT=1
else
    WARMUP=${WARMUP:-2}
    REPEAT=${REPEAT:-5}
fi
RESULTS=${RESULTS:-$BENCH_DIR/results/multiterm.json}

QUARRY=${QUARRY_BIN:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry}
BENCH_BIN=${CARGO_TARGET_DIR:-$BENCH_DIR/target}/release
TANTIVY=$BENCH_BIN/tantivy-bench
DRIVER=$BENCH_BIN/logs-driver
LUCENE_JAR=$BENCH_DIR/lucene/target/lucene-bench.jar
LUCENE_JVM_OPTS=${LUCENE_JVM_OPTS:-"-Xms4g -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"}

SCRIPT_NAME=run-multiterm
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

mkdir -p "$WORK_DIR" "$(dirname "$RESULTS")"
if [[ ! -f $WORK_DIR/tantivy-index/meta.json || ! -d $WORK_DIR/quarry-data ]] \
    || ! compgen -G "$WORK_DIR/lucene-index/segments_*" >/dev/null; then
    log "no indexes in $WORK_DIR: building them with run-search.sh (no search workload)"
    WORK_DIR=$WORK_DIR WORKLOADS=" " THREADS="" RESULTS=$WORK_DIR/search-index.json \
        "$BENCH_DIR/run-search.sh"
fi

log "building the bench workspace"
cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml"
build_lucene "$BENCH_DIR/lucene/pom.xml" lucene-bench
read -r -a lucene_java <<<"$LUCENE_JVM_OPTS"
lucene_java=("$JAVA" "${lucene_java[@]}" -jar "$LUCENE_JAR")

for engine in $ENGINES; do
    case $engine in
    tantivy) command=("$TANTIVY" serve --index "$WORK_DIR/tantivy-index" --multiterm --engine-time) ;;
    # Quarry's bench-serve reads the query language as it is. Without its cache of pattern
    # expansions, as the peers run without their query caches.
    quarry)
        command=("$QUARRY" bench-serve --disable expansion-cache --data "$WORK_DIR/quarry-data")
        if "$QUARRY" bench-serve --help 2>/dev/null | grep -q -- '--engine-time'; then
            command+=(--engine-time)
        fi
        ;;
    lucene)
        ((lucene_ok)) || { warn "no lucene-bench: skipping lucene"; continue; }
        command=("${lucene_java[@]}" serve --index "$WORK_DIR/lucene-index" --multiterm --engine-time)
        ;;
    *) warn "unknown engine $engine"; exit 1 ;;
    esac
    log "multi-term queries: $engine (warmup $WARMUP, repeat $REPEAT)"
    out=$WORK_DIR/multiterm-$engine
    if "$DRIVER" run --kind-by-name --engine "$engine" --queries "$QUERY_SET" \
        --warmup "$WARMUP" --repeat "$REPEAT" --answers "$out.answers" --json "$out.json.tmp" \
        -- "${command[@]}"; then
        mv "$out.json.tmp" "$out.json"
    else
        rm -f "$out.json.tmp"
        warn "$engine failed: its figures will be missing"
    fi
done

answers=()
records=()
for engine in quarry tantivy lucene; do
    [[ -f $WORK_DIR/multiterm-$engine.answers ]] && answers+=("$engine=$WORK_DIR/multiterm-$engine.answers")
    [[ -f $WORK_DIR/multiterm-$engine.json ]] && records+=("$WORK_DIR/multiterm-$engine.json")
done
log "counts (every query; * marks a query where the engines differ or one refused it)"
"$DRIVER" counts "${answers[@]}" | tee "$WORK_DIR/multiterm-counts.txt" || true
if [[ $CHECK_ONLY != 1 ]]; then
    log "latency per kind (µs; ratio below 1 means quarry is faster)"
    "$DRIVER" kinds --subject quarry --baseline tantivy,lucene --out "$RESULTS" "${records[@]}"
    echo
    echo "wrote $RESULTS"
fi
