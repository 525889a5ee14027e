-- Quarry's metastore, version 2: the cluster's members. Every node that serves the leaf API
-- with a PostgreSQL metastore registers its endpoint and role and beats every second; a root
-- started with `--peers metastore` searches over the nodes whose beat is recent. Times are
-- the database's clock only (`now()`), so nodes' clocks need not agree.
CREATE TABLE quarry_nodes (
    endpoint  TEXT PRIMARY KEY,  -- the leaf API's URL, http://HOST:PORT
    role      TEXT NOT NULL,     -- all, indexer or searcher
    started   TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat TIMESTAMPTZ NOT NULL DEFAULT now()
);
