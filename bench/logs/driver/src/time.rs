//! RFC 3339 timestamps (`2026-11-01T08:15:02.117Z`, `…+02:00`) to milliseconds since the Unix
//! epoch, without a date library: the generator writes one fixed shape, and this parser is on
//! the indexing path of every event.
//!
//! Fractions finer than a millisecond are truncated toward the past, as Java's
//! `Instant.toEpochMilli()` does, so the Lucene peer reads every timestamp to the same value.

/// Milliseconds since 1970-01-01T00:00:00Z, `None` when `text` is not an RFC 3339 timestamp
/// (`T` or `t` or a space between date and time; `Z`, `z` or `±HH:MM` offset).
pub fn parse_rfc3339_millis(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 {
        return None;
    }
    let year = digits(bytes, 0, 4)? as i64;
    let month = digits(bytes, 5, 2)?;
    let day = digits(bytes, 8, 2)?;
    let hour = digits(bytes, 11, 2)?;
    let minute = digits(bytes, 14, 2)?;
    let second = digits(bytes, 17, 2)?;
    if bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
        || bytes[13] != b':'
        || bytes[16] != b':'
    {
        return None;
    }
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut rest = &bytes[19..];
    let mut millis = 0;
    if let Some((b'.', fraction)) = rest.split_first() {
        let count = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if count == 0 {
            return None;
        }
        for (position, digit) in fraction[..count.min(3)].iter().enumerate() {
            millis += u32::from(digit - b'0') * [100, 10, 1][position];
        }
        rest = &fraction[count..];
    }
    let offset_minutes: i64 = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let hours = digits(rest, 1, 2)?;
            let minutes = digits(rest, 4, 2)?;
            if hours > 23 || minutes > 59 {
                return None;
            }
            let offset = i64::from(hours * 60 + minutes);
            if *sign == b'-' {
                -offset
            } else {
                offset
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds =
        days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_minutes * 60;
    Some(seconds * 1000 + i64::from(millis))
}

/// Appends the RFC 3339 text of `millis` since the epoch, in UTC with three fraction digits
/// (`2026-11-01T08:15:02.117Z`, the generator's shape), to `out`; years outside 0..=9999 are
/// written with as many digits as they need.
pub fn format_rfc3339_millis(millis: i64, out: &mut Vec<u8>) {
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    if (0..=9999).contains(&year) {
        push_digits(out, year, 4);
    } else {
        out.extend_from_slice(year.to_string().as_bytes());
    }
    out.push(b'-');
    push_digits(out, i64::from(month), 2);
    out.push(b'-');
    push_digits(out, i64::from(day), 2);
    out.push(b'T');
    push_digits(out, hour, 2);
    out.push(b':');
    push_digits(out, minute, 2);
    out.push(b':');
    push_digits(out, second, 2);
    out.push(b'.');
    push_digits(out, milli, 3);
    out.push(b'Z');
}

/// Appends `value` (0 <= value < 10^width) as exactly `width` decimal digits.
fn push_digits(out: &mut Vec<u8>, value: i64, width: u32) {
    let mut divisor = 10i64.pow(width - 1);
    while divisor > 0 {
        out.push(b'0' + (value / divisor % 10) as u8);
        divisor /= 10;
    }
}

/// The proleptic Gregorian date of a day count from 1970-01-01: the inverse of
/// [`days_from_civil`] (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The decimal number in `bytes[start..start + len]`, `None` if any byte is not a digit.
fn digits(bytes: &[u8], start: usize, len: usize) -> Option<u32> {
    let slice = bytes.get(start..start + len)?;
    slice.iter().try_fold(0u32, |value, &b| {
        b.is_ascii_digit().then(|| value * 10 + u32::from(b - b'0'))
    })
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date: the era-based computation of
/// H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", `days_from_civil` (years start in
/// March so the leap day is the last day of the year).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_timestamps() {
        let cases: &[(i64, &str)] = &[
            (0, "1970-01-01T00:00:00.000Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (951_825_600_000, "2000-02-29T12:00:00.000Z"),
            (1_793_520_902_117, "2026-11-01T08:15:02.117Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ];
        let mut out = Vec::new();
        for &(millis, text) in cases {
            out.clear();
            format_rfc3339_millis(millis, &mut out);
            assert_eq!(std::str::from_utf8(&out), Ok(text), "{millis}");
        }
        // Every day of four centuries (leap rules included) and the ms of a day survive the
        // round trip through the parser.
        for day in -73_000..73_000i64 {
            let millis = day * 86_400_000 + (day.rem_euclid(86_400)) * 1000 + 7;
            out.clear();
            format_rfc3339_millis(millis, &mut out);
            let text = std::str::from_utf8(&out).expect("ascii");
            assert_eq!(parse_rfc3339_millis(text), Some(millis), "{text}");
        }
    }

    #[test]
    fn parses_timestamps() {
        let cases: &[(&str, Option<i64>)] = &[
            ("1970-01-01T00:00:00Z", Some(0)),
            ("1970-01-01T00:00:00.001Z", Some(1)),
            ("1969-12-31T23:59:59.999Z", Some(-1)),
            ("2000-02-29T12:00:00Z", Some(951_825_600_000)),
            ("2026-11-01T08:15:02.117Z", Some(1_793_520_902_117)),
            ("2026-11-01T08:15:02.1Z", Some(1_793_520_902_100)),
            // Truncated, not rounded, past the millisecond.
            ("2026-11-01T08:15:02.117999Z", Some(1_793_520_902_117)),
            ("2026-11-01T09:15:02.117+01:00", Some(1_793_520_902_117)),
            ("2026-11-01T07:45:02.117-00:30", Some(1_793_520_902_117)),
            ("2026-11-01 08:15:02.117z", Some(1_793_520_902_117)),
            ("2026-11-01T08:15:02.Z", None),
            ("2026-11-01T08:15:02", None),
            ("2026-11-01T08:15:02.117", None),
            ("2026-02-29T00:00:00Z", None),
            ("2026-13-01T00:00:00Z", None),
            ("2026-11-01T24:00:00Z", None),
            ("2026-11-01T08:15:02+1:00", None),
            ("2026/11/01T08:15:02Z", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_rfc3339_millis(text), *expected, "{text:?}");
        }
    }

    /// Every day boundary over four centuries (leap rules included) against a running count.
    #[test]
    fn counts_days_like_a_calendar() {
        let mut expected = days_from_civil(1900, 1, 1);
        for year in 1900..2300 {
            for month in 1..=12 {
                for day in 1..=days_in_month(year, month) {
                    assert_eq!(days_from_civil(year, month, day), expected);
                    expected += 1;
                }
            }
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
    }
}
