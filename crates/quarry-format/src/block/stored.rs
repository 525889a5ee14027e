//! How a resident section is stored (format version 9): as it is, or zstd-compressed.
//!
//! The sections a reader copies into memory when it opens a block (doc values, norms, term
//! dictionary and infos, time index and offsets, chunk directories, template dictionaries,
//! page checksums) are read at random, but only from that private copy; the file's bytes are
//! read once, at open. So they can be stored compressed and expanded into the copy: the
//! queries that read them see the same bytes as before. On 1M generated events, doc values
//! (bit-packed per 128 docs) shrink by half, the term FST and term infos by 40% and 48%
//! (BENCHMARKS.md, "Format v9").
//!
//! ```text
//! stored := 0:u8 bytes                                   (stored as they are)
//!         | 1:u8 raw_len:varint zstd_frame               (zstd, raw_len bytes once expanded)
//! ```
//!
//! The section's crc (its `section_ref`) covers the stored bytes; the expanded copy is what
//! readers use, and its length must be exactly `raw_len`.

use crate::codec::{put_varint, ByteReader};
use crate::error::{DecodeError, DecodeResult};
use std::io::Read;

const AS_IS: u8 = 0;
const ZSTD: u8 = 1;

/// zstd level for resident sections: level 3 (zstd's default) compresses the 21 MB of a
/// 1M-event block's resident sections in about 70 ms; level 9 saves 5% more for four times
/// the time.
const LEVEL: i32 = 3;

/// A resident section may expand to at most this many bytes: a hostile `raw_len` fails here
/// instead of asking for the memory (and expanding grows the copy only as data comes out).
pub const MAX_EXPANDED_LEN: u64 = 1 << 34;

/// Appends `bytes` as a stored section: compressed when that saves at least 1/16 of them
/// (below that, expanding at every open would cost more than the bytes are worth).
pub fn encode(bytes: &[u8], out: &mut Vec<u8>) {
    if bytes.len() >= 64 {
        if let Ok(compressed) = zstd::bulk::compress(bytes, LEVEL) {
            if compressed.len() + 11 < bytes.len() - bytes.len() / 16 {
                out.push(ZSTD);
                put_varint(out, bytes.len() as u64);
                out.extend_from_slice(&compressed);
                return;
            }
        }
    }
    out.push(AS_IS);
    out.extend_from_slice(bytes);
}

/// The bytes a stored section holds, expanded.
pub fn decode(stored: &[u8]) -> DecodeResult<Box<[u8]>> {
    let mut reader = ByteReader::new(stored);
    match reader.u8()? {
        AS_IS => Ok(reader.rest().into()),
        ZSTD => {
            let raw_len = reader.varint()?;
            if raw_len > MAX_EXPANDED_LEN {
                return Err(DecodeError::new("expanded length above limit"));
            }
            let mut decoder = zstd::stream::read::Decoder::with_buffer(reader.rest())
                .map_err(|_| DecodeError::new("zstd decoder"))?;
            // Capacity from the stored length (a zstd frame rarely expands more than 16x
            // here); a longer section grows the copy as its bytes come out.
            let mut expanded = Vec::with_capacity(raw_len.min(stored.len() as u64 * 16) as usize);
            (&mut decoder)
                .take(raw_len + 1)
                .read_to_end(&mut expanded)
                .map_err(|_| DecodeError::new("zstd frame does not decode"))?;
            if expanded.len() as u64 != raw_len {
                return Err(DecodeError::new(
                    "expanded length is not the stored raw length",
                ));
            }
            Ok(expanded.into_boxed_slice())
        }
        _ => Err(DecodeError::new("unknown section codec")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compressible_bytes_are_compressed_and_come_back() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
        let mut stored = Vec::new();
        encode(&bytes, &mut stored);
        assert_eq!(stored[0], ZSTD);
        assert!(stored.len() < bytes.len() / 10);
        assert_eq!(&*decode(&stored).unwrap(), &bytes[..]);
    }

    #[test]
    fn incompressible_and_short_bytes_are_stored_as_they_are() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for bytes in [&noise[..], &[1, 1, 1, 1][..], &[][..]] {
            let mut stored = Vec::new();
            encode(bytes, &mut stored);
            assert_eq!(stored[0], AS_IS);
            assert_eq!(&*decode(&stored).unwrap(), bytes);
        }
    }

    #[test]
    fn a_wrong_raw_length_or_codec_is_an_error() {
        let bytes = vec![5u8; 1000];
        let mut stored = Vec::new();
        encode(&bytes, &mut stored);
        // raw_len 1000 is the varint [0xe8, 0x07]: claim 999, then 1001.
        assert_eq!(&stored[1..3], &[0xe8, 0x07]);
        stored[1] = 0xe7;
        assert!(decode(&stored).is_err());
        stored[1] = 0xe9;
        assert!(decode(&stored).is_err());
        stored[0] = 2;
        assert!(decode(&stored).is_err());
        assert!(decode(&[]).is_err());
    }

    proptest! {
        #[test]
        fn any_bytes_round_trip(bytes in proptest::collection::vec(0u8..4, 0..5000)) {
            let mut stored = Vec::new();
            encode(&bytes, &mut stored);
            prop_assert_eq!(&*decode(&stored).unwrap(), &bytes[..]);
        }

        #[test]
        fn arbitrary_stored_bytes_never_panic(stored in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&stored);
        }
    }
}
