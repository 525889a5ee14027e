#!/usr/bin/env bash
# Cluster benchmark: a Quarry cluster on one machine (PostgreSQL metastore, SeaweedFS's S3
# gateway, one indexer, searchers at --object-latency 30) with 1 searcher against 3: the
# generated events ingested over HTTP and published, then a tail, a phrase count, a histogram,
# a terms aggregation and a BM25 top 10 asked of the first searcher (the root, which deals the
# published blocks to the searchers). Prints each query's cold and warm latency, the
# throughput of concurrent clients (from cold caches, then warm), the ratios 3/1, and the GETs
# and bytes each searcher fetched. See bench/cluster-searchers.py.
#
#   bench/run-cluster-searchers.sh                  # 1M events
#   EVENTS=100000 THROUGHPUT_SECONDS=5 bench/run-cluster-searchers.sh
#
# Environment: EVENTS (default 1000000), SEARCHERS (default "1 3"), LATENCY (the searchers'
# --object-latency in ms, default 30), BANDWIDTH (each searcher's --object-bandwidth, a link
# its reads share, e.g. 50MB; default none), REPEAT (warm runs, default 7), CLIENTS (default 4),
# THROUGHPUT_SECONDS (each throughput window, default 15), INDEXER_ARGS (more flags for the
# indexer), WORK_DIR (default /tmp/quarry-cluster-bench: generated events are kept there; the object
# storage benchmark's /tmp/quarry-object-bench/logs-N.json is reused if present), PG_BIN
# (default /usr/lib/postgresql/15/bin), RESULTS (a JSON file for the figures), KEEP_SCRATCH=1
# (keep the run's directories and logs), QUARRY_BIN (default: builds target/release/quarry).
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
if [[ -z ${QUARRY_BIN:-} ]]; then
    cargo build --release -p quarry --manifest-path "$REPO_DIR/Cargo.toml" >&2
    QUARRY_BIN=${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/quarry
fi
WEED_BIN=$(bash "$REPO_DIR/.ci/seaweedfs.sh")
export QUARRY_BIN WEED_BIN
export WORK_DIR=${WORK_DIR:-/tmp/quarry-cluster-bench}
exec python3 "$BENCH_DIR/cluster-searchers.py"
