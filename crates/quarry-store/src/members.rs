//! The cluster's members in the PostgreSQL metastore (`quarry_nodes`, migration 0002): every
//! node that serves the leaf API registers its endpoint and role and beats every second; a
//! root lists the nodes whose last beat is recent. No consensus: the database's clock and
//! rows are the only shared state, and a node that stops beating simply drops out of the
//! list (a root that meets it dead before then deals its share to the others).

use crate::catalog::Result;
use crate::postgres::Postgres;
use std::sync::Arc;
use std::time::Duration;

/// The membership table of one metastore.
#[derive(Clone, Debug)]
pub struct Members {
    postgres: Arc<Postgres>,
}

/// A member: its leaf API's URL and its role (`all`, `indexer`, `searcher`), its HTTP API's
/// URL and the ingest rate it takes (bytes/s; 0 for a searcher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub endpoint: String,
    pub role: String,
    pub http: String,
    pub capacity: u64,
}

/// What a member says of itself each beat.
#[derive(Debug, Clone, Copy)]
pub struct Beat<'a> {
    /// The leaf API's URL (the member's key).
    pub endpoint: &'a str,
    pub role: &'a str,
    /// The data directory's id: a restart at another address replaces the old row.
    pub node: &'a str,
    /// The HTTP API's URL ('' when not known).
    pub http: &'a str,
    /// Ingest bytes/s it takes (an indexer's; 0 otherwise).
    pub capacity: u64,
}

fn member(row: &::postgres::Row) -> Member {
    Member {
        endpoint: row.get(0),
        role: row.get(1),
        http: row.get(2),
        capacity: u64::try_from(row.get::<_, i64>(3)).unwrap_or(0),
    }
}

impl Members {
    pub fn new(postgres: Arc<Postgres>) -> Members {
        Members { postgres }
    }

    /// Registers a member (replacing a row its node left at another address), or renews
    /// its beat.
    pub fn beat(&self, beat: &Beat<'_>) -> Result<()> {
        let (endpoint, role, node, http) = (
            beat.endpoint.to_owned(),
            beat.role.to_owned(),
            beat.node.to_owned(),
            beat.http.to_owned(),
        );
        let capacity = i64::try_from(beat.capacity).unwrap_or(i64::MAX);
        self.postgres.run_idempotent(move |client| {
            let mut tx = client.transaction()?;
            tx.execute(
                "DELETE FROM quarry_nodes WHERE node = $1 AND node <> '' AND endpoint <> $2",
                &[&node, &endpoint],
            )?;
            tx.execute(
                "INSERT INTO quarry_nodes (endpoint, role, node, http, capacity)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (endpoint) DO UPDATE
                 SET role = $2, node = $3, http = $4, capacity = $5, heartbeat = now()",
                &[&endpoint, &role, &node, &http, &capacity],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// The members that write (`all`, `indexer`) and have not beaten within `within` without
    /// having left: nodes down, whose acknowledged events not yet published are missing from
    /// every answer until they are back.
    pub fn absent_writers(&self, within: Duration) -> Result<Vec<Member>> {
        let seconds = within.as_secs_f64();
        self.postgres.run_idempotent(move |client| {
            let rows = client.query(
                "SELECT endpoint, role, http, capacity FROM quarry_nodes
                 WHERE heartbeat <= now() - make_interval(secs => $1) AND role <> 'searcher'
                 ORDER BY endpoint",
                &[&seconds],
            )?;
            Ok(rows.iter().map(member).collect())
        })
    }

    /// The members that beat within `within`, by endpoint.
    pub fn live(&self, within: Duration) -> Result<Vec<Member>> {
        let seconds = within.as_secs_f64();
        self.postgres.run_idempotent(move |client| {
            let rows = client.query(
                "SELECT endpoint, role, http, capacity FROM quarry_nodes
                 WHERE heartbeat > now() - make_interval(secs => $1)
                 ORDER BY endpoint",
                &[&seconds],
            )?;
            Ok(rows.iter().map(member).collect())
        })
    }

    /// Leaves the cluster (a clean stop): roots stop asking at once.
    pub fn leave(&self, endpoint: &str) -> Result<()> {
        let endpoint = endpoint.to_owned();
        self.postgres.run_idempotent(move |client| {
            client.execute("DELETE FROM quarry_nodes WHERE endpoint = $1", &[&endpoint])?;
            Ok(())
        })
    }
}

/// Tenant traffic control's shared state (migration 0003): the ingest rates indexers took,
/// the routing table, and the lease of the node that plans it.
#[derive(Clone, Debug)]
pub struct Traffic {
    postgres: Arc<Postgres>,
}

impl Traffic {
    pub fn new(postgres: Arc<Postgres>) -> Traffic {
        Traffic { postgres }
    }

    /// Replaces the rates node `node` took, per tenant (bytes/s).
    pub fn report_rates(&self, node: &str, rates: &[(String, u64)]) -> Result<()> {
        let node = node.to_owned();
        let (tenants, values): (Vec<String>, Vec<i64>) = rates
            .iter()
            .map(|(tenant, rate)| (tenant.clone(), i64::try_from(*rate).unwrap_or(i64::MAX)))
            .unzip();
        self.postgres.run_idempotent(move |client| {
            let mut tx = client.transaction()?;
            tx.execute(
                "DELETE FROM quarry_ingest_rates WHERE node = $1 AND NOT (tenant = ANY($2))",
                &[&node, &tenants],
            )?;
            tx.execute(
                "INSERT INTO quarry_ingest_rates (node, tenant, rate)
                 SELECT $1, tenant, rate FROM unnest($2::TEXT[], $3::BIGINT[]) AS r(tenant, rate)
                 ON CONFLICT (node, tenant) DO UPDATE SET rate = EXCLUDED.rate, at = now()",
                &[&node, &tenants, &values],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Each tenant's rate (bytes/s) over the nodes that reported within `within`, summed.
    pub fn rates(&self, within: Duration) -> Result<Vec<(String, u64)>> {
        let seconds = within.as_secs_f64();
        self.postgres.run_idempotent(move |client| {
            let rows = client.query(
                "SELECT tenant, sum(rate)::BIGINT FROM quarry_ingest_rates
                 WHERE at > now() - make_interval(secs => $1)
                 GROUP BY tenant ORDER BY tenant",
                &[&seconds],
            )?;
            Ok(rows
                .iter()
                .map(|row| {
                    let rate: i64 = row.get(1);
                    (row.get(0), u64::try_from(rate).unwrap_or(0))
                })
                .collect())
        })
    }

    /// The stored routing table (its version and JSON), if one was planned.
    pub fn routes(&self) -> Result<Option<(i64, String)>> {
        self.postgres.run_idempotent(|client| {
            Ok(client
                .query_opt("SELECT version, routes FROM quarry_routing", &[])?
                .map(|row| (row.get(0), row.get(1))))
        })
    }

    /// Stores a routing table (JSON) as the next version; returns it.
    pub fn store_routes(&self, routes: &str) -> Result<i64> {
        let routes = routes.to_owned();
        self.postgres.run(move |client| {
            Ok(client
                .query_one(
                    "INSERT INTO quarry_routing (one, version, routes) VALUES (TRUE, 1, $1)
                     ON CONFLICT (one) DO UPDATE
                     SET version = quarry_routing.version + 1, routes = $1, planned = now()
                     RETURNING version",
                    &[&routes],
                )?
                .get(0))
        })
    }

    /// Takes or renews lease `name` for `holder` until `ttl` from now; false while another
    /// holder's lease runs.
    pub fn lease(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool> {
        let (name, holder) = (name.to_owned(), holder.to_owned());
        let seconds = ttl.as_secs_f64();
        self.postgres.run_idempotent(move |client| {
            let row = client.query_opt(
                "INSERT INTO quarry_leases (name, holder, until)
                 VALUES ($1, $2, now() + make_interval(secs => $3))
                 ON CONFLICT (name) DO UPDATE
                 SET holder = $2, until = now() + make_interval(secs => $3)
                 WHERE quarry_leases.holder = $2 OR quarry_leases.until < now()
                 RETURNING holder",
                &[&name, &holder, &seconds],
            )?;
            Ok(row.is_some())
        })
    }
}
