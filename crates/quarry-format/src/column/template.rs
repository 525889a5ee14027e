//! Message templates for string columns (format version 7).
//!
//! Log messages are few shapes filled with many values: `Received block blk_<n> of size <n>
//! from /<ip>`. A string column's chunks store each value as the id of its **template** (the
//! text around its variables) and the **variables**, the words that hold a digit; the templates
//! are kept once per column in a dictionary section. The constant text then costs a varint per
//! value, and zstd sees the variables of nearby values side by side, which it compresses better
//! than the same bytes spread over whole lines (1M generated events: the `message` column's
//! chunks went from 19.9 MB to 11.4 MB; BENCHMARKS.md, "Issue 30").
//!
//! The split is lossless: a value is its template's pieces with its variables between them, so
//! a reader rebuilds the exact bytes. It is a storage form only: the inverted index and every
//! query see the same values as before. The idea is CLP's (Rodrigues et al., OSDI 2021), with
//! its simplest variable rule; block-wide template postings are the next step (issue 30).
//!
//! Byte grammar: FORMAT.md, "Templates".

use crate::codec::{put_varint, ByteReader};
use crate::error::{DecodeError, DecodeResult};
use crate::limits::COLUMN_ZSTD_LEVEL;

/// The presence byte's flag for a chunk whose values are templated (`presence | TEMPLATED`).
pub(crate) const TEMPLATED: u8 = 0x80;

/// At most this many templates per column; later shapes are stored raw (template 0).
pub const MAX_TEMPLATES: usize = 65_535;
/// At most this many bytes of template pieces per column (the dictionary stays resident).
pub const MAX_TEMPLATE_BYTES: usize = 4 << 20;
/// A value with more variables than this is stored raw.
pub const MAX_TEMPLATE_SLOTS: usize = 64;
/// A value longer than this is stored raw: templates are for log lines, not documents.
const MAX_TEMPLATED_VALUE_LEN: usize = 16 * 1024;
/// Chunks are templated when their values average at least this many bytes: short keyword
/// values (`host-005`, `GET`) gain nothing from a template and lose a byte to its id.
pub(crate) const MIN_TEMPLATED_AVERAGE_LEN: usize = 16;

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_joiner(b: u8) -> bool {
    matches!(b, b'.' | b':' | b'-')
}

/// The byte ranges of `value`'s variables, in order: words (runs of ASCII letters, digits and
/// `_`, joined by `.`, `:` or `-` standing between two such bytes) that hold a digit. So
/// `10.251.42.84`, `blk_-5861636720645142679`, `1689ms` and `v1` are variables; `GET` and
/// `pam_unix` are not. Non-ASCII bytes are never part of a word, so every piece between
/// variables is whole UTF-8.
pub fn variables(value: &[u8], out: &mut Vec<(usize, usize)>) {
    out.clear();
    let n = value.len();
    let mut i = 0;
    while i < n {
        if !is_word_byte(value[i]) {
            i += 1;
            continue;
        }
        let start = i;
        let mut digit = false;
        loop {
            while i < n && is_word_byte(value[i]) {
                digit |= value[i].is_ascii_digit();
                i += 1;
            }
            if i + 1 < n && is_joiner(value[i]) && is_word_byte(value[i + 1]) {
                i += 1;
                continue;
            }
            break;
        }
        if digit {
            out.push((start, i));
        }
    }
}

/// Puts the key of `value`'s template in `key` (its pieces, each `len:varint bytes`) and its
/// variables in `vars`; false when it has none (longer than `MAX_TEMPLATED_VALUE_LEN`, or more
/// than `MAX_TEMPLATE_SLOTS` variables). Values with the same key differ in their variables
/// only.
pub fn template_key(value: &[u8], vars: &mut Vec<(usize, usize)>, key: &mut Vec<u8>) -> bool {
    if value.len() > MAX_TEMPLATED_VALUE_LEN {
        return false;
    }
    variables(value, vars);
    if vars.len() > MAX_TEMPLATE_SLOTS {
        return false;
    }
    key.clear();
    let mut last = 0;
    for &(start, end) in vars.iter() {
        put_varint(key, (start - last) as u64);
        key.extend_from_slice(&value[last..start]);
        last = end;
    }
    put_varint(key, (value.len() - last) as u64);
    key.extend_from_slice(&value[last..]);
    true
}

/// Assigns template ids to values as a column is written, and encodes them.
#[derive(Default)]
pub struct TemplateBuilder {
    /// Template key (its pieces, each `len:varint bytes`) to id (from 1).
    ids: hashbrown::HashMap<Box<[u8]>, u32>,
    /// The dictionary's body so far: each template as `slots:varint` then its key.
    body: Vec<u8>,
    key: Vec<u8>,
    vars: Vec<(usize, usize)>,
}

impl TemplateBuilder {
    pub fn new() -> Self {
        TemplateBuilder::default()
    }

    pub fn template_count(&self) -> usize {
        self.ids.len()
    }

    /// Appends `value` in templated form to `out`: its template id, then each variable as
    /// `len:varint bytes`; or id 0 and the whole value the same way when it has no template
    /// (too long, too many variables, or the dictionary is full).
    pub fn encode_value(&mut self, value: &[u8], out: &mut Vec<u8>) {
        let id = self.template_of(value);
        put_varint(out, u64::from(id));
        if id == 0 {
            put_varint(out, value.len() as u64);
            out.extend_from_slice(value);
            return;
        }
        for &(start, end) in &self.vars {
            put_varint(out, (end - start) as u64);
            out.extend_from_slice(&value[start..end]);
        }
    }

    /// The id of `value`'s template (0: none), its variables left in `self.vars`.
    fn template_of(&mut self, value: &[u8]) -> u32 {
        if !template_key(value, &mut self.vars, &mut self.key) {
            return 0;
        }
        if let Some(&id) = self.ids.get(self.key.as_slice()) {
            return id;
        }
        if self.ids.len() >= MAX_TEMPLATES || self.body.len() + self.key.len() > MAX_TEMPLATE_BYTES
        {
            return 0;
        }
        let id = self.ids.len() as u32 + 1;
        put_varint(&mut self.body, self.vars.len() as u64);
        self.body.extend_from_slice(&self.key);
        self.ids.insert(self.key.as_slice().into(), id);
        id
    }

    /// The dictionary section: `zstd_frame(count:varint template{count})`.
    pub fn finish(&self) -> std::io::Result<Vec<u8>> {
        let mut raw = Vec::with_capacity(self.body.len() + 4);
        put_varint(&mut raw, self.ids.len() as u64);
        raw.extend_from_slice(&self.body);
        zstd::bulk::compress(&raw, COLUMN_ZSTD_LEVEL.max(3))
    }
}

/// One template: where its pieces are in `Templates::pieces`.
#[derive(Debug, Clone, Copy)]
struct Template {
    first_piece: u32,
    slots: u32,
}

/// A column's template dictionary, decoded (resident while its block is open).
#[derive(Debug, Default)]
pub struct Templates {
    bytes: Vec<u8>,
    /// Every template's pieces in order, as ranges of `bytes`.
    pieces: Vec<(u32, u32)>,
    templates: Vec<Template>,
}

impl Templates {
    /// Decodes a dictionary section (its crc already checked).
    pub fn decode(section: &[u8]) -> DecodeResult<Templates> {
        let raw_len = match zstd::zstd_safe::get_frame_content_size(section) {
            Ok(Some(len)) if len <= (MAX_TEMPLATE_BYTES + MAX_TEMPLATES * 8 + 16) as u64 => {
                len as usize
            }
            Ok(Some(_)) => {
                return Err(DecodeError::new(
                    "template dictionary larger than the limit",
                ))
            }
            _ => {
                return Err(DecodeError::new(
                    "template dictionary frame has no content size",
                ))
            }
        };
        let bytes = zstd::bulk::decompress(section, raw_len)
            .map_err(|_| DecodeError::new("template dictionary does not decompress"))?;
        let mut r = ByteReader::new(&bytes);
        let count = r.varint()?;
        if count > MAX_TEMPLATES as u64 {
            return Err(DecodeError::new("more templates than the limit"));
        }
        let mut pieces = Vec::new();
        let mut templates = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let slots = r.varint()?;
            if slots > MAX_TEMPLATE_SLOTS as u64 {
                return Err(DecodeError::new("template with more slots than the limit"));
            }
            let first_piece = pieces.len() as u32;
            for _ in 0..=slots {
                let len = r.varint()?;
                let start = bytes.len() - r.remaining();
                r.take(usize::try_from(len).map_err(|_| DecodeError::new("piece length"))?)?;
                pieces.push((start as u32, (start as u64 + len) as u32));
            }
            templates.push(Template {
                first_piece,
                slots: slots as u32,
            });
        }
        if !r.is_empty() {
            return Err(DecodeError::new("trailing bytes in template dictionary"));
        }
        Ok(Templates {
            bytes,
            pieces,
            templates,
        })
    }

    pub fn len(&self) -> usize {
        self.templates.len()
    }

    pub fn is_empty(&self) -> bool {
        self.templates.is_empty()
    }

    /// Bytes held in memory.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.pieces.capacity() * 8 + self.templates.capacity() * 8
    }

    /// Skips one templated value in `r` (its variables by their lengths).
    pub(crate) fn skip_value(&self, r: &mut ByteReader) -> DecodeResult<()> {
        let id = r.varint()?;
        let slots = match id {
            0 => 1,
            id => {
                usize::try_from(id - 1)
                    .ok()
                    .and_then(|i| self.templates.get(i))
                    .ok_or(DecodeError::new("template id out of range"))?
                    .slots as usize
            }
        };
        for _ in 0..slots {
            let len = r.varint()?;
            let len = usize::try_from(len).map_err(|_| DecodeError::new("value length"))?;
            r.take(len)?;
        }
        Ok(())
    }

    /// Reads one templated value from `r` and appends its bytes to `out`.
    pub(crate) fn decode_value(&self, r: &mut ByteReader, out: &mut Vec<u8>) -> DecodeResult<()> {
        let id = r.varint()?;
        if id == 0 {
            let len = r.varint()?;
            let len = usize::try_from(len).map_err(|_| DecodeError::new("value length"))?;
            out.extend_from_slice(r.take(len)?);
            return Ok(());
        }
        let template = usize::try_from(id - 1)
            .ok()
            .and_then(|i| self.templates.get(i))
            .ok_or(DecodeError::new("template id out of range"))?;
        let first = template.first_piece as usize;
        let piece = |i: usize| {
            let (start, end) = self.pieces[first + i];
            &self.bytes[start as usize..end as usize]
        };
        out.extend_from_slice(piece(0));
        for slot in 0..template.slots as usize {
            let len = r.varint()?;
            let len = usize::try_from(len).map_err(|_| DecodeError::new("variable length"))?;
            out.extend_from_slice(r.take(len)?);
            out.extend_from_slice(piece(slot + 1));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(value: &str) -> Vec<&str> {
        let mut out = Vec::new();
        variables(value.as_bytes(), &mut out);
        out.iter().map(|&(s, e)| &value[s..e]).collect()
    }

    #[test]
    fn variables_are_words_with_a_digit() {
        assert_eq!(
            words("Received block blk_-58616 of size 67108864 from /10.251.214.130"),
            ["blk_-58616", "67108864", "10.251.214.130"]
        );
        assert_eq!(
            words("GET /api/v1/search HTTP/1.1 200 9561 1689ms"),
            ["v1", "1.1", "200", "9561", "1689ms"]
        );
        assert_eq!(
            words("pam_unix(sshd:auth): check pass; user unknown"),
            Vec::<&str>::new()
        );
        assert_eq!(words("a-1 -2 x. 3. .4 é5"), ["a-1", "2", "3", "4", "5"]);
        assert_eq!(words(""), Vec::<&str>::new());
    }

    fn round_trip(values: &[&str]) -> (Vec<String>, usize) {
        let mut builder = TemplateBuilder::new();
        let mut payload = Vec::new();
        for value in values {
            builder.encode_value(value.as_bytes(), &mut payload);
        }
        let templates = Templates::decode(&builder.finish().unwrap()).unwrap();
        let mut r = ByteReader::new(&payload);
        let mut back = Vec::new();
        for _ in values {
            let mut out = Vec::new();
            templates.decode_value(&mut r, &mut out).unwrap();
            back.push(String::from_utf8(out).unwrap());
        }
        assert!(r.is_empty());
        (back, templates.len())
    }

    #[test]
    fn values_come_back_exactly_and_shapes_share_a_template() {
        let values = [
            "connection from 10.0.0.1 port 22",
            "connection from 192.168.7.33 port 2222",
            "no digits here",
            "",
            "42",
            "ünïcödé 7 ✓ 8",
            "trailing 9",
        ];
        let (back, count) = round_trip(&values);
        assert_eq!(back, values);
        // The two connections share one template; the others have one each.
        assert_eq!(count, 6);
    }

    #[test]
    fn values_past_the_limits_are_raw() {
        let many = (0..100)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        let long = "x1 ".repeat(10_000);
        let (back, count) = round_trip(&[&many, &long]);
        assert_eq!(back, [many.as_str(), long.as_str()]);
        assert_eq!(count, 0);
    }

    #[test]
    fn a_damaged_dictionary_or_value_is_an_error() {
        let mut builder = TemplateBuilder::new();
        let mut payload = Vec::new();
        builder.encode_value(b"id 5", &mut payload);
        let section = builder.finish().unwrap();
        assert!(Templates::decode(&section[..section.len() - 1]).is_err());
        let templates = Templates::decode(&section).unwrap();
        // Template 2 does not exist.
        let mut r = ByteReader::new(&[2, 1, b'5']);
        assert!(templates.decode_value(&mut r, &mut Vec::new()).is_err());
        // A variable longer than the payload.
        let mut r = ByteReader::new(&[1, 9, b'5']);
        assert!(templates.decode_value(&mut r, &mut Vec::new()).is_err());
    }
}
