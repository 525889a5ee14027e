//! Field lengths ("norms") for BM25: a one-byte length id per doc per text field, stored packed
//! from format version 6 (`encode_packed`).
//!
//! A length is stored as a one-byte id: ids 0..=39 are the exact lengths 0..=39; above that each
//! id's length is the previous one's times 1.08, rounded up, so long fields keep their length to
//! within 8%. Encoding rounds down, like Lucene's norms. Id 0 also means "field absent".
//! Scores are computed from the decoded length, so they do not depend on how data was split.

use std::sync::OnceLock;

const EXACT_IDS: u32 = 40;
const GROWTH: f64 = 1.08;

/// Decoded length of every id, ascending.
pub fn id_to_length_table() -> &'static [u32; 256] {
    static TABLE: OnceLock<[u32; 256]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = [0u32; 256];
        for id in 0..256usize {
            table[id] = if (id as u32) < EXACT_IDS {
                id as u32
            } else {
                let next = (f64::from(table[id - 1]) * GROWTH).ceil();
                (next as u32).max(table[id - 1] + 1)
            };
        }
        table
    })
}

/// The largest id whose length is `<= length`.
pub fn length_to_id(length: u32) -> u8 {
    let table = id_to_length_table();
    // partition_point: the number of ids with table[id] <= length (at least 1: table[0] = 0).
    (table.partition_point(|&l| l <= length) - 1) as u8
}

pub fn id_to_length(id: u8) -> u32 {
    id_to_length_table()[id as usize]
}

/// Writes a field's norms packed (format version 6): a table of `1 << bits` ids, then each
/// doc's index in the table in `bits` bits. A field holds few distinct lengths: one
/// (a keyword in every doc: 0 bits), two (present or not: 1 bit), a few dozen for messages; one
/// byte a doc was 11 MB of 128 on 1M generated events. The table is padded to `1 << bits`
/// entries with its last id, so every slot a reader meets names an id.
pub fn encode_packed(ids: &[u8], out: &mut Vec<u8>) {
    let mut seen = [false; 256];
    for &id in ids {
        seen[id as usize] = true;
    }
    let mut table: Vec<u8> = (0..=255u8).filter(|&id| seen[id as usize]).collect();
    if table.is_empty() {
        table.push(0);
    }
    let bits = usize::BITS - (table.len() - 1).leading_zeros();
    let last = *table.last().expect("at least one id");
    table.resize(1 << bits, last);
    let mut slot_of = [0u8; 256];
    for (slot, &id) in table.iter().enumerate().rev() {
        slot_of[id as usize] = slot as u8;
    }
    out.push(bits as u8);
    out.extend_from_slice(&table);
    if bits == 0 {
        return;
    }
    let start = out.len();
    out.resize(start + packed_len(ids.len(), bits), 0);
    let packed = &mut out[start..];
    for (doc, &id) in ids.iter().enumerate() {
        let bit = doc * bits as usize;
        let value = u16::from(slot_of[id as usize]) << (bit % 8);
        packed[bit / 8] |= value as u8;
        if bit % 8 + bits as usize > 8 {
            packed[bit / 8 + 1] |= (value >> 8) as u8;
        }
    }
}

fn packed_len(doc_count: usize, bits: u32) -> usize {
    (doc_count * bits as usize).div_ceil(8)
}

/// Whether `bytes` are packed norms of `doc_count` docs (their length is what the header
/// says): checked when a block opens, so that `decode_packed` cannot fail.
pub fn packed_fits(bytes: &[u8], doc_count: u32) -> bool {
    match bytes.first() {
        Some(&bits) if bits <= 8 => {
            bytes.len() == 1 + (1 << bits) + packed_len(doc_count as usize, u32::from(bits))
        }
        _ => false,
    }
}

/// Each doc's length id from norms written by `encode_packed` (`packed_fits` must hold).
pub fn decode_packed(bytes: &[u8], doc_count: u32) -> Vec<u8> {
    let bits = u32::from(bytes[0]);
    let table = &bytes[1..1 + (1 << bits)];
    if bits == 0 {
        return vec![table[0]; doc_count as usize];
    }
    let packed = &bytes[1 + (1 << bits)..];
    let mask = (1u16 << bits) - 1;
    (0..doc_count as usize)
        .map(|doc| {
            let bit = doc * bits as usize;
            let low = u16::from(packed[bit / 8]);
            let high = packed.get(bit / 8 + 1).map_or(0, |&b| u16::from(b));
            let slot = ((low | high << 8) >> (bit % 8)) & mask;
            table[slot as usize]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_lengths_are_exact_and_large_ones_close() {
        for length in 0..40 {
            assert_eq!(id_to_length(length_to_id(length)), length);
        }
        for length in [40u32, 41, 100, 1_000, 12_345, 1_000_000, 100_000_000] {
            let decoded = id_to_length(length_to_id(length));
            assert!(decoded <= length, "{length} decoded to {decoded}");
            assert!(
                f64::from(decoded) >= f64::from(length) / GROWTH - 1.0,
                "{length}: {decoded}"
            );
        }
        assert_eq!(length_to_id(u32::MAX), 255);
    }

    proptest::proptest! {
        #[test]
        fn packed_norms_read_back(ids in proptest::collection::vec(proptest::prop_oneof![0u8..3, 0u8..40, proptest::num::u8::ANY], 0..2000)) {
            let mut bytes = Vec::new();
            encode_packed(&ids, &mut bytes);
            proptest::prop_assert!(packed_fits(&bytes, ids.len() as u32));
            proptest::prop_assert_eq!(decode_packed(&bytes, ids.len() as u32), ids);
        }
    }

    #[test]
    fn packed_norms_take_the_bits_their_distinct_ids_need() {
        let len = |ids: &[u8]| {
            let mut bytes = Vec::new();
            encode_packed(ids, &mut bytes);
            bytes.len()
        };
        assert_eq!(len(&[7; 1000]), 2);
        assert_eq!(len(&[0, 1].repeat(500)), 1 + 2 + 125);
        let dozens: Vec<u8> = (0..1000).map(|i| (i % 30) as u8).collect();
        assert_eq!(len(&dozens), 1 + 32 + 625);
    }

    #[test]
    fn table_is_strictly_increasing() {
        let table = id_to_length_table();
        assert!(table.windows(2).all(|w| w[0] < w[1]));
    }
}
