//! The term dictionary: an FST (the `fst` crate) from term key to term ordinal, and a table of
//! `TermInfo` by ordinal: fixed-width entries up to format version 4, varint entries in groups
//! of `TERM_INFO_GROUP` from version 5, with lone docs and constant positions inline from
//! version 6 (FORMAT.md, "Term dictionary").
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

/// The first format version whose term infos hold a lone doc and a constant position in place
/// of postings and positions (`TermInfo::encode_v6`).
pub const INLINE_TERM_INFOS_VERSION: u32 = 6;

/// The first format version whose token terms may be unions of templates
/// (`postings::unions`), with template terms (`TermKind::Template`) beside them.
pub const TEMPLATE_UNIONS_VERSION: u32 = 11;

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
    /// The docs of one of the field's templates, keyed by its number as a big-endian u32
    /// (format version 11): listed by the token terms that are unions of templates
    /// (`postings::unions`), never searched by itself. Tf 1, no positions.
    Template = 4,
}

impl TermKind {
    pub fn from_u8(byte: u8) -> Option<TermKind> {
        Some(match byte {
            0 => TermKind::Token,
            1 => TermKind::Exact,
            2 => TermKind::I64,
            3 => TermKind::F64,
            4 => TermKind::Template,
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
        if self.count.is_multiple_of(TERM_INFO_GROUP) {
            let offset = u32::try_from(self.groups.len()).map_err(|_| {
                fst::Error::Io(std::io::Error::other("term infos over 4 GiB in one block"))
            })?;
            self.group_offsets.extend_from_slice(&offset.to_le_bytes());
            self.prev = None;
        }
        // The next entry's gaps count from where this one ends as a reader decodes it.
        let info = info.v6_form(self.prev.as_ref());
        info.encode_v6(self.prev.as_ref(), &mut self.groups);
        self.prev = Some(info);
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
            let prev = self.prev.as_ref();
            self.prev = Some(if self.version >= INLINE_TERM_INFOS_VERSION {
                let info = TermInfo::decode_v6(&mut self.reader, prev)?;
                if info.template_union && self.version < TEMPLATE_UNIONS_VERSION {
                    return Err(DecodeError::new("a union of templates before version 11"));
                }
                info
            } else {
                TermInfo::decode_packed(&mut self.reader, prev)?
            });
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
    if version >= INLINE_TERM_INFOS_VERSION {
        info.encode_v6(prev, &mut bytes);
    } else {
        info.encode_packed(prev, &mut bytes);
    }
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
            prop_oneof![Just(1u32), 2u32..128, 1u32..5000],
            prop_oneof![Just(0u64), 0u64..64, 0u64..1 << 40],
            prop_oneof![0u32..128, 0u32..100_000],
            prop_oneof![Just(0u64), 0u64..64, 0u64..1 << 40],
            prop_oneof![Just(0u64), 0u64..128, 0u64..1 << 40],
            prop_oneof![1u32..128, 1u32..1000],
            any::<u8>(),
            any::<bool>(),
            (
                prop_oneof![0u32..128, any::<u32>()],
                prop::option::of(prop_oneof![0u32..128, any::<u32>()]),
            ),
        )
            .prop_map(
                |(
                    doc_freq,
                    a,
                    postings_len,
                    b,
                    positions_len,
                    max_tf,
                    min_norm,
                    p,
                    (doc, position),
                )| {
                    TermInfo {
                        doc_freq,
                        postings_offset: a,
                        postings_len,
                        positions_offset: b,
                        positions_len,
                        max_tf,
                        min_norm,
                        has_positions: p,
                        inline_doc: Some(doc),
                        constant_position: position,
                        template_union: false,
                    }
                },
            )
    }

    /// Infos as a writer makes them: each term's postings and positions right after the
    /// previous term's (`contiguous`), or anywhere; in `version`'s form (version 6 keeps a
    /// lone doc inline and may give a term a constant position, version 5 neither).
    fn infos(version: u32) -> impl Strategy<Value = Vec<TermInfo>> {
        (prop::collection::vec(info(), 0..100), any::<bool>()).prop_map(
            move |(mut infos, contiguous)| {
                let (mut postings, mut positions) = (0u64, 0u64);
                for (i, info) in infos.iter_mut().enumerate() {
                    if (i as u64).is_multiple_of(TERM_INFO_GROUP) {
                        (postings, positions) = (0, 0);
                    }
                    if contiguous {
                        info.postings_offset = postings;
                        info.positions_offset = positions;
                    }
                    if version < INLINE_TERM_INFOS_VERSION {
                        (info.inline_doc, info.constant_position) = (None, None);
                    } else {
                        // What has no bytes keeps whatever location it was given: the
                        // writer stores none, and a reader gives `v6_form`'s.
                        if info.doc_freq == 1 {
                            info.postings_len = 0;
                        } else {
                            info.inline_doc = None;
                        }
                        if !info.has_positions {
                            info.constant_position = None;
                        }
                        if !info.has_positions || info.constant_position.is_some() {
                            info.positions_len = 0;
                        }
                        if info.constant_position.is_some() {
                            info.max_tf = 1;
                        }
                    }
                    postings = info.postings_offset + u64::from(info.postings_len);
                    positions = info.positions_offset + info.positions_len;
                }
                infos
            },
        )
    }

    /// A table of `version` (5 or 6) holding `infos`.
    fn write(infos: &[TermInfo], version: u32) -> Vec<u8> {
        if version >= INLINE_TERM_INFOS_VERSION {
            let mut writer = TermDictWriter::default();
            for (i, info) in infos.iter().enumerate() {
                writer.insert(&(i as u32).to_be_bytes(), info).unwrap();
            }
            let (_, table, count) = writer.finish().unwrap();
            assert_eq!(count, infos.len() as u64);
            return table;
        }
        let (mut offsets, mut groups) = (Vec::new(), Vec::new());
        for (i, info) in infos.iter().enumerate() {
            let first = (i as u64).is_multiple_of(TERM_INFO_GROUP);
            if first {
                offsets.extend_from_slice(&(groups.len() as u32).to_le_bytes());
            }
            let prev = (!first).then(|| &infos[i - 1]);
            info.encode_packed(prev, &mut groups);
        }
        offsets.extend_from_slice(&groups);
        offsets
    }

    fn read_back(version: u32, infos: &[TermInfo], order: &[prop::sample::Index]) {
        let table = write(infos, version);
        let mut expected = infos.to_vec();
        if version >= INLINE_TERM_INFOS_VERSION {
            for i in 0..expected.len() {
                let prev = (!(i as u64).is_multiple_of(TERM_INFO_GROUP)).then(|| expected[i - 1]);
                expected[i] = expected[i].v6_form(prev.as_ref());
            }
        }
        let infos = &expected;
        let count = infos.len() as u64;
        assert!(term_infos_fit(version, table.len() as u64, count));
        let mut cursor = TermInfoCursor::new(&table, version, count);
        for (ordinal, info) in infos.iter().enumerate() {
            assert_eq!(&cursor.get(ordinal as u64).unwrap(), info);
        }
        if !infos.is_empty() {
            for index in order {
                let ordinal = index.index(infos.len());
                assert_eq!(&cursor.get(ordinal as u64).unwrap(), &infos[ordinal]);
            }
        }
        assert!(cursor.get(count).is_err());
    }

    fn damage_does_not_panic(
        version: u32,
        infos: &[TermInfo],
        cut: prop::sample::Index,
        (at, bits): (prop::sample::Index, u8),
    ) {
        let mut table = write(infos, version);
        if table.is_empty() {
            return;
        }
        let at = at.index(table.len());
        table[at] ^= bits;
        table.truncate(cut.index(table.len() + 1));
        let mut cursor = TermInfoCursor::new(&table, version, infos.len() as u64);
        for ordinal in 0..infos.len() as u64 {
            let _ = cursor.get(ordinal);
        }
    }

    proptest! {
        /// Every entry reads back, whatever order the ordinals are asked in.
        #[test]
        fn v6_term_infos_read_back(infos in infos(6), order in prop::collection::vec(any::<prop::sample::Index>(), 0..200)) {
            read_back(6, &infos, &order);
        }

        #[test]
        fn v5_term_infos_read_back(infos in infos(5), order in prop::collection::vec(any::<prop::sample::Index>(), 0..200)) {
            read_back(5, &infos, &order);
        }

        /// A damaged or cut table is an error or some entry, never a panic.
        #[test]
        fn damaged_term_infos_do_not_panic(infos in infos(6), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
            damage_does_not_panic(6, &infos, cut, flip);
        }

        #[test]
        fn damaged_v5_term_infos_do_not_panic(infos in infos(5), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
            damage_does_not_panic(5, &infos, cut, flip);
        }
    }

    #[test]
    fn lone_docs_and_constant_positions_are_small() {
        // Terms of one doc at one position, as a column of ids makes: no postings or
        // positions bytes, and an entry of 7 bytes (a doc id below 2^14, a position below 128).
        let infos: Vec<TermInfo> = (0..1000u64)
            .map(|i| TermInfo {
                doc_freq: 1,
                max_tf: 1,
                min_norm: 3,
                has_positions: true,
                inline_doc: Some(i as u32 * 7),
                constant_position: Some(0),
                template_union: false,
                ..TermInfo::default()
            })
            .collect();
        let table = write(&infos, 6);
        assert!(table.len() <= 1000 * 7 + 63 * 4, "{}", table.len());
        read_back(6, &infos, &[]);
    }

    #[test]
    fn contiguous_entries_are_small() {
        let infos: Vec<TermInfo> = (0..1000u64)
            .map(|i| TermInfo {
                doc_freq: 2,
                postings_offset: i * 4,
                postings_len: 4,
                positions_offset: i * 2,
                positions_len: 2,
                max_tf: 1,
                min_norm: 3,
                has_positions: true,
                ..TermInfo::default()
            })
            .collect();
        // 8 bytes an entry after a group's first, 4 bytes of group offset per 16 entries.
        let table = write(&infos, 6);
        assert!(table.len() < 1000 * 9 + 63 * 4, "{}", table.len());
        read_back(6, &infos, &[]);
    }
}
