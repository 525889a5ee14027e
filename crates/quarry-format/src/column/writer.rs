use super::template::{TemplateBuilder, MIN_TEMPLATED_AVERAGE_LEN, TEMPLATED};
use super::{ChunkMeta, PRESENCE_ALL, PRESENCE_LIST};
use crate::codec::{put_varint, zigzag};
use crate::docvalues::DocValuesBuilder;
use crate::error::{FormatError, Result};
use crate::limits::{
    COLUMN_CHUNK_MAX_DOCS, COLUMN_CHUNK_TARGET_BYTES, COLUMN_DICTIONARY_LEN,
    COLUMN_DICTIONARY_TRAINING_CHUNKS, COLUMN_ZSTD_LEVEL, PENDING_CHUNK_BYTES, TIME_CHUNK_MAX_DOCS,
};
use crate::value::{ColumnType, MinMax};

/// Builds one column, value by value in increasing doc order, cutting chunks as it goes.
///
/// A column that keeps doc values stores no chunk data (format version 6): its chunks are
/// rebuilt from the doc values, which hold the same values exactly, and only their directory
/// entries (doc range, count, min/max) are written. Whether a column keeps doc values is known
/// at `finish`, so while it still may, closed chunks wait uncompressed, up to
/// `PENDING_CHUNK_BYTES`; past that, or once the doc values are given up, they are compressed.
pub struct ColumnWriter {
    ty: ColumnType,
    /// First doc of the open chunk. The first chunk starts at doc 0 and each next one where the
    /// previous closed, so chunks partition the doc range.
    chunk_first_doc: u32,
    /// Doc ids (absolute) with a value in the open chunk.
    chunk_docs: Vec<u32>,
    /// Numeric values of the open chunk as raw 64-bit patterns (numbers, bools, time).
    chunk_numbers: Vec<u64>,
    /// String values of the open chunk: lengths then bytes.
    chunk_lengths: Vec<u32>,
    chunk_bytes: Vec<u8>,
    next_doc: u32,
    data: Vec<u8>,
    /// Chunks compressed into `data`, then the chunks waiting (each with its raw payload).
    directory: Vec<ChunkMeta>,
    /// Each waiting chunk's payload, and whether it is templated.
    pending: Vec<(ChunkMeta, Vec<u8>, bool)>,
    pending_bytes: usize,
    scratch: Vec<u8>,
    present_count: u64,
    min_max: Option<MinMax>,
    /// A chunk closes after this many docs (`COLUMN_CHUNK_MAX_DOCS` unless chosen).
    chunk_max_docs: u32,
    /// Strings and integers: the same values again, for random access (`docvalues`).
    doc_values: Option<DocValuesBuilder>,
    /// Strings: the column's templates (format version 7), for chunks of long values.
    templates: Option<TemplateBuilder>,
    /// Whether a chunk stored with data is templated (then the dictionary is written).
    stored_templated: bool,
    /// How chunks with data are compressed (string and JSON columns: with a trained zstd
    /// dictionary when that pays, format version 10).
    compression: Compression,
    /// Chunks that wait for a dictionary before `compression` is decided
    /// (`COLUMN_DICTIONARY_TRAINING_CHUNKS`).
    training_chunks: usize,
}

/// How a column's chunks are compressed.
enum Compression {
    /// The first chunks wait (each with its payload and whether it is templated) until there
    /// are enough to train a dictionary from.
    Undecided(Vec<(ChunkMeta, Vec<u8>, bool)>),
    Plain,
    /// Every chunk with the column's trained dictionary, which the column stores.
    Dictionary {
        dictionary: Vec<u8>,
        compressor: Box<zstd::bulk::Compressor<'static>>,
    },
}

/// A finished column: compressed chunk data and its directory, ready for the block writer.
pub struct ColumnData {
    pub ty: ColumnType,
    pub data: Vec<u8>,
    pub directory: Vec<u8>,
    pub chunk_count: u32,
    pub present_count: u64,
    pub min_max: Option<MinMax>,
    /// The encoded doc values section, when the column has one.
    pub doc_values: Option<Vec<u8>>,
    /// The template dictionary section, when a stored chunk is templated (version 7).
    pub templates: Option<Vec<u8>>,
    /// The zstd dictionary every chunk with data was compressed with (version 10).
    pub dictionary: Option<Vec<u8>>,
}

impl ColumnWriter {
    pub fn new(ty: ColumnType) -> Self {
        Self::with_chunk_max_docs(ty, COLUMN_CHUNK_MAX_DOCS)
    }

    /// The `_time` column: chunks of `TIME_CHUNK_MAX_DOCS` docs, and no doc values (the
    /// block's time offsets serve random access to `_time`).
    pub fn for_time() -> Self {
        ColumnWriter {
            doc_values: None,
            ..Self::with_chunk_max_docs(ColumnType::Timestamp, TIME_CHUNK_MAX_DOCS)
        }
    }

    /// A column without doc values (a mapping's `doc_values: false`): its chunks alone.
    pub fn without_doc_values(ty: ColumnType) -> Self {
        ColumnWriter {
            doc_values: None,
            ..Self::new(ty)
        }
    }

    /// A writer whose chunks close after at most `chunk_max_docs` docs (at least 1).
    pub fn with_chunk_max_docs(ty: ColumnType, chunk_max_docs: u32) -> Self {
        ColumnWriter {
            ty,
            chunk_first_doc: 0,
            chunk_docs: Vec::new(),
            chunk_numbers: Vec::new(),
            chunk_lengths: Vec::new(),
            chunk_bytes: Vec::new(),
            next_doc: 0,
            data: Vec::new(),
            directory: Vec::new(),
            pending: Vec::new(),
            pending_bytes: 0,
            scratch: Vec::new(),
            present_count: 0,
            min_max: None,
            chunk_max_docs: chunk_max_docs.max(1),
            doc_values: match ty {
                ColumnType::Str => Some(DocValuesBuilder::strings()),
                ColumnType::I64 | ColumnType::Timestamp => Some(DocValuesBuilder::integers(true)),
                ColumnType::U64 | ColumnType::Bool => Some(DocValuesBuilder::integers(false)),
                ColumnType::F64 | ColumnType::Json => None,
            },
            templates: (ty == ColumnType::Str).then(TemplateBuilder::new),
            stored_templated: false,
            compression: match ty {
                ColumnType::Str | ColumnType::Json => Compression::Undecided(Vec::new()),
                _ => Compression::Plain,
            },
            training_chunks: COLUMN_DICTIONARY_TRAINING_CHUNKS,
        }
    }

    /// This writer without doc values, so that its chunks keep their data (tests).
    #[cfg(test)]
    pub(crate) fn no_doc_values(mut self) -> Self {
        self.doc_values = None;
        self
    }

    /// A writer that trains its dictionary from its first `chunks` chunks instead (tests:
    /// small columns with one).
    pub fn with_training_chunks(mut self, chunks: usize) -> Self {
        self.training_chunks = chunks.max(1);
        self
    }

    pub fn column_type(&self) -> ColumnType {
        self.ty
    }

    fn is_bytes(&self) -> bool {
        matches!(self.ty, ColumnType::Str | ColumnType::Json)
    }

    fn before_push(&mut self, doc: u32) -> Result<()> {
        if doc < self.next_doc {
            return Err(FormatError::InvalidInput {
                reason: format!(
                    "column values out of doc order: {doc} after {}",
                    self.next_doc
                ),
            });
        }
        let raw_len = self.chunk_bytes.len() + self.chunk_numbers.len() * 8;
        if !self.chunk_docs.is_empty()
            && (doc - self.chunk_first_doc >= self.chunk_max_docs
                || raw_len >= COLUMN_CHUNK_TARGET_BYTES)
        {
            self.close_chunk(doc)?;
        }
        self.chunk_docs.push(doc);
        self.next_doc = doc + 1;
        self.present_count += 1;
        Ok(())
    }

    pub fn push_str(&mut self, doc: u32, value: &str) -> Result<()> {
        debug_assert!(self.is_bytes());
        self.before_push(doc)?;
        if let Some(doc_values) = &mut self.doc_values {
            doc_values.push_str(doc, value.as_bytes());
        }
        self.chunk_lengths.push(value.len() as u32);
        self.chunk_bytes.extend_from_slice(value.as_bytes());
        Ok(())
    }

    /// A numeric, bool or time value as its raw 64-bit pattern (see `MinMax`).
    pub fn push_raw(&mut self, doc: u32, raw: u64) -> Result<()> {
        debug_assert!(!self.is_bytes());
        self.before_push(doc)?;
        if let Some(doc_values) = &mut self.doc_values {
            doc_values.push_raw(doc, raw);
        }
        self.chunk_numbers.push(raw);
        Ok(())
    }

    /// Closes the open chunk; the next chunk starts at `end_doc`.
    fn close_chunk(&mut self, end_doc: u32) -> Result<()> {
        let span = end_doc - self.chunk_first_doc;
        let present = self.chunk_docs.len() as u32;
        let is_bytes = self.is_bytes();
        // Long strings (log messages) are stored as templates and variables; short ones
        // (keywords) as they are.
        let templated = self.templates.is_some()
            && self.chunk_bytes.len() >= MIN_TEMPLATED_AVERAGE_LEN * present as usize;
        let flag = if templated { TEMPLATED } else { 0 };
        let raw = &mut self.scratch;
        raw.clear();
        put_varint(raw, u64::from(present));
        if present == span {
            raw.push(PRESENCE_ALL | flag);
        } else {
            raw.push(PRESENCE_LIST | flag);
            let mut prev = self.chunk_first_doc;
            for &doc in &self.chunk_docs {
                put_varint(raw, u64::from(doc - prev));
                prev = doc;
            }
        }
        let mut min_max = None;
        if let (true, Some(templates)) = (templated, &mut self.templates) {
            let mut start = 0;
            for &len in &self.chunk_lengths {
                let end = start + len as usize;
                templates.encode_value(&self.chunk_bytes[start..end], raw);
                start = end;
            }
        } else if is_bytes {
            for &len in &self.chunk_lengths {
                put_varint(raw, u64::from(len));
            }
            raw.extend_from_slice(&self.chunk_bytes);
        } else {
            match self.ty {
                ColumnType::F64 => {
                    for &v in &self.chunk_numbers {
                        raw.extend_from_slice(&v.to_le_bytes());
                    }
                }
                ColumnType::Bool => raw.extend(self.chunk_numbers.iter().map(|&v| v as u8)),
                _ => {
                    let mut prev = 0u64;
                    for &v in &self.chunk_numbers {
                        put_varint(raw, zigzag(v.wrapping_sub(prev) as i64));
                        prev = v;
                    }
                }
            }
            if self.ty.is_numeric() {
                min_max = MinMax::of(self.ty, self.chunk_numbers.iter().copied());
            }
        }
        let meta = ChunkMeta {
            first_doc: self.chunk_first_doc,
            present_count: present,
            offset: 0,
            len: 0,
            crc: 0,
            min: min_max.map_or(0, |m| m.min),
            max: min_max.map_or(0, |m| m.max),
        };
        self.min_max = MinMax::merge(self.ty, self.min_max, min_max);
        let may_keep_doc_values = self.doc_values.as_ref().is_some_and(|d| !d.is_abandoned());
        if may_keep_doc_values && self.pending_bytes + raw.len() <= PENDING_CHUNK_BYTES {
            self.pending_bytes += raw.len();
            self.pending.push((meta, raw.clone(), templated));
        } else {
            self.compress_pending()?;
            let raw = std::mem::take(&mut self.scratch);
            self.compress(meta, &raw, templated)?;
            self.scratch = raw;
        }
        self.chunk_first_doc = end_doc;
        self.chunk_docs.clear();
        self.chunk_numbers.clear();
        self.chunk_lengths.clear();
        self.chunk_bytes.clear();
        Ok(())
    }

    /// Compresses chunk `meta`'s payload `raw` into the data and adds it to the directory,
    /// or keeps it waiting while the column's compression is undecided.
    fn compress(&mut self, meta: ChunkMeta, raw: &[u8], templated: bool) -> Result<()> {
        if let Compression::Undecided(waiting) = &mut self.compression {
            waiting.push((meta, raw.to_vec(), templated));
            if waiting.len() >= self.training_chunks {
                self.decide_compression()?;
            }
            return Ok(());
        }
        let compressed = match &mut self.compression {
            Compression::Dictionary { compressor, .. } => compressor.compress(raw),
            _ => zstd::bulk::compress(raw, COLUMN_ZSTD_LEVEL),
        }
        .map_err(zstd_failed)?;
        self.store(meta, &compressed, templated);
        Ok(())
    }

    /// Decides how the column's chunks are compressed, from the chunks waiting (all of them
    /// at `finish`): with a dictionary trained from them if there are enough and it makes
    /// them a sixteenth smaller, else plain. Then stores the waiting chunks. The dictionary's
    /// own bytes are paid once for the column, whose later chunks are not known yet: at
    /// worst (a column that ends here) they cost `COLUMN_DICTIONARY_LEN` over at least
    /// `COLUMN_DICTIONARY_TRAINING_CHUNKS` chunks of 64 KiB, a few percent.
    fn decide_compression(&mut self) -> Result<()> {
        let waiting = match &mut self.compression {
            Compression::Undecided(waiting) => std::mem::take(waiting),
            _ => return Ok(()),
        };
        self.compression = Compression::Plain;
        let plain = waiting
            .iter()
            .map(|(_, raw, _)| zstd::bulk::compress(raw, COLUMN_ZSTD_LEVEL))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(zstd_failed)?;
        let mut chosen = plain;
        if waiting.len() >= self.training_chunks {
            let samples: Vec<&[u8]> = waiting.iter().map(|(_, raw, _)| &raw[..]).collect();
            // Training fails on samples too few (zstd wants 7 or more) or too alike: the
            // chunks go plain then.
            if let Ok(dictionary) = zstd::dict::from_samples(&samples, COLUMN_DICTIONARY_LEN) {
                let mut compressor =
                    zstd::bulk::Compressor::with_dictionary(COLUMN_ZSTD_LEVEL, &dictionary)
                        .map_err(zstd_failed)?;
                let with = waiting
                    .iter()
                    .map(|(_, raw, _)| compressor.compress(raw))
                    .collect::<std::io::Result<Vec<_>>>()
                    .map_err(zstd_failed)?;
                let total = |frames: &[Vec<u8>]| frames.iter().map(Vec::len).sum::<usize>();
                let plain_len = total(&chosen);
                if total(&with) + plain_len / 16 < plain_len {
                    chosen = with;
                    self.compression = Compression::Dictionary {
                        dictionary,
                        compressor: Box::new(compressor),
                    };
                }
            }
        }
        for ((meta, _, templated), compressed) in waiting.into_iter().zip(chosen) {
            self.store(meta, &compressed, templated);
        }
        Ok(())
    }

    /// Appends chunk `meta`'s compressed bytes to the data and the chunk to the directory.
    fn store(&mut self, mut meta: ChunkMeta, compressed: &[u8], templated: bool) {
        self.stored_templated |= templated;
        meta.offset = self.data.len() as u64;
        meta.len = compressed.len() as u32;
        meta.crc = crc32fast::hash(compressed);
        self.data.extend_from_slice(compressed);
        self.directory.push(meta);
    }

    fn compress_pending(&mut self) -> Result<()> {
        for (meta, raw, templated) in std::mem::take(&mut self.pending) {
            self.compress(meta, &raw, templated)?;
        }
        self.pending_bytes = 0;
        Ok(())
    }

    /// Finishes the column for a block of `doc_count` docs.
    pub fn finish(mut self, doc_count: u32) -> Result<ColumnData> {
        if !self.chunk_docs.is_empty() {
            if doc_count < self.next_doc {
                return Err(FormatError::InvalidInput {
                    reason: format!(
                        "doc count {doc_count} below a column's doc {}",
                        self.next_doc
                    ),
                });
            }
            self.close_chunk(doc_count)?;
        }
        let doc_values = self.doc_values.take().and_then(|d| d.finish(doc_count));
        // The chunks waiting for a dictionary come before the pending ones, in doc order:
        // stored first. The pending ones are then compressed as decided, or keep no data.
        self.decide_compression()?;
        if doc_values.is_some() {
            // The waiting chunks keep no data: offset, length and crc 0.
            let pending = std::mem::take(&mut self.pending);
            self.directory
                .extend(pending.into_iter().map(|(meta, _, _)| meta));
        } else {
            self.compress_pending()?;
        }
        let mut directory = Vec::with_capacity(self.directory.len() * super::CHUNK_META_LEN);
        for meta in &self.directory {
            meta.encode(&mut directory);
        }
        let templates = match (&self.templates, self.stored_templated) {
            (Some(templates), true) => {
                Some(templates.finish().map_err(|e| FormatError::InvalidInput {
                    reason: format!("zstd compression failed: {e}"),
                })?)
            }
            _ => None,
        };
        let dictionary = match self.compression {
            Compression::Dictionary { dictionary, .. } => Some(dictionary),
            _ => None,
        };
        Ok(ColumnData {
            ty: self.ty,
            templates,
            dictionary,
            data: self.data,
            directory,
            chunk_count: self.directory.len() as u32,
            present_count: self.present_count,
            min_max: self.min_max,
            doc_values,
        })
    }
}

fn zstd_failed(e: std::io::Error) -> FormatError {
    FormatError::InvalidInput {
        reason: format!("zstd compression failed: {e}"),
    }
}
