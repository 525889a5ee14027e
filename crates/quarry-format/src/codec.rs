//! Byte-level helpers shared by every part of the format: LEB128 varints, zigzag, and a checked
//! cursor whose every read is bounds-checked (a decoder built on it cannot panic on bad input).

use crate::error::{DecodeError, DecodeResult};

pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[inline]
pub fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

#[inline]
pub fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

pub fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}
pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A read cursor over a byte slice. Every method checks the remaining length first.
#[derive(Clone, Copy)]
pub struct ByteReader<'a> {
    bytes: &'a [u8],
}

const TRUNCATED: DecodeError = DecodeError::new("truncated");

impl<'a> ByteReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        ByteReader { bytes }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn take(&mut self, len: usize) -> DecodeResult<&'a [u8]> {
        if len > self.bytes.len() {
            return Err(TRUNCATED);
        }
        let (head, tail) = self.bytes.split_at(len);
        self.bytes = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> DecodeResult<[u8; N]> {
        let bytes = self.take(N)?;
        // unwrap: `take(N)` returned exactly N bytes.
        Ok(bytes.try_into().unwrap())
    }

    pub fn u8(&mut self) -> DecodeResult<u8> {
        Ok(self.array::<1>()?[0])
    }
    pub fn u16(&mut self) -> DecodeResult<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> DecodeResult<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub fn i64(&mut self) -> DecodeResult<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    #[inline]
    pub fn varint(&mut self) -> DecodeResult<u64> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let Some((&byte, tail)) = self.bytes.split_first() else {
                return Err(TRUNCATED);
            };
            self.bytes = tail;
            if shift == 63 && byte > 1 {
                return Err(DecodeError::new("varint overflows u64"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
            shift += 7;
            if shift > 63 {
                return Err(DecodeError::new("varint too long"));
            }
        }
    }

    /// A varint that must fit in u32.
    pub fn varint_u32(&mut self) -> DecodeResult<u32> {
        u32::try_from(self.varint()?).map_err(|_| DecodeError::new("varint overflows u32"))
    }

    /// A length-prefixed byte string no longer than `limit`.
    pub fn bytes(&mut self, limit: usize) -> DecodeResult<&'a [u8]> {
        let len = self.varint()?;
        if len > limit as u64 {
            return Err(DecodeError::new("length above limit"));
        }
        self.take(len as usize)
    }

    pub fn str(&mut self, limit: usize) -> DecodeResult<&'a str> {
        std::str::from_utf8(self.bytes(limit)?).map_err(|_| DecodeError::new("invalid utf-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varint_roundtrip(values in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut out = Vec::new();
            for &v in &values { put_varint(&mut out, v); }
            let mut reader = ByteReader::new(&out);
            for &v in &values { prop_assert_eq!(reader.varint().unwrap(), v); }
            prop_assert!(reader.is_empty());
        }

        #[test]
        fn zigzag_roundtrip(v in any::<i64>()) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
        }

        #[test]
        fn reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut reader = ByteReader::new(&bytes);
            let _ = reader.varint();
            let _ = reader.str(8);
            let _ = reader.u64();
            let _ = reader.bytes(1000);
        }
    }

    #[test]
    fn varint_rejects_overlong() {
        let bytes = [0xff; 11];
        assert!(ByteReader::new(&bytes).varint().is_err());
        assert!(ByteReader::new(&[0x80]).varint().is_err());
    }
}
