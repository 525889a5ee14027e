//! Plain-text log lines as events, for the server's `Content-Type: text/plain` ingest.
//!
//! Each line becomes the event `{"_time": ..., "message": line}`: the time comes from a
//! timestamp at the start of the line when one of the formats below is there, else the
//! event gets its ingest time. The message is always the whole line, timestamp included,
//! byte for byte: recognising a time never loses or changes data.
//!
//! | format | example |
//! |---|---|
//! | RFC 3339 / ISO 8601 | `2026-11-23T12:50:24.123456789+01:00`, `2026-11-23 12:50:24.123Z` |
//! | Java, log4j, logback, Python logging | `2026-11-23 12:50:24,123`, `2026-11-23 12:50:24` |
//! | nginx error log | `2026/11/23 12:50:24 [error] 42#0: ...` |
//! | Apache / nginx access log | `127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0"` |
//! | syslog RFC 3164 | `Nov 23 12:50:24 host app[123]: ...`, `Nov  3 ...`, `<34>Nov 23 ...` |
//! | syslog RFC 5424 | `<34>1 2026-11-23T12:50:24.003Z host app - - - ...` |
//! | epoch seconds or milliseconds | `1700000000 ...`, `1700000000.123 ...`, `1700000000123 ...` |
//!
//! - A timestamp is looked for only at the very start of the line, after an optional `[`,
//!   or after a syslog `<PRI>` (and RFC 5424 `VERSION `). The one exception is the access
//!   log, whose `[DD/Mon/YYYY:HH:MM:SS ±HHMM]` is the first `[` within the first
//!   `ACCESS_LOG_BRACKET_WITHIN` bytes and must close with `]`. Nothing is guessed from the
//!   middle of a line.
//! - A time without a zone is UTC. Zones are `Z`, `±HH:MM`, `±HHMM` or `±HH`. A fraction of a
//!   second (`.` or `,`, any number of digits) is kept to the nanosecond; further digits are
//!   dropped.
//! - A timestamp must end the line or be followed by a byte that cannot continue it (not an
//!   ASCII letter or digit, nor `+-:.,` before a digit), so `2026-11-23T12:50:24Zulu` and
//!   `2026-11-23T12:50:24+25:00` are none. An epoch number must have exactly 10 (seconds)
//!   or 13 (milliseconds) digits and be followed by a space, a tab, the end, or the `]` of a
//!   leading `[`: `404 not found` and `12345 items` are no time.
//! - Dates and times are checked: Feb 29 only in leap years, no Feb 30, no hour 25, no leap
//!   second 60. Times must fit the i64 nanoseconds range (years 1677 to 2262).
//! - RFC 3164 has no year: it is the year of `now`, or the year before when that would put
//!   the time more than `SYSLOG_FUTURE_SLACK` after `now` (a December line read in January).

use crate::event::format_time;
use chrono::{DateTime, Datelike, NaiveDate};

const NANOS_PER_SECOND: i64 = 1_000_000_000;
const NANOS_PER_MILLI: i64 = 1_000_000;

/// How far into a line the access log's `[` is looked for: `host ident user ` is short
/// (an IPv6 address, a long user name), while a bracket further on belongs to the message.
const ACCESS_LOG_BRACKET_WITHIN: usize = 100;

/// An RFC 3164 time may lie this far after `now` and still be this year: the sender's clock
/// may run ahead of ours, or be in a zone east of UTC (the time has no zone, so it is read as
/// UTC). Further ahead, the line was written last year.
const SYSLOG_FUTURE_SLACK: i64 = 24 * 3600 * NANOS_PER_SECOND;

const MONTHS: [&[u8]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// The time at the start of a plain-text log line, if one of the recognised formats is there:
/// returns (nanoseconds since the Unix epoch, UTC; byte length of the line's prefix that ends
/// with the timestamp text). The prefix is the timestamp's own length when the line starts
/// with it; it also covers a leading `[`, a syslog `<PRI>VERSION ` or an access log's
/// `host ident user [`, so `&line[end..]` is what follows the timestamp.
pub fn leading_timestamp(line: &str, now: i64) -> Option<(i64, usize)> {
    let bytes = line.as_bytes();
    let (start, bracketed) = skip_prefix(bytes);
    iso_time(bytes, start)
        .or_else(|| syslog_time(bytes, start, now))
        .or_else(|| epoch_time(bytes, start, bracketed))
        .or_else(|| access_log_time(bytes))
}

/// One text line as the JSON event line the ingest path parses:
/// `{"_time": "<RFC 3339 with ns>", "message": line}` when a timestamp is recognised, else
/// `{"message": line}` (the event then gets the ingest time). The message keeps the whole
/// line, timestamp included, unchanged: recognising a time never loses or changes data.
pub fn text_line_event(line: &str, now: i64) -> String {
    // Serializing a str cannot fail: it has no map keys to reject.
    let message = serde_json::to_string(line).expect("a str serializes");
    match leading_timestamp(line, now) {
        // `format_time` prints only digits, `-`, `:`, `.`, `T` and `Z`: nothing to escape.
        Some((time, _)) => format!(r#"{{"_time":"{}","message":{message}}}"#, format_time(time)),
        None => format!(r#"{{"message":{message}}}"#),
    }
}

/// Where a leading timestamp may start: after a `[`, or after a syslog `<PRI>` and an RFC
/// 5424 `VERSION `; and whether a `[` was skipped.
fn skip_prefix(bytes: &[u8]) -> (usize, bool) {
    let mut s = Scanner { bytes, pos: 0 };
    if s.eat(b'[') {
        return (s.pos, true);
    }
    if s.eat(b'<') && (1..=3).contains(&s.digits().len()) && s.eat(b'>') {
        let after_priority = s.pos;
        if (1..=2).contains(&s.digits().len()) && s.eat(b' ') {
            return (s.pos, false);
        }
        return (after_priority, false);
    }
    (0, false)
}

/// RFC 3339 / ISO 8601 and its log variants: `YYYY-MM-DD` or `YYYY/MM/DD`, `T` or a space,
/// the time of day, an optional zone.
fn iso_time(bytes: &[u8], start: usize) -> Option<(i64, usize)> {
    let mut s = Scanner { bytes, pos: start };
    let year = s.number(4)?;
    let separator = s.eat_any(b"-/")?;
    let month = s.number(2)?;
    s.require(separator)?;
    let day = s.number(2)?;
    s.eat_any(b"Tt ")?;
    let clock = s.clock()?;
    let offset = s.zone().unwrap_or(0);
    if !s.at_boundary() {
        return None;
    }
    Some((utc_nanos(year as i32, month, day, clock, offset)?, s.pos))
}

/// RFC 3164: `Mon DD HH:MM:SS`, the day padded with a space or a zero (or not at all).
fn syslog_time(bytes: &[u8], start: usize, now: i64) -> Option<(i64, usize)> {
    let mut s = Scanner { bytes, pos: start };
    let month = s.month()?;
    if !s.eat(b' ') {
        return None;
    }
    s.eat(b' ');
    let day = s.digits();
    if !(1..=2).contains(&day.len()) || !s.eat(b' ') {
        return None;
    }
    let day = decimal(day) as u32;
    let clock = s.clock()?;
    if !s.at_boundary() {
        return None;
    }
    let year = DateTime::from_timestamp_nanos(now).year();
    let latest = now.saturating_add(SYSLOG_FUTURE_SLACK);
    let time = utc_nanos(year, month, day, clock, 0)
        .filter(|&time| time <= latest)
        .or_else(|| utc_nanos(year - 1, month, day, clock, 0))?;
    Some((time, s.pos))
}

/// Epoch seconds (10 digits) or milliseconds (13), with an optional fraction.
fn epoch_time(bytes: &[u8], start: usize, bracketed: bool) -> Option<(i64, usize)> {
    let mut s = Scanner { bytes, pos: start };
    let whole = s.digits();
    let unit = match whole.len() {
        10 => NANOS_PER_SECOND,
        13 => NANOS_PER_MILLI,
        _ => return None,
    };
    // 9,999,999,999 s is past 2262: the checked product is the range check.
    let mut time = decimal(whole).checked_mul(unit)?;
    if s.peek() == Some(b'.') {
        s.pos += 1;
        let fraction = s.digits();
        if fraction.is_empty() {
            return None;
        }
        time = time.checked_add(fraction_value(fraction, unit))?;
    }
    match s.peek() {
        None | Some(b' ' | b'\t') => Some((time, s.pos)),
        Some(b']') if bracketed => Some((time, s.pos)),
        _ => None,
    }
}

/// The access log's `[DD/Mon/YYYY:HH:MM:SS ±HHMM]`, at the first `[` near the line's start.
fn access_log_time(bytes: &[u8]) -> Option<(i64, usize)> {
    let window = &bytes[..bytes.len().min(ACCESS_LOG_BRACKET_WITHIN)];
    let open = window.iter().position(|&b| b == b'[')?;
    let mut s = Scanner {
        bytes,
        pos: open + 1,
    };
    let day = s.number(2)?;
    s.require(b'/')?;
    let month = s.month()?;
    s.require(b'/')?;
    let year = s.number(4)?;
    s.require(b':')?;
    let clock = s.clock()?;
    let offset = if s.eat(b' ') { s.zone()? } else { 0 };
    let end = s.pos;
    if !s.eat(b']') {
        return None;
    }
    Some((utc_nanos(year as i32, month, day, clock, offset)?, end))
}

/// A time of day: hour, minute, second, nanosecond.
#[derive(Debug, Clone, Copy)]
struct Clock(u32, u32, u32, u32);

/// Nanoseconds since the epoch of a civil date and time `offset` seconds east of UTC; None
/// for an impossible date or time (Feb 30, hour 25, second 60) or one outside the i64
/// nanoseconds range.
fn utc_nanos(year: i32, month: u32, day: u32, clock: Clock, offset: i64) -> Option<i64> {
    let Clock(hour, minute, second, nano) = clock;
    let local =
        NaiveDate::from_ymd_opt(year, month, day)?.and_hms_nano_opt(hour, minute, second, nano)?;
    local
        .and_utc()
        .timestamp_nanos_opt()?
        .checked_sub(offset * NANOS_PER_SECOND)
}

/// The value of a run of at most 18 ASCII digits (callers pass at most 13).
fn decimal(digits: &[u8]) -> i64 {
    digits
        .iter()
        .fold(0, |value, &d| value * 10 + i64::from(d - b'0'))
}

/// A decimal fraction's digits in units of `1/unit` (nanoseconds of a second when `unit` is
/// `NANOS_PER_SECOND`): digits finer than one unit are dropped.
fn fraction_value(digits: &[u8], unit: i64) -> i64 {
    let mut scale = unit;
    let mut value = 0;
    for &d in digits {
        scale /= 10;
        if scale == 0 {
            break;
        }
        value += i64::from(d - b'0') * scale;
    }
    value
}

/// A cursor over the line's bytes. It only ever steps over ASCII bytes, so every position it
/// reaches is a char boundary of the line.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.pos += usize::from(found);
        found
    }

    /// `byte` at the cursor, consumed; None if another byte is there.
    fn require(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// The byte at the cursor, consumed, if it is one of `set`.
    fn eat_any(&mut self, set: &[u8]) -> Option<u8> {
        let byte = self.peek().filter(|b| set.contains(b))?;
        self.pos += 1;
        Some(byte)
    }

    /// The run of ASCII digits at the cursor, consumed (perhaps empty).
    fn digits(&mut self) -> &'a [u8] {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let run = &rest[..rest.iter().take_while(|b| b.is_ascii_digit()).count()];
        self.pos += run.len();
        run
    }

    /// Exactly `count` ASCII digits as a number.
    fn number(&mut self, count: usize) -> Option<u32> {
        let digits = self.bytes.get(self.pos..self.pos + count)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.pos += count;
        Some(decimal(digits) as u32)
    }

    /// An English month abbreviation (`Jan` to `Dec`) as 1 to 12.
    fn month(&mut self) -> Option<u32> {
        let name = self.bytes.get(self.pos..self.pos + 3)?;
        let index = MONTHS.iter().position(|month| *month == name)?;
        self.pos += 3;
        Some(index as u32 + 1)
    }

    /// `HH:MM:SS` with an optional `.` or `,` fraction. Ranges are checked by `utc_nanos`.
    fn clock(&mut self) -> Option<Clock> {
        let hour = self.number(2)?;
        self.require(b':')?;
        let minute = self.number(2)?;
        self.require(b':')?;
        let second = self.number(2)?;
        let mut nano = 0;
        if matches!(self.peek(), Some(b'.' | b',')) {
            let before = self.pos;
            self.pos += 1;
            let fraction = self.digits();
            if fraction.is_empty() {
                self.pos = before;
            }
            nano = fraction_value(fraction, NANOS_PER_SECOND) as u32;
        }
        Some(Clock(hour, minute, second, nano))
    }

    /// A zone, `Z`, `±HH:MM`, `±HHMM` or `±HH`, as seconds east of UTC. On None the cursor
    /// has not moved.
    fn zone(&mut self) -> Option<i64> {
        if self.eat_any(b"Zz").is_some() {
            return Some(0);
        }
        let before = self.pos;
        let sign = match self.eat_any(b"+-") {
            Some(b'-') => -1,
            Some(_) => 1,
            None => return None,
        };
        let offset = self.number(2).and_then(|hours| {
            let minutes = if self.eat(b':') {
                self.number(2)?
            } else {
                self.number(2).unwrap_or(0)
            };
            (hours <= 23 && minutes <= 59).then_some(i64::from(hours * 3600 + minutes * 60))
        });
        if offset.is_none() {
            self.pos = before;
        }
        offset.map(|offset| sign * offset)
    }

    /// Whether a timestamp may end here: at the end, or before a byte that cannot continue
    /// it. A sign or separator before a digit could (`+25:00`, a zone out of range, or
    /// `12:50:24:99`): the text is some other format, not this time in UTC.
    fn at_boundary(&self) -> bool {
        match self.peek() {
            None => true,
            Some(b) if b.is_ascii_alphanumeric() => false,
            Some(b'+' | b'-' | b':' | b'.' | b',') => {
                !self.bytes.get(self.pos + 1).is_some_and(u8::is_ascii_digit)
            }
            Some(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::parse_event;
    use proptest::prelude::*;
    use quarry_format::Value;

    /// Nanoseconds of an RFC 3339 time, by chrono's own parser: the expected values do not
    /// come from the scanner under test.
    fn nanos(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .timestamp_nanos_opt()
            .unwrap()
    }

    /// The `now` of the tests whose answer does not depend on it.
    fn now() -> i64 {
        nanos("2026-11-24T00:00:00Z")
    }

    /// `line` has the leading time `expected` (RFC 3339) ending at byte `end`, or none.
    #[track_caller]
    fn check_at(now: i64, line: &str, expected: Option<(&str, usize)>) {
        let expected = expected.map(|(time, end)| (nanos(time), end));
        assert_eq!(leading_timestamp(line, now), expected, "{line:?}");
    }

    #[track_caller]
    fn check(line: &str, expected: Option<(&str, usize)>) {
        check_at(now(), line, expected);
    }

    #[test]
    fn rfc3339() {
        check(
            "2026-11-23T12:50:24Z rest",
            Some(("2026-11-23T12:50:24Z", 20)),
        );
        check(
            "2026-11-23T12:50:24.123456789+01:00 x",
            Some(("2026-11-23T11:50:24.123456789Z", 35)),
        );
        check(
            "2026-11-23 12:50:24.123Z",
            Some(("2026-11-23T12:50:24.123Z", 24)),
        );
        check(
            "2026-11-23T12:50:24-05:30 x",
            Some(("2026-11-23T18:20:24Z", 25)),
        );
        check(
            "2026-11-23T12:50:24+0900 x",
            Some(("2026-11-23T03:50:24Z", 24)),
        );
        check(
            "2026-11-23T12:50:24+09 x",
            Some(("2026-11-23T03:50:24Z", 22)),
        );
        check("2026-11-23t12:50:24z", Some(("2026-11-23T12:50:24Z", 20)));
        check("2026-11-23T12:50:24 x", Some(("2026-11-23T12:50:24Z", 19)));
        check(
            "2026-11-23T12:50:24.1234567899Z",
            Some(("2026-11-23T12:50:24.123456789Z", 31)),
        );
        check(
            "[2026-11-23T12:50:24Z] x",
            Some(("2026-11-23T12:50:24Z", 21)),
        );
        check(
            "2026-11-24T00:30:00+01:00",
            Some(("2026-11-23T23:30:00Z", 25)),
        );
    }

    #[test]
    fn java_and_python_logging() {
        check(
            "2026-11-23 12:50:24,123 INFO main",
            Some(("2026-11-23T12:50:24.123Z", 23)),
        );
        check(
            "2026-11-23 12:50:24.123 [main] INFO",
            Some(("2026-11-23T12:50:24.123Z", 23)),
        );
        check(
            "2026-11-23 12:50:24 - root - INFO",
            Some(("2026-11-23T12:50:24Z", 19)),
        );
        check(
            "[2026-11-23 12:50:24,123] INFO",
            Some(("2026-11-23T12:50:24.123Z", 24)),
        );
        check(
            "2026-11-23 12:50:24,123+0100 x",
            Some(("2026-11-23T11:50:24.123Z", 28)),
        );
    }

    #[test]
    fn access_and_nginx_error_logs() {
        let apache =
            r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326"#;
        check(apache, Some(("2000-10-10T20:55:36Z", 45)));
        assert_eq!(
            leading_timestamp(apache, now()).unwrap().0,
            971_211_336 * NANOS_PER_SECOND
        );
        check(
            "::1 - - [23/Nov/2026:12:50:24 +0530] \"GET /\"",
            Some(("2026-11-23T07:20:24Z", 35)),
        );
        check(
            "[23/Nov/2026:12:50:24 +0000] x",
            Some(("2026-11-23T12:50:24Z", 27)),
        );
        check(
            "[23/Nov/2026:12:50:24] x",
            Some(("2026-11-23T12:50:24Z", 21)),
        );
        check(
            "2026/11/23 12:50:24 [error] 42#0: *1 open()",
            Some(("2026-11-23T12:50:24Z", 19)),
        );
        // Only the first `[`, and only near the start.
        check("a [b] [23/Nov/2026:12:50:24 +0000]", None);
        check(
            &format!("{} [23/Nov/2026:12:50:24 +0000]", "x".repeat(100)),
            None,
        );
        check("h - - [23/Nov/2026:12:50:24 +0000 \"GET /\"", None);
    }

    #[test]
    fn syslog() {
        check(
            "Nov 23 12:50:24 host app[123]: started",
            Some(("2026-11-23T12:50:24Z", 15)),
        );
        check("Nov  3 01:02:03 host x", Some(("2026-11-03T01:02:03Z", 15)));
        check("Nov 03 01:02:03 host x", Some(("2026-11-03T01:02:03Z", 15)));
        check(
            "<34>Nov 23 12:50:24 host su: x",
            Some(("2026-11-23T12:50:24Z", 19)),
        );
        check(
            "<34>1 2026-11-23T12:50:24.003Z host app - - - x",
            Some(("2026-11-23T12:50:24.003Z", 30)),
        );
        check(
            "<165>1 2026-11-23T12:50:24.003-08:00 h a",
            Some(("2026-11-23T20:50:24.003Z", 36)),
        );
        check("<34>1 - host app - - - no time", None);
        check("Foo 23 12:50:24 host", None);
        check("Nov 23 12:50 host", None);
        check("November 23 12:50:24 host", None);
    }

    #[test]
    fn syslog_year_is_the_latest_not_in_the_future() {
        let new_year = nanos("2027-01-01T00:10:00Z");
        check_at(
            new_year,
            "Dec 31 23:59:59 h",
            Some(("2026-12-31T23:59:59Z", 15)),
        );
        check_at(
            new_year,
            "Jan  1 00:00:00 h",
            Some(("2027-01-01T00:00:00Z", 15)),
        );
        // Up to a day ahead of `now` is this year; further is last year.
        check("Nov 24 23:00:00 h", Some(("2026-11-24T23:00:00Z", 15)));
        check("Nov 25 01:00:00 h", Some(("2025-11-25T01:00:00Z", 15)));
        // Feb 29 is in the latest leap year before `now`, or no time.
        check_at(
            nanos("2029-01-05T00:00:00Z"),
            "Feb 29 10:00:00 h",
            Some(("2028-02-29T10:00:00Z", 15)),
        );
        check_at(nanos("2027-03-01T00:00:00Z"), "Feb 29 10:00:00 h", None);
    }

    #[test]
    fn epoch() {
        check("1700000000 msg", Some(("2023-11-14T22:13:20Z", 10)));
        assert_eq!(
            leading_timestamp("1700000000", 0),
            Some((1_700_000_000 * NANOS_PER_SECOND, 10))
        );
        check("1700000000.123 msg", Some(("2023-11-14T22:13:20.123Z", 14)));
        check("1700000000123 msg", Some(("2023-11-14T22:13:20.123Z", 13)));
        check(
            "1700000000123.456789 msg",
            Some(("2023-11-14T22:13:20.123456789Z", 20)),
        );
        check("1700000000\tmsg", Some(("2023-11-14T22:13:20Z", 10)));
        check("[1700000000] msg", Some(("2023-11-14T22:13:20Z", 11)));
        check("1700000000] msg", None);
        check("1700000000, msg", None);
        check("1700000000. msg", None);
        check("17000000001 msg", None);
        check("170000000 msg", None);
        check("9999999999 msg", None); // the year 2286, past the i64 nanoseconds range
    }

    #[test]
    fn impossible_dates_and_times() {
        check("2028-02-29T00:00:00Z", Some(("2028-02-29T00:00:00Z", 20)));
        check("2000-02-29 00:00:00 x", Some(("2000-02-29T00:00:00Z", 19)));
        check("2026-02-29T00:00:00Z", None);
        check("2100-02-29T00:00:00Z", None);
        check("2026-02-30T00:00:00Z", None);
        check("2026-13-01T00:00:00Z", None);
        check("2026-11-23T25:00:00Z", None);
        check("2026-11-23T12:60:00Z", None);
        check("2026-11-23T12:50:60Z", None);
        check("2026-11-23T12:50:24+25:00", None);
        check("2026-11-23T12:50:24:99 x", None);
        check("2026-11-23T12:50:24Zulu", None);
        check("[23/Foo/2026:12:50:24 +0000]", None);
        check("[30/Feb/2026:12:50:24 +0000]", None);
        check("1600-01-01T00:00:00Z", None); // before 1677: no i64 nanoseconds
    }

    #[test]
    fn no_leading_time() {
        for line in [
            "",
            "[",
            "<",
            "<34>",
            "<34>1 ",
            "404 not found",
            "12345 items",
            "2026 was a year",
            "20261123 x",
            "2026-11-23 x",
            "2026-11-23T12:50",
            "2026-11-2",
            "Nov",
            "Nov 2",
            "error at 2026-11-23T12:50:24Z",
            "ERROR 1700000000",
            "-1700000000 x",
            "{\"_time\": 1}",
        ] {
            check(line, None);
        }
    }

    #[test]
    fn non_ascii_lines() {
        check("2026-11-23T12:50:24Zé", Some(("2026-11-23T12:50:24Z", 20)));
        check("Nov 23 12:50:24 hôte", Some(("2026-11-23T12:50:24Z", 15)));
        check(
            "日本 [23/Nov/2026:12:50:24 +0000]",
            Some(("2026-11-23T12:50:24Z", 34)),
        );
        check("é2026-11-23T12:50:24Z", None);
        check("2026-11-23T12:50:2é", None);
        check("Nö", None);
        // The access log window ends inside a two-byte char.
        check(
            &format!("x{} [23/Nov/2026:12:50:24 +0000]", "é".repeat(60)),
            None,
        );
        check(&format!("{}[", "é".repeat(50)), None);
    }

    #[test]
    fn text_line_event_parses_back() {
        let lines = [
            "2026-11-23T12:50:24.123456789+01:00 quotes \" backslash \\ tab \t é 日本",
            "Nov 23 12:50:24 host app[123]: started",
            "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200 2326",
            "1700000000.5 tick",
            "no time here",
            "{\"_time\": \"2026-11-23T12:50:24Z\"}",
            "",
        ];
        for line in lines {
            let json = text_line_event(line, now());
            let event = parse_event(json.as_bytes(), now()).unwrap();
            let expected_time = leading_timestamp(line, now()).map_or(now(), |(time, _)| time);
            assert_eq!(event.time, expected_time, "{json}");
            assert_eq!(
                event.fields,
                [("message".to_owned(), Value::Str(line.to_owned()))]
            );
        }
    }

    #[test]
    fn text_line_event_text() {
        assert_eq!(
            text_line_event("2026-11-23T12:50:24.123456789+01:00 a \"b\"", now()),
            r#"{"_time":"2026-11-23T11:50:24.123456789Z","message":"2026-11-23T12:50:24.123456789+01:00 a \"b\""}"#
        );
        assert_eq!(text_line_event("plain", now()), r#"{"message":"plain"}"#);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any text, and text made of the bytes timestamps are made of: no panic, and the end
        /// is a char boundary within the line.
        #[test]
        fn never_panics(
            line in prop_oneof![any::<String>(), "[0-9<>\\[\\]/:.,+TZ -]{0,40}", "[0-9NovFeb:/ é\\[]{0,40}"],
            now in any::<i64>(),
        ) {
            if let Some((_, end)) = leading_timestamp(&line, now) {
                prop_assert!(end <= line.len() && line.is_char_boundary(end));
            }
            let _ = text_line_event(&line, now);
        }
    }
}
