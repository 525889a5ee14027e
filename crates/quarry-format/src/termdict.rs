//! The term dictionary: an FST (the `fst` crate) from term key to term ordinal, and a fixed-width
//! table of `TermInfo` indexed by ordinal.
//!
//! A term key is `field ordinal (u16, big endian) ‖ kind (u8) ‖ term bytes`, so one FST serves
//! every field, keys of one field are contiguous (prefix, fuzzy and range automata later walk one
//! field), and sorting keys sorts by field first.

use crate::error::{DecodeError, DecodeResult};
use crate::postings::{TermInfo, TERM_INFO_LEN};

/// What kind of term a key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum TermKind {
    /// A token produced by the analyzer, with positions and frequencies (BM25, phrases).
    Token = 0,
    /// A whole string value (up to `MAX_EXACT_TERM_LEN` bytes), for `field:="exact value"`.
    Exact = 1,
    /// An integer value (i64, or u64 up to `i64::MAX`) as the 8 bytes of `i64_term`, so that
    /// key order is numeric order and a range query is a range of keys. Tf 1, no positions.
    I64 = 2,
    /// A float value (not NaN, and u64 values above `i64::MAX`) as the 8 bytes of `f64_term`.
    F64 = 3,
}

impl TermKind {
    pub fn from_u8(byte: u8) -> Option<TermKind> {
        Some(match byte {
            0 => TermKind::Token,
            1 => TermKind::Exact,
            2 => TermKind::I64,
            3 => TermKind::F64,
            _ => return None,
        })
    }

    /// Whether terms of this kind carry frequencies and positions.
    pub fn has_positions(self) -> bool {
        self == TermKind::Token
    }
}

/// The order-preserving bytes of an integer term: big endian with the sign bit flipped.
pub fn i64_term(value: i64) -> [u8; 8] {
    ((value as u64) ^ (1 << 63)).to_be_bytes()
}

/// The order-preserving bytes of a float term: negative values have every bit flipped,
/// others only the sign bit, so byte order is `f64::total_cmp` order. -0.0 is stored as 0.0 so
/// that a range starting at 0 holds it.
pub fn f64_term(value: f64) -> [u8; 8] {
    let value = if value == 0.0 { 0.0 } else { value };
    let bits = value.to_bits();
    let key = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    key.to_be_bytes()
}

pub fn term_key(out: &mut Vec<u8>, field: u16, kind: TermKind, term: &[u8]) {
    out.clear();
    out.extend_from_slice(&field.to_be_bytes());
    out.push(kind as u8);
    out.extend_from_slice(term);
}

/// Builds the FST and the term-info table. Keys must be added in increasing order.
pub struct TermDictWriter {
    builder: fst::MapBuilder<Vec<u8>>,
    infos: Vec<u8>,
    count: u64,
}

impl Default for TermDictWriter {
    fn default() -> Self {
        TermDictWriter {
            builder: fst::MapBuilder::memory(),
            infos: Vec::new(),
            count: 0,
        }
    }
}

impl TermDictWriter {
    pub fn insert(&mut self, key: &[u8], info: &TermInfo) -> Result<(), fst::Error> {
        self.builder.insert(key, self.count)?;
        info.encode(&mut self.infos);
        self.count += 1;
        Ok(())
    }

    /// (fst bytes, term-info table bytes, term count)
    pub fn finish(self) -> Result<(Vec<u8>, Vec<u8>, u64), fst::Error> {
        Ok((self.builder.into_inner()?, self.infos, self.count))
    }
}

/// Reads a term-info record by ordinal.
pub fn term_info_at(infos: &[u8], ordinal: u64) -> DecodeResult<TermInfo> {
    let bytes = usize::try_from(ordinal)
        .ok()
        .and_then(|o| o.checked_mul(TERM_INFO_LEN))
        .and_then(|start| infos.get(start..start.checked_add(TERM_INFO_LEN)?))
        .ok_or(DecodeError::new("term ordinal out of range"))?;
    TermInfo::decode(bytes)
}
