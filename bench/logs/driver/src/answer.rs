//! Answer lines: how engines write them (PROTOCOL.md, "Requests and answers"), the engine time
//! an answer line may end with, and how the driver decides whether two engines' answers to one
//! request agree.
//!
//! Agreement is exact for every request but two:
//! - TERMS: values of equal count may come in any order, and when the list is cut at `K` inside
//!   a run of equal counts, which of the tied values made the cut may differ (ties at the cut
//!   are arbitrary unless an engine breaks them by value, as PROTOCOL.md asks); the counts, rank
//!   by rank, must be equal;
//! - PERCENTILES: engines may approximate, so each value may differ by 2 % of the larger one,
//!   or by 1 (rounding to integers).

use std::collections::BTreeSet;

use crate::protocol::{Command, Request};

pub const UNSUPPORTED: &str = "UNSUPPORTED";
pub const ERROR: &str = "ERROR";

/// Splits an answer line into the answer and the engine time it may end with: `ANSWER<TAB>NANOS`,
/// the whole nanoseconds the engine spent on the request (PROTOCOL.md). Answers hold no tab, so
/// the line is split at its last one, and only when what follows is one or more ASCII digits;
/// any other line is all answer, with no engine time. Digits too many for a `u64` are removed
/// all the same, but give no time.
pub fn split_engine_time(line: &str) -> (&str, Option<u64>) {
    match line.rsplit_once('\t') {
        Some((answer, nanos)) if !nanos.is_empty() && nanos.bytes().all(|b| b.is_ascii_digit()) => {
            (answer, nanos.parse().ok())
        }
        _ => (line, None),
    }
}

/// TAIL and HEAD: `n first last`, or `0` when nothing matched.
pub fn top(times: impl IntoIterator<Item = i64>) -> String {
    let mut times = times.into_iter();
    let Some(first) = times.next() else {
        return "0".to_owned();
    };
    let (count, last) = times.fold((1, first), |(count, _), time| (count + 1, time));
    format!("{count} {first} {last}")
}

/// TAILEV: `n first last digest`, or `0` when nothing matched. `digest` is the wrapping sum,
/// over the returned hits newer than the last one (`_time > last`), of [`field_digest`] over
/// each field of the hit's event but `_time` (PROTOCOL.md, "TAILEV").
pub fn tail_events(count: usize, first: i64, last: i64, digest: u64) -> String {
    if count == 0 {
        "0".to_owned()
    } else {
        format!("{count} {first} {last} {digest}")
    }
}

/// One field's share of a TAILEV digest: 1, plus the UTF-8 byte length of a string or the
/// value of an integer (two's complement, wrapping). Counting each field proves every field
/// was read, the lengths and values that each was read whole.
pub fn field_digest(value: FieldValue<'_>) -> u64 {
    match value {
        FieldValue::Str(text) => 1 + text.len() as u64,
        // Two's complement: -1 adds u64::MAX, the same bits Java's long addition wraps to.
        FieldValue::Integer(number) => 1u64.wrapping_add(number as u64),
    }
}

/// A stored field value as the TAILEV digest reads it.
#[derive(Clone, Copy, Debug)]
pub enum FieldValue<'a> {
    Str(&'a str),
    Integer(i64),
}

/// Accumulates HISTOGRAM counts: `buckets total checksum`.
#[derive(Clone, Copy, Debug)]
pub struct HistogramAnswer {
    seconds: i64,
    buckets: u64,
    total: u64,
    checksum: i64,
}

impl HistogramAnswer {
    pub fn new(seconds: u64) -> HistogramAnswer {
        HistogramAnswer {
            // The protocol caps SECONDS far below i64::MAX (protocol::MAX_NUMBER).
            seconds: seconds as i64,
            buckets: 0,
            total: 0,
            checksum: 0,
        }
    }

    /// The bucket of a timestamp: `floor(time_ms / (SECONDS * 1000))`.
    pub fn bucket_of(time_ms: i64, seconds: u64) -> i64 {
        time_ms.div_euclid(seconds as i64 * 1000)
    }

    /// Adds one bucket, given by its index; each bucket must be added once, empty ones not at
    /// all (they are skipped here).
    pub fn add_bucket(&mut self, bucket: i64, count: u64) {
        if count == 0 {
            return;
        }
        self.buckets += 1;
        self.total += count;
        let start_seconds = bucket.wrapping_mul(self.seconds);
        self.checksum = self
            .checksum
            .wrapping_add(start_seconds.wrapping_mul(count as i64));
    }

    pub fn answer(&self) -> String {
        format!("{} {} {}", self.buckets, self.total, self.checksum)
    }
}

/// TERMS: the `k` values of largest count, by count descending then value ascending, as
/// `value=count` separated by spaces (empty when nothing matched).
pub fn terms(mut counts: Vec<(String, u64)>, k: usize) -> String {
    counts.retain(|(_, count)| *count > 0);
    counts.sort_unstable_by(|(a, a_count), (b, b_count)| b_count.cmp(a_count).then(a.cmp(b)));
    counts.truncate(k);
    let pairs: Vec<String> = counts
        .iter()
        .map(|(value, count)| format!("{value}={count}"))
        .collect();
    pairs.join(" ")
}

/// PERCENTILES: p50, p95 and p99 rounded to integers, or `0` when no event has the field.
pub fn percentiles(values: Option<[f64; 3]>) -> String {
    match values {
        None => "0".to_owned(),
        Some([p50, p95, p99]) => {
            format!("{} {} {}", p50.round(), p95.round(), p99.round())
        }
    }
}

/// STATS: `count min max sum`, or `0` when no event has the field.
pub fn stats(count: u64, min: i64, max: i64, sum: i64) -> String {
    if count == 0 {
        "0".to_owned()
    } else {
        format!("{count} {min} {max} {sum}")
    }
}

/// How two answers to one request compare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    Differ {
        reason: String,
    },
    /// One side did not answer (`UNSUPPORTED`, `ERROR`): nothing to compare.
    Missing,
}

/// Compares two engines' answers to the request line `request`.
pub fn compare(request: &str, left: &str, right: &str) -> Verdict {
    let left = left.trim();
    let right = right.trim();
    let refused = |answer: &str| answer == UNSUPPORTED || answer == ERROR;
    if refused(left) || refused(right) {
        // Both rejecting a request they cannot parse is agreement; anything else is a gap.
        return if left == ERROR && right == ERROR {
            Verdict::Agree
        } else {
            Verdict::Missing
        };
    }
    if left == right {
        return Verdict::Agree;
    }
    match Command::of_request(request) {
        Some(Command::Terms) => {
            let k = match Request::parse(request) {
                Ok(Request::Terms { k, .. }) => k,
                _ => usize::MAX,
            };
            compare_terms(left, right, k)
        }
        Some(Command::Percentiles) => compare_percentiles(left, right),
        _ => Verdict::Differ {
            reason: "different answers".to_owned(),
        },
    }
}

fn differ(reason: impl Into<String>) -> Verdict {
    Verdict::Differ {
        reason: reason.into(),
    }
}

fn parse_terms(answer: &str) -> Option<Vec<(&str, u64)>> {
    answer
        .split_whitespace()
        .map(|pair| {
            let (value, count) = pair.rsplit_once('=')?;
            Some((value, count.parse().ok()?))
        })
        .collect()
}

fn compare_terms(left: &str, right: &str, k: usize) -> Verdict {
    let (Some(left), Some(right)) = (parse_terms(left), parse_terms(right)) else {
        return differ("TERMS answer is not value=count pairs");
    };
    if left.len() != right.len() {
        return differ(format!("{} values against {}", left.len(), right.len()));
    }
    if let Some(rank) = (0..left.len()).find(|&i| left[i].1 != right[i].1) {
        return differ(format!(
            "count {} against {} at rank {}",
            left[rank].1,
            right[rank].1,
            rank + 1
        ));
    }
    // Runs of equal counts: the same values in any order, except in the last run of a list cut
    // at K, where the tied values that made the cut may differ.
    let mut start = 0;
    while start < left.len() {
        let count = left[start].1;
        let end = start + left[start..].iter().take_while(|t| t.1 == count).count();
        let cut_inside_run = end == left.len() && left.len() == k;
        if !cut_inside_run {
            let values = |terms: &[(&str, u64)]| -> BTreeSet<String> {
                terms[start..end].iter().map(|t| t.0.to_owned()).collect()
            };
            if values(&left) != values(&right) {
                return differ(format!("different values with count {count}"));
            }
        }
        start = end;
    }
    Verdict::Agree
}

/// The relative tolerance of PERCENTILES, and the absolute one that rounding needs.
const PERCENTILE_RELATIVE_TOLERANCE: f64 = 0.02;
const PERCENTILE_ABSOLUTE_TOLERANCE: f64 = 1.0;

fn compare_percentiles(left: &str, right: &str) -> Verdict {
    let parse = |answer: &str| -> Option<Vec<f64>> {
        answer.split_whitespace().map(|v| v.parse().ok()).collect()
    };
    let (Some(left), Some(right)) = (parse(left), parse(right)) else {
        return differ("PERCENTILES answer is not numbers");
    };
    if left.len() != right.len() {
        return differ(format!("{} values against {}", left.len(), right.len()));
    }
    for (index, (a, b)) in left.iter().zip(&right).enumerate() {
        let tolerance = (PERCENTILE_RELATIVE_TOLERANCE * a.abs().max(b.abs()))
            .max(PERCENTILE_ABSOLUTE_TOLERANCE);
        if (a - b).abs() > tolerance {
            let name = ["p50", "p95", "p99"].get(index).unwrap_or(&"value");
            return differ(format!("{name} {a} against {b}, beyond 2 %"));
        }
    }
    Verdict::Agree
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_engine_times() {
        let cases: [(&str, (&str, Option<u64>)); 11] = [
            ("5\t2000", ("5", Some(2000))),
            ("5", ("5", None)),
            ("1 2 3\t0", ("1 2 3", Some(0))),
            // TERMS with no match: an empty answer, then the time.
            ("\t123", ("", Some(123))),
            ("", ("", None)),
            ("ERROR\t41", ("ERROR", Some(41))),
            ("UNSUPPORTED\t7", ("UNSUPPORTED", Some(7))),
            // Not all digits after the last tab: no engine time, the line is the answer.
            ("5\t", ("5\t", None)),
            ("5\t12x", ("5\t12x", None)),
            ("5\t-12", ("5\t-12", None)),
            // Digits past u64::MAX: removed, but no time.
            ("5\t99999999999999999999", ("5", None)),
        ];
        for (line, expected) in cases {
            assert_eq!(split_engine_time(line), expected, "{line:?}");
        }
    }

    #[test]
    fn formats_answers() {
        assert_eq!(top([]), "0");
        assert_eq!(top([5]), "1 5 5");
        assert_eq!(top([9, 7, 7, 3]), "4 9 3");
        let counts = vec![
            ("b".to_owned(), 3),
            ("a".to_owned(), 3),
            ("c".to_owned(), 5),
            ("d".to_owned(), 0),
            ("e".to_owned(), 1),
        ];
        assert_eq!(terms(counts.clone(), 10), "c=5 a=3 b=3 e=1");
        assert_eq!(terms(counts, 2), "c=5 a=3");
        assert_eq!(terms(vec![], 3), "");
        assert_eq!(percentiles(None), "0");
        assert_eq!(percentiles(Some([1.4, 2.5, 99.0])), "1 3 99");
        assert_eq!(stats(0, 0, 0, 0), "0");
        assert_eq!(stats(2, -1, 5, 4), "2 -1 5 4");
    }

    #[test]
    fn digests_events() {
        assert_eq!(tail_events(0, 0, 0, 0), "0");
        assert_eq!(tail_events(3, 9, 2, 17), "3 9 2 17");
        assert_eq!(field_digest(FieldValue::Str("")), 1);
        assert_eq!(field_digest(FieldValue::Str("héllo")), 7);
        assert_eq!(field_digest(FieldValue::Integer(503)), 504);
        assert_eq!(field_digest(FieldValue::Integer(-1)), 0);
        assert_eq!(
            field_digest(FieldValue::Integer(i64::MIN)),
            (1u64 << 63) + 1
        );
    }

    #[test]
    fn sums_histograms() {
        let mut histogram = HistogramAnswer::new(60);
        assert_eq!(histogram.answer(), "0 0 0");
        assert_eq!(HistogramAnswer::bucket_of(59_999, 60), 0);
        assert_eq!(HistogramAnswer::bucket_of(60_000, 60), 1);
        assert_eq!(HistogramAnswer::bucket_of(-1, 60), -1);
        histogram.add_bucket(0, 2);
        histogram.add_bucket(1, 1);
        histogram.add_bucket(2, 0);
        histogram.add_bucket(-1, 1);
        // 0*60*2 + 60*1 + (-60)*1
        assert_eq!(histogram.answer(), "3 4 0");
        let mut wrapping = HistogramAnswer::new(1);
        wrapping.add_bucket(i64::MAX / 1000, 2000);
        wrapping.add_bucket(1, 1);
        let expected = (i64::MAX / 1000).wrapping_mul(2000).wrapping_add(1);
        assert_eq!(wrapping.answer(), format!("2 2001 {expected}"));
    }

    #[test]
    fn compares_answers() {
        use Verdict::*;
        let agree = |request, a, b| compare(request, a, b) == Agree;
        let missing = |request, a, b| compare(request, a, b) == Missing;
        let cases: &[(&str, &str, &str, bool)] = &[
            ("COUNT\t*", "10", "10", true),
            ("COUNT\t*", "10", "11", false),
            ("TAIL\t100\t*", "100 9 1", "100 9 2", false),
            ("TAILEV\t100\t*", "100 9 1 77", "100 9 1 77", true),
            ("TAILEV\t100\t*", "100 9 1 77", "100 9 1 78", false),
            ("HISTOGRAM\t60\t*", "3 4 0", "3 4 0", true),
            ("STATS\tbytes\t*", "2 1 5 6", "2 1 5 7", false),
            // TERMS: order among equal counts is free.
            (
                "TERMS\tclient_ip\t10\t*",
                "a=3 b=3 c=1",
                "b=3 a=3 c=1",
                true,
            ),
            (
                "TERMS\tclient_ip\t10\t*",
                "a=3 b=3 c=1",
                "a=3 c=3 b=1",
                false,
            ),
            ("TERMS\tclient_ip\t10\t*", "a=3 b=2", "a=3 b=1", false),
            ("TERMS\tclient_ip\t10\t*", "a=3", "a=3 b=1", false),
            // Cut at K inside a tie: the last run may hold other values.
            ("TERMS\tclient_ip\t2\t*", "a=3 b=1", "a=3 c=1", true),
            // Not cut (fewer than K): the last run must match too.
            ("TERMS\tclient_ip\t3\t*", "a=3 b=1", "a=3 c=1", false),
            ("TERMS\tclient_ip\t2\t*", "b=3 c=1", "a=3 c=1", false),
            ("TERMS\tclient_ip\t2\t*", "a=x", "a=3", false),
            ("TERMS\tclient_ip\t2\t*", "", "", true),
            // PERCENTILES: 2 % or 1.
            (
                "PERCENTILES\tlatency_ms\t*",
                "100 200 1000",
                "101 196 1019",
                true,
            ),
            (
                "PERCENTILES\tlatency_ms\t*",
                "100 200 1000",
                "103 200 1000",
                false,
            ),
            ("PERCENTILES\tlatency_ms\t*", "3 8 20", "4 8 20", true),
            ("PERCENTILES\tlatency_ms\t*", "3 8 20", "5 8 20", false),
            ("PERCENTILES\tlatency_ms\t*", "3 8", "3 8 20", false),
            ("COUNT\tnope:1", "ERROR", "ERROR", true),
        ];
        for (request, a, b, expected) in cases {
            assert_eq!(
                agree(request, a, b),
                *expected,
                "{request:?}: {a:?} vs {b:?}"
            );
            assert_eq!(
                agree(request, b, a),
                *expected,
                "{request:?}: {b:?} vs {a:?}"
            );
        }
        assert!(missing("COUNT\t*", "UNSUPPORTED", "10"));
        assert!(missing("COUNT\t*", "UNSUPPORTED", "UNSUPPORTED"));
        assert!(missing("COUNT\t*", "10", "ERROR"));
    }
}
