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
//! pass because an earlier query checked it. A guard checks each piece once in its life (one
//! term in one block for one query), so a cursor that reads a whole list checks each piece
//! once, and one that skips checks only the pieces it lands on.
//!
//! **Sub-pages.** A skipping cursor reads a 128-doc block of ~100 bytes; checking the whole
//! 16 KiB page around it made ranked and counted queries 5-24% slower (BENCHMARKS.md, issue
//! 26). So the first read of a page checks it whole, from a private copy, and keeps the crc of
//! each `SUB_PAGE_LEN` piece of that copy (derived from bytes that matched the stored crc:
//! as trustworthy as it); every read then checks only the pieces it touches against those.
//! A byte changed after the first read fails the piece's check; one changed before it fails
//! the page's. 4 bytes of memory per KiB of postings and positions, allocated when the block
//! opens.

use super::manifest::SectionRef;
use crate::codec::{put_u32, ByteReader};
use crate::error::{DecodeError, DecodeResult};
use crate::limits::{MAX_CHECKSUM_PAGE_LEN, MIN_CHECKSUM_PAGE_LEN};
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The piece a read checks at least (or the page, if smaller): a few 128-doc blocks of
/// postings, a doc's positions; small enough that a skipping cursor checks little it does not
/// read, large enough that the table of piece crcs stays at 0.4% of the section.
pub const SUB_PAGE_LEN: u64 = 1024;

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
    /// Bytes of a piece: `SUB_PAGE_LEN`, or the page when smaller (pages are powers of two,
    /// so pieces tile them; the one page of an old block's section is cut at its end).
    sub_len: u64,
    /// The crc of each piece of the section, valid for the pages whose bit in `derived` is
    /// set (stored before the bit, with release ordering).
    sub_crcs: Box<[AtomicU32]>,
    derived: Box<[AtomicU64]>,
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

    fn check(section: PagedSection, page: u64, expected: u32, got: u32) -> Result<(), Self> {
        if got == expected {
            return Ok(());
        }
        Err(PageMismatch {
            section,
            page,
            expected,
            got,
        })
    }
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

    /// Checks the crc of every page that `range` (offsets within the section) touches. `file`
    /// is the whole block. The range must lie inside the section (callers bound it first); a
    /// range outside it checks nothing and is the caller's error. (Readers check through a
    /// `PageGuard`; this is the tests' way in.)
    #[cfg(test)]
    fn verify(
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
        for sub in start / pages.sub_len..=(end - 1) / pages.sub_len {
            pages.verify_sub(file, which, sub)?;
        }
        Ok(())
    }

    /// The bytes of the file (not the section) holding the whole pages of `which` that
    /// `range` (offsets within the section) touches: what a reader of `range` checks.
    pub fn span(&self, which: PagedSection, range: Range<u64>) -> Range<u64> {
        let pages = &self.sections[which as usize];
        let end = range.end.min(pages.section.len);
        let start = range.start.min(end);
        let first = start / pages.page_len * pages.page_len;
        let last = end.div_ceil(pages.page_len) * pages.page_len;
        pages.section.offset + first..pages.section.offset + last.min(pages.section.len)
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
    fn new(section: SectionRef, page_len: u64, crcs: Vec<u32>) -> Pages {
        let sub_len = SUB_PAGE_LEN.min(page_len);
        let subs = section.len.div_ceil(sub_len) as usize;
        Pages {
            section,
            page_len,
            sub_len,
            sub_crcs: (0..subs).map(|_| AtomicU32::new(0)).collect(),
            derived: (0..crcs.len().div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            crcs,
        }
    }

    /// Bytes `range` (within the section) of the file; in bounds: the section lies inside the
    /// file (checked at open) and callers clamp to the section's length.
    fn bytes<'a>(&self, file: &'a [u8], range: Range<u64>) -> &'a [u8] {
        let offset = self.section.offset;
        &file[(offset + range.start) as usize..(offset + range.end) as usize]
    }

    /// Checks piece `sub` against its crc, deriving the crcs of its page's pieces first if no
    /// read has yet.
    fn verify_sub(&self, file: &[u8], which: PagedSection, sub: u64) -> Result<(), PageMismatch> {
        let page = sub * self.sub_len / self.page_len;
        let (word, bit) = ((page / 64) as usize, 1u64 << (page % 64));
        if self.derived[word].load(Ordering::Acquire) & bit == 0 {
            self.derive(file, which, page)?;
        }
        let start = sub * self.sub_len;
        let got =
            crc32fast::hash(self.bytes(file, start..(start + self.sub_len).min(self.section.len)));
        let expected = self.sub_crcs[sub as usize].load(Ordering::Relaxed);
        PageMismatch::check(which, page, expected, got)
    }

    /// Checks page `page` whole, from a copy, and keeps the crcs of its pieces (of the copy,
    /// so of bytes that matched the page's crc).
    #[cold]
    fn derive(&self, file: &[u8], which: PagedSection, page: u64) -> Result<(), PageMismatch> {
        let start = page * self.page_len;
        let end = (start + self.page_len).min(self.section.len);
        let copy = self.bytes(file, start..end).to_vec();
        PageMismatch::check(
            which,
            page,
            self.crcs[page as usize],
            crc32fast::hash(&copy),
        )?;
        let first_sub = start / self.sub_len;
        for (i, piece) in copy.chunks(self.sub_len as usize).enumerate() {
            self.sub_crcs[first_sub as usize + i].store(crc32fast::hash(piece), Ordering::Relaxed);
        }
        // Two readers may derive a page at once: they store the same crcs.
        self.derived[(page / 64) as usize].fetch_or(1 << (page % 64), Ordering::Release);
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
    /// Pieces (`Pages::sub_len`) checked by this guard.
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
        let (first, last) = (start / self.pages.sub_len, (end - 1) / self.pages.sub_len);
        if self.verified.start <= first && last < self.verified.end {
            return Ok(());
        }
        self.check_slow(first, last)
    }

    #[cold]
    fn check_slow(&mut self, first: u64, last: u64) -> Result<(), PageMismatch> {
        for sub in first..=last {
            if !self.verified.contains(&sub) {
                self.pages.verify_sub(self.file, self.which, sub)?;
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

    /// Pages larger than a piece: the first read checks its page whole and derives the pieces'
    /// crcs; later reads check only their pieces, and a byte changed after the first read
    /// fails the read of its piece (and only that piece).
    #[test]
    fn reads_after_the_first_check_their_pieces_only() {
        let mut file: Vec<u8> = (0..9000u32).map(|i| (i * 31 % 253) as u8).collect();
        let (postings, positions) = (section(0, 8192, &file), section(8192, 808, &file));
        let mut encoded = Vec::new();
        encode_page_checksums(4096, &file[..8192], &file[8192..], &mut encoded);
        let pages = PageChecksums::decode(&encoded, postings, positions).unwrap();
        let which = PagedSection::Postings;
        // Before any read, a flip in page 1 fails the page's own check.
        file[5000] ^= 1;
        let error = pages.verify(&file, which, 4200, 4300).unwrap_err();
        assert_eq!(
            (error.page, error.expected),
            (
                1,
                crc32fast::hash(&{
                    let mut page = file[4096..8192].to_vec();
                    page[5000 - 4096] ^= 1;
                    page
                })
            )
        );
        file[5000] ^= 1;
        assert_eq!(pages.verify(&file, which, 4200, 4300), Ok(()));
        // Page 1's pieces are derived now: a flip in its third piece fails reads of that piece.
        file[6200] ^= 0x10;
        assert_eq!(pages.verify(&file, which, 4096, 6143), Ok(()));
        let mut guard = pages.guard(&file, which);
        assert_eq!(guard.check(7200, 7300), Ok(()));
        assert_eq!(guard.verified, 7..8, "one piece of 1 KiB, not the page");
        assert_eq!(guard.check(6144, 6145).unwrap_err().page, 1);
        // Positions: one short page, one piece per KiB up to its end.
        assert_eq!(pages.verify(&file, PagedSection::Positions, 0, 808), Ok(()));
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
