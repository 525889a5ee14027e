//! How a block becomes a file: written under a temporary name, fsynced, renamed into place,
//! and the directory fsynced, so a block file that exists under its name is complete and
//! survives a crash (the catalog names a block only after this returns). The format crate
//! only encodes bytes (`quarry_format::block::encode_block`).

use quarry_format::block::{encode_block, BlockInput, Manifest};
use quarry_format::FormatError;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// Writes `input` as the block file `path` and returns its manifest.
pub fn write_block_file(path: &Path, input: BlockInput) -> Result<Manifest, FormatError> {
    let io = |source| FormatError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp_path = path.with_extension("tmp");
    let file = File::create(&tmp_path).map_err(io)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let manifest = match encode_block(path, input, &mut out) {
        Ok(manifest) => manifest,
        Err(error) => {
            drop(out);
            let _ = std::fs::remove_file(&tmp_path);
            return Err(error);
        }
    };
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp_path, path).map_err(io)?;
    // The rename is durable only once the directory is: without this, a crash after the
    // catalog commit could leave the catalog naming a block whose file never arrived.
    if let Some(dir) = path.parent() {
        File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
    }
    Ok(manifest)
}

/// Writes an already encoded block (a server's in-memory block) as the file `path`, with the
/// same temporary name, fsync and renames as [`write_block_file`].
pub fn write_block_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp_path = path.with_extension("tmp");
    let result = (|| {
        let mut file = File::create(&tmp_path)?;
        std::io::Write::write_all(&mut file, bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp_path, path)?;
        if let Some(dir) = path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    result
}
