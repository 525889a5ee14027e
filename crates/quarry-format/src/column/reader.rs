use super::template::{Templates, TEMPLATED};
use super::ChunkDictionary;
use super::{ChunkMeta, CHUNK_META_LEN, PRESENCE_ALL, PRESENCE_LIST};
use crate::block::BlockSource;
use crate::codec::{unzigzag, ByteReader};
use crate::docvalues::DocValues;
use crate::error::{DecodeError, DecodeResult};
use crate::limits::{MAX_CHUNK_RAW_BYTES, TIME_INDEX_INTERVAL};
use crate::value::{ColumnType, MinMax, Value};

/// Reads one column of a block. Borrowed from the block's mmap; cheap to create.
#[derive(Clone, Copy)]
pub struct ColumnReader<'a> {
    ty: ColumnType,
    doc_count: u32,
    directory: &'a [u8],
    data: &'a [u8],
    /// The column's doc values, from which chunks without data are rebuilt (format v6).
    doc_values: Option<DocValues<'a>>,
    /// Doc values a remote block reads on first use: read when a chunk needs them.
    lazy_doc_values: Option<crate::block::LazyDocValues<'a>>,
    /// The block's source and where `data` starts in it: a chunk's bytes are fetched from it
    /// before they are read (a remote block's; `BlockSource`).
    source: Option<(&'a dyn BlockSource, u64)>,
    /// The column's template dictionary (format version 7), for templated chunks.
    templates: Option<&'a Templates>,
    /// The zstd dictionary its chunks are compressed with (format version 10).
    dictionary: Option<&'a ChunkDictionary>,
    /// The `_time` column's block, whose time offsets rebuild its chunks stored without data
    /// (format version 7).
    times: Option<&'a crate::block::BlockReader>,
}

/// The values of one decoded chunk.
#[derive(Debug, Clone)]
pub enum ChunkValues {
    /// Strings (or JSON text): value `i` is `bytes[offsets[i]..offsets[i + 1]]`.
    Bytes { offsets: Vec<u32>, bytes: Vec<u8> },
    /// Raw 64-bit patterns for numbers, bools and time (see `MinMax`).
    Numbers(Vec<u64>),
}

/// One chunk, decompressed: which docs have a value and the values in doc order.
#[derive(Debug, Clone)]
pub struct DecodedChunk {
    pub ty: ColumnType,
    pub first_doc: u32,
    pub end_doc: u32,
    /// Docs with a value, ascending; `None` means every doc in `first_doc..end_doc`.
    pub docs: Option<Vec<u32>>,
    pub values: ChunkValues,
}

/// Where the chunk `meta` describes is in its block, its column's data starting at
/// `data_offset`.
fn block_range(data_offset: u64, meta: &ChunkMeta) -> std::ops::Range<u64> {
    let at = data_offset.saturating_add(meta.offset);
    at..at.saturating_add(u64::from(meta.len))
}

impl<'a> ColumnReader<'a> {
    /// `directory` must hold whole entries; the block reader checked that and the crc.
    pub fn new(
        ty: ColumnType,
        doc_count: u32,
        directory: &'a [u8],
        data: &'a [u8],
    ) -> DecodeResult<Self> {
        if !directory.len().is_multiple_of(CHUNK_META_LEN) {
            return Err(DecodeError::new(
                "chunk directory length not a whole number of entries",
            ));
        }
        Ok(ColumnReader {
            ty,
            doc_count,
            directory,
            data,
            doc_values: None,
            lazy_doc_values: None,
            source: None,
            templates: None,
            dictionary: None,
            times: None,
        })
    }

    /// The `_time` column of `block`: chunks stored without data are rebuilt from the block's
    /// time offsets (version 7).
    pub(crate) fn with_times(mut self, block: &'a crate::block::BlockReader) -> Self {
        self.times = Some(block);
        self
    }

    /// The column's template dictionary, which its templated chunks need (version 7).
    pub fn with_templates(mut self, templates: Option<&'a Templates>) -> Self {
        self.templates = templates;
        self
    }

    /// The zstd dictionary the column's chunks are compressed with, if it has one.
    pub fn with_dictionary(mut self, dictionary: Option<&'a ChunkDictionary>) -> Self {
        self.dictionary = dictionary;
        self
    }

    /// The column's doc values (the block reader gives them when the column has some): a
    /// chunk stored without data (offset, length and crc 0) is rebuilt from them.
    pub fn with_doc_values(mut self, doc_values: Option<DocValues<'a>>) -> Self {
        self.doc_values = doc_values;
        self
    }

    /// Doc values that are read when a chunk stored only as doc values is decoded (a remote
    /// block's, fetched on first use; `DecodeError::UNREADABLE` if the store does not answer).
    pub(crate) fn with_lazy_doc_values(mut self, lazy: crate::block::LazyDocValues<'a>) -> Self {
        self.lazy_doc_values = Some(lazy);
        self
    }

    /// Reads chunks through `source`, the block whose bytes `data` are, from `data_offset`
    /// on: each chunk is fetched before it is read.
    pub fn with_source(mut self, source: &'a dyn BlockSource, data_offset: u64) -> Self {
        self.source = Some((source, data_offset));
        self
    }

    /// Where chunk `index`'s bytes are in the block (with a source; `None` for a chunk
    /// stored without data, or a reader without a source): what decoding it fetches.
    pub fn chunk_block_range(&self, index: usize) -> DecodeResult<Option<std::ops::Range<u64>>> {
        let meta = self.chunk_meta(index)?;
        Ok(self
            .source
            .filter(|_| meta.len > 0)
            .map(|(_, data_offset)| block_range(data_offset, &meta)))
    }

    pub fn column_type(&self) -> ColumnType {
        self.ty
    }

    pub fn chunk_count(&self) -> usize {
        self.directory.len() / CHUNK_META_LEN
    }

    pub fn chunk_meta(&self, index: usize) -> DecodeResult<ChunkMeta> {
        let start = index * CHUNK_META_LEN;
        let bytes = self
            .directory
            .get(start..start + CHUNK_META_LEN)
            .ok_or(DecodeError::new("chunk index out of range"))?;
        ChunkMeta::decode(bytes)
    }

    /// Min/max of chunk `index` (numeric columns only).
    pub fn chunk_min_max(&self, index: usize) -> DecodeResult<Option<MinMax>> {
        let meta = self.chunk_meta(index)?;
        Ok(
            (self.ty.is_numeric() && meta.present_count > 0).then_some(MinMax {
                min: meta.min,
                max: meta.max,
            }),
        )
    }

    /// The chunk covering `doc`, if any chunk does.
    pub fn chunk_of(&self, doc: u32) -> DecodeResult<Option<usize>> {
        let count = self.chunk_count();
        if count == 0 || doc >= self.doc_count {
            return Ok(None);
        }
        // Binary search for the last chunk whose first_doc <= doc, reading only that field of
        // each entry: decoding whole entries made this a quarter of fetching a tail's events
        // (callgrind, issue 26's A/B in BENCHMARKS.md).
        let (mut lo, mut hi) = (0usize, count);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.first_doc(mid)? <= doc {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok((self.first_doc(lo)? <= doc).then_some(lo))
    }

    /// The first doc of chunk `index` (the first field of its directory entry).
    #[inline]
    fn first_doc(&self, index: usize) -> DecodeResult<u32> {
        let start = index * CHUNK_META_LEN;
        let bytes: [u8; 4] = self
            .directory
            .get(start..start + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or(DecodeError::new("chunk index out of range"))?;
        Ok(u32::from_le_bytes(bytes))
    }

    /// The doc after the last doc chunk `index` covers.
    pub fn chunk_end(&self, index: usize) -> DecodeResult<u32> {
        if index + 1 < self.chunk_count() {
            Ok(self.chunk_meta(index + 1)?.first_doc)
        } else {
            Ok(self.doc_count)
        }
    }

    pub fn decode_chunk(&self, index: usize) -> DecodeResult<DecodedChunk> {
        let meta = self.chunk_meta(index)?;
        let end_doc = self.chunk_end(index)?;
        if end_doc < meta.first_doc {
            return Err(DecodeError::new("chunk doc range inconsistent"));
        }
        if meta.len == 0 {
            return match self.times {
                Some(block) => chunk_from_times(block, &meta, end_doc),
                None => self.chunk_from_doc_values(&meta, end_doc),
            };
        }
        let raw = self.decompress(&meta)?;
        decode_chunk_payload(self.ty, meta.first_doc, end_doc, &raw, self.templates)
    }

    /// The chunk `meta` describes (which has data), checked against its crc and decompressed.
    fn decompress(&self, meta: &ChunkMeta) -> DecodeResult<Vec<u8>> {
        let mut raw = Vec::new();
        self.decompress_into(meta, &mut raw)?;
        Ok(raw)
    }

    /// `decompress` into `raw` (whatever it held is replaced), reusing its allocation: a walk
    /// over many chunks that kept asking for fresh buffers spent a quarter of its time on the
    /// kernel zeroing their pages.
    fn decompress_into(&self, meta: &ChunkMeta, raw: &mut Vec<u8>) -> DecodeResult<()> {
        let start = usize::try_from(meta.offset).map_err(|_| DecodeError::new("chunk offset"))?;
        if let Some((source, data_offset)) = self.source {
            source
                .fetch(std::slice::from_ref(&block_range(data_offset, meta)))
                .map_err(|_| DecodeError::UNREADABLE)?;
        }
        let compressed = self
            .data
            .get(start..start.saturating_add(meta.len as usize))
            .ok_or(DecodeError::new("chunk outside column data"))?;
        if crc32fast::hash(compressed) != meta.crc {
            return Err(DecodeError::new("chunk checksum mismatch"));
        }
        // The writer's frames record their content size; sizing the buffer from it avoids
        // asking the allocator for MAX_CHUNK_RAW_BYTES on every decode.
        let raw_len = match zstd::zstd_safe::get_frame_content_size(compressed) {
            Ok(Some(len)) if len <= MAX_CHUNK_RAW_BYTES as u64 => len as usize,
            Ok(Some(_)) => return Err(DecodeError::new("chunk larger than the limit")),
            _ => return Err(DecodeError::new("chunk frame has no content size")),
        };
        raw.clear();
        raw.reserve(raw_len);
        // One decompression context per thread: creating one per chunk was 5% of an
        // aggregation over every value of a column (`ZSTD_createDCtx` in the profile). A
        // chunk of a column with a dictionary (format version 10) is decompressed with it.
        thread_local! {
            static CONTEXT: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
                const { std::cell::RefCell::new(None) };
        }
        CONTEXT
            .with(|cell| {
                let mut slot = cell.borrow_mut();
                let context = slot.get_or_insert_with(zstd::zstd_safe::DCtx::create);
                match self.dictionary {
                    Some(dictionary) => {
                        context.decompress_using_ddict(raw, compressed, dictionary.loaded())
                    }
                    None => context.decompress(raw, compressed),
                }
            })
            .map_err(|_| DecodeError::new("chunk does not decompress"))?;
        if raw.len() != raw_len {
            return Err(DecodeError::new("chunk shorter than its frame header says"));
        }
        Ok(())
    }

    /// Chunk `index` for reading a few of its docs' values in increasing doc order
    /// ([`ChunkWalker`]): a templated chunk is decompressed (into `buffer`, whose allocation
    /// it reuses: `ChunkWalker::into_buffer` gives it back) and its values rebuilt only as
    /// they are asked for; any other chunk is decoded whole.
    pub fn walk_chunk(&self, index: usize, buffer: Vec<u8>) -> DecodeResult<ChunkWalker<'a>> {
        let meta = self.chunk_meta(index)?;
        let end_doc = self.chunk_end(index)?;
        let lazy = meta.len > 0 && self.ty == ColumnType::Str && self.templates.is_some();
        if end_doc < meta.first_doc || !lazy {
            return Ok(ChunkWalker::Decoded(self.decode_chunk(index)?));
        }
        let mut raw = buffer;
        self.decompress_into(&meta, &mut raw)?;
        let mut r = ByteReader::new(&raw);
        let header = ChunkHeader::read(&mut r, meta.first_doc, end_doc)?;
        if !header.templated {
            return Ok(ChunkWalker::Decoded(decode_chunk_payload(
                self.ty,
                meta.first_doc,
                end_doc,
                &raw,
                self.templates,
            )?));
        }
        let at = header.values_start;
        Ok(ChunkWalker::Templated {
            // Checked just above (`lazy`).
            templates: self.templates.expect("a templated column"),
            header,
            raw,
            next: 0,
            at,
            scratch: Vec::new(),
        })
    }

    /// A chunk stored without data: its docs and values from the doc values, which must hold
    /// exactly its `present_count` values in its doc range.
    fn chunk_from_doc_values(&self, meta: &ChunkMeta, end_doc: u32) -> DecodeResult<DecodedChunk> {
        let values = match (self.doc_values, &self.lazy_doc_values) {
            (Some(values), _) => values,
            (None, Some(lazy)) => lazy.load()?,
            (None, None) => return Err(DecodeError::new("chunk has neither data nor doc values")),
        };
        if values.doc_count() != self.doc_count {
            return Err(DecodeError::new("doc values of another doc count"));
        }
        let mut docs = Vec::with_capacity(meta.present_count as usize);
        let mut raws = Vec::with_capacity(meta.present_count as usize);
        values.for_each_in_range(meta.first_doc, end_doc, |doc, raw| {
            docs.push(doc);
            raws.push(raw);
        });
        if docs.len() != meta.present_count as usize {
            return Err(DecodeError::new(
                "doc values disagree with the chunk's value count",
            ));
        }
        let values = match self.ty {
            ColumnType::Str => {
                let mut offsets = Vec::with_capacity(raws.len() + 1);
                let mut bytes = Vec::new();
                offsets.push(0);
                for &ordinal in &raws {
                    let value = u32::try_from(ordinal)
                        .ok()
                        .and_then(|o| values.string(o))
                        .ok_or(DecodeError::new("doc values ordinal out of range"))?;
                    bytes.extend_from_slice(value);
                    offsets.push(bytes.len() as u32);
                }
                std::str::from_utf8(&bytes)
                    .map_err(|_| DecodeError::new("doc values string is not UTF-8"))?;
                ChunkValues::Bytes { offsets, bytes }
            }
            ColumnType::I64 | ColumnType::U64 | ColumnType::Timestamp | ColumnType::Bool => {
                if self.ty == ColumnType::Bool && raws.iter().any(|&v| v > 1) {
                    return Err(DecodeError::new("doc values bool is not 0 or 1"));
                }
                ChunkValues::Numbers(raws)
            }
            ColumnType::F64 | ColumnType::Json => {
                return Err(DecodeError::new(
                    "chunk without data in a column without doc values",
                ))
            }
        };
        let every = docs.len() == (end_doc - meta.first_doc) as usize;
        Ok(DecodedChunk {
            ty: self.ty,
            first_doc: meta.first_doc,
            end_doc,
            docs: (!every).then_some(docs),
            values,
        })
    }

    /// The value of `doc`, decoding its chunk. For many docs, decode chunks once instead.
    pub fn get(&self, doc: u32) -> DecodeResult<Option<Value>> {
        match self.chunk_of(doc)? {
            None => Ok(None),
            Some(index) => Ok(self.decode_chunk(index)?.get(doc)),
        }
    }
}

/// A `_time` chunk stored without data: every doc of its range, its value from the block's
/// time offsets, which must hold them all.
fn chunk_from_times(
    block: &crate::block::BlockReader,
    meta: &ChunkMeta,
    end_doc: u32,
) -> DecodeResult<DecodedChunk> {
    if meta.present_count != end_doc - meta.first_doc {
        return Err(DecodeError::new("a _time chunk without data misses docs"));
    }
    let mut values = Vec::with_capacity(meta.present_count as usize);
    let mut group_times = [0i64; TIME_INDEX_INTERVAL as usize];
    let mut doc = meta.first_doc;
    while doc < end_doc {
        let group = (doc / TIME_INDEX_INTERVAL) as usize;
        let len = block
            .time_group(group, &mut group_times)
            .ok_or(DecodeError::new(
                "a _time chunk without data and no time offsets",
            ))?;
        let from = (doc % TIME_INDEX_INTERVAL) as usize;
        let to = len.min(from + (end_doc - doc) as usize);
        if to <= from {
            return Err(DecodeError::new("time offsets shorter than the doc count"));
        }
        values.extend(group_times[from..to].iter().map(|&t| t as u64));
        doc += (to - from) as u32;
    }
    Ok(DecodedChunk {
        ty: ColumnType::Timestamp,
        first_doc: meta.first_doc,
        end_doc,
        docs: None,
        values: ChunkValues::Numbers(values),
    })
}

fn decode_chunk_payload(
    ty: ColumnType,
    first_doc: u32,
    end_doc: u32,
    raw: &[u8],
    templates: Option<&Templates>,
) -> DecodeResult<DecodedChunk> {
    let mut r = ByteReader::new(raw);
    let ChunkHeader {
        present,
        templated,
        docs,
        ..
    } = ChunkHeader::read(&mut r, first_doc, end_doc)?;
    let templates = match (templated, templates) {
        (false, _) => None,
        (true, Some(templates)) if ty == ColumnType::Str => Some(templates),
        (true, _) => return Err(DecodeError::new("templated chunk without templates")),
    };
    let n = present as usize;
    let values = match templates {
        Some(templates) => templated_values(templates, &mut r, n, raw.len())?,
        None => plain_values(ty, &mut r, n)?,
    };
    if !r.is_empty() {
        return Err(DecodeError::new("trailing bytes in chunk"));
    }
    Ok(DecodedChunk {
        ty,
        first_doc,
        end_doc,
        docs,
        values,
    })
}

/// What a chunk's payload says before its values: how many there are, whether they are
/// templated, and which docs hold them (`None`: every doc of the chunk).
pub struct ChunkHeader {
    first_doc: u32,
    end_doc: u32,
    present: u32,
    templated: bool,
    docs: Option<Vec<u32>>,
    /// Where the values start in the payload.
    values_start: usize,
}

impl ChunkHeader {
    /// Reads the header of the payload of a chunk of docs `first_doc..end_doc` from `r`.
    fn read(r: &mut ByteReader, first_doc: u32, end_doc: u32) -> DecodeResult<ChunkHeader> {
        let start = r.remaining();
        let span = end_doc - first_doc;
        let present = r.varint_u32()?;
        if present > span {
            return Err(DecodeError::new("more values than docs in chunk"));
        }
        let flags = r.u8()?;
        let templated = flags & TEMPLATED != 0;
        let presence = flags & !TEMPLATED;
        // Every value takes a byte at least (and a listed doc one more), so a count above the
        // bytes left is corrupt: checked before anything is sized by it (found by the
        // `column_decode` fuzz target: a few bytes claiming 2^32 values asked for 16 GiB).
        if present as usize > r.remaining() {
            return Err(DecodeError::new("more values than bytes in chunk"));
        }
        let docs = match presence {
            PRESENCE_ALL => {
                if present != span {
                    return Err(DecodeError::new("chunk marked full but values missing"));
                }
                None
            }
            PRESENCE_LIST => {
                let mut docs = Vec::with_capacity(present as usize);
                let mut doc = first_doc;
                for i in 0..present {
                    let delta = r.varint_u32()?;
                    if i > 0 && delta == 0 {
                        return Err(DecodeError::new("presence list not increasing"));
                    }
                    doc = doc
                        .checked_add(delta)
                        .ok_or(DecodeError::new("doc overflow"))?;
                    if doc >= end_doc {
                        return Err(DecodeError::new("present doc outside chunk"));
                    }
                    docs.push(doc);
                }
                Some(docs)
            }
            _ => return Err(DecodeError::new("unknown presence flag")),
        };
        Ok(ChunkHeader {
            first_doc,
            end_doc,
            present,
            templated,
            docs,
            values_start: start - r.remaining(),
        })
    }
}

/// One chunk read for a few of its docs' values, asked for in increasing doc order
/// ([`ColumnReader::walk_chunk`]). A phrase confirmed against a field's values reads a few
/// docs of each chunk: rebuilding every value of a templated chunk for them was most of its
/// time (BENCHMARKS.md, "Format v8"). Here a templated chunk's records are walked, those of the
/// docs not asked for skipped by their lengths.
pub enum ChunkWalker<'a> {
    Decoded(DecodedChunk),
    Templated {
        templates: &'a Templates,
        header: ChunkHeader,
        raw: Vec<u8>,
        /// The next record's index and its byte offset in `raw`.
        next: u32,
        at: usize,
        /// The value being rebuilt.
        scratch: Vec<u8>,
    },
}

impl ChunkWalker<'_> {
    /// The walker's decompression buffer, for the next chunk's (`ColumnReader::walk_chunk`).
    pub fn into_buffer(self) -> Vec<u8> {
        match self {
            ChunkWalker::Decoded(_) => Vec::new(),
            ChunkWalker::Templated { raw, .. } => raw,
        }
    }

    /// The first doc of the next chunk.
    pub fn end_doc(&self) -> u32 {
        match self {
            ChunkWalker::Decoded(chunk) => chunk.end_doc,
            ChunkWalker::Templated { header, .. } => header.end_doc,
        }
    }

    /// `doc`'s value, if it has one. An earlier doc than the last one asked for reads the
    /// chunk's records from the start again.
    pub fn value(&mut self, doc: u32) -> DecodeResult<Option<Value>> {
        match self {
            ChunkWalker::Decoded(chunk) => Ok(chunk.get(doc)),
            ChunkWalker::Templated {
                templates,
                header,
                raw,
                next,
                at,
                scratch,
            } => {
                let position = match &header.docs {
                    _ if doc < header.first_doc || doc >= header.end_doc => return Ok(None),
                    None => doc - header.first_doc,
                    Some(docs) => match docs.binary_search(&doc) {
                        Ok(position) => position as u32,
                        Err(_) => return Ok(None),
                    },
                };
                // Forward from the last value read, or from the start for an earlier doc; the
                // walker's place moves only once the value is read.
                let (mut index, from) = if position < *next {
                    (0, header.values_start)
                } else {
                    (*next, *at)
                };
                let mut r = ByteReader::new(raw.get(from..).unwrap_or_default());
                while index < position {
                    templates.skip_value(&mut r)?;
                    index += 1;
                }
                // Rebuilt in a buffer kept across values, then copied out at its size: a fresh
                // vector grown value by value reallocated several times for each of them.
                scratch.clear();
                templates.decode_value(&mut r, scratch)?;
                (*next, *at) = (index + 1, raw.len() - r.remaining());
                let text = std::str::from_utf8(scratch)
                    .map_err(|_| DecodeError::new("string value is not utf-8"))?;
                Ok(Some(Value::Str(text.to_owned())))
            }
        }
    }
}

/// The values of a templated string chunk (version 7), `n` of them, from `r`.
fn templated_values(
    templates: &Templates,
    r: &mut ByteReader,
    n: usize,
    raw_len: usize,
) -> DecodeResult<ChunkValues> {
    let mut offsets = Vec::with_capacity(n + 1);
    let mut bytes = Vec::with_capacity(raw_len * 2);
    offsets.push(0u32);
    for _ in 0..n {
        templates.decode_value(r, &mut bytes)?;
        if bytes.len() > MAX_CHUNK_RAW_BYTES {
            return Err(DecodeError::new("templated chunk larger than the limit"));
        }
        offsets.push(bytes.len() as u32);
    }
    checked_strings(offsets, bytes)
}

/// The values of a chunk stored as they are, `n` of them, from `r`.
fn plain_values(ty: ColumnType, r: &mut ByteReader, n: usize) -> DecodeResult<ChunkValues> {
    Ok(match ty {
        ColumnType::Str | ColumnType::Json => {
            let mut offsets = Vec::with_capacity(n + 1);
            let mut total = 0u64;
            offsets.push(0u32);
            for _ in 0..n {
                total = total
                    .checked_add(r.varint()?)
                    .filter(|&total| total <= r.remaining() as u64)
                    .ok_or(DecodeError::new("string lengths exceed chunk"))?;
                offsets.push(total as u32);
            }
            let bytes = r.take(total as usize)?.to_vec();
            checked_strings(offsets, bytes)?
        }
        ColumnType::F64 => {
            let bytes = r.take(n.checked_mul(8).ok_or(DecodeError::new("overflow"))?)?;
            ChunkValues::Numbers(
                bytes
                    .chunks_exact(8)
                    // unwrap: chunks_exact(8) yields 8-byte slices.
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            )
        }
        ColumnType::Bool => {
            let bytes = r.take(n)?;
            if bytes.iter().any(|&b| b > 1) {
                return Err(DecodeError::new("bool value not 0 or 1"));
            }
            ChunkValues::Numbers(bytes.iter().map(|&b| u64::from(b)).collect())
        }
        ColumnType::I64 | ColumnType::U64 | ColumnType::Timestamp => {
            let mut values = Vec::with_capacity(n);
            let mut prev = 0u64;
            for _ in 0..n {
                prev = prev.wrapping_add(unzigzag(r.varint()?) as u64);
                values.push(prev);
            }
            ChunkValues::Numbers(values)
        }
    })
}

/// String values as decoded, checked to be UTF-8. Every value is UTF-8 exactly when the whole
/// is and every offset falls between two characters: one validation of the chunk instead of one
/// call per value, which was a quarter of fetching 1,000 events (`from_utf8` on thousands of
/// short keyword values per chunk, issue 10 item 7).
fn checked_strings(offsets: Vec<u32>, bytes: Vec<u8>) -> DecodeResult<ChunkValues> {
    let text =
        std::str::from_utf8(&bytes).map_err(|_| DecodeError::new("string value is not utf-8"))?;
    if !offsets.iter().all(|&o| text.is_char_boundary(o as usize)) {
        return Err(DecodeError::new("string value is not utf-8"));
    }
    Ok(ChunkValues::Bytes { offsets, bytes })
}

/// A column read one decoded chunk at a time, for callers that visit docs in increasing order
/// (merges, checks of candidate docs): each chunk is decoded once.
pub struct ChunkCursor<'a> {
    column: ColumnReader<'a>,
    chunk: Option<DecodedChunk>,
}

impl<'a> ChunkCursor<'a> {
    pub fn new(column: ColumnReader<'a>) -> Self {
        ChunkCursor {
            column,
            chunk: None,
        }
    }

    /// The chunk holding `doc`'s value and its position there, if `doc` has one.
    pub fn find(&mut self, doc: u32) -> DecodeResult<Option<(&DecodedChunk, usize)>> {
        let current = self
            .chunk
            .as_ref()
            .is_some_and(|c| c.first_doc <= doc && doc < c.end_doc);
        if !current {
            let Some(index) = self.column.chunk_of(doc)? else {
                return Ok(None);
            };
            self.chunk = Some(self.column.decode_chunk(index)?);
        }
        let chunk = self.chunk.as_ref().expect("decoded just above");
        Ok(chunk.position(doc).map(|position| (chunk, position)))
    }
}

impl DecodedChunk {
    /// Heap bytes this chunk holds (what a `ChunkCache` charges for it).
    pub fn heap_bytes(&self) -> usize {
        let docs = self.docs.as_ref().map_or(0, |d| d.len() * 4);
        let values = match &self.values {
            ChunkValues::Bytes { offsets, bytes } => offsets.len() * 4 + bytes.len(),
            ChunkValues::Numbers(numbers) => numbers.len() * 8,
        };
        std::mem::size_of::<Self>() + docs + values
    }

    /// Position of `doc`'s value in `values`, if it has one.
    pub fn position(&self, doc: u32) -> Option<usize> {
        if doc < self.first_doc || doc >= self.end_doc {
            return None;
        }
        match &self.docs {
            None => Some((doc - self.first_doc) as usize),
            Some(docs) => docs.binary_search(&doc).ok(),
        }
    }

    pub fn raw(&self, position: usize) -> Option<u64> {
        match &self.values {
            ChunkValues::Numbers(v) => v.get(position).copied(),
            ChunkValues::Bytes { .. } => None,
        }
    }

    pub fn str_at(&self, position: usize) -> Option<&str> {
        match &self.values {
            ChunkValues::Bytes { offsets, bytes } => {
                let start = *offsets.get(position)? as usize;
                let end = *offsets.get(position + 1)? as usize;
                // The decoder checked every value is utf-8.
                std::str::from_utf8(&bytes[start..end]).ok()
            }
            ChunkValues::Numbers(_) => None,
        }
    }

    pub fn value_at(&self, position: usize) -> Option<Value> {
        Some(match self.ty {
            ColumnType::Str => Value::Str(self.str_at(position)?.to_owned()),
            ColumnType::Json => Value::Json(self.str_at(position)?.to_owned()),
            ColumnType::I64 => Value::I64(self.raw(position)? as i64),
            ColumnType::U64 => Value::U64(self.raw(position)?),
            ColumnType::F64 => Value::F64(f64::from_bits(self.raw(position)?)),
            ColumnType::Bool => Value::Bool(self.raw(position)? != 0),
            ColumnType::Timestamp => Value::Timestamp(self.raw(position)? as i64),
        })
    }

    pub fn get(&self, doc: u32) -> Option<Value> {
        self.value_at(self.position(doc)?)
    }

    pub fn len(&self) -> usize {
        match &self.values {
            ChunkValues::Numbers(v) => v.len(),
            ChunkValues::Bytes { offsets, .. } => offsets.len() - 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
