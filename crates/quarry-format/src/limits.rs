//! Every size limit of the block format, each with the reason it is that value.
//!
//! Decoders check each length they read against these before allocating or slicing, so a corrupt
//! or hostile file produces an error instead of a huge allocation or a panic.

/// Magic bytes at the start and end of every block file.
pub const BLOCK_MAGIC: &[u8; 8] = b"QRYBLOK1";

/// The block format version this build writes (see FORMAT.md). Version 2 added the `_time`
/// offsets section, 3 doc values, 4 page checksums of postings and positions, 5 term infos as
/// grouped varints, 6 lone docs and constant positions in term infos, shared postings and
/// packed norms, 7 templated string chunks, 8 positions from values, 9 resident sections stored
/// compressed, 10 compact skip entries, tails without unit frequencies and columns' zstd
/// dictionaries, 11 token terms as unions of templates; this build still reads versions 1 to
/// 10.
pub const FORMAT_VERSION: u32 = 11;
/// The oldest block format version this build reads.
pub const MIN_FORMAT_VERSION: u32 = 1;

/// Doc ids are u32 and `u32::MAX` is the iterators' end marker, so a block holds fewer docs.
/// The pipeline cuts blocks far below this (by memory budget); merge stops at this.
pub const MAX_DOCS_PER_BLOCK: u32 = 1 << 30;

/// Fields per block. A field ordinal is a u16 in term-dictionary keys.
pub const MAX_FIELDS: usize = u16::MAX as usize;

/// Field names longer than this are rejected at ingest: a name is a key in every block's
/// manifest and in the term dictionary, not a place for data.
pub const MAX_FIELD_NAME_LEN: usize = 512;

/// The longest string value a string doc-values dictionary holds (like Elasticsearch's
/// `ignore_above: 256` for dynamically mapped keyword fields): a column with a longer value
/// keeps no dictionary. Blocks written before `EXACT_TERM_LEN` existed also hold exact terms up
/// to this length.
pub const MAX_EXACT_TERM_LEN: usize = 256;

/// A whole string value is indexed as one exact term (`TermKind::Exact`) only up to this
/// many bytes: keyword-like values (levels, hosts, ids, codes). A longer value, free text
/// whose exact term is nearly always unique, is found by `field:="..."` through its tokens
/// and checked against the column. Exact terms of whole messages were 82% of the term
/// dictionary's key bytes on generated logs, and building their FST the largest cost of the
/// server's ingest (BENCHMARKS.md): without them ingest went from 14.8 to 22.1 MB/s.
pub const EXACT_TERM_LEN: usize = 32;

/// Tokens longer than this are dropped by the analyzer (Lucene's StandardTokenizer splits at
/// 255 chars; tantivy drops above 40). Such tokens are base64 blobs or hashes that nobody types.
pub const MAX_TOKEN_LEN: usize = 255;

/// Postings are bit-packed in blocks of this many doc ids (the SIMD width of `bitpacking`'s
/// BitPacker4x), each with a skip entry for `advance` and block-max pruning.
pub const POSTINGS_BLOCK_LEN: usize = 128;

/// A term's postings of at least this many bytes are shared with an earlier term of the same
/// bytes (format version 6). Below it a shared entry's offset gaps in the term infos (a few
/// bytes each, before and after it) could cost more than they save.
pub const SHARED_POSTINGS_MIN_LEN: usize = 16;

/// A column chunk closes after this many docs or `COLUMN_CHUNK_TARGET_BYTES` raw bytes,
/// whichever comes first. Small chunks make fetching one hit cheap (decompress about 64 KiB)
/// and min/max skipping fine-grained; large ones compress better. 64 KiB is zstd's sweet spot.
pub const COLUMN_CHUNK_MAX_DOCS: u32 = 8192;
pub const COLUMN_CHUNK_TARGET_BYTES: usize = 64 * 1024;

/// A column writer holds at most this many bytes of uncompressed chunks while it does not yet
/// know whether the column keeps doc values (and then stores no chunk data, format version 6).
/// Past it, chunks are compressed as they close, and kept as well if the doc values are: a
/// bound on a merge's memory, at the cost of some compression that may be thrown away.
pub const PENDING_CHUNK_BYTES: usize = 32 * 1024 * 1024;

/// A string column's first chunks wait, uncompressed, until this many have closed: zstd then
/// trains a dictionary of at most `COLUMN_DICTIONARY_LEN` bytes from them, and every chunk of
/// the column is compressed with it when that pays (format version 10; a column with fewer
/// chunks has none). A 64 KiB chunk compressed alone finds no match in the others; trained on
/// the first 32 chunks (2 MiB, about 0.1 s), a dictionary gives each chunk the column's
/// common text up front: 1M generated messages took 11.0 MB plain, 9.2 MB with one (a
/// model over the chunks, BENCHMARKS.md "Format v10").
pub const COLUMN_DICTIONARY_TRAINING_CHUNKS: usize = 32;
pub const COLUMN_DICTIONARY_LEN: usize = 64 * 1024;
/// A column's dictionary section may not claim more than this many bytes (readers).
pub const MAX_COLUMN_DICTIONARY_LEN: usize = 1 << 20;

/// `_time` chunks close after this many docs instead. Histograms and time bounds find the
/// exact doc where a time starts by decoding the one chunk around it (the sparse time index
/// narrows it to 128 docs first); a 1024-doc chunk decodes in a few microseconds where an
/// 8192-doc one takes eight times that, and one-minute buckets over a day need 1440 look-ups.
/// Time deltas are small varints, so the smaller chunks cost little compression.
pub const TIME_CHUNK_MAX_DOCS: u32 = 1024;

/// A decoded column chunk may not claim more than this many raw bytes (a single huge value
/// can exceed the target, so this is far above it).
pub const MAX_CHUNK_RAW_BYTES: usize = 256 * 1024 * 1024;

/// zstd level for column chunks. Level 1 compresses about twice as fast as the default level 3
/// for about 11% more bytes on Wikipedia text (measured with 64 KiB blocks); compression was
/// 8% of single-thread indexing time at level 3, and logs compress well at either level.
pub const COLUMN_ZSTD_LEVEL: i32 = 1;

/// One `_time` value out of this many docs goes into the sparse time index, so a time bound
/// maps to a range of at most this many docs without decoding the `_time` column.
pub const TIME_INDEX_INTERVAL: u32 = 128;

/// The manifest is decoded in full at open; it lists fields and sections, not data.
pub const MAX_MANIFEST_LEN: u64 = 64 * 1024 * 1024;

/// Footer: manifest offset u64, manifest length u64, version u32, manifest crc32 u32, magic.
pub const FOOTER_LEN: usize = 8 + 8 + 4 + 4 + 8;

/// Postings and positions are checksummed per page of this many bytes (format v4), each page
/// verified the first time a query reads it. A whole-section crc would make the first query of
/// a large block read every posting it holds; a per-term crc would cost 4 bytes for each of
/// millions of rare terms. 16 KiB costs 0.025% in crcs and about 1 µs to verify (crc32fast).
pub const CHECKSUM_PAGE_LEN: u32 = 16 * 1024;
/// A page length that a block may declare: a decoder accepts any power of two in this range.
pub const MIN_CHECKSUM_PAGE_LEN: u32 = 512;
pub const MAX_CHECKSUM_PAGE_LEN: u32 = 1 << 30;
