//! One process per data directory: an exclusive advisory lock on `<dir>/LOCK`.

use std::fs::{File, OpenOptions};
use std::path::Path;

use fs2::FileExt;

use crate::error::{Error, ErrorKind, Result};

/// Holds the directory's lock until dropped (the OS also releases it if the process dies).
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Take the lock of `dir` or fail at once (no waiting) with [`ErrorKind::Config`].
    ///
    /// `flock` locks belong to the open file description, so a second `open` of the same
    /// directory inside this process is refused too.
    pub fn acquire(dir: &Path) -> Result<Self> {
        let path = dir.join("LOCK");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| {
                Error::new(
                    ErrorKind::Config,
                    format!("cannot open lock file {}", path.display()),
                )
                .with_source(e)
            })?;
        match file.try_lock_exclusive() {
            Ok(()) => Ok(Self { _file: file }),
            Err(e) if e.kind() == fs2::lock_contended_error().kind() => Err(Error::new(
                ErrorKind::Config,
                format!(
                    "log directory {} is in use by another process (or another open log in this \
                     one): {} is locked",
                    dir.display(),
                    path.display()
                ),
            )),
            Err(e) => Err(
                Error::new(ErrorKind::Config, format!("cannot lock {}", path.display()))
                    .with_source(e),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_second_lock_fails_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let err = DirLock::acquire(dir.path()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.message().contains("in use by another process"), "{err}");
        drop(first);
        DirLock::acquire(dir.path()).unwrap();
    }
}
