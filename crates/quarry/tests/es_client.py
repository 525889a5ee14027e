"""Quarry's bulk API through the official Elasticsearch Python client, and raw requests shaped
like Filebeat's and Vector's. Run by es_client.rs: python3 es_client.py URL. Exits non-zero,
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

# An item error comes back per item: helpers.bulk raises BulkIndexError listing it.
try:
    helpers.bulk(es, [{"_index": "no-such-tenant", "_source": {"message": "x"}}])
    raise AssertionError("expected a BulkIndexError")
except helpers.BulkIndexError as error:
    assert error.errors[0]["index"]["status"] == 404, error.errors

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

print("ok: elasticsearch-py", ".".join(map(str, __import__("elasticsearch").__version__)))
