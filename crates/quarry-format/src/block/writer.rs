use super::manifest::{ColumnMeta, FieldMeta, Manifest, SectionRef, TextMeta};
use super::TIME_FIELD;
use crate::column::ColumnData;
use crate::error::{FormatError, Result};
use crate::limits::{
    BLOCK_MAGIC, CHECKSUM_PAGE_LEN, FORMAT_VERSION, MAX_DOCS_PER_BLOCK, TIME_INDEX_INTERVAL,
};
use crate::postings::unions::{TemplateGroups, UnionFinder};
use crate::postings::{PostingsWriter, TermInfo};
use crate::termdict::{term_key, TermDictWriter, TermKind};
use crate::value::ColumnType;
use std::io::Write;
use std::path::Path;

/// Statistics and norms of one tokenized field.
pub struct TextInput {
    pub norms: Vec<u8>,
    pub docs_with_field: u32,
    pub total_tokens: u64,
    /// The field's token terms may keep no positions (`TextMeta::positions_from_values`).
    pub positions_from_values: bool,
}

pub struct FieldInput {
    pub name: String,
    pub columns: Vec<ColumnData>,
    pub text: Option<TextInput>,
}

/// Everything one block holds, in final doc order.
pub struct BlockInput {
    /// `_time` of every doc, ascending. Its column must also be among `fields`.
    pub times: Vec<i64>,
    /// Sorted by name; the position of a field is the ordinal used in `inverted`'s term keys.
    pub fields: Vec<FieldInput>,
    pub inverted: InvertedIndexWriter,
}

/// Builds the term dictionary and postings of a block, term by term in key order
/// (field ordinal, then kind, then term bytes).
#[derive(Default)]
pub struct InvertedIndexWriter {
    postings: PostingsWriter,
    dictionary: TermDictWriter,
    key: Vec<u8>,
    /// The templates of the field whose terms come now, if it has them (`set_templates`).
    unions: Option<UnionFinder>,
    ones: Vec<u32>,
}

impl InvertedIndexWriter {
    /// The docs of `field` by template, given before the field's first term: its token terms
    /// without positions whose docs are whole templates are then written as unions of them
    /// (format version 11; `postings::unions`), and the templates they list as terms of kind
    /// `TermKind::Template` after the field's other terms.
    /// `norms`: the field's length ids, one per doc (empty: none).
    pub fn set_templates(
        &mut self,
        field: u16,
        groups: TemplateGroups,
        norms: &[u8],
    ) -> Result<()> {
        self.write_templates()?;
        self.unions = Some(UnionFinder::new(field, groups, norms.to_vec()));
        Ok(())
    }

    /// See `PostingsWriter::write_term` for the arguments' contract.
    // The key's three parts plus `write_term`'s four: a struct would be built per term only
    // to be taken apart again.
    #[allow(clippy::too_many_arguments)]
    pub fn add_term(
        &mut self,
        field: u16,
        kind: TermKind,
        term: &[u8],
        docs: &[u32],
        tfs: &[u32],
        norm_of: impl Fn(u32) -> u8,
        positions: Option<&[u32]>,
    ) -> Result<()> {
        if self.unions.as_ref().is_some_and(|u| u.field < field) {
            self.write_templates()?;
        }
        let is_union = match &mut self.unions {
            Some(unions)
                if unions.field == field
                    && kind == TermKind::Token
                    && positions.is_none()
                    && docs.len() > 1 =>
            {
                unions.union_of(docs, tfs)
            }
            _ => false,
        };
        let info = match &self.unions {
            Some(unions) if is_union => {
                let max_tf = tfs.iter().copied().max().unwrap_or(1);
                let min_norm = docs.iter().map(|&doc| norm_of(doc)).min().unwrap_or(0);
                self.postings
                    .write_union(field, &unions.list, docs.len() as u32, max_tf, min_norm)
            }
            _ => self.postings.write_term(docs, tfs, norm_of, positions),
        };
        self.insert(field, kind, term, &info)
    }

    fn insert(&mut self, field: u16, kind: TermKind, term: &[u8], info: &TermInfo) -> Result<()> {
        term_key(&mut self.key, field, kind, term);
        self.dictionary
            .insert(&self.key, info)
            .map_err(|e| FormatError::InvalidInput {
                reason: format!("term dictionary: {e}"),
            })
    }

    /// Writes the templates some union listed, as `TermKind::Template` terms of their field
    /// (after its other terms, as key order wants), and forgets the field's templates.
    fn write_templates(&mut self) -> Result<()> {
        let Some(unions) = self.unions.take() else {
            return Ok(());
        };
        for (template, _) in unions.listed.iter().enumerate().filter(|(_, &l)| l) {
            let docs = unions.groups.docs_of(template as u32);
            self.ones.resize(docs.len(), 1);
            let norm_of = |doc: u32| unions.norms.get(doc as usize).copied().unwrap_or(0);
            let info = self.postings.write_term(docs, &self.ones, norm_of, None);
            let number = (template as u32).to_be_bytes();
            self.insert(unions.field, TermKind::Template, &number, &info)?;
        }
        Ok(())
    }
}

struct SectionSink<W: Write> {
    out: W,
    offset: u64,
    /// A resident section's stored form, reused.
    scratch: Vec<u8>,
}

impl<W: Write> SectionSink<W> {
    fn section(&mut self, bytes: &[u8]) -> std::io::Result<SectionRef> {
        let section = SectionRef {
            offset: self.offset,
            len: bytes.len() as u64,
            crc: crc32fast::hash(bytes),
        };
        self.out.write_all(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(section)
    }

    /// A section readers keep resident, stored compressed where that pays (`stored`, format
    /// version 9).
    fn resident(&mut self, bytes: &[u8]) -> std::io::Result<SectionRef> {
        self.scratch.clear();
        super::stored::encode(bytes, &mut self.scratch);
        let stored = std::mem::take(&mut self.scratch);
        let section = self.section(&stored);
        self.scratch = stored;
        section
    }
}

fn invalid(reason: impl Into<String>) -> FormatError {
    FormatError::InvalidInput {
        reason: reason.into(),
    }
}

/// Encodes a block into `out` and returns its manifest. `name` (the destination file, or any
/// name for a block kept in memory) is what errors name. Where the bytes go, and how they are
/// made durable, is the caller's policy (quarry-store writes files: temporary name, fsync,
/// rename); the format only knows bytes.
pub fn encode_block(name: &Path, mut input: BlockInput, out: impl Write) -> Result<Manifest> {
    let path = name;
    let doc_count = u32::try_from(input.times.len())
        .ok()
        .filter(|&n| n > 0 && n <= MAX_DOCS_PER_BLOCK)
        .ok_or_else(|| {
            invalid(format!(
                "block doc count {} out of range",
                input.times.len()
            ))
        })?;
    if input.times.windows(2).any(|w| w[0] > w[1]) {
        return Err(invalid("times not sorted"));
    }
    if input.fields.windows(2).any(|w| w[0].name >= w[1].name) {
        return Err(invalid("fields not sorted by name or not unique"));
    }
    let has_time_column = input
        .fields
        .iter()
        .any(|f| f.name == TIME_FIELD && f.columns.iter().any(|c| c.ty == ColumnType::Timestamp));
    if !has_time_column {
        return Err(invalid("no _time column"));
    }
    // Checked before anything is written, so bad input leaves no partial block behind.
    for field in &input.fields {
        if field
            .text
            .as_ref()
            .is_some_and(|t| t.norms.len() != doc_count as usize)
        {
            return Err(invalid(format!(
                "norms of {} have the wrong length",
                field.name
            )));
        }
    }
    let time_offsets_bytes = time_offsets(&input.times);
    if every_time_group_packed(&time_offsets_bytes, doc_count) {
        drop_time_chunk_data(&mut input.fields, doc_count)?;
    }
    let io = |source| FormatError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut sink = SectionSink {
        out,
        offset: 0,
        scratch: Vec::new(),
    };
    sink.section(BLOCK_MAGIC).map_err(io)?;

    // Section order: first what queries read piecemeal (column data, postings, positions),
    // then the doc values and norms (`Manifest::on_demand_sections`: resident, but a remote
    // block reads each on first use), then what planning needs (`planning_sections`), then the
    // manifest: opening a remote block reads one stretch at its end, which over object
    // storage is one ranged request (issue 28).
    input.inverted.write_templates()?;
    let InvertedIndexWriter {
        postings,
        dictionary,
        ..
    } = input.inverted;
    let mut data_refs = Vec::with_capacity(input.fields.len());
    for field in &input.fields {
        let mut columns = Vec::with_capacity(field.columns.len());
        for column in &field.columns {
            // `_time` has its own random-access form, the time offsets, and keeps its chunks
            // (`ColumnWriter::for_time`).
            if column.doc_values.is_some() && field.name == TIME_FIELD {
                return Err(invalid("the _time column has doc values"));
            }
            columns.push(sink.section(&column.data).map_err(io)?);
        }
        data_refs.push(columns);
    }
    let postings_ref = sink.section(&postings.postings).map_err(io)?;
    let positions_ref = sink.section(&postings.positions).map_err(io)?;

    // Per field: each column's doc values, then the norms.
    let mut on_demand = Vec::with_capacity(input.fields.len());
    let mut norms = Vec::new();
    for field in &input.fields {
        let mut doc_values = Vec::with_capacity(field.columns.len());
        for column in &field.columns {
            doc_values.push(match &column.doc_values {
                Some(bytes) => Some(sink.resident(bytes).map_err(io)?),
                None => None,
            });
        }
        let norms_ref = match &field.text {
            Some(text) => {
                norms.clear();
                crate::fieldnorm::encode_packed(&text.norms, &mut norms);
                Some(sink.resident(&norms).map_err(io)?)
            }
            None => None,
        };
        on_demand.push((doc_values, norms_ref));
    }

    let mut time_index = Vec::new();
    for time in input.times.iter().step_by(TIME_INDEX_INTERVAL as usize) {
        time_index.extend_from_slice(&time.to_le_bytes());
    }
    let time_index = sink.resident(&time_index).map_err(io)?;
    let time_offsets = Some(sink.resident(&time_offsets_bytes).map_err(io)?);

    let mut fields = Vec::with_capacity(input.fields.len());
    for ((field, data_refs), (doc_values, norms)) in
        input.fields.into_iter().zip(data_refs).zip(on_demand)
    {
        let mut columns = Vec::with_capacity(field.columns.len());
        for ((column, data), doc_values) in field.columns.into_iter().zip(data_refs).zip(doc_values)
        {
            // Template dictionaries among the planning sections: opening a block reads them.
            let templates = match &column.templates {
                Some(bytes) => Some(sink.resident(bytes).map_err(io)?),
                None => None,
            };
            // So is the chunks' zstd dictionary: decompressing any chunk needs it.
            let dictionary = match &column.dictionary {
                Some(bytes) => Some(sink.resident(bytes).map_err(io)?),
                None => None,
            };
            columns.push(ColumnMeta {
                ty: column.ty,
                present_count: column.present_count,
                min_max: column.min_max,
                directory: sink.resident(&column.directory).map_err(io)?,
                data,
                doc_values,
                templates,
                dictionary,
            });
        }
        let text = field.text.zip(norms).map(|(text, norms)| TextMeta {
            docs_with_field: text.docs_with_field,
            total_tokens: text.total_tokens,
            norms,
            positions_from_values: text.positions_from_values,
        });
        fields.push(FieldMeta {
            name: field.name,
            columns,
            text,
        });
    }

    let (fst_bytes, infos, term_count) = dictionary
        .finish()
        .map_err(|e| invalid(format!("term dictionary: {e}")))?;
    let term_fst = sink.resident(&fst_bytes).map_err(io)?;
    let term_infos = sink.resident(&infos).map_err(io)?;
    let mut page_checksums = Vec::new();
    super::pages::encode_page_checksums(
        CHECKSUM_PAGE_LEN,
        &postings.postings,
        &postings.positions,
        &mut page_checksums,
    );
    let page_checksums = Some(sink.resident(&page_checksums).map_err(io)?);

    let manifest = Manifest {
        doc_count,
        time_min: input.times[0],
        time_max: input.times[input.times.len() - 1],
        time_index,
        fields,
        term_fst,
        term_infos,
        term_count,
        postings: postings_ref,
        positions: positions_ref,
        time_offsets,
        page_checksums,
    };
    let mut manifest_bytes = Vec::new();
    manifest.encode(&mut manifest_bytes);
    let manifest_ref = sink.section(&manifest_bytes).map_err(io)?;
    let mut footer = Vec::with_capacity(crate::limits::FOOTER_LEN);
    footer.extend_from_slice(&manifest_ref.offset.to_le_bytes());
    footer.extend_from_slice(&manifest_ref.len.to_le_bytes());
    footer.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    footer.extend_from_slice(&manifest_ref.crc.to_le_bytes());
    footer.extend_from_slice(BLOCK_MAGIC);
    sink.out.write_all(&footer).map_err(io)?;
    sink.out.flush().map_err(io)?;
    Ok(manifest)
}

/// Whether every 128-doc group of the time offsets is packed (none too sparse for 32 bits), so
/// that they hold every doc's `_time`.
fn every_time_group_packed(offsets: &[u8], doc_count: u32) -> bool {
    let groups = doc_count.div_ceil(TIME_INDEX_INTERVAL) as usize;
    let entry_len = super::reader::TIME_GROUP_ENTRY_LEN;
    (0..groups).all(|g| {
        offsets
            .get(g * entry_len + 4)
            .is_some_and(|&bits| bits <= 32)
    })
}

/// The `_time` column keeps no chunk data (format version 7): the time offsets hold the same
/// values, and readers rebuild its chunks from them, as they rebuild other columns' from doc
/// values. Its directory stays (doc ranges, counts, min/max: chunk skipping is unchanged).
fn drop_time_chunk_data(fields: &mut [FieldInput], doc_count: u32) -> Result<()> {
    let Some(column) = fields
        .iter_mut()
        .filter(|f| f.name == TIME_FIELD)
        .flat_map(|f| f.columns.iter_mut())
        .find(|c| c.ty == ColumnType::Timestamp)
    else {
        return Ok(());
    };
    if column.present_count != u64::from(doc_count) {
        return Err(invalid("the _time column misses docs"));
    }
    let mut directory = Vec::with_capacity(column.directory.len());
    for entry in column.directory.chunks(crate::column::CHUNK_META_LEN) {
        let meta = crate::column::ChunkMeta::decode(entry)
            .map_err(|_| invalid("the _time column's directory is ragged"))?;
        crate::column::ChunkMeta {
            offset: 0,
            len: 0,
            crc: 0,
            ..meta
        }
        .encode(&mut directory);
    }
    column.directory = directory;
    column.data.clear();
    Ok(())
}

/// The time offsets section: per 128-doc group, each doc's `_time` minus the group's first,
/// divided by their greatest common divisor (millisecond data divides by 1,000,000), bit-packed
/// so that any doc's time is one small unpack away (histogram endpoints, hit times).
fn time_offsets(times: &[i64]) -> Vec<u8> {
    use bitpacking::{BitPacker, BitPacker4x};
    const GROUP: usize = TIME_INDEX_INTERVAL as usize;
    let packer = BitPacker4x::new();
    let groups: Vec<&[i64]> = times.chunks(GROUP).collect();
    let mut entries = Vec::with_capacity(groups.len() * super::reader::TIME_GROUP_ENTRY_LEN);
    let mut packed = Vec::new();
    let data_start = groups.len() * super::reader::TIME_GROUP_ENTRY_LEN;
    let mut values = [0u32; GROUP];
    let mut buffer = vec![0u8; 4 * GROUP];
    for group in groups {
        let base = group[0];
        // Sorted times: every offset is >= 0 (wrapping covers the full i64 range).
        let offsets: Vec<u64> = group.iter().map(|&t| t.wrapping_sub(base) as u64).collect();
        let divisor = offsets.iter().fold(0u64, |g, &o| gcd(g, o)).max(1);
        let max = offsets.iter().map(|o| o / divisor).max().unwrap_or(0);
        let offset = (data_start + packed.len()) as u32;
        if max > u64::from(u32::MAX) {
            // Too sparse to pack in 32 bits: readers decode the _time column for this group.
            entries.extend_from_slice(&offset.to_le_bytes());
            entries.extend_from_slice(&[u8::MAX, 0, 0, 0]);
            entries.extend_from_slice(&divisor.to_le_bytes());
            continue;
        }
        for (i, slot) in values.iter_mut().enumerate() {
            // The last group is padded with its last value.
            let o = offsets.get(i).or(offsets.last()).copied().unwrap_or(0);
            *slot = (o / divisor) as u32;
        }
        let bits = packer.num_bits(&values);
        let written = packer.compress(&values, &mut buffer, bits);
        packed.extend_from_slice(&buffer[..written]);
        entries.extend_from_slice(&offset.to_le_bytes());
        entries.extend_from_slice(&[bits, 0, 0, 0]);
        entries.extend_from_slice(&divisor.to_le_bytes());
    }
    entries.extend_from_slice(&packed);
    entries
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_offsets_pack_by_group_with_a_common_divisor() {
        // Group 0: milliseconds (divisor 1e6, 7 bits); group 1: a gap too wide for 32 bits.
        let mut times: Vec<i64> = (0..128).map(|i| 1_000 + i * 1_000_000).collect();
        times.extend((0..10).map(|i| i64::MAX / 2 + i * (1 << 40) + i % 2));
        let bytes = time_offsets(&times);
        let entry = |g: usize| &bytes[g * 16..(g + 1) * 16];
        assert_eq!(entry(0)[4], 7);
        assert_eq!(
            u64::from_le_bytes(entry(0)[8..16].try_into().unwrap()),
            1_000_000
        );
        assert_eq!(entry(1)[4], u8::MAX);
        assert_eq!(bytes.len(), 2 * 16 + 16 * 7);
    }
}
