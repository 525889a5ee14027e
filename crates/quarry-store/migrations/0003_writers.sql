-- Quarry's metastore, version 3: several indexers write one tenant. A catalog had one writer,
-- fenced by `quarry_catalogs.epoch`; now each writer (an indexer's data directory: its WAL for
-- the tenant) has its own fencing token, so indexers write side by side and only a second
-- process on the same WAL (a node restarted while its old self still runs) is fenced off.
-- Each block names the writer that committed it: a writer flushes, merges and expires only its
-- own blocks, so its view of them is exact without reading the others', and a root knows which
-- blocks an indexer answering for them covers. Blocks committed before this version belong to
-- the writer '' (no indexer), so searchers serve them.
CREATE TABLE quarry_writers (
    catalog TEXT   NOT NULL REFERENCES quarry_catalogs (name) ON DELETE CASCADE,
    writer  TEXT   NOT NULL,
    epoch   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (catalog, writer)
);

ALTER TABLE quarry_blocks ADD COLUMN writer TEXT NOT NULL DEFAULT '';
CREATE INDEX quarry_blocks_by_writer ON quarry_blocks (catalog, writer);

-- Superseded by `quarry_writers.epoch`.
ALTER TABLE quarry_catalogs DROP COLUMN epoch;

-- A member's node: its data directory's id. A node restarted at another address replaces its
-- old row instead of leaving it behind as a member that stopped beating (which roots report
-- as missing: an indexer's unpublished events are in its WAL only).
ALTER TABLE quarry_nodes ADD COLUMN node TEXT NOT NULL DEFAULT '';

-- Tenant traffic control (LogStore §4.1): where a tenant's ingest goes. Each member beats with
-- its HTTP API's URL (where ingest is forwarded) and, for an indexer, the ingest rate it
-- takes (bytes/s); each indexer reports the rate it took per tenant; one node at a time (the
-- holder of the `router` lease) plans the routes by maximum flow and stores them; every node
-- routes ingest by the stored routes.
ALTER TABLE quarry_nodes ADD COLUMN http TEXT NOT NULL DEFAULT '';
ALTER TABLE quarry_nodes ADD COLUMN capacity BIGINT NOT NULL DEFAULT 0;

CREATE TABLE quarry_ingest_rates (
    node   TEXT   NOT NULL,  -- quarry_nodes.node
    tenant TEXT   NOT NULL,
    rate   BIGINT NOT NULL,  -- bytes/s, smoothed
    at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (node, tenant)
);

-- The routing table: one row, replaced whole by the planner.
CREATE TABLE quarry_routing (
    one     BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    version BIGINT NOT NULL,
    routes  TEXT   NOT NULL,  -- JSON: {"tenant": [{"indexer": URL, "rate": bytes/s}, ...]}
    planned TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Leases: a job one node at a time does (the router's planning), held by renewing it before
-- `until`; a holder that stops renewing loses it to the next node that asks.
CREATE TABLE quarry_leases (
    name   TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until  TIMESTAMPTZ NOT NULL
);
