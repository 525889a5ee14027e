"""What a new user of the official Elasticsearch Python client does after indexing: create an
index, check it exists, count, scan every document (scroll), page with a point in time and
search_after, and clear what they opened; on a server with keys, with basic_auth and api_key
as well as a bearer token. Every answer is checked against the documents sent. Run by
es_client.rs: python3 es_client_search.py URL ADMIN_TOKEN. Exits non-zero, with the reason, on
any mismatch."""

import sys

from elasticsearch import Elasticsearch, NotFoundError, BadRequestError, helpers

url, admin = sys.argv[1], sys.argv[2]
es = Elasticsearch(url, bearer_auth=admin, request_timeout=30)

# Indices are tenants: create with a mapping, exists, delete.
assert not es.indices.exists(index="shop-logs")
es.indices.create(
    index="shop-logs",
    settings={"number_of_shards": 1},
    mappings={"properties": {"status": {"type": "long"}}},
)
assert es.indices.exists(index="shop-logs")
assert es.indices.exists(index="default"), "the default tenant is an index"
try:
    es.indices.create(index="shop-logs")
    raise AssertionError("creating an existing index must fail")
except BadRequestError as error:
    assert error.error == "resource_already_exists_exception", error

N = 2345
docs = [
    {
        "_index": "shop-logs",
        "_source": {
            "@timestamp": f"2026-11-20T{i // 3600:02}:{i // 60 % 60:02}:{i % 60:02}Z",
            "message": f"order {i} {'failed' if i % 7 == 0 else 'shipped'}",
            "status": 500 if i % 7 == 0 else 200,
            "seq": i,
        },
    }
    for i in range(N)
]
ok, errors = helpers.bulk(es, docs, chunk_size=400)
assert ok == N and not errors, errors
failed = sum(1 for i in range(N) if i % 7 == 0)

assert es.count(index="shop-logs")["count"] == N
assert es.count(index="shop-logs", q="failed")["count"] == failed
assert es.count(index="shop-logs", query={"term": {"status": 500}})["count"] == failed

# helpers.scan: every document once (a scroll sorted by _doc, 500 a page).
seen = [hit["_source"]["seq"] for hit in helpers.scan(es, index="shop-logs", size=500)]
assert sorted(seen) == list(range(N)), (len(seen), len(set(seen)))
seen = [
    hit["_source"]["seq"]
    for hit in helpers.scan(es, index="shop-logs", query={"query": {"match": {"message": "failed"}}}, size=100)
]
assert sorted(seen) == [i for i in range(N) if i % 7 == 0], len(seen)
# A scroll sorted by a field, and one by relevance, page by page.
for sort in (["seq"], None):
    page = es.search(index="shop-logs", scroll="1m", size=300, sort=sort, query={"match": {"message": "order"}})
    scroll_id, got = page["_scroll_id"], []
    while page["hits"]["hits"]:
        got += [hit["_source"]["seq"] for hit in page["hits"]["hits"]]
        page = es.scroll(scroll_id=scroll_id, scroll="1m")
    assert sorted(got) == list(range(N)), (sort, len(got), len(set(got)))
    if sort:
        assert got == list(range(N)), "in seq order"
    es.clear_scroll(scroll_id=scroll_id)
    try:
        es.scroll(scroll_id=scroll_id, scroll="1m")
        raise AssertionError("a cleared scroll must be gone")
    except NotFoundError:
        pass

# A point in time: events ingested after it opened are not seen; search_after pages through.
pit = es.open_point_in_time(index="shop-logs", keep_alive="1m")["id"]
helpers.bulk(es, [{"_index": "shop-logs", "_source": {"message": "late order", "seq": -1}}])
got, after = [], None
while True:
    extra = {"search_after": after} if after else {}
    page = es.search(pit={"id": pit, "keep_alive": "1m"}, size=1000, sort=[{"@timestamp": "desc"}], **extra)
    hits = page["hits"]["hits"]
    if not hits:
        break
    assert page["pit_id"] == pit
    got += [hit["_source"]["seq"] for hit in hits]
    after = hits[-1]["sort"]
assert sorted(got) == list(range(N)), (len(got), -1 in got)
es.close_point_in_time(id=pit)
assert es.count(index="shop-logs")["count"] == N + 1, "the late order is there for new searches"

# A tenant's key as basic_auth (the password) and as api_key (id, key).
created = es.perform_request(
    "POST", "/api/v1/tenants", headers={"content-type": "application/json"}, body={"name": "shipper"}
).body
key = created["api_key"]
for client in (
    Elasticsearch(url, basic_auth=("shipper", key)),
    Elasticsearch(url, api_key=("any-id", key)),
):
    helpers.bulk(client, [{"_index": "shipper", "_source": {"message": "from a shipper"}}])
    try:
        client.count(index="shop-logs")
        raise AssertionError("a tenant key reads its own tenant only")
    except Exception as error:  # 401
        assert getattr(error, "meta", None) is not None and error.meta.status == 401, error
assert es.count(index="shipper")["count"] == 2

es.indices.delete(index="shop-logs")
assert not es.indices.exists(index="shop-logs")
print("ok")
