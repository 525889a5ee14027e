//! The routing plan: which indexers take each tenant's ingest, and in what shares
//! (LogStore §4.1, Algorithm 1 with the max-flow `TrafficSchedule` of Algorithm 3).
//!
//! The model is LogStore's flow network with its shard layer folded into the indexers (an
//! indexer is both the shard and the worker here):
//!
//! ```text
//!            rate(t)              rate(t)                 level(i) ≤ α · capacity(i)
//! source ──────────▶ tenant t ──────────▶ indexer i ──────────────────────────────▶ sink
//! ```
//!
//! A tenant → indexer edge is a route rule. Rules start from the current table (a new tenant
//! starts on its home indexer, chosen by rendezvous hashing), and the plan:
//!
//! 1. applies the current table's shares to the observed rates; when no indexer goes above its
//!    target (α · capacity) the table stands, only its weights follow the rates: no rule
//!    changes while nothing is hot (Algorithm 1, lines 11-16);
//! 2. otherwise solves the maximum flow over the current rules, which moves traffic between a
//!    tenant's existing indexers without adding rules ("first adjusting the weights without
//!    increasing routing rules", §6.2). The sink edges carry each indexer's *level*: the mean
//!    utilisation plus a margin (5 points), at most α. LogStore plans to α itself; levelling
//!    lower is a hysteresis of ours (α detects, the level plans), so an indexer a re-plan
//!    relieves is not left at the edge of α, hot again at the next small rise
//!    ([`RouterConfig::balance_margin`]; `None` plans to α);
//! 3. while the flow carries less than it could (the whole offered rate, or every indexer's
//!    target when the offer is larger), adds one rule and solves again: for the largest tenant
//!    on the saturated side of the minimum cut, to its home indexer if that has room, else to
//!    the indexer with the most room (Algorithm 3, lines 9-19). Each rule added strictly raises
//!    the flow, so this ends;
//! 4. drops the rules the flow no longer needs, smallest tenants first: a rule goes when the
//!    maximum flow without it is the same. Afterwards no single rule can go, so planning again
//!    with the same rates changes nothing;
//! 5. reads each tenant's shares off the flow (Algorithm 3, lines 22-25).
//!
//! LogStore's per-shard limit on one tenant's traffic (Algorithm 2's
//! `CalculateAddRoutesNum`) is not modelled: a tenant→indexer edge is bounded by the tenant's
//! rate only.
//!
//! Invariants of a [`Plan`]: every tenant of the input has at least one route; every route
//! names a known indexer, once; the planned rates of a tenant sum to what it was given (its
//! rate, or less only when the offer exceeds the total target, and then it is listed in
//! [`Plan::short`]); the planned rates into an indexer never exceed its target. Rate is never
//! dropped silently: what does not fit is reported, for backpressure (§4.2) or more indexers.

use crate::maxflow::{EdgeId, FlowNetwork};
use crate::RoutingError;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// LogStore's high watermark α (§4.1.1): an indexer is planned to at most 85% of its capacity,
/// which leaves room for the traffic to grow between two plans (LogStore plans every 300 s).
pub const DEFAULT_TARGET_UTILISATION: f64 = 0.85;

/// An indexer and the ingest it can take, in bytes per second.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Indexer {
    pub name: String,
    pub capacity: u64,
}

/// A tenant's observed ingest rate, in bytes per second.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantRate {
    pub tenant: String,
    pub rate: u64,
}

/// One rule of a routing table: send part of a tenant's traffic to `indexer`. `rate` is the
/// planned bytes per second; a router only needs its proportion among the tenant's routes
/// ([`RoutingTable::shares`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub indexer: String,
    pub rate: u64,
}

/// How far above the mean utilisation a re-plan levels the indexers: 5 points leaves the
/// indexers a re-plan relieves as much room to grow as the others, where planning them to α
/// would leave them at the edge, hot again at the next small rise (§4.1: "hot spots will
/// oscillate repeatedly"). Chosen with `quarry simulate-routing` (BENCHMARKS.md, 1000 tenants
/// on 8 indexers at 70% load, θ = 0.99, ten seeds): the utilisation's standard deviation ends
/// 3.7-9.3x below hashing's instead of 1.8-4.2x when planning to α, for 1-3 more rules, and
/// with every rate varying ±10% a round the plan was re-made in 0 of 10 rounds instead of 3.
pub const DEFAULT_BALANCE_MARGIN: f64 = 0.05;

/// Planning parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct RouterConfig {
    /// LogStore's α, in (0, 1]: an indexer offered more than this share of its capacity is hot
    /// and makes the router re-plan, and no plan puts an indexer above it.
    pub target_utilisation: f64,
    /// A re-plan levels every indexer to at most the mean utilisation plus this margin (and at
    /// most α); `None` plans to α only, as LogStore's Algorithm 3 does.
    pub balance_margin: Option<f64>,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            target_utilisation: DEFAULT_TARGET_UTILISATION,
            balance_margin: Some(DEFAULT_BALANCE_MARGIN),
        }
    }
}

/// Each tenant's routes (LogStore's `Rules{T0: {P0: X00, P1: X01}, T1: {P3: X13}}`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoutingTable {
    routes: BTreeMap<String, Vec<Route>>,
}

/// How two routing tables' rules differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleChanges {
    /// Tenant → indexer rules in the new table only.
    pub added: usize,
    /// Tenant → indexer rules in the old table only.
    pub removed: usize,
}

impl RuleChanges {
    pub fn total(&self) -> usize {
        self.added + self.removed
    }
}

impl RoutingTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Plain hashing: every tenant on its home indexer only (Algorithm 1, lines 4-7).
    pub fn hashed(rates: &[TenantRate], indexers: &[Indexer]) -> Result<Self, RoutingError> {
        let inputs = Inputs::new(rates, indexers, &RouterConfig::default())?;
        let mut table = Self::new();
        for (tenant, home) in rates.iter().zip(&inputs.homes) {
            table.insert(
                &tenant.tenant,
                vec![Route {
                    indexer: indexers[*home].name.clone(),
                    rate: tenant.rate,
                }],
            );
        }
        Ok(table)
    }

    /// Sets a tenant's routes, replacing any it had.
    pub fn insert(&mut self, tenant: &str, routes: Vec<Route>) {
        self.routes.insert(tenant.to_owned(), routes);
    }

    pub fn routes(&self, tenant: &str) -> Option<&[Route]> {
        self.routes.get(tenant).map(Vec::as_slice)
    }

    /// Tenants in name order, with their routes.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[Route])> {
        self.routes
            .iter()
            .map(|(tenant, routes)| (tenant.as_str(), routes.as_slice()))
    }

    /// Number of tenants.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Number of tenant → indexer rules, the quantity LogStore minimises.
    pub fn rule_count(&self) -> usize {
        self.routes.values().map(Vec::len).sum()
    }

    /// The share of the tenant's traffic each of its indexers takes, summing to 1 (equal shares
    /// when every route is planned at rate 0).
    pub fn shares(&self, tenant: &str) -> Option<Vec<(&str, f64)>> {
        let routes = self.routes.get(tenant)?;
        let total: u128 = routes.iter().map(|route| u128::from(route.rate)).sum();
        Some(
            routes
                .iter()
                .map(|route| {
                    let share = if total == 0 {
                        1.0 / routes.len() as f64
                    } else {
                        route.rate as f64 / total as f64
                    };
                    (route.indexer.as_str(), share)
                })
                .collect(),
        )
    }

    /// The rules added and removed going from `self` to `next`.
    pub fn rule_changes(&self, next: &RoutingTable) -> RuleChanges {
        let rules = |table: &RoutingTable| -> BTreeSet<(String, String)> {
            table
                .routes
                .iter()
                .flat_map(|(tenant, routes)| {
                    routes
                        .iter()
                        .map(move |route| (tenant.clone(), route.indexer.clone()))
                })
                .collect()
        };
        let (before, after) = (rules(self), rules(next));
        RuleChanges {
            added: after.difference(&before).count(),
            removed: before.difference(&after).count(),
        }
    }
}

/// A routing plan and what it could not carry.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub table: RoutingTable,
    /// Whether the flow was solved. False when the current table already kept every indexer
    /// at or under its target: it stands, with its weights applied to the new rates.
    pub rebalanced: bool,
    /// The offered rate: the sum of the tenants' rates.
    pub demand: u64,
    /// The sum of the indexers' targets (α · capacity).
    pub capacity: u64,
    /// The rate the plan carries within the targets: `min(demand, capacity)`.
    pub routed: u64,
    /// Tenants given less than their rate, which happens only when `demand > capacity`.
    pub short: Vec<Shortfall>,
}

impl Plan {
    /// The offered rate exceeds what the indexers can take at their target: the plan is the
    /// best possible, the tenants in `short` need backpressure, the cluster more indexers
    /// (Algorithm 1, line 25).
    pub fn is_overloaded(&self) -> bool {
        self.demand > self.capacity
    }
}

/// A tenant the plan gives less than its rate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shortfall {
    pub tenant: String,
    pub rate: u64,
    pub routed: u64,
}

/// Plans the routes of `rates` over `indexers`, starting from `current` (see the module
/// documentation). Tenants of `current` missing from `rates` are left out of the plan; routes
/// to indexers missing from `indexers` are dropped.
pub fn plan(
    rates: &[TenantRate],
    indexers: &[Indexer],
    current: &RoutingTable,
    config: &RouterConfig,
) -> Result<Plan, RoutingError> {
    let inputs = Inputs::new(rates, indexers, config)?;
    let splits: Vec<Vec<(usize, u64)>> = (0..rates.len())
        .map(|tenant| inputs.split_by_table(current, tenant, rates[tenant].rate))
        .collect();
    let mut loads = vec![0u64; indexers.len()];
    for split in &splits {
        for &(indexer, rate) in split {
            // Cannot overflow: the rates' sum fits in u64 (checked by `Inputs::new`).
            loads[indexer] += rate;
        }
    }
    let hot = loads
        .iter()
        .zip(&inputs.targets)
        .any(|(load, target)| load > target);
    if !hot {
        return Ok(Plan {
            table: inputs.table(splits),
            rebalanced: false,
            demand: inputs.demand,
            capacity: inputs.capacity,
            routed: inputs.demand,
            short: Vec::new(),
        });
    }

    // Each tenant's heaviest current route first: the depth-first search fills the first arcs
    // it finds, so the flow tends to keep sending what the table already sends.
    let rules: Vec<Vec<usize>> = splits
        .into_iter()
        .map(|mut split| {
            split.sort_by_key(|&(_, weight)| std::cmp::Reverse(weight));
            split.into_iter().map(|(indexer, _)| indexer).collect()
        })
        .collect();
    let mut graph = TrafficGraph::solve(&inputs, rules);
    let reachable = u128::from(inputs.demand.min(inputs.levels.iter().sum()));
    while graph.value < reachable && graph.add_rule_across_cut(&inputs) {}
    let graph = graph.drop_unneeded_rules(&inputs);

    let flows: Vec<Vec<(usize, u64)>> = (0..rates.len())
        .map(|tenant| graph.tenant_flows(tenant))
        .collect();
    let short = rates
        .iter()
        .zip(&flows)
        .filter_map(|(tenant, flows)| {
            let routed = flows.iter().map(|&(_, rate)| rate).sum();
            (routed < tenant.rate).then(|| Shortfall {
                tenant: tenant.tenant.clone(),
                rate: tenant.rate,
                routed,
            })
        })
        .collect();
    Ok(Plan {
        table: inputs.table(flows),
        rebalanced: true,
        demand: inputs.demand,
        capacity: inputs.capacity,
        // Cannot truncate: the flow is at most the demand, a u64.
        routed: graph.value as u64,
        short,
    })
}

/// The indexer a tenant goes to when nothing else is known: weighted rendezvous hashing
/// (highest random weight), so each indexer is the home of a share of tenants proportional to
/// its capacity, and adding or removing an indexer moves only the tenants it gains or loses.
/// `None` when there are no indexers.
pub fn home_indexer(tenant: &str, indexers: &[Indexer]) -> Option<usize> {
    let tenant_hash = hash_name(tenant);
    let indexer_hashes: Vec<u64> = indexers.iter().map(|ix| hash_name(&ix.name)).collect();
    home_of(tenant_hash, indexers, &indexer_hashes)
}

/// The traffic each indexer is offered when the tenants send `rates` by the table's shares (a
/// tenant not in the table goes to its home indexer, as a router would send it), in
/// `indexers`' order. A short tenant's whole rate is offered: this is what arrives without
/// backpressure.
pub fn offered_loads(
    table: &RoutingTable,
    rates: &[TenantRate],
    indexers: &[Indexer],
) -> Result<Vec<u64>, RoutingError> {
    let inputs = Inputs::new(rates, indexers, &RouterConfig::default())?;
    let mut loads = vec![0u64; indexers.len()];
    for (tenant, rate) in rates.iter().enumerate() {
        for (indexer, rate) in inputs.split_by_table(table, tenant, rate.rate) {
            loads[indexer] += rate;
        }
    }
    Ok(loads)
}

/// Traffic that goes to a different indexer under `next` than under `previous`, at `rates`:
/// the sum over tenants and indexers of what an indexer gains. A new rule sends a tenant's
/// traffic where its data was not, so this is the reshuffling a plan costs.
pub fn moved_rate(
    previous: &RoutingTable,
    next: &RoutingTable,
    rates: &[TenantRate],
    indexers: &[Indexer],
) -> Result<u64, RoutingError> {
    let inputs = Inputs::new(rates, indexers, &RouterConfig::default())?;
    let mut moved = 0;
    for (tenant, rate) in rates.iter().enumerate() {
        let before: HashMap<usize, u64> = inputs
            .split_by_table(previous, tenant, rate.rate)
            .into_iter()
            .collect();
        for (indexer, after) in inputs.split_by_table(next, tenant, rate.rate) {
            moved += after.saturating_sub(before.get(&indexer).copied().unwrap_or(0));
        }
    }
    Ok(moved)
}

/// The checked inputs of a plan, indexed by position.
struct Inputs<'a> {
    rates: &'a [TenantRate],
    indexers: &'a [Indexer],
    index_of: HashMap<&'a str, usize>,
    homes: Vec<usize>,
    /// α · capacity of each indexer.
    targets: Vec<u64>,
    /// What a re-plan sends each indexer at most: its target, or less to level the indexers
    /// (`RouterConfig::balance_margin`). Their sum is at least `min(demand, capacity)`.
    levels: Vec<u64>,
    demand: u64,
    capacity: u64,
}

impl<'a> Inputs<'a> {
    fn new(
        rates: &'a [TenantRate],
        indexers: &'a [Indexer],
        config: &RouterConfig,
    ) -> Result<Self, RoutingError> {
        let alpha = config.target_utilisation;
        if !(alpha > 0.0 && alpha <= 1.0) {
            return Err(RoutingError::Parameter {
                name: "target utilisation",
                value: alpha,
                expected: "in (0, 1]",
            });
        }
        if indexers.is_empty() {
            return Err(RoutingError::NoIndexers);
        }
        let mut index_of = HashMap::with_capacity(indexers.len());
        for (position, indexer) in indexers.iter().enumerate() {
            if index_of.insert(indexer.name.as_str(), position).is_some() {
                return Err(RoutingError::DuplicateIndexer {
                    name: indexer.name.clone(),
                });
            }
        }
        let mut seen = HashSet::with_capacity(rates.len());
        for rate in rates {
            if !seen.insert(rate.tenant.as_str()) {
                return Err(RoutingError::DuplicateTenant {
                    tenant: rate.tenant.clone(),
                });
            }
        }
        let demand = checked_sum(rates.iter().map(|rate| rate.rate), "rate")?;
        let targets: Vec<u64> = indexers
            .iter()
            // At most the capacity: alpha <= 1, and the min guards the f64 rounding of
            // capacities past 2^53.
            .map(|indexer| ((indexer.capacity as f64 * alpha).floor() as u64).min(indexer.capacity))
            .collect();
        let raw_capacity = checked_sum(indexers.iter().map(|ix| ix.capacity), "capacity")?;
        let capacity = checked_sum(targets.iter().copied(), "capacity")?;
        let levels = match config.balance_margin {
            None => targets.clone(),
            Some(margin) => {
                if !(margin >= 0.0 && margin.is_finite()) {
                    return Err(RoutingError::Parameter {
                        name: "balance margin",
                        value: margin,
                        expected: ">= 0",
                    });
                }
                let mean = demand as f64 / raw_capacity.max(1) as f64;
                let levels: Vec<u64> = indexers
                    .iter()
                    .zip(&targets)
                    .map(|(indexer, &target)| {
                        let level = (indexer.capacity as f64 * (mean + margin)).round();
                        (level as u64).min(target)
                    })
                    .collect();
                // Rounding must not leave a plan short that fits within the targets.
                let sum: u128 = levels.iter().map(|&level| u128::from(level)).sum();
                if sum < u128::from(demand.min(capacity)) {
                    targets.clone()
                } else {
                    levels
                }
            }
        };
        let indexer_hashes: Vec<u64> = indexers.iter().map(|ix| hash_name(&ix.name)).collect();
        let homes = rates
            .iter()
            .map(|rate| {
                // Cannot fail: `indexers` is not empty.
                home_of(hash_name(&rate.tenant), indexers, &indexer_hashes).unwrap_or(0)
            })
            .collect();
        Ok(Self {
            rates,
            indexers,
            index_of,
            homes,
            targets,
            levels,
            demand,
            capacity,
        })
    }

    /// The tenant's rate split by the table's weights over its known indexers (several routes
    /// to one indexer add up), or all to its home when it has none.
    fn split_by_table(&self, table: &RoutingTable, tenant: usize, rate: u64) -> Vec<(usize, u64)> {
        let mut weights: Vec<(usize, u64)> = Vec::new();
        for route in table.routes(&self.rates[tenant].tenant).unwrap_or(&[]) {
            let Some(&indexer) = self.index_of.get(route.indexer.as_str()) else {
                continue;
            };
            match weights.iter_mut().find(|(known, _)| *known == indexer) {
                Some((_, weight)) => *weight = weight.saturating_add(route.rate),
                None => weights.push((indexer, route.rate)),
            }
        }
        if weights.is_empty() {
            weights.push((self.homes[tenant], 1));
        }
        split(rate, &weights)
    }

    /// A table from each tenant's (indexer, rate) routes, in `rates`' order.
    fn table(&self, routes: Vec<Vec<(usize, u64)>>) -> RoutingTable {
        let mut table = RoutingTable::new();
        for (tenant, routes) in self.rates.iter().zip(routes) {
            let routes = routes
                .into_iter()
                .map(|(indexer, rate)| Route {
                    indexer: self.indexers[indexer].name.clone(),
                    rate,
                })
                .collect();
            table.insert(&tenant.tenant, routes);
        }
        table
    }
}

fn checked_sum(values: impl Iterator<Item = u64>, what: &'static str) -> Result<u64, RoutingError> {
    values
        .into_iter()
        .try_fold(0u64, u64::checked_add)
        .ok_or(RoutingError::TotalOverflow { what })
}

/// `rate` in proportion to `weights` (equal parts when they are all 0), in whole units by
/// largest remainder so the parts sum to `rate` exactly; with weights that already sum to
/// `rate` the parts are the weights.
fn split(rate: u64, weights: &[(usize, u64)]) -> Vec<(usize, u64)> {
    let sum: u128 = weights.iter().map(|&(_, weight)| u128::from(weight)).sum();
    let equal = sum == 0;
    let total = if equal { weights.len() as u128 } else { sum };
    if total == 0 {
        return Vec::new();
    }
    let mut parts: Vec<(usize, u64, u128)> = weights
        .iter()
        .map(|&(indexer, weight)| {
            let weight = if equal { 1 } else { u128::from(weight) };
            let exact = u128::from(rate) * weight;
            // Cannot truncate: a part of `rate` is at most `rate`.
            (indexer, (exact / total) as u64, exact % total)
        })
        .collect();
    let given: u64 = parts.iter().map(|&(_, part, _)| part).sum();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| parts[b].2.cmp(&parts[a].2).then(a.cmp(&b)));
    // Fewer than `parts.len()` units are left over: each part lost less than one.
    for &position in order.iter().take((rate - given) as usize) {
        parts[position].1 += 1;
    }
    parts
        .into_iter()
        .map(|(indexer, part, _)| (indexer, part))
        .collect()
}

const SOURCE: usize = 0;

/// The flow network of a set of rules, solved.
struct TrafficGraph {
    network: FlowNetwork,
    /// Each tenant's rules: (indexer, edge), in the order they were added.
    rules: Vec<Vec<(usize, EdgeId)>>,
    /// Indexer → sink edges.
    sink_edges: Vec<EdgeId>,
    value: u128,
}

impl TrafficGraph {
    fn tenant_node(tenant: usize) -> usize {
        1 + tenant
    }

    fn indexer_node(inputs: &Inputs, indexer: usize) -> usize {
        1 + inputs.rates.len() + indexer
    }

    fn sink(inputs: &Inputs) -> usize {
        1 + inputs.rates.len() + inputs.indexers.len()
    }

    /// The network of `rules` (each tenant's indexers) with its maximum flow.
    fn solve(inputs: &Inputs, rules: Vec<Vec<usize>>) -> Self {
        let sink = Self::sink(inputs);
        let mut network = FlowNetwork::new(sink + 1);
        for (tenant, rate) in inputs.rates.iter().enumerate() {
            network.add_edge(SOURCE, Self::tenant_node(tenant), rate.rate);
        }
        let rules = rules
            .into_iter()
            .enumerate()
            .map(|(tenant, indexers)| {
                indexers
                    .into_iter()
                    .map(|indexer| {
                        let edge = network.add_edge(
                            Self::tenant_node(tenant),
                            Self::indexer_node(inputs, indexer),
                            inputs.rates[tenant].rate,
                        );
                        (indexer, edge)
                    })
                    .collect()
            })
            .collect();
        let sink_edges = (0..inputs.indexers.len())
            .map(|indexer| {
                network.add_edge(
                    Self::indexer_node(inputs, indexer),
                    sink,
                    inputs.levels[indexer],
                )
            })
            .collect();
        let value = network.max_flow(SOURCE, sink);
        Self {
            network,
            rules,
            sink_edges,
            value,
        }
    }

    /// Adds the rule that lets the flow grow (step 3 of the module documentation) and solves
    /// again from the flow there is; false when no rule can help, every indexer being at its
    /// level.
    fn add_rule_across_cut(&mut self, inputs: &Inputs) -> bool {
        let reached = self.network.residual_reachable(SOURCE);
        let room = |graph: &Self, indexer: usize| {
            inputs.levels[indexer] - graph.network.flow(graph.sink_edges[indexer])
        };
        // Indexers outside the cut with room: traffic sent there reaches the sink.
        let open: Vec<usize> = (0..inputs.indexers.len())
            .filter(|&indexer| {
                !reached[Self::indexer_node(inputs, indexer)] && room(self, indexer) > 0
            })
            .collect();
        // The largest tenant inside the cut: the one whose move relieves the saturated
        // indexers most with one rule (LogStore's hot tenant, Algorithm 3 lines 3-6).
        let tenant = (0..inputs.rates.len())
            .filter(|&tenant| reached[Self::tenant_node(tenant)])
            .filter(|&tenant| open.iter().any(|&indexer| !self.has_rule(tenant, indexer)))
            .max_by(|&a, &b| {
                inputs.rates[a]
                    .rate
                    .cmp(&inputs.rates[b].rate)
                    .then(b.cmp(&a))
            });
        let Some(tenant) = tenant else {
            return false;
        };
        let home = inputs.homes[tenant];
        let candidates = open
            .iter()
            .copied()
            .filter(|&indexer| !self.has_rule(tenant, indexer));
        let indexer = if open.contains(&home) && !self.has_rule(tenant, home) {
            home
        } else {
            // Not empty: the tenant was chosen for lacking an open indexer.
            candidates
                .max_by(|&a, &b| room(self, a).cmp(&room(self, b)).then(b.cmp(&a)))
                .unwrap_or(home)
        };
        let edge = self.network.add_edge(
            Self::tenant_node(tenant),
            Self::indexer_node(inputs, indexer),
            inputs.rates[tenant].rate,
        );
        self.rules[tenant].push((indexer, edge));
        self.value = self.network.max_flow(SOURCE, Self::sink(inputs));
        true
    }

    fn has_rule(&self, tenant: usize, indexer: usize) -> bool {
        self.rules[tenant]
            .iter()
            .any(|&(known, _)| known == indexer)
    }

    /// Step 4: without the rules the maximum flow does not need. First those that carry
    /// nothing (the flow stays a maximum flow without them; a tenant keeps one rule, its home
    /// if it has it), then, smallest tenants first and each tenant's least used rule first, a
    /// rule whose removal leaves the maximum flow's value unchanged. Removing rules never
    /// raises the maximum, so a rule found needed stays needed: at the end no single rule can
    /// go, and every maximum flow of the result uses every rule of a tenant that has several.
    fn drop_unneeded_rules(self, inputs: &Inputs) -> Self {
        let value = self.value;
        let mut rules: Vec<Vec<usize>> = (0..inputs.rates.len())
            .map(|tenant| {
                let used: Vec<usize> = self.rules[tenant]
                    .iter()
                    .filter(|&&(_, edge)| self.network.flow(edge) > 0)
                    .map(|&(indexer, _)| indexer)
                    .collect();
                if !used.is_empty() {
                    return used;
                }
                let home = inputs.homes[tenant];
                let keep = if self.has_rule(tenant, home) {
                    home
                } else {
                    // A tenant always has a rule: it starts with its home or its current ones.
                    self.rules[tenant]
                        .first()
                        .map_or(home, |&(indexer, _)| indexer)
                };
                vec![keep]
            })
            .collect();
        let mut graph = Self::solve(inputs, rules.clone());
        debug_assert_eq!(graph.value, value);

        let mut tenants: Vec<usize> = (0..inputs.rates.len())
            .filter(|&tenant| rules[tenant].len() > 1)
            .collect();
        tenants.sort_by_key(|&tenant| (inputs.rates[tenant].rate, tenant));
        let mut needed: HashSet<(usize, usize)> = HashSet::new();
        for tenant in tenants {
            'tenant: while rules[tenant].len() > 1 {
                let mut by_use: Vec<(u64, usize)> = graph.rules[tenant]
                    .iter()
                    .map(|&(indexer, edge)| (graph.network.flow(edge), indexer))
                    .filter(|&(_, indexer)| !needed.contains(&(tenant, indexer)))
                    .collect();
                by_use.sort();
                for (_, indexer) in by_use {
                    let mut trial = rules.clone();
                    trial[tenant].retain(|&known| known != indexer);
                    let trial_graph = Self::solve(inputs, trial.clone());
                    if trial_graph.value == value {
                        rules = trial;
                        graph = trial_graph;
                        continue 'tenant;
                    }
                    needed.insert((tenant, indexer));
                }
                break;
            }
        }
        graph
    }

    /// The tenant's rules with the flow each carries, by indexer position.
    fn tenant_flows(&self, tenant: usize) -> Vec<(usize, u64)> {
        let mut flows: Vec<(usize, u64)> = self.rules[tenant]
            .iter()
            .map(|&(indexer, edge)| (indexer, self.network.flow(edge)))
            .collect();
        flows.sort_unstable();
        flows
    }
}

/// FNV-1a over the name's bytes, then mixed: a hash that is the same on every platform and
/// Rust version (the standard library's is not promised to be), so homes do not move on an
/// upgrade.
fn hash_name(name: &str) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for &byte in name.as_bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    mix64(hash)
}

/// SplitMix64's finalizer: a bijective mix of 64 bits.
pub(crate) fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Weighted rendezvous hashing: each indexer scores `-capacity / ln(u)` with `u` uniform in
/// (0, 1) from the pair's hash, which makes the highest score fall on an indexer with
/// probability proportional to its capacity (Schindelhauer and Schomaker, "Weighted
/// distributed hash tables", 2005). Ties (all capacities 0) go to the highest hash.
fn home_of(tenant_hash: u64, indexers: &[Indexer], indexer_hashes: &[u64]) -> Option<usize> {
    indexers
        .iter()
        .zip(indexer_hashes)
        .enumerate()
        .map(|(position, (indexer, &indexer_hash))| {
            let bits = mix64(tenant_hash ^ indexer_hash);
            let unit = ((bits >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            let score = -(indexer.capacity as f64) / libm::log(unit);
            (score, bits, position)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map(|(_, _, position)| position)
}

#[cfg(test)]
mod tests;
