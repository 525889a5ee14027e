//! Summaries of round trips or engine times: mean, nearest-rank p50 and p99, minimum and
//! maximum.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Latencies in microseconds, to a tenth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub samples: usize,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub min_us: f64,
    pub max_us: f64,
}

impl Latency {
    /// `None` when there are no samples.
    pub fn of(samples: &[Duration]) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let total: Duration = sorted.iter().sum();
        Some(Latency {
            samples: sorted.len(),
            mean_us: micros(total.as_secs_f64() / sorted.len() as f64),
            p50_us: micros(percentile(&sorted, 500).as_secs_f64()),
            p99_us: micros(percentile(&sorted, 990).as_secs_f64()),
            min_us: micros(sorted[0].as_secs_f64()),
            max_us: micros(sorted[sorted.len() - 1].as_secs_f64()),
        })
    }
}

/// The nearest-rank percentile of sorted, non-empty `samples`: the smallest sample with at
/// least `per_mille`/1000 of all samples at or below it (integer arithmetic, so 990‰ of 100
/// samples is exactly rank 99).
fn percentile(sorted: &[Duration], per_mille: usize) -> Duration {
    let rank = (per_mille * sorted.len()).div_ceil(1000);
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn micros(seconds: f64) -> f64 {
    (seconds * 10_000_000.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(values: impl IntoIterator<Item = u64>) -> Vec<Duration> {
        values.into_iter().map(Duration::from_micros).collect()
    }

    #[test]
    fn summarizes_samples() {
        let summary = Latency::of(&us([40, 10, 30, 20])).expect("samples");
        assert_eq!(summary.samples, 4);
        assert_eq!(summary.mean_us, 25.0);
        assert_eq!(summary.p50_us, 20.0);
        assert_eq!(summary.p99_us, 40.0);
        assert_eq!(summary.min_us, 10.0);
        assert_eq!(summary.max_us, 40.0);
        let hundred = Latency::of(&us(1..=100)).expect("samples");
        assert_eq!((hundred.p50_us, hundred.p99_us), (50.0, 99.0));
        assert_eq!(Latency::of(&[]), None);
    }
}
