//! The in-memory segment: events indexed in RAM, turned into a block file by `write_block`.
//!
//! Layout follows seed 003 §3.3.2: a Swiss table (hashbrown) maps each term key (builder field
//! id, kind, bytes) straight to a term id, and each term owns one contiguous byte buffer of
//! postings (varint doc delta, tf, position deltas), so indexing a token is one hash probe and
//! an append, and serializing walks each buffer once. Doc ids are arrival order here; writing
//! the block sorts docs by `_time` (stable) and remaps ids, skipping the remap when input
//! already arrived in time order (the common case for logs).

use crate::analysis::Analyzer;
use hashbrown::HashMap;
use quarry_format::block::{
    write_block, BlockInput, FieldInput, InvertedIndexWriter, Manifest, TextInput,
};
use quarry_format::codec::{put_varint, ByteReader};
use quarry_format::column::ColumnWriter;
use quarry_format::fieldnorm::length_to_id;
use quarry_format::limits::{MAX_DOCS_PER_BLOCK, MAX_EXACT_TERM_LEN};
use quarry_format::{ColumnType, FormatError, TermKind, Value, TIME_FIELD};
use std::path::Path;
use std::sync::Arc;

/// One column being built: the docs that have a value and the values.
struct ColumnBuffer {
    ty: ColumnType,
    docs: Vec<u32>,
    /// Numbers, bools and times as raw 64-bit patterns.
    numbers: Vec<u64>,
    /// Strings: value `i` is `bytes[ends[i - 1]..ends[i]]`.
    ends: Vec<usize>,
    bytes: Vec<u8>,
}

impl ColumnBuffer {
    fn new(ty: ColumnType) -> Self {
        ColumnBuffer {
            ty,
            docs: Vec::new(),
            numbers: Vec::new(),
            ends: Vec::new(),
            bytes: Vec::new(),
        }
    }

    fn str_at(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        // Only whole `&str` values were appended, so every value range is utf-8.
        std::str::from_utf8(&self.bytes[start..self.ends[i]]).unwrap_or_default()
    }
}

struct FieldBuffer {
    name: String,
    columns: Vec<ColumnBuffer>,
    /// (doc, token count) for each doc with tokens in this field.
    lengths: Vec<(u32, u32)>,
    total_tokens: u64,
    /// The last doc that had this field (a flattened name can repeat within one event:
    /// `{"a.b": 1, "a": {"b": 2}}`; only the first value is kept).
    last_doc: Option<u32>,
}

/// One term's postings, as appended: per doc `doc delta, tf, positions (deltas)`.
#[derive(Default)]
struct TermBuffer {
    last_doc: u32,
    doc_freq: u32,
    bytes: Vec<u8>,
}

/// Events indexed in memory, in arrival order.
pub struct SegmentBuilder {
    analyzer: Arc<Analyzer>,
    times: Vec<i64>,
    fields: Vec<FieldBuffer>,
    field_ids: HashMap<String, u16>,
    terms: HashMap<Box<[u8]>, u32>,
    postings: Vec<TermBuffer>,
    key: Vec<u8>,
    doc_tokens: Vec<u64>,
    memory: usize,
}

/// Approximate fixed cost of one term beyond its key and postings bytes (hash slot, buffer).
const TERM_OVERHEAD: usize = 64;

impl SegmentBuilder {
    pub fn new(analyzer: Arc<Analyzer>) -> Self {
        SegmentBuilder {
            analyzer,
            times: Vec::new(),
            fields: Vec::new(),
            field_ids: HashMap::new(),
            terms: HashMap::new(),
            postings: Vec::new(),
            key: Vec::new(),
            doc_tokens: Vec::new(),
            memory: 0,
        }
    }

    pub fn doc_count(&self) -> u32 {
        self.times.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Approximate bytes held (postings, terms, column values).
    pub fn memory_bytes(&self) -> usize {
        self.memory
    }

    /// Whether the block would be full after one more doc.
    pub fn is_full(&self) -> bool {
        self.doc_count() >= MAX_DOCS_PER_BLOCK - 1
    }

    fn field_id(&mut self, name: &str) -> u16 {
        if let Some(&id) = self.field_ids.get(name) {
            return id;
        }
        let id = self.fields.len() as u16;
        self.fields.push(FieldBuffer {
            name: name.to_owned(),
            columns: Vec::new(),
            lengths: Vec::new(),
            total_tokens: 0,
            last_doc: None,
        });
        self.field_ids.insert(name.to_owned(), id);
        self.memory += name.len() + 128;
        id
    }

    /// Adds one event. Fields named `_time` are ignored (the time is `time`).
    pub fn add_event<'v>(
        &mut self,
        time: i64,
        fields: impl IntoIterator<Item = (&'v str, &'v Value)>,
    ) {
        let doc = self.times.len() as u32;
        self.times.push(time);
        self.memory += 8;
        for (name, value) in fields {
            if name == TIME_FIELD
                || self.field_ids.len() >= quarry_format::limits::MAX_FIELDS - 1
                    && !self.field_ids.contains_key(name)
            {
                continue;
            }
            let field = self.field_id(name);
            if self.fields[field as usize].last_doc == Some(doc) {
                continue;
            }
            self.fields[field as usize].last_doc = Some(doc);
            self.add_column_value(field, doc, value);
            match value {
                Value::Str(text) => {
                    self.index_text(field, doc, text);
                    if text.len() <= MAX_EXACT_TERM_LEN {
                        self.add_exact(field, doc, text.as_bytes());
                    }
                }
                Value::Json(text) => self.index_text(field, doc, text),
                Value::I64(v) => self.index_text(field, doc, &v.to_string()),
                Value::U64(v) => self.index_text(field, doc, &v.to_string()),
                Value::F64(v) => self.index_text(field, doc, &v.to_string()),
                Value::Bool(v) => self.index_text(field, doc, if *v { "true" } else { "false" }),
                Value::Timestamp(_) => {}
            }
        }
    }

    fn add_column_value(&mut self, field: u16, doc: u32, value: &Value) {
        let ty = value.column_type();
        let columns = &mut self.fields[field as usize].columns;
        let index = match columns.iter().position(|c| c.ty == ty) {
            Some(i) => i,
            None => {
                columns.push(ColumnBuffer::new(ty));
                columns.len() - 1
            }
        };
        let column = &mut columns[index];
        column.docs.push(doc);
        let added = match value {
            Value::Str(s) | Value::Json(s) => {
                column.bytes.extend_from_slice(s.as_bytes());
                column.ends.push(column.bytes.len());
                s.len() + 12
            }
            Value::I64(v) | Value::Timestamp(v) => {
                column.numbers.push(*v as u64);
                12
            }
            Value::U64(v) => {
                column.numbers.push(*v);
                12
            }
            Value::F64(v) => {
                column.numbers.push(v.to_bits());
                12
            }
            Value::Bool(v) => {
                column.numbers.push(u64::from(*v));
                12
            }
        };
        self.memory += added;
    }

    /// Looks up (or creates) the term id of `(field, kind, term)`.
    fn term_id(&mut self, field: u16, kind: TermKind, term: &[u8]) -> u32 {
        self.key.clear();
        self.key.extend_from_slice(&field.to_le_bytes());
        self.key.push(kind as u8);
        self.key.extend_from_slice(term);
        if let Some(&id) = self.terms.get(self.key.as_slice()) {
            return id;
        }
        let id = self.postings.len() as u32;
        self.terms.insert(self.key.clone().into_boxed_slice(), id);
        self.postings.push(TermBuffer::default());
        self.memory += self.key.len() + TERM_OVERHEAD;
        id
    }

    fn add_exact(&mut self, field: u16, doc: u32, value: &[u8]) {
        let id = self.term_id(field, TermKind::Exact, value);
        let term = &mut self.postings[id as usize];
        let before = term.bytes.len();
        put_varint(&mut term.bytes, u64::from(doc - term.last_doc));
        term.last_doc = doc;
        term.doc_freq += 1;
        self.memory += term.bytes.len() - before;
    }

    fn index_text(&mut self, field: u16, doc: u32, text: &str) {
        self.doc_tokens.clear();
        // The analyzer is shared (Arc) so the closure may borrow `self` mutably to intern.
        let analyzer = Arc::clone(&self.analyzer);
        analyzer.tokenize(text, 0, |position, token| {
            let id = self.term_id(field, TermKind::Token, token.as_bytes());
            self.doc_tokens
                .push((u64::from(id) << 32) | u64::from(position));
        });
        if self.doc_tokens.is_empty() {
            return;
        }
        self.doc_tokens.sort_unstable();
        let token_count = self.doc_tokens.len() as u32;
        let field_buffer = &mut self.fields[field as usize];
        field_buffer.lengths.push((doc, token_count));
        field_buffer.total_tokens += u64::from(token_count);
        let mut i = 0;
        let tokens = &self.doc_tokens;
        while i < tokens.len() {
            let id = (tokens[i] >> 32) as usize;
            let mut j = i;
            while j < tokens.len() && (tokens[j] >> 32) as usize == id {
                j += 1;
            }
            let term = &mut self.postings[id];
            let before = term.bytes.len();
            put_varint(&mut term.bytes, u64::from(doc - term.last_doc));
            put_varint(&mut term.bytes, (j - i) as u64);
            let mut prev = 0u32;
            for &token in &tokens[i..j] {
                let position = token as u32;
                put_varint(&mut term.bytes, u64::from(position - prev));
                prev = position;
            }
            term.last_doc = doc;
            term.doc_freq += 1;
            self.memory += term.bytes.len() - before;
            i = j;
        }
    }

    /// Writes the segment as a block file, docs sorted by `_time` (stable).
    pub fn write_block(self, path: &Path) -> Result<Manifest, FormatError> {
        let doc_count = self.doc_count();
        let mut order: Vec<u32> = (0..doc_count).collect();
        let sorted = self.times.windows(2).all(|w| w[0] <= w[1]);
        if !sorted {
            order.sort_by_key(|&doc| self.times[doc as usize]);
        }
        // new_id[old] (None when ids are already in time order).
        let new_id: Option<Vec<u32>> = (!sorted).then(|| {
            let mut new_id = vec![0u32; doc_count as usize];
            for (new, &old) in order.iter().enumerate() {
                new_id[old as usize] = new as u32;
            }
            new_id
        });
        let remap = |doc: u32| new_id.as_ref().map_or(doc, |m| m[doc as usize]);
        let times: Vec<i64> = order.iter().map(|&old| self.times[old as usize]).collect();

        // Field ordinals: names sorted, `_time` among them.
        let mut names: Vec<(&str, Option<u16>)> = self
            .fields
            .iter()
            .enumerate()
            .map(|(id, f)| (f.name.as_str(), Some(id as u16)))
            .collect();
        names.push((TIME_FIELD, None));
        names.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut ordinal_of = vec![0u16; self.fields.len()];
        for (ordinal, &(_, id)) in names.iter().enumerate() {
            if let Some(id) = id {
                ordinal_of[id as usize] = ordinal as u16;
            }
        }

        // Norms in final doc order, per builder field (empty for fields without tokens).
        let norms: Vec<Vec<u8>> = self
            .fields
            .iter()
            .map(|field| {
                if field.lengths.is_empty() {
                    return Vec::new();
                }
                let mut norms = vec![0u8; doc_count as usize];
                for &(doc, len) in &field.lengths {
                    norms[remap(doc) as usize] = length_to_id(len);
                }
                norms
            })
            .collect();

        let inverted = self.write_terms(&ordinal_of, &norms, new_id.as_deref())?;

        let mut fields = Vec::with_capacity(names.len());
        let mut norms = norms;
        for &(name, id) in &names {
            let Some(id) = id else {
                let mut writer = ColumnWriter::new(ColumnType::Timestamp);
                for (doc, &time) in times.iter().enumerate() {
                    writer.push_raw(doc as u32, time as u64)?;
                }
                fields.push(FieldInput {
                    name: TIME_FIELD.to_owned(),
                    columns: vec![writer.finish(doc_count)?],
                    text: None,
                });
                continue;
            };
            let field = &self.fields[id as usize];
            let mut columns = Vec::with_capacity(field.columns.len());
            let mut buffers: Vec<&ColumnBuffer> = field.columns.iter().collect();
            buffers.sort_by_key(|c| c.ty);
            for buffer in buffers {
                let mut entries: Vec<(u32, u32)> = buffer
                    .docs
                    .iter()
                    .enumerate()
                    .map(|(i, &doc)| (remap(doc), i as u32))
                    .collect();
                if new_id.is_some() {
                    entries.sort_unstable();
                }
                let mut writer = ColumnWriter::new(buffer.ty);
                for (doc, i) in entries {
                    match buffer.ty {
                        ColumnType::Str | ColumnType::Json => {
                            writer.push_str(doc, buffer.str_at(i as usize))?
                        }
                        _ => writer.push_raw(doc, buffer.numbers[i as usize])?,
                    }
                }
                columns.push(writer.finish(doc_count)?);
            }
            let text = (!field.lengths.is_empty()).then(|| TextInput {
                norms: std::mem::take(&mut norms[id as usize]),
                docs_with_field: field.lengths.len() as u32,
                total_tokens: field.total_tokens,
            });
            fields.push(FieldInput {
                name: name.to_owned(),
                columns,
                text,
            });
        }
        write_block(
            path,
            BlockInput {
                times,
                fields,
                inverted,
            },
        )
    }

    fn write_terms(
        &self,
        ordinal_of: &[u16],
        norms: &[Vec<u8>],
        new_id: Option<&[u32]>,
    ) -> Result<InvertedIndexWriter, FormatError> {
        let remap = |doc: u32| new_id.map_or(doc, |m| m[doc as usize]);
        // Sort term keys by (field ordinal, kind, bytes): the term dictionary's key order.
        // Sort key: (field ordinal, kind, first 8 term bytes big-endian, term bytes, id). The
        // 8-byte prefix settles almost every comparison without a memcmp call through the
        // slice pointer (the profile of indexing Wikipedia showed 11% of all time in memcmp).
        let mut keys: Vec<(u16, u8, u64, &[u8], u32)> = self
            .terms
            .iter()
            .map(|(key, &id)| {
                let field = u16::from_le_bytes([key[0], key[1]]);
                let term = &key[3..];
                let mut prefix = [0u8; 8];
                let n = term.len().min(8);
                prefix[..n].copy_from_slice(&term[..n]);
                (
                    ordinal_of[field as usize],
                    key[2],
                    u64::from_be_bytes(prefix),
                    term,
                    id,
                )
            })
            .collect();
        keys.sort_unstable();
        let mut field_of_ordinal = vec![0u16; ordinal_of.len() + 1];
        for (field, &ordinal) in ordinal_of.iter().enumerate() {
            field_of_ordinal[ordinal as usize] = field as u16;
        }
        let mut writer = InvertedIndexWriter::default();
        let mut docs = Vec::new();
        let mut tfs = Vec::new();
        let mut positions = Vec::new();
        let mut entries: Vec<(u32, u32, u32)> = Vec::new();
        let mut sorted_positions = Vec::new();
        for (ordinal, kind, _, term, id) in keys {
            let kind = if kind == TermKind::Exact as u8 {
                TermKind::Exact
            } else {
                TermKind::Token
            };
            let buffer = &self.postings[id as usize];
            docs.clear();
            tfs.clear();
            positions.clear();
            let mut r = ByteReader::new(&buffer.bytes);
            let mut doc = 0u32;
            for _ in 0..buffer.doc_freq {
                // The buffer was written by this builder just above; it always decodes.
                doc += r.varint_u32().unwrap_or(0);
                docs.push(remap(doc));
                if kind == TermKind::Token {
                    let tf = r.varint_u32().unwrap_or(0);
                    tfs.push(tf);
                    let mut position = 0;
                    for _ in 0..tf {
                        position += r.varint_u32().unwrap_or(0);
                        positions.push(position);
                    }
                } else {
                    tfs.push(1);
                }
            }
            if new_id.is_some() {
                // Reorder docs (and their tfs and positions) by new id.
                entries.clear();
                let mut start = 0u32;
                for (&doc, &tf) in docs.iter().zip(&tfs) {
                    entries.push((doc, tf, start));
                    start += if kind == TermKind::Token { tf } else { 0 };
                }
                entries.sort_unstable();
                sorted_positions.clear();
                for (i, &(doc, tf, start)) in entries.iter().enumerate() {
                    docs[i] = doc;
                    tfs[i] = tf;
                    if kind == TermKind::Token {
                        sorted_positions
                            .extend_from_slice(&positions[start as usize..(start + tf) as usize]);
                    }
                }
                std::mem::swap(&mut positions, &mut sorted_positions);
            }
            let field_norms = &norms[field_of_ordinal[ordinal as usize] as usize];
            let norm_of = |doc: u32| field_norms.get(doc as usize).copied().unwrap_or(0);
            let positions = (kind == TermKind::Token).then_some(positions.as_slice());
            writer.add_term(ordinal, kind, term, &docs, &tfs, norm_of, positions)?;
        }
        Ok(writer)
    }
}
