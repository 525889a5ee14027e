#!/usr/bin/env bash
# Index size by dataset (issue 13, item 1): Quarry, tantivy, Apache Lucene and VictoriaLogs
# index the same data in one run, and the script prints one table (raw bytes, each engine's
# index bytes, its ratio to raw, quarry/tantivy, quarry/lucene and quarry/victorialogs) and
# Quarry's `quarry check --sizes` breakdown (by part and by field) for some of the datasets;
# writes bench/results/sizes.json.
#
#   bench/run-sizes.sh
#   DATASETS="HDFS BGL" bench/run-sizes.sh     # a quick look
#
# Datasets:
#   generated  `quarry gen-logs --events $EVENTS --seed $SEED` (the log benchmark's events),
#              indexed by tantivy-logs and lucene-logs with the log schema (sorted by _time);
#              VictoriaLogs takes them with _stream_fields=service,host, _msg_field=message,
#              _time_field=_time
#   SYSTEM     a Loghub sample, $LOGHUB_DIR/SYSTEM/SYSTEM_2k.log, each line (trailing CR
#              dropped) wrapped as {"message": line}; tantivy-logs and lucene-logs index it with
#              `--schema message` (one text field with positions, stored); Quarry adds its _time;
#              VictoriaLogs takes it with _msg_field=message, no stream fields, and stamps each
#              line with the ingestion time
#   wiki       the Wikipedia sample, indexed as bench/run-search.sh does (tantivy-bench,
#              lucene-bench, and `quarry index` + `quarry merge`, one block/segment each); not
#              VictoriaLogs (a document corpus, not logs)
# Raw bytes are the dataset as it comes: the JSON lines of the generated events, the Loghub
# .log file (not its JSON wrapping), the uncompressed Wikipedia JSON lines. Every engine
# indexes with one thread, except VictoriaLogs, run as a server with its defaults; an engine's
# index bytes are the sum of the regular files in its directory.
#
# VictoriaLogs (bench/victorialogs.sh builds it once): a fresh `victoria-logs
# -storageDataPath=DIR -httpListenAddr=127.0.0.1:PORT -retentionPeriod=100y` per dataset (the
# retention keeps the generated events, dated 2026-11-01, from being dropped as too old), the
# dataset's JSON lines in one POST to /insert/jsonline, then /internal/force_flush, a
# `* | stats count()` query that must count every event (else its figure is missing),
# /internal/force_merge (waited for in its log), a wait until the directory's size has not
# changed for 3 s, and SIGINT; its index bytes are measured after it exited.
#
# Environment:
#   DATASETS     space-separated datasets (default: "generated", every Loghub system found,
#                "wiki")
#   BREAKDOWN    datasets whose Quarry breakdown is printed (default: "generated HDFS BGL wiki")
#   EVENTS       generated events (default: 1000000)
#   SEED         generator seed (default: 42)
#   WORK_DIR     inputs and indexes (default: /tmp/quarry-sizes); each dataset's indexes are
#                removed once measured unless KEEP=1
#   KEEP         1 keeps the indexes in WORK_DIR
#   LOGHUB_DIR   Loghub samples (default: shared/data/loghub)
#   WIKI_FILE    Wikipedia articles (default: shared/data/wiki/wiki-articles.json.zst)
#   RESULTS      JSON to write (default: bench/results/sizes.json)
#   QUARRY_BIN   a quarry binary to use instead of building target/release/quarry
#   VICTORIALOGS_BIN  a victoria-logs binary to use instead of bench/victorialogs.sh's build
#   LUCENE_JAVA_HOME  JDK 21+ that builds and runs the Lucene engines (default: Temurin 25 at
#                /usr/lib/jvm/temurin-25-jdk-amd64 if present, else JAVA_HOME, else `java`)
#   LUCENE_JVM_OPTS   JVM flags (default: "-Xms4g -Xmx4g --add-modules jdk.incubator.vector
#                --enable-native-access=ALL-UNNAMED")
#
# An engine that does not build or fails on a dataset has its figures reported as missing (-
# in the table, null in the JSON); the others go on. VICTORIALOGS_BIN=none leaves VictoriaLogs
# out (missing); LUCENE_JAVA_HOME naming a JDK older than 21 does the same for Lucene.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
SHARED_DIR=${SHARED_DIR:-$(dirname "$REPO_DIR")/shared}
LOGHUB_DIR=${LOGHUB_DIR:-$SHARED_DIR/data/loghub}
WIKI_FILE=${WIKI_FILE:-$SHARED_DIR/data/wiki/wiki-articles.json.zst}
EVENTS=${EVENTS:-1000000}
SEED=${SEED:-42}
WORK_DIR=${WORK_DIR:-/tmp/quarry-sizes}
KEEP=${KEEP:-0}
RESULTS=${RESULTS:-$BENCH_DIR/results/sizes.json}
BREAKDOWN=${BREAKDOWN:-"generated HDFS BGL wiki"}
if [[ -z ${DATASETS:-} ]]; then
    DATASETS=generated
    for log_file in "$LOGHUB_DIR"/*/*_2k.log; do
        [[ -f $log_file ]] && DATASETS+=" $(basename "$(dirname "$log_file")")"
    done
    DATASETS+=" wiki"
fi

QUARRY=${QUARRY_BIN:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry}
BENCH_BIN=${CARGO_TARGET_DIR:-$BENCH_DIR/target}/release
LUCENE_JVM_OPTS=${LUCENE_JVM_OPTS:-"-Xms4g -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"}

SCRIPT_NAME=run-sizes
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

mkdir -p "$WORK_DIR" "$(dirname "$RESULTS")"

# --- builds

build_quarry

tantivy_ok=1
log "building tantivy-logs and tantivy-bench"
if ! cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml" -p tantivy-logs -p tantivy-bench; then
    warn "the tantivy engines do not build: their figures will be missing"
    tantivy_ok=0
fi

find_victorialogs

build_lucene "$BENCH_DIR/lucene-logs/pom.xml" lucene-logs
lucene_logs_ok=$lucene_ok
build_lucene "$BENCH_DIR/lucene/pom.xml" lucene-bench
lucene_wiki_ok=$lucene_ok
# Word splitting of the options is wanted: one flag per word.
read -r -a lucene_java <<<"$LUCENE_JVM_OPTS"
lucene_java=("$JAVA" "${lucene_java[@]}")

# --- measuring

# dir_bytes DIR: the bytes of the regular files under DIR.
dir_bytes() {
    find "$1" -type f -printf '%s\n' | awk '{ total += $1 } END { print total + 0 }'
}

# index_quarry DIR INPUT [merge]: indexes INPUT with one thread (and merges into one block when
# asked); prints the index bytes, nothing on failure.
index_quarry() {
    local dir=$1 input=$2 merge=${3:-}
    ((quarry_ok)) || return 0
    rm -rf "$dir"
    if "$QUARRY" index --data "$dir" --threads 1 "$input" >&2 &&
        { [[ -z $merge ]] || "$QUARRY" merge --data "$dir" >&2; }; then
        dir_bytes "$dir"
    else
        warn "quarry failed on $input: its figure will be missing"
    fi
}

# index_peer ENGINE OK DIR COMMAND...: runs an engine's index command into DIR; prints the
# index bytes, nothing on failure.
index_peer() {
    local engine=$1 ok=$2 dir=$3
    shift 3
    ((ok)) || return 0
    rm -rf "$dir"
    if "$@" >"$dir.json" && [[ -d $dir ]]; then
        cat "$dir.json" >&2
        dir_bytes "$dir"
    else
        warn "$engine failed on ${*: -1}: its figure will be missing"
    fi
    rm -f "$dir.json"
}

# stop_victorialogs PID: SIGINT (a graceful shutdown, which flushes what it holds), then waits
# up to 60 s for the exit; fails if it had to be killed or exited with an error.
stop_victorialogs() {
    local pid=$1 waited=0
    kill -INT "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((waited < 600)); do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        return 1
    fi
    wait "$pid"
}

# index_victorialogs DIR INPUT EVENTS PARAMS: a fresh victoria-logs on DIR takes INPUT's JSON
# lines in one POST to /insert/jsonline?PARAMS; flushed, counted (must be EVENTS),
# force-merged, left until the directory's size is stable, stopped with SIGINT. Prints the
# index bytes, nothing on failure (its log, DIR.log, then stays for a look).
index_victorialogs() {
    local dir=$1 input=$2 events=$3 params=$4
    ((victorialogs_ok)) || return 0
    rm -rf "$dir" "$dir.log"
    local port
    port=$(free_port)
    local url=http://127.0.0.1:$port
    "$VICTORIALOGS" -storageDataPath="$dir" -httpListenAddr="127.0.0.1:$port" \
        -retentionPeriod=100y >"$dir.log" 2>&1 &
    local pid=$!
    local failure='' tries=0
    until curl -sf -o /dev/null "$url/health"; do
        tries=$((tries + 1))
        if ! kill -0 "$pid" 2>/dev/null || ((tries > 300)); then
            failure="it did not answer on $url/health"
            break
        fi
        sleep 0.1
    done
    # The Content-Type matters: a body sent as a form (curl's default with --data) is parsed as
    # one, and no row is stored.
    if [[ -z $failure ]] && ! curl -sS --fail -X POST -H 'Content-Type: application/stream+json' \
        -T "$input" "$url/insert/jsonline?$params" >&2; then
        failure="POST /insert/jsonline failed"
    fi
    if [[ -z $failure ]] && ! curl -sS --fail -o /dev/null "$url/internal/force_flush"; then
        failure="/internal/force_flush failed"
    fi
    if [[ -z $failure ]]; then
        local count
        count=$(curl -sS --fail "$url/select/logsql/query?query=*%20%7C%20stats%20count()%20as%20count" |
            jq -r '.count' 2>/dev/null) || true
        [[ $count == "$events" ]] || failure="it counts ${count:-no} rows for $events events sent"
    fi
    if [[ -z $failure ]]; then
        curl -sS --fail -o /dev/null "$url/internal/force_merge" ||
            failure="/internal/force_merge failed"
        # The merge runs in the background; its end is a log line.
        tries=0
        until [[ -n $failure ]] || grep -q 'forced merge .* has been successfully finished' "$dir.log"; do
            tries=$((tries + 1))
            ((tries > 6000)) && failure="the forced merge did not end within 600 s"
            sleep 0.1
        done
    fi
    if [[ -z $failure ]]; then
        # Background merges and flushes still running: wait until 3 samples a second apart
        # agree (at most 120 s).
        local size previous=-1 stable=0
        tries=0
        while ((stable < 3 && tries < 120)); do
            sleep 1
            size=$(dir_bytes "$dir")
            if [[ $size == "$previous" ]]; then
                stable=$((stable + 1))
            else
                stable=0
            fi
            previous=$size
            tries=$((tries + 1))
        done
        ((stable >= 3)) || failure="its directory's size did not settle within 120 s"
    fi
    if ! stop_victorialogs "$pid" && [[ -z $failure ]]; then
        failure="it did not exit cleanly on SIGINT"
    fi
    if [[ -z $failure ]]; then
        dir_bytes "$dir"
        rm -f "$dir.log"
    else
        warn "victorialogs failed on $input: $failure (log: $dir.log); its figure will be missing"
    fi
}

# A row per dataset: name events raw_bytes input_bytes quarry tantivy lucene victorialogs ('-':
# missing).
ROWS=$WORK_DIR/sizes.tsv
: >"$ROWS"
BREAKDOWN_DIR=$WORK_DIR/breakdown
rm -rf "$BREAKDOWN_DIR"
mkdir -p "$BREAKDOWN_DIR"

for dataset in $DATASETS; do
    quarry_dir=$WORK_DIR/quarry-$dataset
    tantivy_dir=$WORK_DIR/tantivy-$dataset
    lucene_dir=$WORK_DIR/lucene-$dataset
    victorialogs_dir=$WORK_DIR/victorialogs-$dataset
    case $dataset in
    generated)
        input=$WORK_DIR/logs-$EVENTS.json
        if [[ ! -s $input ]]; then
            if ! ((quarry_ok)); then
                warn "no quarry to generate $input: skipping $dataset"
                continue
            fi
            log "generating $EVENTS events (seed $SEED)"
            "$QUARRY" gen-logs --events "$EVENTS" --seed "$SEED" --start 2026-11-01T00:00:00Z \
                >"$input.tmp"
            mv "$input.tmp" "$input"
        fi
        events=$(wc -l <"$input")
        raw_bytes=$(wc -c <"$input")
        input_bytes=$raw_bytes
        schema=logs
        victorialogs_params='_stream_fields=service,host&_msg_field=message&_time_field=_time'
        ;;
    wiki)
        if [[ ! -f $WIKI_FILE ]]; then
            warn "no $WIKI_FILE: skipping $dataset"
            continue
        fi
        input=$WIKI_FILE
        read -r events raw_bytes < <(zstd -dc "$input" | wc -lc)
        input_bytes=$raw_bytes
        ;;
    *)
        log_file=$LOGHUB_DIR/$dataset/${dataset}_2k.log
        if [[ ! -f $log_file ]]; then
            warn "no $log_file: skipping $dataset"
            continue
        fi
        input=$WORK_DIR/loghub-$dataset.json
        jq -R -c '{message: sub("\r$"; "")}' <"$log_file" >"$input"
        events=$(wc -l <"$input")
        raw_bytes=$(wc -c <"$log_file")
        input_bytes=$(wc -c <"$input")
        schema=message
        victorialogs_params='_msg_field=message'
        ;;
    esac
    log "$dataset: $events events, $raw_bytes raw bytes"

    if [[ $dataset == wiki ]]; then
        quarry_bytes=$(index_quarry "$quarry_dir" "$input" merge)
        tantivy_bytes=$(index_peer tantivy "$tantivy_ok" "$tantivy_dir" \
            "$BENCH_BIN/tantivy-bench" index --index "$tantivy_dir" --threads 1 "$input")
        lucene_bytes=$(index_peer lucene "$lucene_wiki_ok" "$lucene_dir" \
            "${lucene_java[@]}" -jar "$BENCH_DIR/lucene/target/lucene-bench.jar" index \
            --index "$lucene_dir" "$input")
        victorialogs_bytes=
    else
        quarry_bytes=$(index_quarry "$quarry_dir" "$input")
        tantivy_bytes=$(index_peer tantivy "$tantivy_ok" "$tantivy_dir" \
            "$BENCH_BIN/tantivy-logs" index --schema "$schema" --index "$tantivy_dir" "$input")
        lucene_bytes=$(index_peer lucene "$lucene_logs_ok" "$lucene_dir" \
            "${lucene_java[@]}" -jar "$BENCH_DIR/lucene-logs/target/lucene-logs.jar" index \
            --schema "$schema" --index "$lucene_dir" "$input")
        victorialogs_bytes=$(index_victorialogs "$victorialogs_dir" "$input" "$events" \
            "$victorialogs_params")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dataset" "$events" "$raw_bytes" \
        "$input_bytes" "${quarry_bytes:--}" "${tantivy_bytes:--}" "${lucene_bytes:--}" \
        "${victorialogs_bytes:--}" >>"$ROWS"

    if [[ -n $quarry_bytes && " $BREAKDOWN " == *" $dataset "* ]]; then
        if ! "$QUARRY" check --data "$quarry_dir" --sizes >"$BREAKDOWN_DIR/$dataset.txt"; then
            warn "quarry check --sizes failed on $dataset: no breakdown"
            rm -f "$BREAKDOWN_DIR/$dataset.txt"
        fi
    fi
    if [[ $KEEP != 1 ]]; then
        rm -rf "$quarry_dir" "$tantivy_dir" "$lucene_dir" "$victorialogs_dir"
        [[ $dataset == generated || $dataset == wiki ]] || rm -f "$input"
    fi
done

# --- report

log "index bytes by dataset"
awk -F '\t' '
    function ratio(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.3f", a / b) }
    BEGIN {
        format = "%-12s %8s %12s %12s %12s %12s %12s %8s %8s %8s %8s %8s %8s %8s\n"
        printf format, "dataset", "events", "raw", "quarry", "tantivy", "lucene", "victorialogs",
            "q/raw", "t/raw", "l/raw", "v/raw", "q/t", "q/l", "q/v"
    }
    {
        printf format, $1, $2, $3, $5, $6, $7, $8, ratio($5, $3), ratio($6, $3), ratio($7, $3),
            ratio($8, $3), ratio($5, $6), ratio($5, $7), ratio($5, $8)
    }' "$ROWS"

for dataset in $BREAKDOWN; do
    if [[ -f $BREAKDOWN_DIR/$dataset.txt ]]; then
        log "quarry check --sizes: $dataset"
        # The per-block "ok" lines are not part of the breakdown.
        grep -v '^ok \|blocks checked' "$BREAKDOWN_DIR/$dataset.txt"
    fi
done

# The JSON: the command's context, a row per dataset, and each breakdown as parts and fields.
{
    printf '{"date":"%s","commit":"%s","events":%s,"seed":%s,\n"datasets":[' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(git -C "$REPO_DIR" rev-parse --short HEAD)" \
        "$EVENTS" "$SEED"
    awk -F '\t' '
        function value(v) { return v == "-" ? "null" : v }
        {
            printf "%s\n{\"dataset\":\"%s\",\"events\":%s,\"raw_bytes\":%s,\"input_bytes\":%s,", \
                (NR > 1 ? "," : ""), $1, $2, $3, $4
            printf "\"quarry_bytes\":%s,\"tantivy_bytes\":%s,\"lucene_bytes\":%s,", \
                value($5), value($6), value($7)
            printf "\"victorialogs_bytes\":%s,\"ratio_quarry_victorialogs\":%s}", value($8), \
                ($5 == "-" || $8 == "-" || $8 == 0) ? "null" : sprintf("%.4f", $5 / $8)
        }' "$ROWS"
    printf '],\n"quarry_breakdown":{'
    first=1
    for dataset in $BREAKDOWN; do
        file=$BREAKDOWN_DIR/$dataset.txt
        [[ -f $file ]] || continue
        ((first)) || printf ','
        first=0
        printf '\n"%s":' "$dataset"
        awk '
            /^ *[a-z][a-z ()]*: +[0-9]+ bytes$/ {
                line = $0
                sub(/^ */, "", line)
                split(line, halves, ": *")
                parts = parts (parts == "" ? "" : ",") sprintf("\"%s\":%d", halves[1], halves[2])
                next
            }
            $1 == "field" { in_fields = 1; next }
            in_fields && NF == 9 && $2 ~ /^[0-9]+$/ {
                fields = fields (fields == "" ? "" : ",") sprintf("{\"field\":\"%s\",\"terms\":%s," \
                    "\"term_infos\":%s,\"postings\":%s,\"positions\":%s,\"columns\":%s," \
                    "\"doc_values\":%s,\"norms\":%s,\"total\":%s}", $1, $2, $3, $4, $5, $6, $7, $8, $9)
                next
            }
            { in_fields = 0 }
            END { printf "{\"parts\":{%s},\"fields\":[%s]}", parts, fields }' "$file"
    done
    printf '}}\n'
} >"$RESULTS"
log "wrote $RESULTS"
