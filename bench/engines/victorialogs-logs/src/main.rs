//! `victorialogs-logs`: VictoriaLogs as a peer in Quarry's log benchmark (bench/logs/README.md).
//!
//! VictoriaLogs is a server with an HTTP API, so this adapter runs a `victoria-logs` binary
//! (bench/victorialogs.sh builds v1.52.1) on a data directory and speaks to it over HTTP on
//! 127.0.0.1:
//!
//! - `index` loads a JSON-lines event file (plain or zstd) with the natural configuration for
//!   these events (stream fields `service` and `host`, `message` as the message field), flushes
//!   and force-merges, and prints one JSON line of figures ([`index::IndexSummary`]);
//! - `serve` starts the server on that directory (or uses one given by `--addr`) and answers the
//!   log protocol (bench/logs/PROTOCOL.md) on stdin, each request translated into one LogsQL
//!   query ([`logsql`], [`serve`]).

mod index;
mod logsql;
mod serve;
mod server;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::bail;
use clap::{Parser, Subcommand};

use crate::server::Server;

#[derive(Parser)]
#[command(about = "VictoriaLogs behind Quarry's log benchmark protocol")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load a JSON-lines event file (plain or zstd-compressed) into a fresh server's data
    /// directory
    Index {
        /// The victoria-logs binary
        #[arg(long)]
        bin: PathBuf,
        /// Data directory of the server (created; must be empty); its log goes to DATA.log
        #[arg(long)]
        data: PathBuf,
        /// The events, JSON lines
        input: PathBuf,
    },
    /// Answer protocol requests on stdin, one line each on stdout
    Serve {
        /// The victoria-logs binary, started on --data (its log appended to DATA.log)
        #[arg(long, requires = "data", conflicts_with = "addr")]
        bin: Option<PathBuf>,
        /// Data directory written by `index`
        #[arg(long)]
        data: Option<PathBuf>,
        /// A running server to query instead of starting one, e.g. 127.0.0.1:9428
        #[arg(long)]
        addr: Option<SocketAddr>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Index { bin, data, input } => {
            let summary = index::run(&bin, &data, &input)?;
            println!("{}", serde_json::to_string(&summary)?);
        }
        Command::Serve { bin, data, addr } => {
            let server = match (bin, data, addr) {
                (_, _, Some(addr)) => Server::given(addr)?,
                (Some(bin), Some(data), None) => {
                    if !data.is_dir() {
                        bail!("no data directory {}", data.display());
                    }
                    Server::start(&bin, &data, false)?
                }
                _ => bail!("serve needs --bin and --data, or --addr"),
            };
            serve::run(server)?;
        }
    }
    Ok(())
}
