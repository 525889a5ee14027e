//! Latency summaries: mean, nearest-rank percentiles and maximum of round-trip times.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Latencies in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean_us: f64,
    pub p50_us: f64,
    pub p75_us: f64,
    pub p90_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl LatencySummary {
    /// `None` when there are no samples.
    pub fn of(samples: &mut [Duration]) -> Option<LatencySummary> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let total: Duration = samples.iter().sum();
        let mean = total.as_secs_f64() / samples.len() as f64;
        Some(LatencySummary {
            mean_us: micros(mean),
            p50_us: micros(percentile(samples, 500).as_secs_f64()),
            p75_us: micros(percentile(samples, 750).as_secs_f64()),
            p90_us: micros(percentile(samples, 900).as_secs_f64()),
            p95_us: micros(percentile(samples, 950).as_secs_f64()),
            p99_us: micros(percentile(samples, 990).as_secs_f64()),
            p999_us: micros(percentile(samples, 999).as_secs_f64()),
            max_us: micros(samples[samples.len() - 1].as_secs_f64()),
        })
    }
}

/// The nearest-rank percentile of sorted, non-empty `samples`: the smallest sample with at
/// least `per_mille`/1000 of all samples at or below it. Integer arithmetic, because in floating
/// point `0.999 * 1000` rounds up past 999.
fn percentile(sorted: &[Duration], per_mille: usize) -> Duration {
    let rank = (per_mille * sorted.len()).div_ceil(1000);
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Seconds to microseconds, to a tenth of a microsecond (finer than the pipe's jitter).
fn micros(seconds: f64) -> f64 {
    (seconds * 10_000_000.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_micros(v)).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let sorted = us(&(1..=1000).collect::<Vec<_>>());
        let cases = [(500, 500), (900, 900), (990, 990), (999, 999), (1000, 1000)];
        for (per_mille, expected) in cases {
            let got = percentile(&sorted, per_mille);
            assert_eq!(got, Duration::from_micros(expected), "{per_mille}‰");
        }
        let few = us(&[1, 2, 3]);
        assert_eq!(percentile(&few, 500), Duration::from_micros(2));
        assert_eq!(percentile(&few, 999), Duration::from_micros(3));
        assert_eq!(percentile(&us(&[7]), 0), Duration::from_micros(7));
    }

    #[test]
    fn summarizes_unsorted_samples() {
        let mut samples = us(&[40, 10, 30, 20]);
        let summary = LatencySummary::of(&mut samples).expect("samples are not empty");
        assert_eq!(summary.mean_us, 25.0);
        assert_eq!(summary.p50_us, 20.0);
        assert_eq!(summary.p75_us, 30.0);
        assert_eq!(summary.p99_us, 40.0);
        assert_eq!(summary.max_us, 40.0);
        assert_eq!(LatencySummary::of(&mut []), None);
    }

    #[test]
    fn rounds_to_a_tenth_of_a_microsecond() {
        let mut samples = vec![Duration::from_nanos(1_234), Duration::from_nanos(1_238)];
        let summary = LatencySummary::of(&mut samples).expect("samples are not empty");
        assert_eq!(summary.p50_us, 1.2);
        assert_eq!(summary.max_us, 1.2);
        assert_eq!(summary.mean_us, 1.2);
    }
}
