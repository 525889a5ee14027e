//! Event times: exactly N sorted times in [start, end) drawn from a diurnal rate with bursts.
//!
//! The rate over the range is tabulated in bins (one second, or coarser for ranges over about
//! twelve days so the table stays at most 2^20 bins): the diurnal curve at the bin's middle
//! times the burst factor of the bin. Its running sum is the CDF of one event's time.
//!
//! N sorted uniforms are produced one at a time, in order, without holding them: if E_1 ..
//! E_{N+1} are independent Exp(1) and S_i their running sums, then S_1/S_{N+1} < ... <
//! S_N/S_{N+1} are distributed as the order statistics of N uniforms. S_{N+1} is found by a
//! first pass over a clone of the stream; the second pass replays the same draws. Each uniform
//! maps through the inverse CDF (a bin cursor that only moves forward, then linear within the
//! bin), so times come out sorted and the whole run needs O(bins) memory.

use crate::random::Random;

const MS_PER_SECOND: u64 = 1000;
pub(crate) const MS_PER_DAY: i64 = 86_400_000;
/// Bins are one second unless the range needs more than this many.
const MAX_BINS: u64 = 1 << 20;
/// Amplitude of the diurnal sine around a mean rate of 1.
const DIURNAL_AMPLITUDE: f64 = 0.6;
/// UTC hour of the daily peak (afternoon in Europe, morning on the US east coast).
const PEAK_HOUR_UTC: f64 = 15.0;
/// Bursts per day of range, each lasting 30 s to 3 min at 3 to 8 times the rate: frequent
/// enough that a day always has some, small enough (about 2% of events) to leave the
/// diurnal shape intact.
const BURSTS_PER_DAY: f64 = 4.0;
const BURST_MIN_MS: i64 = 30_000;
const BURST_MAX_MS: i64 = 180_000;
const BURST_MIN_FACTOR: f64 = 3.0;
const BURST_MAX_FACTOR: f64 = 8.0;

/// The relative event rate at `time_ms` (ms since the epoch) before bursts: `1 + 0.6 sin`
/// over 24 hours, lowest at 03:00 UTC and highest at 15:00 UTC.
pub fn diurnal_rate(time_ms: i64) -> f64 {
    let hour = time_ms.rem_euclid(MS_PER_DAY) as f64 / 3_600_000.0;
    let phase = (hour - (PEAK_HOUR_UTC - 6.0)) / 24.0;
    1.0 + DIURNAL_AMPLITUDE * libm::sin(std::f64::consts::TAU * phase)
}

/// A time interval `[start_ms, end_ms)` during which the rate is raised and more requests
/// fail.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Burst {
    pub start_ms: i64,
    pub end_ms: i64,
    pub factor: f64,
}

pub(crate) struct Timeline {
    start_ms: i64,
    end_ms: i64,
    bin_ms: i64,
    /// `cumulative[b]` is the rate mass before bin `b`; one more entry than bins.
    cumulative: Vec<f64>,
    bursts: Vec<Burst>,
    random: Random,
    remaining: u64,
    spacing_sum: f64,
    spacing_total: f64,
    bin: usize,
    burst_cursor: usize,
}

impl Timeline {
    /// `start_ms < end_ms`; `setup` draws the bursts, `times` the event times.
    pub fn new(start_ms: i64, end_ms: i64, events: u64, setup: &mut Random, times: Random) -> Self {
        // Positive: the config checks start < end.
        let range_ms = (end_ms - start_ms) as u64;
        let bin_ms = range_ms.div_ceil(MAX_BINS).max(MS_PER_SECOND).min(range_ms) as i64;
        let bins = range_ms.div_ceil(bin_ms as u64) as usize;
        let bursts = draw_bursts(start_ms, end_ms, setup);

        let mut cumulative = Vec::with_capacity(bins + 1);
        cumulative.push(0.0);
        let mut total = 0.0;
        for bin in 0..bins {
            let bin_start = start_ms + bin as i64 * bin_ms;
            let bin_end = (bin_start + bin_ms).min(end_ms);
            let width = (bin_end - bin_start) as f64;
            let mut weight = diurnal_rate(bin_start + (bin_end - bin_start) / 2) * width;
            for burst in &bursts {
                let overlap = burst.end_ms.min(bin_end) - burst.start_ms.max(bin_start);
                if overlap > 0 {
                    weight += diurnal_rate(bin_start) * overlap as f64 * (burst.factor - 1.0);
                }
            }
            total += weight;
            cumulative.push(total);
        }

        // First pass: the sum of N + 1 exponentials, replayed by `times` in `next`.
        let mut replay = times.clone();
        let spacing_total: f64 = (0..=events).map(|_| replay.exponential()).sum();

        Self {
            start_ms,
            end_ms,
            bin_ms,
            cumulative,
            bursts,
            random: times,
            remaining: events,
            spacing_sum: 0.0,
            spacing_total,
            bin: 0,
            burst_cursor: 0,
        }
    }

    pub fn bursts(&self) -> &[Burst] {
        &self.bursts
    }

    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// The next time (ms since the epoch) and whether it falls in a burst; `None` after N.
    pub fn next(&mut self) -> Option<(i64, bool)> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        self.spacing_sum += self.random.exponential();
        let total = self.cumulative[self.cumulative.len() - 1];
        let target = (self.spacing_sum / self.spacing_total).min(1.0) * total;
        let last_bin = self.cumulative.len() - 2;
        while self.bin < last_bin && self.cumulative[self.bin + 1] <= target {
            self.bin += 1;
        }
        let below = self.cumulative[self.bin];
        let mass = self.cumulative[self.bin + 1] - below;
        let bin_start = self.start_ms + self.bin as i64 * self.bin_ms;
        let bin_width = (self.bin_ms).min(self.end_ms - bin_start);
        let fraction = ((target - below) / mass).clamp(0.0, 1.0);
        let time = (bin_start + (fraction * bin_width as f64) as i64).min(self.end_ms - 1);

        while self.burst_cursor < self.bursts.len() && self.bursts[self.burst_cursor].end_ms <= time
        {
            self.burst_cursor += 1;
        }
        let in_burst = self
            .bursts
            .get(self.burst_cursor)
            .is_some_and(|burst| burst.start_ms <= time);
        Some((time, in_burst))
    }
}

/// Only the progress: the tables are large.
impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeline")
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}

/// Bursts sorted by start and not overlapping (an overlapping one is dropped).
fn draw_bursts(start_ms: i64, end_ms: i64, random: &mut Random) -> Vec<Burst> {
    let range_ms = end_ms - start_ms;
    let expected = BURSTS_PER_DAY * range_ms as f64 / MS_PER_DAY as f64;
    let mut count = expected as u64;
    if random.chance(expected - count as f64) {
        count += 1;
    }
    let mut bursts: Vec<Burst> = (0..count)
        .map(|_| {
            let duration = random.between(BURST_MIN_MS, BURST_MAX_MS).min(range_ms);
            let start = start_ms + random.between(0, range_ms - duration);
            let factor = BURST_MIN_FACTOR + (BURST_MAX_FACTOR - BURST_MIN_FACTOR) * random.unit();
            Burst {
                start_ms: start,
                end_ms: start + duration,
                factor,
            }
        })
        .collect();
    bursts.sort_by_key(|burst| burst.start_ms);
    let mut kept: Vec<Burst> = Vec::with_capacity(bursts.len());
    for burst in bursts {
        if kept.last().is_none_or(|last| last.end_ms <= burst.start_ms) {
            kept.push(burst);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::stream;

    fn times(start_ms: i64, end_ms: i64, events: u64, seed: u64) -> Vec<i64> {
        let mut setup = Random::new(seed, stream::SETUP);
        let mut timeline = Timeline::new(
            start_ms,
            end_ms,
            events,
            &mut setup,
            Random::new(seed, stream::TIMES),
        );
        std::iter::from_fn(|| timeline.next().map(|(time, _)| time)).collect()
    }

    #[test]
    fn exact_count_sorted_and_in_range() {
        // One ms, one second, a day and a half (bins of a second) and forty days (coarser).
        for (start, length, events) in [
            (0, 1, 10),
            (5_000, 1_000, 1000),
            (1_793_491_200_000, MS_PER_DAY * 3 / 2, 5000),
            (1_793_491_200_000, MS_PER_DAY * 40, 5000),
        ] {
            let all = times(start, start + length, events, 9);
            assert_eq!(all.len() as u64, events);
            assert!(all.windows(2).all(|pair| pair[0] <= pair[1]));
            assert!(all.iter().all(|&t| t >= start && t < start + length));
        }
    }

    #[test]
    fn zero_events() {
        assert!(times(0, 1000, 0, 1).is_empty());
    }

    #[test]
    fn diurnal_curve_peaks_in_the_afternoon() {
        let at_hour = |hour: i64| diurnal_rate(hour * 3_600_000);
        assert!((at_hour(15) - 1.6).abs() < 1e-9);
        assert!((at_hour(3) - 0.4).abs() < 1e-9);
        assert!((at_hour(9) - 1.0).abs() < 1e-9);
    }
}
