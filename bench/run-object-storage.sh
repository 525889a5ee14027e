#!/usr/bin/env bash
# Object-storage benchmark (issue 28): `quarry serve` over the same generated events from the
# local disk and from SeaweedFS's S3 gateway on loopback, with and without added latency that
# models a cloud store (--object-latency: a first-byte wait per batch of GETs and 100 MB/s),
# asked a tail, a phrase count, a histogram, a terms aggregation and a BM25 top 10. Prints the
# latencies (local warm; object storage cold, warm, and restarted on its disk cache) with their
# ratios, and the GETs and bytes each run fetched. See bench/object-storage.py.
#
#   bench/run-object-storage.sh                 # 1M events
#   EVENTS=10000000 bench/run-object-storage.sh
#
# Environment: EVENTS (default 1000000), LATENCIES (ms, default "0 30"), REPEAT (warm runs,
# default 7), WORK_DIR (default /tmp/quarry-object-bench: generated events are kept there),
# RESULTS (a JSON file for the figures), QUARRY_BIN (default: builds target/release/quarry).
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
if [[ -z ${QUARRY_BIN:-} ]]; then
    cargo build --release -p quarry --manifest-path "$REPO_DIR/Cargo.toml" >&2
    QUARRY_BIN=${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry
fi
WEED_BIN=$(bash "$REPO_DIR/.ci/seaweedfs.sh")
export QUARRY_BIN WEED_BIN
export WORK_DIR=${WORK_DIR:-/tmp/quarry-object-bench}
exec python3 "$BENCH_DIR/object-storage.py"
