//! `quarry bench-serve --logs`: the log benchmark's requests (bench/logs/PROTOCOL.md), answered
//! with the same calls the CLI makes (tail, head, histogram, aggregations).
//!
//! The protocol's filter language is translated to Quarry's: a bare word searches `message`
//! only (Quarry's bare words search every text field), `field:value` is a token of the field
//! (keyword values such as `level:error` are single lowercase tokens), ranges pass through
//! (`_time` bounds are epoch milliseconds, which Quarry's time parser reads by magnitude).

use quarry_query::aggregation::AggSpec;
use quarry_query::{HitsRequest, Query, Searcher, SortOrder};
use serde_json::Value as Json;

const NANOS_PER_MS: i64 = 1_000_000;

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
    use super::translate;

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
