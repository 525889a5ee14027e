//! `quarry serve`: the HTTP API (`quarry-server`) on a tokio runtime, until SIGINT or SIGTERM.

use crate::DataArgs;
use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Address to listen on (port 0 picks a free port; the address is printed)
    #[arg(long, env = "QUARRY_LISTEN", default_value = "127.0.0.1:7380")]
    listen: SocketAddr,
}

pub fn serve(args: ServeArgs) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let config = quarry_server::ServerConfig {
        data: args.data.data.clone(),
        listen: args.listen,
    };
    runtime.block_on(async move {
        quarry_server::serve(
            config,
            |addr| {
                // Printed on stdout (and flushed) so scripts and tests can read the port.
                println!(
                    "quarry listening on http://{addr} (data: {})",
                    args.data.data.display()
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
