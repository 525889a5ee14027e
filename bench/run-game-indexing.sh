#!/usr/bin/env bash
# Indexing speed on the search-benchmark-game corpus ({"id","text"}, see run-search-game.sh),
# Quarry against tantivy, with one and two indexing threads, and what storing the text (Quarry's
# log default) costs. Each configuration indexes the whole corpus and merges it into one
# segment / block set, ROUNDS times, in turn (tantivy 1, tantivy 2, quarry 1, quarry 2, quarry
# stored 1, then again), so a slow spell of the machine hits all of them. The table gives the
# median seconds, MB/s of the corpus's JSON bytes, index bytes, and the ratios the issue names.
#
#   bench/run-game-indexing.sh
#
# Environment:
#   ROUNDS       runs per configuration (default 3)
#   ARTICLES     index only the first N articles (default: all 30,729)
#   WORK_DIR     corpus (shared with run-search-game.sh) and indexes (default: /tmp/quarry-game-bench)
#   RESULTS      results to write (default: bench/results/search-game-indexing.json)
#   WIKI_FILE, QUARRY_BIN  as for run-search-game.sh
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
SHARED_DIR=${SHARED_DIR:-$(dirname "$REPO_DIR")/shared}
WIKI_FILE=${WIKI_FILE:-$SHARED_DIR/data/wiki/wiki-articles.json.zst}
MAPPING=$BENCH_DIR/game/mapping.json
ROUNDS=${ROUNDS:-3}
ARTICLES=${ARTICLES:-}
WORK_DIR=${WORK_DIR:-/tmp/quarry-game-bench}
RESULTS=${RESULTS:-$BENCH_DIR/results/search-game-indexing.json}

QUARRY=${QUARRY_BIN:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry}
BENCH_BIN=${CARGO_TARGET_DIR:-$BENCH_DIR/target}/release
TANTIVY=$BENCH_BIN/tantivy-bench
CORPUS_TOOL=$BENCH_BIN/search-game-corpus
CORPUS=$WORK_DIR/corpus-${ARTICLES:-all}.json.zst
INDEX_DIR=$WORK_DIR/indexing

SCRIPT_NAME=run-game-indexing
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

mkdir -p "$WORK_DIR"
build_quarry
((quarry_ok)) || exit 1
log "building the bench workspace"
cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml"

game_corpus
# MB/s counts the corpus's JSON bytes (decompressed), as tantivy's own record does.
corpus_bytes=$(zstd -dc "$CORPUS" | wc -c)

# The stored variant: the game's mapping with the text stored, as Quarry stores log messages.
STORED_MAPPING=$WORK_DIR/mapping-stored.json
sed 's/"stored": false/"stored": true/' "$MAPPING" >"$STORED_MAPPING"
grep -q '"stored": true' "$STORED_MAPPING" || { warn "could not make $STORED_MAPPING"; exit 1; }

# run CONFIG: one indexing run; appends "CONFIG SECONDS INDEX_BYTES" to $INDEX_DIR/runs.txt.
run() {
    local config=$1 dir=$INDEX_DIR/$1 started finished seconds
    rm -rf "$dir"
    started=$(now)
    case $config in
    tantivy-1 | tantivy-2)
        "$TANTIVY" index --schema game --index "$dir" --threads "${config#tantivy-}" "$CORPUS" >/dev/null
        ;;
    quarry-1 | quarry-2)
        "$QUARRY" index --data "$dir" --threads "${config#quarry-}" --mapping "$MAPPING" "$CORPUS" 2>/dev/null
        # The merge's share: with 2 threads there are 2 blocks to merge into one.
        local merge_started merged
        merge_started=$(now)
        "$QUARRY" merge --data "$dir" 2>/dev/null
        merged=$(now)
        awk -v c="$config" -v a="$merge_started" -v b="$merged" 'BEGIN { printf "%s merge %.3f s\n", c, b - a }' |
            tee -a "$INDEX_DIR/merges.txt" >&2
        ;;
    quarry-stored-1)
        "$QUARRY" index --data "$dir" --threads 1 --mapping "$STORED_MAPPING" "$CORPUS" 2>/dev/null
        "$QUARRY" merge --data "$dir" 2>/dev/null
        ;;
    esac
    finished=$(now)
    seconds=$(awk -v a="$started" -v b="$finished" 'BEGIN { printf "%.3f", b - a }')
    echo "$config $seconds $(du -sb "$dir" | cut -f1)" | tee -a "$INDEX_DIR/runs.txt" >&2
    rm -rf "$dir"
}

rm -rf "$INDEX_DIR"
mkdir -p "$INDEX_DIR"
configs=(tantivy-1 tantivy-2 quarry-1 quarry-2 quarry-stored-1)
for ((round = 1; round <= ROUNDS; round++)); do
    log "round $round of $ROUNDS"
    for config in "${configs[@]}"; do
        run "$config"
    done
done

# Medians, MB/s and the ratios, as a table and as JSON.
awk -v bytes="$corpus_bytes" -v results="$RESULTS" '
    { seconds[$1] = seconds[$1] " " $2; size[$1] = $3 }
    function median(list,    n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        split("tantivy-1 tantivy-2 quarry-1 quarry-2 quarry-stored-1", order, " ")
        printf "| configuration | median s | MB/s | index bytes |\n|---|---:|---:|---:|\n"
        json = "{\"corpus_bytes\":" bytes ",\"configs\":{"
        for (i = 1; i <= 5; i++) {
            c = order[i]
            if (!(c in seconds)) continue
            m[c] = median(seconds[c]); mbs[c] = bytes / 1e6 / m[c]
            printf "| %s | %.2f | %.1f | %d |\n", c, m[c], mbs[c], size[c]
            runs = substr(seconds[c], 2); gsub(/ /, ",", runs)
            json = json (i > 1 ? "," : "") sprintf("\"%s\":{\"median_seconds\":%.3f,\"mb_per_s\":%.2f,\"index_bytes\":%d,\"runs\":[%s]}", c, m[c], mbs[c], size[c], runs)
        }
        json = json "},\"ratios\":{"
        printf "\n"
        r1 = mbs["quarry-1"] / mbs["tantivy-1"]; r2 = mbs["quarry-2"] / mbs["tantivy-2"]
        rt = mbs["quarry-2"] / mbs["quarry-1"]; rs = m["quarry-stored-1"] / m["quarry-1"] - 1
        rsize = size["quarry-1"] / size["tantivy-1"]
        printf "quarry/tantivy MB/s, 1 thread:  %.2fx (target >= 1.5x)\n", r1
        printf "quarry/tantivy MB/s, 2 threads: %.2fx (target >= 1.5x)\n", r2
        printf "quarry 2 threads / 1 thread:    %.2fx (target >= 1.8x)\n", rt
        printf "storing the text costs:         %+.1f%% time (target < 25%%), index %.2fx\n", 100 * rs, size["quarry-stored-1"] / size["quarry-1"]
        printf "quarry/tantivy index bytes:     %.3fx (target <= 1x)\n", rsize
        json = json sprintf("\"mb_per_s_1_thread\":%.3f,\"mb_per_s_2_threads\":%.3f,\"quarry_2_over_1_thread\":%.3f,\"stored_text_time_cost\":%.3f,\"index_bytes\":%.3f}}", r1, r2, rt, rs, rsize)
        print json > results
    }' "$INDEX_DIR/runs.txt"
echo "quarry's merge into one block, per run (included above):"
cat "$INDEX_DIR/merges.txt"
echo
echo "wrote $RESULTS"
