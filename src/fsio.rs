//! Bounded file access at the bottom of the layers: a file is opened for reading only when it
//! is a regular file, never blocking on a FIFO or a device.

use std::fs;
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
