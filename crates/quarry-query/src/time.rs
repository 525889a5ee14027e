//! Times and intervals as users write them: RFC 3339 (`2026-11-01T08:00:00Z`), a date
//! (`2026-11-01`, midnight UTC), epoch numbers (seconds, ms, µs or ns, told apart by magnitude
//! as in ingestion), `now` and Elasticsearch date math (`now-15m`, `now-1d/d`, `now/M`,
//! `2026-11-01||+1M`); intervals
//! (`30s`, `1m`, `1h`, `1d`, `500ms`). Everything is nanoseconds since the epoch.

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// The current time in nanoseconds since the epoch.
pub fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Parses a point in time; `now` is what `now` means. Elasticsearch's date math applies to
/// `now` and to a time followed by `||`: any number of `+N unit` / `-N unit` steps and `/unit`
/// roundings (down), left to right, with units `y` (years), `M` (months), `w`, `d`, `h`/`H`,
/// `m`, `s` and `ms`; years and months are calendar ones (`now-1M` on March 31st is the last
/// day of February), weeks start on Monday, and everything is UTC: `now-1d/d` is yesterday's
/// midnight, `2026-11-01||+1M/M` December's first. A time without a zone is UTC.
pub fn parse_time(text: &str, now: i64) -> Result<i64, String> {
    let text = text.trim();
    let (anchor, math) = if let Some(math) = text.strip_prefix("now") {
        (now, math)
    } else if let Some((base, math)) = text.split_once("||") {
        (parse_absolute(base)?, math)
    } else {
        return parse_absolute(text);
    };
    date_math(anchor, math).map_err(|reason| format!("bad date math in {text:?}: {reason}"))
}

fn parse_absolute(text: &str) -> Result<i64, String> {
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return date
            .and_hms_opt(0, 0, 0)
            .and_then(|t| t.and_utc().timestamp_nanos_opt())
            .ok_or_else(|| format!("date {text:?} out of range"));
    }
    // ISO 8601 without a zone: UTC (Elasticsearch's default time zone).
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
    ] {
        if let Ok(time) = chrono::NaiveDateTime::parse_from_str(text, format) {
            return time
                .and_utc()
                .timestamp_nanos_opt()
                .ok_or_else(|| format!("time {text:?} out of range"));
        }
    }
    quarry_index::event::parse_time_str(text).ok_or_else(|| {
        format!(
            "expected a time (RFC 3339, a date, epoch seconds or ms, now-15m, now/d), got {text:?}"
        )
    })
}

/// Applies date-math steps (`-1d`, `+2h`, `/d`, ...) to `time`.
fn date_math(mut time: i64, mut math: &str) -> Result<i64, String> {
    use chrono::{Datelike, Months, TimeZone, Timelike};
    let out_of_range = || "out of range".to_owned();
    while let Some(op) = math.chars().next() {
        // The op may be any char (a bad one is an error below): step over all its bytes.
        math = &math[op.len_utf8()..];
        let digits = math.bytes().take_while(u8::is_ascii_digit).count();
        let (number, rest) = math.split_at(digits);
        let unit_len = match rest {
            _ if rest.starts_with("ms") => 2,
            _ if rest.starts_with(['y', 'M', 'w', 'd', 'h', 'H', 'm', 's']) => 1,
            _ => {
                return Err(format!(
                    "expected a unit (y, M, w, d, h, m, s, ms) in {rest:?}"
                ))
            }
        };
        let (unit, rest) = rest.split_at(unit_len);
        math = rest;
        let moment = chrono::Utc.timestamp_nanos(time);
        time = match op {
            '+' | '-' => {
                let count: i64 = number
                    .parse()
                    .map_err(|_| format!("expected a number after {op:?}"))?;
                let count = if op == '-' { -count } else { count };
                let months = match unit {
                    "y" => Some(count.checked_mul(12).ok_or_else(out_of_range)?),
                    "M" => Some(count),
                    _ => None,
                };
                match months {
                    Some(months) => {
                        let shift = Months::new(
                            u32::try_from(months.unsigned_abs()).map_err(|_| out_of_range())?,
                        );
                        let shifted = if months < 0 {
                            moment.checked_sub_months(shift)
                        } else {
                            moment.checked_add_months(shift)
                        };
                        shifted
                            .and_then(|t| t.timestamp_nanos_opt())
                            .ok_or_else(out_of_range)?
                    }
                    None => {
                        let unit = if unit == "H" { "h" } else { unit };
                        let step = parse_interval(&format!("1{unit}"))?;
                        count
                            .checked_mul(step)
                            .and_then(|offset| time.checked_add(offset))
                            .ok_or_else(out_of_range)?
                    }
                }
            }
            '/' if number.is_empty() => {
                let date = moment.date_naive();
                let midnight = |date: chrono::NaiveDate| {
                    date.and_hms_opt(0, 0, 0)
                        .and_then(|t| t.and_utc().timestamp_nanos_opt())
                        .ok_or_else(out_of_range)
                };
                match unit {
                    "y" => midnight(date.with_ordinal(1).ok_or_else(out_of_range)?)?,
                    "M" => midnight(date.with_day(1).ok_or_else(out_of_range)?)?,
                    "w" => midnight(
                        date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday())),
                    )?,
                    "d" => midnight(date)?,
                    "h" | "H" => {
                        time - (i64::from(moment.minute()) * 60 + i64::from(moment.second()))
                            * NANOS_PER_SECOND
                            - i64::from(moment.nanosecond())
                    }
                    _ => {
                        let step = parse_interval(&format!("1{unit}"))?;
                        time.div_euclid(step) * step
                    }
                }
            }
            '/' => return Err("a rounding takes a unit only, as /d".to_owned()),
            other => return Err(format!("expected +, - or /, got {other:?}")),
        };
    }
    Ok(time)
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
    const DAY: i64 = 86_400 * NANOS_PER_SECOND;

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
            ("now/d", Ok(NOW / DAY * DAY)),
            ("now-1d/d", Ok((NOW - DAY) / DAY * DAY)),
            ("now/h", Ok(NOW / 3_600_000_000_000 * 3_600_000_000_000)),
            (
                "now-1h/h+30m",
                Ok(
                    (NOW - 3_600_000_000_000) / 3_600_000_000_000 * 3_600_000_000_000
                        + 1_800_000_000_000,
                ),
            ),
            // 2026-11-01 is a Sunday: its week started on Monday 2026-10-26.
            (
                "2026-11-01T15:00:00Z||/w",
                Ok(1_793_491_200 * NANOS_PER_SECOND - 6 * DAY),
            ),
            ("2026-11-01||/M", Ok(1_793_491_200 * NANOS_PER_SECOND)),
            ("2026-11-15||/M", Ok(1_793_491_200 * NANOS_PER_SECOND)),
            (
                "2026-11-01||+1M",
                Ok(1_793_491_200 * NANOS_PER_SECOND + 30 * DAY),
            ),
            ("2026-03-31||-1M", Ok(1_772_236_800 * NANOS_PER_SECOND)),
            ("2026-11-15||/y", Ok(1_767_225_600 * NANOS_PER_SECOND)),
            ("2027-11-01||-1y", Ok(1_793_491_200 * NANOS_PER_SECOND)),
            ("2026-11-01T01:00:00", Ok(1_793_494_800 * NANOS_PER_SECOND)),
            (
                "2026-11-01T01:00:00.5",
                Ok(1_793_494_800 * NANOS_PER_SECOND + 500_000_000),
            ),
            ("now/q", Err(())),
            ("now/1d", Err(())),
            ("now-1", Err(())),
            ("now*2", Err(())),
            // Found by the query_parse fuzz target: a multi-byte char where an op belongs.
            ("now\u{fffd}1d", Err(())),
            ("now-7m\u{81}", Err(())),
            ("2026-11-01||é", Err(())),
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
