-- Quarry's metastore, version 4: a writer that falls silent has its blocks taken over. Each
-- writer of a catalog beats (`seen`) whenever it reads the catalog again (every second while
-- its tenant is open); a live writer takes over the blocks of one silent for longer than the
-- node's `--adopt-after` (an indexer gone for good, or whose tenant is no longer open), in
-- one transaction that deletes the silent writer's row, so that writer, should it be alive
-- after all, is fenced off and opens the catalog again (with no blocks of its own) before it
-- commits anything more. Its WAL checkpoint stays: what it acknowledged and had not published
-- is still published from its WAL when it is back. Taken-over blocks are merged and expired
-- with the taker's own, so a tenant's retention and merging never wait for a dead indexer.
ALTER TABLE quarry_writers ADD COLUMN seen TIMESTAMPTZ NOT NULL DEFAULT now();
