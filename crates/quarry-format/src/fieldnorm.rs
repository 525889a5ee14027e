//! Field lengths ("norms") for BM25: one byte per doc per text field.
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

    #[test]
    fn table_is_strictly_increasing() {
        let table = id_to_length_table();
        assert!(table.windows(2).all(|w| w[0] < w[1]));
    }
}
