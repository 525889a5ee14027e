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

/// A member: its leaf API's URL and its role (`all`, `indexer`, `searcher`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub endpoint: String,
    pub role: String,
}

impl Members {
    pub fn new(postgres: Arc<Postgres>) -> Members {
        Members { postgres }
    }

    /// Registers `endpoint` with `role` for node `node` (its data directory's id, replacing
    /// a row the node left at another address), or renews its beat.
    pub fn beat(&self, endpoint: &str, role: &str, node: &str) -> Result<()> {
        let (endpoint, role, node) = (endpoint.to_owned(), role.to_owned(), node.to_owned());
        self.postgres.run_idempotent(move |client| {
            let mut tx = client.transaction()?;
            tx.execute(
                "DELETE FROM quarry_nodes WHERE node = $1 AND node <> '' AND endpoint <> $2",
                &[&node, &endpoint],
            )?;
            tx.execute(
                "INSERT INTO quarry_nodes (endpoint, role, node) VALUES ($1, $2, $3)
                 ON CONFLICT (endpoint) DO UPDATE SET role = $2, node = $3, heartbeat = now()",
                &[&endpoint, &role, &node],
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
                "SELECT endpoint, role FROM quarry_nodes
                 WHERE heartbeat <= now() - make_interval(secs => $1) AND role <> 'searcher'
                 ORDER BY endpoint",
                &[&seconds],
            )?;
            Ok(rows
                .iter()
                .map(|row| Member {
                    endpoint: row.get(0),
                    role: row.get(1),
                })
                .collect())
        })
    }

    /// The members that beat within `within`, by endpoint.
    pub fn live(&self, within: Duration) -> Result<Vec<Member>> {
        let seconds = within.as_secs_f64();
        self.postgres.run_idempotent(move |client| {
            let rows = client.query(
                "SELECT endpoint, role FROM quarry_nodes
                 WHERE heartbeat > now() - make_interval(secs => $1)
                 ORDER BY endpoint",
                &[&seconds],
            )?;
            Ok(rows
                .iter()
                .map(|row| Member {
                    endpoint: row.get(0),
                    role: row.get(1),
                })
                .collect())
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
