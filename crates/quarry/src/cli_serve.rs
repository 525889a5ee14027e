//! `quarry serve`: the HTTP API (`quarry-server`) on a tokio runtime, until SIGINT or SIGTERM.

use crate::DataArgs;
use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// A TOML file with any of the settings below (`data = "..."`, `listen = "..."`); flags
    /// and QUARRY_* environment variables override it
    #[arg(long, env = "QUARRY_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Data directory [default: ./quarry-data]
    #[arg(long, env = "QUARRY_DATA", value_name = "DIR")]
    data: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port (the address is printed)
    /// [default: 127.0.0.1:7380]
    #[arg(long, env = "QUARRY_LISTEN", value_name = "ADDR")]
    listen: Option<SocketAddr>,
}

/// The config file: every key optional, unknown keys refused (a typo must not be ignored).
#[derive(serde::Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    data: Option<PathBuf>,
    listen: Option<SocketAddr>,
}

/// Flags and environment variables, then the config file, then the defaults.
fn settings(args: ServeArgs) -> Result<(PathBuf, SocketAddr)> {
    let file = match &args.config {
        None => ConfigFile::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading config file {}", path.display()))?;
            toml::from_str(&text).with_context(|| format!("config file {}", path.display()))?
        }
    };
    let data = args
        .data
        .or(file.data)
        .unwrap_or_else(|| PathBuf::from(DataArgs::DEFAULT_DIR));
    let listen = match args.listen.or(file.listen) {
        Some(listen) => listen,
        None => DEFAULT_LISTEN.parse().expect("the default address parses"),
    };
    Ok((data, listen))
}

/// Loopback only by default: until tenants and keys exist (Step 4b), nothing guards the API.
const DEFAULT_LISTEN: &str = "127.0.0.1:7380";

pub fn serve(args: ServeArgs) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let (data, listen) = settings(args)?;
    let config = quarry_server::ServerConfig {
        data: data.clone(),
        listen,
    };
    runtime.block_on(async move {
        quarry_server::serve(
            config,
            |addr| {
                // Printed on stdout (and flushed) so scripts and tests can read the port.
                println!(
                    "quarry listening on http://{addr} (data: {})",
                    data.display()
                );
                use std::io::Write;
                let _ = std::io::stdout().flush();
            },
            shutdown_signal(),
        )
        .await
    })?;
    eprintln!("quarry stopped");
    Ok(ExitCode::SUCCESS)
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM: the server stops accepting and finishes the
/// requests under way.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
