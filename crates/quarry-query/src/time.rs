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
    parse_time_in(text, now, Zone::Utc, Rounding::Down)
}

/// Which way a `/unit` rounding goes. Elasticsearch rounds a range's `gte` and `lt` bounds
/// down (the unit's first instant) and its `lte` and `gt` bounds up (the unit's last
/// instant), so that `lte: now/d` includes all of today and `gt: now/d` starts tomorrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    Down,
    Up,
}

/// A time zone for times written without one and for date-math roundings (`now/d` is
/// midnight there): UTC, a fixed offset (`+01:00`) or a named zone (`Europe/Paris`).
/// It travels to other nodes as its name (`Zone::name`, read back by `Zone::parse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Zone {
    #[default]
    Utc,
    Fixed(chrono::FixedOffset),
    Named(chrono_tz::Tz),
}

impl From<Zone> for String {
    fn from(zone: Zone) -> String {
        zone.name()
    }
}

impl TryFrom<String> for Zone {
    type Error = String;

    fn try_from(text: String) -> Result<Zone, String> {
        Zone::parse(&text)
    }
}

impl Zone {
    /// The zone as `parse` reads it: `UTC`, `+01:00`, `Europe/Paris`.
    pub fn name(&self) -> String {
        match self {
            Zone::Utc => "UTC".to_owned(),
            Zone::Fixed(offset) => offset.to_string(),
            Zone::Named(tz) => tz.name().to_owned(),
        }
    }

    /// `UTC`, `Z`, `+01:00`, `-0530`, `+01`, or an IANA name such as `Europe/Paris`.
    pub fn parse(text: &str) -> Result<Zone, String> {
        let text = text.trim();
        if matches!(text, "UTC" | "utc" | "Z" | "z" | "Etc/UTC" | "GMT") {
            return Ok(Zone::Utc);
        }
        if let Some(sign) = text.chars().next().filter(|c| matches!(c, '+' | '-')) {
            let digits: String = text[1..].chars().filter(|c| *c != ':').collect();
            let (hours, minutes) = match digits.len() {
                1 | 2 => (digits.as_str(), "0"),
                4 => digits.split_at(2),
                _ => return Err(format!("time zone {text:?}: expected +HH:MM")),
            };
            let seconds = hours
                .parse::<i32>()
                .ok()
                .zip(minutes.parse::<i32>().ok())
                .filter(|&(h, m)| h <= 18 && m < 60)
                .map(|(h, m)| (h * 3600 + m * 60) * if sign == '-' { -1 } else { 1 })
                .ok_or_else(|| format!("time zone {text:?}: expected +HH:MM"))?;
            return chrono::FixedOffset::east_opt(seconds)
                .map(Zone::Fixed)
                .ok_or_else(|| format!("time zone {text:?} out of range"));
        }
        text.parse::<chrono_tz::Tz>().map(Zone::Named).map_err(|_| {
            format!("unknown time zone {text:?} (an IANA name such as Europe/Paris, or +01:00)")
        })
    }

    /// The offset from UTC in seconds at the instant `nanos`.
    pub fn offset_at(self, nanos: i64) -> i64 {
        use chrono::{Offset, TimeZone};
        let utc = chrono::DateTime::from_timestamp_nanos(nanos).naive_utc();
        match self {
            Zone::Utc => 0,
            Zone::Fixed(offset) => i64::from(offset.local_minus_utc()),
            Zone::Named(tz) => i64::from(tz.offset_from_utc_datetime(&utc).fix().local_minus_utc()),
        }
    }

    /// The instant of a wall-clock time here (the earlier one when clocks go back; the first
    /// after the gap when they go forward).
    pub fn instant_of(self, local: chrono::NaiveDateTime) -> Option<i64> {
        use chrono::TimeZone;
        let utc = match self {
            Zone::Utc => Some(local.and_utc()),
            Zone::Fixed(offset) => offset
                .from_local_datetime(&local)
                .earliest()
                .map(|t| t.to_utc()),
            Zone::Named(tz) => tz
                .from_local_datetime(&local)
                .earliest()
                .or_else(|| {
                    tz.from_local_datetime(&(local + chrono::Duration::hours(1)))
                        .earliest()
                })
                .map(|t| t.to_utc()),
        }?;
        utc.timestamp_nanos_opt()
    }

    /// The wall-clock time here at the instant `nanos`.
    pub fn local_of(self, nanos: i64) -> chrono::NaiveDateTime {
        chrono::DateTime::from_timestamp_nanos(nanos).naive_utc()
            + chrono::Duration::seconds(self.offset_at(nanos))
    }
}

/// `parse_time` with a zone for times without one and for roundings, and a rounding
/// direction.
pub fn parse_time_in(text: &str, now: i64, zone: Zone, rounding: Rounding) -> Result<i64, String> {
    let text = text.trim();
    let (anchor, math) = if let Some(math) = text.strip_prefix("now") {
        (now, math)
    } else if let Some((base, math)) = text.split_once("||") {
        (parse_absolute(base, zone, Rounding::Down)?, math)
    } else {
        return parse_absolute(text, zone, rounding);
    };
    date_math(anchor, math, zone, rounding)
        .map_err(|reason| format!("bad date math in {text:?}: {reason}"))
}

/// A time as written; rounded `Up`, a time written without its smaller units is the last
/// instant it names (`2026-01-01` is its day's last nanosecond), as Elasticsearch reads an
/// inclusive upper bound.
fn parse_absolute(text: &str, zone: Zone, rounding: Rounding) -> Result<i64, String> {
    let in_zone = |local: chrono::NaiveDateTime| {
        zone.instant_of(local)
            .ok_or_else(|| format!("time {text:?} out of range"))
    };
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let start = date
            .and_hms_opt(0, 0, 0)
            .ok_or_else(|| format!("date {text:?} out of range"))
            .and_then(in_zone)?;
        return match rounding {
            Rounding::Down => Ok(start),
            Rounding::Up => Ok(next_unit(start, "d", zone)? - 1),
        };
    }
    if rounding == Rounding::Up {
        if let Ok(time) = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M") {
            return Ok(in_zone(time)? + 60 * NANOS_PER_SECOND - 1);
        }
    }
    // ISO 8601 without a zone: in `zone` (UTC unless the request says).
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
    ] {
        if let Ok(time) = chrono::NaiveDateTime::parse_from_str(text, format) {
            return in_zone(time);
        }
    }
    quarry_index::event::parse_time_str(text).ok_or_else(|| {
        format!(
            "expected a time (RFC 3339, a date, epoch seconds or ms, now-15m, now/d), got {text:?}"
        )
    })
}

/// Applies date-math steps (`-1d`, `+2h`, `/d`, ...) to `time`; calendar steps and roundings
/// count in `zone`'s wall-clock time, and a rounding goes `rounding`'s way.
pub(crate) fn date_math(
    mut time: i64,
    mut math: &str,
    zone: Zone,
    rounding: Rounding,
) -> Result<i64, String> {
    use chrono::{Months, TimeZone};
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
                let start = unit_start(time, unit, zone)?;
                match rounding {
                    Rounding::Down => start,
                    // The unit's last nanosecond: the next unit's start, less one.
                    Rounding::Up => unit_start(next_unit(start, unit, zone)?, unit, zone)? - 1,
                }
            }
            '/' => return Err("a rounding takes a unit only, as /d".to_owned()),
            other => return Err(format!("expected +, - or /, got {other:?}")),
        };
    }
    Ok(time)
}

/// The first instant of the `unit` (y, M, w, d, h, m, s, ms) holding `time`, in `zone`'s
/// wall-clock time; weeks start on Monday.
pub fn unit_start(time: i64, unit: &str, zone: Zone) -> Result<i64, String> {
    use chrono::{Datelike, Timelike};
    let out_of_range = || "out of range".to_owned();
    let local = zone.local_of(time);
    let date = local.date();
    let midnight = |date: chrono::NaiveDate| {
        date.and_hms_opt(0, 0, 0)
            .and_then(|t| zone.instant_of(t))
            .ok_or_else(out_of_range)
    };
    match unit {
        "y" => midnight(date.with_ordinal(1).ok_or_else(out_of_range)?),
        "M" => midnight(date.with_day(1).ok_or_else(out_of_range)?),
        "q" => midnight(
            date.with_day(1)
                .and_then(|d| d.with_month0(d.month0() / 3 * 3))
                .ok_or_else(out_of_range)?,
        ),
        "w" => midnight(date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday()))),
        "d" => midnight(date),
        "h" | "H" => date
            .and_hms_opt(local.hour(), 0, 0)
            .and_then(|t| zone.instant_of(t))
            .ok_or_else(out_of_range),
        _ => {
            // Minutes and shorter: the same in every zone (offsets are whole minutes).
            let step = parse_interval(&format!("1{unit}"))?;
            Ok(time.div_euclid(step) * step)
        }
    }
}

/// The start of the unit after the one starting at `start` (in `zone`'s calendar).
pub fn next_unit(start: i64, unit: &str, zone: Zone) -> Result<i64, String> {
    let out_of_range = || "out of range".to_owned();
    let local = zone.local_of(start);
    let months = match unit {
        "y" => Some(12),
        "q" => Some(3),
        "M" => Some(1),
        _ => None,
    };
    let next_local = match (months, unit) {
        (Some(months), _) => local
            .checked_add_months(chrono::Months::new(months))
            .ok_or_else(out_of_range)?,
        (None, "w") => local + chrono::Days::new(7),
        (None, "d") => local + chrono::Days::new(1),
        (None, "h" | "H") => local + chrono::Duration::hours(1),
        _ => return Ok(start + parse_interval(&format!("1{unit}"))?),
    };
    // Days and longer start at a wall-clock midnight; an hour may not (a shifted offset).
    match unit {
        "h" | "H" => Ok(start + 3_600 * NANOS_PER_SECOND),
        _ => zone.instant_of(next_local).ok_or_else(out_of_range),
    }
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
    fn a_zone_travels_as_its_name() {
        for text in [
            "UTC",
            "+01:00",
            "-05:30",
            "+00:00",
            "Europe/Paris",
            "America/St_Johns",
        ] {
            let zone = Zone::parse(text).unwrap();
            let sent = serde_json::to_string(&zone).unwrap();
            assert_eq!(serde_json::from_str::<Zone>(&sent).unwrap(), zone, "{sent}");
        }
        assert_eq!(Zone::parse("+05:45").unwrap().name(), "+05:45");
        assert!(serde_json::from_str::<Zone>("\"Mars/Base\"").is_err());
    }

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

    #[test]
    fn roundings_go_up_for_inclusive_upper_bounds_and_count_in_the_zone() {
        let today = NOW / DAY * DAY;
        let up = |text: &str| parse_time_in(text, NOW, Zone::Utc, Rounding::Up).unwrap();
        assert_eq!(up("now/d"), today + DAY - 1);
        assert_eq!(up("now-1d/d"), today - 1);
        assert_eq!(up("now"), NOW, "nothing to round");
        // 2025-11-01T12:26:40Z is a Saturday: its week is Monday October 27th to Sunday.
        let monday = today - 5 * DAY;
        assert_eq!(parse_time("now/w", NOW).unwrap(), monday);
        assert_eq!(up("now/w"), monday + 7 * DAY - 1);
        // November has 30 days.
        let november = parse_time("2025-11-01", 0).unwrap();
        assert_eq!(up("now/M"), parse_time("2025-12-01", 0).unwrap() - 1);
        assert_eq!(parse_time("now/M", NOW).unwrap(), november);

        // In Paris (UTC+1 in November) a day starts at 23:00 UTC the day before.
        let paris = Zone::parse("Europe/Paris").unwrap();
        let hour = 3_600 * NANOS_PER_SECOND;
        assert_eq!(
            parse_time_in("now/d", NOW, paris, Rounding::Down).unwrap(),
            today - hour
        );
        assert_eq!(
            parse_time_in("2025-11-01T00:00:00", NOW, paris, Rounding::Down).unwrap(),
            november - hour
        );
        let plus_two = Zone::parse("+02:00").unwrap();
        assert_eq!(
            parse_time_in("now/d", NOW, plus_two, Rounding::Up).unwrap(),
            today + DAY - 2 * hour - 1
        );
        // A time with its own zone keeps it.
        assert_eq!(
            parse_time_in("2026-11-01T00:00:00Z", NOW, paris, Rounding::Down).unwrap(),
            1_793_491_200 * NANOS_PER_SECOND
        );
        for bad in ["Mars/Olympus", "+25:00", "+1:2:3"] {
            assert!(Zone::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Zone::parse("-05:30").unwrap().offset_at(0),
            -(5 * 3600 + 1800)
        );
    }

    #[test]
    fn units_follow_the_zone_calendar_across_daylight_saving() {
        // Paris goes from UTC+2 to UTC+1 on 2025-10-26: that day has 25 hours.
        let paris = Zone::parse("Europe/Paris").unwrap();
        let day_start = parse_time_in("2025-10-26T00:00:00", 0, paris, Rounding::Down).unwrap();
        let next = next_unit(day_start, "d", paris).unwrap();
        assert_eq!(next - day_start, 25 * 3_600 * NANOS_PER_SECOND);
        assert_eq!(unit_start(next - 1, "d", paris).unwrap(), day_start);
        assert_eq!(
            next_unit(day_start, "q", paris).unwrap(),
            parse_time_in("2026-01-26T00:00:00", 0, paris, Rounding::Down).unwrap()
        );
        let quarter = unit_start(day_start, "q", paris).unwrap();
        assert_eq!(
            quarter,
            parse_time_in("2025-10-01T00:00:00", 0, paris, Rounding::Down).unwrap()
        );
    }
}
