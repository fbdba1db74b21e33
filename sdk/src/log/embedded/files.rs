//! Small file-system helpers: safe names and atomic small-file replacement.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// A stream, topic or group name as one path component: ASCII letters, digits, `-` and `_`
/// stay, every other byte becomes `%XX` (so `.`/`..`/`/` can never escape the directory).
pub(crate) fn encode_name(name: &str) -> Result<String> {
    if name.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidParams,
            "names must not be empty",
        ));
    }
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// Replace `path` with `contents` so that a crash leaves either the old or the new file:
/// write a temporary sibling, sync it (if `sync`), rename it over `path`, sync the directory.
pub(crate) fn write_atomic(path: &Path, contents: &[u8], sync: bool) -> Result<()> {
    let dir = path.parent().ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            format!("{} has no parent", path.display()),
        )
    })?;
    let tmp = path.with_extension("tmp");
    let io = |what: &str, e: std::io::Error| {
        Error::new(ErrorKind::Internal, format!("{what} {}", path.display())).with_source(e)
    };
    let mut file = File::create(&tmp).map_err(|e| io("cannot create a temporary file for", e))?;
    file.write_all(contents)
        .map_err(|e| io("cannot write", e))?;
    if sync {
        file.sync_all().map_err(|e| io("cannot sync", e))?;
    }
    fs::rename(&tmp, path).map_err(|e| io("cannot rename into", e))?;
    if sync {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Make a directory's entries (new files, renames) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| {
        Error::new(
            ErrorKind::Internal,
            format!("cannot sync directory {}", dir.display()),
        )
        .with_source(e)
    })
}

/// Wrap an I/O error with what was being done to which path.
pub(crate) fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Internal, format!("{what} {}", path.display())).with_source(e)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_cannot_escape() {
        assert_eq!(encode_name("orders-1_x").unwrap(), "orders-1_x");
        assert_eq!(encode_name("..").unwrap(), "%2E%2E");
        assert_eq!(encode_name("a/b").unwrap(), "a%2Fb");
        assert_eq!(
            encode_name("").unwrap_err().kind(),
            ErrorKind::InvalidParams
        );
    }

    #[test]
    fn atomic_write_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        write_atomic(&path, b"one", true).unwrap();
        write_atomic(&path, b"two", false).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert!(!path.with_extension("tmp").exists());
    }
}
