use crate::codec::*;
use crate::error::{DecodeError, DecodeResult};
use crate::limits::{MAX_FIELDS, MAX_FIELD_NAME_LEN};
use crate::value::{ColumnType, MinMax};

/// Where one section is in the file, and its crc32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SectionRef {
    pub offset: u64,
    pub len: u64,
    pub crc: u32,
}

impl SectionRef {
    fn encode(&self, out: &mut Vec<u8>) {
        put_u64(out, self.offset);
        put_u64(out, self.len);
        put_u32(out, self.crc);
    }
    fn decode(r: &mut ByteReader) -> DecodeResult<Self> {
        Ok(SectionRef {
            offset: r.u64()?,
            len: r.u64()?,
            crc: r.u32()?,
        })
    }
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.len)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMeta {
    pub ty: ColumnType,
    pub present_count: u64,
    pub min_max: Option<MinMax>,
    pub directory: SectionRef,
    pub data: SectionRef,
    /// The column's doc values (version 3 on; not every column has them).
    pub doc_values: Option<SectionRef>,
    /// The column's template dictionary (version 7 on; string columns whose chunks hold
    /// templated values).
    pub templates: Option<SectionRef>,
    /// The zstd dictionary the column's chunks with data are compressed with (version 10
    /// on; string and JSON columns, when one paid).
    pub dictionary: Option<SectionRef>,
}

/// Statistics of a tokenized field, for BM25.
#[derive(Debug, Clone, PartialEq)]
pub struct TextMeta {
    /// Docs with at least one token in this field (Lucene's `docCount`).
    pub docs_with_field: u32,
    /// Tokens in this field over all docs (Lucene's `sumTotalTermFreq`).
    pub total_tokens: u64,
    /// One length id per doc (see `fieldnorm`).
    pub norms: SectionRef,
    /// Token terms may keep no positions: a doc's positions are those the analysis of its
    /// value gives (version 8 on; FORMAT.md, "Positions from values").
    pub positions_from_values: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldMeta {
    pub name: String,
    pub columns: Vec<ColumnMeta>,
    pub text: Option<TextMeta>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub doc_count: u32,
    pub time_min: i64,
    pub time_max: i64,
    pub time_index: SectionRef,
    /// Sorted by name; a field's position is its ordinal in term keys.
    pub fields: Vec<FieldMeta>,
    pub term_fst: SectionRef,
    pub term_infos: SectionRef,
    pub term_count: u64,
    pub postings: SectionRef,
    pub positions: SectionRef,
    /// Every doc's `_time`, bit-packed per 128 docs for random access (version 2 on).
    pub time_offsets: Option<SectionRef>,
    /// crc32 per page of the postings and positions sections (version 4 on), so a query
    /// verifies only the pages it reads (`PageChecksums`).
    pub page_checksums: Option<SectionRef>,
}

impl Manifest {
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.doc_count);
        put_i64(out, self.time_min);
        put_i64(out, self.time_max);
        self.time_index.encode(out);
        put_varint(out, self.fields.len() as u64);
        for field in &self.fields {
            put_bytes(out, field.name.as_bytes());
            put_varint(out, field.columns.len() as u64);
            for column in &field.columns {
                put_u8(out, column.ty as u8);
                put_u64(out, column.present_count);
                match column.min_max {
                    Some(mm) => {
                        put_u8(out, 1);
                        put_u64(out, mm.min);
                        put_u64(out, mm.max);
                    }
                    None => put_u8(out, 0),
                }
                column.directory.encode(out);
                column.data.encode(out);
                // Versions 3, 7 and 10.
                for section in [column.doc_values, column.templates, column.dictionary] {
                    match section {
                        Some(section) => {
                            put_u8(out, 1);
                            section.encode(out);
                        }
                        None => put_u8(out, 0),
                    }
                }
            }
            match &field.text {
                Some(text) => {
                    // Version 8: 2 when the positions come from the values.
                    put_u8(out, if text.positions_from_values { 2 } else { 1 });
                    put_u32(out, text.docs_with_field);
                    put_u64(out, text.total_tokens);
                    text.norms.encode(out);
                }
                None => put_u8(out, 0),
            }
        }
        self.term_fst.encode(out);
        self.term_infos.encode(out);
        put_u64(out, self.term_count);
        self.postings.encode(out);
        self.positions.encode(out);
        // Version 2 on: the section is always there.
        self.time_offsets.unwrap_or_default().encode(out);
        // Version 4 on: the section is always there.
        self.page_checksums.unwrap_or_default().encode(out);
    }

    /// Decodes the manifest of a block of format `version` (1 to 8).
    pub fn decode(bytes: &[u8], version: u32) -> DecodeResult<Manifest> {
        let mut r = ByteReader::new(bytes);
        let doc_count = r.u32()?;
        let time_min = r.i64()?;
        let time_max = r.i64()?;
        let time_index = SectionRef::decode(&mut r)?;
        let field_count = r.varint()?;
        if field_count > MAX_FIELDS as u64 {
            return Err(DecodeError::new("too many fields"));
        }
        let mut fields = Vec::with_capacity(field_count as usize);
        for _ in 0..field_count {
            let name = r.str(MAX_FIELD_NAME_LEN)?.to_owned();
            let column_count = r.varint()?;
            if column_count > 16 {
                return Err(DecodeError::new("too many columns for one field"));
            }
            let mut columns = Vec::new();
            for _ in 0..column_count {
                let ty = ColumnType::from_u8(r.u8()?)?;
                let present_count = r.u64()?;
                let min_max = match r.u8()? {
                    0 => None,
                    1 => Some(MinMax {
                        min: r.u64()?,
                        max: r.u64()?,
                    }),
                    _ => return Err(DecodeError::new("bad min/max flag")),
                };
                let directory = SectionRef::decode(&mut r)?;
                let data = SectionRef::decode(&mut r)?;
                let doc_values = optional_section(&mut r, version >= 3, "bad doc values flag")?;
                let templates = optional_section(&mut r, version >= 7, "bad templates flag")?;
                if templates.is_some() && ty != ColumnType::Str {
                    return Err(DecodeError::new("templates for a column of another type"));
                }
                let dictionary = optional_section(&mut r, version >= 10, "bad dictionary flag")?;
                if dictionary.is_some() && !matches!(ty, ColumnType::Str | ColumnType::Json) {
                    return Err(DecodeError::new(
                        "a dictionary for a column of another type",
                    ));
                }
                columns.push(ColumnMeta {
                    ty,
                    present_count,
                    min_max,
                    directory,
                    data,
                    doc_values,
                    templates,
                    dictionary,
                });
            }
            let text = match r.u8()? {
                0 => None,
                flag @ (1 | 2) if flag == 1 || version >= 8 => Some(TextMeta {
                    docs_with_field: r.u32()?,
                    total_tokens: r.u64()?,
                    norms: SectionRef::decode(&mut r)?,
                    positions_from_values: flag == 2,
                }),
                _ => return Err(DecodeError::new("bad text flag")),
            };
            fields.push(FieldMeta {
                name,
                columns,
                text,
            });
        }
        if fields.windows(2).any(|w| w[0].name >= w[1].name) {
            return Err(DecodeError::new("fields not sorted by name"));
        }
        let manifest = Manifest {
            doc_count,
            time_min,
            time_max,
            time_index,
            fields,
            term_fst: SectionRef::decode(&mut r)?,
            term_infos: SectionRef::decode(&mut r)?,
            term_count: r.u64()?,
            postings: SectionRef::decode(&mut r)?,
            positions: SectionRef::decode(&mut r)?,
            time_offsets: if version >= 2 {
                Some(SectionRef::decode(&mut r)?)
            } else {
                None
            },
            page_checksums: if version >= 4 {
                Some(SectionRef::decode(&mut r)?)
            } else {
                None
            },
        };
        if !r.is_empty() {
            return Err(DecodeError::new("trailing bytes"));
        }
        Ok(manifest)
    }

    /// Every section, named, for bounds and checksum checks.
    pub fn sections(&self) -> Vec<(String, SectionRef)> {
        let mut all = vec![
            ("time index".to_owned(), self.time_index),
            ("term dictionary".to_owned(), self.term_fst),
            ("term infos".to_owned(), self.term_infos),
            ("postings".to_owned(), self.postings),
            ("positions".to_owned(), self.positions),
        ];
        if let Some(offsets) = self.time_offsets {
            all.push(("time offsets".to_owned(), offsets));
        }
        if let Some(pages) = self.page_checksums {
            all.push(("page checksums".to_owned(), pages));
        }
        for field in &self.fields {
            for column in &field.columns {
                let name = format!("column {}:{}", field.name, column.ty.name());
                all.push((format!("{name} directory"), column.directory));
                all.push((format!("{name} data"), column.data));
                if let Some(doc_values) = column.doc_values {
                    all.push((format!("{name} doc values"), doc_values));
                }
                if let Some(templates) = column.templates {
                    all.push((format!("{name} templates"), templates));
                }
                if let Some(dictionary) = column.dictionary {
                    all.push((format!("{name} dictionary"), dictionary));
                }
            }
            if let Some(text) = &field.text {
                all.push((format!("norms of {}", field.name), text.norms));
            }
        }
        all
    }

    /// The sections a reader keeps resident (everything but column data, postings and
    /// positions, which queries read piecemeal): the planning sections
    /// ([`Manifest::planning_sections`]), then the doc values and norms
    /// ([`Manifest::on_demand_sections`]).
    pub fn resident_sections(&self) -> impl Iterator<Item = SectionRef> + '_ {
        self.planning_sections().chain(self.on_demand_sections())
    }

    /// What planning a query needs, read whenever the block opens: time index and offsets,
    /// term dictionary and infos, page checksums, column directories and template
    /// dictionaries (which decoding a templated chunk needs). Writers put them
    /// together just before the manifest, so that opening a remote block reads one stretch
    /// at its end ([`Manifest::planning_start`]).
    pub fn planning_sections(&self) -> impl Iterator<Item = SectionRef> + '_ {
        let directories = self.fields.iter().flat_map(|field| {
            field.columns.iter().flat_map(|column| {
                std::iter::once(column.directory)
                    .chain(column.templates)
                    .chain(column.dictionary)
            })
        });
        [self.time_index, self.term_fst, self.term_infos]
            .into_iter()
            .chain(self.time_offsets)
            .chain(self.page_checksums)
            .chain(directories)
    }

    /// Doc values and norms: resident, read when a local block opens; a remote block reads
    /// each when a query first needs it (they are tens of MB in a large block). Writers put
    /// them just before the planning sections.
    pub fn on_demand_sections(&self) -> impl Iterator<Item = SectionRef> + '_ {
        self.fields.iter().flat_map(|field| {
            let doc_values = field.columns.iter().filter_map(|column| column.doc_values);
            doc_values.chain(field.text.as_ref().map(|text| text.norms))
        })
    }

    /// Where the stretch that opening a remote block reads starts: the first byte of the
    /// planning sections (the manifest and the footer follow them). In blocks written before
    /// the on-demand sections were put first, it is the start of every resident section.
    pub fn planning_start(&self) -> u64 {
        self.planning_sections()
            .filter(|section| section.len > 0)
            .map(|section| section.offset)
            .min()
            .unwrap_or(self.term_fst.offset)
    }
}

/// A column's optional section: where the manifest's version has it (`present`), a flag byte
/// (0 or 1) and, after a 1, the section's reference; `bad_flag` names any other flag.
fn optional_section(
    r: &mut ByteReader<'_>,
    present: bool,
    bad_flag: &'static str,
) -> DecodeResult<Option<SectionRef>> {
    if !present {
        return Ok(None);
    }
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(SectionRef::decode(r)?)),
        _ => Err(DecodeError::new(bad_flag)),
    }
}
