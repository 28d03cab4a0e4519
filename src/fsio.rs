//! Bounded file access at the bottom of the layers: a file is opened for reading only when it
//! is a regular file, never blocking on a FIFO or a device, and read as text only within a
//! byte cap and when it is not binary.

use std::fs;
use std::io::Read as _;
use std::path::Path;

/// What a file is, for [`open_regular_file`].
#[derive(Debug)]
pub enum NotRegular {
    /// It could not be opened or examined.
    Io(std::io::Error),
    /// It is a directory.
    Directory,
    /// It is a FIFO, a socket or a device: reading it could block or never end.
    Special,
}

/// Opens `path` for reading only if it is a regular file, never blocking: its type is checked,
/// then it is opened non-blocking on Unix (a FIFO opened for reading would otherwise wait for
/// a writer) and its type taken again from the open handle, so a file swapped for a FIFO
/// between the check and the open is still refused. Returns the file and its metadata (its
/// size, for a cap checked before reading).
pub fn open_regular_file(path: &Path) -> Result<(fs::File, fs::Metadata), NotRegular> {
    // Typed before opening, so a device is not opened (a tape would rewind, a terminal could
    // become this process's) unless swapped in after the check; then opened non-blocking and
    // typed again on the handle, so such a swap is still refused.
    let meta = fs::metadata(path).map_err(NotRegular::Io)?;
    if meta.is_dir() {
        return Err(NotRegular::Directory);
    }
    if !meta.is_file() {
        return Err(NotRegular::Special);
    }
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(NotRegular::Io)?;
    let meta = file.metadata().map_err(NotRegular::Io)?;
    if meta.is_dir() {
        return Err(NotRegular::Directory);
    }
    if !meta.is_file() {
        return Err(NotRegular::Special);
    }
    Ok((file, meta))
}

/// Files larger than this are not read by any workspace tool.
pub(crate) const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a file could not be read as text (one line, naming the file as shown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("`{0}` is a binary file: skipped")]
    Binary(String),
    #[error("`{path}` is {size} bytes, over the {limit}-byte limit for reading")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("`{path}` could not be read: {reason}")]
    Unreadable { path: String, reason: String },
}

/// Reads a file as text, refusing binary content and files over [`MAX_FILE_BYTES`].
pub(crate) fn read_text_file(path: &Path, shown: &str) -> Result<String, ReadError> {
    let unreadable = |e: std::io::Error| ReadError::Unreadable {
        path: shown.to_string(),
        reason: e.to_string(),
    };
    let (file, meta) = match open_regular_file(path) {
        Ok(opened) => opened,
        Err(NotRegular::Io(e)) => return Err(unreadable(e)),
        Err(NotRegular::Directory) => {
            return Err(ReadError::Unreadable {
                path: shown.to_string(),
                reason: "it is a directory".to_string(),
            })
        }
        Err(NotRegular::Special) => {
            // A FIFO would block the read; a device could be endless.
            return Err(ReadError::Unreadable {
                path: shown.to_string(),
                reason: "it is not a regular file".to_string(),
            });
        }
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            path: shown.to_string(),
            size: meta.len(),
            limit: MAX_FILE_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            path: shown.to_string(),
            size: bytes.len() as u64,
            limit: MAX_FILE_BYTES,
        });
    }
    if looks_binary(&bytes) {
        return Err(ReadError::Binary(shown.to_string()));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A file is binary when its first 8 KiB hold a NUL byte (the rule git and ripgrep use).
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|b| *b == 0)
}
