//! Bit-packed blocks of 128 values (`bitpacking::BitPacker4x`), read whole or one value in
//! place: the time offsets and doc values use both.

/// Hints the CPU to load the cache line of `bytes[at]` (nothing if `at` is out of bounds, or
/// on targets without a prefetch instruction).
#[inline]
pub fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = bytes.get(at) {
        // SAFETY: prefetching is a hint with no architectural effect; the address is that of a
        // live byte.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (byte as *const u8).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// Unpacks the 128 values of a block packed with `bits` bits (`packed` is `16 * bits` bytes).
#[inline]
pub fn unpack4x(packed: &[u8], bits: u8, out: &mut [u32; 128]) {
    use bitpacking::BitPacker;
    bitpacking::BitPacker4x::new().decompress(packed, out, bits);
}

/// Value `index` (< 128) of a block that `bitpacking::BitPacker4x` packed with `bits` bits,
/// read in place. BitPacker4x packs 4 interleaved lanes: value `i` is row `i / 4` of lane
/// `i % 4`, each lane is a stream of `bits` little-endian 32-bit words, and word `w` of lane
/// `l` is at byte `16 * w + 4 * l` (the layout is pinned by a test against `decompress`).
pub fn packed4x_get(packed: &[u8], bits: u8, index: usize) -> u32 {
    if bits == 0 {
        return 0;
    }
    let bits = u32::from(bits);
    let (lane, row) = (index % 4, (index / 4) as u32);
    let first_bit = row * bits;
    let (word, shift) = ((first_bit / 32) as usize, first_bit % 32);
    let word_at = |w: usize| {
        let at = 16 * w + 4 * lane;
        packed
            .get(at..at + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut value = u64::from(word_at(word)) >> shift;
    if shift + bits > 32 {
        value |= u64::from(word_at(word + 1)) << (32 - shift);
    }
    (value & ((1u64 << bits) - 1)) as u32
}

#[cfg(test)]
mod tests {
    use super::packed4x_get;
    use bitpacking::{BitPacker, BitPacker4x};

    #[test]
    fn reads_bitpacker4x_values_in_place_at_every_width() {
        let packer = BitPacker4x::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for bits in 0..=32u8 {
            let mask = if bits == 32 {
                u32::MAX
            } else {
                (1u32 << bits) - 1
            };
            let values: Vec<u32> = (0..128)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state as u32) & mask
                })
                .collect();
            let mut packed = vec![0u8; 16 * 32];
            let written = packer.compress(&values, &mut packed, bits);
            assert_eq!(written, 16 * bits as usize);
            for (index, &value) in values.iter().enumerate() {
                assert_eq!(
                    packed4x_get(&packed[..written], bits, index),
                    value,
                    "bits {bits} index {index}"
                );
            }
        }
    }
}
