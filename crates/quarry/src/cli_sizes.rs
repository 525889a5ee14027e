//! `quarry check --sizes`: where a data directory's bytes go, by kind of section and by field
//! (columns, doc values, norms, and the field's share of the term infos, postings and
//! positions, found by walking the term dictionary).

use anyhow::Result;
use quarry_format::postings::TermInfo;
use quarry_format::termdict::{term_info_len, PACKED_TERM_INFOS_VERSION, TERM_INFO_GROUP};
use quarry_format::BlockReader;
use std::collections::BTreeMap;

/// One field's bytes over all blocks.
#[derive(Default)]
struct FieldBytes {
    terms: u64,
    term_infos: u64,
    postings: u64,
    positions: u64,
    columns: u64,
    doc_values: u64,
    norms: u64,
}

impl FieldBytes {
    fn total(&self) -> u64 {
        self.term_infos
            + self.postings
            + self.positions
            + self.columns
            + self.doc_values
            + self.norms
    }
}

pub fn print_sizes(blocks: &[BlockReader]) -> Result<()> {
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let mut fields: BTreeMap<String, FieldBytes> = BTreeMap::new();
    for block in blocks {
        for (name, section) in block.manifest().sections() {
            // Per-field sections grouped by kind: "column x:string data" -> "columns (data)".
            let kind = if name.ends_with(" doc values") {
                "doc values".to_owned()
            } else if name.starts_with("column ") {
                format!("columns ({})", name.rsplit(' ').next().unwrap_or(""))
            } else if name.starts_with("norms of ") {
                "norms".to_owned()
            } else {
                name
            };
            *kinds.entry(kind).or_default() += section.len;
        }
        for field in &block.manifest().fields {
            let bytes = fields.entry(field.name.clone()).or_default();
            for column in &field.columns {
                // With the dictionaries the column's chunks need (templates, zstd's).
                let dictionaries = [column.templates, column.dictionary];
                bytes.columns += column.directory.len
                    + column.data.len
                    + dictionaries.iter().flatten().map(|s| s.len).sum::<u64>();
                bytes.doc_values += column.doc_values.map_or(0, |s| s.len);
            }
            bytes.norms += field.text.as_ref().map_or(0, |t| t.norms.len);
        }
        // Term infos stored compressed (format version 9) are credited to the fields in
        // proportion to their expanded bytes, so the fields add up to the section.
        let mut block_terms: BTreeMap<String, FieldBytes> = BTreeMap::new();
        add_terms(block, &mut block_terms)?;
        let expanded: Vec<u64> = block_terms.values().map(|b| b.term_infos).collect();
        let shares = split_in_proportion(block.manifest().term_infos.len, &expanded);
        for ((name, terms), share) in block_terms.into_iter().zip(shares) {
            let bytes = fields.entry(name).or_default();
            bytes.terms += terms.terms;
            bytes.term_infos += share;
            bytes.postings += terms.postings;
            bytes.positions += terms.positions;
        }
    }
    for (kind, bytes) in &kinds {
        println!("{kind:>24}: {bytes:>12} bytes");
    }
    let mut rows: Vec<(&String, &FieldBytes)> = fields.iter().collect();
    rows.sort_by_key(|(_, bytes)| std::cmp::Reverse(bytes.total()));
    println!(
        "{:<24} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}",
        "field",
        "terms",
        "term infos",
        "postings",
        "positions",
        "columns",
        "doc values",
        "norms",
        "total"
    );
    for (name, b) in rows {
        println!(
            "{name:<24} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}",
            b.terms,
            b.term_infos,
            b.postings,
            b.positions,
            b.columns,
            b.doc_values,
            b.norms,
            b.total()
        );
    }
    println!("(the term dictionary's FST is not split by field; it is in the first table)");
    // What a server holds in memory for these blocks while they are open: the checked private
    // copies of the sections read at random (issue 26), beside the mapped files.
    let files: u64 = blocks.iter().map(BlockReader::file_len).sum();
    let resident: usize = blocks.iter().map(BlockReader::resident_bytes).sum();
    println!(
        "(held in memory while open: {resident} bytes, {:.1}% of the {files} bytes of block files: the checked copies of the sections read at random)",
        100.0 * resident as f64 / files.max(1) as f64
    );
    Ok(())
}

/// `total` split in proportion to `weights`, in whole bytes that add up to it (the largest
/// remainders get the bytes rounding left over).
fn split_in_proportion(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<(u64, u128)> = weights
        .iter()
        .map(|&w| {
            let scaled = u128::from(w) * u128::from(total);
            ((scaled / sum) as u64, scaled % sum)
        })
        .collect();
    let mut shares: Vec<u64> = exact.iter().map(|&(share, _)| share).collect();
    let left = total - shares.iter().sum::<u64>();
    let mut by_remainder: Vec<usize> = (0..exact.len()).collect();
    by_remainder.sort_by_key(|&i| std::cmp::Reverse(exact[i].1));
    for &i in by_remainder.iter().take(left as usize) {
        shares[i] += 1;
    }
    shares
}

/// Every term of the block, credited to its field.
fn add_terms(block: &BlockReader, fields: &mut BTreeMap<String, FieldBytes>) -> Result<()> {
    use fst::Streamer;
    let names: Vec<&str> = block
        .manifest()
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    let mut stream = block.term_dictionary().stream();
    let mut infos = block.term_infos();
    let mut prev: Option<TermInfo> = None;
    // Where the postings written so far end: a term whose postings start before it shares
    // an earlier term's.
    let mut postings_end = 0u64;
    while let Some((key, ordinal)) = stream.next() {
        let Some(name) = key
            .get(..2)
            .and_then(|b| names.get(usize::from(u16::from_be_bytes([b[0], b[1]]))))
        else {
            continue;
        };
        let info = infos.get(ordinal)?;
        let version = block.format_version();
        let bytes = fields.entry((*name).to_owned()).or_default();
        // A group's offset (version 5 on) is credited to the field of its first term, so the
        // fields add up to the section.
        if ordinal % TERM_INFO_GROUP == 0 {
            prev = None;
            if version >= PACKED_TERM_INFOS_VERSION {
                bytes.term_infos += 4;
            }
        }
        bytes.terms += 1;
        bytes.term_infos += term_info_len(version, &info, prev.as_ref());
        prev = Some(info);
        // Terms share equal postings (version 6): the bytes go to the first term that has
        // them, so the fields add up to the section.
        if info.postings_len > 0 && info.postings_offset >= postings_end {
            bytes.postings += u64::from(info.postings_len);
            postings_end = info.postings_offset + u64::from(info.postings_len);
        }
        bytes.positions += info.positions_len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_in_proportion;

    #[test]
    fn a_split_adds_up_and_follows_the_weights() {
        assert_eq!(split_in_proportion(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(split_in_proportion(100, &[50, 25, 25]), vec![50, 25, 25]);
        assert_eq!(split_in_proportion(7, &[0, 0]), vec![0, 0]);
        assert_eq!(split_in_proportion(0, &[3, 4]), vec![0, 0]);
        let weights = [2_080_797u64, 885_259, 898_608, 3_515, 12];
        let shares = split_in_proportion(2_039_680, &weights);
        assert_eq!(shares.iter().sum::<u64>(), 2_039_680);
        let sum: u64 = weights.iter().sum();
        for (&share, &weight) in shares.iter().zip(&weights) {
            let exact = weight as f64 * 2_039_680.0 / sum as f64;
            assert!((share as f64 - exact).abs() < 1.0, "{share} vs {exact}");
        }
    }
}
