//! Merge: n-way merge of blocks into fewer, larger ones, keeping `_time` order.
//!
//! Every input block is read in doc order (already `_time` order); a heap picks the oldest
//! head, ties going to the block that was listed first (so equal times keep their relative
//! order). Events are rebuilt from the columns and re-indexed into a fresh in-memory segment,
//! which is written out whenever the memory budget is used: outputs are consecutive,
//! non-overlapping time ranges. The new blocks replace the old ones in one catalog commit.
//! Rebuilding re-runs analysis (CPU), but it keeps one code path for building blocks; merging
//! postings directly is the faster alternative once merge cost matters.

use crate::analysis::Analyzer;
use crate::error::Result;
use crate::pipeline::Progress;
use crate::segment::SegmentBuilder;
use quarry_format::block::DocumentFetcher;
use quarry_format::BlockReader;
use quarry_store::{BlockEntry, Catalog};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Merges the blocks `ids` (at least two) into as few blocks as `memory_budget` allows.
/// Returns the new blocks.
pub fn merge_blocks(
    catalog: &mut Catalog,
    analyzer: Arc<Analyzer>,
    ids: &[u64],
    memory_budget: usize,
    progress: &Progress,
) -> Result<Vec<BlockEntry>> {
    let dir = catalog.dir().to_path_buf();
    let readers = ids
        .iter()
        .map(|&id| BlockReader::open(&Catalog::block_path(&dir, id)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut fetchers: Vec<DocumentFetcher> = readers.iter().map(DocumentFetcher::new).collect();
    let mut times = Vec::with_capacity(readers.len());
    for reader in &readers {
        let column = reader.time_column().ok_or_else(|| {
            reader.corrupt(
                "manifest",
                quarry_format::DecodeError::new("no _time column"),
            )
        })?;
        times.push(column);
    }
    // Heap of (time, block index, doc), smallest first.
    let mut heap = BinaryHeap::new();
    let mut time_chunks: Vec<Option<(usize, quarry_format::column::DecodedChunk)>> =
        vec![None; readers.len()];
    let mut time_of = |block: usize, doc: u32| -> Result<i64> {
        let column = &times[block];
        let corrupt = |e| readers[block].corrupt("_time column", e);
        let index = column
            .chunk_of(doc)
            .map_err(corrupt)?
            .ok_or_else(|| corrupt(quarry_format::DecodeError::new("doc without _time")))?;
        if time_chunks[block].as_ref().map(|(i, _)| *i) != Some(index) {
            time_chunks[block] = Some((index, column.decode_chunk(index).map_err(corrupt)?));
        }
        let (_, chunk) = time_chunks[block].as_ref().expect("set just above");
        let raw = chunk.position(doc).and_then(|p| chunk.raw(p));
        Ok(
            raw.ok_or_else(|| corrupt(quarry_format::DecodeError::new("doc without _time")))?
                as i64,
        )
    };
    for (block, reader) in readers.iter().enumerate() {
        if reader.doc_count() > 0 {
            heap.push(Reverse((time_of(block, 0)?, block, 0u32)));
        }
    }
    let mut outputs = Vec::new();
    let mut segment = SegmentBuilder::new(analyzer.clone());
    while let Some(Reverse((time, block, doc))) = heap.pop() {
        let fields = fetchers[block].fetch(doc)?;
        // Fields come in manifest order, a name's columns together. The builder writes one
        // value per field per doc and can rebuild no more: two would be a damaged block, to
        // stop at rather than merge without one of them.
        if let Some(pair) = fields.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            return Err(readers[block]
                .corrupt(
                    format!("doc {doc} field {}", pair[0].0),
                    quarry_format::DecodeError::new("two values for one field in one doc"),
                )
                .into());
        }
        let event = || {
            fields
                .iter()
                .filter(|(name, _)| name != quarry_format::TIME_FIELD)
                .map(|(name, value)| (name.as_str(), value))
        };
        if !segment.has_room_for(event().map(|(name, _)| name)) {
            // The doc's new field names would pass a block's limit: cut the output here, as at
            // is_full below (a doc from a block always fits a fresh segment).
            let full = std::mem::replace(&mut segment, SegmentBuilder::new(analyzer.clone()));
            outputs.push(write(catalog, full)?);
        }
        segment.add_event(time, event());
        progress.events.fetch_add(1, Ordering::Relaxed);
        if doc + 1 < readers[block].doc_count() {
            heap.push(Reverse((time_of(block, doc + 1)?, block, doc + 1)));
        }
        if segment.memory_bytes() >= memory_budget || segment.is_full() {
            let full = std::mem::replace(&mut segment, SegmentBuilder::new(analyzer.clone()));
            outputs.push(write(catalog, full)?);
        }
    }
    if !segment.is_empty() {
        outputs.push(write(catalog, segment)?);
    }
    drop(fetchers);
    drop(readers);
    catalog.replace_blocks(ids, outputs.clone())?;
    progress
        .blocks
        .fetch_add(outputs.len() as u64, Ordering::Relaxed);
    Ok(outputs)
}

fn write(catalog: &mut Catalog, segment: SegmentBuilder) -> Result<BlockEntry> {
    let id = catalog.allocate_block_id();
    let path = Catalog::block_path(catalog.dir(), id);
    let manifest = segment.write_block(&path)?;
    let bytes = std::fs::metadata(&path)
        .map_err(|source| crate::error::IndexError::Io {
            path: path.clone(),
            source,
        })?
        .len();
    Ok(BlockEntry {
        id,
        docs: u64::from(manifest.doc_count),
        time_min: manifest.time_min,
        time_max: manifest.time_max,
        bytes,
    })
}

/// Picks blocks to merge: all of them when `all`, else, when there are more than
/// `MERGE_FACTOR` blocks, the `MERGE_FACTOR` smallest (a size-tiered policy: small blocks from
/// many flushes are combined, large merged blocks are left alone).
pub fn pick_merge(blocks: &[BlockEntry], all: bool) -> Vec<u64> {
    const MERGE_FACTOR: usize = 10;
    if blocks.len() < 2 {
        return Vec::new();
    }
    if all {
        return blocks.iter().map(|b| b.id).collect();
    }
    if blocks.len() <= MERGE_FACTOR {
        return Vec::new();
    }
    let mut by_size: Vec<&BlockEntry> = blocks.iter().collect();
    by_size.sort_by_key(|b| (b.bytes, b.id));
    let mut ids: Vec<u64> = by_size.iter().take(MERGE_FACTOR).map(|b| b.id).collect();
    ids.sort_unstable();
    ids
}
