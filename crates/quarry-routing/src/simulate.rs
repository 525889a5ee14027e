//! A simulator of tenant traffic control, after LogStore's evaluation (§6.2, Figures 12-14):
//! `tenants` tenants whose rates follow Zipf weights `(1/k)^θ` (θ = 0 is uniform, θ = 0.99
//! close to LogStore's production skew), scaled so they offer `load` of the indexers' total
//! capacity, on `indexers` indexers of equal or varying capacity. Plain hashing (each tenant on
//! its rendezvous-hashed indexer) is compared with the max-flow plan of [`crate::routing`]:
//! the spread of the indexers' utilisation, the most loaded indexer, the traffic above
//! capacity, and the number of route rules.
//!
//! [`sweep`] does this for several θ; [`dynamic_rounds`] changes the rates round after round
//! (every rate varies a little, one tenant surges) and lets the router re-plan from the
//! observed rates and its previous table, counting the rules each round changes.
//!
//! Everything is a function of the configuration: the random numbers come from PCG-64 seeded
//! by `seed`, and the floating point uses `libm`, so the same flags print the same table on
//! every machine.

use crate::routing::{
    mix64, moved_rate, offered_loads, plan, Indexer, RouterConfig, RoutingTable, RuleChanges,
    TenantRate,
};
use crate::RoutingError;
use rand_pcg::rand_core::Rng;
use rand_pcg::Pcg64Mcg;

/// The skews LogStore's Figures 12-13 sweep.
pub const DEFAULT_THETAS: [f64; 7] = [0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.99];

/// An indexer's capacity, 100 MB/s: at this size a utilisation in percent reads as MB/s.
pub const INDEXER_CAPACITY: u64 = 100_000_000;

/// What to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulationConfig {
    pub tenants: usize,
    pub indexers: usize,
    /// The tenants' total rate as a share of the indexers' total capacity.
    pub load: f64,
    /// 0 for equal indexers; s for capacities drawn uniformly from
    /// `[1 - s, 1 + s] × INDEXER_CAPACITY`, in [0, 1).
    pub capacity_spread: f64,
    /// LogStore's α, the utilisation the router plans an indexer to.
    pub target_utilisation: f64,
    /// How far above the mean utilisation a re-plan levels the indexers
    /// ([`RouterConfig::balance_margin`]); `None` plans to α only.
    pub balance_margin: Option<f64>,
    pub seed: u64,
    /// In the rounds, a surging tenant's rate as a share of an indexer's mean capacity.
    pub surge: f64,
    /// In the rounds, every rate varies by up to this share either way, in [0, 1).
    pub jitter: f64,
}

impl Default for SimulationConfig {
    fn default() -> Self {
        Self {
            tenants: 1000,
            indexers: 8,
            load: 0.7,
            capacity_spread: 0.0,
            target_utilisation: crate::DEFAULT_TARGET_UTILISATION,
            balance_margin: Some(crate::routing::DEFAULT_BALANCE_MARGIN),
            seed: 42,
            surge: 0.6,
            jitter: 0.1,
        }
    }
}

/// The indexers and the tenants' rates of one simulated workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub indexers: Vec<Indexer>,
    pub rates: Vec<TenantRate>,
}

/// How evenly a routing table spreads a workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Balance {
    /// Offered bytes per second at each indexer: what arrives when every tenant sends its whole
    /// rate by the table's shares.
    pub loads: Vec<u64>,
    /// Standard deviation of the indexers' utilisation (load / capacity), in percentage points
    /// (LogStore's Figure 13 measures the standard deviation of accesses).
    pub utilisation_stddev: f64,
    /// The highest utilisation over the mean utilisation.
    pub max_over_mean: f64,
    /// The highest utilisation, in percent.
    pub max_utilisation: f64,
    /// Indexers offered more than their capacity.
    pub overloaded: usize,
    /// Indexers offered more than their target (α · capacity).
    pub above_target: usize,
    /// Bytes per second above capacity, summed over the indexers: traffic to refuse or delay.
    pub excess: u64,
    /// Tenant → indexer rules.
    pub rules: usize,
}

/// Hashing against max-flow routing at one skew.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    pub theta: f64,
    /// The largest tenant's rate, bytes per second.
    pub largest_tenant: u64,
    pub hashing: Balance,
    pub max_flow: Balance,
    /// Whether the max-flow plan had to rebalance (some indexer was over its target).
    pub rebalanced: bool,
    /// Rate the max-flow plan could not place within the targets.
    pub short: u64,
}

/// A tenant whose traffic surges in a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Surge {
    pub tenant: String,
    /// Its rate before the surge.
    pub base_rate: u64,
    pub rate: u64,
}

/// One round of the dynamic run.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    /// 0 is the first plan, from hashing.
    pub round: usize,
    pub surge: Option<Surge>,
    /// The tenants' total rate this round.
    pub demand: u64,
    /// The indexers' total capacity.
    pub capacity: u64,
    pub hashing: Balance,
    pub max_flow: Balance,
    /// Rules the router changed from the previous round's table (round 0: from hashing).
    pub changes: RuleChanges,
    /// Traffic the new table sends to another indexer than the previous one did.
    pub moved: u64,
    pub rebalanced: bool,
    /// Rate the plan could not place within the targets.
    pub short: u64,
}

/// Hashing and max-flow routing over the workload of each skew in `thetas`.
pub fn sweep(config: &SimulationConfig, thetas: &[f64]) -> Result<Vec<SweepRow>, RoutingError> {
    let router = config.router()?;
    thetas
        .iter()
        .map(|&theta| {
            let workload = workload(config, theta)?;
            let (indexers, rates) = (&workload.indexers, &workload.rates);
            let hashed = RoutingTable::hashed(rates, indexers)?;
            // Algorithm 1 starts from hashing, then plans.
            let planned = plan(rates, indexers, &hashed, &router)?;
            Ok(SweepRow {
                theta,
                largest_tenant: rates.iter().map(|rate| rate.rate).max().unwrap_or(0),
                hashing: Balance::measure(&hashed, &workload, config.target_utilisation)?,
                max_flow: Balance::measure(&planned.table, &workload, config.target_utilisation)?,
                rebalanced: planned.rebalanced,
                short: planned.demand - planned.routed,
            })
        })
        .collect()
}

/// `rounds` rounds of changing traffic after a first plan at skew `theta`. In each round every
/// tenant's rate is its base rate varied by up to `jitter` either way, and one tenant, drawn at
/// random, surges to `surge` of an indexer's mean capacity (the previous round's surge ends).
/// The router plans from these observed rates and its previous table; hashing stays hashing.
pub fn dynamic_rounds(
    config: &SimulationConfig,
    theta: f64,
    rounds: usize,
) -> Result<Vec<Round>, RoutingError> {
    let router = config.router()?;
    let base = workload(config, theta)?;
    let capacity: u64 = base.indexers.iter().map(|ix| ix.capacity).sum();
    let mean_capacity = capacity as f64 / base.indexers.len() as f64;
    let mut random = Random::new(config.seed, stream::ROUNDS);
    let mut previous = RoutingTable::hashed(&base.rates, &base.indexers)?;
    let mut result = Vec::with_capacity(rounds + 1);
    for round in 0..=rounds {
        let mut workload = base.clone();
        let mut surge = None;
        if round > 0 {
            for rate in &mut workload.rates {
                let factor = 1.0 + config.jitter * (2.0 * random.unit() - 1.0);
                rate.rate = (rate.rate as f64 * factor).round() as u64;
            }
            let tenant = random.below(workload.rates.len() as u64) as usize;
            let surging = &mut workload.rates[tenant];
            let rate = (config.surge * mean_capacity).round() as u64;
            // A tenant already above the surge rate (or --surge 0) does not surge; the draw
            // is made all the same, so the jitter of later rounds does not depend on it.
            if rate > surging.rate {
                surge = Some(Surge {
                    tenant: surging.tenant.clone(),
                    base_rate: surging.rate,
                    rate,
                });
                surging.rate = rate;
            }
        }
        let (indexers, rates) = (&workload.indexers, &workload.rates);
        let planned = plan(rates, indexers, &previous, &router)?;
        let hashed = RoutingTable::hashed(rates, indexers)?;
        result.push(Round {
            round,
            surge,
            demand: planned.demand,
            capacity,
            hashing: Balance::measure(&hashed, &workload, config.target_utilisation)?,
            max_flow: Balance::measure(&planned.table, &workload, config.target_utilisation)?,
            changes: previous.rule_changes(&planned.table),
            moved: moved_rate(&previous, &planned.table, rates, indexers)?,
            rebalanced: planned.rebalanced,
            short: planned.demand - planned.routed,
        });
        previous = planned.table;
    }
    Ok(result)
}

/// The indexers and tenants of `config` at skew `theta`. Which tenant gets which Zipf rank is
/// a seeded shuffle, the same for every θ, so a sweep's rows differ only in the skew.
pub fn workload(config: &SimulationConfig, theta: f64) -> Result<Workload, RoutingError> {
    config.check()?;
    check(
        "zipf exponent",
        theta,
        theta >= 0.0 && theta.is_finite(),
        ">= 0",
    )?;
    let mut random = Random::new(config.seed, stream::SETUP);
    let indexers: Vec<Indexer> = (0..config.indexers)
        .map(|position| {
            let spread = config.capacity_spread * (2.0 * random.unit() - 1.0);
            Indexer {
                name: format!("indexer-{:02}", position + 1),
                capacity: (INDEXER_CAPACITY as f64 * (1.0 + spread)).round() as u64,
            }
        })
        .collect();
    // Fisher-Yates: ranks[tenant] is the tenant's Zipf rank, from 1.
    let mut ranks: Vec<usize> = (1..=config.tenants).collect();
    for last in (1..ranks.len()).rev() {
        let other = random.below(last as u64 + 1) as usize;
        ranks.swap(last, other);
    }
    let weights: Vec<f64> = ranks
        .iter()
        .map(|&rank| libm::pow(rank as f64, -theta))
        .collect();
    let weight_sum: f64 = weights.iter().sum();
    let capacity: u64 = indexers.iter().map(|ix| ix.capacity).sum();
    let total = config.load * capacity as f64;
    let rates = weights
        .iter()
        .enumerate()
        .map(|(tenant, weight)| TenantRate {
            tenant: format!("tenant-{:04}", tenant + 1),
            rate: (total * weight / weight_sum).round() as u64,
        })
        .collect();
    Ok(Workload { indexers, rates })
}

impl SimulationConfig {
    fn router(&self) -> Result<RouterConfig, RoutingError> {
        self.check()?;
        Ok(RouterConfig {
            target_utilisation: self.target_utilisation,
            balance_margin: self.balance_margin,
        })
    }

    fn check(&self) -> Result<(), RoutingError> {
        let count = |value: usize| value as f64;
        check("tenants", count(self.tenants), self.tenants > 0, ">= 1")?;
        check("indexers", count(self.indexers), self.indexers > 0, ">= 1")?;
        // Rates are u64 bytes per second: the offered total must fit.
        let fits = self.load * self.indexers as f64 * (INDEXER_CAPACITY as f64) * 2.0 < 1e18;
        check(
            "load",
            self.load,
            self.load > 0.0 && fits,
            "> 0 and not huge",
        )?;
        let spread = self.capacity_spread;
        check(
            "capacity spread",
            spread,
            (0.0..1.0).contains(&spread),
            "in [0, 1)",
        )?;
        let alpha = self.target_utilisation;
        check(
            "target utilisation",
            alpha,
            alpha > 0.0 && alpha <= 1.0,
            "in (0, 1]",
        )?;
        check(
            "surge",
            self.surge,
            (0.0..1e6).contains(&self.surge),
            ">= 0",
        )?;
        check(
            "jitter",
            self.jitter,
            (0.0..1.0).contains(&self.jitter),
            "in [0, 1)",
        )
    }
}

fn check(
    name: &'static str,
    value: f64,
    ok: bool,
    expected: &'static str,
) -> Result<(), RoutingError> {
    if ok {
        Ok(())
    } else {
        Err(RoutingError::Parameter {
            name,
            value,
            expected,
        })
    }
}

impl Balance {
    fn measure(
        table: &RoutingTable,
        workload: &Workload,
        target_utilisation: f64,
    ) -> Result<Self, RoutingError> {
        let loads = offered_loads(table, &workload.rates, &workload.indexers)?;
        let capacities: Vec<u64> = workload.indexers.iter().map(|ix| ix.capacity).collect();
        let utilisation: Vec<f64> = loads
            .iter()
            .zip(&capacities)
            .map(|(&load, &capacity)| {
                if capacity == 0 {
                    if load == 0 {
                        0.0
                    } else {
                        f64::INFINITY
                    }
                } else {
                    100.0 * load as f64 / capacity as f64
                }
            })
            .collect();
        let count = utilisation.len() as f64;
        let mean = utilisation.iter().sum::<f64>() / count;
        let variance = utilisation
            .iter()
            .map(|value| (value - mean) * (value - mean))
            .sum::<f64>()
            / count;
        let max_utilisation = utilisation.iter().copied().fold(0.0, f64::max);
        let target = |capacity: u64| capacity as f64 * target_utilisation;
        Ok(Self {
            utilisation_stddev: libm::sqrt(variance),
            max_over_mean: if mean > 0.0 {
                max_utilisation / mean
            } else {
                1.0
            },
            max_utilisation,
            overloaded: loads.iter().zip(&capacities).filter(|(l, c)| l > c).count(),
            above_target: loads
                .iter()
                .zip(&capacities)
                .filter(|&(&load, &capacity)| load as f64 > target(capacity))
                .count(),
            excess: loads
                .iter()
                .zip(&capacities)
                .map(|(load, capacity)| load.saturating_sub(*capacity))
                .sum(),
            rules: table.rule_count(),
            loads,
        })
    }
}

/// Names of the random streams one seed is split into, so that a draw added to one part does
/// not shift what the other produces.
mod stream {
    pub const SETUP: u64 = 1;
    pub const ROUNDS: u64 = 2;
}

/// One seeded stream of random numbers (PCG-64, MCG variant, as `quarry-loggen` uses).
struct Random {
    rng: Pcg64Mcg,
}

impl Random {
    fn new(seed: u64, stream: u64) -> Self {
        let high = mix64(seed ^ mix64(stream));
        let low = mix64(high ^ stream);
        Self {
            rng: Pcg64Mcg::new((u128::from(high) << 64) | u128::from(low)),
        }
    }

    /// Uniform in [0, 1) with 53 random bits.
    fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) by Lemire's multiply-shift (bias at most n / 2^64).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.rng.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(seed: u64) -> SimulationConfig {
        SimulationConfig {
            seed,
            ..SimulationConfig::default()
        }
    }

    #[test]
    fn the_workload_offers_the_load_asked_for() {
        for theta in DEFAULT_THETAS {
            let workload = workload(&config(7), theta).unwrap();
            let total: u64 = workload.rates.iter().map(|rate| rate.rate).sum();
            let expected = 0.7 * 8.0 * INDEXER_CAPACITY as f64;
            assert!(
                (total as f64 - expected).abs() < 1000.0,
                "θ {theta}: {total}"
            );
        }
        // θ = 0 is uniform.
        let uniform = workload(&config(7), 0.0).unwrap();
        assert!(uniform.rates.iter().all(|rate| rate.rate == 560_000));
    }

    #[test]
    fn the_same_configuration_gives_the_same_rows() {
        let config = SimulationConfig {
            capacity_spread: 0.3,
            ..config(3)
        };
        assert_eq!(
            sweep(&config, &[0.5, 0.99]).unwrap(),
            sweep(&config, &[0.5, 0.99]).unwrap()
        );
        assert_eq!(
            dynamic_rounds(&config, 0.99, 3).unwrap(),
            dynamic_rounds(&config, 0.99, 3).unwrap()
        );
    }

    /// LogStore's Figure 13 in shape: under heavy skew max-flow routing spreads the load far
    /// more evenly than hashing and overloads nothing; with no skew there is little to fix.
    #[test]
    fn max_flow_evens_out_skew_that_hashing_does_not() {
        for seed in [1, 2, 3, 42] {
            let rows = sweep(&config(seed), &[0.0, 0.99]).unwrap();
            let (uniform, skewed) = (&rows[0], &rows[1]);

            let hashing = &skewed.hashing;
            let max_flow = &skewed.max_flow;
            assert!(
                max_flow.utilisation_stddev * 3.0 < hashing.utilisation_stddev,
                "seed {seed}: max-flow sd {} against hashing's {}",
                max_flow.utilisation_stddev,
                hashing.utilisation_stddev
            );
            assert_eq!(
                (max_flow.overloaded, max_flow.above_target, max_flow.excess),
                (0, 0, 0)
            );
            assert!(
                hashing.max_utilisation > 100.0,
                "seed {seed}: hashing never overloads"
            );
            assert!(
                max_flow.rules < 1000 + 30,
                "seed {seed}: {} rules",
                max_flow.rules
            );
            assert_eq!(skewed.short, 0);

            let difference =
                uniform.hashing.utilisation_stddev - uniform.max_flow.utilisation_stddev;
            assert!(
                (0.0..2.0).contains(&difference),
                "seed {seed}: θ 0 sd {} against {}",
                uniform.max_flow.utilisation_stddev,
                uniform.hashing.utilisation_stddev
            );
            assert_eq!(uniform.max_flow.overloaded, 0);
            assert!(uniform.max_flow.rules <= 1000 + 3);
        }
    }

    #[test]
    fn varying_capacities_are_planned_to_their_targets() {
        let config = SimulationConfig {
            capacity_spread: 0.5,
            ..config(9)
        };
        let rows = sweep(&config, &[0.99]).unwrap();
        assert_eq!(rows[0].max_flow.above_target, 0);
        assert!(rows[0].max_flow.utilisation_stddev < rows[0].hashing.utilisation_stddev);
    }

    #[test]
    fn surges_are_absorbed_with_few_rule_changes() {
        let rounds = dynamic_rounds(&config(42), 0.99, 10).unwrap();
        assert_eq!(rounds.len(), 11);
        for round in &rounds {
            assert_eq!(round.short, 0, "round {}", round.round);
            assert_eq!(round.max_flow.above_target, 0, "round {}", round.round);
            assert!(
                round.changes.total() <= 20,
                "round {}: {:?}",
                round.round,
                round.changes
            );
            if !round.rebalanced {
                assert_eq!(round.changes.total(), 0);
            }
        }
        assert!(rounds[1..].iter().all(|round| round.surge.is_some()));
    }

    /// Planned to the edge of α, small rises make indexers hot again; levelled a few points
    /// above the mean, the plan rides out ±10% jitter without a re-plan.
    #[test]
    fn a_levelled_plan_rides_out_jitter() {
        let quiet = |balance_margin| SimulationConfig {
            surge: 0.0,
            balance_margin,
            ..config(42)
        };
        let replans = |config: &SimulationConfig| {
            let rounds = dynamic_rounds(config, 0.99, 10).unwrap();
            assert!(rounds.iter().all(|round| round.surge.is_none()));
            rounds[1..].iter().filter(|round| round.rebalanced).count()
        };
        assert_eq!(replans(&quiet(Some(crate::DEFAULT_BALANCE_MARGIN))), 0);
        assert!(replans(&quiet(None)) > 0);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let bad = [
            SimulationConfig {
                tenants: 0,
                ..config(1)
            },
            SimulationConfig {
                indexers: 0,
                ..config(1)
            },
            SimulationConfig {
                load: 0.0,
                ..config(1)
            },
            SimulationConfig {
                load: f64::NAN,
                ..config(1)
            },
            SimulationConfig {
                capacity_spread: 1.0,
                ..config(1)
            },
            SimulationConfig {
                target_utilisation: 1.2,
                ..config(1)
            },
            SimulationConfig {
                jitter: -0.1,
                ..config(1)
            },
        ];
        for config in bad {
            assert!(matches!(
                sweep(&config, &[0.5]),
                Err(RoutingError::Parameter { .. })
            ));
        }
        assert!(matches!(
            sweep(&config(1), &[-1.0]),
            Err(RoutingError::Parameter { .. })
        ));
    }
}
