#!/usr/bin/env python3
"""What documents by id cost (quarry-server's documents.rs), measured on one build.

Starts `quarry serve` on a fresh data directory and sends the same events through `_bulk`
three ways, timing each: without `_id` (log shipping: no lookups), with a new `_id` each
(Logstash's `document_id`: each batch looks its ids up), and again with the same ids (every
document replaced: each id is listed and resolved by the snapshots). Then times a `_count`,
a `terms` aggregation and a single-document delete followed by a search (a new generation
of listed ids: each block is searched again for the new id only). Prints events/s per way
and the ratio to the first, and the query latencies; checks the counts.

    python3 bench/es-documents.py --quarry target/release/quarry
    EVENTS=50000 python3 bench/es-documents.py --quarry ...   # a quick look

Environment: EVENTS (default 200000), BATCH (default 5000), RUNS timed queries (default 15),
WORK_DIR (default /tmp/quarry-es-documents-bench).
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

EVENTS = int(os.environ.get("EVENTS", "200000"))
BATCH = int(os.environ.get("BATCH", "5000"))
RUNS = int(os.environ.get("RUNS", "15"))
WORK = os.environ.get("WORK_DIR", "/tmp/quarry-es-documents-bench")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(base, method, path, body=None, ndjson=False):
    data = None
    headers = {}
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        headers["Content-Type"] = "application/x-ndjson" if ndjson else "application/json"
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=600) as answer:
        return json.loads(answer.read() or b"null")


def event(i, version):
    return {
        "@timestamp": f"2026-11-20T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z",
        "service": f"svc-{i % 17}",
        "status": 200 + (i * 7 + version) % 5 * 100,
        "message": f"request {i} served in {(i * 31) % 997} ms (version {version})",
    }


def send(base, index, with_ids, version):
    started = time.perf_counter()
    for start in range(0, EVENTS, BATCH):
        lines = []
        for i in range(start, min(start + BATCH, EVENTS)):
            action = {"index": {"_id": f"doc-{i}"}} if with_ids else {"index": {}}
            lines.append(json.dumps(action))
            lines.append(json.dumps(event(i, version)))
        answer = request(base, "POST", f"/{index}/_bulk", "\n".join(lines) + "\n", ndjson=True)
        if answer["errors"]:
            sys.exit(f"bulk errors: {json.dumps(answer)[:500]}")
    return EVENTS / (time.perf_counter() - started)


def timed(base, method, path, body=None):
    times = []
    answer = None
    for _ in range(RUNS):
        started = time.perf_counter()
        answer = request(base, method, path, body)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), answer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quarry", required=True)
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    port = free_port()
    server = subprocess.Popen(
        [args.quarry, "serve", "--data", f"{WORK}/data", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=open(f"{WORK}/serve.log", "w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                request(base, "GET", "/")
                break
            except OSError:
                time.sleep(0.1)
        rates = [
            ("without _id", send(base, "plain", False, 0)),
            ("new _id each", send(base, "docs", True, 0)),
            ("same _id again (replace)", send(base, "docs", True, 1)),
        ]
        print(f"{EVENTS} events in batches of {BATCH}")
        for name, rate in rates:
            print(f"  bulk {name:<26} {rate:>10,.0f} events/s  {rate / rates[0][1]:.2f}x")
        for index in ["plain", "docs"]:
            ms, answer = timed(base, "GET", f"/{index}/_count")
            if answer["count"] != EVENTS:
                sys.exit(f"{index}: count {answer['count']}, expected {EVENTS}")
            print(f"  {index:<6} _count                      {ms:8.2f} ms")
            agg = {"size": 0, "aggs": {"s": {"terms": {"field": "service.keyword", "size": 20}}}}
            ms, answer = timed(base, "POST", f"/{index}/_search", agg)
            total = sum(b["doc_count"] for b in answer["aggregations"]["s"]["buckets"])
            if total != EVENTS:
                sys.exit(f"{index}: terms total {total}, expected {EVENTS}")
            print(f"  {index:<6} terms(service)              {ms:8.2f} ms")
        times = []
        for i in range(RUNS):
            started = time.perf_counter()
            request(base, "DELETE", f"/docs/_doc/doc-{i}")
            request(base, "GET", "/docs/_count")
            times.append((time.perf_counter() - started) * 1000)
        answer = request(base, "GET", "/docs/_count")
        if answer["count"] != EVENTS - RUNS:
            sys.exit(f"after deletes: count {answer['count']}, expected {EVENTS - RUNS}")
        print(f"  docs   delete + _count             {statistics.median(times):8.2f} ms")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
