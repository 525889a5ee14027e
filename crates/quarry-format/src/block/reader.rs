use super::manifest::{ColumnMeta, FieldMeta, Manifest, SectionRef};
use super::pages::{PageChecksums, PageMismatch, PagedSection};
use super::stored;
use super::TIME_FIELD;
use crate::column::{ChunkCache, ChunkDictionary, ColumnReader, DecodedChunk, Templates};
use crate::docvalues::DocValues;
use crate::error::{DecodeError, FormatError, Result};
use crate::fieldnorm;
use crate::limits::{
    BLOCK_MAGIC, FOOTER_LEN, FORMAT_VERSION, MAX_MANIFEST_LEN, MIN_FORMAT_VERSION,
    TIME_INDEX_INTERVAL,
};
use crate::packed::{packed4x_get, prefetch};
use crate::postings::{
    unions, CursorGuards, PostingsCursor, PostingsLayout, PostingsWriter, TermInfo,
};
use crate::termdict::{term_infos_fit, term_key, TermInfoCursor, TermKind};
use crate::value::{ColumnType, Value};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The first format version whose norms are packed (`fieldnorm::encode_packed`).
pub const PACKED_NORMS_VERSION: u32 = 6;

/// The first format version whose resident sections are stored compressed (`stored`).
pub const STORED_SECTIONS_VERSION: u32 = 9;

/// One group entry of the time offsets section (FORMAT.md): offset, bits, pad, divisor.
pub const TIME_GROUP_ENTRY_LEN: usize = 16;

/// Where an open block's bytes come from: a mapped file (`BlockReader::open`), a buffer in
/// memory, or an object in a remote store whose ranges are fetched into a local copy as they
/// are needed. Immutable while any reader holds them.
///
/// The reader asks for every range before it reads it (`fetch`): the footer, the manifest and
/// the sections kept resident when the block opens (one batch), a term's postings and
/// positions when a cursor is made, a column chunk before it is decoded. A source whose bytes
/// are all at hand (a file, a buffer) has nothing to fetch. A range read without being
/// fetched would read as whatever the local copy holds there; every such read is checked
/// against its crc, so that is an error, never a different answer.
pub trait BlockSource: Send + Sync {
    /// The whole block.
    fn bytes(&self) -> &[u8];
    /// Makes `ranges` of `bytes()` hold the block's bytes, fetching what is missing (as one
    /// batch of parallel requests where the source is remote).
    fn fetch(&self, ranges: &[Range<u64>]) -> std::io::Result<()> {
        let _ = ranges;
        Ok(())
    }

    /// Whether `fetch` may have to ask a remote store (worth batching reads for).
    fn is_remote(&self) -> bool {
        false
    }

    /// Whether some of `ranges` is not at hand yet (`fetch` would have to ask for it).
    fn is_missing(&self, ranges: &[Range<u64>]) -> bool {
        let _ = ranges;
        false
    }

    /// Drops a remote block's local copy, so that every range is fetched again: a checksum
    /// failed in bytes read from it, and the copy, not the block, may be what is damaged.
    /// False when there is no such copy (the bytes are the block's own).
    fn discard_copy(&self) -> bool {
        false
    }
}

impl<T: AsRef<[u8]> + Send + Sync> BlockSource for T {
    fn bytes(&self) -> &[u8] {
        self.as_ref()
    }
}

/// A block's bytes, shared by the reader and whatever else holds them.
pub type BlockBytes = Arc<dyn BlockSource>;

struct Mapped(memmap2::Mmap);

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// An open block. Opening checks the footer, the manifest and the sections read at random
/// (term dictionary and infos, time index and offsets, column directories, doc values, norms)
/// and keeps private copies of them, checked after copying (`Resident`); the rest (column
/// chunks, postings, positions) is read from the block's bytes on demand, each piece checked
/// against its crc by every read. So a byte that changes in a mapped file under an open
/// reader is either never read again or fails the read that reads it (issue 26). Shareable
/// across threads.
pub struct BlockReader {
    /// The file the bytes came from, or a name for a block in memory; errors carry it.
    path: PathBuf,
    bytes: BlockBytes,
    manifest: Manifest,
    terms: fst::Map<Vec<u8>>,
    resident: Resident,
    /// The hottest resident sections, found once: tails and histograms read them per hit
    /// and per bucket (a lookup each time cost a tail 15%, bench/ab/ab_logs.py).
    time_index: Box<[u8]>,
    time_offsets: Option<Box<[u8]>>,
    term_infos: Box<[u8]>,
    pages: PageChecksums,
    /// The format version the block was written in (footer).
    version: u32,
    /// The block's id in its catalog, when the reader was opened for one (`with_id`): the
    /// block's identity for searches (which orders equal times by it) and for damage reports.
    id: Option<u64>,
    /// Unique among the readers this process opened: names the block in a `ChunkCache`, so
    /// a cached chunk is never served for another block (or a later block with the same path).
    uid: u64,
    /// Each field's norms, unpacked on first use (format version 6 on).
    unpacked_norms: Box<[OnceLock<Box<[u8]>>]>,
    /// Each column's dictionaries, decoded at open, by field ordinal then column index as in
    /// the manifest.
    dictionaries: Box<[Box<[ColumnDictionaries]>]>,
    /// A remote block's doc values and norms (`Manifest::on_demand_sections`), by (offset,
    /// length): fetched, copied and checked when a query first needs one. Empty for a
    /// local block, which holds them resident from the start.
    on_demand: Box<[(SectionKey, OnDemand)]>,
    /// The postings of terms that are unions of templates (version 11), rebuilt when a query
    /// first reads each and kept while the reader lives, by the union's offset.
    unions: elsa::sync::FrozenMap<u64, Box<UnionPostings>>,
}

/// Sorts (doc, tf) pairs of docs below `doc_count` by doc: through a bitset when the
/// frequencies are all one value and the pairs many (a union of many templates: thousands of
/// docs, sorted in a pass over `doc_count / 64` words), else by comparison. A doc given twice
/// is kept twice (the caller's check finds it).
pub(super) fn sort_docs(entries: &mut [(u32, u32)], doc_count: u32) {
    let tf = entries.first().map_or(1, |&(_, tf)| tf);
    let one_tf = entries.iter().all(|&(_, t)| t == tf);
    if !one_tf || entries.len() < (doc_count / 64) as usize {
        entries.sort_unstable();
        return;
    }
    let mut words = vec![0u64; doc_count.div_ceil(64) as usize];
    let mut repeated = false;
    for &(doc, _) in entries.iter() {
        let (word, bit) = ((doc / 64) as usize, doc % 64);
        match words.get_mut(word) {
            Some(w) => {
                repeated |= *w & (1 << bit) != 0;
                *w |= 1 << bit;
            }
            None => repeated = true,
        }
    }
    if repeated {
        entries.sort_unstable();
        return;
    }
    let mut at = 0;
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            entries[at] = ((w as u32) * 64 + bits.trailing_zeros(), tf);
            at += 1;
            bits &= bits - 1;
        }
    }
}

/// A union of templates' postings, rebuilt (`BlockReader::union_postings`): the term's
/// info and postings as `PostingsWriter` lays them out.
struct UnionPostings {
    info: TermInfo,
    postings: Box<[u8]>,
}

/// A section a remote block reads on first use: its checked copy once read.
type OnDemand = OnceLock<Box<[u8]>>;

/// Source of `BlockReader::uid`.
static NEXT_READER_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl std::fmt::Debug for BlockReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockReader")
            .field("path", &self.path)
            .finish()
    }
}

impl BlockReader {
    pub fn open(path: &Path) -> Result<BlockReader> {
        let io = |source| FormatError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: block files are immutable once renamed into place; nobody writes them while
        // they are mapped (merge writes new files and deletes old ones only when unused).
        let mmap = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Self::from_bytes(path, Arc::new(Mapped(mmap)))
    }

    /// Opens a block from its bytes; `path` names it in errors (the file it came from, or any
    /// name for a block in memory).
    pub fn from_bytes(path: &Path, block_bytes: BlockBytes) -> Result<BlockReader> {
        let corrupt = |part: &str, reason: &'static str| FormatError::Corrupt {
            path: path.to_path_buf(),
            part: part.to_owned(),
            reason,
        };
        let source: &dyn BlockSource = &*block_bytes;
        let bytes: &[u8] = source.bytes();
        let len = bytes.len() as u64;
        let fetch = |ranges: &[Range<u64>]| {
            source.fetch(ranges).map_err(|source| FormatError::Io {
                path: path.to_path_buf(),
                source,
            })
        };
        if bytes.len() >= BLOCK_MAGIC.len() + FOOTER_LEN {
            fetch(&[0..BLOCK_MAGIC.len() as u64, len - FOOTER_LEN as u64..len])?;
        }
        if bytes.len() < BLOCK_MAGIC.len() + FOOTER_LEN || &bytes[..8] != BLOCK_MAGIC {
            return Err(FormatError::BadMagic {
                path: path.to_path_buf(),
            });
        }
        let footer = &bytes[bytes.len() - FOOTER_LEN..];
        if &footer[24..32] != BLOCK_MAGIC {
            return Err(FormatError::BadMagic {
                path: path.to_path_buf(),
            });
        }
        let mut r = crate::codec::ByteReader::new(footer);
        let manifest_offset = r.u64().map_err(|e| e.in_file(path, "footer"))?;
        let manifest_len = r.u64().map_err(|e| e.in_file(path, "footer"))?;
        let version = r.u32().map_err(|e| e.in_file(path, "footer"))?;
        let manifest_crc = r.u32().map_err(|e| e.in_file(path, "footer"))?;
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(FormatError::Version {
                path: path.to_path_buf(),
                expected: FORMAT_VERSION,
                got: version,
            });
        }
        if manifest_len > MAX_MANIFEST_LEN {
            return Err(FormatError::LimitExceeded {
                path: path.to_path_buf(),
                what: "manifest length",
                got: manifest_len,
                limit: MAX_MANIFEST_LEN,
            });
        }
        let body_len = (bytes.len() - FOOTER_LEN) as u64;
        let manifest_ref = SectionRef {
            offset: manifest_offset,
            len: manifest_len,
            crc: manifest_crc,
        };
        if manifest_ref.end().is_some_and(|end| end <= body_len) {
            fetch(std::slice::from_ref(
                &(manifest_ref.offset..manifest_ref.offset + manifest_len),
            ))?;
        }
        let manifest_bytes = section_bytes(bytes, manifest_ref, body_len)
            .ok_or_else(|| corrupt("footer", "manifest outside file"))?;
        // The manifest ends where the footer starts: bytes between them (a file with something
        // appended after a valid footer) would be under no checksum.
        if manifest_ref.end() != Some(body_len) {
            return Err(corrupt("footer", "manifest does not end at the footer"));
        }
        let got = crc32fast::hash(manifest_bytes);
        if got != manifest_crc {
            return Err(FormatError::ChecksumMismatch {
                path: path.to_path_buf(),
                part: "manifest".into(),
                expected: manifest_crc,
                got,
            });
        }
        let manifest =
            Manifest::decode(manifest_bytes, version).map_err(|e| e.in_file(path, "manifest"))?;
        for (name, section) in manifest.sections() {
            if section_bytes(bytes, section, manifest_offset).is_none() {
                return Err(corrupt(&name, "section outside file"));
            }
        }
        // Everything opening reads, as one batch (a remote block's second round trip at most;
        // the writer puts these sections together before the manifest). A remote block leaves
        // its doc values and norms for the queries that need them.
        let remote = block_bytes.is_remote();
        let opened: Vec<SectionRef> = if remote {
            manifest.planning_sections().collect()
        } else {
            manifest.resident_sections().collect()
        };
        let resident_ranges: Vec<Range<u64>> = opened
            .iter()
            .map(|section| section.offset..section.offset + section.len)
            .collect();
        fetch(&resident_ranges)?;
        let mut on_demand: Vec<(SectionKey, OnDemand)> = if remote {
            manifest
                .on_demand_sections()
                .filter(|section| section.len > 0)
                .map(|section| ((section.offset, section.len), OnceLock::new()))
                .collect()
        } else {
            Vec::new()
        };
        on_demand.sort_by_key(|(key, _)| *key);
        on_demand.dedup_by_key(|(key, _)| *key);
        // Sections read at random are copied and checked now (doc values and norms in the loop
        // below, where their shapes are checked too; the others after it); the FST in
        // particular must not be walked if corrupt.
        let mut resident = Resident {
            expand: version >= STORED_SECTIONS_VERSION,
            ..Resident::default()
        };
        let mut eager = vec![
            ("time index".to_owned(), manifest.time_index),
            ("term dictionary".to_owned(), manifest.term_fst),
            ("term infos".to_owned(), manifest.term_infos),
        ];
        if let Some(offsets) = manifest.time_offsets {
            eager.push(("time offsets".to_owned(), offsets));
        }
        for field in &manifest.fields {
            for column in &field.columns {
                eager.push((format!("column {} directory", field.name), column.directory));
                if let (Some(section), false) = (column.doc_values, remote) {
                    let name = doc_values_name(field, column);
                    let values = resident.copy_checked(path, bytes, &name, section)?;
                    check_doc_values(path, &name, values, manifest.doc_count)?;
                }
            }
            if let (Some(text), false) = (&field.text, remote) {
                // In bounds: every section was checked against the file length above.
                let name = norms_name(field);
                let norms = resident.copy_checked(path, bytes, &name, text.norms)?;
                check_norms(path, &name, norms, text.norms, version, manifest.doc_count)?;
            }
        }
        for (name, section) in eager {
            resident.copy_checked(path, bytes, &name, section)?;
        }
        // Lengths are those of the copies: a version 9 section is stored compressed.
        let resident_len = |section| resident.get(section).map_or(0, |copy| copy.len() as u64);
        if let Some(offsets) = manifest.time_offsets {
            let groups = u64::from(manifest.doc_count.div_ceil(TIME_INDEX_INTERVAL));
            if resident_len(offsets) < groups * TIME_GROUP_ENTRY_LEN as u64 {
                return Err(corrupt("time offsets", "shorter than its group entries"));
            }
        }
        let expected_index_len = u64::from(manifest.doc_count.div_ceil(TIME_INDEX_INTERVAL)) * 8;
        if resident_len(manifest.time_index) != expected_index_len {
            return Err(corrupt("time index", "length does not match doc count"));
        }
        if !term_infos_fit(
            version,
            resident_len(manifest.term_infos),
            manifest.term_count,
        ) {
            return Err(corrupt("term infos", "length does not match term count"));
        }
        // A column's dictionaries are decoded now, checked: a templated chunk is rebuilt
        // from its templates, a chunk of a column with a zstd dictionary (version 10) is
        // decompressed with it. The decoded forms are what is kept.
        let mut dictionaries = Vec::with_capacity(manifest.fields.len());
        for field in &manifest.fields {
            let mut of_field = Vec::with_capacity(field.columns.len());
            for column in &field.columns {
                let mut decoded = ColumnDictionaries::default();
                if let Some(section) = column.templates {
                    let name = format!("column {}:{} templates", field.name, column.ty.name());
                    let copy = resident.copy_checked(path, bytes, &name, section)?;
                    let templates =
                        Templates::decode(copy).map_err(|e| e.in_file(path, name.as_str()))?;
                    resident.take(section);
                    resident.bytes += templates.heap_bytes();
                    decoded.templates = Some(templates);
                }
                if let Some(section) = column.dictionary {
                    let name = format!("column {}:{} dictionary", field.name, column.ty.name());
                    let copy = resident.copy_checked(path, bytes, &name, section)?;
                    let chunks = ChunkDictionary::decode(copy)
                        .map_err(|e| e.in_file(path, name.as_str()))?;
                    resident.take(section);
                    resident.bytes += chunks.heap_bytes();
                    decoded.chunks = Some(chunks);
                }
                of_field.push(decoded);
            }
            dictionaries.push(of_field.into_boxed_slice());
        }
        let pages = match manifest.page_checksums {
            Some(section) => {
                let page_bytes = resident.copy_checked(path, bytes, "page checksums", section)?;
                let pages =
                    PageChecksums::decode(page_bytes, manifest.postings, manifest.positions)
                        .map_err(|e| e.in_file(path, "page checksums"))?;
                // Decoded: the copy is not needed again.
                resident.take(section);
                pages
            }
            None => PageChecksums::whole_sections(manifest.postings, manifest.positions),
        };
        let fst_bytes = resident
            .take(manifest.term_fst)
            .map(Vec::from)
            .unwrap_or_default();
        let terms =
            fst::Map::new(fst_bytes).map_err(|_| corrupt("term dictionary", "not an fst"))?;
        // The fst crate may panic walking bytes that are not a valid FST ("the caller is
        // responsible for guaranteeing that the given bytes refer to a valid FST"), and the
        // section crc only says the bytes are those the writer wrote. The FST's own checksum
        // (crc32c, kept by the fst builder since fst 0.4) says they are those the builder
        // made, so a writer that damaged them after building is an error here, not a panic
        // in a later walk (found by the `block_resealed` fuzz target).
        terms
            .as_fst()
            .verify()
            .map_err(|_| corrupt("term dictionary", "fst checksum mismatch"))?;
        // Ordinals count the keys, so the manifest's term count is the FST's key count (a
        // grouped term-info table, version 5, does not give the count by its length alone).
        if terms.len() as u64 != manifest.term_count {
            return Err(corrupt(
                "term dictionary",
                "key count does not match the term count",
            ));
        }
        let field_count = manifest.fields.len();
        let time_index = resident.take(manifest.time_index).unwrap_or_default();
        let time_offsets = manifest
            .time_offsets
            .map(|section| resident.take(section).unwrap_or_default());
        let term_infos = resident.take(manifest.term_infos).unwrap_or_default();
        let reader = BlockReader {
            path: path.to_path_buf(),
            bytes: block_bytes,
            manifest,
            terms,
            resident,
            time_index,
            time_offsets,
            term_infos,
            pages,
            version,
            id: None,
            uid: NEXT_READER_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            unpacked_norms: (0..field_count).map(|_| OnceLock::new()).collect(),
            dictionaries: dictionaries.into_boxed_slice(),
            on_demand: on_demand.into_boxed_slice(),
            unions: elsa::sync::FrozenMap::new(),
        };
        if reader.time_column().is_none() {
            return Err(corrupt("manifest", "no _time column"));
        }
        Ok(reader)
    }

    /// The same reader, as block `id` of its catalog (block stores and a server's memory
    /// blocks set it).
    pub fn with_id(mut self, id: u64) -> BlockReader {
        self.id = Some(id);
        self
    }

    /// The block's id in its catalog, if it was opened as one.
    pub fn id(&self) -> Option<u64> {
        self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Unique among the readers this process opened, for caches of what was read from it.
    pub fn uid(&self) -> u64 {
        self.uid
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn doc_count(&self) -> u32 {
        self.manifest.doc_count
    }

    /// The format version the block was written in (FORMAT.md, "Versions").
    pub fn format_version(&self) -> u32 {
        self.version
    }

    pub fn file_len(&self) -> u64 {
        self.file().len() as u64
    }

    fn file(&self) -> &[u8] {
        self.bytes.bytes()
    }

    /// Fetches `ranges` of the block from its source (nothing to do for a file or a buffer).
    fn fetch(&self, ranges: &[Range<u64>]) -> Result<()> {
        self.bytes.fetch(ranges).map_err(|source| FormatError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Whether the block's bytes come from a remote store (`BlockSource::is_remote`).
    pub fn is_remote(&self) -> bool {
        self.bytes.is_remote()
    }

    /// The byte ranges cursors over `terms` read (with positions where paired with true): a
    /// query asks for all its terms' bytes as one batch (`prefetch`) before its cursors read
    /// them, so a remote block costs one round trip for them instead of one per term.
    pub fn terms_ranges<'i>(
        &self,
        terms: impl IntoIterator<Item = (&'i TermInfo, bool)>,
    ) -> Vec<Range<u64>> {
        let mut ranges = Vec::new();
        for (info, positions) in terms {
            self.term_ranges(info, positions, &mut ranges);
        }
        ranges
    }

    /// Drops a remote block's local copy (`BlockSource::discard_copy`); false for a local
    /// block.
    pub fn discard_local_copy(&self) -> bool {
        self.bytes.discard_copy()
    }

    /// Whether some of `ranges` must still be fetched from the block's store.
    pub fn is_missing(&self, ranges: &[Range<u64>]) -> bool {
        self.bytes.is_missing(ranges)
    }

    /// Fetches `ranges` of the block (one batch).
    pub fn prefetch(&self, ranges: &[Range<u64>]) -> Result<()> {
        self.fetch(ranges)
    }

    /// The byte ranges a cursor over `info` reads, widened to whole checksum pages (a
    /// cursor's first read of a page checks the page whole).
    fn term_ranges(&self, info: &TermInfo, positions: bool, out: &mut Vec<Range<u64>>) {
        if info.postings_len > 0 {
            // Saturating: a damaged term info's range is refused by the cursor, not here.
            let start = info.postings_offset;
            let end = start.saturating_add(u64::from(info.postings_len));
            out.push(self.pages.span(PagedSection::Postings, start..end));
        }
        if positions && info.positions_len > 0 {
            let start = info.positions_offset;
            let end = start.saturating_add(info.positions_len);
            out.push(self.pages.span(PagedSection::Positions, start..end));
        }
    }

    /// The ordinal of a field by name (fields are sorted by name).
    pub fn field_ordinal(&self, name: &str) -> Option<u16> {
        self.manifest
            .fields
            .binary_search_by(|f| f.name.as_str().cmp(name))
            .ok()
            .map(|i| i as u16)
    }

    pub fn corrupt(&self, part: impl Into<String>, error: DecodeError) -> FormatError {
        error.in_file(&self.path, part)
    }

    /// A term key as a person reads it: `field:term` (the term's bytes lossily as UTF-8, an
    /// exact or numeric term marked).
    fn describe_key(&self, key: &[u8]) -> String {
        let Some((&[high, low, kind], term)) = key.split_first_chunk::<3>() else {
            return format!("{key:?}");
        };
        let field = self
            .manifest
            .fields
            .get(usize::from(u16::from_be_bytes([high, low])))
            .map_or("?", |f| f.name.as_str());
        match TermKind::from_u8(kind) {
            Some(TermKind::Token) => format!("{field}:{}", String::from_utf8_lossy(term)),
            Some(TermKind::Exact) => format!("{field}:={:?}", String::from_utf8_lossy(term)),
            _ => format!("{field}, a {} term of kind {kind}", term.len()),
        }
    }

    /// A doc values or norms section (`Manifest::on_demand_sections`): its private copy,
    /// checked at open, or for a remote block fetched, copied and checked (`check`: its
    /// shape) the first time it is asked for. A failed fetch or check is this call's error;
    /// the next call tries again.
    fn on_demand_section(
        &self,
        section: SectionRef,
        name: impl FnOnce() -> String,
        check: impl FnOnce(&Path, &str, &[u8]) -> Result<()>,
    ) -> Result<&[u8]> {
        let key = (section.offset, section.len);
        let Ok(at) = self.on_demand.binary_search_by_key(&key, |(key, _)| *key) else {
            return Ok(self.section(section));
        };
        let slot = &self.on_demand[at].1;
        if let Some(bytes) = slot.get() {
            return Ok(bytes);
        }
        let name = name();
        self.fetch(std::slice::from_ref(
            &(section.offset..section.offset + section.len),
        ))?;
        // In bounds: every section was checked against the file length at open.
        let expand = self.version >= STORED_SECTIONS_VERSION;
        let copy = checked_copy(&self.path, self.file(), &name, section, expand)?;
        check(&self.path, &name, &copy)?;
        // Another thread may have set it meanwhile, with the same bytes.
        let _ = slot.set(copy);
        Ok(slot.get().expect("set above"))
    }

    /// A section read at random: its private copy, checked at open.
    fn section(&self, section: SectionRef) -> &[u8] {
        match self.resident.get(section) {
            Some(bytes) => bytes,
            // Every section this is asked for was copied at open; an empty slice (never a
            // read of unchecked bytes) if a caller asked for another.
            None => {
                debug_assert!(section.len == 0, "section not held resident");
                &[]
            }
        }
    }

    /// A section read from the block's bytes, each read checked by its reader: postings and
    /// positions by their page guards, column data by each chunk's crc.
    fn mapped(&self, section: SectionRef) -> &[u8] {
        // In bounds: checked for every section at open.
        &self.file()[section.offset as usize..(section.offset + section.len) as usize]
    }

    /// Bytes held in private copies of the block's sections (what an open block costs in
    /// memory beyond its mapped file).
    pub fn resident_bytes(&self) -> usize {
        self.resident.bytes
            + self
                .on_demand
                .iter()
                .filter_map(|(_, slot)| slot.get())
                .map(|bytes| bytes.len())
                .sum::<usize>()
            + self.terms.as_fst().as_bytes().len()
            + self.time_index.len()
            + self.time_offsets.as_ref().map_or(0, |t| t.len())
            + self.term_infos.len()
    }

    pub fn term_dictionary(&self) -> &fst::Map<Vec<u8>> {
        &self.terms
    }

    pub fn term_info_by_ordinal(&self, ordinal: u64) -> Result<TermInfo> {
        self.term_infos().get(ordinal)
    }

    /// Term infos by ordinal, cheapest when read in increasing order (a walk of the
    /// dictionary, a merge, an expansion of a pattern).
    pub fn term_infos(&self) -> TermInfos<'_> {
        TermInfos {
            block: self,
            cursor: TermInfoCursor::new(
                &self.term_infos,
                self.format_version(),
                self.manifest.term_count,
            ),
        }
    }

    pub fn term_info(&self, field: u16, kind: TermKind, term: &[u8]) -> Result<Option<TermInfo>> {
        let mut key = Vec::with_capacity(term.len() + 3);
        term_key(&mut key, field, kind, term);
        match self.terms.get(&key) {
            None => Ok(None),
            Some(ordinal) => self.term_info_by_ordinal(ordinal).map(Some),
        }
    }

    /// Every term of `kind` in `field` whose bytes lie in `lo..=hi`, in key order.
    pub fn term_range(
        &self,
        field: u16,
        kind: TermKind,
        lo: &[u8],
        hi: &[u8],
    ) -> Result<Vec<TermInfo>> {
        use fst::IntoStreamer;
        let (mut lo_key, mut hi_key) = (Vec::new(), Vec::new());
        term_key(&mut lo_key, field, kind, lo);
        term_key(&mut hi_key, field, kind, hi);
        self.infos_of(self.terms.range().ge(&lo_key).le(&hi_key).into_stream())
    }

    /// Every term of `kind` in `field`, in key order.
    pub fn field_terms(&self, field: u16, kind: TermKind) -> Result<Vec<TermInfo>> {
        use fst::IntoStreamer;
        let (start, end) = kind_key_range(field, kind);
        self.infos_of(self.terms.range().ge(&start).lt(&end).into_stream())
    }

    /// The exact terms of `field` that spell an integer past i64::MAX, with their values:
    /// such a value (an `unsigned_long`) also has an f64 term, which its neighbours within
    /// the f64 spacing share, so only these tell them apart.
    pub fn wide_integer_terms(&self, field: u16) -> Result<Vec<(u64, TermInfo)>> {
        use fst::{IntoStreamer, Streamer};
        // 2^63 has 19 digits and u64::MAX 20: two stretches of the (byte-ordered) dictionary.
        let stretches: [(&[u8], &[u8]); 2] = [
            (b"9223372036854775808", b"9999999999999999999"),
            (b"10000000000000000000", b"18446744073709551615"),
        ];
        let (mut lo_key, mut hi_key) = (Vec::new(), Vec::new());
        let prefix_len = {
            term_key(&mut lo_key, field, TermKind::Exact, b"");
            lo_key.len()
        };
        let mut found = Vec::new();
        let mut term_infos = self.term_infos();
        for (lo, hi) in stretches {
            term_key(&mut lo_key, field, TermKind::Exact, lo);
            term_key(&mut hi_key, field, TermKind::Exact, hi);
            let mut stream = self.terms.range().ge(&lo_key).le(&hi_key).into_stream();
            while let Some((key, ordinal)) = stream.next() {
                let digits = &key[prefix_len..];
                if digits.len() != lo.len() || !digits.iter().all(u8::is_ascii_digit) {
                    continue;
                }
                let value = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|t| t.parse::<u64>().ok());
                if let Some(value) = value.filter(|&v| v > i64::MAX as u64) {
                    found.push((value, term_infos.get(ordinal)?));
                }
            }
        }
        Ok(found)
    }

    /// The term infos of the dictionary entries `stream` yields, in its order.
    fn infos_of(
        &self,
        mut stream: fst::map::Stream<'_, fst::automaton::AlwaysMatch>,
    ) -> Result<Vec<TermInfo>> {
        use fst::Streamer;
        let mut infos = Vec::new();
        let mut term_infos = self.term_infos();
        while let Some((_, ordinal)) = stream.next() {
            infos.push(term_infos.get(ordinal)?);
        }
        Ok(infos)
    }

    /// Whether `field` has any term of `kind` (blocks written before numeric terms existed
    /// have none, and range queries then scan the column instead).
    pub fn has_terms_of_kind(&self, field: u16, kind: TermKind) -> bool {
        use fst::{IntoStreamer, Streamer};
        let (start, end) = kind_key_range(field, kind);
        let mut stream = self.terms.range().ge(&start).lt(&end).into_stream();
        stream.next().is_some()
    }

    /// A term's postings without positions (`positions()` on the cursor finds none). The
    /// cursor checks the page checksums of what it reads as it reads it (`PageGuard`).
    pub fn postings(&self, info: &TermInfo) -> Result<PostingsCursor<'_>> {
        self.cursor(info, false)
    }

    /// A term's postings with its positions (phrases), checked as `postings` is.
    pub fn postings_with_positions(&self, info: &TermInfo) -> Result<PostingsCursor<'_>> {
        self.cursor(info, true)
    }

    fn cursor(&self, info: &TermInfo, with_positions: bool) -> Result<PostingsCursor<'_>> {
        if info.template_union {
            // No positions: a union's term has none.
            let union = self.union_postings(info)?;
            return PostingsCursor::try_new_without_positions(&union.info, &union.postings)
                .map_err(|e| self.corrupt("postings", e));
        }
        let mut ranges = Vec::new();
        self.term_ranges(info, with_positions, &mut ranges);
        if !ranges.is_empty() {
            self.fetch(&ranges)?;
        }
        let guards = CursorGuards {
            postings: self.pages.guard(self.file(), PagedSection::Postings),
            positions: with_positions
                .then(|| self.pages.guard(self.file(), PagedSection::Positions)),
        };
        PostingsCursor::try_new_guarded(
            info,
            PostingsLayout::of_version(self.version),
            self.mapped(self.manifest.postings),
            self.mapped(self.manifest.positions),
            guards,
        )
        .map_err(|e| self.corrupt("postings", e))
    }

    /// The postings of `info`, a union of templates: rebuilt from the templates' docs the
    /// first time, then kept. They take the bytes the term would have had without the union,
    /// so all of a block's unions together take at most what its postings would.
    fn union_postings(&self, info: &TermInfo) -> Result<&UnionPostings> {
        if let Some(union) = self.unions.get(&info.postings_offset) {
            return Ok(union);
        }
        let union = self.rebuild_union(info)?;
        Ok(self.unions.insert(info.postings_offset, Box::new(union)))
    }

    /// Reads the union's list (checked page by page), each listed template's docs, and
    /// writes the term's postings as a block without the union would hold them. The
    /// templates' docs must add up to exactly the term's: a damaged list or template is an
    /// error, never other docs.
    fn rebuild_union(&self, info: &TermInfo) -> Result<UnionPostings> {
        let corrupt = |reason| self.corrupt("postings", DecodeError::new(reason));
        let (start, end) = (
            info.postings_offset,
            info.postings_offset
                .saturating_add(u64::from(info.postings_len)),
        );
        self.fetch(&[self.pages.span(PagedSection::Postings, start..end)])?;
        let bytes = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(start, end)| self.mapped(self.manifest.postings).get(start..end))
            .ok_or_else(|| corrupt("union outside the postings"))?;
        self.pages
            .guard(self.file(), PagedSection::Postings)
            .check(start, end)
            .map_err(|_| self.corrupt("postings", PageMismatch::DECODE_ERROR))?;
        let (field, list) = unions::decode_union(bytes).map_err(|e| self.corrupt("postings", e))?;
        if usize::from(field) >= self.manifest.fields.len() {
            return Err(corrupt("a union of a field the block lacks"));
        }
        // Templates increase, and so do their keys and ordinals: one term-info cursor reads
        // each group of entries once.
        let mut templates = Vec::with_capacity(list.len());
        let mut term_infos = self.term_infos();
        let mut key = Vec::new();
        for &(template, tf) in &list {
            term_key(&mut key, field, TermKind::Template, &template.to_be_bytes());
            let template_info = match self.terms.get(&key) {
                Some(ordinal) => term_infos.get(ordinal)?,
                None => return Err(corrupt("a union lists a template the block lacks")),
            };
            if template_info.template_union {
                return Err(corrupt("a template is a union"));
            }
            templates.push((template_info, tf));
        }
        let ranges = self.terms_ranges(templates.iter().map(|(info, _)| (info, false)));
        if !ranges.is_empty() {
            self.fetch(&ranges)?;
        }
        let mut entries: Vec<(u32, u32)> = Vec::with_capacity(info.doc_freq as usize);
        for (template_info, tf) in &templates {
            let mut cursor = self.cursor(template_info, false)?;
            let before = entries.len();
            if before + template_info.doc_freq as usize > info.doc_freq as usize {
                return Err(corrupt("a union's templates hold more docs than its term"));
            }
            cursor.for_each_remaining(|doc| entries.push((doc, *tf)));
            if let Some(error) = cursor.error() {
                return Err(self.corrupt("postings", error));
            }
            if entries.len() - before != template_info.doc_freq as usize {
                return Err(corrupt("a template's postings disagree with its doc count"));
            }
        }
        if templates.len() > 1 {
            sort_docs(&mut entries, self.manifest.doc_count);
        }
        let max_tf = entries.iter().map(|&(_, tf)| tf).max();
        if entries.len() != info.doc_freq as usize
            || entries.windows(2).any(|w| w[0].0 == w[1].0)
            || entries
                .last()
                .is_some_and(|&(doc, _)| doc >= self.manifest.doc_count)
            || max_tf != Some(info.max_tf)
        {
            return Err(corrupt("a union's templates do not add up to its term"));
        }
        let (docs, tfs): (Vec<u32>, Vec<u32>) = entries.into_iter().unzip();
        // Each block's score bound takes the term's least length id, a bound for every block
        // of it: unpacking the field's norms would cost a block's first union about 10 ms (1M
        // events), which tails and counts never needed (ranked queries then prune a union's
        // blocks less finely).
        let mut writer = PostingsWriter::default();
        let rebuilt = writer.write_term(&docs, &tfs, |_| info.min_norm, None);
        Ok(UnionPostings {
            info: rebuilt,
            postings: std::mem::take(&mut writer.postings).into_boxed_slice(),
        })
    }

    /// Field-length ids of a tokenized field, one per doc (`None`: not a tokenized field).
    /// Packed norms (format version 6) are unpacked on first use and kept while the reader
    /// lives: only ranked queries and merges ask for them. A remote block fetches them then,
    /// which can fail.
    pub fn norms(&self, field: u16) -> Result<Option<&[u8]>> {
        let Some(meta) = self.manifest.fields.get(field as usize) else {
            return Ok(None);
        };
        let Some(text) = &meta.text else {
            return Ok(None);
        };
        let (version, doc_count) = (self.version, self.manifest.doc_count);
        let bytes = self.on_demand_section(
            text.norms,
            || norms_name(meta),
            |path, name, bytes| check_norms(path, name, bytes, text.norms, version, doc_count),
        )?;
        if self.version < PACKED_NORMS_VERSION {
            return Ok(Some(bytes));
        }
        let ids = self.unpacked_norms[field as usize]
            .get_or_init(|| fieldnorm::decode_packed(bytes, self.manifest.doc_count).into());
        Ok(Some(ids))
    }

    /// Whether `section` is one this block reads on demand and has not read yet.
    fn on_demand_pending(&self, section: Option<SectionRef>) -> bool {
        let Some(section) = section else {
            return false;
        };
        let key = (section.offset, section.len);
        self.on_demand
            .binary_search_by_key(&key, |(key, _)| *key)
            .is_ok_and(|at| self.on_demand[at].1.get().is_none())
    }

    /// The byte ranges of the doc values (`doc_values`) and norms (`norms`) of `fields` that
    /// this block reads on demand and has not read yet: for a search to fetch with its
    /// postings, as one batch (`BlockSource::fetch`), instead of one round trip each when
    /// first used. Empty for a local block.
    pub fn on_demand_ranges(
        &self,
        fields: impl IntoIterator<Item = u16>,
        doc_values: bool,
        norms: bool,
    ) -> Vec<Range<u64>> {
        let mut ranges = Vec::new();
        if self.on_demand.is_empty() {
            return ranges;
        }
        for field in fields {
            let Some(meta) = self.manifest.fields.get(field as usize) else {
                continue;
            };
            let values = meta
                .columns
                .iter()
                .filter_map(|column| column.doc_values)
                .filter(|_| doc_values);
            let field_norms = meta.text.as_ref().map(|text| text.norms).filter(|_| norms);
            for section in values.chain(field_norms) {
                if self.on_demand_pending(Some(section)) {
                    ranges.push(section.offset..section.offset + section.len);
                }
            }
        }
        ranges
    }

    /// The doc values section of `column` of `field` (`None`: it has none), checked; a remote
    /// block fetches it the first time, which can fail.
    fn doc_values_bytes(&self, field: &FieldMeta, column: &ColumnMeta) -> Result<Option<&[u8]>> {
        let Some(section) = column.doc_values else {
            return Ok(None);
        };
        let doc_count = self.manifest.doc_count;
        self.on_demand_section(
            section,
            || doc_values_name(field, column),
            |path, name, bytes| check_doc_values(path, name, bytes, doc_count),
        )
        .map(Some)
    }

    pub fn column(&self, field: u16, ty: ColumnType) -> Option<ColumnReader<'_>> {
        let meta = self.manifest.fields.get(field as usize)?;
        let index = meta.columns.iter().position(|c| c.ty == ty)?;
        let column = &meta.columns[index];
        let dictionaries = self
            .dictionaries
            .get(field as usize)
            .and_then(|of_field| of_field.get(index));
        // A remote block's doc values not read yet are read when a chunk needs them (one
        // stored only as doc values): a column reader does not fetch them for chunks with
        // their own data. Their errors are the decoding's (`LazyDocValues::load`).
        let lazy = self.on_demand_pending(column.doc_values);
        let doc_values = if lazy {
            None
        } else {
            self.doc_values_bytes(meta, column)
                .ok()
                .flatten()
                .and_then(|bytes| DocValues::trusted(bytes).ok())
        };
        // new() only fails on a ragged directory, which open() rules out by crc; treat a
        // failure as absent rather than panic.
        ColumnReader::new(
            ty,
            self.manifest.doc_count,
            self.section(column.directory),
            self.mapped(column.data),
        )
        .ok()
        .map(|reader| {
            let mut reader = reader
                .with_doc_values(doc_values)
                .with_templates(dictionaries.and_then(|d| d.templates.as_ref()))
                .with_dictionary(dictionaries.and_then(|d| d.chunks.as_ref()))
                .with_source(&*self.bytes, column.data.offset);
            if meta.name == TIME_FIELD && ty == ColumnType::Timestamp {
                reader = reader.with_times(self);
            }
            if lazy {
                reader.with_lazy_doc_values(LazyDocValues {
                    block: self,
                    field: meta,
                    column,
                })
            } else {
                reader
            }
        })
    }

    pub fn time_column(&self) -> Option<ColumnReader<'_>> {
        self.column(self.field_ordinal(TIME_FIELD)?, ColumnType::Timestamp)
    }

    /// The sparse time index: `_time` of docs 0, N, 2N, ... (N = `TIME_INDEX_INTERVAL`).
    pub fn sparse_time(&self, index: usize) -> Option<i64> {
        let bytes = &self.time_index;
        let start = index.checked_mul(8)?;
        let raw = bytes.get(start..start.checked_add(8)?)?;
        // unwrap: the slice is 8 bytes long.
        Some(i64::from_le_bytes(raw.try_into().unwrap()))
    }

    pub fn sparse_time_len(&self) -> usize {
        self.time_index.len() / 8
    }

    /// The `_time` of the docs of group `group` (docs `128 * group ..`), from the time
    /// offsets section: how many docs the group has, or `None` when the block has no offsets
    /// (version 1), the group is stored unpacked, or its bytes are bad (callers then decode
    /// the `_time` column, which reports corruption).
    pub fn time_group(&self, group: usize, out: &mut [i64; 128]) -> Option<usize> {
        let (entry, packed) = self.time_group_bytes(group)?;
        let base = self.sparse_time(group)?;
        let mut values = [0u32; 128];
        crate::packed::unpack4x(packed, entry.bits, &mut values);
        for (slot, &value) in out.iter_mut().zip(&values) {
            *slot = base.wrapping_add((u64::from(value).wrapping_mul(entry.divisor)) as i64);
        }
        let first = group * TIME_INDEX_INTERVAL as usize;
        Some(
            (self.manifest.doc_count as usize)
                .saturating_sub(first)
                .min(128),
        )
    }

    /// The doc values of column (`field`, `ty`), when it has them (format version 3).
    pub fn doc_values(&self, field: u16, ty: ColumnType) -> Option<DocValues<'_>> {
        let meta = self.manifest.fields.get(field as usize)?;
        let column = meta.columns.iter().find(|c| c.ty == ty)?;
        // Checked at open, or when fetched. Doc values that could not be read are left to
        // the column's chunks, which then fail as unreadable or damaged (`column`).
        DocValues::trusted(self.doc_values_bytes(meta, column).ok()??).ok()
    }

    /// The `_time` of `doc` from the bit-packed time offsets, reading one packed value (a
    /// hit's time; `time_group` unpacks all 128). `None` as for `time_group`.
    pub fn time_of_doc(&self, doc: u32) -> Option<i64> {
        if doc >= self.manifest.doc_count {
            return None;
        }
        let group = (doc / TIME_INDEX_INTERVAL) as usize;
        let (entry, packed) = self.time_group_bytes(group)?;
        let base = self.sparse_time(group)?;
        let value = packed4x_get(packed, entry.bits, (doc % TIME_INDEX_INTERVAL) as usize);
        Some(base.wrapping_add(u64::from(value).wrapping_mul(entry.divisor) as i64))
    }

    /// Asks the CPU to start loading what `time_of_doc` reads for each of `docs` (sparse time
    /// index, group entry, packed values), so the cache misses of a hit list overlap instead
    /// of coming one after another: a tail's 100 hit times took 25 µs when every miss waited
    /// for the one before, after other queries had flushed the caches (BENCHMARKS.md).
    pub fn prefetch_times(&self, docs: &[u32]) {
        let (Some(offsets), index) = (self.time_offsets.as_deref(), &self.time_index) else {
            return;
        };
        let (Some(&first), Some(&last)) = (docs.iter().min(), docs.iter().max()) else {
            return;
        };
        let (first, last) = (
            (first / TIME_INDEX_INTERVAL) as usize,
            (last / TIME_INDEX_INTERVAL) as usize,
        );
        // Groups are stored in order, so the groups of a hit list (a tail's are a short run)
        // are one byte range of each part: the index and the entries are prefetched whole,
        // and the packed bytes between the first group's start and the last one's end, which
        // two entries give.
        for at in (first * 8..(last + 1) * 8).step_by(64) {
            prefetch(index, at);
        }
        let entries = first * TIME_GROUP_ENTRY_LEN..(last + 1) * TIME_GROUP_ENTRY_LEN;
        for at in entries.clone().step_by(64) {
            prefetch(offsets, at);
        }
        if let (Some((start, _)), Some((last_start, last_entry))) =
            (self.time_group_entry(first), self.time_group_entry(last))
        {
            // A bounded hint: a hit list spread over a whole block is not worth it.
            let last_len = 16 * usize::from(last_entry.bits.min(32));
            let end = (last_start + last_len).min(start + (64 << 10));
            for at in (start..end).step_by(64) {
                prefetch(offsets, at);
            }
        }
    }

    /// Group `group`'s time offsets entry: where its packed bytes start, and how to read them.
    fn time_group_entry(&self, group: usize) -> Option<(usize, TimeGroupEntry)> {
        let bytes = self.time_offsets.as_deref()?;
        let entry = bytes.get(group * TIME_GROUP_ENTRY_LEN..(group + 1) * TIME_GROUP_ENTRY_LEN)?;
        // unwraps: the entry is 16 bytes long.
        let offset = u32::from_le_bytes(entry[0..4].try_into().unwrap()) as usize;
        Some((
            offset,
            TimeGroupEntry {
                bits: entry[4],
                // Writers store at least 1; a corrupt 0 must not divide.
                divisor: u64::from_le_bytes(entry[8..16].try_into().unwrap()).max(1),
            },
        ))
    }

    /// Group `group`'s time offsets entry and packed bytes (packed groups only).
    fn time_group_bytes(&self, group: usize) -> Option<(TimeGroupEntry, &[u8])> {
        let (offset, entry) = self.time_group_entry(group)?;
        if entry.bits > 32 {
            return None;
        }
        let bytes = self.time_offsets.as_deref()?;
        let packed = bytes.get(offset..offset.checked_add(16 * entry.bits as usize)?)?;
        Some((entry, packed))
    }

    /// How many docs of 128-doc group `group` have `_time < time`, read from the bit-packed
    /// time offsets by a binary search over the packed values (no unpacking of the group:
    /// histogram endpoints need one rank per bucket, and a full unpack plus rebasing cost
    /// 4 times as much; see BENCHMARKS.md). `None` where the block has no offsets for it.
    pub fn time_group_rank(&self, group: usize, time: i64) -> Option<usize> {
        let (TimeGroupEntry { bits, divisor }, packed) = self.time_group_bytes(group)?;
        let base = self.sparse_time(group)?;
        let docs = (self.manifest.doc_count as usize)
            .saturating_sub(group * TIME_INDEX_INTERVAL as usize)
            .min(128);
        if time <= base {
            return Some(0);
        }
        // time > base: the docs before `time` are those whose offset is below
        // ceil((time - base) / divisor).
        // (A difference of two i64 fits in a u64 when the first is the larger.)
        let threshold = (time.wrapping_sub(base) as u64).div_ceil(divisor);
        let Ok(threshold) = u32::try_from(threshold) else {
            return Some(docs);
        };
        // Offsets are sorted (the last group is padded with its last value).
        let (mut lo, mut hi) = (0usize, docs);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if packed4x_get(packed, bits, mid) < threshold {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// Checks every section's crc and decodes every column chunk. `quarry check` runs this.
    pub fn verify(&self) -> Result<()> {
        self.fetch(std::slice::from_ref(&(0..self.file_len())))?;
        let bytes: &[u8] = self.file();
        for (name, section) in self.manifest.sections() {
            check_crc(&self.path, bytes, &name, section)?;
        }
        for (ordinal, field) in self.manifest.fields.iter().enumerate() {
            for column in &field.columns {
                // unwrap-free: column() is Some for every listed column.
                if let Some(reader) = self.column(ordinal as u16, column.ty) {
                    for chunk in 0..reader.chunk_count() {
                        reader.decode_chunk(chunk).map_err(|e| {
                            self.corrupt(
                                format!("column {}:{} chunk {chunk}", field.name, column.ty.name()),
                                e,
                            )
                        })?;
                    }
                }
            }
        }
        let mut stream = self.terms.stream();
        use fst::Streamer;
        let mut infos = self.term_infos();
        while let Some((key, ordinal)) = stream.next() {
            let part = || format!("postings of term {ordinal} ({})", self.describe_key(key));
            let info = infos.get(ordinal)?;
            let mut cursor = match self.postings_with_positions(&info) {
                Ok(cursor) => cursor,
                Err(FormatError::Corrupt { reason, .. }) => {
                    return Err(self.corrupt(part(), DecodeError::new(reason)))
                }
                Err(e) => return Err(e),
            };
            let mut count = 0u32;
            while cursor.doc() != crate::postings::TERMINATED {
                count += 1;
                cursor.advance();
            }
            if let Some(error) = cursor.error() {
                return Err(self.corrupt(part(), error));
            }
            if count != info.doc_freq {
                return Err(self.corrupt(
                    part(),
                    DecodeError::new("doc count disagrees with doc freq"),
                ));
            }
        }
        Ok(())
    }

    /// Rebuilds one event (flattened field names) from the columns. For many docs, use a
    /// `DocumentFetcher`, which keeps decoded chunks.
    pub fn document(&self, doc: u32) -> Result<Vec<(String, Value)>> {
        DocumentFetcher::new(self).fetch(doc)
    }
}

fn section_bytes(bytes: &[u8], section: SectionRef, limit: u64) -> Option<&[u8]> {
    let end = section.end()?;
    if end > limit {
        return None;
    }
    bytes.get(section.offset as usize..end as usize)
}

fn check_crc(path: &Path, bytes: &[u8], name: &str, section: SectionRef) -> Result<()> {
    // In bounds: every section was checked against the file length first.
    let got =
        crc32fast::hash(&bytes[section.offset as usize..(section.offset + section.len) as usize]);
    if got != section.crc {
        return Err(FormatError::ChecksumMismatch {
            path: path.to_path_buf(),
            part: name.to_owned(),
            expected: section.crc,
            got,
        });
    }
    Ok(())
}

/// Rebuilds events from a block, keeping the last decoded chunk of each column so that fetching
/// docs in increasing order decodes each chunk once. With a `ChunkCache`, chunks decoded by
/// earlier fetchers (earlier requests) are reused and the ones decoded here are kept.
pub struct DocumentFetcher<'a> {
    block: &'a BlockReader,
    cache: Option<&'a ChunkCache>,
    columns: Vec<FetchedColumn<'a>>,
}

/// One (field, type) column of a fetcher and its current chunk.
struct FetchedColumn<'a> {
    name: String,
    ordinal: u16,
    reader: ColumnReader<'a>,
    current: Option<(usize, Arc<DecodedChunk>)>,
}

impl<'a> DocumentFetcher<'a> {
    pub fn new(block: &'a BlockReader) -> Self {
        Self::with_fields(block, |_| true)
    }

    /// Only the fields for which `keep(name)` holds.
    pub fn with_fields(block: &'a BlockReader, keep: impl Fn(&str) -> bool) -> Self {
        let mut columns = Vec::new();
        for (ordinal, field) in block.manifest.fields.iter().enumerate() {
            if !keep(&field.name) {
                continue;
            }
            for column in &field.columns {
                if let Some(reader) = block.column(ordinal as u16, column.ty) {
                    columns.push(FetchedColumn {
                        name: field.name.clone(),
                        ordinal: ordinal as u16,
                        reader,
                        current: None,
                    });
                }
            }
        }
        DocumentFetcher {
            block,
            cache: None,
            columns,
        }
    }

    /// The byte ranges of the chunks that fetching `docs` (ascending) decodes: a page of hits
    /// fetches them as one batch (`BlockReader::prefetch`), one round trip for a remote block
    /// instead of one per column chunk.
    pub fn chunk_ranges(&self, docs: &[u32]) -> Result<Vec<Range<u64>>> {
        let mut ranges = Vec::new();
        for column in &self.columns {
            let mut last = None;
            for &doc in docs {
                let corrupt = |e| self.block.corrupt(column.name.clone(), e);
                let Some(index) = column.reader.chunk_of(doc).map_err(corrupt)? else {
                    continue;
                };
                if last == Some(index) {
                    continue;
                }
                last = Some(index);
                match column.reader.chunk_block_range(index).map_err(corrupt)? {
                    Some(range) => ranges.push(range),
                    // Stored only as doc values: those, if a remote block has not read them.
                    None => {
                        ranges.extend(self.block.on_demand_ranges([column.ordinal], true, false))
                    }
                }
            }
        }
        Ok(ranges)
    }

    /// Reuses and fills `cache`.
    pub fn cached(mut self, cache: Option<&'a ChunkCache>) -> Self {
        self.cache = cache;
        self
    }

    pub fn fetch(&mut self, doc: u32) -> Result<Vec<(String, Value)>> {
        let mut event = Vec::new();
        for column in &mut self.columns {
            let Some(index) = column
                .reader
                .chunk_of(doc)
                .map_err(|e| self.block.corrupt(column.name.clone(), e))?
            else {
                continue;
            };
            if column.current.as_ref().map(|(i, _)| *i) != Some(index) {
                let chunk = chunk_through_cache(self.block, self.cache, column, index)?;
                column.current = Some((index, chunk));
            }
            if let Some((_, chunk)) = &column.current {
                if let Some(value) = chunk.get(doc) {
                    event.push((column.name.clone(), value));
                }
            }
        }
        Ok(event)
    }
}

/// Chunk `index` of `column`: from the cache when it holds it, else decoded (and cached).
fn chunk_through_cache(
    block: &BlockReader,
    cache: Option<&ChunkCache>,
    column: &FetchedColumn,
    index: usize,
) -> Result<Arc<DecodedChunk>> {
    let ty = column.reader.column_type();
    let key = (block.uid, column.ordinal, ty, index as u32);
    if let Some(chunk) = cache.and_then(|c| c.get(&key)) {
        return Ok(chunk);
    }
    let chunk = column.reader.decode_chunk(index).map_err(|e| {
        block.corrupt(
            format!("column {}:{} chunk {index}", column.name, ty.name()),
            e,
        )
    })?;
    let chunk = Arc::new(chunk);
    if let Some(cache) = cache {
        cache.insert(key, chunk.clone());
    }
    Ok(chunk)
}

/// A time offsets group entry, decoded.
struct TimeGroupEntry {
    bits: u8,
    divisor: u64,
}

/// A block's term infos read through one cursor ([`BlockReader::term_infos`]).
pub struct TermInfos<'a> {
    block: &'a BlockReader,
    cursor: TermInfoCursor<'a>,
}

impl TermInfos<'_> {
    pub fn get(&mut self, ordinal: u64) -> Result<TermInfo> {
        self.cursor
            .get(ordinal)
            .map_err(|e| self.block.corrupt("term infos", e))
    }
}

/// The dictionary keys of `field`'s terms of `kind` are those in `start..end`.
fn kind_key_range(field: u16, kind: TermKind) -> (Vec<u8>, Vec<u8>) {
    let mut start = Vec::new();
    term_key(&mut start, field, kind, &[]);
    let mut end = start.clone();
    // The key's last byte is the kind (< 255), so incrementing it bounds the range.
    *end.last_mut().expect("term keys have a kind byte") += 1;
    (start, end)
}

type SectionKey = (u64, u64);

/// Private copies of the sections read at random, each checked against its crc after it was
/// copied: what a query reads of them cannot change under it, whatever happens to the file.
/// Sorted by (offset, length), so a lookup is a binary search over a few dozen entries.
/// A column's doc values that a remote block has not read yet: read, copied and checked when
/// a chunk stored only as doc values is decoded (`ColumnReader`).
#[derive(Clone, Copy)]
pub(crate) struct LazyDocValues<'a> {
    block: &'a BlockReader,
    field: &'a FieldMeta,
    column: &'a ColumnMeta,
}

impl<'a> LazyDocValues<'a> {
    /// The doc values: `DecodeError::UNREADABLE` if the store did not answer, a damage
    /// error if they failed their checks.
    pub(crate) fn load(&self) -> crate::error::DecodeResult<DocValues<'a>> {
        match self.block.doc_values_bytes(self.field, self.column) {
            Ok(Some(bytes)) => DocValues::trusted(bytes),
            Ok(None) => Err(DecodeError::new("chunk has neither data nor doc values")),
            Err(FormatError::Io { .. }) => Err(DecodeError::UNREADABLE),
            Err(_) => Err(DecodeError::new("doc values failed their check")),
        }
    }
}

/// What errors call a column's doc values section.
fn doc_values_name(field: &FieldMeta, column: &ColumnMeta) -> String {
    format!("column {}:{} doc values", field.name, column.ty.name())
}

fn norms_name(field: &FieldMeta) -> String {
    format!("norms of {}", field.name)
}

/// Doc values must decode, one value per doc of the block.
fn check_doc_values(path: &Path, name: &str, bytes: &[u8], doc_count: u32) -> Result<()> {
    let corrupt = |reason: &'static str| FormatError::Corrupt {
        path: path.to_path_buf(),
        part: name.to_owned(),
        reason,
    };
    match DocValues::new(bytes) {
        Ok(values) if values.doc_count() == doc_count => Ok(()),
        Ok(_) => Err(corrupt("doc count differs from the block's")),
        Err(e) => Err(corrupt(e.reason)),
    }
}

/// Norms must hold one length id per doc of the block.
fn check_norms(
    path: &Path,
    name: &str,
    bytes: &[u8],
    section: SectionRef,
    version: u32,
    doc_count: u32,
) -> Result<()> {
    let fits = if version >= PACKED_NORMS_VERSION {
        fieldnorm::packed_fits(bytes, doc_count)
    } else {
        section.len == u64::from(doc_count)
    };
    if fits {
        Ok(())
    } else {
        Err(FormatError::Corrupt {
            path: path.to_path_buf(),
            part: name.to_owned(),
            reason: "norms length is not the doc count",
        })
    }
}

/// A column's dictionaries, decoded when its block opens: its templates (format version 7)
/// and the zstd dictionary its chunks are compressed with (version 10).
#[derive(Default)]
struct ColumnDictionaries {
    templates: Option<Templates>,
    chunks: Option<ChunkDictionary>,
}

/// A private copy of `section` of `file` (in bounds: checked by the caller) whose crc is
/// checked, expanded when `expand` says the section is stored (`stored`, format version 9).
/// The copy is what readers will read: it is what must match.
fn checked_copy(
    path: &Path,
    file: &[u8],
    name: &str,
    section: SectionRef,
    expand: bool,
) -> Result<Box<[u8]>> {
    let copy: Box<[u8]> =
        file[section.offset as usize..(section.offset + section.len) as usize].into();
    let whole = SectionRef {
        offset: 0,
        ..section
    };
    check_crc(path, &copy, name, whole)?;
    if expand {
        stored::decode(&copy).map_err(|e| e.in_file(path, name))
    } else {
        Ok(copy)
    }
}

#[derive(Default)]
struct Resident {
    /// ((offset, length), copy).
    sections: Vec<(SectionKey, Box<[u8]>)>,
    bytes: usize,
    /// Whether sections are stored (`stored`, format version 9) and their copies expanded.
    expand: bool,
}

impl Resident {
    /// Copies `section` of `file` (in bounds: checked by the caller), checks the copy's crc,
    /// keeps it and returns it.
    fn copy_checked(
        &mut self,
        path: &Path,
        file: &[u8],
        name: &str,
        section: SectionRef,
    ) -> Result<&[u8]> {
        let key = (section.offset, section.len);
        let at = match self.sections.binary_search_by_key(&key, |(key, _)| *key) {
            Ok(at) => at,
            Err(at) => {
                let copy = checked_copy(path, file, name, section, self.expand)?;
                self.bytes += copy.len();
                self.sections.insert(at, (key, copy));
                at
            }
        };
        Ok(&self.sections[at].1)
    }

    fn get(&self, section: SectionRef) -> Option<&[u8]> {
        Some(&self.sections[self.position(section)?].1)
    }

    fn position(&self, section: SectionRef) -> Option<usize> {
        let key = (section.offset, section.len);
        self.sections
            .binary_search_by_key(&key, |(key, _)| *key)
            .ok()
    }

    /// Removes a copy and returns it (the FST, which owns its bytes).
    fn take(&mut self, section: SectionRef) -> Option<Box<[u8]>> {
        let (_, bytes) = self.sections.remove(self.position(section)?);
        self.bytes -= bytes.len();
        Some(bytes)
    }
}
