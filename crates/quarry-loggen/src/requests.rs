//! Request events: an nginx access log in front of a log-search product's API.
//!
//! Paths are a fixed list in popularity order drawn with Zipf(1.1), so a few paths carry most
//! traffic. Each path has a kind that sets its methods, latency and size, and factors that make
//! some paths fail more (`/api/login` answers 401 and 429 often, exports and live tail time
//! out). Client addresses are a population of 100,000 drawn with Zipf(1.0): the top address
//! sends about 8% of requests, as crawlers and busy integrations do.

use crate::random::{mix64, Random, WeightedTable};
use crate::Request;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Health,
    Static,
    Login,
    Read,
    Write,
    Search,
    Export,
    LiveTail,
}

impl Kind {
    /// Weights of GET, POST, PUT, DELETE.
    fn methods(self) -> [f64; 4] {
        match self {
            Kind::Health | Kind::Static | Kind::LiveTail => [1.0, 0.0, 0.0, 0.0],
            Kind::Login => [0.2, 0.8, 0.0, 0.0],
            Kind::Read => [0.92, 0.08, 0.0, 0.0],
            Kind::Write => [0.25, 0.45, 0.2, 0.1],
            Kind::Search => [0.7, 0.3, 0.0, 0.0],
            Kind::Export => [0.9, 0.1, 0.0, 0.0],
        }
    }

    /// Median latency in ms and the log-normal shape.
    fn latency(self) -> (f64, f64) {
        match self {
            Kind::Health => (2.0, 0.6),
            Kind::Static => (4.0, 0.8),
            Kind::Login => (60.0, 0.7),
            Kind::Read => (35.0, 0.9),
            Kind::Write => (70.0, 0.9),
            Kind::Search => (140.0, 1.1),
            Kind::Export => (900.0, 1.2),
            Kind::LiveTail => (2500.0, 0.8),
        }
    }

    /// Median response size in bytes of a successful answer.
    fn bytes(self) -> f64 {
        match self {
            Kind::Health => 20.0,
            Kind::Static => 48_000.0,
            Kind::Login => 420.0,
            Kind::Read => 2_400.0,
            Kind::Write => 350.0,
            Kind::Search => 9_000.0,
            Kind::Export => 250_000.0,
            Kind::LiveTail => 16_000.0,
        }
    }

    fn user_agent(self, path: &str) -> Option<&'static str> {
        match (self, path) {
            (Kind::Health, "/metrics") => Some("Prometheus/2.54.1"),
            (Kind::Health, _) => Some("kube-probe/1.31"),
            _ => None,
        }
    }
}

/// `(path, kind, factor on 4xx, factor on 5xx)`, most popular first.
const PATHS: [(&str, Kind, f64, f64); 51] = [
    ("/api/v1/search", Kind::Search, 1.0, 1.5),
    ("/api/login", Kind::Login, 1.0, 1.0),
    ("/api/v1/events", Kind::Read, 1.0, 1.0),
    ("/health", Kind::Health, 0.1, 0.5),
    ("/api/v1/users/me", Kind::Read, 1.5, 1.0),
    ("/static/app.js", Kind::Static, 1.0, 0.3),
    ("/static/app.css", Kind::Static, 1.0, 0.3),
    ("/api/v1/query", Kind::Search, 1.5, 2.0),
    ("/api/v1/ingest", Kind::Write, 1.0, 3.0),
    ("/metrics", Kind::Health, 0.1, 0.5),
    ("/api/v1/dashboards", Kind::Read, 1.0, 1.0),
    ("/api/logout", Kind::Login, 0.2, 1.0),
    ("/api/v1/alerts", Kind::Read, 1.0, 1.0),
    ("/api/v1/tenants", Kind::Read, 2.0, 1.0),
    ("/api/v1/histogram", Kind::Search, 1.0, 1.5),
    ("/api/v1/fields", Kind::Read, 1.0, 1.0),
    ("/api/v1/livetail", Kind::LiveTail, 1.0, 4.0),
    ("/favicon.ico", Kind::Static, 3.0, 0.3),
    ("/api/v1/streams", Kind::Read, 1.0, 1.0),
    ("/api/v1/users", Kind::Write, 2.0, 1.0),
    ("/api/v1/notifications", Kind::Read, 1.0, 1.0),
    ("/api/v1/settings", Kind::Write, 1.5, 1.0),
    ("/api/v1/export", Kind::Export, 1.0, 4.0),
    ("/api/v1/saved-searches", Kind::Write, 1.0, 1.0),
    ("/api/v1/tokens", Kind::Write, 3.0, 1.0),
    ("/api/v2/search", Kind::Search, 1.0, 2.0),
    ("/api/v2/events", Kind::Read, 1.0, 1.5),
    ("/api/v1/teams", Kind::Write, 1.5, 1.0),
    ("/api/v1/audit", Kind::Read, 2.0, 1.0),
    ("/api/v1/indexes", Kind::Write, 1.0, 1.5),
    ("/api/v1/retention", Kind::Write, 1.0, 1.0),
    ("/api/v1/pipelines", Kind::Write, 1.0, 1.5),
    ("/api/v1/parsers", Kind::Write, 2.0, 1.0),
    ("/api/v1/webhooks", Kind::Write, 1.5, 2.0),
    ("/api/v1/integrations", Kind::Write, 1.0, 2.0),
    ("/api/v1/reports", Kind::Export, 1.0, 2.0),
    ("/api/v1/uploads", Kind::Write, 2.0, 3.0),
    ("/api/v1/sessions", Kind::Read, 1.5, 1.0),
    ("/api/v1/views", Kind::Read, 1.0, 1.0),
    ("/api/v1/annotations", Kind::Write, 1.0, 1.0),
    ("/api/v1/billing", Kind::Read, 2.0, 1.0),
    ("/api/v1/invoices", Kind::Export, 1.0, 1.0),
    ("/api/v1/roles", Kind::Read, 2.0, 1.0),
    ("/api/v1/permissions", Kind::Read, 3.0, 1.0),
    ("/api/password/reset", Kind::Login, 2.0, 1.0),
    ("/api/signup", Kind::Login, 2.0, 1.0),
    ("/api/oauth/callback", Kind::Login, 3.0, 2.0),
    ("/api/v1/status", Kind::Health, 0.5, 1.0),
    ("/api/v1/version", Kind::Health, 0.5, 0.5),
    ("/api/v1/feedback", Kind::Write, 1.0, 1.0),
    ("/robots.txt", Kind::Static, 2.0, 0.3),
];

const PATH_ZIPF_EXPONENT: f64 = 1.1;
const METHODS: [&str; 4] = ["GET", "POST", "PUT", "DELETE"];
const STATUSES: [u16; 13] = [
    200, 201, 204, 301, 304, 400, 401, 403, 404, 429, 500, 502, 503,
];
/// How much more often 5xx answers come during a burst.
const BURST_SERVER_ERROR_FACTOR: f64 = 10.0;
const CLIENT_POPULATION: usize = 100_000;
const CLIENT_ZIPF_EXPONENT: f64 = 1.0;
/// Share of requests hit by a stall (GC pause, slow disk): latency times 1 to 50.
const STALL_PROBABILITY: f64 = 0.003;
const MAX_LATENCY_MS: f64 = 30_000.0;

/// Browsers, mobile apps and scripts, by share of requests to user-facing paths.
const USER_AGENTS: [(&str, f64); 10] = [
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", 30.0),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", 12.0),
    ("Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0", 8.0),
    ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", 12.0),
    ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", 8.0),
    ("curl/8.5.0", 6.0),
    ("python-requests/2.32.3", 8.0),
    ("Go-http-client/1.1", 6.0),
    ("okhttp/4.12.0", 4.0),
    ("quarry-cli/0.1.0", 3.0),
];

/// Status weights (per mille, in `STATUSES` order) of a method on a path of `kind`.
fn status_weights(kind: Kind, method: usize) -> [f64; 13] {
    //            200    201    204  301  304    400   401  403   404  429  500  502  503
    let mut weights = match method {
        0 => [
            930.0, 0.0, 0.0, 4.0, 12.0, 6.0, 6.0, 4.0, 18.0, 4.0, 5.0, 3.0, 3.0,
        ],
        1 => [
            300.0, 600.0, 0.0, 0.0, 0.0, 25.0, 8.0, 5.0, 3.0, 6.0, 6.0, 3.0, 3.0,
        ],
        2 => [
            600.0, 0.0, 300.0, 0.0, 0.0, 20.0, 5.0, 6.0, 10.0, 3.0, 6.0, 3.0, 3.0,
        ],
        _ => [
            200.0, 0.0, 700.0, 0.0, 0.0, 5.0, 5.0, 8.0, 25.0, 2.0, 5.0, 3.0, 3.0,
        ],
    };
    match kind {
        Kind::Static => {
            weights[4] = 250.0;
            weights[8] = 30.0;
        }
        // Logins and searches are POSTs that create nothing.
        Kind::Login | Kind::Search => {
            weights[0] += weights[1];
            weights[1] = 0.0;
        }
        _ => {}
    }
    if let Kind::Login = kind {
        weights[6] *= 12.0;
        weights[9] *= 5.0;
    }
    weights
}

#[derive(Debug)]
struct PathModel {
    path: &'static str,
    kind: Kind,
    methods: WeightedTable,
    /// Status tables by method, outside and inside a burst.
    statuses: [[WeightedTable; 2]; 4],
}

#[derive(Debug)]
pub(crate) struct Requests {
    paths: Vec<PathModel>,
    path_table: WeightedTable,
    clients: Vec<[u8; 4]>,
    client_table: WeightedTable,
    agent_table: WeightedTable,
}

impl Requests {
    /// `seed` picks the client addresses behind each popularity rank.
    pub fn new(seed: u64) -> Self {
        let paths = PATHS
            .iter()
            .map(|&(path, kind, client_factor, server_factor)| {
                let statuses = std::array::from_fn(|method| {
                    std::array::from_fn(|burst| {
                        let mut weights = status_weights(kind, method);
                        for (weight, status) in weights.iter_mut().zip(STATUSES) {
                            if (400..500).contains(&status) {
                                *weight *= client_factor;
                            } else if status >= 500 {
                                *weight *= server_factor;
                                if burst == 1 {
                                    *weight *= BURST_SERVER_ERROR_FACTOR;
                                }
                            }
                        }
                        WeightedTable::new(weights)
                    })
                });
                PathModel {
                    path,
                    kind,
                    methods: WeightedTable::new(kind.methods()),
                    statuses,
                }
            })
            .collect();
        let salt = mix64(seed ^ 0x636c_6965_6e74); // "client"
        let clients = (0..CLIENT_POPULATION as u64)
            .map(|rank| client_address(mix64(salt ^ rank)))
            .collect();
        Self {
            paths,
            path_table: WeightedTable::zipf(PATHS.len(), PATH_ZIPF_EXPONENT),
            clients,
            client_table: WeightedTable::zipf(CLIENT_POPULATION, CLIENT_ZIPF_EXPONENT),
            agent_table: WeightedTable::new(USER_AGENTS.iter().map(|&(_, weight)| weight)),
        }
    }

    /// Draws a request and appends its access-log line to `message`.
    pub fn draw(&self, random: &mut Random, in_burst: bool, message: &mut String) -> Request {
        let path = &self.paths[self.path_table.sample(random)];
        let method = path.methods.sample(random);
        let status = STATUSES[path.statuses[method][usize::from(in_burst)].sample(random)];
        let latency_ms = latency(path.kind, status, random);
        let bytes = response_bytes(path.kind, status, random);
        let client_ip = self.clients[self.client_table.sample(random)];
        let protocol = if random.chance(0.25) {
            "HTTP/2.0"
        } else {
            "HTTP/1.1"
        };
        let agent = path
            .kind
            .user_agent(path.path)
            .unwrap_or_else(|| USER_AGENTS[self.agent_table.sample(random)].0);

        let mut number = itoa::Buffer::new();
        for piece in [METHODS[method], " ", path.path, " ", protocol, " "] {
            message.push_str(piece);
        }
        message.push_str(number.format(status));
        message.push(' ');
        message.push_str(number.format(bytes));
        message.push(' ');
        message.push_str(number.format(latency_ms));
        message.push_str("ms \"");
        message.push_str(agent);
        message.push('"');

        Request {
            method: METHODS[method],
            path: path.path,
            status,
            latency_ms,
            bytes,
            client_ip,
        }
    }
}

fn latency(kind: Kind, status: u16, random: &mut Random) -> u32 {
    let (median, sigma) = kind.latency();
    let factor = match status {
        301 => 0.3,
        304 => 0.5,
        429 => 0.1,
        400..=499 => 0.4,
        500 => 2.0,
        // Upstream timeouts.
        502 => 8.0,
        // Load shedding answers at once.
        503 => 0.2,
        _ => 1.0,
    };
    let mut latency = random.log_normal(median * factor, sigma);
    if random.chance(STALL_PROBABILITY) {
        latency *= 1.0 + 49.0 * random.unit();
    }
    latency.round().clamp(1.0, MAX_LATENCY_MS) as u32
}

fn response_bytes(kind: Kind, status: u16, random: &mut Random) -> u64 {
    match status {
        204 | 304 => 0,
        301 => 162,
        // nginx error pages and JSON error bodies.
        400..=599 => random.between(90, 600) as u64,
        _ => (random.log_normal(kind.bytes(), 0.9).round() as u64).max(1),
    }
}

/// A public-looking IPv4 address from 64 random bits: first octet 1..=223 without 127.
fn client_address(bits: u64) -> [u8; 4] {
    let mut first = 1 + (bits % 223) as u8;
    if first == 127 {
        first = 128;
    }
    let [_, _, _, _, _, b, c, d] = bits.to_be_bytes();
    [first, b, c, d]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::stream;

    #[test]
    fn paths_are_distinct_and_include_login() {
        let mut paths: Vec<&str> = PATHS.iter().map(|p| p.0).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), PATHS.len());
        assert!(paths.contains(&"/api/login"));
    }

    #[test]
    fn requests_look_like_an_access_log() {
        let requests = Requests::new(1);
        let mut random = Random::new(1, stream::EVENTS);
        let mut gets = 0;
        let mut ok = 0;
        let mut message = String::new();
        for _ in 0..10_000 {
            message.clear();
            let request = requests.draw(&mut random, false, &mut message);
            assert!(STATUSES.contains(&request.status));
            assert!((1..=30_000).contains(&request.latency_ms));
            let expected_start = format!("{} {} HTTP/", request.method, request.path);
            assert!(message.starts_with(&expected_start), "{message}");
            assert!(message.contains(&format!(" {}ms \"", request.latency_ms)));
            gets += usize::from(request.method == "GET");
            ok += usize::from(request.status == 200);
        }
        assert!(gets > 6_000, "GET should dominate: {gets}");
        assert!(ok > 6_000, "200 should dominate: {ok}");
    }

    #[test]
    fn bursts_fail_more() {
        let requests = Requests::new(1);
        let mut random = Random::new(2, stream::EVENTS);
        let mut message = String::new();
        let mut server_errors = [0; 2];
        for burst in [false, true] {
            for _ in 0..20_000 {
                let request = requests.draw(&mut random, burst, &mut message);
                server_errors[usize::from(burst)] += usize::from(request.status >= 500);
            }
        }
        assert!(server_errors[1] > 4 * server_errors[0], "{server_errors:?}");
    }
}
