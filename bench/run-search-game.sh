#!/usr/bin/env bash
# The search-benchmark-game configuration (issue 14, item 2): Quarry, tantivy and Apache Lucene
# on the game's corpus shape ({"id","text"}: id stored only, text indexed with positions and
# not stored), made from the Wikipedia articles, with the game's kinds of query made from the
# TREC Million Query topics (bench/game/queries.tsv). One indexing thread each (seconds, MB/s,
# index bytes), then for each command (COUNT, TOP_10, TOP_10_COUNT) and engine the round trip
# and the engine's own time per query: mean, p50, p90, p99 and max, over all queries and per
# kind, with the quarry/tantivy and quarry/lucene ratios; the counts of every engine are
# compared query by query. Prints Markdown tables and writes bench/results/search-game.json.
#
#   bench/run-search-game.sh
#   ARTICLES=2000 KIND_LIMIT=20 WARMUP=1 REPEAT=1 bench/run-search-game.sh   # a quick check
#
# Environment:
#   ARTICLES     index only the first N articles (default: all 30,729)
#   KIND_LIMIT   only the first N queries of each kind (default: all)
#   QUERY_LIMIT  only the first N queries of the query file (default: all)
#   QUERY_SET    the query file, KIND<TAB>query lines (default: bench/game/queries.tsv)
#   COMMANDS     protocol commands (default: "COUNT TOP_10 TOP_10_COUNT")
#   ENGINES      engines to run (default: "quarry tantivy lucene")
#   WARMUP       untimed passes over the queries before the timed ones (default: 2)
#   REPEAT       timed passes over the queries (default: 5)
#   WORK_DIR     corpus, indexes, answers and records (default: /tmp/quarry-game-bench)
#   SKIP_INDEX   1 to reuse the indexes and index records a previous run left in WORK_DIR
#   WIKI_FILE    the articles (default: shared/data/wiki/wiki-articles.json.zst)
#   RESULTS      results to write (default: bench/results/search-game.json); the tables also
#                go to WORK_DIR/search-game.md
#   QUARRY_BIN   a quarry binary to use instead of building target/release/quarry
#   LUCENE_JAVA_HOME, LUCENE_JVM_OPTS  as for run-search.sh
#
# An engine that does not build or fails is reported as missing and the others still run. A
# quarry without `bench-serve --engine-time` is run without it: its engine-time cells say `-`.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
SHARED_DIR=${SHARED_DIR:-$(dirname "$REPO_DIR")/shared}
WIKI_FILE=${WIKI_FILE:-$SHARED_DIR/data/wiki/wiki-articles.json.zst}
QUERY_SET=${QUERY_SET:-$BENCH_DIR/game/queries.tsv}
MAPPING=$BENCH_DIR/game/mapping.json
ARTICLES=${ARTICLES:-}
KIND_LIMIT=${KIND_LIMIT:-}
QUERY_LIMIT=${QUERY_LIMIT:-}
COMMANDS=${COMMANDS:-COUNT TOP_10 TOP_10_COUNT}
ENGINES=${ENGINES:-quarry tantivy lucene}
WARMUP=${WARMUP:-2}
REPEAT=${REPEAT:-5}
WORK_DIR=${WORK_DIR:-/tmp/quarry-game-bench}
SKIP_INDEX=${SKIP_INDEX:-0}
RESULTS=${RESULTS:-$BENCH_DIR/results/search-game.json}

QUARRY=${QUARRY_BIN:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry}
BENCH_BIN=${CARGO_TARGET_DIR:-$BENCH_DIR/target}/release
TANTIVY=$BENCH_BIN/tantivy-bench
DRIVER=$BENCH_BIN/search-driver
REPORT=$BENCH_BIN/search-report
CORPUS_TOOL=$BENCH_BIN/search-game-corpus

LUCENE_JAR=$BENCH_DIR/lucene/target/lucene-bench.jar
LUCENE_JVM_OPTS=${LUCENE_JVM_OPTS:-"-Xms4g -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"}

CORPUS=$WORK_DIR/corpus-${ARTICLES:-all}.json.zst
TANTIVY_INDEX=$WORK_DIR/tantivy-index
QUARRY_DATA=$WORK_DIR/quarry-data
LUCENE_INDEX=$WORK_DIR/lucene-index

SCRIPT_NAME=run-search-game
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

for file in "$WIKI_FILE" "$QUERY_SET" "$MAPPING"; do
    [[ -r $file ]] || { warn "cannot read $file"; exit 1; }
done
mkdir -p "$WORK_DIR"

want() { [[ " $ENGINES " == *" $1 "* ]]; }

quarry_ok=0
quarry_engine_time=()
if want quarry; then
    build_quarry
    if ((quarry_ok)); then
        quarry_help=$("$QUARRY" --help 2>/dev/null || true)
        for subcommand in index merge bench-serve; do
            if ! grep -qE "^\s+$subcommand\b" <<<"$quarry_help"; then
                warn "quarry has no '$subcommand' subcommand: its figures will be missing"
                quarry_ok=0
            fi
        done
    fi
    if ((quarry_ok)) && ! "$QUARRY" index --help 2>/dev/null | grep -q -- '--mapping'; then
        warn "quarry index has no --mapping: its figures will be missing"
        quarry_ok=0
    fi
    if ((quarry_ok)); then
        if "$QUARRY" bench-serve --help 2>/dev/null | grep -q -- '--engine-time'; then
            quarry_engine_time=(--engine-time)
        else
            warn "quarry bench-serve has no --engine-time: its engine time will be 'not reported'"
        fi
    fi
fi

log "building the bench workspace"
cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml"

lucene_ok=0
if want lucene; then
    build_lucene "$BENCH_DIR/lucene/pom.xml" lucene-bench
    # Word splitting of the options is wanted: one flag per word.
    read -r -a lucene_java <<<"$LUCENE_JVM_OPTS"
    lucene_java=("$JAVA" "${lucene_java[@]}" -jar "$LUCENE_JAR")
fi
tantivy_ok=0
want tantivy && tantivy_ok=1

game_corpus

# The queries: the whole set, or the first KIND_LIMIT of each kind.
queries=$QUERY_SET
if [[ -n $KIND_LIMIT ]]; then
    queries=$WORK_DIR/queries-$KIND_LIMIT-per-kind.tsv
    awk -F'\t' -v limit="$KIND_LIMIT" 'NF >= 2 && seen[$1]++ < limit' "$QUERY_SET" >"$queries"
fi

records=()
if [[ $SKIP_INDEX == 1 ]]; then
    log "reusing the indexes in $WORK_DIR"
else
    # Every engine reads the input from the page cache, not the first one from disk.
    cat "$CORPUS" >/dev/null

    rm -f "$WORK_DIR/tantivy-index.json"
    if ((tantivy_ok)); then
        log "indexing with tantivy (1 thread)"
        rm -rf "$TANTIVY_INDEX"
        if "$TANTIVY" index --schema game --index "$TANTIVY_INDEX" --threads 1 "$CORPUS" \
            >"$WORK_DIR/tantivy-index.json.tmp"; then
            mv "$WORK_DIR/tantivy-index.json.tmp" "$WORK_DIR/tantivy-index.json"
            cat "$WORK_DIR/tantivy-index.json" >&2
        else
            rm -f "$WORK_DIR/tantivy-index.json.tmp"
            warn "tantivy indexing failed: its figures will be missing"
            tantivy_ok=0
        fi
    fi

    rm -f "$WORK_DIR/quarry-index.json"
    if ((quarry_ok)); then
        log "indexing with quarry (1 thread, bench/game/mapping.json), then merging"
        rm -rf "$QUARRY_DATA"
        started=$(now)
        if "$QUARRY" index --data "$QUARRY_DATA" --threads 1 --mapping "$MAPPING" "$CORPUS" \
            && "$QUARRY" merge --data "$QUARRY_DATA"; then
            finished=$(now)
            seconds=$(awk -v a="$started" -v b="$finished" 'BEGIN { printf "%.3f", b - a }')
            index_bytes=$(du -sb "$QUARRY_DATA" | cut -f1)
            # Untimed: the number of documents, to check every engine indexed them all.
            docs=$("$QUARRY" search --data "$QUARRY_DATA" --count --limit 0 '*' 2>/dev/null |
                sed -n 's/^{"count": *\([0-9]*\)}$/\1/p')
            printf '{"engine":"quarry","seconds":%s,"index_bytes":%s%s}\n' \
                "$seconds" "$index_bytes" "${docs:+,\"docs\":$docs}" >"$WORK_DIR/quarry-index.json"
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
        if "${lucene_java[@]}" index --schema game --index "$LUCENE_INDEX" "$CORPUS" \
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
[[ -f $TANTIVY_INDEX/meta.json ]] || tantivy_ok=0
[[ -d $QUARRY_DATA ]] || quarry_ok=0
compgen -G "$LUCENE_INDEX/segments_*" >/dev/null || lucene_ok=0

limit_args=()
[[ -n $QUERY_LIMIT ]] && limit_args=(--limit "$QUERY_LIMIT")

# run_game ENGINE COMMAND ENGINE-COMMAND...: WARMUP untimed passes, then REPEAT timed ones,
# one query at a time; the answers of the first timed pass are kept for the count comparison.
run_game() {
    local engine=$1 command=$2
    shift 2
    local out=$WORK_DIR/$engine-$command.json answers=$WORK_DIR/$engine-$command.answers
    rm -f "$out" "$answers"
    log "$command: $engine ($WARMUP untimed, $REPEAT timed passes)"
    if "$DRIVER" --kinds --engine "$engine" --queries "$queries" "${limit_args[@]}" \
        --command "$command" --warmup 0 --warmup-passes "$WARMUP" --repeat "$REPEAT" \
        --answers "$answers" -- "$@" >"$out.tmp"; then
        mv "$out.tmp" "$out"
    else
        rm -f "$out.tmp" "$answers"
        warn "$engine failed on $command: its figures will be missing"
    fi
    records+=("$out")
}

for command in $COMMANDS; do
    for engine in $ENGINES; do
        case $engine in
        quarry)
            if ((quarry_ok)); then
                run_game quarry "$command" "$QUARRY" bench-serve --data "$QUARRY_DATA" \
                    "${quarry_engine_time[@]}"
            fi
            ;;
        tantivy)
            if ((tantivy_ok)); then
                run_game tantivy "$command" "$TANTIVY" serve --index "$TANTIVY_INDEX" --engine-time
            fi
            ;;
        lucene)
            if ((lucene_ok)); then
                run_game lucene "$command" "${lucene_java[@]}" serve --index "$LUCENE_INDEX" \
                    --engine-time
            fi
            ;;
        *) warn "unknown engine $engine"; exit 1 ;;
        esac
    done
done

log "results (µs; ratio below 1: quarry is faster or smaller, except MB/s)"
existing=()
for record in "${records[@]}"; do
    [[ -f $record ]] && existing+=("$record")
done
"$REPORT" --by-kind --subject quarry --baseline tantivy,lucene --out "$RESULTS" "${existing[@]}" |
    tee "$WORK_DIR/search-game.md"
echo
echo "wrote $RESULTS and $WORK_DIR/search-game.md"
