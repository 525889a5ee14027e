//! Postings that are a union of templates' docs (format version 11; FORMAT.md, "Template
//! unions").
//!
//! The fixed words of a log message's template are in every event of that template: `Failed`,
//! `password`, `for` and `from` in each `Failed password for root from # port # ssh#`. Such a
//! word's docs are often exactly the docs of the templates that hold it, and a dozen words
//! share each template. So a term whose docs are whole templates, with one frequency in
//! each, stores the list of those templates instead of its postings, and each listed
//! template's docs are stored once, as a hidden term of kind [`TermKind::Template`] keyed by
//! the template's number, for every word of it. A reader rebuilds the term's postings from the
//! list when a query first asks for them (`BlockReader`).
//!
//! Writers decide from the docs alone ([`UnionFinder`]): a term becomes a union only when its
//! docs are exactly those of whole templates, its frequency the same in every doc of each, so
//! how the field was analyzed does not matter to what a query finds. The templates are those
//! of the column writer (`column::template`): values that differ in their variables only.
//!
//! [`TermKind::Template`]: crate::termdict::TermKind::Template

use crate::codec::{put_varint, ByteReader};
use crate::column::template::template_key;
use crate::error::{DecodeError, DecodeResult};

/// A doc of no template: without a value of the field, with several, with one that is not a
/// string, or with one too long to template.
pub const NO_TEMPLATE: u32 = u32::MAX;
/// A doc whose first value was seen (its template not yet final while more may come).
const SEVERAL: u32 = u32::MAX - 1;

/// A term becomes a union only when it has at least this many docs per template it lists:
/// below that, its own postings (a byte or two a doc) cost about what the list does, and a
/// query reads them without rebuilding anything.
pub const UNION_MIN_DOCS_PER_TEMPLATE: usize = 4;

/// Groups a field's docs by the template of their value, as a block is built.
pub struct DocTemplates {
    ids: hashbrown::HashMap<Box<[u8]>, u32>,
    of_doc: Vec<u32>,
    vars: Vec<(usize, usize)>,
    key: Vec<u8>,
}

impl DocTemplates {
    /// No doc has a template yet.
    pub fn new(doc_count: u32) -> Self {
        DocTemplates {
            ids: hashbrown::HashMap::new(),
            of_doc: vec![NO_TEMPLATE; doc_count as usize],
            vars: Vec::new(),
            key: Vec::new(),
        }
    }

    /// Doc `doc` holds the string `value` in the field. A doc with a second value has no
    /// template. Docs past the count given to `new` are ignored.
    pub fn add_str(&mut self, doc: u32, value: &[u8]) {
        let Some(&current) = self.of_doc.get(doc as usize) else {
            return;
        };
        if current != NO_TEMPLATE || !template_key(value, &mut self.vars, &mut self.key) {
            self.of_doc[doc as usize] = SEVERAL;
            return;
        }
        let next = self.ids.len() as u32;
        let id = match self.ids.get(self.key.as_slice()) {
            Some(&id) => id,
            None => {
                self.ids.insert(self.key.as_slice().into(), next);
                next
            }
        };
        self.of_doc[doc as usize] = id;
    }

    /// Doc `doc` holds a value that is not a string: it has no template.
    pub fn add_other(&mut self, doc: u32) {
        if let Some(slot) = self.of_doc.get_mut(doc as usize) {
            *slot = SEVERAL;
        }
    }

    /// The groups: each template's docs, in doc order. Templates are numbered by their first
    /// doc, whatever order the values came in, so the same docs give the same numbers.
    pub fn finish(mut self) -> TemplateGroups {
        let mut renumbered = vec![NO_TEMPLATE; self.ids.len()];
        let mut count = 0;
        for slot in &mut self.of_doc {
            if *slot == SEVERAL || *slot == NO_TEMPLATE {
                *slot = NO_TEMPLATE;
                continue;
            }
            let new = &mut renumbered[*slot as usize];
            if *new == NO_TEMPLATE {
                *new = count;
                count += 1;
            }
            *slot = *new;
        }
        let count = count as usize;
        let mut starts = vec![0u32; count + 1];
        for &slot in &self.of_doc {
            if slot != NO_TEMPLATE {
                starts[slot as usize + 1] += 1;
            }
        }
        for i in 0..count {
            starts[i + 1] += starts[i];
        }
        let mut docs = vec![0u32; starts[count] as usize];
        let mut next = starts.clone();
        for (doc, &template) in self.of_doc.iter().enumerate() {
            if template != NO_TEMPLATE {
                docs[next[template as usize] as usize] = doc as u32;
                next[template as usize] += 1;
            }
        }
        TemplateGroups {
            of_doc: self.of_doc,
            starts,
            docs,
        }
    }
}

/// A field's docs by template ([`DocTemplates::finish`]).
pub struct TemplateGroups {
    of_doc: Vec<u32>,
    starts: Vec<u32>,
    docs: Vec<u32>,
}

impl TemplateGroups {
    pub fn template_count(&self) -> usize {
        self.starts.len() - 1
    }

    /// The docs of template `template`, ascending.
    pub fn docs_of(&self, template: u32) -> &[u32] {
        let t = template as usize;
        &self.docs[self.starts[t] as usize..self.starts[t + 1] as usize]
    }
}

/// Finds, term by term, the terms of one field that are unions of its templates, and
/// remembers which templates they list.
pub(crate) struct UnionFinder {
    pub(crate) field: u16,
    pub(crate) groups: TemplateGroups,
    /// Per template: the stamp of the last term that met it, its docs and frequency there.
    stamps: Vec<u32>,
    counts: Vec<u32>,
    tfs: Vec<u32>,
    stamp: u32,
    /// The last union found: (template, frequency), by template.
    pub(crate) list: Vec<(u32, u32)>,
    /// Whether some union lists each template (its docs are then written).
    pub(crate) listed: Vec<bool>,
    /// The field's length ids, one per doc: a template's postings bound scores as any
    /// term's do, so they are the same bytes as an equal term's (and shared with it).
    pub(crate) norms: Vec<u8>,
}

impl UnionFinder {
    pub(crate) fn new(field: u16, groups: TemplateGroups, norms: Vec<u8>) -> Self {
        let count = groups.template_count();
        UnionFinder {
            field,
            norms,
            groups,
            stamps: vec![0; count],
            counts: vec![0; count],
            tfs: vec![0; count],
            stamp: 0,
            list: Vec::new(),
            listed: vec![false; count],
        }
    }

    /// Whether the term of `docs` (ascending) with frequencies `tfs` is to be a union: its
    /// docs exactly those of two or more whole templates, one frequency in each, and at least
    /// `UNION_MIN_DOCS_PER_TEMPLATE` docs per template. The list is then in `self.list`. (A
    /// term of one template keeps its postings: every other word of that template has the
    /// same, and their bytes are stored once already, `PostingsWriter::share`.)
    pub(crate) fn union_of(&mut self, docs: &[u32], tfs: &[u32]) -> bool {
        self.stamp += 1;
        self.list.clear();
        for (&doc, &tf) in docs.iter().zip(tfs) {
            let template = match self.groups.of_doc.get(doc as usize) {
                Some(&t) if t != NO_TEMPLATE => t as usize,
                _ => return false,
            };
            if self.stamps[template] != self.stamp {
                self.stamps[template] = self.stamp;
                self.counts[template] = 0;
                self.tfs[template] = tf;
                self.list.push((template as u32, tf));
                if self.list.len() * UNION_MIN_DOCS_PER_TEMPLATE > docs.len() {
                    return false;
                }
            } else if self.tfs[template] != tf {
                return false;
            }
            self.counts[template] += 1;
        }
        let whole = self
            .list
            .iter()
            .all(|&(t, _)| self.counts[t as usize] as usize == self.groups.docs_of(t).len());
        if !whole || self.list.len() < 2 {
            return false;
        }
        self.list.sort_unstable();
        for &(t, _) in &self.list {
            self.listed[t as usize] = true;
        }
        true
    }
}

/// A union's bytes in the postings section:
/// `field:varint count:varint (template_gap:varint tf:varint){count}`, templates increasing,
/// each gap from the previous template (the first from 0).
pub(crate) fn encode_union(field: u16, list: &[(u32, u32)], out: &mut Vec<u8>) {
    put_varint(out, u64::from(field));
    put_varint(out, list.len() as u64);
    let mut prev = 0;
    for &(template, tf) in list {
        put_varint(out, u64::from(template - prev));
        put_varint(out, u64::from(tf));
        prev = template;
    }
}

/// Reads what `encode_union` wrote: the field and the (template, tf) list, templates strictly
/// increasing and frequencies at least 1, and nothing after it.
pub fn decode_union(bytes: &[u8]) -> DecodeResult<(u16, Vec<(u32, u32)>)> {
    let mut r = ByteReader::new(bytes);
    let field = u16::try_from(r.varint()?).map_err(|_| DecodeError::new("union field"))?;
    let count = r.varint()?;
    // Each entry takes at least two bytes: a count past that is damage, not a list.
    if count > bytes.len() as u64 / 2 {
        return Err(DecodeError::new("union list length"));
    }
    let mut list = Vec::with_capacity(count as usize);
    let mut template = 0u32;
    for i in 0..count {
        let gap = r.varint_u32()?;
        if i > 0 && gap == 0 {
            return Err(DecodeError::new("union templates not increasing"));
        }
        template = template
            .checked_add(gap)
            .ok_or(DecodeError::new("union template number"))?;
        let tf = r.varint_u32()?;
        if tf == 0 {
            return Err(DecodeError::new("union frequency 0"));
        }
        list.push((template, tf));
    }
    if !r.is_empty() {
        return Err(DecodeError::new("bytes after a union list"));
    }
    Ok((field, list))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(values: &[Option<&str>]) -> TemplateGroups {
        let mut templates = DocTemplates::new(values.len() as u32);
        for (doc, value) in values.iter().enumerate() {
            if let Some(value) = value {
                templates.add_str(doc as u32, value.as_bytes());
            }
        }
        templates.finish()
    }

    #[test]
    fn docs_group_by_the_template_of_their_value() {
        let g = groups(&[
            Some("Failed password for root from 10.0.0.1 port 22"),
            Some("session opened"),
            None,
            Some("Failed password for root from 10.0.0.7 port 2222"),
            Some("session opened"),
        ]);
        assert_eq!(g.template_count(), 2);
        assert_eq!(g.docs_of(0), &[0, 3]);
        assert_eq!(g.docs_of(1), &[1, 4]);
        assert_eq!(g.of_doc[2], NO_TEMPLATE);
    }

    #[test]
    fn templates_are_numbered_by_their_first_doc() {
        let mut templates = DocTemplates::new(4);
        for (doc, value) in [(3, "b 1"), (1, "a 1"), (2, "b 2"), (0, "c 1")] {
            templates.add_str(doc, value.as_bytes());
        }
        let g = templates.finish();
        assert_eq!(g.of_doc, vec![0, 1, 2, 2]);
        assert_eq!(g.docs_of(2), &[2, 3]);
    }

    #[test]
    fn a_second_value_or_a_number_leaves_a_doc_without_template() {
        let mut templates = DocTemplates::new(3);
        templates.add_str(0, b"a 1");
        templates.add_str(0, b"a 2");
        templates.add_str(1, b"a 3");
        templates.add_other(2);
        let g = templates.finish();
        assert_eq!(g.of_doc, vec![NO_TEMPLATE, 0, NO_TEMPLATE]);
        assert_eq!(g.docs_of(0), &[1]);
    }

    #[test]
    fn only_whole_templates_with_one_frequency_each_make_a_union() {
        // Templates: 0 = "x #" (docs 0, 2, 4, 6, 8), 1 = "y #" (docs 1, 3, 5, 7, 9).
        let values: Vec<String> = (0..10)
            .map(|i| format!("{} {i}", if i % 2 == 0 { "x" } else { "y" }))
            .collect();
        let values: Vec<Option<&str>> = values.iter().map(|v| Some(v.as_str())).collect();
        let mut finder = UnionFinder::new(3, groups(&values), vec![1; 10]);
        let evens = [0, 2, 4, 6, 8];
        // One template: the term keeps its postings (shared with the template's other words).
        assert!(!finder.union_of(&evens, &[1; 5]));
        let all: Vec<u32> = (0..10).collect();
        assert!(finder.union_of(&all, &[2, 1, 2, 1, 2, 1, 2, 1, 2, 1]));
        assert_eq!(finder.list, vec![(0, 2), (1, 1)]);
        // A template's docs in part, two frequencies in one template, a doc of no template.
        let odd_but_one = [1, 3, 5, 7];
        let all_but_one: Vec<u32> = evens.iter().chain(&odd_but_one).copied().collect();
        let mut sorted = all_but_one.clone();
        sorted.sort_unstable();
        assert!(!finder.union_of(&sorted, &[1; 9]));
        assert!(!finder.union_of(&all, &[2, 1, 2, 1, 1, 1, 2, 1, 2, 1]));
        // Fewer than UNION_MIN_DOCS_PER_TEMPLATE docs a template.
        let values = [Some("a 1"), Some("b 1"), Some("a 2"), Some("b 2")];
        let mut small = UnionFinder::new(0, groups(&values), vec![1; 4]);
        assert!(!small.union_of(&[0, 1, 2, 3], &[1; 4]));
        assert_eq!(finder.listed, vec![true, true]);
    }

    #[test]
    fn union_lists_round_trip_and_damage_is_an_error() {
        let list = vec![(0, 1), (5, 2), (300, 1)];
        let mut bytes = Vec::new();
        encode_union(7, &list, &mut bytes);
        assert_eq!(decode_union(&bytes).unwrap(), (7, list));
        assert!(decode_union(&bytes[..bytes.len() - 1]).is_err());
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode_union(&extra).is_err());
        let mut repeated = Vec::new();
        encode_union(1, &[(3, 1)], &mut repeated);
        repeated[1] = 2;
        repeated.extend_from_slice(&[0, 1]);
        assert!(decode_union(&repeated).is_err());
        assert!(decode_union(&[0, 1, 0, 0]).is_err(), "frequency 0");
    }
}
