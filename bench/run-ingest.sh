#!/usr/bin/env bash
# Ingest benchmark: generated events (`quarry gen-logs`) pushed over loopback HTTP by concurrent
# clients to Quarry (`quarry serve`), a Lucene peer run like an Elasticsearch shard
# (bench/lucene-ingest) and a tantivy peer that commits before it answers
# (bench/engines/tantivy-ingest), all speaking Elasticsearch's `_bulk`, and to VictoriaLogs
# (built by bench/victorialogs.sh) with its defaults, one event per line on /insert/jsonline.
# For each engine: MB/s and events/s, the same per CPU-second of the server, ack latency per
# request, time to searchable, peak RSS, disk bytes per raw byte; and the machine's fsync/s and
# sequential write MB/s, with how close each engine comes. Prints the table with the
# quarry/lucene, quarry/tantivy and quarry/victorialogs ratios and writes
# bench/results/ingest.json. See bench/README.md, "The ingest benchmark".
#
#   bench/run-ingest.sh
#   EVENTS=100000 bench/run-ingest.sh        # a quick look
#
# Environment:
#   EVENTS       events to send (default: 1000000)
#   CLIENTS      concurrent HTTP clients, one connection each (default: 8)
#   BATCH        events per request (default: 1000)
#   SEED         generator seed (default: 42)
#   WORK_DIR     events, data directories, records (default: /tmp/quarry-ingest-bench); the
#                disk measurements run here too, so put it on the disk to measure
#   ENGINES      engines to run, in order (default: "tantivy lucene victorialogs quarry")
#   QUARRY_FORMATS  Quarry's request formats (default: "bulk ndjson"): bulk is
#                POST /api/v1/default/_bulk, ndjson POST /api/v1/default/ingest
#   MARKER_INTERVAL_MS  a time-to-searchable probe every this many ms (default: 200)
#   DISK_WRITE_BYTES    size of the sequential write test (default: 1073741824, 1 GiB; 0 skips
#                the disk measurements)
#   RESULTS      metric list to write (default: bench/results/ingest.json)
#   QUARRY_BIN   a quarry binary to use instead of building target/release/quarry
#   QUARRY_SERVE_OPTS  more flags for `quarry serve` (default: none), e.g. "--flush-size 128MB"
#   VICTORIALOGS_BIN  a victoria-logs binary to use instead of bench/victorialogs.sh's build
#                ("none": leave VictoriaLogs out)
#   LUCENE_JAVA_HOME  JDK 21+ that builds and runs lucene-ingest (default: Temurin 25 at
#                /usr/lib/jvm/temurin-25-jdk-amd64 if present, else JAVA_HOME, else `java`)
#   LUCENE_JVM_OPTS   JVM flags for lucene-ingest (default: "-Xms4g -Xmx4g
#                --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED")
#
# VictoriaLogs runs as `victoria-logs -storageDataPath=DIR -httpListenAddr=127.0.0.1:PORT
# -retentionPeriod=100y` (PORT a free one; the retention keeps the events, dated 2026-11-01,
# from being dropped as too old), events POSTed to
# /insert/jsonline?_stream_fields=service,host&_msg_field=message&_time_field=_time, markers
# searched with `marker:mN | stats count() as count` on /select/logsql/query. Its answer to an
# insert says nothing per event, so after the timed span the driver counts the stored events
# (`* | stats count()`); any missing are its failed items.
#
# Quarry, Lucene and VictoriaLogs are optional: when quarry does not build, has no `serve`, or
# answers 404 on its ingest endpoint (it has none yet), or lucene-ingest does not build (no JDK
# 21+, no Maven), or there is no victoria-logs binary (no Go to build it), or an engine fails,
# its column is left out and the others still run.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
EVENTS=${EVENTS:-1000000}
CLIENTS=${CLIENTS:-8}
BATCH=${BATCH:-1000}
SEED=${SEED:-42}
WORK_DIR=${WORK_DIR:-/tmp/quarry-ingest-bench}
ENGINES=${ENGINES:-"tantivy lucene victorialogs quarry"}
QUARRY_FORMATS=${QUARRY_FORMATS:-"bulk ndjson"}
MARKER_INTERVAL_MS=${MARKER_INTERVAL_MS:-200}
DISK_WRITE_BYTES=${DISK_WRITE_BYTES:-1073741824}
RESULTS=${RESULTS:-$BENCH_DIR/results/ingest.json}
# Word splitting is wanted: one flag per word.
read -r -a quarry_serve_opts <<<"${QUARRY_SERVE_OPTS:-}"

QUARRY=${QUARRY_BIN:-${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry}
BENCH_BIN=${CARGO_TARGET_DIR:-$BENCH_DIR/target}/release
TANTIVY=$BENCH_BIN/tantivy-ingest
DRIVER=$BENCH_BIN/ingest-driver

LUCENE_POM=$BENCH_DIR/lucene-ingest/pom.xml
LUCENE_JAR=$BENCH_DIR/lucene-ingest/target/lucene-ingest.jar
LUCENE_JVM_OPTS=${LUCENE_JVM_OPTS:-"-Xms4g -Xmx4g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"}

SCRIPT_NAME=run-ingest
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

wants() { [[ " $ENGINES " == *" $1 "* ]]; }

mkdir -p "$WORK_DIR" "$(dirname "$RESULTS")"

# --- builds

quarry_ok=0
quarry_generates=0
if wants quarry || [[ ! -s $WORK_DIR/logs-$EVENTS.json ]]; then
    build_quarry
    if ((quarry_ok)); then
        quarry_help=$("$QUARRY" --help 2>/dev/null || true)
        grep -qE '^\s+gen-logs\b' <<<"$quarry_help" && quarry_generates=1
        if ! grep -qE '^\s+serve\b' <<<"$quarry_help"; then
            warn "quarry has no 'serve' subcommand yet: its figures will be missing"
            quarry_ok=0
        fi
    fi
    wants quarry || quarry_ok=0
fi

log "building the bench workspace (ingest-driver, tantivy-ingest)"
cargo build --release --manifest-path "$BENCH_DIR/Cargo.toml" -p ingest-driver -p tantivy-ingest

lucene_ok=0
if wants lucene; then
    build_lucene "$LUCENE_POM" lucene-ingest
    # Word splitting of the options is wanted: one flag per word.
    read -r -a lucene_java <<<"$LUCENE_JVM_OPTS"
    lucene_java=("$JAVA" "${lucene_java[@]}" -jar "$LUCENE_JAR")
fi

victorialogs_ok=0
wants victorialogs && find_victorialogs

# --- events and the machine's limits

events=$WORK_DIR/logs-$EVENTS.json
if [[ ! -s $events ]]; then
    if ((quarry_generates)); then
        log "generating $EVENTS events (seed $SEED)"
        "$QUARRY" gen-logs --events "$EVENTS" --seed "$SEED" --start 2026-11-01T00:00:00Z \
            --output "$events.tmp"
        mv "$events.tmp" "$events"
    else
        warn "no $events and no 'quarry gen-logs' to write it"
        exit 1
    fi
fi

disk_record=()
if ((DISK_WRITE_BYTES > 0)); then
    log "the disk under $WORK_DIR: fsync/s (append 4 KiB + fdatasync, 3 s), sequential write of $DISK_WRITE_BYTES bytes"
    if "$DRIVER" disk --dir "$WORK_DIR/disk-probe" --write-bytes "$DISK_WRITE_BYTES" \
        --json "$WORK_DIR/disk.json" >&2; then
        disk_record=(--disk "$WORK_DIR/disk.json")
    else
        warn "the disk measurements failed: the table will not compare with them"
    fi
    rm -rf "$WORK_DIR/disk-probe"
fi

# --- runs

records=()
# run_engine NAME FORMAT DATA-DIR DRIVER-OPTIONS... -- ENGINE-COMMAND...: one fresh engine
# process on an empty data directory. Returns the driver's status (4: no such endpoint).
run_engine() {
    local engine=$1 format=$2 data=$3
    shift 3
    local out=$WORK_DIR/$engine-$format.json
    rm -rf "$data" "$out"
    # The previous engine's dirty pages go to disk before this one starts, not during its run.
    sync
    log "$engine ($format): $EVENTS events, $CLIENTS clients, $BATCH events per request"
    local status=0
    "$DRIVER" run --events "$events" --engine "$engine" --format "$format" --clients "$CLIENTS" \
        --batch "$BATCH" --marker-interval-ms "$MARKER_INTERVAL_MS" --data "$data" \
        --json "$out.tmp" "$@" >/dev/null || status=$?
    if ((status == 0)); then
        mv "$out.tmp" "$out"
        cat "$out" >&2
        records+=("$out")
    else
        rm -f "$out.tmp"
    fi
    return "$status"
}

for engine in $ENGINES; do
    case $engine in
    tantivy)
        run_engine tantivy bulk "$WORK_DIR/tantivy-data" -- \
            "$TANTIVY" --index "$WORK_DIR/tantivy-data" ||
            warn "tantivy failed: its figures will be missing"
        ;;
    lucene)
        if ((lucene_ok)); then
            run_engine lucene bulk "$WORK_DIR/lucene-data" -- \
                "${lucene_java[@]}" --data "$WORK_DIR/lucene-data" ||
                warn "lucene failed: its figures will be missing"
        fi
        ;;
    victorialogs)
        ((victorialogs_ok)) || continue
        port=$(free_port)
        # victoria-logs prints no `listening on http://ADDR` line on stdout: a shell prints it
        # for the driver, then becomes the server (exec, same pid), and the driver waits for
        # /health to answer 200.
        # shellcheck disable=SC2016 # $1 and $@ are the inner shell's
        run_engine victorialogs jsonline "$WORK_DIR/victorialogs-data" \
            --ingest-path '/insert/jsonline?_stream_fields=service,host&_msg_field=message&_time_field=_time' \
            --search-path '/select/logsql/query?query=marker:{marker}%20%7C%20stats%20count()%20as%20count' \
            --count-path '/select/logsql/query?query=*%20%7C%20stats%20count()%20as%20count' \
            --ready-path /health -- \
            sh -c 'echo "victoria-logs listening on http://$1"; shift; exec "$@"' sh \
            "127.0.0.1:$port" "$VICTORIALOGS" -storageDataPath="$WORK_DIR/victorialogs-data" \
            -httpListenAddr="127.0.0.1:$port" -retentionPeriod=100y ||
            warn "victorialogs failed: its figures will be missing"
        ;;
    quarry)
        ((quarry_ok)) || continue
        for format in $QUARRY_FORMATS; do
            case $format in
            bulk) path=/api/v1/default/_bulk ;;
            ndjson) path=/api/v1/default/ingest ;;
            *)
                warn "unknown format $format in QUARRY_FORMATS (bulk, ndjson)"
                continue
                ;;
            esac
            status=0
            run_engine quarry "$format" "$WORK_DIR/quarry-data" --ingest-path "$path" \
                --search-path '/api/v1/default/search?query=marker:{marker}&count=true&limit=0' \
                --ready-path /health/ready -- \
                "$QUARRY" serve --data "$WORK_DIR/quarry-data" --listen 127.0.0.1:0 \
                "${quarry_serve_opts[@]}" || status=$?
            if ((status == 4)); then
                warn "quarry serve answers 404 on $path or on search: no ingest endpoint in this build yet, skipping quarry ($format)"
            elif ((status != 0)); then
                warn "quarry ($format) failed: its figures will be missing"
            fi
        done
        ;;
    *) warn "unknown engine $engine in ENGINES (tantivy, lucene, victorialogs, quarry)" ;;
    esac
done

if ((${#records[@]} == 0)); then
    warn "no engine ran"
    exit 1
fi
log "results (MB = 10^6 bytes of event JSON; time to searchable from the start of the marker's send; ratio quarry/peer)"
"$DRIVER" report --subject quarry --baseline lucene,tantivy,victorialogs "${disk_record[@]}" \
    --out "$RESULTS" "${records[@]}"
echo
echo "wrote $RESULTS"
