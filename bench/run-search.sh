#!/usr/bin/env bash
# Side-by-side search benchmark: Quarry against tantivy and Apache Lucene on the same Wikipedia
# articles and TREC Million Query topics, in one run: single-threaded indexing and latency, then
# throughput with 1, 2 and 4 search threads. Prints a table with each engine's figures and the
# quarry/tantivy and quarry/lucene ratios, writes bench/results/search.json and draws
# bench/results/latency.png and qps.png.
#
#   bench/run-search.sh
#
# Environment:
#   QUERY_LIMIT  first N queries only (default: all 40,000)
#   WORK_DIR     indexes, logs and raw records (default: /tmp/quarry-bench)
#   WORKLOADS    space-separated TRANSFORM_COMMAND names (default: "or_top10"), e.g.
#                "or_top10 or_count and_count phrase_count"; for COUNT workloads the answers
#                of tantivy and of Lucene are compared with Quarry's query by query (metric
#                count_mismatches)
#   THREADS      search thread counts of the throughput runs (default: "1 2 4"; "" for none)
#   SKIP_INDEX   1 to reuse the indexes and index records a previous run left in WORK_DIR
#   WIKI_FILE    input articles (default: shared/data/wiki/wiki-articles.json.zst)
#   QUERY_FILE   queries (default: shared/data/queries/topics.mq.20001-60000.txt)
#   RESULTS      metric list to write (default: bench/results/search.json); the PNG charts go
#                beside it
#   QUARRY_BIN   a quarry binary to use instead of building target/release/quarry
#   LUCENE_JAVA_HOME  JDK 21+ that builds and runs lucene-bench (default: Temurin 25 at
#                /usr/lib/jvm/temurin-25-jdk-amd64 if present, else JAVA_HOME, else `java`)
#   LUCENE_JVM_OPTS   JVM flags for lucene-bench (default: "-Xms4g -Xmx4g
#                --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED")
#
# The Quarry and Lucene sides are optional: when the quarry binary does not build, lacks the
# `index`, `merge` or `bench-serve` subcommands, or fails, or when lucene-bench does not build
# (no JDK 21+, no Maven) or fails, that engine's figures are reported as missing and the others
# still run.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
SHARED_DIR=${SHARED_DIR:-$(dirname "$REPO_DIR")/shared}
WIKI_FILE=${WIKI_FILE:-$SHARED_DIR/data/wiki/wiki-articles.json.zst}
QUERY_FILE=${QUERY_FILE:-$SHARED_DIR/data/queries/topics.mq.20001-60000.txt}
QUERY_LIMIT=${QUERY_LIMIT:-}
WORK_DIR=${WORK_DIR:-/tmp/quarry-bench}
WORKLOADS=${WORKLOADS:-or_top10}
THREADS=${THREADS-1 2 4}
SKIP_INDEX=${SKIP_INDEX:-0}
RESULTS=${RESULTS:-$BENCH_DIR/results/search.json}

QUARRY=${QUARRY_BIN:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry}
BENCH_BIN=${CARGO_TARGET_DIR:-$BENCH_DIR/target}/release
TANTIVY=$BENCH_BIN/tantivy-bench
DRIVER=$BENCH_BIN/search-driver
REPORT=$BENCH_BIN/search-report
PLOTS=$BENCH_BIN/search-plots

LUCENE_JAR=$BENCH_DIR/lucene/target/lucene-bench.jar
LUCENE_JVM_OPTS=${LUCENE_JVM_OPTS:-"-Xms4g -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"}

TANTIVY_INDEX=$WORK_DIR/tantivy-index
QUARRY_DATA=$WORK_DIR/quarry-data
LUCENE_INDEX=$WORK_DIR/lucene-index

SCRIPT_NAME=run-search
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

for file in "$WIKI_FILE" "$QUERY_FILE"; do
    [[ -r $file ]] || { warn "cannot read $file"; exit 1; }
done
mkdir -p "$WORK_DIR"

build_quarry
if ((quarry_ok)); then
    quarry_help=$("$QUARRY" --help 2>/dev/null || true)
    for subcommand in index merge bench-serve; do
        if ! grep -qE "^\s+$subcommand\b" <<<"$quarry_help"; then
            warn "quarry has no '$subcommand' subcommand yet: its figures will be missing"
            quarry_ok=0
        fi
    done
fi

log "building the bench workspace"
cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml"

build_lucene "$BENCH_DIR/lucene/pom.xml" lucene-bench
# Word splitting of the options is wanted: one flag per word.
read -r -a lucene_java <<<"$LUCENE_JVM_OPTS"
lucene_java=("$JAVA" "${lucene_java[@]}" -jar "$LUCENE_JAR")

records=()

if [[ $SKIP_INDEX == 1 ]]; then
    log "reusing the indexes in $WORK_DIR"
else
    # Every engine reads the input from the page cache, not the first one from disk.
    cat "$WIKI_FILE" >/dev/null

    log "indexing with tantivy (1 thread)"
    rm -rf "$TANTIVY_INDEX" "$WORK_DIR/tantivy-index.json"
    "$TANTIVY" index --index "$TANTIVY_INDEX" --threads 1 "$WIKI_FILE" \
        >"$WORK_DIR/tantivy-index.json"
    cat "$WORK_DIR/tantivy-index.json" >&2

    rm -f "$WORK_DIR/quarry-index.json"
    if ((quarry_ok)); then
        log "indexing with quarry (1 thread), then merging"
        rm -rf "$QUARRY_DATA"
        started=$(now)
        if "$QUARRY" index --data "$QUARRY_DATA" --threads 1 "$WIKI_FILE" \
            && "$QUARRY" merge --data "$QUARRY_DATA"; then
            finished=$(now)
            seconds=$(awk -v a="$started" -v b="$finished" 'BEGIN { printf "%.3f", b - a }')
            index_bytes=$(du -sb "$QUARRY_DATA" | cut -f1)
            printf '{"engine":"quarry","seconds":%s,"index_bytes":%s}\n' \
                "$seconds" "$index_bytes" >"$WORK_DIR/quarry-index.json"
            cat "$WORK_DIR/quarry-index.json" >&2
        else
            warn "quarry indexing failed: its figures will be missing"
            quarry_ok=0
        fi
    fi

    rm -f "$WORK_DIR/lucene-index.json"
    if ((lucene_ok)); then
        log "indexing with lucene (1 thread), then merging"
        rm -rf "$LUCENE_INDEX"
        if "${lucene_java[@]}" index --index "$LUCENE_INDEX" "$WIKI_FILE" \
            >"$WORK_DIR/lucene-index.json.tmp"; then
            mv "$WORK_DIR/lucene-index.json.tmp" "$WORK_DIR/lucene-index.json"
            cat "$WORK_DIR/lucene-index.json" >&2
        else
            rm -f "$WORK_DIR/lucene-index.json.tmp"
            warn "lucene indexing failed: its figures will be missing"
            lucene_ok=0
        fi
    fi
fi
records+=("$WORK_DIR/tantivy-index.json" "$WORK_DIR/quarry-index.json" "$WORK_DIR/lucene-index.json")
[[ -d $QUARRY_DATA ]] || quarry_ok=0
compgen -G "$LUCENE_INDEX/segments_*" >/dev/null || lucene_ok=0

limit_args=()
[[ -n $QUERY_LIMIT ]] && limit_args=(--limit "$QUERY_LIMIT")

# run_search ENGINE WORKLOAD TRANSFORM COMMAND ENGINE-COMMAND...: the latency run (one query at
# a time, answers kept), then a throughput run for each entry of THREADS (the engine started
# with --threads N, every query sent at once, answers checked against the latency run's).
run_search() {
    local engine=$1 workload=$2 transform=$3 command=$4
    shift 4
    local out=$WORK_DIR/$engine-$workload.json answers=$WORK_DIR/$engine-$workload.answers
    local driver=("$DRIVER" --engine "$engine" --queries "$QUERY_FILE" "${limit_args[@]}"
        --command "$command" --transform "$transform")
    rm -f "$out" "$answers" "$WORK_DIR/$engine-$workload"-threads*.json
    log "$workload: $engine"
    if "${driver[@]}" --answers "$answers" -- "$@" >"$out.tmp"; then
        mv "$out.tmp" "$out"
        cat "$out" >&2
    else
        rm -f "$out.tmp" "$answers"
        warn "$engine failed on $workload: its figures will be missing"
    fi
    records+=("$out")
    local threads check
    for threads in $THREADS; do
        out=$WORK_DIR/$engine-$workload-threads$threads.json
        check=()
        [[ -f $answers ]] && check=(--answers "$answers")
        log "$workload: $engine, throughput with $threads search thread(s)"
        if "${driver[@]}" "${check[@]}" --threads "$threads" -- "$@" >"$out.tmp"; then
            mv "$out.tmp" "$out"
            cat "$out" >&2
        else
            rm -f "$out.tmp"
            warn "$engine failed on $workload with $threads threads: its qps_threads_$threads will be missing"
        fi
        records+=("$out")
    done
}

for workload in $WORKLOADS; do
    # or_top10 -> transform "or", command TOP_10; and_count -> "and", COUNT;
    # phrase_top100_count -> "phrase", TOP_100_COUNT
    transform=${workload%%_*}
    command=${workload#*_}
    command=${command^^}
    command=${command/#TOP/TOP_}
    run_search tantivy "$workload" "$transform" "$command" "$TANTIVY" serve --index "$TANTIVY_INDEX"
    if ((quarry_ok)); then
        run_search quarry "$workload" "$transform" "$command" "$QUARRY" bench-serve --data "$QUARRY_DATA"
    else
        # No stale figures from an earlier run.
        rm -f "$WORK_DIR/quarry-$workload.json" "$WORK_DIR/quarry-$workload"-threads*.json
    fi
    if ((lucene_ok)); then
        run_search lucene "$workload" "$transform" "$command" "${lucene_java[@]}" serve --index "$LUCENE_INDEX"
    else
        rm -f "$WORK_DIR/lucene-$workload.json" "$WORK_DIR/lucene-$workload"-threads*.json
    fi
done

log "results (${QUERY_LIMIT:-all} queries; ratio below 1 means quarry is faster or smaller, except mb_per_s and qps; count_mismatches: queries where that engine's count differs from quarry's)"
existing=()
for record in "${records[@]}"; do
    [[ -f $record ]] && existing+=("$record")
done
"$REPORT" --subject quarry --baseline tantivy,lucene --out "$RESULTS" "${existing[@]}"
echo
echo "wrote $RESULTS"
# The charts are a view of the results: failing to draw them loses no figure.
"$PLOTS" "$RESULTS" | sed 's/^/wrote /' || warn "search-plots failed: no charts"
