//! `search-plots`: PNG charts of a metric list written by `search-report`.
//!
//! ```text
//! search-plots [--out-dir DIR] [results/search.json]
//! ```
//!
//! Writes `latency.png` (latency percentiles per engine, log scale, a panel per workload) and
//! `qps.png` (queries per second by search threads, a panel per workload) into `--out-dir`
//! (default: the metric list's directory) and prints their paths. A chart with no figures to
//! show is not written.

use std::fs;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use search_driver::plots::{self, Figures};

#[derive(Parser)]
#[command(about = "PNG charts of a benchmark metric list")]
struct Args {
    /// Directory of the PNG files [default: the metric list's directory]
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// The metric list: a JSON list of {"engine","workload","metric","value"}
    #[arg(default_value = "bench/results/search.json")]
    metrics: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let figures = Figures::load(&args.metrics)?;
    let dir = args.out_dir.unwrap_or_else(|| {
        args.metrics
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), PathBuf::from)
    });
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    plots::register_font()?;
    for (name, drawn) in [
        ("latency", plots::draw_latency(&figures, &dir)?),
        ("throughput", plots::draw_qps(&figures, &dir)?),
    ] {
        match drawn {
            Some(path) => println!("{}", path.display()),
            None => eprintln!(
                "search-plots: no {name} figures in {}",
                args.metrics.display()
            ),
        }
    }
    Ok(())
}
