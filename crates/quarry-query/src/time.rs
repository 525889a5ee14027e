//! Times and intervals as users write them: RFC 3339 (`2026-11-01T08:00:00Z`), a date
//! (`2026-11-01`, midnight UTC), epoch numbers (seconds, ms, µs or ns, told apart by magnitude
//! as in ingestion), `now` and relative times (`now-15m`, `now+1h`, `now-1d`); intervals
//! (`30s`, `1m`, `1h`, `1d`, `500ms`). Everything is nanoseconds since the epoch.

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// The current time in nanoseconds since the epoch.
pub fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Parses a point in time; `now` is what `now` means.
pub fn parse_time(text: &str, now: i64) -> Result<i64, String> {
    let text = text.trim();
    if let Some(relative) = text.strip_prefix("now") {
        if relative.is_empty() {
            return Ok(now);
        }
        let (sign, interval) = match relative.as_bytes()[0] {
            b'-' => (-1, &relative[1..]),
            b'+' => (1, &relative[1..]),
            _ => {
                return Err(format!(
                    "expected now-INTERVAL or now+INTERVAL, got {text:?}"
                ))
            }
        };
        let offset = parse_interval(interval)?;
        return now
            .checked_add(sign * offset)
            .ok_or_else(|| format!("time {text:?} out of range"));
    }
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return date
            .and_hms_opt(0, 0, 0)
            .and_then(|t| t.and_utc().timestamp_nanos_opt())
            .ok_or_else(|| format!("date {text:?} out of range"));
    }
    quarry_index::event::parse_time_str(text).ok_or_else(|| {
        format!("expected a time (RFC 3339, a date, epoch seconds or ms, now-15m), got {text:?}")
    })
}

/// Parses an interval such as `500ms`, `30s`, `5m`, `1h`, `1d`, `1w` into nanoseconds (> 0).
pub fn parse_interval(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let count: i64 = number
        .parse()
        .map_err(|_| format!("expected an interval like 30s, 5m, 1h or 1d, got {text:?}"))?;
    let unit_nanos = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => NANOS_PER_SECOND,
        "m" => 60 * NANOS_PER_SECOND,
        "h" => 3600 * NANOS_PER_SECOND,
        "d" => 86_400 * NANOS_PER_SECOND,
        "w" => 7 * 86_400 * NANOS_PER_SECOND,
        _ => {
            return Err(format!(
                "unknown interval unit {unit:?} in {text:?} (use ms, s, m, h, d or w)"
            ))
        }
    };
    match count.checked_mul(unit_nanos) {
        Some(nanos) if nanos > 0 => Ok(nanos),
        _ => Err(format!("interval {text:?} must be positive and in range")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_762_000_000 * NANOS_PER_SECOND;

    #[test]
    fn times() {
        let cases: &[(&str, Result<i64, ()>)] = &[
            ("now", Ok(NOW)),
            ("now-15m", Ok(NOW - 900 * NANOS_PER_SECOND)),
            ("now+1h", Ok(NOW + 3600 * NANOS_PER_SECOND)),
            ("now-1d", Ok(NOW - 86_400 * NANOS_PER_SECOND)),
            ("2026-11-01", Ok(1_793_491_200 * NANOS_PER_SECOND)),
            ("2026-11-01T00:00:00Z", Ok(1_793_491_200 * NANOS_PER_SECOND)),
            (
                "2026-11-01T01:00:00+01:00",
                Ok(1_793_491_200 * NANOS_PER_SECOND),
            ),
            ("1793491200", Ok(1_793_491_200 * NANOS_PER_SECOND)),
            ("1793491200000", Ok(1_793_491_200 * NANOS_PER_SECOND)),
            ("now*2", Err(())),
            ("now-", Err(())),
            ("now-5x", Err(())),
            ("yesterday", Err(())),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_time(text, NOW).map_err(|_| ()), *expected, "{text}");
        }
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1m"), Ok(60 * NANOS_PER_SECOND));
        assert_eq!(parse_interval("500ms"), Ok(500_000_000));
        assert_eq!(parse_interval("2d"), Ok(2 * 86_400 * NANOS_PER_SECOND));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("m").is_err());
        assert!(parse_interval("1y").is_err());
        assert!(parse_interval("99999999999999d").is_err());
    }
}
