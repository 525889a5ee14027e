//! Maximum flow by Dinic's algorithm over integer capacities.
//!
//! LogStore's balancer (§4.1.4, Algorithm 3) computes the maximum flow of its tenant → shard →
//! worker network with Dinic's algorithm; this is ours. Each phase finds the level graph of the
//! residual network by breadth-first search, then a blocking flow in it by depth-first search
//! that never revisits an exhausted arc; there are at most `V` phases.
//!
//! Layout: an edge is two arcs side by side, the forward arc at `2 * id` and its reverse at
//! `2 * id + 1`. A forward arc holds its residual capacity, the reverse arc holds the flow on
//! the edge (its residual is the flow that can be pushed back), so no signed arithmetic is
//! needed and `flow + residual == capacity` always holds.
//!
//! The network may be grown after solving: [`FlowNetwork::max_flow`] augments from the flow
//! already there (a maximum flow can be reached from any feasible flow), so adding a few edges
//! and solving again costs only the new augmenting paths. The routing plan relies on this.

/// An edge of a [`FlowNetwork`], to read its flow after solving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeId(usize);

#[derive(Clone, Debug)]
struct Arc {
    to: usize,
    residual: u64,
}

/// A directed network with integer (u64) capacities on its edges.
#[derive(Clone, Debug, Default)]
pub struct FlowNetwork {
    arcs: Vec<Arc>,
    /// Arc indices leaving each node, in the order the edges were added.
    adjacency: Vec<Vec<usize>>,
}

impl FlowNetwork {
    /// A network of `nodes` nodes, numbered from 0, and no edges.
    pub fn new(nodes: usize) -> Self {
        Self {
            arcs: Vec::new(),
            adjacency: vec![Vec::new(); nodes],
        }
    }

    pub fn node_count(&self) -> usize {
        self.adjacency.len()
    }

    pub fn edge_count(&self) -> usize {
        self.arcs.len() / 2
    }

    /// Adds an edge from `from` to `to` that carries at most `capacity`, with no flow yet.
    /// Parallel edges and self-loops are allowed (a self-loop never carries flow).
    ///
    /// Panics if `from` or `to` is not a node, as indexing a slice out of bounds does.
    pub fn add_edge(&mut self, from: usize, to: usize, capacity: u64) -> EdgeId {
        assert!(
            from < self.node_count() && to < self.node_count(),
            "edge {from} -> {to} in a network of {} nodes",
            self.node_count()
        );
        let id = self.edge_count();
        self.arcs.push(Arc {
            to,
            residual: capacity,
        });
        self.arcs.push(Arc {
            to: from,
            residual: 0,
        });
        self.adjacency[from].push(2 * id);
        self.adjacency[to].push(2 * id + 1);
        EdgeId(id)
    }

    /// The flow the edge carries.
    pub fn flow(&self, edge: EdgeId) -> u64 {
        self.arcs[2 * edge.0 + 1].residual
    }

    /// The capacity the edge was added with.
    pub fn capacity(&self, edge: EdgeId) -> u64 {
        // Cannot overflow: flow and residual are two parts of the edge's u64 capacity.
        self.arcs[2 * edge.0].residual + self.flow(edge)
    }

    /// The edge's endpoints, `(from, to)`.
    pub fn endpoints(&self, edge: EdgeId) -> (usize, usize) {
        (self.arcs[2 * edge.0 + 1].to, self.arcs[2 * edge.0].to)
    }

    /// Pushes flow from `source` to `sink` until no augmenting path is left and returns the value
    /// of the flow: what leaves `source` net of what enters it, including the flow of earlier
    /// calls. The value is a u128 because the capacities leaving the source may sum past u64.
    ///
    /// Panics if `source` or `sink` is not a node.
    pub fn max_flow(&mut self, source: usize, sink: usize) -> u128 {
        assert!(source < self.node_count() && sink < self.node_count());
        if source != sink {
            let mut level = vec![UNREACHED; self.node_count()];
            let mut next_arc = vec![0; self.node_count()];
            while self.build_levels(source, sink, &mut level) {
                next_arc.fill(0);
                self.push_blocking_flow(source, sink, &level, &mut next_arc);
            }
        }
        self.flow_value(source)
    }

    /// The nodes reachable from `source` through arcs with residual capacity. After
    /// [`FlowNetwork::max_flow`] these are the source side of a minimum cut: every edge from
    /// inside to outside is saturated, and the sink is outside.
    pub fn residual_reachable(&self, source: usize) -> Vec<bool> {
        let mut reached = vec![false; self.node_count()];
        reached[source] = true;
        let mut stack = vec![source];
        while let Some(node) = stack.pop() {
            for &arc in &self.adjacency[node] {
                let Arc { to, residual } = self.arcs[arc];
                if residual > 0 && !reached[to] {
                    reached[to] = true;
                    stack.push(to);
                }
            }
        }
        reached
    }

    /// Net flow out of `source`.
    fn flow_value(&self, source: usize) -> u128 {
        let (mut out, mut into) = (0u128, 0u128);
        for &arc in &self.adjacency[source] {
            let edge = EdgeId(arc / 2);
            if arc % 2 == 0 {
                out += u128::from(self.flow(edge));
            } else {
                into += u128::from(self.flow(edge));
            }
        }
        // A flow's net value out of its source is never negative: flow conservation holds at
        // every other node, and augmenting paths only ever start at the source.
        out - into
    }

    /// Breadth-first distances from `source` over arcs with residual capacity; whether `sink`
    /// is reached.
    fn build_levels(&self, source: usize, sink: usize, level: &mut [usize]) -> bool {
        level.fill(UNREACHED);
        level[source] = 0;
        let mut queue = vec![source];
        let mut head = 0;
        while head < queue.len() {
            let node = queue[head];
            head += 1;
            for &arc in &self.adjacency[node] {
                let Arc { to, residual } = self.arcs[arc];
                if residual > 0 && level[to] == UNREACHED {
                    level[to] = level[node] + 1;
                    queue.push(to);
                }
            }
        }
        level[sink] != UNREACHED
    }

    /// A blocking flow in the level graph: depth-first, iterative (the recursion would be as
    /// deep as the longest path), each node resuming at `next_arc[node]` so an arc that led
    /// nowhere is not tried again in this phase.
    fn push_blocking_flow(
        &mut self,
        source: usize,
        sink: usize,
        level: &[usize],
        next_arc: &mut [usize],
    ) {
        let mut path: Vec<usize> = Vec::new();
        loop {
            let node = path.last().map_or(source, |&arc| self.arcs[arc].to);
            if node == sink {
                // `path` is not empty: the sink is not the source.
                let push = path
                    .iter()
                    .map(|&arc| self.arcs[arc].residual)
                    .min()
                    .unwrap_or(0);
                for &arc in &path {
                    self.arcs[arc].residual -= push;
                    self.arcs[arc ^ 1].residual += push;
                }
                // Retreat to the tail of the first arc the push saturated; its node's
                // `next_arc` still points at it and moves past it on the next advance.
                let saturated = path
                    .iter()
                    .position(|&arc| self.arcs[arc].residual == 0)
                    .unwrap_or(0);
                path.truncate(saturated);
                continue;
            }
            let arcs = &self.adjacency[node];
            let mut advanced = false;
            while next_arc[node] < arcs.len() {
                let arc = arcs[next_arc[node]];
                let Arc { to, residual } = self.arcs[arc];
                if residual > 0 && level[to] == level[node] + 1 {
                    path.push(arc);
                    advanced = true;
                    break;
                }
                next_arc[node] += 1;
            }
            if !advanced {
                // A dead end: no path to the sink from here in this phase.
                let Some(arc) = path.pop() else {
                    break;
                };
                let parent = self.arcs[arc ^ 1].to;
                next_arc[parent] += 1;
            }
        }
    }
}

const UNREACHED: usize = usize::MAX;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Small random networks: (node count, edges as (from, to, capacity)).
    fn networks(max_nodes: usize) -> impl Strategy<Value = (usize, Vec<(usize, usize, u64)>)> {
        (2..=max_nodes).prop_flat_map(|nodes| {
            let edge = (0..nodes, 0..nodes, 0u64..20);
            (Just(nodes), prop::collection::vec(edge, 0..(nodes * 3)))
        })
    }

    fn build(nodes: usize, edges: &[(usize, usize, u64)]) -> (FlowNetwork, Vec<EdgeId>) {
        let mut network = FlowNetwork::new(nodes);
        let ids = edges
            .iter()
            .map(|&(from, to, capacity)| network.add_edge(from, to, capacity))
            .collect();
        (network, ids)
    }

    /// The minimum cut by enumeration: every set of nodes holding the source and not the sink,
    /// and the capacity of the edges leaving it. By max-flow/min-cut it is the maximum flow.
    fn min_cut_by_enumeration(nodes: usize, edges: &[(usize, usize, u64)]) -> u128 {
        let (source, sink) = (0, nodes - 1);
        let mut best = u128::MAX;
        for mask in 0u32..(1 << nodes) {
            let inside = |node: usize| mask & (1 << node) != 0;
            if !inside(source) || inside(sink) {
                continue;
            }
            let cut = edges
                .iter()
                .filter(|&&(from, to, _)| inside(from) && !inside(to))
                .map(|&(_, _, capacity)| u128::from(capacity))
                .sum();
            best = best.min(cut);
        }
        best
    }

    /// The flow is a flow: within capacity, conserved at every node but source and sink, and
    /// its value is what leaves the source.
    fn assert_feasible(network: &FlowNetwork, ids: &[EdgeId], source: usize, sink: usize) {
        let mut balance = vec![0i128; network.node_count()];
        for &id in ids {
            assert!(network.flow(id) <= network.capacity(id));
            let (from, to) = network.endpoints(id);
            balance[from] -= i128::from(network.flow(id));
            balance[to] += i128::from(network.flow(id));
        }
        for (node, &net) in balance.iter().enumerate() {
            if node != source && node != sink {
                assert_eq!(net, 0, "flow not conserved at node {node}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Dinic's value equals the minimum cut found by trying every cut.
        #[test]
        fn max_flow_equals_enumerated_min_cut((nodes, edges) in networks(8)) {
            let (mut network, ids) = build(nodes, &edges);
            let (source, sink) = (0, nodes - 1);
            let value = network.max_flow(source, sink);
            prop_assert_eq!(value, min_cut_by_enumeration(nodes, &edges));
            assert_feasible(&network, &ids, source, sink);
            // The residual-reachable set is a cut of the same capacity (a certificate).
            let inside = network.residual_reachable(source);
            prop_assert!(!inside[sink]);
            let cut: u128 = ids
                .iter()
                .filter(|&&id| {
                    let (from, to) = network.endpoints(id);
                    inside[from] && !inside[to]
                })
                .map(|&id| u128::from(network.capacity(id)))
                .sum();
            prop_assert_eq!(cut, value);
        }

        /// Solving, adding edges and solving again gives the same value as solving once with
        /// every edge: the incremental use the routing plan makes.
        #[test]
        fn solving_again_after_adding_edges_reaches_the_maximum(
            (nodes, edges) in networks(8),
            split in 0usize..24,
        ) {
            let split = split.min(edges.len());
            let (source, sink) = (0, nodes - 1);
            let (mut network, mut ids) = build(nodes, &edges[..split]);
            network.max_flow(source, sink);
            for &(from, to, capacity) in &edges[split..] {
                ids.push(network.add_edge(from, to, capacity));
            }
            let value = network.max_flow(source, sink);
            prop_assert_eq!(value, min_cut_by_enumeration(nodes, &edges));
            assert_feasible(&network, &ids, source, sink);
        }
    }

    /// Larger graphs than enumeration reaches, against Edmonds–Karp (shortest augmenting paths
    /// on a capacity matrix), written separately and as plainly as possible.
    #[test]
    fn max_flow_matches_edmonds_karp_on_larger_graphs() {
        let mut state = 0x5eed_u64;
        let mut next = |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % bound
        };
        for _ in 0..300 {
            let nodes = 2 + next(30) as usize;
            let edge_count = next(nodes as u64 * 5) as usize;
            let edges: Vec<(usize, usize, u64)> = (0..edge_count)
                .map(|_| {
                    let capacity = if next(4) == 0 {
                        next(1 << 40)
                    } else {
                        next(100)
                    };
                    (
                        next(nodes as u64) as usize,
                        next(nodes as u64) as usize,
                        capacity,
                    )
                })
                .collect();
            let (source, sink) = (0, nodes - 1);
            let (mut network, ids) = build(nodes, &edges);
            let value = network.max_flow(source, sink);
            assert_eq!(
                value,
                edmonds_karp(nodes, &edges, source, sink),
                "{edges:?}"
            );
            assert_feasible(&network, &ids, source, sink);
        }
    }

    fn edmonds_karp(
        nodes: usize,
        edges: &[(usize, usize, u64)],
        source: usize,
        sink: usize,
    ) -> u128 {
        let mut residual = vec![vec![0u128; nodes]; nodes];
        for &(from, to, capacity) in edges {
            if from != to {
                residual[from][to] += u128::from(capacity);
            }
        }
        let mut total = 0;
        loop {
            let mut parent = vec![usize::MAX; nodes];
            parent[source] = source;
            let mut queue = std::collections::VecDeque::from([source]);
            while let Some(node) = queue.pop_front() {
                for next in 0..nodes {
                    if parent[next] == usize::MAX && residual[node][next] > 0 {
                        parent[next] = node;
                        queue.push_back(next);
                    }
                }
            }
            if parent[sink] == usize::MAX {
                return total;
            }
            let mut push = u128::MAX;
            let mut node = sink;
            while node != source {
                push = push.min(residual[parent[node]][node]);
                node = parent[node];
            }
            let mut node = sink;
            while node != source {
                residual[parent[node]][node] -= push;
                residual[node][parent[node]] += push;
                node = parent[node];
            }
            total += push;
        }
    }

    #[test]
    fn source_equal_to_sink_carries_nothing() {
        let mut network = FlowNetwork::new(2);
        let edge = network.add_edge(0, 1, 5);
        assert_eq!(network.max_flow(0, 0), 0);
        assert_eq!(network.flow(edge), 0);
    }

    #[test]
    fn capacities_past_u64_sum_in_the_value() {
        let mut network = FlowNetwork::new(3);
        network.add_edge(0, 1, u64::MAX);
        network.add_edge(0, 1, u64::MAX);
        network.add_edge(1, 2, u64::MAX);
        network.add_edge(1, 2, u64::MAX);
        assert_eq!(network.max_flow(0, 2), 2 * u128::from(u64::MAX));
    }
}
