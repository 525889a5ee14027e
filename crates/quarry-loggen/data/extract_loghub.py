#!/usr/bin/env python3
"""One-off extraction of the Loghub 2k samples into the small JSON files embedded by quarry-loggen.

Usage: python3 extract_loghub.py LOGHUB_DIR OUT_DIR

For each system, reads <System>_2k.log_templates.csv and <System>_2k.log_structured.csv and
writes OUT_DIR/<system>.json: every template with how often it occurs in the 2k sample, its
level counts, and for each `<*>` slot the most frequent values seen there (at most
MAX_VALUES_PER_SLOT) together with the slot's distinct and total counts, from which the
generator decides how often to make a fresh value instead.

The output is deterministic (templates in EventId order, values by count then first appearance)
so re-running on the same input gives the same bytes. The data is Loghub's (see README.md).
"""

import collections
import csv
import json
import re
import sys

SYSTEMS = "Android BGL HDFS HPC Hadoop Linux OpenSSH Spark Thunderbird Windows Zookeeper".split()
MAX_VALUES_PER_SLOT = 12
MAX_VALUE_CHARS = 200

LEVEL_MAP = {
    "D": "DEBUG", "V": "DEBUG", "DEBUG": "DEBUG", "TRACE": "DEBUG",
    "I": "INFO", "INFO": "INFO",
    "W": "WARN", "WARN": "WARN", "WARNING": "WARN",
    "E": "ERROR", "F": "ERROR", "ERROR": "ERROR", "FATAL": "ERROR", "SEVERE": "ERROR",
    "FAILURE": "ERROR",
}

# Systems whose Level column is missing or says nothing (Linux's is the facility "combo",
# Spark's and Windows' samples are all INFO): levels are inferred from the template's words.
FAILURE_WORDS = re.compile(
    r"error|fail|fatal|exception|denied|refused|invalid|illegal|timeout|timed out|break-in"
    r"|unable|cannot|can't|lost|abort|panic|corrupt|warning|not found|unavailable",
    re.IGNORECASE,
)


def template_regex(template):
    parts = template.split("<*>")
    return re.compile("^" + "(.*?)".join(re.escape(p) for p in parts) + "$", re.S)


def event_key(event_id):
    return int(event_id.lstrip("E"))


def extract(loghub_dir, system):
    base = f"{loghub_dir}/{system}/{system}_2k"
    with open(f"{base}.log_templates.csv", encoding="utf-8", newline="") as f:
        templates = {row["EventId"]: row["EventTemplate"] for row in csv.DictReader(f)}
    with open(f"{base}.log_structured.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))

    mapped_levels = {LEVEL_MAP.get((row.get("Level") or "").upper()) for row in rows}
    informative_levels = None not in mapped_levels and len(mapped_levels) > 1

    counts = collections.Counter()
    levels = collections.defaultdict(collections.Counter)
    slot_values = {}
    regexes = {event_id: template_regex(t) for event_id, t in templates.items()}
    for row in rows:
        event_id = row["EventId"]
        counts[event_id] += 1
        if informative_levels:
            levels[event_id][LEVEL_MAP[row["Level"].upper()]] += 1
        match = regexes[event_id].match(row["Content"])
        if match is None:
            continue
        slots = slot_values.setdefault(
            event_id, [collections.Counter() for _ in range(len(match.groups()))]
        )
        for counter, value in zip(slots, match.groups()):
            counter[value[:MAX_VALUE_CHARS]] += 1

    out = []
    for event_id in sorted(templates, key=event_key):
        template = templates[event_id]
        if informative_levels:
            level_counts = sorted(levels[event_id].items(), key=lambda kv: (-kv[1], kv[0]))
        elif FAILURE_WORDS.search(template):
            level_counts = [("WARN", 3), ("ERROR", 2)]
        else:
            level_counts = [("INFO", 96), ("WARN", 3), ("ERROR", 1)]
        slots = []
        for counter in slot_values.get(event_id, []):
            slots.append({
                "distinct": len(counter),
                "occurrences": sum(counter.values()),
                "values": [[v, c] for v, c in counter.most_common(MAX_VALUES_PER_SLOT)],
            })
        out.append({
            "id": event_id,
            "count": counts[event_id],
            "levels": [[level, count] for level, count in level_counts],
            "template": template,
            "slots": slots,
        })
    return {"system": system, "levels_from_column": informative_levels, "templates": out}


def main():
    loghub_dir, out_dir = sys.argv[1], sys.argv[2]
    for system in SYSTEMS:
        data = extract(loghub_dir, system)
        with open(f"{out_dir}/{system.lower()}.json", "w", encoding="utf-8", newline="\n") as f:
            f.write('{"system":%s,"levels_from_column":%s,"templates":[\n' % (
                json.dumps(data["system"]), json.dumps(data["levels_from_column"])))
            f.write(",\n".join(
                json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in data["templates"]
            ))
            f.write("\n]}\n")


if __name__ == "__main__":
    main()
