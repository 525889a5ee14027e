//! Page checksums: the postings and positions sections are read piecemeal (one term's
//! postings, one doc's positions), so a query checks the crc of each page it reads instead of
//! the crc of a section that may be most of the file.
//!
//! ```text
//! page_checksums := page_len:u32 crc32{ceil(postings.len / page_len)}
//!                   crc32{ceil(positions.len / page_len)}
//! ```
//! Page `i` of a section is its bytes `[i * page_len, min((i + 1) * page_len, len))`.
//! Blocks before version 4 have no such section: each of the two sections is then one page
//! whose crc is the section's own.
//!
//! Invariant: a byte of postings or positions reaches a decoder's answer only after the crc of
//! its page matched, checked by the reader that reads it (`PageGuard`, one per postings
//! cursor). Nothing is remembered across readers: the bytes are a mapped file, and a file
//! that changes under a running server (issue 26: a byte flipped in a block already open gave
//! a different aggregation with no warning) must fail the next query that reads the page, not
//! pass because an earlier query checked it. A guard checks each page once in its life (one
//! term in one block for one query), so a cursor that reads a whole list checks each page
//! once, and one that skips checks only the pages it lands on.

use super::manifest::SectionRef;
use crate::codec::{put_u32, ByteReader};
use crate::error::{DecodeError, DecodeResult};
use crate::limits::{MAX_CHECKSUM_PAGE_LEN, MIN_CHECKSUM_PAGE_LEN};
use std::ops::Range;

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
}

/// A page whose bytes do not match its crc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageMismatch {
    pub section: PagedSection,
    pub page: u64,
    pub expected: u32,
    pub got: u32,
}

impl PageMismatch {
    /// What a decoder reports when a page it was about to read is not what was written.
    pub const DECODE_ERROR: DecodeError = DecodeError::new("page checksum mismatch");
}

/// The page crcs of an open block.
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
            Ok(Pages {
                section,
                page_len: u64::from(page_len),
                crcs,
            })
        };
        let sections = [read(postings)?, read(positions)?];
        if !r.is_empty() {
            return Err(DecodeError::new("page checksums: trailing bytes"));
        }
        Ok(PageChecksums { sections })
    }

    /// For blocks before version 4: each section is one page with the section's crc.
    pub fn whole_sections(postings: SectionRef, positions: SectionRef) -> PageChecksums {
        let whole = |section: SectionRef| Pages {
            section,
            page_len: section.len.max(1),
            crcs: vec![section.crc],
        };
        PageChecksums {
            sections: [whole(postings), whole(positions)],
        }
    }

    /// Checks the crc of every page that `range` (offsets within the section) touches. `file`
    /// is the whole block. The range must lie inside the section (callers bound it first); a
    /// range outside it checks nothing and is the caller's error.
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
            pages.verify_page(file, which, page)?;
        }
        Ok(())
    }

    /// A guard for one reader of `which`, whose bytes are `file[section]`.
    pub fn guard<'a>(&'a self, file: &'a [u8], which: PagedSection) -> PageGuard<'a> {
        PageGuard {
            pages: &self.sections[which as usize],
            which,
            file,
            verified: 0..0,
        }
    }
}

impl Pages {
    fn verify_page(&self, file: &[u8], which: PagedSection, page: u64) -> Result<(), PageMismatch> {
        let page_start = self.section.offset + page * self.page_len;
        let page_end = self.section.offset + ((page + 1) * self.page_len).min(self.section.len);
        // In bounds: the section lies inside the file (checked at open) and `page` is one of
        // its pages (callers clamp to the section's length).
        let got = crc32fast::hash(&file[page_start as usize..page_end as usize]);
        let expected = self.crcs[page as usize];
        if got != expected {
            return Err(PageMismatch {
                section: which,
                page,
                expected,
                got,
            });
        }
        Ok(())
    }
}

/// Checks the pages one reader (a postings cursor) reads, each at most once in the guard's
/// life. Readers move forward, so the pages checked are kept as one range: a read inside it
/// costs two comparisons, and a read past it checks the new pages and extends the range (or
/// starts a new one after a jump).
pub struct PageGuard<'a> {
    pages: &'a Pages,
    which: PagedSection,
    file: &'a [u8],
    /// Pages checked by this guard.
    verified: Range<u64>,
}

impl PageGuard<'_> {
    /// Checks the pages of bytes `start..end` of the section (not yet checked by this guard).
    #[inline]
    pub fn check(&mut self, start: u64, end: u64) -> Result<(), PageMismatch> {
        let end = end.min(self.pages.section.len);
        if start >= end {
            return Ok(());
        }
        let (first, last) = (start / self.pages.page_len, (end - 1) / self.pages.page_len);
        if self.verified.start <= first && last < self.verified.end {
            return Ok(());
        }
        self.check_slow(first, last)
    }

    #[cold]
    fn check_slow(&mut self, first: u64, last: u64) -> Result<(), PageMismatch> {
        for page in first..=last {
            if !self.verified.contains(&page) {
                self.pages.verify_page(self.file, self.which, page)?;
            }
        }
        let adjoins = first <= self.verified.end && self.verified.start <= last + 1;
        self.verified = if adjoins && !self.verified.is_empty() {
            self.verified.start.min(first)..self.verified.end.max(last + 1)
        } else {
            first..last + 1
        };
        Ok(())
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
    fn a_page_that_changes_after_a_check_fails_the_next_reader() {
        let mut file: Vec<u8> = (0..5000u32).map(|i| (i * 13 % 251) as u8).collect();
        let (postings, positions) = (section(0, 3000, &file), section(3000, 2000, &file));
        let mut encoded = Vec::new();
        encode_page_checksums(512, &file[..3000], &file[3000..], &mut encoded);
        let pages = PageChecksums::decode(&encoded, postings, positions).unwrap();
        let mut guard = pages.guard(&file, PagedSection::Postings);
        assert_eq!(guard.check(100, 700), Ok(()));
        assert_eq!(guard.verified, 0..2);
        assert_eq!(guard.check(2100, 2200), Ok(()));
        assert_eq!(guard.verified, 4..5, "a jump starts a new range");
        assert_eq!(guard.check(2600, 2700), Ok(()));
        assert_eq!(guard.verified, 4..6, "an adjoining page extends it");
        // The mapped bytes change under the open block (issue 26): what one reader checked
        // proves nothing to the next.
        file[1030] ^= 0x40;
        let mut guard = pages.guard(&file, PagedSection::Postings);
        assert_eq!(guard.check(0, 512), Ok(()));
        let error = guard.check(1000, 1100).unwrap_err();
        assert_eq!((error.section, error.page), (PagedSection::Postings, 2));
        assert!(pages
            .verify(&file, PagedSection::Postings, 1024, 1025)
            .is_err());
        assert_eq!(
            pages.guard(&file, PagedSection::Positions).check(0, 2000),
            Ok(())
        );
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
