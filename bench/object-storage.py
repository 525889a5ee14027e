#!/usr/bin/env python3
"""Object-storage benchmark (issue 28): the same events served by `quarry serve` from the
local disk and from an S3-compatible store (a SeaweedFS on loopback), with and without added
latency that models a cloud store, asked the same five queries over HTTP.

For each query and configuration it prints the latency (median of the warm runs; the cold
run alone), and for object storage the GET requests and bytes each run fetched (from
/metrics). Cold = the first run after a start with an empty cache directory (the start itself
opened every block: one ranged read of its end each, reported as "open"); warm = the same
query again; restarted = the first run after the server is restarted on the same cache
directory (what the disk cache keeps across restarts). Run through bench/run-object-storage.sh, which builds what it needs.
"""

import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

QUARRY = os.environ["QUARRY_BIN"]
WEED = os.environ["WEED_BIN"]
WORK = os.environ["WORK_DIR"]
EVENTS = int(os.environ.get("EVENTS", "1000000"))
LATENCIES = [int(x) for x in os.environ.get("LATENCIES", "0 30").split()]
REPEAT = int(os.environ.get("REPEAT", "7"))
RESULTS = os.environ.get("RESULTS", "")

ACCESS, SECRET = "quarry-bench", "quarry-bench-secret"

QUERIES = [
    ("tail-100 of a word", {"query": "failed", "sort": "time_desc", "limit": "100"}),
    ("count of a phrase", {"query": '"failed password"', "limit": "0", "count": "true"}),
    ("histogram of a field value", {"query": "service:nginx", "limit": "0", "histogram": "1h"}),
    ("terms(host, 10)", {"query": "*", "limit": "0", "aggs": "terms(host,10)"}),
    ("BM25 top 10, two words", {"query": "failed password", "sort": "relevance", "limit": "10"}),
]


def free_port():
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 55535:
            return port


def start_seaweedfs(directory):
    os.makedirs(directory, exist_ok=True)
    config = os.path.join(directory, "s3.json")
    with open(config, "w") as f:
        json.dump({"identities": [{"name": "bench", "credentials": [
            {"accessKey": ACCESS, "secretKey": SECRET}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
    data = os.path.join(directory, "data")
    os.makedirs(data, exist_ok=True)
    s3 = free_port()
    args = [WEED, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3",
            f"-s3.port={s3}", f"-s3.config={config}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-volume.max=0", "-master.volumeSizeLimitMB=1024"]
    for name in ["master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
                 "filer.port", "filer.port.grpc", "s3.port.grpc"]:
        args.append(f"-{name}={free_port()}")
    log = open(os.path.join(directory, "weed.log"), "w")
    process = subprocess.Popen(args, stdout=log, stderr=log)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", s3, timeout=2)
            connection.request("GET", "/")
            if connection.getresponse().status == 403:
                return process, f"http://127.0.0.1:{s3}"
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit("SeaweedFS did not start; see " + log.name)


def env_for(endpoint):
    env = dict(os.environ)
    env.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": ACCESS,
                "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1"})
    return env


def run(args, env=None):
    started = time.time()
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.time() - started


class Server:
    def __init__(self, data, extra, env):
        self.port = free_port()
        args = [QUARRY, "serve", "--data", data, "--listen", f"127.0.0.1:{self.port}",
                "--memory-limit", "4GB", "--flush-interval", "3600"] + extra
        started = time.time()
        self.process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.process.stdout.readline()  # "quarry listening on ..." once blocks are open
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        self.ready_seconds = time.time() - started

    def get(self, target):
        self.connection.request("GET", target)
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise SystemExit(f"{target}: {response.status} {body[:300]!r}")
        return body

    def object_counters(self):
        text = self.get("/metrics").decode()
        counters = {}
        for name in ["gets", "fetched_bytes"]:
            match = re.search(rf"^quarry_object_store_{name}_total (\d+)", text, re.M)
            counters[name] = int(match.group(1)) if match else 0
        return counters

    def query(self, params):
        target = "/api/v1/default/search?" + urllib.parse.urlencode(params)
        before = self.object_counters()
        started = time.perf_counter()
        body = json.loads(self.get(target))
        seconds = time.perf_counter() - started
        after = self.object_counters()
        if body.get("partial"):
            raise SystemExit(f"partial answer: {body.get('warnings')}")
        answer = (body.get("count"), len(body.get("hits", [])),
                  sum(b.get("count", 0) for b in (body.get("histogram") or [])),
                  json.dumps(body.get("aggregations"), sort_keys=True))
        return seconds, after["gets"] - before["gets"], \
            after["fetched_bytes"] - before["fetched_bytes"], answer

    def stop(self):
        self.process.terminate()
        self.process.wait()


def block_bytes(data):
    with open(os.path.join(data, "catalog.json")) as f:
        blocks = json.load(f)["blocks"]
    return len(blocks), sum(b["bytes"] for b in blocks)


def main():
    os.makedirs(WORK, exist_ok=True)
    events = os.path.join(WORK, f"logs-{EVENTS}.json")
    if not os.path.exists(events):
        print(f"generating {EVENTS} events into {events}", file=sys.stderr)
        with open(events + ".tmp", "w") as out:
            subprocess.run([QUARRY, "gen-logs", "--events", str(EVENTS)], check=True,
                           stdout=out)
        os.rename(events + ".tmp", events)
    scratch = tempfile.mkdtemp(prefix="quarry-object-bench-", dir=WORK)
    weed, endpoint = start_seaweedfs(os.path.join(scratch, "weed"))
    env = env_for(endpoint)
    try:
        local = os.path.join(scratch, "local")
        remote = os.path.join(scratch, "remote")
        url = f"s3://quarry/bench-{EVENTS}"
        index_local = run([QUARRY, "index", "--data", local, events])
        index_remote = run([QUARRY, "index", "--data", remote, "--storage", url, events], env)
        blocks, stored = block_bytes(local)
        remote_blocks, remote_stored = block_bytes(remote)
        print(f"{EVENTS} events: local {blocks} blocks, {stored / 1e6:.1f} MB, indexed in "
              f"{index_local:.1f} s; object storage {remote_blocks} blocks, "
              f"{remote_stored / 1e6:.1f} MB, indexed and uploaded in {index_remote:.1f} s")

        rows = {name: {} for name, _ in QUERIES}
        answers = {}
        # Local disk, warm: one untimed run, then REPEAT.
        server = Server(local, [], env)
        for name, params in QUERIES:
            _, _, _, answers[name] = server.query(params)
            times = [server.query(params)[0] for _ in range(REPEAT)]
            rows[name]["local warm ms"] = statistics.median(times) * 1e3
        server.stop()

        for latency in LATENCIES:
            label = f"S3 +{latency} ms" if latency else "S3 loopback"
            for name, params in QUERIES:
                cache = os.path.join(scratch, f"cache-{latency}-{len(rows[name])}")
                shutil.rmtree(cache, ignore_errors=True)
                extra = ["--storage", url, "--cache-dir", cache]
                if latency:
                    extra += ["--object-latency", str(latency)]
                server = Server(remote, extra, env)
                opened = server.object_counters()
                cold, gets, fetched, answer = server.query(params)
                if answer != answers[name]:
                    raise SystemExit(f"{name}: {label} answered {answer}, local {answers[name]}")
                warm = []
                warm_gets = 0
                for _ in range(REPEAT):
                    seconds, g, _, _ = server.query(params)
                    warm.append(seconds)
                    warm_gets += g
                server.stop()
                ready = server.ready_seconds
                # Restarted on the same cache directory: what the disk cache saves.
                server = Server(remote, extra, env)
                reopened = server.object_counters()
                first, first_gets, _, answer = server.query(params)
                if answer != answers[name]:
                    raise SystemExit(f"{name}: {label} restarted answered {answer}")
                server.stop()
                row = rows[name]
                row[f"{label} restart open s"] = server.ready_seconds
                row[f"{label} restart open GETs"] = reopened["gets"]
                row[f"{label} restart first ms"] = first * 1e3
                row[f"{label} restart first GETs"] = first_gets
                row[f"{label} open s"] = ready
                row[f"{label} open GETs"] = opened["gets"]
                row[f"{label} cold ms"] = cold * 1e3
                row[f"{label} cold GETs"] = gets
                row[f"{label} cold MB"] = fetched / 1e6
                row[f"{label} warm ms"] = statistics.median(warm) * 1e3
                row[f"{label} warm GETs"] = warm_gets / REPEAT
        print()
        for name, _ in QUERIES:
            row = rows[name]
            local_ms = row["local warm ms"]
            parts = [f"local warm {local_ms:.2f} ms"]
            for latency in LATENCIES:
                label = f"S3 +{latency} ms" if latency else "S3 loopback"
                parts.append(
                    f"{label}: cold {row[label + ' cold ms']:.1f} ms "
                    f"({row[label + ' cold ms'] / local_ms:.1f}x, {row[label + ' cold GETs']} GETs, "
                    f"{row[label + ' cold MB']:.2f} MB), warm {row[label + ' warm ms']:.2f} ms "
                    f"({row[label + ' warm ms'] / local_ms:.2f}x, "
                    f"{row[label + ' warm GETs']:.1f} GETs), restarted on its disk cache "
                    f"{row[label + ' restart first ms']:.2f} ms "
                    f"({row[label + ' restart first GETs']} GETs)")
            print(f"{name}: " + "; ".join(parts))
        for latency in LATENCIES:
            label = f"S3 +{latency} ms" if latency else "S3 loopback"
            opens = [rows[name][label + " open s"] for name, _ in QUERIES]
            gets = rows[QUERIES[0][0]][label + " open GETs"]
            restarts = [rows[name][label + " restart open s"] for name, _ in QUERIES]
            restart_gets = rows[QUERIES[0][0]][label + " restart open GETs"]
            print(f"{label}: start (opening {remote_blocks} blocks) {statistics.median(opens):.2f} s, "
                  f"{gets} GETs; restarted on its disk cache {statistics.median(restarts):.2f} s, "
                  f"{restart_gets} GETs")
        if RESULTS:
            with open(RESULTS, "w") as f:
                json.dump({"events": EVENTS, "blocks": blocks, "stored_bytes": stored,
                           "rows": rows}, f, indent=2)
    finally:
        weed.terminate()
        weed.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
