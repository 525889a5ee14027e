//! `quarry bench-serve --logs`: the log benchmark's requests (bench/logs/PROTOCOL.md), answered
//! with the same calls the CLI makes (tail, head, histogram, aggregations).
//!
//! The protocol's filter language is translated to Quarry's: a bare word searches `message`
//! only (Quarry's bare words search every text field), `field:value` is a token of the field
//! (keyword values such as `level:error` are single lowercase tokens), ranges pass through
//! (`_time` bounds are epoch milliseconds, which Quarry's time parser reads by magnitude).
//!
//! `TAILEV` (a tail with its events) goes through `Searcher::execute`, the request every front
//! end builds: the time-sorted search, then `Searcher::events`. Each event is written as JSON
//! into a buffer reused from event to event, as a server writes its response, and digested
//! (PROTOCOL.md, "TAILEV").

use quarry_format::Value;
use quarry_query::aggregation::AggSpec;
use quarry_query::{HitsRequest, Query, SearchRequest, Searcher, SortOrder};
use serde_json::Value as Json;
use std::cell::RefCell;

const NANOS_PER_MS: i64 = 1_000_000;

thread_local! {
    /// The JSON of the event being returned (one per search thread of `bench-serve`).
    static EVENT_JSON: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The answer to one log request, or `None` if `command` is not a log command.
pub fn answer(searcher: &Searcher, command: &str, args: &str) -> Option<String> {
    let answer = match command {
        "COUNT" => parse(searcher, args).and_then(|q| count(searcher, &q)),
        "TAIL" | "HEAD" => {
            let order = if command == "TAIL" {
                SortOrder::TimeDesc
            } else {
                SortOrder::TimeAsc
            };
            split_number(args)
                .and_then(|(k, rest)| time_sorted(searcher, &parse(searcher, rest)?, k, order))
        }
        "TAILEV" => split_number(args).and_then(|(k, rest)| tail_events(searcher, rest, k)),
        "HISTOGRAM" => split_number(args).and_then(|(seconds, rest)| {
            histogram(searcher, &parse(searcher, rest)?, seconds as i64)
        }),
        "TERMS" => args.split_once('\t').and_then(|(field, rest)| {
            let (k, rest) = split_number(rest)?;
            terms(searcher, &parse(searcher, rest)?, field, k)
        }),
        "PERCENTILES" => args
            .split_once('\t')
            .and_then(|(field, rest)| percentiles(searcher, &parse(searcher, rest)?, field)),
        "STATS" => args
            .split_once('\t')
            .and_then(|(field, rest)| stats(searcher, &parse(searcher, rest)?, field)),
        _ => return None,
    };
    Some(answer.unwrap_or_else(|| "ERROR".to_owned()))
}

fn split_number(args: &str) -> Option<(usize, &str)> {
    let (number, rest) = args.split_once('\t')?;
    Some((number.parse().ok()?, rest))
}

/// The protocol's `clause AND clause ...` as a Quarry query.
fn translate(filter: &str) -> String {
    if filter.trim() == "*" {
        return "*".to_owned();
    }
    filter
        .split(" AND ")
        .map(|clause| {
            let clause = clause.trim();
            if clause.contains(':') {
                clause.to_owned()
            } else {
                format!("message:{clause}")
            }
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

fn parse(searcher: &Searcher, filter: &str) -> Option<Query> {
    searcher.parse(&translate(filter)).ok()
}

fn count(searcher: &Searcher, query: &Query) -> Option<String> {
    Some(searcher.count(query).ok()?.to_string())
}

fn time_sorted(searcher: &Searcher, query: &Query, k: usize, order: SortOrder) -> Option<String> {
    if k == 0 {
        return None; // PROTOCOL.md: K is at least 1
    }
    let request = HitsRequest {
        limit: k,
        sort: order,
        ..Default::default()
    };
    let hits = searcher.search(query, &request).ok()?.hits;
    Some(match (hits.first(), hits.last()) {
        (Some(first), Some(last)) => format!(
            "{} {} {}",
            hits.len(),
            first.time.div_euclid(NANOS_PER_MS),
            last.time.div_euclid(NANOS_PER_MS)
        ),
        _ => "0".to_owned(),
    })
}

/// TAILEV: `n first last digest` of the `k` newest matches, every event fetched and written
/// as JSON; the digest leaves out the events of the last millisecond, since which of them make
/// the cut is each engine's choice.
fn tail_events(searcher: &Searcher, filter: &str, k: usize) -> Option<String> {
    if k == 0 {
        return None; // PROTOCOL.md: K is at least 1
    }
    let request = SearchRequest {
        query: translate(filter),
        ast: None,
        sort: SortOrder::TimeDesc,
        limit: k,
        ..Default::default()
    };
    let response = searcher.execute(&request).ok()?;
    let hits = &response.hits;
    let (Some(first), Some(last)) = (hits.first(), hits.last()) else {
        return Some("0".to_owned());
    };
    let (first, last) = (millis(first.time), millis(last.time));
    let digest = EVENT_JSON.with_borrow_mut(|json| {
        hits.iter().fold(0u64, |digest, hit| {
            let event_digest = write_event(hit.time, &hit.event, json);
            if millis(hit.time) > last {
                digest.wrapping_add(event_digest)
            } else {
                digest
            }
        })
    });
    Some(format!("{} {first} {last} {digest}", hits.len()))
}

fn millis(nanos: i64) -> i64 {
    nanos.div_euclid(NANOS_PER_MS)
}

/// Writes an event as one JSON object, `_time` first in RFC 3339 (milliseconds), into `out`,
/// replacing what it held; returns its TAILEV digest: over every field, 1 plus the UTF-8 length
/// of a string or the value of an integer (PROTOCOL.md), 1 for other values (which generated
/// events do not have).
fn write_event(time: i64, event: &[(String, Value)], out: &mut Vec<u8>) -> u64 {
    out.clear();
    out.extend_from_slice(b"{\"_time\":\"");
    quarry_loggen::push_rfc3339_millis(millis(time), out);
    out.push(b'"');
    let mut digest = 0u64;
    for (name, value) in event {
        out.push(b',');
        write_json_string(name, out);
        out.push(b':');
        let field_digest = match value {
            Value::Str(text) => {
                write_json_string(text, out);
                1 + text.len() as u64
            }
            Value::I64(number) => {
                // Writing JSON into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, number);
                // Two's complement, as the peers' (and Java's) wrapping sums.
                1u64.wrapping_add(*number as u64)
            }
            other => {
                let json = quarry_query::value_to_json(other);
                // Writing JSON into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, &json);
                1
            }
        };
        digest = digest.wrapping_add(field_digest);
    }
    out.push(b'}');
    digest
}

fn write_json_string(text: &str, out: &mut Vec<u8>) {
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

fn histogram(searcher: &Searcher, query: &Query, seconds: i64) -> Option<String> {
    let interval = seconds.checked_mul(1_000_000_000).filter(|&i| i > 0)?;
    let buckets = searcher.histogram(query, interval).ok()?;
    let (mut non_empty, mut total, mut checksum) = (0u64, 0u64, 0i64);
    for (start, count) in buckets {
        if count > 0 {
            non_empty += 1;
            total += count;
            let start_seconds = start.div_euclid(1_000_000_000);
            checksum = checksum.wrapping_add(start_seconds.wrapping_mul(count as i64));
        }
    }
    Some(format!("{non_empty} {total} {checksum}"))
}

fn aggregate(searcher: &Searcher, query: &Query, spec: &str) -> Option<(String, Json)> {
    let spec = AggSpec::parse(spec).ok()?;
    let mut results = searcher
        .aggregate(query, std::slice::from_ref(&spec))
        .ok()?;
    let result = results.remove(&spec.name)?;
    Some((spec.name, result))
}

fn terms(searcher: &Searcher, query: &Query, field: &str, k: usize) -> Option<String> {
    let (_, result) = aggregate(searcher, query, &format!("terms({field}, {k})"))?;
    let buckets = result.get("buckets")?.as_array()?;
    // Peers index keywords lowercased; so are the keys compared.
    let mut pairs: Vec<(String, u64)> = buckets
        .iter()
        .filter_map(|b| {
            Some((
                b.get("key")?.as_str()?.to_lowercase(),
                b.get("count")?.as_u64()?,
            ))
        })
        .collect();
    pairs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Some(
        pairs
            .iter()
            .map(|(key, count)| format!("{key}={count}"))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn percentiles(searcher: &Searcher, query: &Query, field: &str) -> Option<String> {
    let (_, result) = aggregate(
        searcher,
        query,
        &format!("percentiles({field}, 50, 95, 99)"),
    )?;
    if result.get("50").is_none_or(Json::is_null) {
        return Some("0".to_owned()); // no values
    }
    let value = |p: &str| {
        result
            .get(p)
            .and_then(Json::as_f64)
            .map_or(0, |v| v.round() as i64)
    };
    Some(format!("{} {} {}", value("50"), value("95"), value("99")))
}

fn stats(searcher: &Searcher, query: &Query, field: &str) -> Option<String> {
    let (_, result) = aggregate(searcher, query, &format!("stats({field})"))?;
    let int = |name: &str| {
        result
            .get(name)
            .and_then(Json::as_f64)
            .map_or(0, |v| v.round() as i64)
    };
    if int("count") == 0 {
        return Some("0".to_owned()); // no values
    }
    Some(format!(
        "{} {} {} {}",
        int("count"),
        int("min"),
        int("max"),
        int("sum")
    ))
}

#[cfg(test)]
mod tests {
    use super::{translate, write_event};
    use quarry_format::Value;
    use quarry_loggen::push_rfc3339_millis as write_rfc3339_millis;

    #[test]
    fn writes_times() {
        for (millis, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (951_825_600_000, "2000-02-29T12:00:00.000Z"),
            (1_793_520_902_117, "2026-11-01T08:15:02.117Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ] {
            let mut out = Vec::new();
            write_rfc3339_millis(millis, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), text, "{millis}");
        }
        // Every day of four centuries against chrono.
        for day in -73_000..73_000i64 {
            let millis = day * 86_400_000 + day.rem_euclid(86_400) * 1000 + 7;
            let mut out = Vec::new();
            write_rfc3339_millis(millis, &mut out);
            let expected = chrono::DateTime::from_timestamp_millis(millis)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[test]
    fn writes_and_digests_events() {
        let event = vec![
            ("message".to_owned(), Value::Str("say \"hé\"".to_owned())),
            ("status".to_owned(), Value::I64(503)),
            ("delta".to_owned(), Value::I64(-2)),
        ];
        let mut out = b"stale".to_vec();
        let digest = write_event(1_793_520_902_117 * 1_000_000, &event, &mut out);
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "_time": "2026-11-01T08:15:02.117Z",
                "message": "say \"hé\"",
                "status": 503,
                "delta": -2,
            })
        );
        // "say \"hé\"" is 9 bytes: 10, 503: 504, -2: -1 (wrapping).
        assert_eq!(digest, 10 + 504 - 1);
    }

    #[test]
    fn translates_the_protocol_language() {
        assert_eq!(translate("*"), "*");
        assert_eq!(translate("error"), "message:error");
        assert_eq!(
            translate("service:nginx AND latency_ms:[1000 TO 30000] AND timeout"),
            "service:nginx AND latency_ms:[1000 TO 30000] AND message:timeout"
        );
    }
}
