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

# Documents by id: update (a partial doc, an upsert, a no-op), and helpers.bulk with update
# actions; each read back.
es.index(index="carts", id="c1", document={"user": "ann", "items": 1, "meta": {"a": 1}})
reply = es.update(index="carts", id="c1", doc={"items": 2, "meta": {"b": 2}}, source=True)
assert reply["result"] == "updated" and reply["_version"] == 2, reply
assert reply["get"]["_source"] == {"user": "ann", "items": 2, "meta": {"a": 1, "b": 2}}, reply
assert es.update(index="carts", id="c1", doc={"items": 2})["result"] == "noop"
assert es.update(index="carts", id="c2", doc={"items": 5}, upsert={"user": "bob", "items": 0})["result"] == "created"
try:
    es.update(index="carts", id="c3", doc={"items": 1})
    raise AssertionError("an update of a missing document without an upsert is a 404")
except NotFoundError as error:
    assert error.error == "document_missing_exception", error
ok, errors = helpers.bulk(
    es,
    [
        {"_op_type": "update", "_index": "carts", "_id": "c1", "doc": {"items": 3}},
        {"_op_type": "update", "_index": "carts", "_id": "c4", "doc": {"user": "cy"}, "doc_as_upsert": True},
    ],
)
assert ok == 2 and not errors, errors
assert es.get(index="carts", id="c1")["_source"]["items"] == 3
assert es.get(index="carts", id="c2")["_source"] == {"user": "bob", "items": 0}
assert es.get(index="carts", id="c4")["_source"] == {"user": "cy"}
assert es.count(index="carts")["count"] == 3

# Sliced scrolls: the slices hold every document of shop-logs once; more slices than
# index.max_slices_per_scroll is refused until the setting allows them.
seen = []
for slice_id in range(3):
    page = es.search(index="shop-logs", scroll="1m", size=400, slice={"id": slice_id, "max": 3})
    while page["hits"]["hits"]:
        seen += [hit["_source"]["seq"] for hit in page["hits"]["hits"]]
        page = es.scroll(scroll_id=page["_scroll_id"], scroll="1m")
    es.clear_scroll(scroll_id=page["_scroll_id"])
assert sorted(seen) == sorted([-1] + list(range(N))), (len(seen), len(set(seen)))
try:
    es.search(index="shop-logs", scroll="1m", slice={"id": 0, "max": 2000})
    raise AssertionError("2000 slices is over the default 1024")
except BadRequestError:
    pass
es.indices.put_settings(index="shop-logs", settings={"index": {"max_slices_per_scroll": 2000}})
es.clear_scroll(scroll_id=es.search(index="shop-logs", scroll="1m", slice={"id": 0, "max": 2000})["_scroll_id"])

# A filtered alias counts and searches what its filter matches.
es.indices.put_alias(index="shop-logs", name="failures", filter={"match": {"message": "failed"}})
failed = es.count(index="shop-logs", query={"match": {"message": "failed"}})["count"]
assert 0 < failed < N
assert es.count(index="failures")["count"] == failed
assert es.search(index="failures", size=0, track_total_hits=True)["hits"]["total"]["value"] == failed
assert es.indices.get_alias(index="shop-logs", name="failures")["shop-logs"]["aliases"]["failures"]["filter"] == {
    "match": {"message": "failed"}
}

es.indices.delete(index="shop-logs")
assert not es.indices.exists(index="shop-logs")
print("ok")
