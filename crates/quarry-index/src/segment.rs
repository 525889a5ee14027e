//! The in-memory segment: events indexed in RAM, turned into a block file by `write_block`.
//!
//! Layout follows seed 003 §3.3.2: a Swiss table (hashbrown) maps each term key (builder field
//! id, kind, bytes) straight to a term id, and each term owns one contiguous byte buffer of
//! postings (varint doc delta, tf, position deltas), so indexing a token is one hash probe and
//! an append, and serializing walks each buffer once. Doc ids are arrival order here; writing
//! the block sorts docs by `_time` (stable) and remaps ids, skipping the remap when input
//! already arrived in time order (the common case for logs).

use crate::analysis::Analyzer;
use crate::schema::{self, Schema};
use hashbrown::HashMap;
use quarry_format::block::{BlockInput, FieldInput, InvertedIndexWriter, Manifest, TextInput};
use quarry_format::codec::ByteReader;
use quarry_format::column::{ColumnData, ColumnWriter};
use quarry_format::fieldnorm::length_to_id;
use quarry_format::limits::{EXACT_TERM_LEN, MAX_DOCS_PER_BLOCK, MAX_FIELDS};
use quarry_format::postings::unions::{DocTemplates, TemplateGroups};
use quarry_format::{f64_term, i64_term, ColumnType, FormatError, TermKind, Value, TIME_FIELD};
use quarry_store::mapping::{FieldMapping, FieldType, MAX_KEYWORD_LEN};
use quarry_store::mapping::{IGNORED_FIELD, POSITION_INCREMENT_GAP};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

/// Named fields a segment (so also one event) holds besides `_time`: a block has at most
/// `MAX_FIELDS` field ordinals (u16), and `_time` takes one.
pub const MAX_SEGMENT_FIELDS: usize = MAX_FIELDS - 1;

/// One column being built: the docs that have a value and the values.
struct ColumnBuffer {
    ty: ColumnType,
    docs: Vec<u32>,
    /// Numbers, bools and times as raw 64-bit patterns.
    numbers: Vec<u64>,
    /// Strings: value `i` is `pages[page][start..start + len]` for `(page, start, len) =
    /// spans[i]`. Fixed-size pages, never reallocated: one growing buffer was copied at
    /// every doubling, and its fresh pages zeroed each time (8% of indexing Wikipedia).
    spans: Vec<(u32, u32, u32)>,
    pages: Vec<Vec<u8>>,
}

/// Bytes per string page; a longer value gets a page of its own size.
const STRING_PAGE_LEN: usize = 1 << 20;
/// Bytes of a column's first string page; each next page doubles up to `STRING_PAGE_LEN`. A
/// segment can hold 65,534 fields, most with a few values: a whole first page each made a
/// segment of 60,000 string fields allocate (and the allocator touch) 60 GB.
const FIRST_STRING_PAGE_LEN: usize = 4 << 10;

impl ColumnBuffer {
    fn new(ty: ColumnType) -> Self {
        ColumnBuffer {
            ty,
            docs: Vec::new(),
            numbers: Vec::new(),
            spans: Vec::new(),
            pages: Vec::new(),
        }
    }

    fn push_str(&mut self, value: &str) {
        let fits = self
            .pages
            .last()
            .is_some_and(|page| page.capacity() - page.len() >= value.len());
        if !fits {
            let len = self.pages.last().map_or(FIRST_STRING_PAGE_LEN, |page| {
                (page.capacity() * 2).min(STRING_PAGE_LEN)
            });
            self.pages.push(Vec::with_capacity(len.max(value.len())));
        }
        // There is a page: one was pushed just above if the last one lacked room.
        let page_index = self.pages.len() - 1;
        let page = &mut self.pages[page_index];
        self.spans
            .push((page_index as u32, page.len() as u32, value.len() as u32));
        page.extend_from_slice(value.as_bytes());
    }

    fn str_at(&self, i: usize) -> &str {
        let (page, start, len) = self.spans[i];
        let bytes = &self.pages[page as usize][start as usize..(start + len) as usize];
        // Only whole `&str` values were appended, so every value range is utf-8.
        std::str::from_utf8(bytes).unwrap_or_default()
    }
}

struct FieldBuffer {
    name: String,
    /// The field's mapping; `None`: dynamic.
    rules: Option<FieldMapping>,
    analyzer: Arc<Analyzer>,
    columns: Vec<ColumnBuffer>,
    /// (doc, token count) for each doc with tokens in this field.
    lengths: Vec<(u32, u32)>,
    total_tokens: u64,
    /// The last doc that had this field, to catch a name repeated within one event: a block
    /// holds one value per field per doc (events gather repeated names first, see `event`).
    last_doc: Option<u32>,
    /// Whether the field's token terms keep no positions, a query finding them by analysing
    /// the stored value (`value_tokens`): an unmapped field with the standard tokenizer, whose
    /// every value is kept in its columns (`Schema::positions_from_values`).
    positions_from_values: bool,
}

/// One term's postings, appended token by token.
///
/// Token terms: per doc `doc delta, first position + 1, position deltas..., 0`; the 0 ends the
/// doc's positions (every other value is at least 1), so a token is appended the moment it is
/// seen, with no per-doc buffering or sorting, and the term frequency is counted at flush.
/// The last doc's 0 is implied by the end of the buffer. Exact terms: per doc `doc delta`.
///
/// The first 16 bytes live inside the buffer (a `SmallVec`), so a rare term, which is most
/// terms, keeps its postings in its hash-table slot and costs no separate cache miss.
#[derive(Default)]
struct TermBuffer {
    last_doc: u32,
    last_position: u32,
    doc_freq: u32,
    bytes: SmallVec<[u8; 16]>,
}

#[inline]
fn push_varint(out: &mut SmallVec<[u8; 16]>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A term key short enough to live inside its hash-table slot, next to its postings buffer.
///
/// Profiling `quarry index` on Wikipedia showed interning tokens to be most of the time, and
/// that time to be cache misses: the table slot, then the key behind a `Box<[u8]>` (memcmp),
/// then the term's entry in a separate postings vector. With the key and the `TermBuffer` in
/// the slot itself (64 bytes, one cache line), a token costs the slot and its buffer's tail.
/// Keys longer than `INLINE_KEY_LEN` (rare) live in a second table.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct InlineKey {
    len: u8,
    bytes: [u8; INLINE_KEY_LEN],
}

const INLINE_KEY_LEN: usize = 23;

impl InlineKey {
    fn new(key: &[u8]) -> Option<InlineKey> {
        let mut bytes = [0u8; INLINE_KEY_LEN];
        bytes.get_mut(..key.len())?.copy_from_slice(key);
        Some(InlineKey {
            len: key.len() as u8,
            bytes,
        })
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// Every term of the segment with its postings: key (builder field id LE, kind, bytes) to
/// buffer.
#[derive(Default)]
struct Vocabulary {
    inline: HashMap<InlineKey, TermBuffer>,
    long: HashMap<Box<[u8]>, TermBuffer>,
    /// Approximate bytes of keys and slots.
    memory: usize,
}

impl Vocabulary {
    #[inline]
    fn get_or_insert(&mut self, key: &[u8]) -> &mut TermBuffer {
        match InlineKey::new(key) {
            Some(inline) => match self.inline.entry(inline) {
                hashbrown::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                hashbrown::hash_map::Entry::Vacant(entry) => {
                    self.memory += TERM_OVERHEAD;
                    entry.insert(TermBuffer::default())
                }
            },
            None => {
                if !self.long.contains_key(key) {
                    self.memory += key.len() + TERM_OVERHEAD;
                    self.long.insert(key.into(), TermBuffer::default());
                }
                // Present: inserted just above if it was missing.
                self.long.get_mut(key).expect("inserted above")
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], &TermBuffer)> {
        let inline = self
            .inline
            .iter()
            .map(|(key, buffer)| (key.as_slice(), buffer));
        inline.chain(self.long.iter().map(|(key, buffer)| (&key[..], buffer)))
    }
}

/// The texts an unmapped field's value is tokenized from, and the positions between one text's
/// and the next's: a string itself, a number or boolean its decimal text, a JSON array each
/// item's text (`POSITION_INCREMENT_GAP` apart; `items` are its items), other JSON its text,
/// a timestamp none. Blocks whose positions come from the values (FORMAT.md) are read back
/// through this: it changes only with a format version.
fn dynamic_texts<'v>(
    value: &'v Value,
    items: Option<&[Value]>,
) -> (SmallVec<[Cow<'v, str>; 1]>, u32) {
    let one = |text: Cow<'v, str>| (SmallVec::from_iter([text]), 0);
    match (value, items) {
        (Value::Str(text), _) => one(Cow::Borrowed(text)),
        (Value::Json(_), Some(items)) => (
            items
                .iter()
                .map(|item| Cow::Owned(crate::event::value_text(item)))
                .collect(),
            POSITION_INCREMENT_GAP,
        ),
        (Value::Json(text), None) => one(Cow::Borrowed(text)),
        (Value::I64(_) | Value::U64(_) | Value::F64(_) | Value::Bool(_), _) => {
            one(Cow::Owned(crate::event::value_text(value)))
        }
        (Value::Timestamp(_), _) => (SmallVec::new(), 0),
    }
}

/// Calls `emit(position, token)` for each token an unmapped field's `value` is indexed by (the
/// standard analyzer, stop words kept): the positions a block whose positions come from the
/// values (FORMAT.md, "Positions from values") does not store.
pub fn value_tokens(value: &Value, buffer: &mut Vec<u8>, emit: impl FnMut(u32, &[u8])) {
    static STANDARD: std::sync::OnceLock<Analyzer> = std::sync::OnceLock::new();
    let analyzer = STANDARD.get_or_init(Analyzer::default);
    let items = array_items(value);
    let (texts, gap) = dynamic_texts(value, items.as_deref());
    analyzer.tokenize_texts(texts.iter().map(|t| t.as_ref()), gap, &[], buffer, emit);
}

/// The items of a JSON array value, `None` for any other value.
fn array_items(value: &Value) -> Option<Vec<Value>> {
    match value {
        Value::Json(text) if text.starts_with('[') => Some(schema::items(value)),
        _ => None,
    }
}

/// Events indexed in memory, in arrival order.
pub struct SegmentBuilder {
    schema: Arc<Schema>,
    times: Vec<i64>,
    fields: Vec<FieldBuffer>,
    field_ids: HashMap<String, u16>,
    vocabulary: Vocabulary,
    key: Vec<u8>,
    /// The fields of the event being added whose values were kept but not indexed, for its
    /// `_ignored` column.
    ignored: Vec<String>,
    /// Approximate bytes of postings and column values (the vocabulary counts its own).
    memory: usize,
}

/// The first bytes of an in-memory term key: builder field id (LE) and kind.
fn key_prefix(field: u16, kind: TermKind) -> [u8; 3] {
    let [a, b] = field.to_le_bytes();
    [a, b, kind as u8]
}

/// Approximate fixed cost of one term beyond its key and postings bytes (hash slot, buffer).
const TERM_OVERHEAD: usize = 64;

impl SegmentBuilder {
    /// A builder indexing every field dynamically with `analyzer`.
    pub fn new(analyzer: Arc<Analyzer>) -> Self {
        Self::with_schema(Arc::new(Schema::dynamic(analyzer)))
    }

    /// A builder indexing each field as `schema` maps it.
    pub fn with_schema(schema: Arc<Schema>) -> Self {
        SegmentBuilder {
            schema,
            times: Vec::new(),
            fields: Vec::new(),
            field_ids: HashMap::new(),
            vocabulary: Vocabulary::default(),
            key: Vec::new(),
            ignored: Vec::new(),
            memory: 0,
        }
    }

    /// Indexes the fields this segment has not seen yet as `schema` says (a mapping that grew
    /// while the segment was being filled); fields it holds keep the rules they started with.
    pub fn set_schema(&mut self, schema: Arc<Schema>) {
        self.schema = schema;
    }

    pub fn doc_count(&self) -> u32 {
        self.times.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Approximate bytes held (postings, terms, column values).
    pub fn memory_bytes(&self) -> usize {
        self.memory + self.vocabulary.memory
    }

    /// Whether the block would be full after one more doc.
    pub fn is_full(&self) -> bool {
        self.doc_count() >= MAX_DOCS_PER_BLOCK - 1
    }

    /// Whether an event with the field names `names` fits in this segment: at most
    /// `MAX_SEGMENT_FIELDS` names, counting only those the segment does not hold yet. When it
    /// does not, write this segment and add the event to a fresh one, where any event from
    /// `parse_event` fits. `names` should be distinct (a repeated new name is counted twice,
    /// which can only answer no too early).
    pub fn has_room_for<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let names = names.into_iter();
        let free = MAX_SEGMENT_FIELDS - self.fields.len();
        // Fewer names than free slots fit whatever they are: no hash look-ups for most events.
        if names.size_hint().1.is_some_and(|count| count <= free) {
            return true;
        }
        let mut new = 0;
        for name in names {
            if !self.field_ids.contains_key(name) {
                new += 1;
                if new > free {
                    return false;
                }
            }
        }
        true
    }

    fn field_id(&mut self, name: &str) -> u16 {
        if let Some(&id) = self.field_ids.get(name) {
            return id;
        }
        // A block holds no more fields; silently skipping the value would lose it.
        assert!(
            self.fields.len() < MAX_SEGMENT_FIELDS,
            "field {name:?} does not fit: the segment holds {MAX_SEGMENT_FIELDS} fields (call has_room_for first)"
        );
        let id = self.fields.len() as u16;
        self.fields.push(FieldBuffer {
            name: name.to_owned(),
            rules: self.schema.index_rules(name),
            analyzer: self.schema.analyzer_for(name).clone(),
            columns: Vec::new(),
            lengths: Vec::new(),
            total_tokens: 0,
            last_doc: None,
            positions_from_values: self.schema.positions_from_values(name),
        });
        self.field_ids.insert(name.to_owned(), id);
        self.memory += name.len() + 128;
        id
    }

    /// Adds one event.
    ///
    /// The caller guarantees what `parse_event` gives: distinct names, none of them `_time`
    /// (the time is `time`), and `has_room_for` holds. A block stores one value per field per
    /// doc and at most `MAX_SEGMENT_FIELDS` fields, so an event that breaks this could only be
    /// stored by dropping values; that is a bug in the caller and panics rather than lose data.
    pub fn add_event<'v>(
        &mut self,
        time: i64,
        fields: impl IntoIterator<Item = (&'v str, &'v Value)>,
    ) {
        let doc = self.times.len() as u32;
        self.times.push(time);
        self.memory += 8;
        self.ignored.clear();
        let mut sent_ignored = false;
        for (name, value) in fields {
            sent_ignored |= name == IGNORED_FIELD;
            assert!(
                name != TIME_FIELD,
                "{TIME_FIELD} passed as a field (the time is an argument)"
            );
            let field = self.field_id(name);
            let buffer = &mut self.fields[field as usize];
            assert!(
                buffer.last_doc != Some(doc),
                "field {name:?} repeated in one event"
            );
            buffer.last_doc = Some(doc);
            if let Some(root) = self.schema.mapping().flat_root(name) {
                self.add_flat(field, root, doc, value);
                continue;
            }
            if let Some(rules) = buffer.rules {
                self.add_mapped(field, doc, value, rules);
                continue;
            }
            self.add_column_value(field, doc, value);
            let items = array_items(value);
            let (texts, gap) = dynamic_texts(value, items.as_deref());
            self.index_texts(field, doc, texts.iter().map(|t| t.as_ref()), gap);
            match value {
                Value::Str(text) if text.len() <= EXACT_TERM_LEN => {
                    self.add_exact(field, doc, TermKind::Exact, text.as_bytes());
                }
                Value::Json(_) => self.add_array_items(field, doc, items.as_deref()),
                Value::I64(_) | Value::U64(_) | Value::F64(_) => self.add_number(field, doc, value),
                _ => {}
            }
        }
        // The names are also kept as a value, so that a hit shows its `_ignored` (unless the
        // event sent a field of that name itself: its value is the one kept).
        if !self.ignored.is_empty() && !sent_ignored {
            let names = std::mem::take(&mut self.ignored);
            let value = match names.as_slice() {
                [one] => Value::Str(one.clone()),
                many => Value::Json(serde_json::to_string(many).unwrap_or_default()),
            };
            let field = self.field_id(IGNORED_FIELD);
            self.add_column_value(field, doc, &value);
            self.ignored = names;
        }
    }

    /// Adds the value of a mapped field (`quarry_store::mapping`). A value that does not fit
    /// its type (which `Schema::check` rejects at ingest, so only a mapping grown since, as on
    /// a WAL replay, lets one through) is indexed dynamically: kept and searchable, never
    /// dropped. Under `ignore_malformed` (and a keyword's `ignore_above`) it is kept, not
    /// indexed, and the field is named in `_ignored`, as Elasticsearch does.
    fn add_mapped(&mut self, field: u16, doc: u32, value: &Value, rules: FieldMapping) {
        if rules.stored {
            self.add_column_value(field, doc, value);
        }
        if !rules.index {
            return;
        }
        let fallback = |this: &mut Self| {
            if rules.ignore_malformed {
                this.add_ignored(field, doc);
            } else {
                this.index_text(field, doc, &crate::event::value_text(value));
            }
        };
        match rules.ty {
            FieldType::Text => {
                let items = array_items(value);
                let gap = rules.position_increment_gap;
                self.index_value_text(field, doc, value, items.as_deref(), gap);
                if let Value::Str(text) = value {
                    if text.len() <= EXACT_TERM_LEN {
                        self.add_exact(field, doc, TermKind::Exact, text.as_bytes());
                    }
                }
                self.add_array_items(field, doc, items.as_deref());
            }
            FieldType::Keyword => {
                for item in schema::keyword_items(value) {
                    let limit = rules.ignore_above.map_or(usize::MAX, |n| n as usize);
                    if item.chars().count() > limit {
                        self.add_ignored(field, doc);
                        continue;
                    }
                    self.add_exact(field, doc, TermKind::Exact, item.as_bytes());
                }
            }
            FieldType::Number => match schema::numbers(&rules, value) {
                Some(numbers) => {
                    for number in &numbers {
                        self.add_number(field, doc, number);
                    }
                }
                None => fallback(self),
            },
            FieldType::Boolean => match schema::booleans(value) {
                Some(booleans) => {
                    for boolean in booleans {
                        let text = if boolean { "true" } else { "false" };
                        self.add_exact(field, doc, TermKind::Exact, text.as_bytes());
                    }
                }
                None => fallback(self),
            },
            FieldType::Date | FieldType::DateNanos => match schema::dates(&rules, value) {
                Some(dates) => {
                    for date in dates {
                        self.add_exact(field, doc, TermKind::I64, &i64_term(date));
                    }
                }
                None => fallback(self),
            },
            FieldType::Ip => match schema::ip_addresses(value) {
                Some(addresses) => {
                    for address in addresses {
                        self.add_ip(field, doc, address);
                    }
                }
                None => fallback(self),
            },
            FieldType::Binary | FieldType::GeoPoint => {}
        }
    }

    /// A value at or under a `flat_object` (quarry-store's mapping): kept as sent, and each of
    /// its keywords (`schema::flat_items`) indexed under its own path (objects inside an
    /// array: under the array's name and their keys), under the object's name, and, deeper
    /// than one key, under the object's name and the last key (`labels.type` for
    /// `labels.category.type`), as OpenSearch finds them. A keyword too long for a term is
    /// kept, not indexed, and the field named in `_ignored`.
    fn add_flat(&mut self, field: u16, root_name: &str, doc: u32, value: &Value) {
        self.add_column_value(field, doc, value);
        let name = self.fields[field as usize].name.clone();
        let root = self.field_id(root_name);
        for (path, item) in schema::flat_items(value) {
            if item.len() > MAX_KEYWORD_LEN {
                self.add_ignored(field, doc);
                continue;
            }
            let full = match path.as_str() {
                "" => name.clone(),
                path => format!("{name}.{path}"),
            };
            let at = self.field_id(&full);
            self.add_exact(at, doc, TermKind::Exact, item.as_bytes());
            self.add_exact(root, doc, TermKind::Exact, item.as_bytes());
            let under = full.get(root_name.len() + 1..).unwrap_or_default();
            if let Some((_, last)) = under.rsplit_once('.') {
                let short = self.field_id(&format!("{root_name}.{last}"));
                self.add_exact(short, doc, TermKind::Exact, item.as_bytes());
            }
        }
    }

    /// An ip field's address: IPv4 as its u32 number term (so ranges and CIDR blocks are
    /// number ranges), IPv6 as its canonical text, an exact term.
    fn add_ip(&mut self, field: u16, doc: u32, address: IpAddr) {
        match address {
            IpAddr::V4(v4) => {
                let number = i64::from(u32::from(v4));
                self.add_exact(field, doc, TermKind::I64, &i64_term(number));
            }
            IpAddr::V6(v6) => {
                self.add_exact(field, doc, TermKind::Exact, v6.to_string().as_bytes());
            }
        }
    }

    /// Names `field` in `doc`'s `_ignored` (an exact term): one of its values was kept but not
    /// indexed. A segment already holding its last field name has no room for `_ignored`;
    /// then only the name is missing there, the value itself is kept.
    fn add_ignored(&mut self, field: u16, doc: u32) {
        if !self.field_ids.contains_key(IGNORED_FIELD) && self.fields.len() >= MAX_SEGMENT_FIELDS {
            return;
        }
        let name = self.fields[field as usize].name.clone();
        let ignored = self.field_id(IGNORED_FIELD);
        self.add_exact(ignored, doc, TermKind::Exact, name.as_bytes());
        if !self.ignored.contains(&name) {
            self.ignored.push(name);
        }
    }

    /// A number's exact term: an integer's i64 bytes, else (above i64, or a fraction) its f64
    /// bytes; none for NaN.
    /// An array's strings each as a whole value, as a single one is: `term` and `:=` find
    /// `["red", "blue"]` by "red". (Longer strings have no exact term; queries check them
    /// against the column. An unmapped array's numbers are not number terms: a range over
    /// the field reads its number columns, which an array is not in.)
    fn add_array_items(&mut self, field: u16, doc: u32, items: Option<&[Value]>) {
        for item in items.unwrap_or_default() {
            match item {
                Value::Str(text) if text.len() <= EXACT_TERM_LEN => {
                    self.add_exact(field, doc, TermKind::Exact, text.as_bytes())
                }
                _ => {}
            }
        }
    }

    fn add_number(&mut self, field: u16, doc: u32, value: &Value) {
        match *value {
            Value::I64(v) => self.add_exact(field, doc, TermKind::I64, &i64_term(v)),
            Value::U64(v) => match i64::try_from(v) {
                Ok(v) => self.add_exact(field, doc, TermKind::I64, &i64_term(v)),
                // Past i64: an f64 term for ranges (neighbours closer than its spacing share
                // it), and the decimal text as an exact term, so that the value itself is
                // found exactly (`term` on an `unsigned_long`).
                Err(_) => {
                    self.add_exact(field, doc, TermKind::F64, &f64_term(v as f64));
                    self.add_exact(field, doc, TermKind::Exact, v.to_string().as_bytes());
                }
            },
            Value::F64(v) if !v.is_nan() => self.add_exact(field, doc, TermKind::F64, &f64_term(v)),
            _ => {}
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
                column.push_str(s);
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

    /// A term without positions: a whole string value or a number's order-preserving bytes.
    fn add_exact(&mut self, field: u16, doc: u32, kind: TermKind, value: &[u8]) {
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.extend_from_slice(&key_prefix(field, kind));
        key.extend_from_slice(value);
        let term = self.vocabulary.get_or_insert(&key);
        if term.doc_freq > 0 && term.last_doc == doc {
            // An array with the same item twice: one posting.
            self.key = key;
            return;
        }
        let before = term.bytes.len();
        push_varint(&mut term.bytes, doc - term.last_doc);
        term.last_doc = doc;
        term.doc_freq += 1;
        self.memory += term.bytes.len() - before;
        self.key = key;
    }

    fn index_text(&mut self, field: u16, doc: u32, text: &str) {
        self.index_texts(field, doc, [text], 0);
    }

    /// Indexes a value's text: an array's items each after the last one's positions and a
    /// gap (`position_increment_gap`, else `POSITION_INCREMENT_GAP`), so that a phrase does
    /// not run from one item into the next (`["foo", "bar"]` holds no phrase "foo bar").
    fn index_value_text(
        &mut self,
        field: u16,
        doc: u32,
        value: &Value,
        items: Option<&[Value]>,
        gap: Option<u32>,
    ) {
        match items {
            Some(items) => {
                let texts: Vec<String> = items.iter().map(crate::event::value_text).collect();
                let gap = gap.unwrap_or(POSITION_INCREMENT_GAP);
                self.index_texts(field, doc, texts.iter().map(String::as_str), gap)
            }
            None => self.index_text(field, doc, &crate::event::value_text(value)),
        }
    }

    /// Indexes `texts` as one value's tokens, each text's positions `gap` after the last's.
    fn index_texts<'t>(
        &mut self,
        field: u16,
        doc: u32,
        texts: impl IntoIterator<Item = &'t str>,
        gap: u32,
    ) {
        let mut token_count = 0u32;
        // The analyzer is shared (Arc) so the closure may borrow `self` mutably to intern.
        let analyzer = Arc::clone(&self.fields[field as usize].analyzer);
        let mut key = std::mem::take(&mut self.key);
        analyzer.tokenize_texts(
            texts,
            gap,
            &key_prefix(field, TermKind::Token),
            &mut key,
            |position, key| {
                token_count += 1;
                let term = self.vocabulary.get_or_insert(key);
                let before = term.bytes.len();
                if term.doc_freq == 0 || term.last_doc != doc {
                    if term.doc_freq > 0 {
                        term.bytes.push(0);
                    }
                    push_varint(&mut term.bytes, doc - term.last_doc);
                    push_varint(&mut term.bytes, position + 1);
                    term.last_doc = doc;
                    term.doc_freq += 1;
                } else {
                    push_varint(&mut term.bytes, position - term.last_position);
                }
                term.last_position = position;
                self.memory += term.bytes.len() - before;
            },
        );
        self.key = key;
        if token_count > 0 {
            let field_buffer = &mut self.fields[field as usize];
            if field_buffer.rules.is_some_and(|rules| !rules.norms) {
                // `norms: false`: every doc counts as one token long, so the length of a
                // value changes no score (BM25's length factor is 1 for every doc).
                token_count = 1;
            }
            field_buffer.lengths.push((doc, token_count));
            field_buffer.total_tokens += u64::from(token_count);
        }
    }

    /// Writes the segment as a block file, docs sorted by `_time` (stable).
    pub fn write_block(self, path: &Path) -> Result<Manifest, FormatError> {
        quarry_store::write_block_file(path, self.into_block_input()?)
    }

    /// Encodes the segment as a block in memory (`name` names it in errors), for a reader
    /// from bytes (`BlockReader::from_bytes`).
    pub fn encode_block(self, name: &Path) -> Result<(Manifest, Vec<u8>), FormatError> {
        let mut bytes = Vec::new();
        let manifest =
            quarry_format::block::encode_block(name, self.into_block_input()?, &mut bytes)?;
        Ok((manifest, bytes))
    }

    /// The segment as the format's input: docs sorted by `_time`, fields by name.
    pub fn into_block_input(self) -> Result<BlockInput, FormatError> {
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

        // Columns (mostly zstd compression) are built on a second thread while this one
        // sorts and encodes the terms: the two share nothing but read-only inputs, and
        // compression was a sixth of the instructions of indexing Wikipedia.
        let (inverted, columns) = std::thread::scope(|scope| {
            let columns = scope.spawn(|| self.write_columns(&names, &times, new_id.as_deref()));
            let inverted = self.write_terms(&ordinal_of, &norms, new_id.as_deref());
            // A panic in the column thread is a bug; propagate it.
            let columns = columns
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (inverted, columns)
        });
        let (inverted, columns) = (inverted?, columns?);
        let mut norms = norms;
        let mut fields = Vec::with_capacity(names.len());
        for (&(name, id), columns) in names.iter().zip(columns) {
            let text = match id {
                Some(id) if !self.fields[id as usize].lengths.is_empty() => {
                    let field = &self.fields[id as usize];
                    Some(TextInput {
                        norms: std::mem::take(&mut norms[id as usize]),
                        docs_with_field: field.lengths.len() as u32,
                        total_tokens: field.total_tokens,
                        positions_from_values: field.positions_from_values,
                    })
                }
                _ => None,
            };
            fields.push(FieldInput {
                name: name.to_owned(),
                columns,
                text,
            });
        }
        Ok(BlockInput {
            times,
            fields,
            inverted,
        })
    }

    /// The columns of every field, in `names` order (`None` id: the `_time` field).
    fn write_columns(
        &self,
        names: &[(&str, Option<u16>)],
        times: &[i64],
        new_id: Option<&[u32]>,
    ) -> Result<Vec<Vec<ColumnData>>, FormatError> {
        let doc_count = times.len() as u32;
        let remap = |doc: u32| new_id.map_or(doc, |m| m[doc as usize]);
        let mut all = Vec::with_capacity(names.len());
        for &(_, id) in names {
            let Some(id) = id else {
                let mut writer = ColumnWriter::for_time();
                for (doc, &time) in times.iter().enumerate() {
                    writer.push_raw(doc as u32, time as u64)?;
                }
                all.push(vec![writer.finish(doc_count)?]);
                continue;
            };
            let field = &self.fields[id as usize];
            let mut buffers: Vec<&ColumnBuffer> = field.columns.iter().collect();
            buffers.sort_by_key(|c| c.ty);
            let mut columns = Vec::with_capacity(buffers.len());
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
                let mut writer = if field.rules.is_some_and(|rules| !rules.doc_values) {
                    ColumnWriter::without_doc_values(buffer.ty)
                } else {
                    ColumnWriter::new(buffer.ty)
                };
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
            all.push(columns);
        }
        Ok(all)
    }

    /// The docs of builder field `field` by the template of their value (`norms`: the
    /// field's, one per doc), for a field whose token terms keep no positions and that has
    /// strings: some of its terms may then be unions of templates (format version 11).
    fn doc_templates(
        &self,
        field: usize,
        norms: &[u8],
        remap: impl Fn(u32) -> u32,
    ) -> Option<TemplateGroups> {
        let buffer = &self.fields[field];
        let has_strings = buffer.columns.iter().any(|c| c.ty == ColumnType::Str);
        if !buffer.positions_from_values || !has_strings || norms.is_empty() {
            return None;
        }
        let mut templates = DocTemplates::new(norms.len() as u32);
        for column in &buffer.columns {
            for (i, &doc) in column.docs.iter().enumerate() {
                if column.ty == ColumnType::Str {
                    templates.add_str(remap(doc), column.str_at(i).as_bytes());
                } else {
                    templates.add_other(remap(doc));
                }
            }
        }
        Some(templates.finish())
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
        let terms: Vec<(&[u8], &TermBuffer)> = self.vocabulary.iter().collect();
        let mut keys: Vec<(u16, u8, u64, &[u8], u32)> = terms
            .iter()
            .enumerate()
            .map(|(index, &(key, _))| {
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
                    index as u32,
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
        let mut templates_of = None;
        for (ordinal, kind, _, term, index) in keys {
            if templates_of != Some(ordinal) {
                templates_of = Some(ordinal);
                let field = field_of_ordinal[ordinal as usize] as usize;
                if let Some(groups) = self.doc_templates(field, &norms[field], remap) {
                    writer.set_templates(ordinal, groups, &norms[field])?;
                }
            }
            // The builder only writes the kinds it knows.
            let kind = TermKind::from_u8(kind).unwrap_or(TermKind::Token);
            let buffer = terms[index as usize].1;
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
                    let mut position = r.varint_u32().unwrap_or(1) - 1;
                    positions.push(position);
                    let mut tf = 1;
                    // Positions run to the doc's 0, or to the end of the buffer for the last doc.
                    while !r.is_empty() {
                        let delta = r.varint_u32().unwrap_or(0);
                        if delta == 0 {
                            break;
                        }
                        position += delta;
                        positions.push(position);
                        tf += 1;
                    }
                    tfs.push(tf);
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
            let field = field_of_ordinal[ordinal as usize] as usize;
            let field_norms = &norms[field];
            let norm_of = |doc: u32| field_norms.get(doc as usize).copied().unwrap_or(0);
            let positions = match kind {
                TermKind::Token if !self.fields[field].positions_from_values => {
                    Some(positions.as_slice())
                }
                _ => None,
            };
            writer.add_term(ordinal, kind, term, &docs, &tfs, norm_of, positions)?;
        }
        Ok(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_format::BlockReader;

    fn names(prefix: &str, count: usize) -> Vec<String> {
        (0..count).map(|i| format!("{prefix}{i}")).collect()
    }

    #[test]
    fn has_room_for_counts_only_new_names() {
        let analyzer = Arc::new(Analyzer::default());
        let mut segment = SegmentBuilder::new(analyzer);
        let empty = [("x", 0usize); 0];
        assert!(segment.has_room_for(empty.iter().map(|(n, _)| *n)));
        let all = names("f", MAX_SEGMENT_FIELDS);
        let one_more = names("f", MAX_SEGMENT_FIELDS + 1);
        assert!(segment.has_room_for(all.iter().map(String::as_str)));
        assert!(!segment.has_room_for(one_more.iter().map(String::as_str)));
        // Fill all but two slots.
        let held = names("f", MAX_SEGMENT_FIELDS - 2);
        let value = Value::I64(1);
        segment.add_event(0, held.iter().map(|n| (n.as_str(), &value)));
        let new = names("new", 3);
        let cases: &[(&[&str], bool)] = &[
            (&["f0", "f1", "new0"], true),
            (&["new0", "new1"], true),
            (&["new0", "new1", "new2"], false),
            (&["f7", "new0", "f8", "new1", "f9"], true),
            (&["f7", "new0", "f8", "new1", "f9", "new2"], false),
        ];
        for (names, fits) in cases {
            assert_eq!(
                segment.has_room_for(names.iter().copied()),
                *fits,
                "{names:?}"
            );
        }
        // Every held name plus two new ones: past the fast path's count, still fits.
        let held_and_new = held.iter().chain(&new[..2]).map(String::as_str);
        assert!(segment.has_room_for(held_and_new));
        let held_and_three_new = held.iter().chain(&new).map(String::as_str);
        assert!(!segment.has_room_for(held_and_three_new));
    }

    #[test]
    #[should_panic(expected = "repeated in one event")]
    fn a_repeated_name_panics_rather_than_drop_a_value() {
        let mut segment = SegmentBuilder::new(Arc::new(Analyzer::default()));
        let (x, y) = (Value::Str("x".into()), Value::Str("y".into()));
        segment.add_event(0, [("a.b", &x), ("a.b", &y)]);
    }

    /// Events whose names together pass a block's field limit: cut where `has_room_for` says,
    /// as the pipeline and merge do, every (field, value) is stored and searchable.
    #[test]
    fn events_past_the_field_limit_go_to_the_next_block_whole() {
        const EVENTS: i64 = 3;
        const FIELDS: usize = 30_000;
        let analyzer = Arc::new(Analyzer::default());
        let events: Vec<(i64, Vec<(String, Value)>)> = (0..EVENTS)
            .map(|e| {
                let fields = (0..FIELDS)
                    .map(|i| (format!("e{e}.f{i}"), Value::Str(format!("v{e}x{i}"))))
                    .collect();
                (e, fields)
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        let mut segment = SegmentBuilder::new(analyzer.clone());
        let mut write = |segment: SegmentBuilder| {
            let path = dir.path().join(format!("{}.qblk", paths.len()));
            segment.write_block(&path).unwrap();
            paths.push(path);
        };
        for (time, fields) in &events {
            if !segment.has_room_for(fields.iter().map(|(name, _)| name.as_str())) {
                write(std::mem::replace(
                    &mut segment,
                    SegmentBuilder::new(analyzer.clone()),
                ));
            }
            segment.add_event(
                *time,
                fields.iter().map(|(name, value)| (name.as_str(), value)),
            );
        }
        write(segment);
        // 60,000 names fit one block, 90,000 do not.
        assert_eq!(paths.len(), 2);
        let readers: Vec<BlockReader> = paths
            .iter()
            .map(|p| BlockReader::open(p).unwrap())
            .collect();
        let mut found = 0;
        for reader in &readers {
            for doc in 0..reader.doc_count() {
                let time = reader.time_of_doc(doc).unwrap();
                let (_, fields) = &events[time as usize];
                let mut stored = reader.document(doc).unwrap();
                stored.retain(|(name, _)| name != TIME_FIELD);
                let mut expected = fields.clone();
                expected.sort_by(|a, b| a.0.cmp(&b.0));
                assert_eq!(stored, expected, "event {time}");
                for (name, value) in fields {
                    let Value::Str(text) = value else {
                        unreachable!()
                    };
                    let field = reader.field_ordinal(name).unwrap();
                    for kind in [TermKind::Exact, TermKind::Token] {
                        let info = reader
                            .term_info(field, kind, text.as_bytes())
                            .unwrap()
                            .unwrap_or_else(|| panic!("{name}:{text} ({kind:?}) not indexed"));
                        let postings = reader.postings(&info).unwrap();
                        assert_eq!((postings.doc_freq(), postings.doc()), (1, doc), "{name}");
                    }
                }
                found += 1;
            }
        }
        assert_eq!(found, EVENTS);
    }
}
