//! Seeded randomness whose results are the same on every machine.
//!
//! The generator is PCG-64 (MCG variant, `rand_pcg::Pcg64Mcg`). Everything built on it here
//! (ranges, floats, normal deviates, weighted and Zipf choices) is written out in this file and
//! uses `libm` for `ln`, `exp`, `pow`, `sin` and `cos`: those are pure Rust, so a seed gives
//! byte-identical output whatever the platform's C math library rounds differently, and a
//! `rand` upgrade cannot change the stream.

use rand_pcg::rand_core::Rng;
use rand_pcg::Pcg64Mcg;

/// One independent stream of random numbers.
#[derive(Clone, Debug)]
pub(crate) struct Random {
    rng: Pcg64Mcg,
}

/// Names of the streams one seed is split into, so that a draw added to one part of the
/// generator does not shift what the others produce.
pub(crate) mod stream {
    pub const SETUP: u64 = 1;
    pub const TIMES: u64 = 2;
    pub const EVENTS: u64 = 3;
}

/// SplitMix64's finalizer: a bijective mix of 64 bits, used to derive seeds and the client IP
/// of each rank.
pub(crate) fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Random {
    pub fn new(seed: u64, stream: u64) -> Self {
        let high = mix64(seed ^ mix64(stream));
        let low = mix64(high ^ stream);
        Self {
            rng: Pcg64Mcg::new((u128::from(high) << 64) | u128::from(low)),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) by Lemire's multiply-shift; the bias (at most n / 2^64) is far below
    /// anything a log generator could show.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [low, high]; `low <= high`.
    pub fn between(&mut self, low: i64, high: i64) -> i64 {
        let span = (i128::from(high) - i128::from(low) + 1) as u128;
        if span > u128::from(u64::MAX) {
            return self.next_u64() as i64;
        }
        (i128::from(low) + i128::from(self.below(span as u64))) as i64
    }

    pub fn chance(&mut self, probability: f64) -> bool {
        self.unit() < probability
    }

    /// Exponential with mean 1: `-ln(1 - U)`, finite and >= 0 because `1 - U` is in (0, 1].
    pub fn exponential(&mut self) -> f64 {
        -libm::log(1.0 - self.unit())
    }

    /// Standard normal deviate (Box-Muller, one of the pair).
    pub fn standard_normal(&mut self) -> f64 {
        let radius = libm::sqrt(2.0 * self.exponential());
        radius * libm::cos(std::f64::consts::TAU * self.unit())
    }

    /// Log-normal with the given median and shape `sigma`.
    pub fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        median * libm::exp(sigma * self.standard_normal())
    }
}

/// A discrete distribution over `0..len` given by weights, sampled by binary search over the
/// cumulative sums (inverse CDF). Also the Zipf sampler: for tenants and client IPs the table
/// is exact where rejection samplers approximate, and a million entries cost 8 MB.
#[derive(Clone, Debug)]
pub(crate) struct WeightedTable {
    cumulative: Vec<f64>,
}

impl WeightedTable {
    /// Weights must be finite and >= 0 with a positive sum; callers build them from counts
    /// and constants that are.
    pub fn new(weights: impl IntoIterator<Item = f64>) -> Self {
        let mut total = 0.0;
        let cumulative: Vec<f64> = weights
            .into_iter()
            .map(|weight| {
                total += weight;
                total
            })
            .collect();
        debug_assert!(total > 0.0, "weighted table needs a positive weight");
        Self { cumulative }
    }

    /// Zipf over ranks `1..=len`: P(rank k) proportional to `k^-exponent`.
    pub fn zipf(len: usize, exponent: f64) -> Self {
        Self::new((1..=len).map(|rank| libm::pow(rank as f64, -exponent)))
    }

    pub fn total(&self) -> f64 {
        self.cumulative.last().copied().unwrap_or(0.0)
    }

    /// An index drawn with probability proportional to its weight. A table of one entry
    /// draws nothing.
    pub fn sample(&self, random: &mut Random) -> usize {
        if self.cumulative.len() <= 1 {
            return 0;
        }
        let target = random.unit() * self.total();
        self.cumulative
            .partition_point(|&sum| sum <= target)
            .min(self.cumulative.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let draw = |seed, stream| {
            let mut random = Random::new(seed, stream);
            (0..4).map(|_| random.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, stream::EVENTS), draw(7, stream::EVENTS));
        assert_ne!(draw(7, stream::EVENTS), draw(7, stream::TIMES));
        assert_ne!(draw(7, stream::EVENTS), draw(8, stream::EVENTS));
    }

    #[test]
    fn between_stays_in_bounds() {
        let mut random = Random::new(1, 1);
        for (low, high) in [(0, 0), (-3, 3), (i64::MIN, i64::MAX), (50000, 60000)] {
            for _ in 0..1000 {
                let value = random.between(low, high);
                assert!(
                    (low..=high).contains(&value),
                    "{value} not in [{low}, {high}]"
                );
            }
        }
    }

    #[test]
    fn weighted_table_follows_weights() {
        let table = WeightedTable::new([1.0, 0.0, 3.0]);
        let mut random = Random::new(3, 1);
        let mut counts = [0u32; 3];
        for _ in 0..40_000 {
            counts[table.sample(&mut random)] += 1;
        }
        assert_eq!(counts[1], 0);
        let share = f64::from(counts[2]) / 40_000.0;
        assert!((share - 0.75).abs() < 0.01, "share of index 2: {share}");
    }
}
