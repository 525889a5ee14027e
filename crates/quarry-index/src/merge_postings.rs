//! The merge's fast path: an output block built from its inputs' columns, norms and postings,
//! without rebuilding events or running the analyzer again.
//!
//! The re-index merge fetched every event, rebuilt its values and tokenized them again: about
//! 16 µs per event on generated logs, the biggest share of a server's ingest CPU (BENCHMARKS.md,
//! "Where the server's ingest CPU goes"). Here, for the docs one output block takes:
//!
//! - The doc order is the merge's (the time heap in `merge.rs`), and an output takes a
//!   contiguous run of each input's docs, so each input's docs map to new ids through one
//!   table ([`InputRun`]).
//! - Columns are copied value by value in the new order, each input's chunks decoded once.
//! - Norms are copied per doc. A field's `docs_with_field` is its count of non-zero norms (a doc
//!   with tokens has a length id of at least 1) and its `total_tokens` the sum of the
//!   frequencies of its token terms: exactly what the segment counts.
//! - The term dictionaries are walked together in key order. A field's ordinal differs between
//!   inputs, but names sort the same everywhere, so rewriting each key's ordinal to the output's
//!   keeps every stream sorted; a term's postings (and positions) from each input are remapped
//!   to new ids and merged by doc.
//!
//! The result is the block the re-index merge writes, byte for byte (tested in `merge.rs`), for
//! inputs of format version 3 on. Older blocks may lack numeric terms (FORMAT.md, "Versions"),
//! and a copy would carry the gap into a block whose other docs have them, where a range query
//! trusts the terms: those merges re-index.

use crate::error::Result;
use crate::schema::Schema;
use quarry_format::block::{BlockInput, FieldInput, InvertedIndexWriter, TextInput};
use quarry_format::column::{ChunkCursor, ColumnWriter};
use quarry_format::postings::unions::{DocTemplates, TemplateGroups};
use quarry_format::{BlockReader, ColumnType, DecodeError, TermKind, TERMINATED, TIME_FIELD};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The first format version whose blocks all hold numeric terms (FORMAT.md, "Versions").
pub(crate) const MIN_COPY_VERSION: u32 = 3;

/// Where one input's docs go in an output: docs `first..first + new_ids.len()` become
/// `new_ids` (increasing).
struct InputRun {
    first: u32,
    new_ids: Vec<u32>,
}

impl InputRun {
    fn end(&self) -> u32 {
        self.first + self.new_ids.len() as u32
    }

    fn is_empty(&self) -> bool {
        self.new_ids.is_empty()
    }
}

/// The runs of every input in `order` ((input, doc) in output order; each input's docs
/// consecutive and increasing, as the time heap pops them).
fn runs(inputs: usize, order: &[(u32, u32)]) -> Vec<InputRun> {
    let mut runs: Vec<InputRun> = (0..inputs)
        .map(|_| InputRun {
            first: 0,
            new_ids: Vec::new(),
        })
        .collect();
    for (new, &(input, doc)) in order.iter().enumerate() {
        let run = &mut runs[input as usize];
        if run.new_ids.is_empty() {
            run.first = doc;
        }
        debug_assert_eq!(doc, run.end(), "an input's docs are consecutive");
        run.new_ids.push(new as u32);
    }
    runs
}

/// Builds the output block of the docs `order` (with `times`, ascending) from `readers`.
/// `schema` says which columns may keep doc values (a mapping's `doc_values: false`).
pub(crate) fn build_output(
    readers: &[&BlockReader],
    order: &[(u32, u32)],
    times: &[i64],
    schema: &Schema,
) -> Result<BlockInput> {
    let runs = runs(readers.len(), order);
    let doc_count = order.len() as u32;
    let present = |input: usize| !runs[input].is_empty();

    // Every name of an input with docs here, sorted; a name with no value in these docs is
    // dropped below (the re-index merge would never have seen it).
    let mut names: Vec<&str> = readers
        .iter()
        .enumerate()
        .filter(|&(input, _)| present(input))
        .flat_map(|(_, reader)| reader.manifest().fields.iter().map(|f| f.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();

    let mut fields: Vec<FieldInput> = Vec::with_capacity(names.len());
    // (output field, its docs by template) for the fields whose terms may be unions.
    let mut templates: Vec<(usize, TemplateGroups)> = Vec::new();
    for name in names {
        // The field's ordinal in each input that has docs here.
        let ordinals: Vec<Option<u16>> = readers
            .iter()
            .enumerate()
            .map(|(input, reader)| present(input).then(|| reader.field_ordinal(name)).flatten())
            .collect();
        let positions_from_values = positions_from_values(readers, name, schema) == Some(true);
        let columns = if name == TIME_FIELD {
            let mut writer = ColumnWriter::for_time();
            for (doc, &time) in times.iter().enumerate() {
                writer.push_raw(doc as u32, time as u64)?;
            }
            vec![writer.finish(doc_count)?]
        } else {
            let mut types: Vec<ColumnType> = ordinals
                .iter()
                .enumerate()
                .filter_map(|(input, ordinal)| Some((input, (*ordinal)?)))
                .flat_map(|(input, ordinal)| {
                    readers[input].manifest().fields[ordinal as usize]
                        .columns
                        .iter()
                        .map(|c| c.ty)
                })
                .collect();
            types.sort_unstable();
            types.dedup();
            let mut columns = Vec::with_capacity(types.len());
            let doc_values = schema.rules(name).is_none_or(|rules| rules.doc_values);
            // The docs by template, for a field whose token terms may be unions of them.
            let mut field_templates = (positions_from_values && types.contains(&ColumnType::Str))
                .then(|| DocTemplates::new(doc_count));
            for ty in types {
                let column = copy_column(
                    readers,
                    &ordinals,
                    order,
                    (name, ty),
                    doc_values,
                    field_templates.as_mut(),
                )?;
                if column.present_count > 0 {
                    columns.push(column);
                }
            }
            if let Some(found) = field_templates {
                templates.push((fields.len(), found.finish()));
            }
            columns
        };
        let text = copy_norms(readers, &ordinals, order)?.map(|norms| TextInput {
            docs_with_field: norms.iter().filter(|&&n| n != 0).count() as u32,
            norms,
            // Summed from the token terms below.
            total_tokens: 0,
            positions_from_values,
        });
        let text = text.filter(|t| t.docs_with_field > 0);
        // A field mapped `stored: false` has terms and no columns in the inputs that hold
        // it: it stays whatever its columns, or its terms would be lost. Other fields without
        // a value in these docs are dropped.
        let terms_only = ordinals.iter().enumerate().any(|(input, ordinal)| {
            ordinal.is_some_and(|o| {
                readers[input].manifest().fields[o as usize]
                    .columns
                    .is_empty()
            })
        });
        if columns.is_empty() && text.is_none() && !terms_only {
            if templates.last().is_some_and(|(at, _)| *at == fields.len()) {
                templates.pop();
            }
            continue;
        }
        fields.push(FieldInput {
            name: name.to_owned(),
            columns,
            text,
        });
    }

    // Input ordinal to output ordinal, per input: names sort the same in both, so this map
    // is increasing and rewriting term keys keeps each dictionary in key order.
    let ordinal_maps: Vec<Vec<Option<u16>>> = readers
        .iter()
        .enumerate()
        .map(|(input, reader)| {
            if !present(input) {
                return Vec::new();
            }
            reader
                .manifest()
                .fields
                .iter()
                .map(|f| {
                    fields
                        .binary_search_by(|out| out.name.as_str().cmp(&f.name))
                        .ok()
                        .map(|i| i as u16)
                })
                .collect()
        })
        .collect();
    let mut total_tokens = vec![0u64; fields.len()];
    let inverted = merge_terms(
        readers,
        &runs,
        &ordinal_maps,
        (&fields, templates),
        &mut total_tokens,
    )?;
    for (field, tokens) in fields.iter_mut().zip(total_tokens) {
        let Some(text) = &mut field.text else {
            continue;
        };
        // A field mapped `norms: false` counts each doc as one token long (its norms say so
        // too); so does a field whose every value is one token. Either way, when every input
        // counts one token a doc, so does the output.
        let one_token_docs = readers
            .iter()
            .enumerate()
            .filter(|&(input, _)| present(input))
            .filter_map(|(_, reader)| reader.field_ordinal(&field.name).map(|o| (reader, o)))
            .filter_map(|(reader, o)| reader.manifest().fields[o as usize].text.as_ref())
            .all(|t| t.total_tokens == u64::from(t.docs_with_field));
        text.total_tokens = if one_token_docs {
            u64::from(text.docs_with_field)
        } else {
            tokens
        };
    }
    Ok(BlockInput {
        times: times.to_vec(),
        fields,
        inverted,
    })
}

/// The column (`name`, `ty`) of the output, copied from the inputs that have it.
/// Each value is also given to `templates`, when some.
fn copy_column(
    readers: &[&BlockReader],
    ordinals: &[Option<u16>],
    order: &[(u32, u32)],
    (name, ty): (&str, ColumnType),
    doc_values: bool,
    mut templates: Option<&mut DocTemplates>,
) -> Result<quarry_format::column::ColumnData> {
    let mut cursors: Vec<Option<ChunkCursor>> = readers
        .iter()
        .zip(ordinals)
        .map(|(reader, ordinal)| Some(ChunkCursor::new(reader.column((*ordinal)?, ty)?)))
        .collect();
    // As the segment writes it: a column whose mapping says `doc_values: false` never has
    // them, others keep them when their values allow (the inputs' choice is not kept: more
    // values may change it).
    let mut writer = if doc_values {
        ColumnWriter::new(ty)
    } else {
        ColumnWriter::without_doc_values(ty)
    };
    let is_bytes = matches!(ty, ColumnType::Str | ColumnType::Json);
    for (new, &(input, doc)) in order.iter().enumerate() {
        let Some(cursor) = &mut cursors[input as usize] else {
            continue;
        };
        let reader = readers[input as usize];
        let corrupt = |e| reader.corrupt(format!("column {name}:{}", ty.name()), e);
        let Some((chunk, position)) = cursor.find(doc).map_err(corrupt)? else {
            continue;
        };
        if is_bytes {
            let value = chunk
                .str_at(position)
                .ok_or_else(|| corrupt(DecodeError::new("value outside its chunk")))?;
            writer.push_str(new as u32, value)?;
            if let Some(templates) = templates.as_deref_mut() {
                if ty == ColumnType::Str {
                    templates.add_str(new as u32, value.as_bytes());
                } else {
                    templates.add_other(new as u32);
                }
            }
        } else {
            let raw = chunk
                .raw(position)
                .ok_or_else(|| corrupt(DecodeError::new("value outside its chunk")))?;
            writer.push_raw(new as u32, raw)?;
            if let Some(templates) = templates.as_deref_mut() {
                templates.add_other(new as u32);
            }
        }
    }
    Ok(writer.finish(order.len() as u32)?)
}

/// Whether the output's field `name` keeps its positions in its values (FORMAT.md, "Positions
/// from values"): when each input that indexes its tokens does, or held them before version 8
/// (every token's positions stored) under a name the schema still leaves unmapped, which is
/// indexed the way `segment::value_tokens` reads it back. `None`: some inputs' positions come
/// from their values and others' cannot; such a merge re-indexes (`merge_readers`).
pub(crate) fn positions_from_values(
    readers: &[&BlockReader],
    name: &str,
    schema: &Schema,
) -> Option<bool> {
    let mut from_values = false;
    let mut stored = false;
    for reader in readers {
        let Some(ordinal) = reader.field_ordinal(name) else {
            continue;
        };
        let Some(text) = &reader.manifest().fields[ordinal as usize].text else {
            continue;
        };
        if text.positions_from_values {
            from_values = true;
        } else if reader.format_version() >= POSITIONS_FROM_VALUES_VERSION
            || !schema.positions_from_values(name)
        {
            stored = true;
        }
    }
    match (from_values, stored) {
        (true, true) => None,
        (false, true) => Some(false),
        (_, false) => Some(schema.positions_from_values(name) || from_values),
    }
}

/// Whether some field's positions come from its values in some inputs and cannot in others
/// (`positions_from_values`): such inputs are merged by re-indexing their events.
pub(crate) fn mixed_positions(readers: &[&BlockReader], schema: &Schema) -> bool {
    readers.iter().any(|reader| {
        reader.manifest().fields.iter().any(|field| {
            field.text.as_ref().is_some_and(|t| t.positions_from_values)
                && positions_from_values(readers, &field.name, schema).is_none()
        })
    })
}

/// The first format version whose fields may keep their positions in their values.
const POSITIONS_FROM_VALUES_VERSION: u32 = 8;

/// The output's norms of a field: each doc's length id from its input (0 where the input has
/// no tokens in the field), or `None` when no input has the field tokenized.
fn copy_norms(
    readers: &[&BlockReader],
    ordinals: &[Option<u16>],
    order: &[(u32, u32)],
) -> Result<Option<Vec<u8>>> {
    let mut norms: Vec<Option<&[u8]>> = Vec::with_capacity(readers.len());
    for (reader, ordinal) in readers.iter().zip(ordinals) {
        norms.push(match ordinal {
            Some(ordinal) => reader.norms(*ordinal)?,
            None => None,
        });
    }
    if norms.iter().all(Option::is_none) {
        return Ok(None);
    }
    // In bounds: the reader checked that norms hold one byte per doc.
    Ok(Some(
        order
            .iter()
            .map(|&(input, doc)| norms[input as usize].map_or(0, |n| n[doc as usize]))
            .collect(),
    ))
}

/// A term key read from an input's dictionary with its field ordinal rewritten to the
/// output's: (key, input, term ordinal in the input). Smallest key first; on equal keys, the
/// input order (irrelevant to the result: each term's docs are sorted by new id).
type HeapEntry = Reverse<(Vec<u8>, usize, u64)>;

/// Pushes `input`'s next term whose field is in the output, reusing `key`'s buffer.
fn push_next(
    heap: &mut BinaryHeap<HeapEntry>,
    stream: &mut fst::map::Stream<'_>,
    ordinal_map: &[Option<u16>],
    reader: &BlockReader,
    input: usize,
    mut key: Vec<u8>,
) -> Result<()> {
    use fst::Streamer;
    while let Some((raw, ordinal)) = stream.next() {
        if raw.len() < 3 {
            let error = DecodeError::new("term key shorter than its field and kind");
            return Err(reader.corrupt("term dictionary", error).into());
        }
        let field = u16::from_be_bytes([raw[0], raw[1]]);
        let Some(&Some(out)) = ordinal_map.get(field as usize) else {
            // A field with no value in these docs: none of its terms has a doc here.
            continue;
        };
        key.clear();
        key.extend_from_slice(&out.to_be_bytes());
        key.extend_from_slice(&raw[2..]);
        heap.push(Reverse((key, input, ordinal)));
        return Ok(());
    }
    Ok(())
}

/// The output's term dictionary and postings: every term of the inputs that has a doc here,
/// its docs remapped. Adds each token term's frequencies to its field's `total_tokens`.
/// `templates`: the docs by template of the output fields that have them (by output field,
/// increasing), for their token terms to become unions where they can.
fn merge_terms(
    readers: &[&BlockReader],
    runs: &[InputRun],
    ordinal_maps: &[Vec<Option<u16>>],
    (fields, templates): (&[FieldInput], Vec<(usize, TemplateGroups)>),
    total_tokens: &mut [u64],
) -> Result<InvertedIndexWriter> {
    let mut templates = templates.into_iter().peekable();
    let mut streams: Vec<Option<fst::map::Stream>> = readers
        .iter()
        .zip(runs)
        .map(|(reader, run)| (!run.is_empty()).then(|| reader.term_dictionary().stream()))
        .collect();
    let mut heap = BinaryHeap::new();
    for (input, stream) in streams.iter_mut().enumerate() {
        if let Some(stream) = stream {
            push_next(
                &mut heap,
                stream,
                &ordinal_maps[input],
                readers[input],
                input,
                Vec::new(),
            )?;
        }
    }
    // Each input's dictionary is walked in ordinal order: one cursor each decodes every term
    // info once.
    let mut term_infos: Vec<_> = readers.iter().map(|reader| reader.term_infos()).collect();
    let mut writer = InvertedIndexWriter::default();
    let mut key = Vec::new();
    let mut sources: Vec<(usize, u64, Vec<u8>)> = Vec::new();
    // (new doc, tf, start of its positions in `positions`)
    let mut entries: Vec<(u32, u32, u32)> = Vec::new();
    let mut positions: Vec<u32> = Vec::new();
    let mut doc_positions: Vec<u32> = Vec::new();
    let (mut docs, mut tfs, mut sorted_positions) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(Reverse((first_key, input, ordinal))) = heap.pop() {
        key.clear();
        key.extend_from_slice(&first_key);
        sources.clear();
        sources.push((input, ordinal, first_key));
        while heap
            .peek()
            .is_some_and(|Reverse((next, _, _))| *next == key)
        {
            let Reverse((next, input, ordinal)) = heap.pop().expect("peeked");
            sources.push((input, ordinal, next));
        }
        let out_field = u16::from_be_bytes([key[0], key[1]]);
        let kind = TermKind::from_u8(key[2]);
        // The output's templates of this field (and of any before it with no terms here),
        // before its first term.
        while let Some((field, groups)) =
            templates.next_if(|(field, _)| *field <= out_field as usize)
        {
            let norms = fields[field]
                .text
                .as_ref()
                .map_or(&[][..], |t| &t.norms[..]);
            writer.set_templates(field as u16, groups, norms)?;
        }
        // An input's templates are its own: the output writes those its unions list.
        let template = kind == Some(TermKind::Template);

        entries.clear();
        positions.clear();
        let out_from_values = fields[out_field as usize]
            .text
            .as_ref()
            .is_some_and(|t| t.positions_from_values);
        for &(input, ordinal, _) in sources.iter().filter(|_| !template) {
            let reader = readers[input];
            let Some(kind) = kind else {
                let error = DecodeError::new("unknown term kind");
                return Err(reader.corrupt("term dictionary", error).into());
            };
            let run = &runs[input];
            let info = term_infos[input].get(ordinal)?;
            let tokens = kind.has_positions();
            if tokens && !info.has_positions && !out_from_values {
                // Only a field whose positions come from its values has such terms, and
                // then so does the output's (`positions_from_values`).
                let error = DecodeError::new("token term without positions");
                return Err(reader.corrupt("term infos", error).into());
            }
            // The output keeps no positions of such a field: none are read.
            let with_positions = tokens && info.has_positions && !out_from_values;
            let mut cursor = if with_positions {
                reader.postings_with_positions(&info)?
            } else {
                reader.postings(&info)?
            };
            let mut doc = cursor.seek(run.first);
            while doc != TERMINATED && doc < run.end() {
                let new = run.new_ids[(doc - run.first) as usize];
                if tokens && !with_positions {
                    entries.push((new, cursor.term_freq(), 0));
                } else if with_positions {
                    let tf = cursor.term_freq();
                    cursor
                        .positions(&mut doc_positions)
                        .map_err(|e| reader.corrupt("positions", e))?;
                    if doc_positions.len() != tf as usize {
                        let error = DecodeError::new("positions do not match the frequency");
                        return Err(reader.corrupt("positions", error).into());
                    }
                    entries.push((new, tf, positions.len() as u32));
                    positions.extend_from_slice(&doc_positions);
                } else {
                    entries.push((new, 1, 0));
                }
                doc = cursor.advance();
            }
            if let Some(error) = cursor.error() {
                return Err(reader.corrupt("postings", error).into());
            }
        }
        // Advance the streams this term came from before anything can `continue`.
        for (input, _, buffer) in sources.drain(..) {
            if let Some(stream) = &mut streams[input] {
                push_next(
                    &mut heap,
                    stream,
                    &ordinal_maps[input],
                    readers[input],
                    input,
                    buffer,
                )?;
            }
        }
        let Some(kind) = kind.filter(|_| !template) else {
            continue;
        };
        if entries.is_empty() {
            continue;
        }
        // Several inputs' docs interleave in the output; one input's are already in order.
        let interleaved = entries.windows(2).any(|w| w[0].0 > w[1].0);
        if interleaved {
            entries.sort_unstable_by_key(|e| e.0);
        }
        docs.clear();
        tfs.clear();
        sorted_positions.clear();
        for &(doc, tf, start) in &entries {
            docs.push(doc);
            tfs.push(tf);
            if kind.has_positions() && !out_from_values {
                sorted_positions
                    .extend_from_slice(&positions[start as usize..(start + tf) as usize]);
            }
        }
        let field = &fields[out_field as usize];
        if kind == TermKind::Token {
            total_tokens[out_field as usize] += tfs.iter().map(|&tf| u64::from(tf)).sum::<u64>();
        }
        let norms = field.text.as_ref().map(|t| t.norms.as_slice());
        let norm_of = |doc: u32| {
            norms
                .and_then(|n| n.get(doc as usize))
                .copied()
                .unwrap_or(0)
        };
        let term_positions = match kind {
            TermKind::Token if !out_from_values => Some(sorted_positions.as_slice()),
            _ => None,
        };
        writer.add_term(
            out_field,
            kind,
            &key[3..],
            &docs,
            &tfs,
            norm_of,
            term_positions,
        )?;
    }
    Ok(writer)
}
