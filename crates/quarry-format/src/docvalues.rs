//! Doc values: one column's values again, laid out for random access by doc id, for
//! aggregations (format version 3).
//!
//! A column chunk is zstd-compressed and varint-coded: cheap to store, but reading the value of
//! one doc means decompressing its whole chunk, and counting string values means hashing every
//! string. Doc values keep, per 128-doc group, one bit-packed slot per doc: 0 for a doc
//! without a value, else `1 + v`, where `v` is
//! - for strings, the value's ordinal in a sorted dictionary of the column's distinct values
//!   (so a terms aggregation counts small integers and resolves only the winners to strings);
//! - for integers (i64, u64, timestamp, bool), `(raw - base) / divisor`, with the group's
//!   smallest raw value as base and the greatest common divisor of the differences.
//!
//! Columns whose values do not fit (too many distinct strings, long strings, a group whose
//! integers span more than 32 bits) get no doc values; readers then use the chunks. Byte
//! grammar: FORMAT.md, "Doc values".

use crate::codec::put_u32;
use crate::error::{DecodeError, DecodeResult};
use crate::limits::MAX_EXACT_TERM_LEN;
use crate::packed::{packed4x_get, unpack4x};
use std::collections::HashMap;

/// Docs per group (one bit-packed block of `bitpacking::BitPacker4x`).
pub const GROUP: usize = 128;
/// Bytes of one group entry: offset:u32 bits:u8 pad:u8{3} base:u64 divisor:u64.
const ENTRY_LEN: usize = 24;
/// A string column gets doc values while its distinct values number at most this many, or a
/// quarter of its values if that is more (keyword-like fields: hosts, levels, client
/// addresses; not messages or ids, which are given up as soon as they pass this many).
const MIN_DICTIONARY_LIMIT: usize = 1 << 16;
/// ... and keeps them at the end if its distinct values number at most this many, or a
/// quarter of its values if that is more.
const MIN_KEPT_DICTIONARY: usize = 64;

/// Collects one column's values as they are pushed (in increasing doc order) and packs each
/// 128-doc group as soon as it is complete, so a block's flush holds a few bytes per doc, not
/// every value: integers are packed for good; strings as provisional (first-seen) ids, mapped
/// to their sorted ordinals and packed again at the end.
pub struct DocValuesBuilder {
    /// Strings only: provisional id by value. `None` for integers.
    strings: Option<HashMap<Box<[u8]>, u32>>,
    /// Integers: raw patterns are i64 (the group base is the least in signed order).
    signed: bool,
    /// The open group: its index, raw values or provisional ids by position, which are set.
    group: usize,
    values: [u64; GROUP],
    present: u128,
    /// Closed groups: (offset in `packed`, bits, base, divisor) each, and their packed slots.
    entries: Vec<(u32, u8, u64, u64)>,
    packed: Vec<u8>,
    pushed: usize,
    abandoned: bool,
}

impl DocValuesBuilder {
    fn new(strings: Option<HashMap<Box<[u8]>, u32>>, signed: bool) -> DocValuesBuilder {
        DocValuesBuilder {
            strings,
            signed,
            group: 0,
            values: [0; GROUP],
            present: 0,
            entries: Vec::new(),
            packed: Vec::new(),
            pushed: 0,
            abandoned: false,
        }
    }

    /// Whether the column has been found not to qualify (its doc values will be `None`).
    pub fn is_abandoned(&self) -> bool {
        self.abandoned
    }

    pub fn strings() -> DocValuesBuilder {
        Self::new(Some(HashMap::new()), false)
    }

    /// Integer raw patterns; `signed` for i64 and timestamps, whose order is the i64 one.
    pub fn integers(signed: bool) -> DocValuesBuilder {
        Self::new(None, signed)
    }

    pub fn push_str(&mut self, doc: u32, value: &[u8]) {
        if self.abandoned {
            return;
        }
        let Some(strings) = self.strings.as_mut() else {
            return;
        };
        if value.len() > MAX_EXACT_TERM_LEN {
            self.abandon();
            return;
        }
        let next = strings.len() as u32;
        let id = match strings.get(value) {
            Some(&id) => id,
            None => {
                // Checked against the values seen so far, so a column of unique strings is
                // given up early, before its map grows large.
                let limit = MIN_DICTIONARY_LIMIT.max(self.pushed / 4);
                if strings.len() >= limit {
                    self.abandon();
                    return;
                }
                strings.insert(value.into(), next);
                next
            }
        };
        self.set(doc, u64::from(id));
    }

    pub fn push_raw(&mut self, doc: u32, raw: u64) {
        if !self.abandoned {
            self.set(doc, raw);
        }
    }

    fn set(&mut self, doc: u32, value: u64) {
        let group = doc as usize / GROUP;
        while self.group < group && !self.abandoned {
            self.close_group();
        }
        if self.abandoned {
            return;
        }
        self.values[doc as usize % GROUP] = value;
        self.present |= 1 << (doc as usize % GROUP);
        self.pushed += 1;
    }

    fn abandon(&mut self) {
        self.abandoned = true;
        self.strings = None;
        self.entries = Vec::new();
        self.packed = Vec::new();
    }

    /// Packs the open group and opens the next one.
    fn close_group(&mut self) {
        let present = |i: usize| self.present >> i & 1 == 1;
        let (base, divisor) = if self.strings.is_some() {
            (0, 1)
        } else {
            // Offsets wrap, so any base works when every value is within 32 bits above it:
            // the least value in the column's own order is the one.
            let set = (0..GROUP).filter(|&i| present(i)).map(|i| self.values[i]);
            let base = if self.signed {
                set.clone().map(|v| v as i64).min().unwrap_or(0) as u64
            } else {
                set.clone().min().unwrap_or(0)
            };
            let divisor = set.fold(0u64, |g, v| gcd(g, v.wrapping_sub(base))).max(1);
            (base, divisor)
        };
        let mut slots = [0u32; GROUP];
        for (i, slot) in slots.iter_mut().enumerate() {
            if present(i) {
                let value = (self.values[i].wrapping_sub(base) / divisor).checked_add(1);
                match value.and_then(|v| u32::try_from(v).ok()) {
                    Some(value) => *slot = value,
                    None => return self.abandon(),
                }
            }
        }
        self.pack(&slots, base, divisor);
        self.group += 1;
        self.present = 0;
    }

    fn pack(&mut self, slots: &[u32; GROUP], base: u64, divisor: u64) {
        use bitpacking::{BitPacker, BitPacker4x};
        let packer = BitPacker4x::new();
        let bits = packer.num_bits(slots);
        let Ok(offset) = u32::try_from(self.packed.len()) else {
            return self.abandon();
        };
        let start = self.packed.len();
        self.packed.resize(start + 16 * bits as usize, 0);
        packer.compress(slots, &mut self.packed[start..], bits);
        self.entries.push((offset, bits, base, divisor));
    }

    /// The encoded section for a block of `doc_count` docs, or `None` if the column does not
    /// qualify (or has no values).
    pub fn finish(mut self, doc_count: u32) -> Option<Vec<u8>> {
        let group_count = (doc_count as usize).div_ceil(GROUP);
        while self.group < group_count && !self.abandoned {
            self.close_group();
        }
        if self.abandoned || self.pushed == 0 {
            return None;
        }
        // Under `MIN_DICTIONARY_LIMIT` every string column is kept while it is read; at the
        // end, one whose distinct values are more than a quarter of its values (free text,
        // ids: a block of 2,000 Loghub lines has 1,300–2,000 distinct messages) is dropped:
        // its dictionary would be a second copy of the column, unpacked (Loghub Linux: 224 KB
        // of doc values beside a 15 KB column), for aggregations that rarely group by it.
        if let Some(strings) = &self.strings {
            if strings.len() > MIN_KEPT_DICTIONARY.max(self.pushed / 4) {
                return None;
            }
        }
        let mut dictionary: Vec<(Box<[u8]>, u32)> = Vec::new();
        if let Some(strings) = self.strings.take() {
            dictionary = strings.into_iter().collect();
            dictionary.sort_unstable();
            // Provisional id -> 1 + ordinal in sorted order; repack every group with it.
            let mut slot_of = vec![0u32; dictionary.len() + 1];
            for (ordinal, (_, id)) in dictionary.iter().enumerate() {
                slot_of[*id as usize + 1] = ordinal as u32 + 1;
            }
            let (entries, packed) = (
                std::mem::take(&mut self.entries),
                std::mem::take(&mut self.packed),
            );
            let mut slots = [0u32; GROUP];
            for (offset, bits, _, _) in entries {
                let at = offset as usize;
                unpack4x(&packed[at..at + 16 * bits as usize], bits, &mut slots);
                for slot in &mut slots {
                    *slot = slot_of[*slot as usize];
                }
                self.pack(&slots, 0, 1);
            }
        }
        if self.abandoned {
            return None;
        }
        let mut out = Vec::new();
        put_u32(&mut out, doc_count);
        put_u32(&mut out, dictionary.len() as u32);
        let mut offset = 0u32;
        put_u32(&mut out, 0);
        for (value, _) in &dictionary {
            offset = offset.checked_add(value.len() as u32)?;
            put_u32(&mut out, offset);
        }
        for (value, _) in &dictionary {
            out.extend_from_slice(value);
        }
        let data_start = out.len() + self.entries.len() * ENTRY_LEN;
        for &(offset, bits, base, divisor) in &self.entries {
            let offset = u32::try_from(data_start + offset as usize).ok()?;
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&[bits, 0, 0, 0]);
            out.extend_from_slice(&base.to_le_bytes());
            out.extend_from_slice(&divisor.to_le_bytes());
        }
        out.extend_from_slice(&self.packed);
        Some(out)
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A column's doc values, read in place from the block's bytes.
#[derive(Clone, Copy)]
pub struct DocValues<'a> {
    bytes: &'a [u8],
    doc_count: u32,
    dictionary_len: usize,
    /// Byte offset of the dictionary's value bytes.
    values_start: usize,
    entries_start: usize,
}

/// One group's entry.
#[derive(Clone, Copy)]
struct Entry {
    offset: usize,
    bits: u8,
    base: u64,
    divisor: u64,
}

impl Entry {
    /// The raw integer of a non-zero slot of this group.
    #[inline]
    fn integer(&self, slot: u32) -> u64 {
        self.base
            .wrapping_add(u64::from(slot - 1).wrapping_mul(self.divisor))
    }
}

impl<'a> DocValues<'a> {
    /// Checks the header, every group entry and the dictionary offsets; per-doc reads then
    /// only index. Block readers check at open and then use `trusted`.
    pub fn new(bytes: &'a [u8]) -> DecodeResult<DocValues<'a>> {
        let values = Self::trusted(bytes)?;
        let group_count = (values.doc_count as usize).div_ceil(GROUP);
        for group in 0..group_count {
            let entry = values.entry(group);
            if entry.bits > 32 || entry.offset + 16 * entry.bits as usize > bytes.len() {
                return Err(DecodeError::new("doc values group out of bounds"));
            }
        }
        // Dictionary offsets ascend within the value bytes.
        let values_len = values.entries_start - values.values_start;
        let mut previous = 0;
        for ordinal in 0..=values.dictionary_len {
            let offset = values.dictionary_offset(ordinal);
            if offset < previous || offset > values_len {
                return Err(DecodeError::new("doc values dictionary offsets"));
            }
            previous = offset;
        }
        Ok(values)
    }

    /// Checks only the header's bounds (for bytes `new` accepted before).
    pub fn trusted(bytes: &'a [u8]) -> DecodeResult<DocValues<'a>> {
        let u32_at = |at: usize| -> DecodeResult<u32> {
            bytes
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or(DecodeError::new("doc values truncated"))
        };
        let doc_count = u32_at(0)?;
        let dictionary_len = u32_at(4)? as usize;
        let offsets_start = 8usize;
        let values_start = offsets_start
            .checked_add(
                dictionary_len
                    .checked_add(1)
                    .and_then(|n| n.checked_mul(4))
                    .ok_or(DecodeError::new("doc values dictionary size"))?,
            )
            .ok_or(DecodeError::new("doc values dictionary size"))?;
        let values_len = u32_at(values_start - 4)? as usize;
        let entries_start = values_start
            .checked_add(values_len)
            .ok_or(DecodeError::new("doc values dictionary size"))?;
        let group_count = (doc_count as usize).div_ceil(GROUP);
        let data_start = entries_start + group_count * ENTRY_LEN;
        if bytes.len() < data_start {
            return Err(DecodeError::new("doc values truncated"));
        }
        Ok(DocValues {
            bytes,
            doc_count,
            dictionary_len,
            values_start,
            entries_start,
        })
    }

    /// Whether both read the same section (the same column of the same block).
    pub fn same_as(&self, other: &DocValues<'_>) -> bool {
        std::ptr::eq(self.bytes.as_ptr(), other.bytes.as_ptr())
    }

    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }

    /// Distinct strings (0 for integer columns).
    pub fn dictionary_len(&self) -> usize {
        self.dictionary_len
    }

    fn entry(&self, group: usize) -> Entry {
        let at = self.entries_start + group * ENTRY_LEN;
        let e = &self.bytes[at..at + ENTRY_LEN];
        Entry {
            offset: u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize,
            bits: e[4],
            base: u64::from_le_bytes(e[8..16].try_into().unwrap_or_default()),
            divisor: u64::from_le_bytes(e[16..24].try_into().unwrap_or_default()),
        }
    }

    /// A group's packed slots (in bounds: checked by `new`).
    #[inline]
    fn packed(&self, entry: Entry) -> &'a [u8] {
        &self.bytes[entry.offset..entry.offset + 16 * entry.bits as usize]
    }

    /// Where dictionary value `i` starts in the value bytes (`i = dictionary_len`: the end).
    fn dictionary_offset(&self, i: usize) -> usize {
        let at = 8 + 4 * i;
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap_or_default()) as usize
    }

    /// The slot of `doc`: 0 without a value, else 1 + ordinal or 1 + (raw - base) / divisor.
    #[inline]
    fn slot(&self, doc: u32) -> (u32, Entry) {
        let entry = self.entry(doc as usize / GROUP);
        let slot = packed4x_get(self.packed(entry), entry.bits, doc as usize % GROUP);
        (slot, entry)
    }

    /// The dictionary ordinal of `doc`'s string, if it has one (string columns).
    #[inline]
    pub fn ordinal(&self, doc: u32) -> Option<u32> {
        if doc >= self.doc_count {
            return None;
        }
        self.slot(doc).0.checked_sub(1)
    }

    /// The raw 64-bit pattern of `doc`'s integer, if it has one (integer columns).
    #[inline]
    pub fn raw(&self, doc: u32) -> Option<u64> {
        if doc >= self.doc_count {
            return None;
        }
        let (slot, entry) = self.slot(doc);
        (slot != 0).then(|| entry.integer(slot))
    }

    /// Calls `f(doc, slot value)` for every doc of `[lo, hi)` with a value, unpacking whole
    /// groups (the value is the ordinal, or the raw integer).
    pub fn for_each_in_range(&self, lo: u32, hi: u32, mut f: impl FnMut(u32, u64)) {
        let hi = hi.min(self.doc_count);
        if lo >= hi {
            return;
        }
        let mut slots = [0u32; GROUP];
        // Generic over `f` so that an aggregation's per-value work inlines into this loop
        // (through `&mut dyn FnMut` a stats aggregation spent 17 ns a doc in calls).
        let strings = self.dictionary_len > 0;
        for group in lo as usize / GROUP..=(hi as usize - 1) / GROUP {
            let entry = self.entry(group);
            unpack4x(self.packed(entry), entry.bits, &mut slots);
            let first = (group * GROUP) as u32;
            let from = lo.saturating_sub(first) as usize;
            let to = ((hi - first) as usize).min(GROUP);
            for (i, &slot) in slots.iter().enumerate().take(to).skip(from) {
                if slot != 0 {
                    let value = if strings {
                        u64::from(slot - 1)
                    } else {
                        entry.integer(slot)
                    };
                    f(first + i as u32, value);
                }
            }
        }
    }

    /// The slots of `[lo, hi)` a 128-doc group at a time, for loops without a branch per
    /// doc: `f(first, base, divisor, slots)`, where `slots[i]` is doc `first + i`'s, a slot of
    /// 0 is a doc without a value and a slot `s > 0` is the value `base + (s - 1) * divisor`
    /// (wrapping; for strings, base 0 and divisor 1 make it the ordinal). Within a group, a
    /// larger slot is a larger value in the column's order.
    pub fn for_each_group_in_range(
        &self,
        lo: u32,
        hi: u32,
        mut f: impl FnMut(u32, u64, u64, &[u32]),
    ) {
        let hi = hi.min(self.doc_count);
        if lo >= hi {
            return;
        }
        let strings = self.dictionary_len > 0;
        let mut slots = [0u32; GROUP];
        for group in lo as usize / GROUP..=(hi as usize - 1) / GROUP {
            let entry = self.entry(group);
            unpack4x(self.packed(entry), entry.bits, &mut slots);
            let first = group * GROUP;
            let from = (lo as usize).saturating_sub(first);
            let to = (hi as usize - first).min(GROUP);
            let (base, divisor) = if strings {
                (0, 1)
            } else {
                (entry.base, entry.divisor)
            };
            f((first + from) as u32, base, divisor, &slots[from..to]);
        }
    }

    /// A reader for docs asked in increasing order (aggregations): it unpacks each 128-doc
    /// group once instead of reading every doc's slot in place.
    pub fn cursor(&self) -> DocValuesCursor<'a> {
        DocValuesCursor {
            values: *self,
            group: usize::MAX,
            entry: Entry {
                offset: 0,
                bits: 0,
                base: 0,
                divisor: 1,
            },
            slots: [0; GROUP],
        }
    }

    /// The string of dictionary ordinal `ordinal`.
    pub fn string(&self, ordinal: u32) -> Option<&'a [u8]> {
        let ordinal = ordinal as usize;
        if ordinal >= self.dictionary_len {
            return None;
        }
        let (start, end) = (
            self.dictionary_offset(ordinal),
            self.dictionary_offset(ordinal + 1),
        );
        self.bytes
            .get(self.values_start + start..self.values_start + end)
    }
}

/// Doc values read through the last unpacked group (see `DocValues::cursor`).
pub struct DocValuesCursor<'a> {
    values: DocValues<'a>,
    group: usize,
    entry: Entry,
    slots: [u32; GROUP],
}

impl<'a> DocValuesCursor<'a> {
    pub fn values(&self) -> DocValues<'a> {
        self.values
    }

    #[inline]
    fn slot(&mut self, doc: u32) -> u32 {
        if doc >= self.values.doc_count {
            return 0;
        }
        let group = doc as usize / GROUP;
        if group != self.group {
            self.entry = self.values.entry(group);
            unpack4x(
                self.values.packed(self.entry),
                self.entry.bits,
                &mut self.slots,
            );
            self.group = group;
        }
        self.slots[doc as usize % GROUP]
    }

    /// As `DocValues::ordinal`.
    #[inline]
    pub fn ordinal(&mut self, doc: u32) -> Option<u32> {
        self.slot(doc).checked_sub(1)
    }

    /// As `DocValues::raw`.
    #[inline]
    pub fn raw(&mut self, doc: u32) -> Option<u64> {
        let slot = self.slot(doc);
        (slot != 0).then(|| self.entry.integer(slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Builds doc values for `model` (value per doc, `None` = missing) the way a column
    /// writer does, and opens them.
    fn strings_of(model: &[Option<String>]) -> Option<Vec<u8>> {
        let mut builder = DocValuesBuilder::strings();
        for (doc, value) in model.iter().enumerate() {
            if let Some(value) = value {
                builder.push_str(doc as u32, value.as_bytes());
            }
        }
        builder.finish(model.len() as u32)
    }

    fn integers_of(model: &[Option<u64>]) -> Option<Vec<u8>> {
        let mut builder = DocValuesBuilder::integers(true);
        for (doc, value) in model.iter().enumerate() {
            if let Some(value) = value {
                builder.push_raw(doc as u32, *value);
            }
        }
        builder.finish(model.len() as u32)
    }

    proptest! {
        #[test]
        fn strings_round_trip(
            model in prop::collection::vec(prop::option::of("[a-d]{0,3}"), 1..700),
            lo in 0u32..800,
            len in 0u32..800,
        ) {
            let bytes = strings_of(&model);
            if model.iter().all(Option::is_none) {
                prop_assert!(bytes.is_none());
                return Ok(());
            }
            let mut sorted: Vec<&String> = model.iter().flatten().collect();
            let present = sorted.len();
            sorted.sort();
            sorted.dedup();
            // Kept only while distinct values are few enough to be worth a dictionary.
            let kept = sorted.len() <= MIN_KEPT_DICTIONARY.max(present / 4);
            prop_assert_eq!(bytes.is_some(), kept, "{} distinct of {}", sorted.len(), present);
            let Some(bytes) = bytes else {
                return Ok(());
            };
            let values = DocValues::new(&bytes).unwrap();
            prop_assert_eq!(values.dictionary_len(), sorted.len());
            for (doc, expected) in model.iter().enumerate() {
                let got = values
                    .ordinal(doc as u32)
                    .map(|o| String::from_utf8(values.string(o).unwrap().to_vec()).unwrap());
                prop_assert_eq!(got.as_ref(), expected.as_ref(), "doc {}", doc);
            }
            prop_assert_eq!(values.ordinal(model.len() as u32), None);
            let mut cursor = values.cursor();
            for doc in (0..model.len() as u32 + 2).step_by(3) {
                prop_assert_eq!(cursor.ordinal(doc), values.ordinal(doc), "doc {}", doc);
            }
            let hi = lo.saturating_add(len);
            let mut seen = Vec::new();
            values.for_each_in_range(lo, hi, |doc, ordinal| {
                seen.push((doc, values.string(ordinal as u32).unwrap().to_vec()));
            });
            let expected: Vec<(u32, Vec<u8>)> = model
                .iter()
                .enumerate()
                .filter(|(doc, v)| (lo..hi).contains(&(*doc as u32)) && v.is_some())
                .map(|(doc, v)| (doc as u32, v.clone().unwrap().into_bytes()))
                .collect();
            prop_assert_eq!(seen, expected);
        }

        #[test]
        fn integers_round_trip(
            model in prop::collection::vec(
                prop::option::of(prop_oneof![0u64..50, (0u64..1000).prop_map(|v| v * 1000 + 7)]),
                1..700,
            ),
            lo in 0u32..800,
            len in 0u32..800,
        ) {
            let bytes = integers_of(&model);
            if model.iter().all(Option::is_none) {
                prop_assert!(bytes.is_none());
                return Ok(());
            }
            let bytes = bytes.unwrap();
            let values = DocValues::new(&bytes).unwrap();
            prop_assert_eq!(values.dictionary_len(), 0);
            for (doc, expected) in model.iter().enumerate() {
                prop_assert_eq!(values.raw(doc as u32), *expected, "doc {}", doc);
            }
            let mut cursor = values.cursor();
            for doc in (0..model.len() as u32 + 2).step_by(2) {
                prop_assert_eq!(cursor.raw(doc), values.raw(doc), "doc {}", doc);
            }
            let hi = lo.saturating_add(len);
            let mut seen = Vec::new();
            values.for_each_in_range(lo, hi, |doc, raw| seen.push((doc, raw)));
            let expected: Vec<(u32, u64)> = model
                .iter()
                .enumerate()
                .filter(|(doc, v)| (lo..hi).contains(&(*doc as u32)) && v.is_some())
                .map(|(doc, v)| (doc as u32, v.unwrap()))
                .collect();
            prop_assert_eq!(&seen, &expected);
            // The group walk gives the same values, in order.
            let mut grouped = Vec::new();
            values.for_each_group_in_range(lo, hi, |first, base, divisor, slots| {
                grouped.extend(slots.iter().enumerate().filter(|(_, &s)| s != 0).map(|(i, &s)| {
                    (first + i as u32, base.wrapping_add(u64::from(s - 1).wrapping_mul(divisor)))
                }));
            });
            prop_assert_eq!(grouped, expected);
        }
    }

    proptest! {
        /// A valid section with bytes overwritten: `new` rejects it or every read stays in
        /// bounds (no panic), whatever the damage.
        #[test]
        fn damaged_sections_never_panic(
            strings in any::<bool>(),
            flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        ) {
            let mut bytes = if strings {
                let model: Vec<Option<String>> =
                    (0..300).map(|i| (i % 3 != 0).then(|| format!("v{}", i % 11))).collect();
                strings_of(&model).unwrap()
            } else {
                let model: Vec<Option<u64>> =
                    (0..300).map(|i| (i % 4 != 0).then_some(i * 1000 + 7)).collect();
                integers_of(&model).unwrap()
            };
            for (at, byte) in flips {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            if let Ok(values) = DocValues::new(&bytes) {
                let end = values.doc_count().min(1000);
                let mut cursor = values.cursor();
                for doc in 0..end + 2 {
                    let _ = (values.raw(doc), cursor.raw(doc));
                    if let Some(ordinal) = values.ordinal(doc) {
                        let _ = values.string(ordinal);
                    }
                }
                values.for_each_in_range(0, end, |_, _| {});
            }
        }
    }

    #[test]
    fn negative_and_extreme_integers_use_wrapping_offsets() {
        // i64 raw patterns: -5, 3, i64::MIN in one group span more than 32 bits: no doc values.
        let wide = [Some((-5i64) as u64), Some(3), Some(i64::MIN as u64)];
        assert!(integers_of(&wide).is_none());
        let narrow = [Some((-5i64) as u64), None, Some(3), Some((-1i64) as u64)];
        let bytes = integers_of(&narrow).unwrap();
        let values = DocValues::new(&bytes).unwrap();
        let got: Vec<Option<i64>> = (0..4).map(|d| values.raw(d).map(|r| r as i64)).collect();
        assert_eq!(got, [Some(-5), None, Some(3), Some(-1)]);
    }

    #[test]
    fn columns_that_do_not_qualify_get_none() {
        // Too many distinct values (unique ids in a block).
        let unique: Vec<Option<String>> = (0..70_000).map(|i| Some(format!("id-{i}"))).collect();
        assert!(strings_of(&unique).is_none());
        // A string longer than an exact term.
        let long = [Some("x".repeat(MAX_EXACT_TERM_LEN + 1))];
        assert!(strings_of(&long).is_none());
    }

    #[test]
    fn corrupt_bytes_are_errors_not_panics() {
        let model: Vec<Option<String>> = (0..300).map(|i| Some(format!("v{}", i % 7))).collect();
        let bytes = strings_of(&model).unwrap();
        for cut in [0, 3, 8, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(DocValues::new(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = bytes.clone();
        // The first group entry's bit width.
        bad[entries(&bytes) + 4] = 40;
        assert!(DocValues::new(&bad).is_err());
    }

    /// Offset of the group entries in a valid section.
    fn entries(bytes: &[u8]) -> usize {
        DocValues::new(bytes).unwrap().entries_start
    }
}
