#!/usr/bin/env bash
# Side-by-side log benchmark: Quarry against tantivy, Apache Lucene and VictoriaLogs on the same
# generated events (`quarry gen-logs`), asked the same log queries (bench/logs/PROTOCOL.md) over
# a pipe, one at a time. Prints a table per size with each engine's figures, the quarry/tantivy,
# quarry/lucene and quarry/victorialogs ratios and how each engine's latency grows with the
# size, checks that the engines' answers agree, and writes bench/results/logs.json. See
# bench/logs/README.md.
#
# VictoriaLogs is a server: `victorialogs-logs` (bench/engines/victorialogs-logs) runs a
# victoria-logs binary on its data directory and translates each request into a LogsQL query
# over HTTP. It is loaded in its natural configuration (stream fields service,host,
# _msg_field=message), flushed and force-merged; requests LogsQL cannot express with the
# protocol's meaning (regex and fuzzy patterns, phrases) are answered UNSUPPORTED.
#
#   bench/run-logs.sh
#   SIZES=100000 bench/run-logs.sh          # a quick look
#
# Environment:
#   SIZES        space-separated event counts (default: "1000000 10000000")
#   SEED         generator seed (default: 42)
#   WORK_DIR     events, indexes, query sets, answers and records (default: /tmp/quarry-logs-bench)
#   QUERY_SET    "logs" (default: tails, histograms, ranges, aggregations) or "patterns" (issue
#                12: COUNTs of prefix, leading/inner/substring wildcard, fuzzy 1 and 2 and regex
#                patterns on the message, and numeric ranges; bench/multiterm/README.md)
#   WARMUP       untimed passes over the query set per engine and size (default: 100, 3 for the
#                patterns; the JVM needs hundreds of requests before its JIT has compiled
#                Lucene's paths, which the patterns' slow requests give it in a few passes)
#   REPEAT       timed passes (default: 20, 10 for the patterns)
#   QUERIES      space-separated query names to run (default: the whole set), e.g.
#                QUERIES="tail100_failed tailev100_failed tailev1000_failed"
#   SKIP_INDEX   1 to reuse the indexes and index records a previous run left in WORK_DIR, or
#                a list of engines whose indexes to reuse (SKIP_INDEX="tantivy lucene
#                victorialogs" indexes only quarry again, after a change of its format)
#   ABLATION     1 (default) also runs Quarry with its optimizations switched on one by one
#                (O0..O3) at the largest size, written to RESULTS with -ablation before .json
#   RESULTS      metric list to write (default: bench/results/logs.json)
#   QUARRY_BIN   a quarry binary to use instead of building target/release/quarry
#   QUARRY_SERVE_ARGS  extra flags for `quarry bench-serve`, e.g. "--cache-size 0" (no decoded
#                chunks kept across requests: every TAILEV decodes what it fetches)
#   LUCENE_JAVA_HOME  JDK 21+ that builds and runs lucene-logs (default: Temurin 25 at
#                /usr/lib/jvm/temurin-25-jdk-amd64 if present, else JAVA_HOME, else `java`)
#   LUCENE_JVM_OPTS   JVM flags for lucene-logs (default: "-Xms4g -Xmx4g
#                --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED")
#   VICTORIALOGS_BIN  a victoria-logs binary to use instead of bench/victorialogs.sh's build
#                (v1.52.1, built once into ~/.cache/quarry); "none" leaves VictoriaLogs out
#
# Events are generated once per size into WORK_DIR/logs-N.json (kept for the next run: the
# generator is deterministic for a seed). Quarry, Lucene and VictoriaLogs are optional: when
# quarry does not build or lacks a subcommand, or lucene-logs does not build (no JDK 21+, no
# Maven), or there is no victoria-logs binary (VICTORIALOGS_BIN=none, or bench/victorialogs.sh
# cannot build one), or an engine fails at some size, its figures are reported as missing and
# the others still run. A request an engine answers UNSUPPORTED or ERROR has no figures either.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
SIZES=${SIZES:-"1000000 10000000"}
SEED=${SEED:-42}
WORK_DIR=${WORK_DIR:-/tmp/quarry-logs-bench}
QUERY_SET=${QUERY_SET:-logs}
if [[ $QUERY_SET == patterns ]]; then
    WARMUP=${WARMUP:-3}
    REPEAT=${REPEAT:-10}
else
    WARMUP=${WARMUP:-100}
    REPEAT=${REPEAT:-20}
fi
QUERIES=${QUERIES:-}
SKIP_INDEX=${SKIP_INDEX:-0}
# Whether to index with engine $1 (not when SKIP_INDEX is 1 or names it).
reindex() {
    [[ $SKIP_INDEX != 1 ]] && ! [[ " ${SKIP_INDEX//,/ } " == *" $1 "* ]]
}
ABLATION=${ABLATION:-1}
RESULTS=${RESULTS:-$BENCH_DIR/results/logs.json}

QUARRY=${QUARRY_BIN:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry}
BENCH_BIN=${CARGO_TARGET_DIR:-$BENCH_DIR/target}/release
TANTIVY=$BENCH_BIN/tantivy-logs
VICTORIALOGS_ADAPTER=$BENCH_BIN/victorialogs-logs
DRIVER=$BENCH_BIN/logs-driver

LUCENE_POM=$BENCH_DIR/lucene-logs/pom.xml
LUCENE_JAR=$BENCH_DIR/lucene-logs/target/lucene-logs.jar
LUCENE_JVM_OPTS=${LUCENE_JVM_OPTS:-"-Xms4g -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"}

SCRIPT_NAME=run-logs
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

mkdir -p "$WORK_DIR" "$(dirname "$RESULTS")"

# --- builds

build_quarry
quarry_generates=0
quarry_serve=(bench-serve)
if ((quarry_ok)); then
    quarry_help=$("$QUARRY" --help 2>/dev/null || true)
    has_subcommand() { grep -qE "^\s+$1\b" <<<"$quarry_help"; }
    has_subcommand gen-logs && quarry_generates=1
    for subcommand in index bench-serve; do
        if ! has_subcommand "$subcommand"; then
            warn "quarry has no '$subcommand' subcommand yet: its figures will be missing"
            quarry_ok=0
        fi
    done
    # `bench-serve --logs` speaks the log protocol; without the flag it answers the search
    # protocol, and the log requests come back UNSUPPORTED (reported, not fatal).
    if "$QUARRY" bench-serve --help 2>/dev/null | grep -q -- '--logs'; then
        quarry_serve=(bench-serve --logs)
        # The peers run without their query caches (Lucene's setQueryCache(null)), so Quarry's
        # cache of pattern expansions is off too: every repeat pays the dictionary walk.
        if "$QUARRY" bench-serve --help 2>/dev/null | grep -q -- 'expansion-cache'; then
            quarry_serve+=(--disable expansion-cache)
        fi
    else
        warn "quarry bench-serve has no --logs yet: its log requests will be unsupported"
    fi
fi

log "building the bench workspace"
cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml"

build_lucene "$LUCENE_POM" lucene-logs
find_victorialogs
# Word splitting of the options is wanted: one flag per word.
read -r -a lucene_java <<<"$LUCENE_JVM_OPTS"
lucene_java=("$JAVA" "${lucene_java[@]}" -jar "$LUCENE_JAR")

# --- per size: events, query set, indexes, runs

# write_queries FILE MIN_MS MAX_MS: the query set (bench/logs/README.md explains each request).
# The full-text word is `failed`, not `error`: tantivy's default tokenizer splits
# `ERROR_INVALID_FUNCTION` (a Windows template) at the underscores and Lucene's does not, so
# COUNT error differs between the peers by the events holding it; on `failed` they agree.
write_queries() {
    local file=$1 max=$3
    local hour_ago=$((max - 3600000))
    if [[ $QUERY_SET == patterns ]]; then
        write_pattern_queries "$@"
    else
        cat >"$file" <<EOF
# NAME<TAB>REQUEST (bench/logs/README.md); data from $2 to $3 ms since the epoch
count_failed	COUNT	failed
tail100_failed	TAIL	100	failed
tail100_nginx_503	TAIL	100	service:nginx AND status:503
tailev100_failed	TAILEV	100	failed
tailev1000_failed	TAILEV	1000	failed
tailev100_nginx_503	TAILEV	100	service:nginx AND status:503
head100_failed	HEAD	100	failed
hist60_all	HISTOGRAM	60	*
hist3600_all	HISTOGRAM	3600	*
hist60_failed	HISTOGRAM	60	failed
hist3600_failed	HISTOGRAM	3600	failed
count_nginx_slow	COUNT	service:nginx AND latency_ms:[1000 TO 30000]
tail100_nginx_slow	TAIL	100	service:nginx AND latency_ms:[1000 TO 30000]
count_failed_last_hour	COUNT	failed AND _time:[$hour_ago TO $max]
hist60_last_hour	HISTOGRAM	60	_time:[$hour_ago TO $max]
terms_client_ip_login	TERMS	client_ip	10	path:login
terms_host	TERMS	host	10	*
terms_level_nginx	TERMS	level	5	service:nginx
percentiles_latency_nginx	PERCENTILES	latency_ms	service:nginx
stats_latency	STATS	latency_ms	*
EOF
    fi
    if [[ -n $QUERIES ]]; then
        # Keep the comment and the named requests only.
        awk -F '\t' -v names=" $QUERIES " '/^#/ || index(names, " " $1 " ")' "$file" >"$file.tmp"
        mv "$file.tmp" "$file"
        if ! grep -qv '^#' "$file"; then
            warn "QUERIES=\"$QUERIES\" names no query of the set"
            exit 1
        fi
    fi
}

# write_pattern_queries FILE MIN_MS MAX_MS: issue 12's multi-term patterns over the message
# (bench/multiterm/README.md), COUNTs only, and numeric ranges. Words that every tokenizer keeps
# whole (tantivy's default tokenizer splits at `_` and `.`, Lucene's and Quarry's do not).
write_pattern_queries() {
    cat >"$1" <<EOF
# NAME<TAB>REQUEST (bench/multiterm/README.md); data from $2 to $3 ms since the epoch
term_timeout	COUNT	timeout
prefix_conn	COUNT	conn*
prefix_interr	COUNT	interr*
prefix_path_log	COUNT	path:log*
leading_eout	COUNT	*eout
leading_tion	COUNT	*tion
inner_int_ed	COUNT	int*ed
inner_rec_ived	COUNT	rec?ived
substring_imeou	COUNT	*imeou*
substring_xcep	COUNT	*xcep*
substring_nterrup	COUNT	*nterrup*
fuzzy1_timout	COUNT	timout~1
fuzzy1_conection	COUNT	conection~1
fuzzy2_exceptoin	COUNT	exceptoin~2
fuzzy2_authentcaton	COUNT	authentcaton~2
regex_tim_o_t	COUNT	/tim.o.t/
regex_interrupt	COUNT	/interrupt(ed|ing)?/
regex_xception	COUNT	/.*xception.*/
range_latency	COUNT	latency_ms:[100 TO 500]
range_status	COUNT	status:[500 TO 599]
range_bytes	COUNT	bytes:[0 TO 1000]
pattern_and_range	COUNT	path:log* AND latency_ms:[1000 TO 30000]
EOF
}

# run_engine ENGINE SIZE ENGINE-COMMAND...: times the query set against one engine.
run_engine() {
    local engine=$1 size=$2
    shift 2
    local out=$WORK_DIR/$engine-$size.json
    rm -f "$out" "$WORK_DIR/$engine-$size.answers"
    log "$size events: $engine"
    if "$DRIVER" run --engine "$engine" --size "$size" --queries "$WORK_DIR/queries-$size.tsv" \
        --warmup "$WARMUP" --repeat "$REPEAT" --answers "$WORK_DIR/$engine-$size.answers" \
        --json "$out.tmp" -- "$@"; then
        mv "$out.tmp" "$out"
        records+=("$out")
    else
        rm -f "$out.tmp"
        warn "$engine failed at $size events: its figures will be missing"
    fi
}

records=()
for size in $SIZES; do
    events=$WORK_DIR/logs-$size.json
    if [[ ! -s $events ]]; then
        if ((quarry_generates)); then
            log "generating $size events (seed $SEED)"
            "$QUARRY" gen-logs --events "$size" --seed "$SEED" --start 2026-11-01T00:00:00Z \
                --output "$events.tmp"
            mv "$events.tmp" "$events"
        else
            warn "no $events and no 'quarry gen-logs' to write it: skipping $size events"
            continue
        fi
    fi
    if ! range=$("$DRIVER" time-range "$events"); then
        warn "cannot read the time range of $events: skipping $size events"
        continue
    fi
    read -r min_ms max_ms event_count <<<"$range"
    write_queries "$WORK_DIR/queries-$size.tsv" "$min_ms" "$max_ms"

    tantivy_index=$WORK_DIR/tantivy-index-$size
    quarry_data=$WORK_DIR/quarry-data-$size
    lucene_index=$WORK_DIR/lucene-index-$size
    victorialogs_data=$WORK_DIR/victorialogs-data-$size
    if [[ $SKIP_INDEX == 1 ]]; then
        log "reusing the indexes of $size events in $WORK_DIR"
    else
        # Every engine reads the input from the page cache, not the first one from disk.
        cat "$events" >/dev/null
    fi
    if reindex tantivy; then
        log "indexing $size events with tantivy (1 thread)"
        rm -rf "$tantivy_index" "$WORK_DIR/tantivy-index-$size.json"
        if "$TANTIVY" index --index "$tantivy_index" "$events" >"$WORK_DIR/tantivy-index-$size.json.tmp"; then
            mv "$WORK_DIR/tantivy-index-$size.json.tmp" "$WORK_DIR/tantivy-index-$size.json"
            cat "$WORK_DIR/tantivy-index-$size.json" >&2
        else
            rm -rf "$tantivy_index" "$WORK_DIR/tantivy-index-$size.json.tmp"
            warn "tantivy indexing failed at $size events: its figures will be missing"
        fi
    fi
    if reindex quarry; then
        rm -f "$WORK_DIR/quarry-index-$size.json"
        if ((quarry_ok)); then
            log "indexing $size events with quarry (1 thread)"
            rm -rf "$quarry_data"
            started=$(now)
            status=0
            "$QUARRY" index --data "$quarry_data" --threads 1 "$events" || status=$?
            finished=$(now)
            # Exit status 3: some lines were skipped as malformed; the answers will show it.
            if ((status == 0 || status == 3)); then
                ((status == 3)) && warn "quarry skipped malformed lines of $events"
                seconds=$(awk -v a="$started" -v b="$finished" 'BEGIN { printf "%.3f", b - a }')
                index_bytes=$(du -sb "$quarry_data" | cut -f1)
                printf '{"engine":"quarry","events":%s,"seconds":%s,"index_bytes":%s}\n' \
                    "$event_count" "$seconds" "$index_bytes" >"$WORK_DIR/quarry-index-$size.json"
                cat "$WORK_DIR/quarry-index-$size.json" >&2
            else
                rm -rf "$quarry_data"
                warn "quarry indexing failed at $size events: its figures will be missing"
            fi
        fi
    fi
    if reindex lucene; then
        rm -f "$WORK_DIR/lucene-index-$size.json"
        if ((lucene_ok)); then
            log "indexing $size events with lucene (1 thread)"
            rm -rf "$lucene_index"
            if "${lucene_java[@]}" index --index "$lucene_index" "$events" \
                >"$WORK_DIR/lucene-index-$size.json.tmp"; then
                mv "$WORK_DIR/lucene-index-$size.json.tmp" "$WORK_DIR/lucene-index-$size.json"
                cat "$WORK_DIR/lucene-index-$size.json" >&2
            else
                rm -rf "$lucene_index" "$WORK_DIR/lucene-index-$size.json.tmp"
                warn "lucene indexing failed at $size events: its figures will be missing"
            fi
        fi
    fi
    if reindex victorialogs; then
        rm -f "$WORK_DIR/victorialogs-index-$size.json"
        if ((victorialogs_ok)); then
            # A server with its defaults: ingestion and merges on every core.
            log "indexing $size events with victorialogs (a server; its log: $victorialogs_data.log)"
            rm -rf "$victorialogs_data" "$victorialogs_data.log"
            if "$VICTORIALOGS_ADAPTER" index --bin "$VICTORIALOGS" --data "$victorialogs_data" \
                "$events" >"$WORK_DIR/victorialogs-index-$size.json.tmp"; then
                mv "$WORK_DIR/victorialogs-index-$size.json.tmp" "$WORK_DIR/victorialogs-index-$size.json"
                cat "$WORK_DIR/victorialogs-index-$size.json" >&2
            else
                rm -rf "$victorialogs_data" "$WORK_DIR/victorialogs-index-$size.json.tmp"
                warn "victorialogs indexing failed at $size events: its figures will be missing"
            fi
        fi
    fi
    # The index records of the engines that run (an optional engine left out or not built keeps
    # its earlier record for a later SKIP_INDEX run, but it is not reported now).
    running=(tantivy)
    ((quarry_ok)) && running+=(quarry)
    ((lucene_ok)) && running+=(lucene)
    ((victorialogs_ok)) && running+=(victorialogs)
    for engine in "${running[@]}"; do
        [[ -f $WORK_DIR/$engine-index-$size.json ]] && records+=("$WORK_DIR/$engine-index-$size.json")
    done
    # Answers an earlier run left are not compared with this run's.
    for engine in tantivy quarry lucene victorialogs; do
        rm -f "$WORK_DIR/$engine-$size.answers"
    done

    if [[ -f $tantivy_index/meta.json ]]; then
        run_engine tantivy "$size" "$TANTIVY" serve --index "$tantivy_index"
    fi
    if ((quarry_ok)) && [[ -d $quarry_data ]]; then
        # shellcheck disable=SC2086 # QUARRY_SERVE_ARGS is a list of flags
        run_engine quarry "$size" "$QUARRY" "${quarry_serve[@]}" ${QUARRY_SERVE_ARGS:-} \
            --data "$quarry_data"
    fi
    if ((lucene_ok)) && compgen -G "$lucene_index/segments_*" >/dev/null; then
        run_engine lucene "$size" "${lucene_java[@]}" serve --index "$lucene_index"
    fi
    if ((victorialogs_ok)) && [[ -d $victorialogs_data ]]; then
        run_engine victorialogs "$size" "$VICTORIALOGS_ADAPTER" serve --bin "$VICTORIALOGS" \
            --data "$victorialogs_data"
    fi

    # Ablation (seed 000, Table 2): Quarry with its optimizations switched on one by one, on
    # the largest size only. O0 none; O1 the time index (sparse index + time offsets); O2 +
    # reverse search for tails; O3 + endpoint histograms; "quarry" above is O3 + block/chunk
    # skipping + the numeric range index.
    if ((ABLATION)) && [[ $QUERY_SET != patterns ]] && ((quarry_ok)) && [[ -d $quarry_data && $size == "${SIZES##* }" ]]; then
        common=(reverse-search endpoint-histogram skipping range-index)
        for level in 0 1 2 3; do
            disable=()
            case $level in
            0) disable=(--disable all) ;;
            1) for o in "${common[@]}"; do disable+=(--disable "$o"); done ;;
            2) for o in "${common[@]:1}"; do disable+=(--disable "$o"); done ;;
            3) for o in "${common[@]:2}"; do disable+=(--disable "$o"); done ;;
            esac
            run_engine "quarry-O$level" "$size" "$QUARRY" "${quarry_serve[@]}" "${disable[@]}" \
                --data "$quarry_data"
        done
    fi

    log "$size events: answers compared (PROTOCOL.md rules: exact, TERMS ties free, PERCENTILES within 2 %)"
    for pair in "tantivy lucene" "quarry tantivy" "quarry lucene" "quarry victorialogs" \
        "tantivy victorialogs" "lucene victorialogs"; do
        read -r left right <<<"$pair"
        if [[ -f $WORK_DIR/$left-$size.answers && -f $WORK_DIR/$right-$size.answers ]]; then
            "$DRIVER" compare "$WORK_DIR/$left-$size.answers" "$WORK_DIR/$right-$size.answers" >&2 || true
        fi
    done
done

log "results (p50 latency in µs; ratio below 1 means quarry is faster or smaller, except events/s)"
peer_records=()
ablation_records=()
for record in "${records[@]}"; do
    case $(basename "$record") in
    quarry-O*) ablation_records+=("$record") ;;
    *) peer_records+=("$record") ;;
    esac
done
"$DRIVER" report --subject quarry --baseline tantivy,lucene,victorialogs --out "$RESULTS" \
    "${peer_records[@]}"
if ((${#ablation_records[@]})); then
    log "ablation (p50 µs): quarry with all optimizations against O0..O3"
    ablation_out=${RESULTS%.json}-ablation.json
    "$DRIVER" report --subject quarry --baseline quarry-O0,quarry-O1,quarry-O2,quarry-O3 \
        --out "$ablation_out" "${ablation_records[@]}" "${peer_records[@]}"
    echo "wrote $ablation_out"
fi
echo
echo "wrote $RESULTS"
