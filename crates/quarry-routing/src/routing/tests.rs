use super::*;
use proptest::prelude::*;

fn indexers(capacities: &[u64]) -> Vec<Indexer> {
    capacities
        .iter()
        .enumerate()
        .map(|(position, &capacity)| Indexer {
            name: format!("indexer-{position}"),
            capacity,
        })
        .collect()
}

fn tenants(rates: &[u64]) -> Vec<TenantRate> {
    rates
        .iter()
        .enumerate()
        .map(|(position, &rate)| TenantRate {
            tenant: format!("tenant-{position:04}"),
            rate,
        })
        .collect()
}

fn config(target_utilisation: f64) -> RouterConfig {
    RouterConfig {
        target_utilisation,
        ..RouterConfig::default()
    }
}

fn home(tenant: &TenantRate, indexers: &[Indexer]) -> String {
    let position = home_indexer(&tenant.tenant, indexers).expect("indexers");
    indexers[position].name.clone()
}

/// Every invariant of the module documentation, checked on a plan of `rates` over `indexers`.
fn assert_plan_invariants(plan: &Plan, rates: &[TenantRate], indexers: &[Indexer], alpha: f64) {
    let targets: HashMap<&str, u64> = indexers
        .iter()
        .map(|ix| {
            let target = ((ix.capacity as f64 * alpha).floor() as u64).min(ix.capacity);
            (ix.name.as_str(), target)
        })
        .collect();
    let demand: u64 = rates.iter().map(|rate| rate.rate).sum();
    let capacity: u64 = targets.values().sum();
    assert_eq!(plan.demand, demand);
    assert_eq!(plan.capacity, capacity);
    assert_eq!(plan.table.len(), rates.len(), "one entry per tenant");

    let mut loads: HashMap<&str, u64> = HashMap::new();
    let mut missing = 0;
    for rate in rates {
        let routes = plan
            .table
            .routes(&rate.tenant)
            .expect("every tenant routed");
        assert!(!routes.is_empty(), "{} has no route", rate.tenant);
        let distinct: HashSet<&str> = routes.iter().map(|r| r.indexer.as_str()).collect();
        assert_eq!(
            distinct.len(),
            routes.len(),
            "an indexer twice for {}",
            rate.tenant
        );
        let routed: u64 = routes.iter().map(|route| route.rate).sum();
        assert!(
            routed <= rate.rate,
            "{} given more than its rate",
            rate.tenant
        );
        if plan.rebalanced && routes.len() > 1 {
            // A plan that stands keeps the rules it was given; a re-plan keeps only used ones.
            assert!(
                routes.iter().all(|route| route.rate > 0),
                "an unused rule of {}",
                rate.tenant
            );
        }
        for route in routes {
            assert!(
                targets.contains_key(route.indexer.as_str()),
                "unknown indexer"
            );
            *loads.entry(route.indexer.as_str()).or_default() += route.rate;
        }
        let short = plan.short.iter().find(|short| short.tenant == rate.tenant);
        match short {
            Some(short) => {
                assert_eq!((short.rate, short.routed), (rate.rate, routed));
                assert!(routed < rate.rate);
                missing += rate.rate - routed;
            }
            None => assert_eq!(routed, rate.rate, "{} silently short", rate.tenant),
        }
    }
    for (indexer, load) in &loads {
        assert!(
            *load <= targets[indexer],
            "{indexer} planned to {load} > {}",
            targets[indexer]
        );
    }
    if demand <= capacity {
        assert!(plan.short.is_empty());
        assert!(!plan.is_overloaded());
        assert_eq!(plan.routed, demand);
    } else {
        assert!(plan.is_overloaded());
        assert_eq!(
            plan.routed, capacity,
            "an overloaded plan fills every indexer's target"
        );
        assert_eq!(missing, demand - capacity);
    }
}

#[test]
fn split_is_proportional_and_exact() {
    type Parts = &'static [(usize, u64)];
    let cases: &[(u64, Parts, Parts)] = &[
        (10, &[(0, 1), (1, 1)], &[(0, 5), (1, 5)]),
        (10, &[(0, 0), (1, 0), (2, 0)], &[(0, 4), (1, 3), (2, 3)]),
        (10, &[(0, 2), (1, 1)], &[(0, 7), (1, 3)]),
        (7, &[(4, 3), (2, 4)], &[(4, 3), (2, 4)]),
        (0, &[(0, 5), (1, 9)], &[(0, 0), (1, 0)]),
        (1, &[(0, 1), (1, 1)], &[(0, 1), (1, 0)]),
        (
            u64::MAX,
            &[(0, u64::MAX), (1, 1)],
            &[(0, u64::MAX - 1), (1, 1)],
        ),
    ];
    for &(rate, weights, expected) in cases {
        assert_eq!(split(rate, weights), expected, "split({rate}, {weights:?})");
    }
}

#[test]
fn a_table_that_keeps_every_indexer_under_target_stands() {
    // 100 tenants of 1 over 4 indexers of 100: hashing leaves each far under 85.
    let indexers = indexers(&[100, 100, 100, 100]);
    let rates = tenants(&[1; 100]);
    let plan = plan(
        &rates,
        &indexers,
        &RoutingTable::new(),
        &RouterConfig::default(),
    )
    .unwrap();
    assert!(!plan.rebalanced);
    assert_eq!(plan.table, RoutingTable::hashed(&rates, &indexers).unwrap());
    for rate in &rates {
        let routes = plan.table.routes(&rate.tenant).unwrap();
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].indexer, home(rate, &indexers));
    }
    assert_plan_invariants(&plan, &rates, &indexers, DEFAULT_TARGET_UTILISATION);
}

#[test]
fn only_the_hot_tenant_gains_rules() {
    let indexers = indexers(&[100, 100, 100, 100]);
    let mut rates = tenants(&[1; 100]);
    rates.push(TenantRate {
        tenant: "big".to_owned(),
        rate: 120,
    });
    let hashed = RoutingTable::hashed(&rates, &indexers).unwrap();
    // Planned to α (85), "big" needs one more indexer; levelled to the mean (55%) plus 5
    // points, the small tenants fill about 25 of each indexer's 60 and "big" needs all four.
    for (balance_margin, big_rules) in [(None, 2), (Some(DEFAULT_BALANCE_MARGIN), 4)] {
        let config = RouterConfig {
            balance_margin,
            ..RouterConfig::default()
        };
        let plan = plan(&rates, &indexers, &hashed, &config).unwrap();
        assert!(plan.rebalanced);
        assert_plan_invariants(&plan, &rates, &indexers, DEFAULT_TARGET_UTILISATION);
        for rate in &rates[..100] {
            let routes = plan.table.routes(&rate.tenant).unwrap();
            assert_eq!(routes.len(), 1, "{} was split", rate.tenant);
            assert_eq!(
                routes[0].indexer,
                home(rate, &indexers),
                "{} moved",
                rate.tenant
            );
        }
        let big = plan.table.routes("big").unwrap();
        assert_eq!(big.len(), big_rules, "{big:?}");
        assert!(big
            .iter()
            .any(|route| route.indexer == home(&rates[100], &indexers)));
        let added = big_rules - 1;
        assert_eq!(
            hashed.rule_changes(&plan.table),
            RuleChanges { added, removed: 0 }
        );
    }
}

#[test]
fn a_replan_levels_the_indexers_near_the_mean() {
    // 4 indexers of 100, 200 offered (50%): levels of 55 each.
    let indexers = indexers(&[100, 100, 100, 100]);
    let rates = tenants(&[90, 50, 30, 20, 10]);
    let plan = plan(
        &rates,
        &indexers,
        &RoutingTable::new(),
        &RouterConfig::default(),
    )
    .unwrap();
    assert!(plan.rebalanced, "a tenant of 90 is over 85 wherever it is");
    assert_plan_invariants(&plan, &rates, &indexers, DEFAULT_TARGET_UTILISATION);
    let loads = offered_loads(&plan.table, &rates, &indexers).unwrap();
    assert!(loads.iter().all(|&load| load <= 55), "{loads:?}");
}

#[test]
fn weights_move_before_rules_are_added() {
    // "a" is on both indexers but sends almost everything to indexer-0, which is hot; the
    // flow shifts its weights and adds no rule. 120 on 200 is 60%: each indexer is levelled to
    // 65, and "a" keeps as much on indexer-0 as that allows.
    let indexers = indexers(&[100, 100]);
    let rates = vec![
        TenantRate {
            tenant: "a".to_owned(),
            rate: 100,
        },
        TenantRate {
            tenant: "b".to_owned(),
            rate: 20,
        },
    ];
    let mut current = RoutingTable::new();
    let route = |indexer: &str, rate| Route {
        indexer: indexer.to_owned(),
        rate,
    };
    current.insert("a", vec![route("indexer-0", 95), route("indexer-1", 5)]);
    current.insert("b", vec![route("indexer-0", 20)]);
    let plan = plan(&rates, &indexers, &current, &RouterConfig::default()).unwrap();
    assert!(plan.rebalanced);
    assert_eq!(current.rule_changes(&plan.table).total(), 0);
    assert_eq!(
        plan.table.routes("a").unwrap(),
        &[route("indexer-0", 45), route("indexer-1", 55)]
    );
    assert_plan_invariants(&plan, &rates, &indexers, DEFAULT_TARGET_UTILISATION);
}

#[test]
fn rules_the_traffic_no_longer_needs_are_dropped() {
    // A surge spread "a" over three indexers; at its old rate, with "b" now hot, the plan
    // needs one rule of "a" at most.
    let indexers = indexers(&[100, 100, 100]);
    let rates = vec![
        TenantRate {
            tenant: "a".to_owned(),
            rate: 30,
        },
        TenantRate {
            tenant: "b".to_owned(),
            rate: 90,
        },
    ];
    let route = |indexer: &str, rate| Route {
        indexer: indexer.to_owned(),
        rate,
    };
    let mut current = RoutingTable::new();
    current.insert(
        "a",
        vec![
            route("indexer-0", 80),
            route("indexer-1", 80),
            route("indexer-2", 80),
        ],
    );
    current.insert("b", vec![route("indexer-2", 1)]);
    let plan = plan(&rates, &indexers, &current, &RouterConfig::default()).unwrap();
    assert!(plan.rebalanced);
    assert_plan_invariants(&plan, &rates, &indexers, DEFAULT_TARGET_UTILISATION);
    assert_eq!(plan.table.routes("a").unwrap().len(), 1, "{:?}", plan.table);
    assert_eq!(plan.table.routes("b").unwrap().len(), 2);
}

#[test]
fn an_overloaded_plan_fills_every_target_and_names_the_short_tenants() {
    let indexers = indexers(&[100, 100]);
    let rates = tenants(&[120, 80]);
    let plan = plan(
        &rates,
        &indexers,
        &RoutingTable::new(),
        &RouterConfig::default(),
    )
    .unwrap();
    assert!(plan.is_overloaded());
    assert_eq!((plan.demand, plan.capacity, plan.routed), (200, 170, 170));
    let missing: u64 = plan
        .short
        .iter()
        .map(|short| short.rate - short.routed)
        .sum();
    assert_eq!(missing, 30);
    assert_plan_invariants(&plan, &rates, &indexers, DEFAULT_TARGET_UTILISATION);
    // The router is offered every byte: what is short goes over the targets, not away.
    let offered = offered_loads(&plan.table, &rates, &indexers).unwrap();
    assert_eq!(offered.iter().sum::<u64>(), 200);
}

#[test]
fn routes_to_unknown_indexers_are_dropped() {
    let indexers = indexers(&[100, 100]);
    let rates = tenants(&[10]);
    let mut current = RoutingTable::new();
    current.insert(
        "tenant-0000",
        vec![Route {
            indexer: "gone".to_owned(),
            rate: 10,
        }],
    );
    current.insert(
        "left",
        vec![Route {
            indexer: "indexer-0".to_owned(),
            rate: 1,
        }],
    );
    let plan = plan(&rates, &indexers, &current, &RouterConfig::default()).unwrap();
    assert_eq!(plan.table.len(), 1, "tenants without a rate are left out");
    let routes = plan.table.routes("tenant-0000").unwrap();
    assert_eq!(
        routes,
        &[Route {
            indexer: home(&rates[0], &indexers),
            rate: 10
        }]
    );
}

#[test]
fn bad_inputs_are_errors() {
    let two = indexers(&[1, 1]);
    let one_tenant = tenants(&[1]);
    let empty = RoutingTable::new();
    let default = RouterConfig::default();
    assert_eq!(
        plan(&one_tenant, &[], &empty, &default),
        Err(RoutingError::NoIndexers)
    );
    for alpha in [0.0, -0.5, 1.5, f64::NAN] {
        assert!(matches!(
            plan(&one_tenant, &two, &empty, &config(alpha)),
            Err(RoutingError::Parameter { .. })
        ));
    }
    let twice = vec![two[0].clone(), two[0].clone()];
    assert!(matches!(
        plan(&one_tenant, &twice, &empty, &default),
        Err(RoutingError::DuplicateIndexer { .. })
    ));
    let twice = vec![one_tenant[0].clone(), one_tenant[0].clone()];
    assert!(matches!(
        plan(&twice, &two, &empty, &default),
        Err(RoutingError::DuplicateTenant { .. })
    ));
    assert_eq!(
        plan(&tenants(&[u64::MAX, 1]), &two, &empty, &default),
        Err(RoutingError::TotalOverflow { what: "rate" })
    );
    assert_eq!(
        plan(&one_tenant, &indexers(&[u64::MAX, 1]), &empty, &config(1.0)),
        Err(RoutingError::TotalOverflow { what: "capacity" })
    );
}

#[test]
fn homes_follow_capacity_and_move_only_with_their_indexer() {
    let indexers = indexers(&[100, 300, 100, 0]);
    let rates = tenants(&[1; 20_000]);
    let homes: Vec<usize> = rates
        .iter()
        .map(|rate| home_indexer(&rate.tenant, &indexers).unwrap())
        .collect();
    let mut counts = [0usize; 4];
    for &home in &homes {
        counts[home] += 1;
    }
    // Expected 4,000 / 12,000 / 4,000 / 0; a binomial's deviation is about 70.
    assert!((3_700..=4_300).contains(&counts[0]), "{counts:?}");
    assert!((11_500..=12_500).contains(&counts[1]), "{counts:?}");
    assert!((3_700..=4_300).contains(&counts[2]), "{counts:?}");
    assert_eq!(counts[3], 0);
    // Without indexer-2, only its tenants move.
    let fewer: Vec<Indexer> = indexers
        .iter()
        .filter(|ix| ix.name != "indexer-2")
        .cloned()
        .collect();
    for (rate, &before) in rates.iter().zip(&homes) {
        let after = &fewer[home_indexer(&rate.tenant, &fewer).unwrap()].name;
        if before != 2 {
            assert_eq!(after, &indexers[before].name, "{} moved", rate.tenant);
        }
    }
}

#[test]
fn shares_and_moved_rate() {
    let indexers = indexers(&[100, 100]);
    let rates = tenants(&[40]);
    let route = |indexer: &str, rate| Route {
        indexer: indexer.to_owned(),
        rate,
    };
    let mut before = RoutingTable::new();
    before.insert("tenant-0000", vec![route("indexer-0", 40)]);
    let mut after = RoutingTable::new();
    after.insert(
        "tenant-0000",
        vec![route("indexer-0", 3), route("indexer-1", 1)],
    );
    assert_eq!(
        after.shares("tenant-0000").unwrap(),
        vec![("indexer-0", 0.75), ("indexer-1", 0.25)]
    );
    assert_eq!(moved_rate(&before, &after, &rates, &indexers).unwrap(), 10);
    assert_eq!(moved_rate(&after, &after, &rates, &indexers).unwrap(), 0);
}

/// Random indexers (some of capacity 0), tenants with a few large rates among many small,
/// and a current table that is empty, hashed, or random routes.
fn scenarios() -> impl Strategy<Value = (Vec<Indexer>, Vec<TenantRate>, RoutingTable, f64)> {
    let capacities = prop::collection::vec(prop_oneof![1 => Just(0u64), 6 => 1u64..1_000], 1..7);
    let rates = prop::collection::vec(prop_oneof![4 => 0u64..40, 1 => 0u64..900], 1..40);
    let alpha = prop_oneof![Just(0.85), Just(1.0), 0.3f64..1.0];
    (capacities, rates, alpha, any::<u64>(), 0u8..3).prop_map(
        |(capacities, rates, alpha, seed, current)| {
            let indexers = indexers(&capacities);
            let rates = tenants(&rates);
            let table = match current {
                0 => RoutingTable::new(),
                1 => RoutingTable::hashed(&rates, &indexers).unwrap(),
                _ => random_table(&rates, &indexers, seed),
            };
            (indexers, rates, table, alpha)
        },
    )
}

fn random_table(rates: &[TenantRate], indexers: &[Indexer], seed: u64) -> RoutingTable {
    let mut state = seed;
    let mut next = |bound: u64| {
        state = mix64(state);
        state % bound
    };
    let mut table = RoutingTable::new();
    for rate in rates {
        if next(4) == 0 {
            continue;
        }
        let routes = (0..1 + next(3))
            .map(|_| Route {
                // Sometimes an indexer that is gone.
                indexer: format!("indexer-{}", next(indexers.len() as u64 + 1)),
                rate: next(50),
            })
            .collect();
        table.insert(&rate.tenant, routes);
    }
    table
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The plan's invariants hold on any input, and planning again with the same rates
    /// changes no rule (nor, when everything fits, any weight).
    #[test]
    fn plans_keep_their_invariants_and_are_stable((indexers, rates, current, alpha) in scenarios()) {
        let config = config(alpha);
        let first = plan(&rates, &indexers, &current, &config).unwrap();
        assert_plan_invariants(&first, &rates, &indexers, alpha);
        let second = plan(&rates, &indexers, &first.table, &config).unwrap();
        assert_plan_invariants(&second, &rates, &indexers, alpha);
        prop_assert_eq!(first.table.rule_changes(&second.table), RuleChanges::default());
        if !first.is_overloaded() {
            prop_assert!(!second.rebalanced);
            prop_assert_eq!(&first.table, &second.table);
        }
    }

    /// From hashing, a tenant gains rules only when some indexer is over its target, and
    /// never more than the indexers there are.
    #[test]
    fn tenants_stay_home_while_nothing_is_hot((indexers, rates, _current, alpha) in scenarios()) {
        let hashed = RoutingTable::hashed(&rates, &indexers).unwrap();
        let first = plan(&rates, &indexers, &hashed, &config(alpha)).unwrap();
        if !first.rebalanced {
            prop_assert_eq!(&first.table, &hashed);
        }
        for (_, routes) in first.table.iter() {
            prop_assert!(routes.len() <= indexers.len());
        }
    }
}
