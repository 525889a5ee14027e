//! `quarry simulate-routing`: prints `quarry-routing`'s simulation of tenant traffic control,
//! plain hashing against max-flow routing (LogStore §4.1 and §6.2), as tables.

use anyhow::Result;
use quarry_routing::{
    dynamic_rounds, sweep, Balance, Round, SimulationConfig, SweepRow, DEFAULT_BALANCE_MARGIN,
    DEFAULT_TARGET_UTILISATION, DEFAULT_THETAS, INDEXER_CAPACITY,
};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Tenants' rates follow Zipf weights (1/k)^θ scaled to --load of the indexers' total capacity \
(each indexer takes 100 MB/s, so a utilisation in % reads as MB/s). Hashing sends each tenant \
to its rendezvous-hashed indexer; max-flow routing starts there and, when an indexer goes above \
--target, solves the flow network tenants -> indexers -> sink (Dinic) and adds route rules only \
for the tenants that need them. Columns: stddev, max and max/mean of the indexers' \
utilisation (offered traffic over capacity); over/exc: indexers above 100% / MB/s above \
capacity, to refuse or delay; short: MB/s the plan could not place within the targets \
(backpressure); rules: tenant -> indexer routes. The same flags print the same tables. Example: quarry simulate-routing --tenants 1000 --indexers 8 \
--rounds 10")]
pub struct SimulateRoutingArgs {
    /// Number of tenants
    #[arg(long, default_value_t = 1000)]
    tenants: usize,
    /// Zipf exponents θ to compare, comma-separated: 0 is uniform, 0.99 close to LogStore's
    /// production skew [default: 0,0.2,0.4,0.6,0.8,0.9,0.99]
    #[arg(long, value_name = "THETA", value_delimiter = ',')]
    zipf: Vec<f64>,
    /// Number of indexers
    #[arg(long, default_value_t = 8)]
    indexers: usize,
    /// The tenants' total rate as a share of the indexers' total capacity
    #[arg(long, default_value_t = 0.7)]
    load: f64,
    /// Random seed: which tenant gets which Zipf rank, the capacities, the rounds' surges
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Rounds of changing traffic after the first plan, at the largest θ: every rate varies
    /// by up to --jitter and one tenant, drawn at random, surges to --surge of an indexer's
    /// capacity; the router re-plans from the observed rates and its previous table
    #[arg(long, default_value_t = 0)]
    rounds: usize,
    /// LogStore's α: an indexer above this share of its capacity is hot, and no plan puts one
    /// above it
    #[arg(long, default_value_t = DEFAULT_TARGET_UTILISATION)]
    target: f64,
    /// A re-plan levels the indexers to the mean utilisation plus this margin (at most
    /// --target); `none` plans to --target only, as LogStore does
    #[arg(long, value_name = "SHARE|none", default_value_t = Margin(Some(DEFAULT_BALANCE_MARGIN)), value_parser = parse_margin)]
    margin: Margin,
    /// 0 for equal indexers; s for capacities drawn from [1-s, 1+s] × 100 MB/s
    #[arg(long, default_value_t = 0.0)]
    capacity_spread: f64,
    /// In the rounds, a surging tenant's rate as a share of an indexer's capacity
    #[arg(long, default_value_t = 0.6)]
    surge: f64,
    /// In the rounds, how much every rate varies either way, as a share
    #[arg(long, default_value_t = 0.1)]
    jitter: f64,
}

/// `--margin`: a share, or none.
#[derive(Clone, Copy, Debug)]
struct Margin(Option<f64>);

impl std::fmt::Display for Margin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(margin) => write!(f, "{margin}"),
            None => f.write_str("none"),
        }
    }
}

fn parse_margin(text: &str) -> Result<Margin, String> {
    if text == "none" {
        return Ok(Margin(None));
    }
    text.parse()
        .map(|margin| Margin(Some(margin)))
        .map_err(|_| format!("'{text}' is neither a share (e.g. 0.05) nor none"))
}

pub fn simulate_routing(args: SimulateRoutingArgs) -> Result<ExitCode> {
    let thetas = if args.zipf.is_empty() {
        DEFAULT_THETAS.to_vec()
    } else {
        args.zipf.clone()
    };
    let config = SimulationConfig {
        tenants: args.tenants,
        indexers: args.indexers,
        load: args.load,
        capacity_spread: args.capacity_spread,
        target_utilisation: args.target,
        balance_margin: args.margin.0,
        seed: args.seed,
        surge: args.surge,
        jitter: args.jitter,
    };
    let rows = sweep(&config, &thetas)?;
    print_header(&config);
    print_sweep(&rows);
    if args.rounds > 0 {
        let theta = thetas.iter().copied().fold(0.0, f64::max);
        let rounds = dynamic_rounds(&config, theta, args.rounds)?;
        println!();
        print_rounds(&config, theta, &rounds);
    }
    Ok(ExitCode::SUCCESS)
}

fn mb(bytes_per_s: u64) -> f64 {
    bytes_per_s as f64 / 1e6
}

fn print_header(config: &SimulationConfig) {
    let capacity = if config.capacity_spread > 0.0 {
        format!("of 100 MB/s ± {:.0}%", 100.0 * config.capacity_spread)
    } else {
        "of 100 MB/s".to_owned()
    };
    let offered = config.load * config.indexers as f64 * mb(INDEXER_CAPACITY);
    println!(
        "{} tenants (Zipf), {} indexers {capacity}, offered {:.0}% of capacity ({offered:.0} MB/s), seed {}",
        config.tenants,
        config.indexers,
        100.0 * config.load,
        config.seed
    );
    let level = match config.balance_margin {
        Some(margin) => format!(
            "re-plans level the indexers to the mean + {:.0} points",
            100.0 * margin
        ),
        None => "re-plans fill indexers up to α".to_owned(),
    };
    println!(
        "max-flow: an indexer above α = {:.0}% is hot; {level}",
        100.0 * config.target_utilisation
    );
    println!();
}

fn print_sweep(rows: &[SweepRow]) {
    println!(
        "{:>6} {:>8} | {:^34} | {:^48} | {:>6}",
        "", "largest", "hashing", "max-flow", "stddev"
    );
    println!(
        "{:>6} {:>8} | {} | {} {:>7} {:>6} | {:>6}",
        "theta",
        "tenant",
        balance_heading(),
        balance_heading(),
        "short",
        "rules",
        "ratio"
    );
    for row in rows {
        let ratio = if row.max_flow.utilisation_stddev > 0.0 {
            format!(
                "{:.1}x",
                row.hashing.utilisation_stddev / row.max_flow.utilisation_stddev
            )
        } else {
            "-".to_owned()
        };
        println!(
            "{:>6.2} {:>8.1} | {} | {} {:>7.1} {:>6} | {:>6}",
            row.theta,
            mb(row.largest_tenant),
            balance_cells(&row.hashing),
            balance_cells(&row.max_flow),
            mb(row.short),
            row.max_flow.rules,
            ratio
        );
    }
    println!(
        "(over/exc: indexers above capacity / MB/s above capacity; largest tenant and short in \
         MB/s; hashing has one rule per tenant)"
    );
}

fn balance_heading() -> String {
    format!(
        "{:>7} {:>8} {:>8} {:>8}",
        "stddev", "max %", "max/mean", "over/exc"
    )
}

fn balance_cells(balance: &Balance) -> String {
    format!(
        "{:>7.1} {:>8.1} {:>8.2} {:>8}",
        balance.utilisation_stddev,
        balance.max_utilisation,
        balance.max_over_mean,
        format!("{}/{:.0}", balance.overloaded, mb(balance.excess))
    )
}

fn print_rounds(config: &SimulationConfig, theta: f64, rounds: &[Round]) {
    println!(
        "Rounds at theta {theta:.2}: every rate varies by up to ±{:.0}%, one tenant surges to {:.0}% \
         of an indexer's capacity (the previous surge ends)",
        100.0 * config.jitter,
        100.0 * config.surge
    );
    println!(
        "{:>5} {:<30} {:>7} | {:^17} | {:^62}",
        "", "", "", "hashing", "max-flow"
    );
    println!(
        "{:>5} {:<30} {:>7} | {:>8} {:>8} | {:>8} {:>8} {:>6} {:>7} {:>7} {:>6} {:>6}",
        "round",
        "surge (MB/s)",
        "offered",
        "max %",
        "over/exc",
        "max %",
        "over/exc",
        "rules",
        "changed",
        "moved",
        "short",
        "replan"
    );
    for round in rounds {
        let surge = round.surge.as_ref().map_or_else(
            || "(first plan, from hashing)".to_owned(),
            |surge| {
                format!(
                    "{} {:.1} -> {:.1}",
                    surge.tenant,
                    mb(surge.base_rate),
                    mb(surge.rate)
                )
            },
        );
        let over = |balance: &Balance| format!("{}/{:.0}", balance.overloaded, mb(balance.excess));
        println!(
            "{:>5} {:<30} {:>6.1}% | {:>8.1} {:>8} | {:>8.1} {:>8} {:>6} {:>7} {:>7.1} {:>6.1} {:>6}",
            round.round,
            surge,
            100.0 * round.demand as f64 / round.capacity as f64,
            round.hashing.max_utilisation,
            over(&round.hashing),
            round.max_flow.max_utilisation,
            over(&round.max_flow),
            round.max_flow.rules,
            format!("+{}/-{}", round.changes.added, round.changes.removed),
            mb(round.moved),
            mb(round.short),
            if round.rebalanced { "yes" } else { "no" }
        );
    }
    println!(
        "(changed: rules added/removed from the previous table; moved: MB/s now sent to \
         another indexer; replan: some indexer was above α)"
    );
}
