//! Query values on date and ip fields, read in the field's type: a date field is indexed as
//! epoch milliseconds (nanoseconds for `date_nanos`), an IPv4 address as its u32 number, an
//! IPv6 one as its canonical text (quarry-index's `segment.rs`, `add_mapped`), so a value, a
//! range or a CIDR block becomes a range of those numbers or an exact term.
//!
//! A date is read as Elasticsearch reads one in a query: date math from `now` or from a date
//! followed by `||` (time.rs), else the request's `format` or the field's; a time written
//! without a zone is in the request's `time_zone` (UTC by default), an epoch number never is.
//! A bound rounds down or up (`Rounding`): `lte: 2026-01-01` takes all of that day, as does a
//! term on a date.

use crate::error::{QueryError, Result};
use crate::range::{Number, NumericRange};
use crate::time::{date_math, parse_time_in, Rounding, Zone};
use quarry_store::date::{DateFormats, DateValue};
use quarry_store::mapping::FieldMapping;
use std::net::IpAddr;
use std::ops::Bound;

/// How a query reads dates on one field.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DateReader {
    formats: DateFormats,
    zone: Option<Zone>,
    now: i64,
    /// Nanoseconds per indexed unit.
    unit: i128,
}

impl DateReader {
    /// `format` is the request's (`a||b`), which takes the place of the field's.
    pub(crate) fn new(
        field: &str,
        rules: &FieldMapping,
        format: Option<&str>,
        zone: Option<Zone>,
        now: i64,
    ) -> Result<DateReader> {
        let formats = match format {
            Some(format) => DateFormats::parse(format)
                .map_err(|e| QueryError::Invalid(format!("field {field:?}: {e}")))?,
            None => rules.format,
        };
        let unit = rules
            .ty
            .date_unit_nanos()
            .ok_or_else(|| QueryError::Invalid(format!("field {field:?} is not a date field")))?;
        Ok(DateReader {
            formats,
            zone,
            now,
            unit,
        })
    }

    /// `text` as the field's indexed number, rounded `rounding`'s way.
    pub(crate) fn read(&self, field: &str, text: &str, rounding: Rounding) -> Result<i64> {
        let zone = self.zone.unwrap_or_default();
        let bad = |reason: String| {
            QueryError::Invalid(format!(
                "field {field:?}: failed to parse date {text:?} with format [{}]: {reason}",
                self.formats.name()
            ))
        };
        let text = text.trim();
        let nanos: i128 = if text.starts_with("now") {
            i128::from(parse_time_in(text, self.now, zone, rounding).map_err(bad)?)
        } else if let Some((anchor, math)) = text.split_once("||") {
            let anchor = self
                .instant(anchor, zone, Rounding::Down)
                .ok_or_else(|| bad("not a date".into()))?;
            let anchor = i64::try_from(anchor)
                .map_err(|_| bad("date math works between the years 1677 and 2262".into()))?;
            i128::from(date_math(anchor, math, zone, rounding).map_err(bad)?)
        } else {
            self.instant(text, zone, rounding)
                .ok_or_else(|| bad("not a date in the format".into()))?
        };
        i64::try_from(nanos.div_euclid(self.unit)).map_err(|_| bad("out of range".into()))
    }

    /// The instant `text` names in the formats, its first or (`Up`) last nanosecond.
    fn instant(&self, text: &str, zone: Zone, rounding: Rounding) -> Option<i128> {
        let value = self.formats.read(text)?;
        let start = in_zone(&value, zone)?;
        Some(match rounding {
            Rounding::Down => start,
            Rounding::Up => start + value.span_nanos,
        })
    }

    /// A number bound (`Ast::Range` from numbers): epoch milliseconds, or seconds when the
    /// formats read numbers so.
    pub(crate) fn number(&self, field: &str, number: Number, rounding: Rounding) -> Result<i64> {
        let per_number: i128 = if self.formats.numbers_are_seconds() {
            1_000_000_000
        } else {
            1_000_000
        };
        let nanos = match number {
            Number::Int(n) => i128::from(n) * per_number,
            Number::Big(n) => i128::from(n) * per_number,
            Number::Float(f) => {
                let scaled = f * per_number as f64;
                let whole = match rounding {
                    Rounding::Down => scaled.floor(),
                    Rounding::Up => scaled.ceil(),
                };
                whole as i128
            }
        };
        i64::try_from(nanos.div_euclid(self.unit)).map_err(|_| {
            QueryError::Invalid(format!("field {field:?}: date {number} out of range"))
        })
    }

    /// The range `lower`..`upper` of dates as written.
    pub(crate) fn range(
        &self,
        field: &str,
        lower: &Bound<String>,
        upper: &Bound<String>,
    ) -> Result<NumericRange> {
        let bound = |bound: &Bound<String>, upper: bool| -> Result<Bound<Number>> {
            // `gte`/`lt` round down, `gt`/`lte` up (time.rs, `Rounding`).
            Ok(match bound {
                Bound::Unbounded => Bound::Unbounded,
                Bound::Included(text) => {
                    let rounding = if upper { Rounding::Up } else { Rounding::Down };
                    Bound::Included(Number::Int(self.read(field, text, rounding)?))
                }
                Bound::Excluded(text) => {
                    let rounding = if upper { Rounding::Down } else { Rounding::Up };
                    Bound::Excluded(Number::Int(self.read(field, text, rounding)?))
                }
            })
        };
        Ok(NumericRange {
            lower: bound(lower, false)?,
            upper: bound(upper, true)?,
        })
    }

    /// Every instant `text` names (a date: its whole day), as a term on a date field matches.
    pub(crate) fn point(&self, field: &str, text: &str) -> Result<NumericRange> {
        Ok(NumericRange {
            lower: Bound::Included(Number::Int(self.read(field, text, Rounding::Down)?)),
            upper: Bound::Included(Number::Int(self.read(field, text, Rounding::Up)?)),
        })
    }
}

/// The instant of a value read without a zone of its own, in `zone`.
fn in_zone(value: &DateValue, zone: Zone) -> Option<i128> {
    if value.offset_seconds.is_some() || zone == Zone::Utc {
        return Some(value.utc_nanos());
    }
    let seconds = i64::try_from(value.local_nanos.div_euclid(1_000_000_000)).ok()?;
    let nanos = value.local_nanos.rem_euclid(1_000_000_000) as u32;
    let local = chrono::DateTime::from_timestamp(seconds, nanos)?.naive_utc();
    let start_of_second = zone.instant_of(local.with_nanosecond_zero())?;
    Some(i128::from(start_of_second) + i128::from(nanos))
}

trait ZeroNanosecond {
    fn with_nanosecond_zero(self) -> Self;
}

impl ZeroNanosecond for chrono::NaiveDateTime {
    fn with_nanosecond_zero(self) -> Self {
        use chrono::Timelike;
        self.with_nanosecond(0).unwrap_or(self)
    }
}

/// What an ip query value stands for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum IpMatch {
    /// IPv4 addresses as their numbers.
    V4(NumericRange),
    /// One IPv6 address, its canonical text (an exact term).
    V6(String),
}

/// An address or a CIDR block (`192.168.0.0/16`) on an ip field.
pub(crate) fn ip_value(field: &str, text: &str) -> Result<IpMatch> {
    let text = text.trim();
    let not_ip = || {
        QueryError::Invalid(format!(
            "field {field:?}: {text:?} is not an IP string literal"
        ))
    };
    let Some((address, prefix)) = text.split_once('/') else {
        return match quarry_index::schema::ip_address(text).ok_or_else(not_ip)? {
            IpAddr::V4(v4) => {
                let n = Number::Int(i64::from(u32::from(v4)));
                Ok(IpMatch::V4(NumericRange {
                    lower: Bound::Included(n),
                    upper: Bound::Included(n),
                }))
            }
            IpAddr::V6(v6) => Ok(IpMatch::V6(v6.to_string())),
        };
    };
    let prefix: u32 = prefix.parse().map_err(|_| not_ip())?;
    let (v4, prefix) = match address.parse::<IpAddr>().map_err(|_| not_ip())? {
        IpAddr::V4(v4) if prefix <= 32 => (v4, prefix),
        IpAddr::V6(v6) if (96..=128).contains(&prefix) && v6.to_ipv4_mapped().is_some() => {
            (v6.to_ipv4_mapped().ok_or_else(not_ip)?, prefix - 96)
        }
        IpAddr::V6(_) if prefix <= 128 => {
            return Err(QueryError::Invalid(format!(
                "field {field:?}: IPv6 CIDR blocks ({text:?}) are not supported: IPv6 addresses \
                 are indexed as exact terms"
            )))
        }
        _ => return Err(not_ip()),
    };
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    let first = u32::from(v4) & mask;
    let last = first | !mask;
    Ok(IpMatch::V4(NumericRange {
        lower: Bound::Included(Number::Int(i64::from(first))),
        upper: Bound::Included(Number::Int(i64::from(last))),
    }))
}

/// A range of IPv4 addresses as written; IPv6 bounds are refused (their terms are text).
pub(crate) fn ip_range(
    field: &str,
    lower: &Bound<String>,
    upper: &Bound<String>,
) -> Result<NumericRange> {
    let number = |text: &String| -> Result<Number> {
        match quarry_index::schema::ip_address(text) {
            Some(IpAddr::V4(v4)) => Ok(Number::Int(i64::from(u32::from(v4)))),
            Some(IpAddr::V6(_)) => Err(QueryError::Invalid(format!(
                "field {field:?}: ranges of IPv6 addresses are not supported: IPv6 addresses \
                 are indexed as exact terms"
            ))),
            None => Err(QueryError::Invalid(format!(
                "field {field:?}: {text:?} is not an IP string literal"
            ))),
        }
    };
    let bound = |bound: &Bound<String>| -> Result<Bound<Number>> {
        Ok(match bound {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(text) => Bound::Included(number(text)?),
            Bound::Excluded(text) => Bound::Excluded(number(text)?),
        })
    };
    Ok(NumericRange {
        lower: bound(lower)?,
        upper: bound(upper)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_store::mapping::FieldType;

    fn int_range(range: &NumericRange) -> (Bound<i64>, Bound<i64>) {
        let int = |b: &Bound<Number>| match b {
            Bound::Included(Number::Int(n)) => Bound::Included(*n),
            Bound::Excluded(Number::Int(n)) => Bound::Excluded(*n),
            Bound::Unbounded => Bound::Unbounded,
            other => panic!("{other:?}"),
        };
        (int(&range.lower), int(&range.upper))
    }

    #[test]
    fn ip_values_and_blocks() {
        use Bound::Included;
        let v4 = |text: &str| match ip_value("ip", text).unwrap() {
            IpMatch::V4(range) => int_range(&range),
            other => panic!("{other:?}"),
        };
        assert_eq!(v4("0.0.0.1"), (Included(1), Included(1)));
        assert_eq!(v4("::ffff:0.0.0.1"), (Included(1), Included(1)));
        assert_eq!(
            v4("192.168.0.0/16"),
            (Included(0xC0A8_0000), Included(0xC0A8_FFFF))
        );
        assert_eq!(
            v4("192.168.7.9/32"),
            (Included(0xC0A8_0709), Included(0xC0A8_0709))
        );
        assert_eq!(v4("10.1.2.3/0"), (Included(0), Included(u32::MAX as i64)));
        assert_eq!(
            v4("::ffff:10.0.0.0/104"),
            (Included(0x0A00_0000), Included(0x0AFF_FFFF))
        );
        assert_eq!(
            ip_value("ip", "2001:DB8::0:1").unwrap(),
            IpMatch::V6("2001:db8::1".into())
        );
        for bad in ["1.2.3", "1.2.3.4/33", "x", "2001:db8::/32", "1.2.3.4/"] {
            assert!(ip_value("ip", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn date_bounds_round_and_read_formats() {
        use Bound::{Excluded, Included};
        let rules = FieldMapping::new(FieldType::Date);
        let now = 1_483_272_000_000_000_000; // 2017-01-01T12:00:00Z
        let reader = DateReader::new("d", &rules, None, None, now).unwrap();
        let day = 86_400_000;
        let jan1 = 1_483_228_800_000;
        let range = |lower: Bound<&str>, upper: Bound<&str>| {
            let own = |b: Bound<&str>| b.map(str::to_owned);
            int_range(&reader.range("d", &own(lower), &own(upper)).unwrap())
        };
        assert_eq!(
            range(Included("2017-01-01"), Included("2017-01-01")),
            (Included(jan1), Included(jan1 + day - 1))
        );
        assert_eq!(
            range(Excluded("2017-01-01"), Excluded("2017-01-02")),
            (Excluded(jan1 + day - 1), Excluded(jan1 + day))
        );
        assert_eq!(
            range(Included("now/d"), Included("now-1d/d")),
            (Included(jan1), Included(jan1 - 1))
        );
        assert_eq!(
            range(Included("2017-01-01||+1d"), Bound::Unbounded),
            (Included(jan1 + day), Bound::Unbounded)
        );
        assert_eq!(
            range(Included("1483228800000"), Bound::Unbounded),
            (Included(jan1), Bound::Unbounded)
        );
        let paris =
            DateReader::new("d", &rules, None, Some(Zone::parse("+01:00").unwrap()), now).unwrap();
        assert_eq!(
            paris
                .read("d", "2017-01-01T01:00:00", Rounding::Down)
                .unwrap(),
            jan1
        );
        // An epoch number is an instant: no zone moves it.
        assert_eq!(
            paris.read("d", "1483228800000", Rounding::Down).unwrap(),
            jan1
        );
        let seconds = DateReader::new("d", &rules, Some("epoch_second"), None, now).unwrap();
        assert_eq!(
            seconds.read("d", "1483228800", Rounding::Down).unwrap(),
            jan1
        );
        assert_eq!(
            seconds
                .number("d", Number::Int(1_483_228_800), Rounding::Down)
                .unwrap(),
            jan1
        );
        assert!(reader.read("d", "01/01/2017", Rounding::Down).is_err());
        let nanos = FieldMapping::new(FieldType::DateNanos);
        let reader = DateReader::new("d", &nanos, None, None, now).unwrap();
        assert_eq!(
            reader
                .read("d", "2017-01-01T00:00:00.000000001Z", Rounding::Down)
                .unwrap(),
            jan1 * 1_000_000 + 1
        );
    }
}
