"""Quarry's bulk and search APIs through the official Elasticsearch Python client, and raw
requests shaped like Filebeat's and Vector's. Search answers are checked against Quarry's own
query language on the same data. Run by es_client.rs: python3 es_client.py URL. Exits non-zero,
with the reason, on any mismatch."""

import gzip
import json
import sys
import urllib.parse
import urllib.request

from elasticsearch import Elasticsearch, helpers

url = sys.argv[1]


def count(query):
    q = urllib.parse.urlencode({"query": query, "count": "true", "limit": "0"})
    with urllib.request.urlopen(f"{url}/api/v1/default/search?{q}") as answer:
        return json.load(answer)["count"]


def post(path, body, headers):
    request = urllib.request.Request(url + path, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request) as answer:
        return answer.status, json.load(answer)


es = Elasticsearch(url, request_timeout=30)
info = es.info()
assert info["version"]["number"].startswith("8."), info

# helpers.bulk: 2,500 documents in the client's chunks of 500, default index from the action.
actions = (
    {
        "_index": "default",
        "_source": {
            "@timestamp": f"2026-11-23T10:{i // 60 % 60:02}:{i % 60:02}Z",
            "message": f"python client event {i}",
            "client": {"name": "elasticsearch-py", "seq": i},
        },
    }
    for i in range(2500)
)
ok, errors = helpers.bulk(es, actions)
assert ok == 2500 and not errors, (ok, errors)
assert count("python AND client") == 2500, count("python AND client")
assert count("client.seq:>=2000") == 500

# An item error comes back per item: helpers.bulk raises BulkIndexError listing it. (A
# missing index with a valid name is created, as Elasticsearch does; this name is not one.)
try:
    helpers.bulk(es, [{"_index": "Not-A-Valid-Name", "_source": {"message": "x"}}])
    raise AssertionError("expected a BulkIndexError")
except helpers.BulkIndexError as error:
    assert error.errors[0]["index"]["status"] == 400, error.errors

# Filebeat-style: create actions, gzip, application/json with charset.
lines = []
for i in range(100):
    lines.append(json.dumps({"create": {"_index": "default"}}))
    lines.append(json.dumps({"@timestamp": "2026-11-23T11:00:00.000Z", "message": f"filebeat line {i}",
                             "log": {"file": {"path": "/var/log/app.log"}}, "agent": {"type": "filebeat"}}))
status, reply = post("/_bulk", gzip.compress(("\n".join(lines) + "\n").encode()),
                     {"Content-Type": "application/json; charset=UTF-8", "Content-Encoding": "gzip"})
assert status == 200 and reply["errors"] is False, reply
assert count("agent.type:filebeat") == 100

# Vector-style: index actions with _type, application/x-ndjson.
lines = []
for i in range(50):
    lines.append(json.dumps({"index": {"_index": "default", "_type": "_doc"}}))
    lines.append(json.dumps({"timestamp": "2026-11-23T12:00:00Z", "message": f"vector event {i}", "host": "web-1"}))
status, reply = post("/_bulk", ("\n".join(lines) + "\n").encode(), {"Content-Type": "application/x-ndjson"})
assert status == 200 and reply["errors"] is False, reply
assert len(reply["items"]) == 50 and all(item["index"]["status"] == 201 for item in reply["items"])
assert count("vector AND host:web-1") == 50

# Search with the DSL: counts equal the query language's for the same question.
query = {"bool": {"must": [{"match": {"message": "python client"}}],
                  "filter": [{"range": {"client.seq": {"gte": 2000}}}]}}
first = es.search(index="default", query=query, size=5, sort=[{"@timestamp": {"order": "desc"}}])
assert first["hits"]["total"]["value"] == count("(message:python OR message:client) AND client.seq:>=2000") == 500, first["hits"]["total"]
hits = first["hits"]["hits"]
assert len(hits) == 5 and all(h["_index"] == "default" for h in hits), hits
assert [h["_source"]["client"]["seq"] for h in hits] == [2499, 2498, 2497, 2496, 2495], hits
# The next page from the last hit's sort values: no hit twice, still newest first.
second = es.search(index="default", query=query, size=5, sort=[{"@timestamp": {"order": "desc"}}],
                   search_after=hits[-1]["sort"])
assert [h["_source"]["client"]["seq"] for h in second["hits"]["hits"]] == [2494, 2493, 2492, 2491, 2490]
# from/size pages the same way.
paged = es.search(index="default", query=query, size=5, from_=5, sort=[{"@timestamp": "desc"}])
assert [h["_id"] for h in paged["hits"]["hits"]] == [h["_id"] for h in second["hits"]["hits"]]

# Sort by a field, both ways, paged with search_after: every hit once, in order.
for order, want in (("desc", list(range(2499, 2499 - 30, -1))), ("asc", list(range(30)))):
    seen, after = [], None
    while len(seen) < 30:
        page = es.search(index="default", query={"match": {"message": "python"}}, size=7,
                         sort=[{"client.seq": {"order": order}}], **({"search_after": after} if after else {}))
        hits = page["hits"]["hits"]
        seen += [h["_source"]["client"]["seq"] for h in hits]
        assert all(h["sort"][0] == h["_source"]["client"]["seq"] for h in hits), hits
        after = hits[-1]["sort"]
    assert seen[:30] == want, (order, seen)
# Events without the field come last either way (Elasticsearch's "missing": "_last").
last = es.search(index="default", size=1, from_=2649, sort=[{"client.seq": "asc"}])["hits"]["hits"]
assert "client" not in last[0]["_source"] and last[0]["sort"][0] is None, last

# term on a .keyword name, terms and metric aggregations.
reply = es.search(index="default", size=0, query={"term": {"host.keyword": "web-1"}},
                  aggs={"hosts": {"terms": {"field": "host", "size": 5}},
                        "seq": {"stats": {"field": "client.seq"}}})
assert reply["hits"]["total"]["value"] == count('host:="web-1"') == 50, reply["hits"]
assert reply["aggregations"]["hosts"]["buckets"] == [{"key": "web-1", "doc_count": 50}], reply
assert reply["aggregations"]["seq"]["count"] == 0, reply
seq = es.search(index="default", size=0, query={"prefix": {"message": "pyth"}},
                aggs={"seq": {"stats": {"field": "client.seq"}}, "n": {"cardinality": {"field": "client.seq"}}})
stats = seq["aggregations"]["seq"]
assert (stats["count"], stats["min"], stats["max"], stats["sum"]) == (2500, 0, 2499, 2499 * 2500 / 2), stats
assert abs(seq["aggregations"]["n"]["value"] - 2500) <= 2500 * 0.02, seq["aggregations"]

# histogram, range and terms under terms, each with sub-aggregations: every bucket's count
# equals the query language's count of the same question.
reply = es.search(index="default", size=0, query={"match": {"message": "python"}}, aggs={
    "seq": {"histogram": {"field": "client.seq", "interval": 700},
            "aggs": {"top": {"max": {"field": "client.seq"}}}},
    "parts": {"range": {"field": "client.seq", "ranges": [{"to": 100}, {"from": 100, "to": 1000.5}, {"from": 2400}]},
              "aggs": {"s": {"stats": {"field": "client.seq"}}}}})
histogram = [(b["key"], b["doc_count"], b["top"]["value"]) for b in reply["aggregations"]["seq"]["buckets"]]
want = [(k, count(f"python AND client.seq:[{k} TO {k + 700}}}"), min(k + 699, 2499)) for k in (0, 700, 1400, 2100)]
assert histogram == want, (histogram, want)
parts = reply["aggregations"]["parts"]["buckets"]
assert [(b["key"], b["doc_count"]) for b in parts] == [
    ("*-100.0", count("client.seq:<100")), ("100.0-1000.5", count("client.seq:[100 TO 1000.5}")),
    ("2400.0-*", count("client.seq:>=2400"))], parts
assert (parts[1]["s"]["min"], parts[1]["s"]["max"]) == (100, 1000), parts[1]
nested = es.search(index="default", size=0, aggs={
    "agents": {"terms": {"field": "agent.type"},
               "aggs": {"files": {"terms": {"field": "log.file.path"},
                                  "aggs": {"per_hour": {"date_histogram": {"field": "@timestamp", "fixed_interval": "1h"}}}}}}})
agents = nested["aggregations"]["agents"]["buckets"]
assert [(a["key"], a["doc_count"]) for a in agents] == [("filebeat", count("agent.type:filebeat"))], agents
files = agents[0]["files"]["buckets"]
assert [(f["key"], f["doc_count"]) for f in files] == [("/var/log/app.log", 100)], files
assert [(b["key"], b["doc_count"]) for b in files[0]["per_hour"]["buckets"]] == [(1795431600000, 100)], files

# A date_histogram as Grafana's logs and metrics panels ask for it: epoch-millisecond bounds.
start = 1795428000000  # 2026-11-23T10:00:00Z
reply = es.search(index="default", size=0, query={"bool": {"filter": [
    {"range": {"@timestamp": {"gte": start, "lte": start + 3 * 3600 * 1000, "format": "epoch_millis"}}},
    {"query_string": {"analyze_wildcard": True, "query": "*"}}]}},
    aggs={"2": {"date_histogram": {"field": "@timestamp", "fixed_interval": "1h", "min_doc_count": 1,
                                   "extended_bounds": {"min": start, "max": start + 3 * 3600 * 1000},
                                   "format": "epoch_millis"}}})
buckets = [(b["key"], b["doc_count"]) for b in reply["aggregations"]["2"]["buckets"]]
assert buckets == [(start, 2500), (start + 3600000, 100), (start + 7200000, 50)], buckets

# _msearch, and an unknown query type refused with its path.
replies = es.msearch(searches=[{"index": "default"}, {"query": {"match": {"message": "vector"}}, "size": 0},
                               {"index": "default"}, {"query": {"regexp": {"message": "filebe.t"}}, "size": 0}])
assert [r["hits"]["total"]["value"] for r in replies["responses"]] == [50, 100], replies
try:
    es.search(index="default", query={"nope": {}})
    raise AssertionError("expected a BadRequestError")
except Exception as error:  # elasticsearch.BadRequestError
    assert "query.nope" in str(error), error

print("ok: elasticsearch-py", ".".join(map(str, __import__("elasticsearch").__version__)))
