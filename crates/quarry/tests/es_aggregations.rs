//! Elasticsearch aggregations as Grafana's panels and the Python client nest them, evaluated
//! in one pass (issue 27, item 5), each answer checked against a brute-force model of the
//! events sent: calendar and fixed time buckets in a zone with a daylight-saving change,
//! `offset`, empty buckets and `extended_bounds`, terms with `missing` and ordered by a metric
//! below, filters with an other bucket, ranges, `missing`, `extended_stats`, and the pipeline
//! aggregations (`derivative`, `cumulative_sum`, `moving_fn`, `bucket_script`, `max_bucket`).

mod common;

use common::Server;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// 2026-03-24T00:00:00Z in seconds: the events span Paris' change to summer time
/// (2026-03-29T01:00:00Z) and the turn of the month.
const T0: i64 = 1_774_310_400;
const EVENTS: i64 = 2000;
const STEP: i64 = 487;
/// Paris goes from +01:00 to +02:00 at this instant (s).
const PARIS_DST: i64 = 1_774_746_000;
const DAY: i64 = 86_400;

#[derive(Clone)]
struct Event {
    /// Seconds.
    time: i64,
    host: Option<&'static str>,
    status: i64,
    latency: f64,
}

fn event(i: i64) -> Event {
    Event {
        time: T0 + i * STEP,
        host: (i % 7 != 0).then(|| ["a", "b", "c", "d"][(i % 4) as usize]),
        status: [200, 200, 200, 404, 500, 503][(i % 6) as usize],
        latency: ((i * 37) % 1000) as f64 / 4.0,
    }
}

fn events() -> Vec<Event> {
    (0..EVENTS).map(event).collect()
}

fn paris_offset(time: i64) -> i64 {
    if time >= PARIS_DST {
        7200
    } else {
        3600
    }
}

/// The start (s) of the Paris day holding `time`.
fn paris_day(time: i64) -> i64 {
    let local = time + paris_offset(time);
    let midnight_local = local.div_euclid(DAY) * DAY;
    // The offset at that midnight (the change is at 03:00 local, after midnight).
    midnight_local - paris_offset(midnight_local - 3600)
}

fn search(server: &Server, body: Value) -> Value {
    let (status, answer) = server.request("POST", "/default/_search", Some(&body.to_string()));
    assert_eq!(status, 200, "{body}: {answer}");
    answer["aggregations"].clone()
}

fn close(got: &Value, want: f64, what: &str) {
    let got = got
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: {got} is not a number"));
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: {got} vs model {want}"
    );
}

fn avg(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[test]
fn nested_aggregations_match_a_model_of_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let mut body = String::new();
    for e in events() {
        let mut doc =
            json!({"@timestamp": e.time * 1000, "status": e.status, "latency": e.latency});
        if let Some(host) = e.host {
            doc["host"] = host.into();
        }
        body.push_str(&format!("{{\"index\":{{}}}}\n{doc}\n"));
    }
    let (status, answer) = server.request("POST", "/default/_bulk", Some(&body));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["errors"], false);
    let all = events();

    // Terms with a missing key, ordered by the average latency below, each over Paris days
    // with the average latency, its derivative and a running count.
    let aggs = search(
        &server,
        json!({"size": 0, "aggs": {"hosts": {
            "terms": {"field": "host", "missing": "none", "size": 3, "order": {"lat": "desc"}},
            "aggs": {
                "lat": {"avg": {"field": "latency"}},
                "days": {
                    "date_histogram": {"field": "@timestamp", "calendar_interval": "1d", "time_zone": "Europe/Paris"},
                    "aggs": {
                        "lat": {"avg": {"field": "latency"}},
                        "change": {"derivative": {"buckets_path": "lat"}},
                        "running": {"cumulative_sum": {"buckets_path": "_count"}},
                    }
                }
            }
        }}}),
    );
    let mut by_host: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in &all {
        by_host.entry(e.host.unwrap_or("none")).or_default().push(e);
    }
    let mut ranked: Vec<(&str, f64)> = by_host
        .iter()
        .map(|(h, es)| {
            let lat: Vec<f64> = es.iter().map(|e| e.latency).collect();
            (*h, avg(&lat).unwrap())
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let hosts = aggs["hosts"]["buckets"].as_array().unwrap();
    let keys: Vec<&str> = hosts.iter().map(|b| b["key"].as_str().unwrap()).collect();
    let want: Vec<&str> = ranked.iter().take(3).map(|r| r.0).collect();
    assert_eq!(keys, want, "ordered by the average latency");
    let shown: usize = want.iter().map(|h| by_host[h].len()).sum();
    assert_eq!(
        aggs["hosts"]["sum_other_doc_count"],
        (all.len() - shown) as u64
    );
    for bucket in hosts {
        let host = bucket["key"].as_str().unwrap();
        let events = &by_host[host];
        assert_eq!(bucket["doc_count"], events.len() as u64, "{host}");
        let mut days: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        for e in events.iter() {
            days.entry(paris_day(e.time)).or_default().push(e.latency);
        }
        let got = bucket["days"]["buckets"].as_array().unwrap();
        assert_eq!(got.len(), days.len(), "{host}: a bucket per Paris day");
        let mut running = 0;
        let mut previous: Option<f64> = None;
        for (day, (start, latencies)) in got.iter().zip(&days) {
            assert_eq!(day["key"], start * 1000, "{host}: {day}");
            let offset = if paris_offset(*start) == 7200 {
                "+02:00"
            } else {
                "+01:00"
            };
            assert!(
                day["key_as_string"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("T00:00:00.000{offset}")),
                "{host}: {day}"
            );
            assert_eq!(day["doc_count"], latencies.len() as u64);
            let lat = avg(latencies).unwrap();
            close(&day["lat"]["value"], lat, "avg");
            running += latencies.len();
            close(&day["running"]["value"], running as f64, "cumulative_sum");
            match previous {
                None => assert!(
                    day.get("change").is_none(),
                    "no derivative in the first bucket"
                ),
                Some(p) => close(&day["change"]["value"], lat - p, "derivative"),
            }
            previous = Some(lat);
        }
    }

    // Fixed 6 h buckets moved by an hour, empty ones filled out to extended_bounds, counting
    // the hosts present.
    let (from, to) = (T0 - 2 * DAY, T0 + 13 * DAY);
    let aggs = search(
        &server,
        json!({"size": 0, "aggs": {"h": {
            "date_histogram": {"field": "@timestamp", "fixed_interval": "6h", "offset": "+1h",
                "min_doc_count": 0, "extended_bounds": {"min": from * 1000, "max": to * 1000},
                "format": "epoch_millis"},
            "aggs": {"hosts": {"value_count": {"field": "host"}}}
        }}}),
    );
    let buckets = aggs["h"]["buckets"].as_array().unwrap();
    let width = 6 * 3600;
    let first = (from - 3600).div_euclid(width) * width + 3600;
    let last = (to - 3600).div_euclid(width) * width + 3600;
    assert_eq!(buckets.len() as i64, (last - first) / width + 1);
    for (i, bucket) in buckets.iter().enumerate() {
        let start = first + i as i64 * width;
        assert_eq!(bucket["key"], start * 1000);
        assert_eq!(bucket["key_as_string"], (start * 1000).to_string());
        let inside: Vec<&Event> = all
            .iter()
            .filter(|e| e.time >= start && e.time < start + width)
            .collect();
        assert_eq!(bucket["doc_count"], inside.len() as u64, "{bucket}");
        assert_eq!(
            bucket["hosts"]["value"],
            inside.iter().filter(|e| e.host.is_some()).count() as u64
        );
    }

    // Filters with an other bucket, each with extended stats of the latency; ranges of the
    // status, keyed, each with the events missing a host.
    let aggs = search(
        &server,
        json!({"size": 0, "aggs": {
            "kinds": {"filters": {"filters": {
                "errors": {"range": {"status": {"gte": 500}}},
                "slow": {"query_string": {"query": "latency:>200"}}},
                "other_bucket_key": "rest"},
                "aggs": {"lat": {"extended_stats": {"field": "latency"}}}},
            "statuses": {"range": {"field": "status", "keyed": true,
                "ranges": [{"to": 300}, {"from": 300, "to": 500}, {"from": 500, "key": "bad"}]},
                "aggs": {"anonymous": {"missing": {"field": "host"}}}},
        }}),
    );
    type Keep = Box<dyn Fn(&Event) -> bool>;
    let kinds: [(&str, Keep); 3] = [
        ("errors", Box::new(|e: &Event| e.status >= 500)),
        ("slow", Box::new(|e: &Event| e.latency > 200.0)),
        (
            "rest",
            Box::new(|e: &Event| e.status < 500 && e.latency <= 200.0),
        ),
    ];
    for (name, keep) in &kinds {
        let bucket = &aggs["kinds"]["buckets"][name];
        let lat: Vec<f64> = all.iter().filter(|e| keep(e)).map(|e| e.latency).collect();
        assert_eq!(bucket["doc_count"], lat.len() as u64, "{name}");
        let stats = &bucket["lat"];
        let n = lat.len() as f64;
        let mean = avg(&lat).unwrap();
        let variance = lat.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        close(&stats["avg"], mean, "avg");
        close(&stats["variance"], variance, "variance");
        close(&stats["std_deviation"], variance.sqrt(), "std_deviation");
        close(
            &stats["std_deviation_bounds"]["upper"],
            mean + 2.0 * variance.sqrt(),
            "upper bound",
        );
        close(
            &stats["sum_of_squares"],
            lat.iter().map(|v| v * v).sum(),
            "sum_of_squares",
        );
    }
    for (key, low, high) in [
        ("*-300.0", 0, 300),
        ("300.0-500.0", 300, 500),
        ("bad", 500, 1000),
    ] {
        let bucket = &aggs["statuses"]["buckets"][key];
        let inside: Vec<&Event> = all
            .iter()
            .filter(|e| e.status >= low && e.status < high)
            .collect();
        assert_eq!(bucket["doc_count"], inside.len() as u64, "{key}: {bucket}");
        assert_eq!(
            bucket["anonymous"]["doc_count"],
            inside.iter().filter(|e| e.host.is_none()).count() as u64
        );
    }

    // Calendar weeks (from Monday) and months, the sum of statuses per week, the week with
    // the largest sum, a moving average and an error ratio per month.
    let aggs = search(
        &server,
        json!({"size": 0, "aggs": {
            "weeks": {"date_histogram": {"field": "@timestamp", "calendar_interval": "week"},
                "aggs": {"s": {"sum": {"field": "status"}},
                         "m": {"moving_fn": {"buckets_path": "s", "window": 2, "script": "MovingFunctions.unweightedAvg(values)"}}}},
            "top_week": {"max_bucket": {"buckets_path": "weeks>s"}},
            "months": {"date_histogram": {"field": "@timestamp", "calendar_interval": "1M"},
                "aggs": {"errors": {"filter": {"range": {"status": {"gte": 500}}}},
                         "ratio": {"bucket_script": {"buckets_path": {"e": "errors>_count", "n": "_count"},
                                   "script": "params.e / params.n * 100"}}}},
        }}),
    );
    let monday = |t: i64| {
        // 1970-01-01 was a Thursday: Monday is 3 days before it.
        (t + 3 * DAY).div_euclid(7 * DAY) * 7 * DAY - 3 * DAY
    };
    let mut weeks: BTreeMap<i64, f64> = BTreeMap::new();
    for e in &all {
        *weeks.entry(monday(e.time)).or_default() += e.status as f64;
    }
    let got = aggs["weeks"]["buckets"].as_array().unwrap();
    assert_eq!(got.len(), weeks.len());
    let sums: Vec<f64> = weeks.values().copied().collect();
    for (i, (bucket, (start, sum))) in got.iter().zip(&weeks).enumerate() {
        assert_eq!(bucket["key"], start * 1000);
        close(&bucket["s"]["value"], *sum, "weekly sum");
        let window = &sums[i.saturating_sub(2)..i];
        match avg(window) {
            Some(mean) => close(&bucket["m"]["value"], mean, "moving_fn"),
            None => assert!(bucket["m"]["value"].is_null(), "{bucket}"),
        }
    }
    let (best_week, best) = weeks.iter().max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
    close(&aggs["top_week"]["value"], *best, "max_bucket");
    assert_eq!(
        aggs["top_week"]["keys"][0],
        format!("{}", chrono_text(*best_week))
    );
    let got = aggs["months"]["buckets"].as_array().unwrap();
    let april = 1_775_001_600; // 2026-04-01T00:00:00Z
    let months = [
        all.iter().filter(|e| e.time < april).collect::<Vec<_>>(),
        all.iter().filter(|e| e.time >= april).collect::<Vec<_>>(),
    ];
    assert_eq!(got.len(), 2, "{got:?}");
    for (bucket, events) in got.iter().zip(&months) {
        let errors = events.iter().filter(|e| e.status >= 500).count();
        assert_eq!(bucket["errors"]["doc_count"], errors as u64);
        close(
            &bucket["ratio"]["value"],
            errors as f64 / events.len() as f64 * 100.0,
            "bucket_script",
        );
    }
    assert_eq!(got[1]["key_as_string"], "2026-04-01T00:00:00.000Z");
}

/// A week's start as `key_as_string` shows it.
fn chrono_text(seconds: i64) -> String {
    let days = seconds.div_euclid(DAY);
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T00:00:00.000Z")
}

/// Hits within buckets (`top_hits`, `top_metrics`), combinations of values (`multi_terms`),
/// rare values, and a field mapped as a date, whose values are kept as sent and aggregated as
/// times.
#[test]
fn top_hits_multi_terms_and_date_fields_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/svc",
        Some(r#"{"mappings": {"properties": {"day": {"type": "date", "format": "yyyy-MM-dd"}, "host": {"type": "keyword"}}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    let all = events();
    // The day field: a date as text, three days for every seven events.
    let day = |i: i64| format!("2026-03-{:02}", 20 + (i % 7) / 3);
    let mut body = String::new();
    for (i, e) in all.iter().enumerate() {
        let mut doc =
            json!({"@timestamp": e.time * 1000, "status": e.status, "day": day(i as i64)});
        if let Some(host) = e.host {
            doc["host"] = host.into();
        }
        body.push_str(&format!("{{\"index\":{{}}}}\n{doc}\n"));
    }
    let (status, answer) = server.request("POST", "/svc/_bulk", Some(&body));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["errors"], false);
    let search = |body: Value| {
        let (status, answer) = server.request("POST", "/svc/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{body}: {answer}");
        answer["aggregations"].clone()
    };

    // The two newest events of each host, and the newest status overall.
    let aggs = search(json!({"size": 0, "aggs": {
        "hosts": {"terms": {"field": "host"}, "aggs": {
            "newest": {"top_hits": {"size": 2, "sort": [{"@timestamp": {"order": "desc"}}], "_source": ["status"]}}}},
        "last": {"top_metrics": {"metrics": {"field": "status"}, "sort": {"@timestamp": "desc"}}},
    }}));
    for bucket in aggs["hosts"]["buckets"].as_array().unwrap() {
        let host = bucket["key"].as_str().unwrap();
        let mut mine: Vec<&Event> = all.iter().filter(|e| e.host == Some(host)).collect();
        mine.sort_by_key(|e| std::cmp::Reverse(e.time));
        let top = &bucket["newest"]["hits"];
        assert_eq!(top["total"]["value"], mine.len() as u64);
        let hits = top["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 2);
        for (hit, e) in hits.iter().zip(&mine) {
            assert_eq!(hit["sort"][0], e.time * 1000, "{hit}");
            assert_eq!(hit["_source"], json!({"status": e.status}), "{hit}");
            assert_eq!(hit["_index"], "svc");
        }
    }
    let newest = all.iter().max_by_key(|e| e.time).unwrap();
    assert_eq!(aggs["last"]["top"][0]["metrics"]["status"], newest.status);

    // Pairs of host and status, the most frequent first; hosts seen in at most 300 events.
    let aggs = search(json!({"size": 0, "aggs": {
        "pairs": {"multi_terms": {"terms": [{"field": "host", "missing": "-"}, {"field": "status"}], "size": 5}},
        "rare": {"rare_terms": {"field": "host", "max_doc_count": 100}},
    }}));
    let mut pairs: BTreeMap<(String, i64), u64> = BTreeMap::new();
    for e in &all {
        *pairs
            .entry((e.host.unwrap_or("-").to_owned(), e.status))
            .or_default() += 1;
    }
    let mut ranked: Vec<((String, i64), u64)> = pairs.into_iter().collect();
    // Most frequent first, ties by key (host, then status) ascending.
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let got = aggs["pairs"]["buckets"].as_array().unwrap();
    assert_eq!(got.len(), 5);
    for (bucket, ((host, status), count)) in got.iter().zip(&ranked) {
        assert_eq!(bucket["key"], json!([host, status]), "{bucket}");
        assert_eq!(bucket["key_as_string"], format!("{host}|{status}"));
        assert_eq!(bucket["doc_count"], *count);
    }
    let shown: u64 = ranked.iter().take(5).map(|r| r.1).sum();
    assert_eq!(
        aggs["pairs"]["sum_other_doc_count"],
        all.len() as u64 - shown
    );
    // Each host is in about 430 events: none is rare.
    assert_eq!(aggs["rare"]["buckets"], json!([]));

    // include/exclude: a regular expression over the hosts, a list of statuses; what is
    // left out is not counted as others either.
    let aggs = search(json!({"size": 0, "aggs": {
        "hosts": {"terms": {"field": "host", "include": "[a-c]", "exclude": ["b"]}},
        "statuses": {"terms": {"field": "status", "include": [404, "503"]}},
    }}));
    let count = |keep: &dyn Fn(&Event) -> bool| all.iter().filter(|e| keep(e)).count() as u64;
    let got: Vec<(String, u64)> = aggs["hosts"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key"].as_str().unwrap().to_owned(),
                b["doc_count"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut want: Vec<(String, u64)> = ["a", "c"]
        .iter()
        .map(|h| (h.to_string(), count(&|e| e.host == Some(*h))))
        .collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    assert_eq!(got, want);
    assert_eq!(aggs["hosts"]["sum_other_doc_count"], 0);
    let statuses: Vec<i64> = aggs["statuses"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["key"].as_i64().unwrap())
        .collect();
    let mut sorted = statuses.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [404, 503]);
    // A regular expression over numbers: refused, as Elasticsearch refuses it.
    let (status, answer) = server.request(
        "POST",
        "/svc/_search",
        Some(r#"{"aggs": {"bad": {"terms": {"field": "status", "include": "4.*"}}}}"#),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("[bad]"),
        "{answer}"
    );

    // The date field: days as times, kept as sent in the hits.
    let aggs = search(json!({"size": 0, "aggs": {
        "days": {"terms": {"field": "day", "order": {"_key": "asc"}}},
        "first": {"min": {"field": "day"}},
        "daily": {"date_histogram": {"field": "day", "calendar_interval": "1d"}},
    }}));
    let mut days: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..EVENTS {
        *days.entry(day(i)).or_default() += 1;
    }
    let midnight = |text: &str| {
        // 2026-03-20 is 1_773_964_800 s.
        let n: i64 = text[8..].parse().unwrap();
        (1_773_964_800 + (n - 20) * DAY) * 1000
    };
    let got = aggs["days"]["buckets"].as_array().unwrap();
    assert_eq!(got.len(), days.len());
    for (bucket, (text, count)) in got.iter().zip(&days) {
        assert_eq!(bucket["key"], midnight(text), "{bucket}");
        assert_eq!(bucket["key_as_string"], format!("{text}T00:00:00.000Z"));
        assert_eq!(bucket["doc_count"], *count);
    }
    assert_eq!(aggs["first"]["value"], midnight("2026-03-20") as f64);
    assert_eq!(aggs["first"]["value_as_string"], "2026-03-20T00:00:00.000Z");
    let daily = aggs["daily"]["buckets"].as_array().unwrap();
    let counts: Vec<u64> = daily
        .iter()
        .map(|b| b["doc_count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, days.values().copied().collect::<Vec<_>>());
    let (_, hit) = server.request(
        "POST",
        "/svc/_search",
        Some(r#"{"size": 1, "sort": [{"@timestamp": "asc"}]}"#),
    );
    assert_eq!(
        hit["hits"]["hits"][0]["_source"]["day"],
        day(0),
        "kept as sent"
    );

    // top_hits without a sort would rank by a score hits here do not have: refused by name.
    let (status, answer) = server.request(
        "POST",
        "/svc/_search",
        Some(r#"{"aggs": {"t": {"top_hits": {"size": 1}}}}"#),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("aggs.t.top_hits"),
        "{answer}"
    );
}

/// HDR percentiles as Elasticsearch's HdrHistogram reports them (golden values from
/// OpenSearch's own suite, and the rank rule checked over a wider spread), and pipeline paths
/// that name no single number refused instead of skipped.
#[test]
fn hdr_percentiles_and_pipeline_paths() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/hdr",
        Some(
            r#"{"mappings": {"properties": {"n": {"type": "integer"}, "g": {"type": "keyword"}}}}"#,
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let mut bulk = String::new();
    for (n, g) in [(1, "a"), (51, "a"), (101, "b"), (151, "b"), (126, "b")] {
        bulk.push_str(&format!(
            "{{\"index\":{{}}}}\n{{\"n\": {n}, \"g\": \"{g}\"}}\n"
        ));
    }
    let (status, answer) = server.request("POST", "/hdr/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    let hdr = |query: Value, digits: u32| {
        let body = json!({"size": 0, "query": query, "aggs": {"p": {"percentiles": {
            "field": "n", "percents": [0.5, 25, 50, 75, 99], "hdr": {"number_of_significant_value_digits": digits}}}}});
        let (status, answer) = server.request("POST", "/hdr/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        let values = &answer["aggregations"]["p"]["values"];
        ["0.5", "25.0", "50.0", "75.0", "99.0"].map(|p| values[p].as_f64().unwrap())
    };
    // 1, 51, 101, 151 (126 left out): OpenSearch's 190_percentiles_hdr_metric.yml.
    let without_126 = json!({"bool": {"must_not": {"term": {"n": 126}}}});
    assert_eq!(
        hdr(without_126, 3),
        [1.0, 1.0, 51.0302734375, 101.0615234375, 151.1240234375]
    );
    // 51, 101, 126, 151: the unit follows the smallest value (51: 1/32).
    let filtered = json!({"range": {"n": {"gte": 50}}});
    assert_eq!(
        hdr(filtered, 3),
        [51.0, 51.0, 101.03125, 126.03125, 151.09375]
    );
    // Fewer digits, wider buckets: each answer is the top of the bucket holding the value at
    // rank ceil(p * n), and never below that value.
    let coarse = hdr(json!({"match_all": {}}), 1);
    let sorted = [1.0, 51.0, 101.0, 126.0, 151.0];
    for (answer, p) in coarse.iter().zip([0.005, 0.25, 0.5, 0.75, 0.99]) {
        let rank = ((p * 5.0f64).ceil() as usize).max(1);
        let value = sorted[rank - 1];
        assert!(
            *answer >= value && *answer < value * 1.2,
            "p{p}: {answer} for {value}"
        );
    }

    // Pipelines whose path names no single number are refused by name.
    for (path, word) in [
        ("t>p", "contains multiple values"),
        ("t>missing", "No aggregation found"),
    ] {
        let body = json!({"size": 0, "aggs": {
            "t": {"terms": {"field": "g"}, "aggs": {"p": {"percentiles": {"field": "n"}}}},
            "best": {"max_bucket": {"buckets_path": path}}}});
        let (status, answer) = server.request("POST", "/hdr/_search", Some(&body.to_string()));
        assert_eq!(status, 400, "{path}: {answer}");
        assert!(
            answer["error"]["reason"].as_str().unwrap().contains(word),
            "{answer}"
        );
    }
    let body = json!({"size": 0, "aggs": {
        "t": {"terms": {"field": "g"}, "aggs": {"p": {"percentiles": {"field": "n", "percents": [50]}}}},
        "best": {"max_bucket": {"buckets_path": "t>p[50.0]"}}}});
    let (status, answer) = server.request("POST", "/hdr/_search", Some(&body.to_string()));
    assert_eq!(status, 200, "{answer}");
    // Medians: a = {1, 51} interpolated 26, b = {101, 126, 151} 126.
    assert_eq!(answer["aggregations"]["best"]["value"], 126.0);
}

/// `date_range` over fields no mapping names: dates in text and epoch milliseconds are read as
/// times, as Elasticsearch's dynamic mapping reads them, against a count by hand.
#[test]
fn date_range_reads_dynamic_dates() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let days = [
        "2024-10-29",
        "2024-10-30",
        "2024-10-31",
        "2024-11-01",
        "2024-11-02",
    ];
    let mut bulk = String::new();
    for (i, day) in days.iter().enumerate() {
        // 2024-10-29T00:00:00Z is 1730160000000 ms; one event a day.
        let ms = 1_730_160_000_000i64 + i as i64 * DAY * 1000;
        bulk.push_str(&format!(
            "{{\"index\":{{}}}}\n{{\"when\": \"{day}\", \"ms\": {ms}}}\n"
        ));
    }
    let (status, answer) = server.request("POST", "/dyn/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    for field in ["when", "ms"] {
        let body = json!({"size": 0, "aggs": {"r": {"date_range": {"field": field, "ranges": [
            {"to": "2024-11-01"}, {"from": "2024-10-30", "to": "2024-11-02"}, {"from": "2024-11-02"}]}}}});
        let (status, answer) = server.request("POST", "/dyn/_search", Some(&body.to_string()));
        assert_eq!(status, 200, "{answer}");
        let counts: Vec<u64> = answer["aggregations"]["r"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["doc_count"].as_u64().unwrap())
            .collect();
        // Before 11-01: 10-29..10-31; 10-30 up to 11-02: 10-30..11-01; from 11-02: one.
        assert_eq!(counts, [3, 3, 1], "{field}: {answer}");
    }
    // `value_type: date` reads `missing` as a date, keyed as a time.
    let body = json!({"size": 0, "aggs": {"t": {"terms": {
        "field": "nowhere", "value_type": "date", "missing": "2016-05-11"}}}});
    let (status, answer) = server.request("POST", "/dyn/_search", Some(&body.to_string()));
    assert_eq!(status, 200, "{answer}");
    let bucket = &answer["aggregations"]["t"]["buckets"][0];
    assert_eq!(bucket["key"], 1_462_924_800_000i64, "{answer}");
    assert_eq!(bucket["key_as_string"], "2016-05-11T00:00:00.000Z");
    assert_eq!(bucket["doc_count"], 5);
}

/// `weighted_avg` per terms bucket against sums by hand: arrays of values share their event's
/// weight, `missing` stands in on either side, an event without a weight (and no `missing`)
/// counts for nothing, and several weights in one event are refused by name.
#[test]
fn weighted_avg_matches_sums_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let (status, answer) = server.request(
        "PUT",
        "/w",
        Some(r#"{"mappings": {"properties": {"g": {"type": "keyword"}, "v": {"type": "double"}, "w": {"type": "long"}}}}"#),
    );
    assert_eq!(status, 200, "{answer}");
    let docs = [
        json!({"g": "a", "v": 10.0, "w": 1}),
        json!({"g": "a", "v": [2.0, 4.0], "w": 3}),
        json!({"g": "a", "w": 2}),
        json!({"g": "b", "v": 7.5}),
        json!({"g": "b", "v": 1.0, "w": 4}),
    ];
    let mut bulk = String::new();
    for doc in &docs {
        bulk.push_str(&format!("{{\"index\":{{}}}}\n{doc}\n"));
    }
    let (status, answer) = server.request("POST", "/w/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    // Brute force over the docs: (value, weight) pairs, with the missing values given.
    let model = |value_missing: Option<f64>, weight_missing: Option<f64>| {
        let mut sums: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
        for doc in &docs {
            let values: Vec<f64> = match &doc["v"] {
                Value::Array(items) => items.iter().map(|v| v.as_f64().unwrap()).collect(),
                Value::Null => value_missing.into_iter().collect(),
                one => vec![one.as_f64().unwrap()],
            };
            let Some(weight) = doc["w"].as_f64().or(weight_missing) else {
                continue;
            };
            let entry = sums.entry(doc["g"].as_str().unwrap()).or_default();
            for v in values {
                entry.0 += v * weight;
                entry.1 += weight;
            }
        }
        sums
    };
    for (value_missing, weight_missing) in [(None, None), (Some(5.0), None), (None, Some(2.0))] {
        let mut value = json!({"field": "v"});
        if let Some(m) = value_missing {
            value["missing"] = json!(m);
        }
        let mut weight = json!({"field": "w"});
        if let Some(m) = weight_missing {
            weight["missing"] = json!(m);
        }
        let body = json!({"size": 0, "aggs": {"g": {"terms": {"field": "g"},
            "aggs": {"avg": {"weighted_avg": {"value": value, "weight": weight}}}}}});
        let answer = search_index(&server, "w", body);
        let buckets = answer["aggregations"]["g"]["buckets"].as_array().unwrap();
        let want = model(value_missing, weight_missing);
        for bucket in buckets {
            let key = bucket["key"].as_str().unwrap();
            let got = &bucket["avg"]["value"];
            match want.get(key) {
                Some((sum, weights)) if *weights != 0.0 => close(
                    got,
                    sum / weights,
                    &format!("{key} {value_missing:?} {weight_missing:?}"),
                ),
                _ => assert!(got.is_null(), "{key}: {got}"),
            }
        }
    }
    // Several weights in one event: refused, naming the field.
    let (status, answer) = server.request(
        "POST",
        "/w/_doc",
        Some(r#"{"g": "c", "v": 1, "w": [1, 2]}"#),
    );
    assert_eq!(status, 201, "{answer}");
    let body = json!({"size": 0, "aggs": {"avg": {"weighted_avg": {"value": {"field": "v"}, "weight": {"field": "w"}}}}});
    let (status, answer) = server.request("POST", "/w/_search", Some(&body.to_string()));
    assert_eq!(status, 400, "{answer}");
    assert!(answer.to_string().contains("[w]"), "{answer}");
}

fn search_index(server: &Server, index: &str, body: Value) -> Value {
    let (status, answer) = server.request(
        "POST",
        &format!("/{index}/_search"),
        Some(&body.to_string()),
    );
    assert_eq!(status, 200, "{answer}");
    answer
}

/// `adjacency_matrix` against a count by hand over every filter and pair of filters: empty
/// buckets are left out, keys are in order, and a sub-aggregation runs in each bucket.
#[test]
fn adjacency_matrix_counts_every_pair() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let tags: Vec<Vec<&str>> = (0..40)
        .map(|i| {
            ["red", "green", "blue", "black"]
                .iter()
                .enumerate()
                .filter(|(k, _)| (i * 7 + k * 3) % (k + 2) == 0)
                .map(|(_, t)| *t)
                .collect()
        })
        .collect();
    let mut bulk = String::new();
    for (i, t) in tags.iter().enumerate() {
        bulk.push_str(&format!(
            "{{\"index\":{{}}}}\n{}\n",
            json!({"tag": t, "n": i})
        ));
    }
    let (status, answer) = server.request("POST", "/adj/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    let names = ["b", "g", "k", "r"];
    let colour = |name: &str| match name {
        "b" => "blue",
        "g" => "green",
        "k" => "black",
        _ => "red",
    };
    let filters: serde_json::Map<String, Value> = names
        .iter()
        .map(|n| (n.to_string(), json!({"term": {"tag": colour(n)}})))
        .collect();
    let body = json!({"size": 0, "aggs": {"m": {"adjacency_matrix": {"filters": filters, "separator": "+"},
        "aggs": {"top": {"max": {"field": "n"}}}}}});
    let answer = search_index(&server, "adj", body);
    let got: Vec<(String, u64, f64)> = answer["aggregations"]["m"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key"].as_str().unwrap().to_owned(),
                b["doc_count"].as_u64().unwrap(),
                b["top"]["value"].as_f64().unwrap(),
            )
        })
        .collect();
    let mut want = Vec::new();
    let mut keys: Vec<(String, Vec<&str>)> =
        names.iter().map(|n| (n.to_string(), vec![*n])).collect();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            keys.push((format!("{a}+{b}"), vec![*a, *b]));
        }
    }
    keys.sort();
    for (key, needs) in keys {
        let docs: Vec<usize> = (0..tags.len())
            .filter(|&i| needs.iter().all(|n| tags[i].contains(&colour(n))))
            .collect();
        if let Some(&last) = docs.last() {
            want.push((key, docs.len() as u64, last as f64));
        }
    }
    assert!(want.len() > 4, "the data should hold some pairs: {want:?}");
    assert_eq!(got, want);
}

/// `top_hits` sorted by a field other than the time, per terms bucket, against a sort by hand:
/// numbers in order (ties in time order), events without the field last, `from` and `size`
/// applied after the sort, the sort value shown.
#[test]
fn top_hits_sorted_by_a_field_match_a_sort_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("d"));
    let docs: Vec<Value> = (0..30i64)
        .map(|i| {
            let group = ["x", "y", "z"][(i % 3) as usize];
            let mut doc = json!({"g": group, "i": i,
                "@timestamp": 1_700_000_000_000i64 + i * 1000});
            if i % 7 != 0 {
                doc["num"] = json!((i * 13) % 10);
            }
            doc
        })
        .collect();
    let mut bulk = String::new();
    for doc in &docs {
        bulk.push_str(&format!("{{\"index\":{{}}}}\n{doc}\n"));
    }
    let (status, answer) = server.request("POST", "/th/_bulk", Some(&bulk));
    assert_eq!(status, 200, "{answer}");
    for (descending, from, size) in [(false, 0, 3), (true, 1, 4), (true, 0, 20)] {
        let order = if descending { "desc" } else { "asc" };
        let body = json!({"size": 0, "aggs": {"g": {"terms": {"field": "g"}, "aggs": {
            "top": {"top_hits": {"sort": [{"num": {"order": order}}], "from": from, "size": size,
                "_source": ["i"]}}}}}});
        let answer = search_index(&server, "th", body);
        for bucket in answer["aggregations"]["g"]["buckets"].as_array().unwrap() {
            let group = bucket["key"].as_str().unwrap();
            let mut want: Vec<&Value> = docs.iter().filter(|d| d["g"] == group).collect();
            // Time order first (the docs are), then a stable sort by the field, missing last.
            want.sort_by(|a, b| match (a["num"].as_i64(), b["num"].as_i64()) {
                (Some(x), Some(y)) if descending => y.cmp(&x),
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            });
            let want: Vec<(i64, Value)> = want
                .iter()
                .skip(from)
                .take(size)
                .map(|d| (d["i"].as_i64().unwrap(), d["num"].clone()))
                .collect();
            let hits = &bucket["top"]["hits"];
            assert_eq!(hits["total"]["value"], 10, "{group}");
            let got: Vec<(i64, Value)> = hits["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h["_source"]["i"].as_i64().unwrap(), h["sort"][0].clone()))
                .collect();
            assert_eq!(got, want, "{group} {order} from {from} size {size}");
        }
    }
}
