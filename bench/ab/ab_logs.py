#!/usr/bin/env python3
"""A/B of two quarry builds on the same log requests (bench/logs/PROTOCOL.md), e.g. before and
after a format change: each build answers REQUESTS through `bench-serve --logs` over its own
data directory, ROUNDS times, alternating; answers must be identical; the median engine time
(the protocol's <TAB>NANOS) per request kind is printed with the ratio new/old. The first
quarter of REQUESTS should be a warm-up copy of the rest (it is left out of the figures).

usage: ab_logs.py OLD_QUARRY OLD_DATA NEW_QUARRY NEW_DATA REQUESTS [ROUNDS]
"""
import statistics
import subprocess
import sys


def main():
    old_bin, old_data, new_bin, new_data, requests_path = sys.argv[1:6]
    rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 3
    requests = open(requests_path).read()
    kinds = [line.split("\t")[0] for line in requests.splitlines()]
    warmup = len(kinds) // 5
    builds = {"old": (old_bin, old_data), "new": (new_bin, new_data)}
    times = {name: {} for name in builds}
    answers = {}
    for _ in range(rounds):
        for name, (binary, data) in builds.items():
            out = subprocess.run([binary, "bench-serve", "--logs", "--data", data],
                                 input=requests, capture_output=True, text=True, check=True)
            lines = out.stdout.splitlines()
            assert len(lines) == len(kinds), f"{name}: {len(lines)} answers"
            answer = [line.rsplit("\t", 1)[0] for line in lines]
            assert answers.setdefault(name, answer) == answer, f"{name}: answers changed"
            for i, line in enumerate(lines[warmup:], start=warmup):
                times[name].setdefault(kinds[i], []).append(int(line.rsplit("\t", 1)[1]))
    print("answers identical:", answers["old"] == answers["new"])
    print(f"{'request':<10} {'old us':>10} {'new us':>10} {'new/old':>8}")
    for kind in times["old"]:
        old = statistics.median(times["old"][kind]) / 1000
        new = statistics.median(times["new"][kind]) / 1000
        print(f"{kind:<10} {old:>10.1f} {new:>10.1f} {new / old:>8.2f}")
    if answers["old"] != answers["new"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
