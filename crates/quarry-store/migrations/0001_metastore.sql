-- Quarry's metastore on PostgreSQL, version 1: the catalogs (one per tenant: settings,
-- blocks, WAL checkpoints) and the tenant registry. Applied by `postgres.rs` (`migrate`) in one
-- transaction under an advisory lock, so nodes starting together apply it once.

-- One row per catalog (a tenant's blocks). `epoch` is the writer's fencing token: opening a
-- catalog for writing increments it, and every commit checks it, so a node that another has
-- taken over can never commit again.
CREATE TABLE quarry_catalogs (
    name          TEXT PRIMARY KEY,
    settings      TEXT   NOT NULL,  -- JSON: stop words and the field mapping
    next_block_id BIGINT NOT NULL CHECK (next_block_id > 0),
    epoch         BIGINT NOT NULL DEFAULT 0
);

-- The committed blocks, in commit order (`seq`), as the local catalog lists them.
CREATE TABLE quarry_blocks (
    catalog   TEXT   NOT NULL REFERENCES quarry_catalogs (name) ON DELETE CASCADE,
    id        BIGINT NOT NULL,
    seq       BIGSERIAL,
    docs      BIGINT NOT NULL,
    time_min  BIGINT NOT NULL,
    time_max  BIGINT NOT NULL,
    bytes     BIGINT NOT NULL,
    open_from BIGINT NOT NULL,
    PRIMARY KEY (catalog, id)
);

-- Per catalog and WAL, the last sequence number whose events are in committed blocks.
CREATE TABLE quarry_wal_checkpoints (
    catalog TEXT   NOT NULL REFERENCES quarry_catalogs (name) ON DELETE CASCADE,
    wal     TEXT   NOT NULL,
    seq     BIGINT NOT NULL,
    PRIMARY KEY (catalog, wal)
);

-- The tenant registry, in registration order (`position`). `spec` is the tenant's JSON
-- (`TenantSpec`); its key is only ever stored as a SHA-256, also kept in its own column.
CREATE TABLE quarry_tenants (
    name       TEXT PRIMARY KEY,
    position   BIGSERIAL,
    key_sha256 TEXT,
    spec       TEXT NOT NULL
);
