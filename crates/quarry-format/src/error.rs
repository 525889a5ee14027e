use std::path::PathBuf;

/// Everything that can go wrong reading or writing a block file.
///
/// Corruption variants carry the file path so an operator can find the bad block; a reader never
/// panics on bad bytes, it returns one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    #[error("{path}: i/o error: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a quarry block (bad magic)")]
    BadMagic { path: PathBuf },
    #[error("{path}: unsupported block format version {got} (this build reads {expected})")]
    Version {
        path: PathBuf,
        expected: u32,
        got: u32,
    },
    #[error("{path}: checksum mismatch in {part}: expected {expected:#010x}, got {got:#010x}")]
    ChecksumMismatch {
        path: PathBuf,
        part: String,
        expected: u32,
        got: u32,
    },
    #[error("{path}: corrupt {part}: {reason}")]
    Corrupt {
        path: PathBuf,
        part: String,
        reason: &'static str,
    },
    #[error("{path}: {what} is {got}, above the limit {limit}")]
    LimitExceeded {
        path: PathBuf,
        what: &'static str,
        got: u64,
        limit: u64,
    },
    #[error("block writer: {reason}")]
    InvalidInput { reason: String },
}

impl FormatError {
    /// The block file the error is about (none for a writer given bad input).
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            FormatError::Io { path, .. }
            | FormatError::BadMagic { path }
            | FormatError::Version { path, .. }
            | FormatError::ChecksumMismatch { path, .. }
            | FormatError::Corrupt { path, .. }
            | FormatError::LimitExceeded { path, .. } => Some(path),
            FormatError::InvalidInput { .. } => None,
        }
    }
}

pub type Result<T, E = FormatError> = std::result::Result<T, E>;

/// A decoding failure before the file it came from is known. Decoders return this; the block
/// reader attaches the path and the part being read (`DecodeError::in_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    pub reason: &'static str,
}

impl DecodeError {
    /// The bytes to decode could not be read (a remote block's store failed to answer): not
    /// damage, and reported as an i/o error by `in_file`.
    pub const UNREADABLE: DecodeError =
        DecodeError::new("could not be read from the block's store");

    pub const fn new(reason: &'static str) -> Self {
        DecodeError { reason }
    }

    pub fn in_file(self, path: &std::path::Path, part: impl Into<String>) -> FormatError {
        if self == Self::UNREADABLE {
            return FormatError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other(format!("{} {}", part.into(), self.reason)),
            };
        }
        FormatError::Corrupt {
            path: path.to_path_buf(),
            part: part.into(),
            reason: self.reason,
        }
    }
}

pub type DecodeResult<T> = std::result::Result<T, DecodeError>;
