//! Syncing several segment files side by side, from the log's background thread.
//!
//! The filesystem folds concurrent syncs into one journal commit and one device flush, where
//! one after another each pays its own, so a drain that touched several partitions (a turn
//! touches an events and a commands partition) waits about as long as for one. The helper
//! threads stay for the log's life: a drain under `fsync=always` comes thousands of times a
//! second, and starting a thread for each cost more than the sync's own work.

use std::fs::File;
use std::io;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

/// Most helper threads: files beyond them are synced on the calling thread, one after another.
const MAX_HELPERS: usize = 16;

/// The helper threads of one log, started as drains first need them.
#[derive(Debug, Default)]
pub(super) struct Syncers {
    helpers: Vec<Helper>,
}

#[derive(Debug)]
struct Helper {
    /// `None` once dropped: closing the job channel ends the thread's loop.
    files: Option<Sender<Arc<File>>>,
    synced: Receiver<io::Result<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Helper {
    fn start() -> io::Result<Self> {
        let (files, jobs) = mpsc::channel::<Arc<File>>();
        let (done, synced) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("agentlog-sync".into())
            .spawn(move || {
                for file in jobs {
                    if done.send(file.sync_data()).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Self {
            files: Some(files),
            synced,
            thread: Some(thread),
        })
    }

    /// Give the thread `file` to sync; `false` if it is gone.
    fn hand(&self, file: &Arc<File>) -> bool {
        self.files
            .as_ref()
            .is_some_and(|files| files.send(Arc::clone(file)).is_ok())
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        // The thread holds no file between jobs.
        self.files = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Syncers {
    /// `fdatasync` every file, the first on this thread and each other on a helper, all at
    /// once; the first error, after every sync has ended.
    pub(super) fn sync_all(&mut self, files: &[Arc<File>]) -> io::Result<()> {
        let Some((first, rest)) = files.split_first() else {
            return Ok(());
        };
        let mut handed = Vec::with_capacity(rest.len());
        let mut here = Vec::new();
        for (index, file) in rest.iter().enumerate() {
            match self.helper(index) {
                Some(helper) if helper.hand(file) => handed.push(index),
                _ => here.push(file),
            }
        }
        let mut failed = first.sync_data().err();
        for file in here {
            failed = failed.or(file.sync_data().err());
        }
        for index in handed {
            let synced = self.helpers[index]
                .synced
                .recv()
                .unwrap_or_else(|_| Err(io::Error::other("a sync thread stopped")));
            failed = failed.or(synced.err());
        }
        failed.map_or(Ok(()), Err)
    }

    /// Helper number `index`, started if it is the next one; `None` past the most helpers or
    /// when a thread cannot start (its file is then synced on the calling thread).
    fn helper(&mut self, index: usize) -> Option<&Helper> {
        if index >= MAX_HELPERS {
            return None;
        }
        if index == self.helpers.len() {
            self.helpers.push(Helper::start().ok()?);
        }
        self.helpers.get(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &std::path::Path, count: usize) -> Vec<Arc<File>> {
        (0..count)
            .map(|i| {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(true)
                    .write(true)
                    .open(dir.join(format!("{i}.seg")))
                    .expect("a file");
                Arc::new(file)
            })
            .collect()
    }

    #[test]
    fn helpers_start_once_and_serve_every_later_sync() {
        let dir = tempfile::tempdir().expect("a tempdir");
        let mut syncers = Syncers::default();
        syncers.sync_all(&files(dir.path(), 3)).expect("synced");
        assert_eq!(syncers.helpers.len(), 2);
        for _ in 0..5 {
            syncers.sync_all(&files(dir.path(), 2)).expect("synced");
        }
        assert_eq!(
            syncers.helpers.len(),
            2,
            "no helper started for a later drain"
        );
        syncers.sync_all(&[]).expect("nothing to sync");
    }

    #[test]
    fn files_past_the_helpers_are_synced_here() {
        let dir = tempfile::tempdir().expect("a tempdir");
        let mut syncers = Syncers::default();
        syncers
            .sync_all(&files(dir.path(), MAX_HELPERS + 4))
            .expect("synced");
        assert_eq!(syncers.helpers.len(), MAX_HELPERS);
    }

    #[test]
    fn a_failed_sync_is_reported_after_the_others() {
        // A pipe cannot be synced.
        let dir = tempfile::tempdir().expect("a tempdir");
        let (reader, _writer) = std::io::pipe().expect("a pipe");
        let pipe = Arc::new(File::from(std::os::fd::OwnedFd::from(reader)));
        let mut given = files(dir.path(), 2);
        given.push(pipe);
        let mut syncers = Syncers::default();
        assert!(syncers.sync_all(&given).is_err());
        syncers
            .sync_all(&files(dir.path(), 3))
            .expect("the helpers still serve");
    }
}
