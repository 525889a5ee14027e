//! The term dictionary: an FST (the `fst` crate) from term key to term ordinal, and a table of
//! `TermInfo` by ordinal: fixed-width entries up to format version 4, varint entries in groups
//! of `TERM_INFO_GROUP` from version 5 (FORMAT.md, "Term dictionary").
//!
//! A term key is `field ordinal (u16, big endian) ‖ kind (u8) ‖ term bytes`, so one FST serves
//! every field, keys of one field are contiguous (prefix, fuzzy and range automata later walk one
//! field), and sorting keys sorts by field first.

use crate::codec::ByteReader;
use crate::error::{DecodeError, DecodeResult};
use crate::postings::{TermInfo, TERM_INFO_LEN};

/// Entries per group of the term-info table (format version 5 on): a lookup decodes at most
/// this many entries, and each group costs a 4-byte offset.
pub const TERM_INFO_GROUP: u64 = 16;

/// The first format version whose term infos are grouped varints.
pub const PACKED_TERM_INFOS_VERSION: u32 = 5;

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

/// Builds the FST and the term-info table (of the current format version). Keys must be added
/// in increasing order.
pub struct TermDictWriter {
    builder: fst::MapBuilder<Vec<u8>>,
    /// One u32 (little endian) per group: where it starts in `groups`.
    group_offsets: Vec<u8>,
    groups: Vec<u8>,
    /// The previous entry of the group being written.
    prev: Option<TermInfo>,
    count: u64,
}

impl Default for TermDictWriter {
    fn default() -> Self {
        TermDictWriter {
            builder: fst::MapBuilder::memory(),
            group_offsets: Vec::new(),
            groups: Vec::new(),
            prev: None,
            count: 0,
        }
    }
}

impl TermDictWriter {
    pub fn insert(&mut self, key: &[u8], info: &TermInfo) -> Result<(), fst::Error> {
        self.builder.insert(key, self.count)?;
        if self.count % TERM_INFO_GROUP == 0 {
            let offset = u32::try_from(self.groups.len()).map_err(|_| {
                fst::Error::Io(std::io::Error::other("term infos over 4 GiB in one block"))
            })?;
            self.group_offsets.extend_from_slice(&offset.to_le_bytes());
            self.prev = None;
        }
        info.encode_packed(self.prev.as_ref(), &mut self.groups);
        self.prev = Some(*info);
        self.count += 1;
        Ok(())
    }

    /// (fst bytes, term-info table bytes, term count)
    pub fn finish(self) -> Result<(Vec<u8>, Vec<u8>, u64), fst::Error> {
        let mut infos = self.group_offsets;
        infos.extend_from_slice(&self.groups);
        Ok((self.builder.into_inner()?, infos, self.count))
    }
}

/// Whether a term-info table of `len` bytes fits `count` terms in format `version` (checked
/// when a block opens; a grouped table's entries are bounds-checked as they are decoded).
pub fn term_infos_fit(version: u32, len: u64, count: u64) -> bool {
    if version < PACKED_TERM_INFOS_VERSION {
        Some(len) == count.checked_mul(TERM_INFO_LEN as u64)
    } else {
        count
            .div_ceil(TERM_INFO_GROUP)
            .checked_mul(4)
            .is_some_and(|table| len >= table)
    }
}

/// Reads term infos by ordinal; reading ordinals in increasing order decodes each entry once.
pub struct TermInfoCursor<'a> {
    infos: &'a [u8],
    version: u32,
    count: u64,
    /// The group being decoded (u64::MAX: none yet), its reader, the next ordinal it gives
    /// and the entry before that.
    group: u64,
    reader: ByteReader<'a>,
    next: u64,
    prev: Option<TermInfo>,
}

impl<'a> TermInfoCursor<'a> {
    pub fn new(infos: &'a [u8], version: u32, count: u64) -> Self {
        TermInfoCursor {
            infos,
            version,
            count,
            group: u64::MAX,
            reader: ByteReader::new(&[]),
            next: 0,
            prev: None,
        }
    }

    pub fn get(&mut self, ordinal: u64) -> DecodeResult<TermInfo> {
        if ordinal >= self.count {
            return Err(DecodeError::new("term ordinal out of range"));
        }
        if self.version < PACKED_TERM_INFOS_VERSION {
            return term_info_at(self.infos, ordinal);
        }
        let group = ordinal / TERM_INFO_GROUP;
        if group != self.group || ordinal < self.next {
            self.seek(group)?;
        }
        while self.next <= ordinal {
            self.prev = Some(TermInfo::decode_packed(
                &mut self.reader,
                self.prev.as_ref(),
            )?);
            self.next += 1;
        }
        Ok(self.prev.expect("decoded at least the asked entry"))
    }

    fn seek(&mut self, group: u64) -> DecodeResult<()> {
        let table_len = self.count.div_ceil(TERM_INFO_GROUP) * 4;
        let slot = usize::try_from(group * 4).map_err(|_| DecodeError::new("group offset"))?;
        let offset = self
            .infos
            .get(slot..slot + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .ok_or(DecodeError::new("term-info group table is short"))?;
        let start = usize::try_from(table_len + u64::from(offset))
            .ok()
            .filter(|&start| start <= self.infos.len())
            .ok_or(DecodeError::new("term-info group offset out of range"))?;
        self.reader = ByteReader::new(&self.infos[start..]);
        self.group = group;
        self.next = group * TERM_INFO_GROUP;
        self.prev = None;
        Ok(())
    }
}

/// The bytes `info` takes in a term-info table of format `version`, `prev` being the entry
/// before it in its group (version 5 on; group offsets not counted).
pub fn term_info_len(version: u32, info: &TermInfo, prev: Option<&TermInfo>) -> u64 {
    if version < PACKED_TERM_INFOS_VERSION {
        return TERM_INFO_LEN as u64;
    }
    let mut bytes = Vec::with_capacity(TERM_INFO_LEN);
    info.encode_packed(prev, &mut bytes);
    bytes.len() as u64
}

/// Reads a fixed-width term-info record (format versions 1 to 4) by ordinal.
pub fn term_info_at(infos: &[u8], ordinal: u64) -> DecodeResult<TermInfo> {
    let bytes = usize::try_from(ordinal)
        .ok()
        .and_then(|o| o.checked_mul(TERM_INFO_LEN))
        .and_then(|start| infos.get(start..start.checked_add(TERM_INFO_LEN)?))
        .ok_or(DecodeError::new("term ordinal out of range"))?;
    TermInfo::decode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn info() -> impl Strategy<Value = TermInfo> {
        // Small values as often as large ones: entries of one-byte varints take a fast path.
        (
            prop_oneof![1u32..128, 1u32..5000],
            prop_oneof![Just(0u64), 0u64..64, 0u64..1 << 40],
            prop_oneof![0u32..128, 0u32..100_000],
            prop_oneof![Just(0u64), 0u64..64, 0u64..1 << 40],
            prop_oneof![Just(0u64), 0u64..128, 0u64..1 << 40],
            prop_oneof![1u32..128, 1u32..1000],
            any::<u8>(),
            any::<bool>(),
        )
            .prop_map(
                |(doc_freq, a, postings_len, b, positions_len, max_tf, min_norm, p)| TermInfo {
                    doc_freq,
                    postings_offset: a,
                    postings_len,
                    positions_offset: b,
                    positions_len,
                    max_tf,
                    min_norm,
                    has_positions: p,
                },
            )
    }

    /// Infos as a writer makes them: each term's postings and positions right after the
    /// previous term's (`contiguous`), or anywhere.
    fn infos() -> impl Strategy<Value = Vec<TermInfo>> {
        (prop::collection::vec(info(), 0..100), any::<bool>()).prop_map(
            |(mut infos, contiguous)| {
                if contiguous {
                    let (mut postings, mut positions) = (0u64, 0u64);
                    for info in &mut infos {
                        info.postings_offset = postings;
                        info.positions_offset = positions;
                        postings += u64::from(info.postings_len);
                        positions += info.positions_len;
                    }
                }
                infos
            },
        )
    }

    fn write(infos: &[TermInfo]) -> Vec<u8> {
        let mut writer = TermDictWriter::default();
        for (i, info) in infos.iter().enumerate() {
            writer.insert(&(i as u32).to_be_bytes(), info).unwrap();
        }
        let (_, table, count) = writer.finish().unwrap();
        assert_eq!(count, infos.len() as u64);
        table
    }

    proptest! {
        /// Every entry reads back, whatever order the ordinals are asked in.
        #[test]
        fn grouped_term_infos_read_back(infos in infos(), order in prop::collection::vec(any::<prop::sample::Index>(), 0..200)) {
            let table = write(&infos);
            let count = infos.len() as u64;
            prop_assert!(term_infos_fit(PACKED_TERM_INFOS_VERSION, table.len() as u64, count));
            let mut cursor = TermInfoCursor::new(&table, PACKED_TERM_INFOS_VERSION, count);
            for (ordinal, info) in infos.iter().enumerate() {
                prop_assert_eq!(&cursor.get(ordinal as u64).unwrap(), info);
            }
            if !infos.is_empty() {
                for index in order {
                    let ordinal = index.index(infos.len());
                    prop_assert_eq!(&cursor.get(ordinal as u64).unwrap(), &infos[ordinal]);
                }
            }
            prop_assert!(cursor.get(count).is_err());
        }

        /// A damaged or cut table is an error or some entry, never a panic.
        #[test]
        fn damaged_term_infos_do_not_panic(infos in infos(), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
            let mut table = write(&infos);
            if table.is_empty() {
                return Ok(());
            }
            let (at, bits) = flip;
            let at = at.index(table.len());
            table[at] ^= bits;
            table.truncate(cut.index(table.len() + 1));
            let mut cursor = TermInfoCursor::new(&table, PACKED_TERM_INFOS_VERSION, infos.len() as u64);
            for ordinal in 0..infos.len() as u64 {
                let _ = cursor.get(ordinal);
            }
        }
    }

    #[test]
    fn contiguous_entries_are_small() {
        let infos: Vec<TermInfo> = (0..1000u64)
            .map(|i| TermInfo {
                doc_freq: 1,
                postings_offset: i * 2,
                postings_len: 2,
                positions_offset: i,
                positions_len: 1,
                max_tf: 1,
                min_norm: 3,
                has_positions: true,
            })
            .collect();
        // 8 bytes an entry after a group's first, 4 bytes of group offset per 16 entries.
        let table = write(&infos);
        assert!(table.len() < 1000 * 9 + 63 * 4, "{}", table.len());
        let mut cursor = TermInfoCursor::new(&table, PACKED_TERM_INFOS_VERSION, 1000);
        for (ordinal, info) in infos.iter().enumerate() {
            assert_eq!(&cursor.get(ordinal as u64).unwrap(), info);
        }
    }
}
