//! The files the program writes, and what it may do to a path: a regular
//! file is created, cut or replaced; a symbolic link is never followed
//! nor replaced; a pipe, a device or a socket is never removed, renamed
//! over or cut. Paths are looked at without following a link
//! ([`what_is`]), and files are opened once with `O_NOFOLLOW` and checked
//! on the open descriptor ([`open_regular`]), so nothing swapped in
//! between a check and the open is written.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What is at a path, the last component not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Nothing.
    Missing,
    /// A regular file.
    Regular,
    /// A symbolic link (to anything, or to nothing).
    Link,
    /// A pipe, a character device or a socket: written to as it comes.
    Stream,
    /// A directory or a block device.
    Other,
}

impl Target {
    /// How a message names it.
    pub fn describe(self) -> &'static str {
        match self {
            Target::Missing => "missing",
            Target::Regular => "a regular file",
            Target::Link => "a symbolic link",
            Target::Stream => "a pipe, device or socket",
            Target::Other => "a directory or block device",
        }
    }
}

fn kind(m: &Metadata) -> Target {
    let t = m.file_type();
    if t.is_file() {
        Target::Regular
    } else if t.is_symlink() {
        Target::Link
    } else if t.is_fifo() || t.is_char_device() || t.is_socket() {
        Target::Stream
    } else {
        Target::Other
    }
}

/// What is at `path`, a link not followed.
pub fn what_is(path: &Path) -> io::Result<Target> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(kind(&m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Missing),
        Err(e) => Err(e),
    }
}

/// What `path` leads to, links followed (`Missing` for a dangling link).
pub fn what_it_leads_to(path: &Path) -> io::Result<Target> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(kind(&m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Missing),
        Err(e) => Err(e),
    }
}

/// The error of a path that is not a regular file.
pub fn not_regular(path: &Path, what: Target) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "'{}' is {}, not a regular file",
            path.display(),
            what.describe()
        ),
    )
}

/// Opens `path` with `options`, never through a symbolic link
/// (`O_NOFOLLOW`) and without waiting on a pipe (`O_NONBLOCK`, cleared
/// once open), and only if it is a regular file: anything else is closed
/// untouched and an error returned. `options` must not truncate: cut the
/// file with `set_len` once this returns.
pub fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = match options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        // A link (ELOOP), a pipe with no reader (ENXIO): say what it is.
        Err(e) => {
            return Err(match what_is(path) {
                Ok(t @ (Target::Link | Target::Stream | Target::Other)) => not_regular(path, t),
                _ => e,
            });
        }
    };
    let what = kind(&file.metadata()?);
    if what != Target::Regular {
        return Err(not_regular(path, what));
    }
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

/// Creates a new regular file at `path` (never over anything, a link
/// included).
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Removes the regular file at `path` if it is still `file` (the same
/// inode): a path swapped for something else meanwhile is left alone.
pub fn remove_if_same(path: &Path, file: &File) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let ours = file.metadata()?;
    let there = std::fs::symlink_metadata(path)?;
    if ours.dev() == there.dev() && ours.ino() == there.ino() {
        std::fs::remove_file(path)
    } else {
        Err(io::Error::other(format!(
            "'{}' changed while being replaced; left alone",
            path.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn only_regular_files_open_and_nothing_else_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "keep").unwrap();
        let fifo = dir.path().join("p");
        mkfifo(&fifo);
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let dangling = dir.path().join("d");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert_eq!(what_is(&file).unwrap(), Target::Regular);
        assert_eq!(what_is(&fifo).unwrap(), Target::Stream);
        assert_eq!(what_is(&link).unwrap(), Target::Link);
        assert_eq!(what_it_leads_to(&link).unwrap(), Target::Regular);
        assert_eq!(what_is(dir.path()).unwrap(), Target::Other);
        assert_eq!(what_is(&dir.path().join("none")).unwrap(), Target::Missing);
        let open = |p: &Path| open_regular(p, OpenOptions::new().write(true).create(true));
        // A pipe with no reader does not block.
        let e = open(&fifo).unwrap_err();
        assert!(e.to_string().contains("pipe"), "{e}");
        let e = open(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(open(&dangling).is_err());
        assert!(
            !dir.path().join("nowhere").exists(),
            "nothing made through a link"
        );
        assert!(open(&file).is_ok());
        assert_eq!(std::fs::read(&file).unwrap(), b"keep");
        assert!(create_new(&link).is_err());
        assert!(create_new(&dangling).is_err());
        assert!(!dir.path().join("nowhere").exists());
    }
}
