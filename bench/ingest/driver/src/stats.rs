//! Percentiles of durations, and the wall clock as RFC 3339 for markers' `_time`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The nearest-rank percentile of sorted `samples` (zero when empty): the smallest sample with
/// at least `per_mille`/1000 of all samples at or below it.
pub fn percentile(sorted: &[Duration], per_mille: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (per_mille * sorted.len()).div_ceil(1000);
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}

/// Now, as `2026-11-01T08:15:02.117Z`.
pub fn now_rfc3339() -> String {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339_millis(since_epoch.as_millis() as i64)
}

/// Milliseconds since the epoch as RFC 3339 UTC with milliseconds (civil-from-days, proleptic
/// Gregorian calendar).
pub fn rfc3339_millis(millis: i64) -> String {
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    // Days since 0000-03-01 in 400-year eras of 146,097 days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use logs_driver::time::parse_rfc3339_millis;

    #[test]
    fn percentiles_by_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 500), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 990), Duration::from_millis(99));
        assert_eq!(percentile(&samples[..1], 990), Duration::from_millis(1));
        assert_eq!(percentile(&[], 500), Duration::ZERO);
    }

    #[test]
    fn formats_timestamps_the_parser_reads_back() {
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(
            rfc3339_millis(1_793_491_200_000),
            "2026-11-01T00:00:00.000Z"
        );
        for millis in [0, 1, 951_782_399_999, 1_793_491_202_117, 4_102_444_800_000] {
            assert_eq!(parse_rfc3339_millis(&rfc3339_millis(millis)), Some(millis));
        }
        assert!(now_rfc3339().ends_with('Z'));
    }
}
