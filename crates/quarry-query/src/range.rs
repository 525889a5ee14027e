//! Numeric ranges (`latency:[100 TO 500]`, `status:>=500`) and their normal forms for each way
//! of answering them: inclusive i64 bounds, order-preserving term keys (see `TermKind::I64`
//! and `TermKind::F64` in the format), and per-value tests for column scans.

use quarry_format::{f64_term, i64_term};
use std::ops::Bound;

/// A bound as written: an integer stays exact, anything else is a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Int(i64),
    /// An integer past i64::MAX (an `unsigned_long` bound), kept exact: as a float,
    /// 10223372036854775801 and its neighbours are one value.
    Big(u64),
    Float(f64),
}

impl Number {
    /// An integer or a finite float; `None` for anything else (NaN and infinities included).
    pub fn parse(text: &str) -> Option<Number> {
        if let Ok(v) = text.parse::<i64>() {
            return Some(Number::Int(v));
        }
        if let Ok(v) = text.parse::<u64>() {
            return Some(Number::Big(v));
        }
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Number::Float)
    }

    fn as_f64(self) -> f64 {
        match self {
            Number::Int(v) => v as f64,
            Number::Big(v) => v as f64,
            Number::Float(v) => v,
        }
    }
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Number::Int(v) => write!(f, "{v}"),
            Number::Big(v) => write!(f, "{v}"),
            Number::Float(v) => write!(f, "{v:?}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NumericRange {
    pub lower: Bound<Number>,
    pub upper: Bound<Number>,
}

impl NumericRange {
    /// The inclusive integer bounds `[lo, hi]` holding exactly the integers in the range, or
    /// `None` when no integer is in it.
    pub fn i64_bounds(&self) -> Option<(i64, i64)> {
        let lo: i128 = match self.lower {
            Bound::Unbounded => i128::from(i64::MIN),
            Bound::Included(Number::Int(a)) => i128::from(a),
            Bound::Excluded(Number::Int(a)) => i128::from(a) + 1,
            Bound::Included(Number::Big(a)) => i128::from(a),
            Bound::Excluded(Number::Big(a)) => i128::from(a) + 1,
            Bound::Included(Number::Float(x)) => float_to_i128(x.ceil()),
            Bound::Excluded(Number::Float(x)) => float_to_i128(x.floor()).saturating_add(1),
        };
        let hi: i128 = match self.upper {
            Bound::Unbounded => i128::from(i64::MAX),
            Bound::Included(Number::Int(b)) => i128::from(b),
            Bound::Excluded(Number::Int(b)) => i128::from(b) - 1,
            Bound::Included(Number::Big(b)) => i128::from(b),
            Bound::Excluded(Number::Big(b)) => i128::from(b) - 1,
            Bound::Included(Number::Float(y)) => float_to_i128(y.floor()),
            Bound::Excluded(Number::Float(y)) => float_to_i128(y.ceil()).saturating_sub(1),
        };
        let lo = lo.max(i128::from(i64::MIN));
        let hi = hi.min(i128::from(i64::MAX));
        // Both fit in i64 after clamping.
        (lo <= hi).then_some((lo as i64, hi as i64))
    }

    /// Inclusive key bounds over `i64_term` keys (as big-endian u64), or `None` if empty.
    pub fn i64_key_bounds(&self) -> Option<([u8; 8], [u8; 8])> {
        let (lo, hi) = self.i64_bounds()?;
        Some((i64_term(lo), i64_term(hi)))
    }

    /// Inclusive key bounds over `f64_term` keys, or `None` if empty.
    pub fn f64_key_bounds(&self) -> Option<([u8; 8], [u8; 8])> {
        let key = |v: f64| u64::from_be_bytes(f64_term(v));
        let lo = match self.lower {
            Bound::Unbounded => 0,
            Bound::Included(n) => key(n.as_f64()),
            Bound::Excluded(n) => key(n.as_f64()).checked_add(1)?,
        };
        let hi = match self.upper {
            Bound::Unbounded => u64::MAX,
            Bound::Included(n) => key(n.as_f64()),
            Bound::Excluded(n) => key(n.as_f64()).checked_sub(1)?,
        };
        (lo <= hi).then(|| (lo.to_be_bytes(), hi.to_be_bytes()))
    }

    pub fn contains_i64(&self, value: i64) -> bool {
        self.i64_bounds()
            .is_some_and(|(lo, hi)| lo <= value && value <= hi)
    }

    pub fn contains_u64(&self, value: u64) -> bool {
        match i64::try_from(value) {
            Ok(v) => self.contains_i64(v),
            Err(_) => self.contains_wide(i128::from(value)),
        }
    }

    /// An integer beyond i64 (a large u64), compared exactly with the bounds: a float bound
    /// is not rounded to the integer's nearest f64 (2^63 + 1 is above a bound of 2^63).
    fn contains_wide(&self, value: i128) -> bool {
        use std::cmp::Ordering::{Greater, Less};
        let above = match self.lower {
            Bound::Unbounded => true,
            Bound::Included(Number::Int(a)) => value >= i128::from(a),
            Bound::Excluded(Number::Int(a)) => value > i128::from(a),
            Bound::Included(Number::Big(a)) => value >= i128::from(a),
            Bound::Excluded(Number::Big(a)) => value > i128::from(a),
            Bound::Included(Number::Float(x)) => int_cmp_float(value, x) != Less,
            Bound::Excluded(Number::Float(x)) => int_cmp_float(value, x) == Greater,
        };
        let below = match self.upper {
            Bound::Unbounded => true,
            Bound::Included(Number::Int(b)) => value <= i128::from(b),
            Bound::Excluded(Number::Int(b)) => value < i128::from(b),
            Bound::Included(Number::Big(b)) => value <= i128::from(b),
            Bound::Excluded(Number::Big(b)) => value < i128::from(b),
            Bound::Included(Number::Float(y)) => int_cmp_float(value, y) != Greater,
            Bound::Excluded(Number::Float(y)) => int_cmp_float(value, y) == Less,
        };
        above && below
    }

    pub fn contains_f64(&self, value: f64) -> bool {
        if value.is_nan() {
            return false;
        }
        use std::cmp::Ordering::{Greater, Less};
        // A big integer bound is compared exactly, not rounded to its nearest f64.
        let above = match self.lower {
            Bound::Unbounded => true,
            Bound::Included(Number::Big(a)) => int_cmp_float(i128::from(a), value) != Greater,
            Bound::Excluded(Number::Big(a)) => int_cmp_float(i128::from(a), value) == Less,
            Bound::Included(n) => value >= n.as_f64(),
            Bound::Excluded(n) => value > n.as_f64(),
        };
        let below = match self.upper {
            Bound::Unbounded => true,
            Bound::Included(Number::Big(b)) => int_cmp_float(i128::from(b), value) != Less,
            Bound::Excluded(Number::Big(b)) => int_cmp_float(i128::from(b), value) == Greater,
            Bound::Included(n) => value <= n.as_f64(),
            Bound::Excluded(n) => value < n.as_f64(),
        };
        above && below
    }

    /// `[start, end)` in nanoseconds when the bounds are times (integers), for `_time`.
    pub fn half_open_i64(&self) -> Option<(i64, i64)> {
        let (lo, hi) = self.i64_bounds()?;
        Some((lo, hi.saturating_add(1)))
    }
}

fn float_to_i128(v: f64) -> i128 {
    // `as` saturates, and the bounds are clamped to i64 afterwards.
    v as i128
}

impl std::fmt::Display for NumericRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.lower {
            Bound::Included(n) => write!(f, "[{n}")?,
            Bound::Excluded(n) => write!(f, "{{{n}")?,
            Bound::Unbounded => write!(f, "[*")?,
        }
        match self.upper {
            Bound::Included(n) => write!(f, " TO {n}]"),
            Bound::Excluded(n) => write!(f, " TO {n}}}"),
            Bound::Unbounded => write!(f, " TO *]"),
        }
    }
}

/// An integer against a finite float, exactly (|value| < 2^100 here).
fn int_cmp_float(value: i128, x: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if x >= 1e30 {
        return Ordering::Less;
    }
    if x <= -1e30 {
        return Ordering::Greater;
    }
    let floor = x.floor();
    // Exact: an integer-valued f64 below 1e30 in magnitude converts without loss.
    match value.cmp(&(floor as i128)) {
        Ordering::Equal if x > floor => Ordering::Less,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn number() -> impl Strategy<Value = Number> {
        prop_oneof![
            (-50i64..50).prop_map(Number::Int),
            (-50.0f64..50.0).prop_map(|v| Number::Float((v * 4.0).round() / 4.0)),
            Just(Number::Int(i64::MAX)),
            Just(Number::Int(i64::MIN)),
            Just(Number::Big(u64::MAX)),
        ]
    }

    fn bound() -> impl Strategy<Value = Bound<Number>> {
        prop_oneof![
            number().prop_map(Bound::Included),
            number().prop_map(Bound::Excluded),
            Just(Bound::Unbounded),
        ]
    }

    proptest! {
        /// Every normal form agrees with the plain float comparison on small values.
        #[test]
        fn normal_forms_agree(lower in bound(), upper in bound(), value in -60i64..60) {
            let range = NumericRange { lower, upper };
            let expected = range.contains_f64(value as f64);
            prop_assert_eq!(range.contains_i64(value), expected);
            let key = i64_term(value);
            let by_key = range.i64_key_bounds().is_some_and(|(lo, hi)| lo <= key && key <= hi);
            prop_assert_eq!(by_key, expected);
            let key = f64_term(value as f64);
            let by_key = range.f64_key_bounds().is_some_and(|(lo, hi)| lo <= key && key <= hi);
            prop_assert_eq!(by_key, expected);
            let half = value as f64 + 0.5;
            let key = f64_term(half);
            let by_key = range.f64_key_bounds().is_some_and(|(lo, hi)| lo <= key && key <= hi);
            prop_assert_eq!(by_key, range.contains_f64(half));
        }
    }

    fn big_bound() -> impl Strategy<Value = Bound<Number>> {
        let near = ((1u64 << 63) - 3..(1u64 << 63) + 3).prop_map(Number::Big);
        let top = (u64::MAX - 3..=u64::MAX).prop_map(Number::Big);
        let number = prop_oneof![near, top];
        prop_oneof![
            number.clone().prop_map(Bound::Included),
            number.prop_map(Bound::Excluded),
            Just(Bound::Unbounded),
        ]
    }

    fn model_contains(range: &NumericRange, value: u64) -> bool {
        let int = |n: Number| match n {
            Number::Big(v) => i128::from(v),
            other => panic!("not a big bound: {other:?}"),
        };
        let value = i128::from(value);
        (match range.lower {
            Bound::Unbounded => true,
            Bound::Included(a) => value >= int(a),
            Bound::Excluded(a) => value > int(a),
        }) && (match range.upper {
            Bound::Unbounded => true,
            Bound::Included(b) => value <= int(b),
            Bound::Excluded(b) => value < int(b),
        })
    }

    proptest! {
        /// Integers past i64::MAX (`unsigned_long` values and bounds) compare exactly: as
        /// floats, neighbours there are one value.
        #[test]
        fn big_bounds_are_exact(
            lower in big_bound(),
            upper in big_bound(),
            value in prop_oneof![(1u64 << 63) - 4..(1u64 << 63) + 4, u64::MAX - 4..=u64::MAX],
        ) {
            let range = NumericRange { lower, upper };
            prop_assert_eq!(range.contains_u64(value), model_contains(&range, value));
        }
    }

    #[test]
    fn big_integers_parse_exactly() {
        assert_eq!(
            Number::parse("10223372036854775801"),
            Some(Number::Big(10223372036854775801))
        );
        assert_eq!(
            Number::parse("18446744073709551616"),
            Some(Number::Float(18446744073709551616.0))
        );
        let range = NumericRange {
            lower: Bound::Included(Number::parse("10223372036854775801").unwrap()),
            upper: Bound::Included(Number::parse("10223372036854775802").unwrap()),
        };
        assert!(!range.contains_u64(10223372036854775800));
        assert!(range.contains_u64(10223372036854775801));
        assert!(range.contains_u64(10223372036854775802));
        assert!(!range.contains_u64(10223372036854775803));
        assert_eq!(range.i64_bounds(), None);
    }

    #[test]
    fn extremes() {
        let range = NumericRange {
            lower: Bound::Excluded(Number::Int(i64::MAX)),
            upper: Bound::Unbounded,
        };
        assert_eq!(range.i64_bounds(), None);
        let range = NumericRange {
            lower: Bound::Unbounded,
            upper: Bound::Included(Number::Float(1e300)),
        };
        assert_eq!(range.i64_bounds(), Some((i64::MIN, i64::MAX)));
        assert_eq!(range.half_open_i64(), Some((i64::MIN, i64::MAX)));
    }

    #[test]
    fn wide_integers_compare_exactly_with_float_bounds() {
        // 2^63 + 1 and 2^64 - 1 round to the f64 bounds 2^63 and 2^64; they must not equal them.
        let at_most_2_63 = NumericRange {
            lower: Bound::Unbounded,
            upper: Bound::Included(Number::parse("9223372036854775808").unwrap()),
        };
        assert!(at_most_2_63.contains_u64(1 << 63));
        assert!(!at_most_2_63.contains_u64((1 << 63) + 1));
        let below_2_64 = NumericRange {
            lower: Bound::Unbounded,
            upper: Bound::Excluded(Number::parse("18446744073709551616").unwrap()),
        };
        assert!(below_2_64.contains_u64(u64::MAX));
        let above_2_63 = NumericRange {
            lower: Bound::Excluded(Number::Float((1u64 << 63) as f64)),
            upper: Bound::Unbounded,
        };
        assert!(!above_2_63.contains_u64(1 << 63));
        assert!(above_2_63.contains_u64((1 << 63) + 1));
        assert!(NumericRange {
            lower: Bound::Included(Number::Float(9.3e18)),
            upper: Bound::Included(Number::Float(1e30)),
        }
        .contains_u64(u64::MAX));
    }
}
