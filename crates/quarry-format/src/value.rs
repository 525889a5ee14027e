//! The typed values a column holds.

use crate::error::{DecodeError, DecodeResult};

/// The type of one column. A field seen with several types keeps one column per type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ColumnType {
    Str = 1,
    I64 = 2,
    U64 = 3,
    F64 = 4,
    Bool = 5,
    /// i64 nanoseconds since the epoch; the `_time` column.
    Timestamp = 6,
    /// A JSON array, kept as its JSON text (its scalar items are indexed as tokens).
    Json = 7,
}

impl ColumnType {
    pub fn from_u8(byte: u8) -> DecodeResult<Self> {
        Ok(match byte {
            1 => ColumnType::Str,
            2 => ColumnType::I64,
            3 => ColumnType::U64,
            4 => ColumnType::F64,
            5 => ColumnType::Bool,
            6 => ColumnType::Timestamp,
            7 => ColumnType::Json,
            _ => return Err(DecodeError::new("unknown column type")),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Str => "string",
            ColumnType::I64 => "i64",
            ColumnType::U64 => "u64",
            ColumnType::F64 => "f64",
            ColumnType::Bool => "bool",
            ColumnType::Timestamp => "timestamp",
            ColumnType::Json => "json",
        }
    }

    /// Whether min/max of this type are meaningful (numbers and time).
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            ColumnType::I64 | ColumnType::U64 | ColumnType::F64 | ColumnType::Timestamp
        )
    }
}

/// One value of one field of one event.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Timestamp(i64),
    Json(String),
}

impl Value {
    pub fn column_type(&self) -> ColumnType {
        match self {
            Value::Str(_) => ColumnType::Str,
            Value::I64(_) => ColumnType::I64,
            Value::U64(_) => ColumnType::U64,
            Value::F64(_) => ColumnType::F64,
            Value::Bool(_) => ColumnType::Bool,
            Value::Timestamp(_) => ColumnType::Timestamp,
            Value::Json(_) => ColumnType::Json,
        }
    }
}

/// Min/max of a numeric column or chunk, as raw 64-bit patterns interpreted by the column type
/// (i64 and timestamp signed, u64 unsigned, f64 as IEEE bits). Strings and bools have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinMax {
    pub min: u64,
    pub max: u64,
}

impl MinMax {
    /// For f64, NaN is left out: it matches no range, and with it in, the result depended on
    /// where it sat (a leading NaN made min and max NaN). Values that are all NaN give NaN.
    pub fn of(ty: ColumnType, values: impl Iterator<Item = u64>) -> Option<MinMax> {
        let mut acc: Option<MinMax> = None;
        let mut first_nan: Option<u64> = None;
        for raw in values {
            if ty == ColumnType::F64 && f64::from_bits(raw).is_nan() {
                first_nan.get_or_insert(raw);
                continue;
            }
            acc = Some(match acc {
                None => MinMax { min: raw, max: raw },
                Some(mm) => MinMax {
                    min: if numeric_lt(ty, raw, mm.min) {
                        raw
                    } else {
                        mm.min
                    },
                    max: if numeric_lt(ty, mm.max, raw) {
                        raw
                    } else {
                        mm.max
                    },
                },
            });
        }
        acc.or(first_nan.map(|nan| MinMax { min: nan, max: nan }))
    }

    pub fn merge(ty: ColumnType, a: Option<MinMax>, b: Option<MinMax>) -> Option<MinMax> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(a), Some(b)) => MinMax::of(ty, [a.min, a.max, b.min, b.max].into_iter()),
        }
    }
}

/// `a < b` for raw numeric patterns of type `ty`.
pub fn numeric_lt(ty: ColumnType, a: u64, b: u64) -> bool {
    match ty {
        ColumnType::I64 | ColumnType::Timestamp => (a as i64) < (b as i64),
        ColumnType::F64 => f64::from_bits(a) < f64::from_bits(b),
        _ => a < b,
    }
}
