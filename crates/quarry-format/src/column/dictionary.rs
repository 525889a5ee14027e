//! A column's zstd dictionary (format version 10): every chunk of the column that has data is
//! compressed with it. The column writer trains it from the column's first chunks
//! (`COLUMN_DICTIONARY_TRAINING_CHUNKS`) and keeps it only where it pays; FORMAT.md,
//! "Columns".

use crate::error::{DecodeError, DecodeResult};
use crate::limits::MAX_COLUMN_DICTIONARY_LEN;
use zstd::zstd_safe::DDict;

/// A column's dictionary, loaded for decompression once, when the block opens.
pub struct ChunkDictionary {
    loaded: DDict<'static>,
}

impl ChunkDictionary {
    /// Loads a dictionary section (its crc already checked).
    pub fn decode(section: &[u8]) -> DecodeResult<ChunkDictionary> {
        if section.len() > MAX_COLUMN_DICTIONARY_LEN {
            return Err(DecodeError::new("chunk dictionary larger than the limit"));
        }
        let loaded =
            DDict::try_create(section).ok_or(DecodeError::new("chunk dictionary does not load"))?;
        Ok(ChunkDictionary { loaded })
    }

    /// The memory the loaded dictionary takes.
    pub fn heap_bytes(&self) -> usize {
        self.loaded.sizeof()
    }

    pub(crate) fn loaded(&self) -> &DDict<'static> {
        &self.loaded
    }
}

impl std::fmt::Debug for ChunkDictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChunkDictionary({} bytes loaded)", self.heap_bytes())
    }
}
