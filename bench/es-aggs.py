#!/usr/bin/env python3
"""A Grafana dashboard's Elasticsearch aggregations against two Quarry builds on the same data.

Generates events (`quarry gen-logs`), indexes them once per build (`quarry index`), starts
`quarry serve` on each data directory in turn and sends each panel's `_search` request (the
shapes Grafana's Elasticsearch data source sends: terms -> date_histogram -> avg, and the
like), timing each answer. Prints the median and p90 per panel for both builds and the ratio,
and checks that both builds give the same buckets.

    python3 bench/es-aggs.py --before OLD/quarry --after NEW/quarry
    EVENTS=100000 python3 bench/es-aggs.py --before ... --after ...   # a quick look

Environment: EVENTS (default 1000000), RUNS timed requests per panel (default 15),
WORK_DIR (default /tmp/quarry-es-aggs-bench).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

START = "2026-11-20T00:00:00Z"
END = "2026-11-21T00:00:00Z"
FROM_MS = 1_795_132_800_000  # START
TO_MS = FROM_MS + 86_400_000

RANGE = {"range": {"@timestamp": {"gte": FROM_MS, "lte": TO_MS, "format": "epoch_millis"}}}
QUERY = {"bool": {"filter": [RANGE, {"query_string": {"analyze_wildcard": True, "query": "*"}}]}}


def histogram(interval):
    return {
        "field": "@timestamp",
        "fixed_interval": interval,
        "min_doc_count": 0,
        "extended_bounds": {"min": FROM_MS, "max": TO_MS},
        "format": "epoch_millis",
    }


PANELS = {
    # The dashboard panel: average latency per service over time.
    "terms(service) > date_histogram(10m) > avg": {
        "3": {
            "terms": {"field": "service", "size": 10, "order": {"_key": "desc"}, "min_doc_count": 1},
            "aggs": {"2": {"date_histogram": histogram("10m"), "aggs": {"1": {"avg": {"field": "latency_ms"}}}}},
        }
    },
    "terms(host, 10) > date_histogram(1h) > avg, max": {
        "3": {
            "terms": {"field": "host", "size": 10, "order": {"_count": "desc"}, "min_doc_count": 1},
            "aggs": {
                "2": {
                    "date_histogram": histogram("1h"),
                    "aggs": {"1": {"avg": {"field": "latency_ms"}}, "4": {"max": {"field": "latency_ms"}}},
                }
            },
        }
    },
    # The same over every host (50): a search per bucket costs more the more buckets.
    "terms(host, 50) > date_histogram(10m) > avg": {
        "3": {
            "terms": {"field": "host", "size": 50, "order": {"_count": "desc"}, "min_doc_count": 1},
            "aggs": {"2": {"date_histogram": histogram("10m"), "aggs": {"1": {"avg": {"field": "latency_ms"}}}}},
        }
    },
    "date_histogram(1m) > percentiles": {
        "2": {
            "date_histogram": histogram("1m"),
            "aggs": {"1": {"percentiles": {"field": "latency_ms", "percents": ["25", "50", "75", "95", "99"]}}},
        }
    },
    "terms(level) > terms(service, 5)": {
        "3": {
            "terms": {"field": "level", "size": 10, "order": {"_count": "desc"}, "min_doc_count": 1},
            "aggs": {"2": {"terms": {"field": "service", "size": 5, "order": {"_count": "desc"}, "min_doc_count": 1}}},
        }
    },
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.loads(answer.read())


def serve(binary, data):
    port = free_port()
    process = subprocess.Popen(
        [binary, "serve", "--data", data, "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            return process, port
        except Exception:
            time.sleep(0.1)
    process.kill()
    sys.exit(f"{binary} serve did not start")


def strip(value):
    """The aggregations without what may differ between builds (key_as_string's text)."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k != "key_as_string"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


def measure(binary, data, runs):
    process, port = serve(binary, data)
    results = {}
    try:
        for name, aggs in PANELS.items():
            body = {"size": 0, "query": QUERY, "aggs": aggs}
            answer = post(port, "/default/_search", body)  # warm-up
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                post(port, "/default/_search", body)
                times.append(time.perf_counter() - started)
            times.sort()
            results[name] = (times, strip(answer.get("aggregations")), answer["hits"]["total"]["value"])
    finally:
        process.terminate()
        process.wait()
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    args = parser.parse_args()
    events = int(os.environ.get("EVENTS", "1000000"))
    runs = int(os.environ.get("RUNS", "15"))
    work = os.environ.get("WORK_DIR", "/tmp/quarry-es-aggs-bench")
    os.makedirs(work, exist_ok=True)
    logs = os.path.join(work, f"events-{events}.jsonl")
    if not os.path.exists(logs):
        subprocess.run([args.after, "gen-logs", "--events", str(events), "--start", START, "--end", END,
                        "--hosts", "50", "-o", logs], check=True)
    measured = {}
    for label, binary in (("before", args.before), ("after", args.after)):
        data = os.path.join(work, f"data-{label}-{events}")
        if not os.path.exists(data):
            subprocess.run([binary, "index", "--data", data, logs], check=True, stdout=subprocess.DEVNULL)
        measured[label] = measure(binary, data, runs)
    print(f"{events} events, {runs} timed runs per panel (after one warm-up)")
    print(f"{'panel':<48} {'before ms (median / p90)':>26} {'after ms (median / p90)':>25} {'ratio':>7}")
    for name in PANELS:
        before, before_aggs, before_total = measured["before"][name]
        after, after_aggs, after_total = measured["after"][name]
        p90 = lambda t: t[min(len(t) - 1, int(len(t) * 0.9))]
        b, a = statistics.median(before) * 1e3, statistics.median(after) * 1e3
        same = "same answer" if before_aggs == after_aggs and before_total == after_total else "ANSWERS DIFFER"
        print(f"{name:<48} {b:>12.1f} / {p90(before) * 1e3:>9.1f} {a:>12.1f} / {p90(after) * 1e3:>9.1f} {b / a:>6.1f}x  {same}")


if __name__ == "__main__":
    main()
