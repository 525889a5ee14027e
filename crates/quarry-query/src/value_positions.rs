//! Positions a block does not store: a field whose positions come from its values (FORMAT.md,
//! "Positions from values") keeps a token term's positions only where they are constant, and a
//! phrase or an interval finds the others by analysing the doc's stored value again
//! (`quarry_index::segment::value_tokens`, the indexer's own analysis).
//!
//! Log messages are where this pays: their positions were 12.7 of 83.5 MB on 1M generated
//! events (BENCHMARKS.md), and phrases over logs are rare next to words and fields. A phrase
//! reads the positions of a doc only after the postings agree that every term is in it, so a
//! value is analysed once per candidate doc, whatever the number of terms.

use crate::pattern::Pattern;
use quarry_format::column::{ChunkWalker, ColumnReader};
use quarry_format::{BlockReader, DecodeError, TERMINATED};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// What a query asks the values for.
enum Wanted {
    Token(Vec<u8>),
    /// Every token the pattern matches (an interval rule's pattern).
    Pattern(Arc<Pattern>),
}

/// The positions of the wanted tokens in one doc's value of one field, the doc's value analysed
/// once for all of them. Docs are asked for in increasing order: each column chunk is opened
/// once, and a templated one rebuilds only the values asked for (`ChunkWalker`).
pub struct ValuePositions<'a> {
    /// Each column of the field, with the chunk last opened (its index).
    columns: Vec<(ColumnReader<'a>, Option<(usize, ChunkWalker<'a>)>)>,
    wanted: Vec<Wanted>,
    doc: u32,
    positions: Vec<Vec<u32>>,
    buffer: Vec<u8>,
}

/// One `ValuePositions` shared by the terms of a query over one field in one block.
pub type SharedValuePositions<'a> = Rc<RefCell<ValuePositions<'a>>>;

impl<'a> ValuePositions<'a> {
    /// Over field `ordinal` of `block`, in all of its columns.
    pub fn new(block: &'a BlockReader, ordinal: u16) -> Self {
        let columns = block
            .manifest()
            .fields
            .get(ordinal as usize)
            .map(|field| {
                field
                    .columns
                    .iter()
                    .filter_map(|column| block.column(ordinal, column.ty))
                    .map(|column| (column, None))
                    .collect()
            })
            .unwrap_or_default();
        ValuePositions {
            columns,
            wanted: Vec::new(),
            doc: TERMINATED,
            positions: Vec::new(),
            buffer: Vec::new(),
        }
    }

    pub fn shared(self) -> SharedValuePositions<'a> {
        Rc::new(RefCell::new(self))
    }

    /// Asks for `token`'s positions; returns its index for `positions`.
    pub fn want_token(&mut self, token: &[u8]) -> usize {
        let found = self
            .wanted
            .iter()
            .position(|w| matches!(w, Wanted::Token(t) if t == token));
        found.unwrap_or_else(|| self.push(Wanted::Token(token.to_vec())))
    }

    /// Asks for the positions of every token `pattern` matches; returns their index.
    pub fn want_pattern(&mut self, pattern: Arc<Pattern>) -> usize {
        self.push(Wanted::Pattern(pattern))
    }

    fn push(&mut self, wanted: Wanted) -> usize {
        self.wanted.push(wanted);
        self.positions.push(Vec::new());
        self.doc = TERMINATED;
        self.wanted.len() - 1
    }

    /// The positions of wanted entry `index` in `doc`, ascending, in `out`.
    pub fn positions(
        &mut self,
        doc: u32,
        index: usize,
        out: &mut Vec<u32>,
    ) -> Result<(), DecodeError> {
        if doc != self.doc {
            self.analyse(doc)?;
        }
        out.clear();
        out.extend_from_slice(&self.positions[index]);
        Ok(())
    }

    fn analyse(&mut self, doc: u32) -> Result<(), DecodeError> {
        self.doc = TERMINATED;
        for positions in &mut self.positions {
            positions.clear();
        }
        let mut value = None;
        for (column, open) in &mut self.columns {
            let Some(index) = column.chunk_of(doc)? else {
                continue;
            };
            let walker = match open {
                Some((open_index, walker)) if *open_index == index => walker,
                _ => {
                    let buffer = open
                        .take()
                        .map(|(_, w)| w.into_buffer())
                        .unwrap_or_default();
                    &mut open.insert((index, column.walk_chunk(index, buffer)?)).1
                }
            };
            value = walker.value(doc)?;
            if value.is_some() {
                break;
            }
        }
        let Some(value) = value else {
            return Err(DecodeError::new(
                "a term's positions come from a value the doc does not have",
            ));
        };
        let (wanted, positions) = (&self.wanted, &mut self.positions);
        quarry_index::segment::value_tokens(&value, &mut self.buffer, |position, token| {
            for (want, found) in wanted.iter().zip(positions.iter_mut()) {
                let hit = match want {
                    Wanted::Token(t) => t == token,
                    Wanted::Pattern(p) => std::str::from_utf8(token).is_ok_and(|t| p.matches(t)),
                };
                if hit {
                    found.push(position);
                }
            }
        });
        self.doc = doc;
        Ok(())
    }
}

/// Where a term's positions in the current doc come from.
pub enum PositionSource<'a> {
    /// The block's positions (stored, or the term info's constant one).
    Stored,
    /// The doc's value: entry `index` of a shared `ValuePositions`, one token's (`Token`) or
    /// those of every token a pattern matches (`Pattern`).
    Token(SharedValuePositions<'a>, usize),
    Pattern(SharedValuePositions<'a>, usize),
}

impl PositionSource<'_> {
    /// The positions of the doc `cursor` is on, in `out`. From the values, their count must
    /// be the term frequency the postings give, or the block is corrupt.
    pub fn read(
        &self,
        cursor: &mut quarry_format::PostingsCursor<'_>,
        out: &mut Vec<u32>,
    ) -> Result<(), DecodeError> {
        match self {
            PositionSource::Stored => cursor.positions(out),
            PositionSource::Token(values, index) => {
                values.borrow_mut().positions(cursor.doc(), *index, out)?;
                if out.len() != cursor.term_freq() as usize {
                    return Err(DecodeError::new(
                        "a value's tokens disagree with the term's frequency",
                    ));
                }
                Ok(())
            }
            PositionSource::Pattern(values, index) => {
                values.borrow_mut().positions(cursor.doc(), *index, out)
            }
        }
    }
}
