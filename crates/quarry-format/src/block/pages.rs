//! Page checksums: the postings and positions sections are read piecemeal (one term's
//! postings, one doc's positions), so a query checks the crc of each page it reads, once per
//! open block, instead of the crc of a section that may be most of the file.
//!
//! ```text
//! page_checksums := page_len:u32 crc32{ceil(postings.len / page_len)}
//!                   crc32{ceil(positions.len / page_len)}
//! ```
//! Page `i` of a section is its bytes `[i * page_len, min((i + 1) * page_len, len))`.
//! Blocks before version 4 have no such section: each of the two sections is then one page
//! whose crc is the section's own.
//!
//! Invariant: a byte of postings or positions reaches a decoder only after the crc of its page
//! matched (`PageChecksums::verify`); a verified page stays verified while the block is open
//! (its bytes are immutable), so the check costs once per page and open.

use super::manifest::SectionRef;
use crate::codec::{put_u32, ByteReader};
use crate::error::{DecodeError, DecodeResult};
use crate::limits::{MAX_CHECKSUM_PAGE_LEN, MIN_CHECKSUM_PAGE_LEN};
use std::sync::atomic::{AtomicU64, Ordering};

/// The two paged sections, in the order their crcs are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagedSection {
    Postings = 0,
    Positions = 1,
}

impl PagedSection {
    pub fn name(self) -> &'static str {
        match self {
            PagedSection::Postings => "postings",
            PagedSection::Positions => "positions",
        }
    }
}

/// Writes the page checksums of `postings` and `positions` (writer side).
pub fn encode_page_checksums(page_len: u32, postings: &[u8], positions: &[u8], out: &mut Vec<u8>) {
    put_u32(out, page_len);
    for section in [postings, positions] {
        for page in section.chunks(page_len as usize) {
            put_u32(out, crc32fast::hash(page));
        }
    }
}

struct Pages {
    section: SectionRef,
    page_len: u64,
    crcs: Vec<u32>,
    /// One bit per page: its crc matched.
    verified: Box<[AtomicU64]>,
}

/// A page whose bytes do not match its crc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageMismatch {
    pub section: PagedSection,
    pub page: u64,
    pub expected: u32,
    pub got: u32,
}

/// The page crcs of an open block, with the pages verified so far.
pub struct PageChecksums {
    sections: [Pages; 2],
}

impl PageChecksums {
    /// From a version 4 block's page checksums section (whose own crc the caller checked).
    pub fn decode(
        bytes: &[u8],
        postings: SectionRef,
        positions: SectionRef,
    ) -> DecodeResult<PageChecksums> {
        let mut r = ByteReader::new(bytes);
        let page_len = r.u32()?;
        if !page_len.is_power_of_two()
            || !(MIN_CHECKSUM_PAGE_LEN..=MAX_CHECKSUM_PAGE_LEN).contains(&page_len)
        {
            return Err(DecodeError::new("bad checksum page length"));
        }
        let mut read = |section: SectionRef| -> DecodeResult<Pages> {
            let count = section.len.div_ceil(u64::from(page_len));
            // Bounded by the section length (checked against the file) over a page of >= 512.
            let mut crcs = Vec::with_capacity(count as usize);
            for _ in 0..count {
                crcs.push(r.u32()?);
            }
            Ok(Pages::new(section, u64::from(page_len), crcs))
        };
        let sections = [read(postings)?, read(positions)?];
        if !r.is_empty() {
            return Err(DecodeError::new("page checksums: trailing bytes"));
        }
        Ok(PageChecksums { sections })
    }

    /// For blocks before version 4: each section is one page with the section's crc.
    pub fn whole_sections(postings: SectionRef, positions: SectionRef) -> PageChecksums {
        let whole =
            |section: SectionRef| Pages::new(section, section.len.max(1), vec![section.crc]);
        PageChecksums {
            sections: [whole(postings), whole(positions)],
        }
    }

    /// Checks the crc of every page that `range` (offsets within the section) touches and has
    /// not been checked yet. `file` is the whole block. The range must lie inside the section
    /// (callers bound it first); a range outside it checks nothing and is the caller's error.
    pub fn verify(
        &self,
        file: &[u8],
        which: PagedSection,
        start: u64,
        end: u64,
    ) -> Result<(), PageMismatch> {
        let pages = &self.sections[which as usize];
        let end = end.min(pages.section.len);
        if start >= end {
            return Ok(());
        }
        for page in start / pages.page_len..=(end - 1) / pages.page_len {
            let (word, bit) = ((page / 64) as usize, 1u64 << (page % 64));
            if pages.verified[word].load(Ordering::Relaxed) & bit != 0 {
                continue;
            }
            let page_start = pages.section.offset + page * pages.page_len;
            let page_end =
                pages.section.offset + ((page + 1) * pages.page_len).min(pages.section.len);
            // In bounds: the section lies inside the file (checked at open).
            let got = crc32fast::hash(&file[page_start as usize..page_end as usize]);
            let expected = pages.crcs[page as usize];
            if got != expected {
                return Err(PageMismatch {
                    section: which,
                    page,
                    expected,
                    got,
                });
            }
            // Two threads may both check a page; both find the same answer.
            pages.verified[word].fetch_or(bit, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl Pages {
    fn new(section: SectionRef, page_len: u64, crcs: Vec<u32>) -> Pages {
        let words = crcs.len().div_ceil(64);
        Pages {
            section,
            page_len,
            crcs,
            verified: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(offset: u64, len: u64, bytes: &[u8]) -> SectionRef {
        SectionRef {
            offset,
            len,
            crc: crc32fast::hash(&bytes[offset as usize..(offset + len) as usize]),
        }
    }

    #[test]
    fn a_flipped_byte_fails_its_page_only() {
        let mut file: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (postings, positions) = (section(10, 2000, &file), section(2010, 2990, &file));
        let mut encoded = Vec::new();
        encode_page_checksums(512, &file[10..2010], &file[2010..5000], &mut encoded);
        let pages = PageChecksums::decode(&encoded, postings, positions).unwrap();
        assert_eq!(pages.verify(&file, PagedSection::Postings, 0, 2000), Ok(()));
        file[2010 + 1500] ^= 1; // positions page 2
        let fresh = PageChecksums::decode(&encoded, postings, positions).unwrap();
        assert_eq!(
            fresh.verify(&file, PagedSection::Positions, 0, 1024),
            Ok(())
        );
        let error = fresh
            .verify(&file, PagedSection::Positions, 1400, 1600)
            .unwrap_err();
        assert_eq!((error.section, error.page), (PagedSection::Positions, 2));
        assert_eq!(
            fresh.verify(&file, PagedSection::Positions, 2048, 2990),
            Ok(())
        );
        // Old blocks: one page per section, the section crc.
        let whole = PageChecksums::whole_sections(postings, positions);
        assert!(whole.verify(&file, PagedSection::Positions, 0, 1).is_err());
        assert_eq!(whole.verify(&file, PagedSection::Postings, 5, 6), Ok(()));
    }

    #[test]
    fn bad_page_checksum_sections_are_rejected() {
        let file = vec![0u8; 100];
        let (postings, positions) = (section(0, 50, &file), section(50, 50, &file));
        let mut encoded = Vec::new();
        encode_page_checksums(512, &file[..50], &file[50..], &mut encoded);
        for (bytes, case) in [
            (&encoded[..encoded.len() - 1], "truncated"),
            (&[encoded.as_slice(), &[0]].concat()[..], "trailing"),
            (
                &[0u8, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..],
                "page length not a power of two",
            ),
            (
                &[0u8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..],
                "page length too small",
            ),
        ] {
            assert!(
                PageChecksums::decode(bytes, postings, positions).is_err(),
                "{case}"
            );
        }
    }
}
