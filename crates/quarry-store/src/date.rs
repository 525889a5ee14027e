//! The date formats a mapped `date` field can name (`format`, Elasticsearch's names, `a||b`
//! for several tried in order) and the reading of a value in them.
//!
//! Only formats whose reading is certain are known; any other name is refused when the
//! mapping is read, so a value is never read in a format it was not written in. A value is
//! read as wall-clock components and an optional UTC offset; the caller places a value without
//! an offset in UTC (ingest) or in a request's `time_zone` (queries).
//!
//! | format | reads |
//! |---|---|
//! | `strict_date_optional_time`, `date_optional_time` (and `_nanos`) | `yyyy[-MM[-dd['T'HH[:mm[:ss[.fraction]]]]]][zone]`; the non-strict ones take 1-digit months, days and hours too |
//! | `epoch_millis`, `epoch_second` | an integer, optionally negative, with an optional fraction |
//! | `strict_date`, `date`, `yyyy-MM-dd` | `yyyy-MM-dd` |
//! | `strict_date_hour_minute_second`, `yyyy-MM-dd'T'HH:mm:ss` | `yyyy-MM-ddTHH:mm:ss` |
//! | `strict_date_time`, `date_time` | `yyyy-MM-ddTHH:mm:ss.fraction` and a zone |
//! | `yyyy-MM-dd HH:mm:ss`, `yyyy-MM-dd HH:mm:ss.SSS`, `yyyy-MM-dd HH:mm:ss.SSSSSS` | that, with a space (a fraction of 1 to 9 digits) |
//!
//! A zone is `Z`, `+HH:MM`, `+HHMM` or `+HH`. Times are counted in nanoseconds since the
//! epoch as i128, so every year from 0 to 9999 fits (a `date` field is indexed in
//! milliseconds, a `date_nanos` one in nanoseconds within i64).

use serde::{Deserialize, Serialize};

/// One named date format (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DateFormat {
    StrictDateOptionalTime,
    StrictDateOptionalTimeNanos,
    DateOptionalTime,
    EpochMillis,
    EpochSecond,
    StrictDate,
    Date,
    YearMonthDay,
    StrictDateHourMinuteSecond,
    YearMonthDayTHourMinuteSecond,
    StrictDateTime,
    DateTime,
    YearMonthDaySpaceTime,
    YearMonthDaySpaceTimeMillis,
    YearMonthDaySpaceTimeMicros,
}

impl DateFormat {
    pub const ALL: [DateFormat; 15] = [
        DateFormat::StrictDateOptionalTime,
        DateFormat::StrictDateOptionalTimeNanos,
        DateFormat::DateOptionalTime,
        DateFormat::EpochMillis,
        DateFormat::EpochSecond,
        DateFormat::StrictDate,
        DateFormat::Date,
        DateFormat::YearMonthDay,
        DateFormat::StrictDateHourMinuteSecond,
        DateFormat::YearMonthDayTHourMinuteSecond,
        DateFormat::StrictDateTime,
        DateFormat::DateTime,
        DateFormat::YearMonthDaySpaceTime,
        DateFormat::YearMonthDaySpaceTimeMillis,
        DateFormat::YearMonthDaySpaceTimeMicros,
    ];

    /// The name a mapping or a query writes.
    pub fn name(self) -> &'static str {
        match self {
            DateFormat::StrictDateOptionalTime => "strict_date_optional_time",
            DateFormat::StrictDateOptionalTimeNanos => "strict_date_optional_time_nanos",
            DateFormat::DateOptionalTime => "date_optional_time",
            DateFormat::EpochMillis => "epoch_millis",
            DateFormat::EpochSecond => "epoch_second",
            DateFormat::StrictDate => "strict_date",
            DateFormat::Date => "date",
            DateFormat::YearMonthDay => "yyyy-MM-dd",
            DateFormat::StrictDateHourMinuteSecond => "strict_date_hour_minute_second",
            DateFormat::YearMonthDayTHourMinuteSecond => "yyyy-MM-dd'T'HH:mm:ss",
            DateFormat::StrictDateTime => "strict_date_time",
            DateFormat::DateTime => "date_time",
            DateFormat::YearMonthDaySpaceTime => "yyyy-MM-dd HH:mm:ss",
            DateFormat::YearMonthDaySpaceTimeMillis => "yyyy-MM-dd HH:mm:ss.SSS",
            DateFormat::YearMonthDaySpaceTimeMicros => "yyyy-MM-dd HH:mm:ss.SSSSSS",
        }
    }

    fn from_name(name: &str) -> Option<DateFormat> {
        DateFormat::ALL.into_iter().find(|f| f.name() == name)
    }

    /// `text` read in this format.
    fn read(self, text: &str) -> Option<DateValue> {
        use DateFormat::*;
        match self {
            EpochMillis => read_epoch(text, NANOS_PER_MILLI),
            EpochSecond => read_epoch(text, NANOS_PER_SECOND),
            StrictDateOptionalTime | StrictDateOptionalTimeNanos => read_iso(text, Shape::OPTIONAL),
            DateOptionalTime => read_iso(
                text,
                Shape {
                    strict: false,
                    ..Shape::OPTIONAL
                },
            ),
            StrictDate | Date | YearMonthDay => read_iso(text, Shape::exactly(Unit::Day, false)),
            StrictDateHourMinuteSecond | YearMonthDayTHourMinuteSecond => {
                read_iso(text, Shape::exactly(Unit::Second, false))
            }
            StrictDateTime | DateTime => read_iso(
                text,
                Shape {
                    zone: true,
                    ..Shape::exactly(Unit::Fraction, false)
                },
            ),
            YearMonthDaySpaceTime => read_iso(text, Shape::exactly(Unit::Second, true)),
            YearMonthDaySpaceTimeMillis | YearMonthDaySpaceTimeMicros => {
                read_iso(text, Shape::exactly(Unit::Fraction, true))
            }
        }
    }
}

/// The most formats one `format` may list: more than anyone writes, few enough that the
/// list is a fixed array and a field's rules stay `Copy`.
pub const MAX_DATE_FORMATS: usize = 4;

/// A `format`: formats tried in order, the first that reads a value wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DateFormats {
    formats: [Option<DateFormat>; MAX_DATE_FORMATS],
}

impl Default for DateFormats {
    /// Elasticsearch's default, `strict_date_optional_time||epoch_millis`.
    fn default() -> Self {
        DateFormats {
            formats: [
                Some(DateFormat::StrictDateOptionalTime),
                Some(DateFormat::EpochMillis),
                None,
                None,
            ],
        }
    }
}

impl DateFormats {
    /// Reads `a||b||...`; an unknown name is an error naming it and the known ones.
    pub fn parse(text: &str) -> Result<DateFormats, String> {
        let mut formats = [None; MAX_DATE_FORMATS];
        let names: Vec<&str> = text.split("||").map(str::trim).collect();
        if names.len() > MAX_DATE_FORMATS {
            return Err(format!(
                "at most {MAX_DATE_FORMATS} date formats may be listed, got {}",
                names.len()
            ));
        }
        for (slot, name) in formats.iter_mut().zip(names) {
            let format = DateFormat::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = DateFormat::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unsupported date format {name:?} (supported: {})",
                    known.join(", ")
                )
            })?;
            *slot = Some(format);
        }
        Ok(DateFormats { formats })
    }

    pub fn iter(&self) -> impl Iterator<Item = DateFormat> + '_ {
        self.formats.iter().flatten().copied()
    }

    /// Whether a number without a format reads as seconds: the list has `epoch_second` and
    /// not `epoch_millis`.
    pub fn numbers_are_seconds(&self) -> bool {
        self.iter().any(|f| f == DateFormat::EpochSecond)
            && !self.iter().any(|f| f == DateFormat::EpochMillis)
    }

    /// The `a||b` text a mapping shows.
    pub fn name(&self) -> String {
        self.iter()
            .map(DateFormat::name)
            .collect::<Vec<_>>()
            .join("||")
    }

    /// `text` read by the first format that reads it.
    pub fn read(&self, text: &str) -> Option<DateValue> {
        self.iter().find_map(|format| format.read(text))
    }

    /// `text` as nanoseconds since the epoch, a time without a zone in UTC (a stored value).
    pub fn read_utc(&self, text: &str) -> Option<i128> {
        self.read(text).map(|value| value.utc_nanos())
    }
}

/// A value read in a date format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateValue {
    /// The wall-clock time written, in nanoseconds as if it were UTC (for an epoch number,
    /// the instant itself).
    pub local_nanos: i128,
    /// The UTC offset written (seconds); `None`: none was (an epoch number is UTC).
    pub offset_seconds: Option<i32>,
    /// Nanoseconds from the instant written to the last instant it names: a date names its
    /// whole day, so an inclusive upper bound `lte: 2026-01-01` is the day's last nanosecond.
    pub span_nanos: i128,
}

impl DateValue {
    /// The instant, a time without an offset taken as UTC.
    pub fn utc_nanos(&self) -> i128 {
        self.local_nanos - i128::from(self.offset_seconds.unwrap_or(0)) * NANOS_PER_SECOND
    }
}

const NANOS_PER_MILLI: i128 = 1_000_000;
const NANOS_PER_SECOND: i128 = 1_000_000_000;

fn read_epoch(text: &str, unit_nanos: i128) -> Option<DateValue> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    // At most 18 digits: every year up to 9999 in milliseconds, and no overflow below.
    if whole.is_empty() || whole.len() > 18 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut nanos = whole.parse::<i128>().ok()? * unit_nanos;
    // The fraction's digits down to a nanosecond; finer ones are dropped.
    let mut scale = unit_nanos;
    for digit in fraction.bytes() {
        scale /= 10;
        nanos += i128::from(digit - b'0') * scale;
    }
    let nanos = if negative { -nanos } else { nanos };
    Some(DateValue {
        local_nanos: nanos,
        offset_seconds: Some(0),
        span_nanos: 0,
    })
}

/// The smallest component an ISO-like format ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unit {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Fraction,
}

/// What an ISO-like format takes: `min` to `max` components, `T` or a space between the date
/// and the time, a zone or not, fixed digit counts or not.
#[derive(Debug, Clone, Copy)]
struct Shape {
    min: Unit,
    max: Unit,
    space: bool,
    zone: bool,
    strict: bool,
}

impl Shape {
    const OPTIONAL: Shape = Shape {
        min: Unit::Year,
        max: Unit::Fraction,
        space: false,
        zone: true,
        strict: true,
    };

    fn exactly(unit: Unit, space: bool) -> Shape {
        Shape {
            min: unit,
            max: unit,
            space,
            zone: false,
            strict: true,
        }
    }
}

fn read_iso(text: &str, shape: Shape) -> Option<DateValue> {
    let bytes = text.as_bytes();
    let mut at = 0;
    // `count` digits (a range when not strict) as a number.
    let digits = |at: &mut usize, min: usize, max: usize| -> Option<i64> {
        let start = *at;
        while *at < bytes.len() && *at - start < max && bytes[*at].is_ascii_digit() {
            *at += 1;
        }
        if *at - start < min {
            return None;
        }
        text[start..*at].parse().ok()
    };
    let two = if shape.strict { 2 } else { 1 };
    let year = digits(&mut at, 4, 4)?;
    let mut components = [year, 1, 1, 0, 0, 0];
    let mut fraction_nanos: i128 = 0;
    let mut last = Unit::Year;
    let separators = [
        b'-',
        b'-',
        if shape.space { b' ' } else { b'T' },
        b':',
        b':',
    ];
    let units = [
        Unit::Month,
        Unit::Day,
        Unit::Hour,
        Unit::Minute,
        Unit::Second,
    ];
    for (index, (separator, unit)) in separators.into_iter().zip(units).enumerate() {
        if unit > shape.max || bytes.get(at) != Some(&separator) {
            break;
        }
        at += 1;
        components[index + 1] = digits(&mut at, two, 2)?;
        last = unit;
    }
    if last == Unit::Second
        && shape.max == Unit::Fraction
        && matches!(bytes.get(at), Some(b'.' | b','))
    {
        at += 1;
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        if at == start || at - start > 9 {
            return None;
        }
        let mut scale = NANOS_PER_SECOND;
        for &digit in &bytes[start..at] {
            scale /= 10;
            fraction_nanos += i128::from(digit - b'0') * scale;
        }
        last = Unit::Fraction;
    }
    if last < shape.min {
        return None;
    }
    let offset_seconds = if shape.zone && last >= Unit::Hour {
        read_zone(&text[at..])?
    } else if at == bytes.len() {
        None
    } else {
        return None;
    };
    let [year, month, day, hour, minute, second] = components;
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let days = i128::from(days_from_civil(year, month, day));
    let seconds = days * 86_400 + i128::from(hour * 3600 + minute * 60 + second);
    let local_nanos = seconds * NANOS_PER_SECOND + fraction_nanos;
    let span_nanos = match last {
        Unit::Year => {
            i128::from(days_from_civil(year + 1, 1, 1) - days_from_civil(year, 1, 1))
                * 86_400
                * NANOS_PER_SECOND
        }
        Unit::Month => i128::from(days_in_month(year, month)) * 86_400 * NANOS_PER_SECOND,
        Unit::Day => 86_400 * NANOS_PER_SECOND,
        Unit::Hour => 3_600 * NANOS_PER_SECOND,
        Unit::Minute => 60 * NANOS_PER_SECOND,
        Unit::Second => NANOS_PER_SECOND,
        // A fraction names its last written digit's span; a millisecond is what a `date`
        // field keeps, so that is the span here.
        Unit::Fraction => NANOS_PER_MILLI,
    } - 1;
    Some(DateValue {
        local_nanos,
        offset_seconds,
        span_nanos,
    })
}

/// A zone after a time: none, `Z`, `+HH:MM`, `+HHMM` or `+HH`; `None` if malformed.
fn read_zone(text: &str) -> Option<Option<i32>> {
    if text.is_empty() {
        return Some(None);
    }
    if text == "Z" || text == "z" {
        return Some(Some(0));
    }
    let sign = match text.as_bytes()[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let rest = text[1..].replace(':', "");
    if !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (hours, minutes) = match rest.len() {
        2 => (&rest[..2], "0"),
        4 => rest.split_at(2),
        _ => return None,
    };
    let (hours, minutes): (i32, i32) = (hours.parse().ok()?, minutes.parse().ok()?);
    if hours > 18 || minutes > 59 {
        return None;
    }
    Some(Some(sign * (hours * 3600 + minutes * 60)))
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date: whole 400-year eras (146,097 days
/// each) counted from March 1st, so that the leap day ends a year.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(formats: &str, text: &str) -> Option<i128> {
        DateFormats::parse(formats)
            .unwrap()
            .read_utc(text)
            .map(|n| n.div_euclid(NANOS_PER_MILLI))
    }

    #[test]
    fn reads_each_format() {
        let default = "strict_date_optional_time||epoch_millis";
        let cases: &[(&str, &str, Option<i128>)] = &[
            (default, "2017-01-01", Some(1_483_228_800_000)),
            (default, "2017", Some(1_483_228_800_000)),
            (default, "2017-01", Some(1_483_228_800_000)),
            (default, "2017-01-01T00:00:01Z", Some(1_483_228_801_000)),
            (
                default,
                "2017-01-01T01:00:00+01:00",
                Some(1_483_228_800_000),
            ),
            (default, "2017-01-01T00:00:00.5", Some(1_483_228_800_500)),
            (default, "2017-01-01T00:00", Some(1_483_228_800_000)),
            (default, "1483228800000", Some(1_483_228_800_000)),
            (default, "-1000", Some(-1000)),
            (default, "1970-01-01T00:00:00.000-00:00", Some(0)),
            (default, "2017-1-1", None),
            (default, "2017-02-29", None),
            (default, "2016-02-29", Some(1_456_704_000_000)),
            (default, "2017-01-01 00:00:00", None),
            (default, "bad", None),
            (default, "", None),
            ("date_optional_time", "2017-1-1", Some(1_483_228_800_000)),
            ("epoch_second", "1483228800", Some(1_483_228_800_000)),
            ("epoch_second", "1483228800.25", Some(1_483_228_800_250)),
            ("epoch_second", "2017-01-01", None),
            ("yyyy-MM-dd", "2017-01-01", Some(1_483_228_800_000)),
            ("yyyy-MM-dd", "2017-01-01T00:00:00", None),
            ("strict_date", "0001-01-01", Some(-62_135_596_800_000)),
            (
                "yyyy-MM-dd HH:mm:ss",
                "2017-01-01 00:00:02",
                Some(1_483_228_802_000),
            ),
            ("yyyy-MM-dd HH:mm:ss", "2017-01-01", None),
            (
                "yyyy-MM-dd HH:mm:ss.SSS",
                "2017-01-01 00:00:02.003",
                Some(1_483_228_802_003),
            ),
            (
                "strict_date_time",
                "2017-01-01T00:00:02.003Z",
                Some(1_483_228_802_003),
            ),
            (
                "yyyy-MM-dd||epoch_second",
                "1483228800",
                Some(1_483_228_800_000),
            ),
        ];
        for &(formats, text, want) in cases {
            assert_eq!(millis(formats, text), want, "{formats} {text}");
        }
    }

    #[test]
    fn days_match_a_day_by_day_count() {
        // Brute force: walk the calendar one day at a time from 1970 both ways.
        let mut date = (1970, 1, 1);
        for days in 0..800_000 {
            assert_eq!(days_from_civil(date.0, date.1, date.2), days, "{date:?}");
            date = if date.2 < days_in_month(date.0, date.1) {
                (date.0, date.1, date.2 + 1)
            } else if date.1 < 12 {
                (date.0, date.1 + 1, 1)
            } else {
                (date.0 + 1, 1, 1)
            };
        }
        let mut date = (1970, 1, 1);
        for days in (-800_000..=0).rev() {
            assert_eq!(days_from_civil(date.0, date.1, date.2), days, "{date:?}");
            date = if date.2 > 1 {
                (date.0, date.1, date.2 - 1)
            } else if date.1 > 1 {
                (date.0, date.1 - 1, days_in_month(date.0, date.1 - 1))
            } else {
                (date.0 - 1, 12, 31)
            };
        }
    }

    #[test]
    fn spans_cover_what_a_value_names() {
        let formats = DateFormats::default();
        let day = formats.read("2017-01-01").unwrap();
        assert_eq!(day.span_nanos, 86_400 * NANOS_PER_SECOND - 1);
        let month = formats.read("2017-02").unwrap();
        assert_eq!(month.span_nanos, 28 * 86_400 * NANOS_PER_SECOND - 1);
        assert_eq!(formats.read("1000000").unwrap().span_nanos, 0);
        // Four digits are a year first, as in Elasticsearch's default format.
        assert_eq!(
            formats.read_utc("1000"),
            DateFormats::default().read_utc("1000-01-01")
        );
    }

    #[test]
    fn unknown_formats_are_refused_by_name() {
        let e = DateFormats::parse("yyyy/MM/dd").unwrap_err();
        assert!(e.contains("\"yyyy/MM/dd\""), "{e}");
        assert!(DateFormats::parse("a||b||c||d||e").is_err());
        assert_eq!(
            DateFormats::parse("epoch_second").unwrap().name(),
            "epoch_second"
        );
    }
}
