//! Writing batches to segment files, and syncing them.
//!
//! Two paths, chosen by the [`FsyncPolicy`]:
//!
//! - **Direct** (`Interval`, `Never`): the appending task itself encodes the batch, writes it
//!   with one positional `write` under the partition's writer lock, publishes it to readers
//!   and returns; no thread hand-off. The *syncer* (the log's background thread) `fdatasync`s
//!   the files written since its last pass every interval, on its own schedule, so no
//!   append ever waits for a disk flush.
//! - **Group commit** (`Always`): appends queue a request to the writer thread and await its
//!   acknowledgement. The thread takes everything queued (one *drain*), encodes each batch
//!   into its partition's buffer, writes each touched partition with one `write`, syncs each
//!   touched file once (side by side: `syncers.rs`), publishes the batches to readers, then
//!   acknowledges them all, and only then wakes the partitions' watchers (`watch_end`). While
//!   it syncs, new requests pile up and share the next sync, so a sync's cost is split across
//!   every append that was waiting for it.
//!
//! Either way a batch is published (readable) and acknowledged only after its write returned
//! (and, under `Always`, its sync), and its watchers are woken only once it is published.
//! [`LogBackend::append_all`] batches go through one round: one request and one
//! acknowledgement under `Always`, one lock per batch on the direct path.
//!
//! A write or sync error (including one of the syncer) *poisons* the log: the in-memory view
//! may no longer match the file (and after a failed `fsync` the kernel may have dropped the
//! dirty pages), so every later append fails until the log is reopened; recovery then keeps
//! what is intact. `close` writes and syncs everything and reports a poisoning.
//!
//! [`LogBackend::append_all`]: crate::log::raw::LogBackend::append_all

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::files::{io_error, sync_dir};
use super::options::FsyncPolicy;
use super::partition::{EndMoved, Entry, Loc, Partition, Segment, Staged, WriterState, lock};
use super::segment::{self, HEADER_LEN};
use super::syncers::Syncers;
use crate::error::{Error, ErrorKind, Result};
use crate::log::Applier;
use crate::log::raw::Place;

/// Most requests taken in one drain, so acknowledgements are not held back too long.
const MAX_DRAIN_REQUESTS: usize = 4096;
/// Most payload bytes taken in one drain.
const MAX_DRAIN_BYTES: usize = 64 * 1024 * 1024;

/// One batch of a request: its partition, its records, and the applier it is made for.
pub(crate) type Batch = (Arc<Partition>, Vec<Bytes>, Option<Applier>);

/// A request to the writer thread.
#[derive(Debug)]
pub(crate) enum Command {
    /// Append batches, in order, in one round; the acknowledgement carries each batch's
    /// first offset.
    Append {
        batches: Vec<Batch>,
        ack: oneshot::Sender<Result<Vec<(u64, Place)>>>,
    },
    /// Write and sync everything queued or written before, acknowledge, and stop.
    Close { ack: oneshot::Sender<Result<()>> },
}

/// What the appending tasks and the background thread share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Why the log stopped accepting appends, once it has.
    poisoned: OnceLock<String>,
    /// Files written since their last sync.
    dirty: Mutex<Vec<Arc<File>>>,
}

impl Shared {
    /// `Err` once the log is poisoned.
    pub fn check(&self) -> Result<()> {
        match self.poisoned.get() {
            Some(why) => Err(poisoned_error(why)),
            None => Ok(()),
        }
    }

    pub fn poison(&self, err: &Error) {
        if self.poisoned.set(err.report().to_string()).is_ok() {
            tracing::error!(error = %err.report(), "the embedded log stops accepting appends");
        }
    }

    fn mark_dirty(&self, file: &Arc<File>) -> Result<()> {
        let mut dirty = lock(&self.dirty)?;
        if !dirty.iter().any(|f| Arc::ptr_eq(f, file)) {
            dirty.push(Arc::clone(file));
        }
        Ok(())
    }

    /// The result `close` reports after its last sync.
    fn close_result(&self, synced: Result<()>) -> Result<()> {
        self.check().and(synced)
    }
}

/// How batches are laid out and synced.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub fsync: FsyncPolicy,
    pub segment_bytes: u64,
}

impl Config {
    /// Whether appends write directly from the calling task (see the module docs).
    pub fn direct(&self) -> bool {
        self.fsync != FsyncPolicy::Always
    }
}

/// Start the background thread of a file-mode log: the group-commit writer under `Always`,
/// the syncer otherwise.
pub(crate) fn spawn(
    rx: Receiver<Command>,
    config: Config,
    shared: Arc<Shared>,
) -> Result<JoinHandle<()>> {
    let mut writer = Writer {
        config,
        shared,
        syncers: Syncers::default(),
    };
    let name = if config.direct() {
        "agentlog-syncer"
    } else {
        "agentlog-writer"
    };
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || writer.run(rx))
        .map_err(|e| {
            Error::new(ErrorKind::Internal, "cannot start the log writer thread").with_source(e)
        })
}

/// Append one batch from the calling task (direct path), made for `by` if it applies it
/// itself: write it, publish it, and return its first offset and place, and the end moved
/// for the caller to announce. Blocks for one positional `write` (plus, on a segment roll, a
/// sync of the full segment and a file creation).
pub(crate) fn append_direct(
    config: Config,
    shared: &Shared,
    partition: &Partition,
    records: Vec<Bytes>,
    by: Option<Applier>,
) -> Result<((u64, Place), EndMoved)> {
    shared.check()?;
    let mut ws = lock(&partition.writer)?;
    if ws.closed {
        return Err(super::closed_error());
    }
    shared.check()?;
    let first = match stage(config, partition, &mut ws, records) {
        Ok(first) => first,
        Err(e) if e.kind() == ErrorKind::InvalidParams => return Err(e),
        Err(e) => {
            shared.poison(&e);
            return Err(e);
        }
    };
    let published = flush(partition, &mut ws).and_then(|()| {
        if let Some((_, file, _)) = &ws.active {
            shared.mark_dirty(file)?;
        }
        let segments = std::mem::take(&mut ws.pending_segments);
        let entries = std::mem::take(&mut ws.pending_entries);
        partition.publish(segments, entries, ws.next_offset, by)
    });
    match published {
        Ok(moved) => Ok((first, moved)),
        Err(e) => {
            shared.poison(&e);
            Err(e)
        }
    }
}

struct Writer {
    config: Config,
    shared: Arc<Shared>,
    syncers: Syncers,
}

impl Writer {
    fn run(&mut self, rx: Receiver<Command>) {
        loop {
            let first = match self.config.fsync {
                FsyncPolicy::Interval(every) => match rx.recv_timeout(every) {
                    Ok(command) => command,
                    Err(RecvTimeoutError::Timeout) => {
                        // A failure poisons the log; the next append reports it.
                        let _ = self.sync_dirty();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                },
                _ => match rx.recv() {
                    Ok(command) => command,
                    Err(_) => break,
                },
            };
            let mut commands = vec![first];
            let mut bytes = 0usize;
            while commands.len() < MAX_DRAIN_REQUESTS && bytes < MAX_DRAIN_BYTES {
                match rx.try_recv() {
                    Ok(command) => {
                        if let Command::Append { batches, .. } = &command {
                            bytes += batches
                                .iter()
                                .flat_map(|(_, records, _)| records.iter().map(Bytes::len))
                                .sum::<usize>();
                        }
                        commands.push(command);
                    }
                    Err(_) => break,
                }
            }
            if self.drain(commands) {
                return;
            }
        }
        // Every handle is gone: leave nothing unsynced behind.
        let _ = self.sync_dirty();
    }

    /// Handle one drain; `true` once a close was handled.
    fn drain(&mut self, commands: Vec<Command>) -> bool {
        let mut acks = Vec::with_capacity(commands.len());
        let mut touched: Vec<Arc<Partition>> = Vec::new();
        let mut close = None;
        // An appender told its append failed applies none of it: every watcher wakes then.
        let mut any_failed = false;
        for command in commands {
            match command {
                Command::Close { ack } if close.is_none() => close = Some(ack),
                Command::Close { ack } => {
                    let _ = ack.send(Ok(()));
                }
                Command::Append { ack, .. } if close.is_some() => {
                    let _ = ack.send(Err(super::closed_error()));
                }
                Command::Append { batches, ack } => {
                    if let Err(e) = self.shared.check() {
                        let _ = ack.send(Err(e));
                        continue;
                    }
                    let mut firsts = Vec::with_capacity(batches.len());
                    let mut failed = None;
                    for (partition, records, by) in batches {
                        match self.stage(&partition, records, by, &mut touched) {
                            Ok(first) => firsts.push(first),
                            Err(e) => {
                                if e.kind() != ErrorKind::InvalidParams {
                                    self.shared.poison(&e);
                                }
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                    match failed {
                        None => acks.push((ack, firsts)),
                        Some(e) => {
                            any_failed = true;
                            let _ = ack.send(Err(e));
                        }
                    }
                }
            }
        }
        // `commit` fails only by poisoning the log, which `check` reports to every ack.
        let moved = self.commit(&touched);
        let poisoned = self.shared.check().is_err();
        for (ack, firsts) in acks {
            let _ = ack.send(self.shared.check().map(|()| firsts));
        }
        // Watchers (the view's follower, the group's pollers) wake after the appenders: an
        // appender applies its own records to the view as it made them, and a follower woken
        // first would read, decode and parse them back instead.
        for end in moved {
            if any_failed || poisoned {
                end.announce_to_all();
            } else {
                end.announce();
            }
        }
        match close {
            Some(ack) => {
                let synced = self.sync_dirty();
                let _ = ack.send(self.shared.close_result(synced));
                true
            }
            None => false,
        }
    }

    /// Sync every dirty file, side by side; poison on failure. Appends may write to the files
    /// meanwhile: whatever they write after the file was taken off the list is marked dirty
    /// again.
    fn sync_dirty(&mut self) -> Result<()> {
        let files = std::mem::take(&mut *lock(&self.shared.dirty)?);
        self.syncers.sync_all(&files).map_err(|e| {
            let err = Error::new(
                ErrorKind::Internal,
                format!("fsync of a segment failed: {e}"),
            );
            self.shared.poison(&err);
            err
        })
    }

    /// Stage a batch made for `by` and note its partition as touched by this drain (and by
    /// whom, if every batch of the drain to it was made for one applier).
    fn stage(
        &mut self,
        partition: &Arc<Partition>,
        records: Vec<Bytes>,
        by: Option<Applier>,
        touched: &mut Vec<Arc<Partition>>,
    ) -> Result<(u64, Place)> {
        let mut ws = lock(&partition.writer)?;
        if records.is_empty() {
            // An empty batch of `append_all`: it lands where the next record would.
            return Ok((ws.next_offset, Place::UNKNOWN));
        }
        let first = stage(self.config, partition, &mut ws, records)?;
        if !ws.touched {
            ws.touched = true;
            ws.applied_by = by;
            touched.push(Arc::clone(partition));
        } else if ws.applied_by != by {
            ws.applied_by = None;
        }
        Ok(first)
    }

    /// Write every touched partition, sync, then publish; the ends moved, for the caller to
    /// announce. A failure poisons the log (the acknowledgements check it).
    fn commit(&mut self, touched: &[Arc<Partition>]) -> Vec<EndMoved> {
        let mut staged = Vec::with_capacity(touched.len());
        for partition in touched {
            let written = lock(&partition.writer).and_then(|mut ws| {
                ws.touched = false;
                flush(partition, &mut ws)?;
                if let Some((_, file, _)) = &ws.active {
                    self.shared.mark_dirty(file)?;
                }
                let segments = std::mem::take(&mut ws.pending_segments);
                let entries = std::mem::take(&mut ws.pending_entries);
                Ok((segments, entries, ws.next_offset, ws.applied_by.take()))
            });
            match written {
                Ok(written) => staged.push((partition, written)),
                Err(e) => self.shared.poison(&e),
            }
        }
        if self.shared.check().is_err()
            || (self.config.fsync == FsyncPolicy::Always && self.sync_dirty().is_err())
        {
            return Vec::new();
        }
        let mut moved = Vec::with_capacity(staged.len());
        for (partition, (segments, entries, end, by)) in staged {
            match partition.publish(segments, entries, end, by) {
                Ok(end) => moved.push(end),
                Err(e) => self.shared.poison(&e),
            }
        }
        moved
    }
}

/// Encode a batch into its partition's buffer and assign its offsets (rolling to a new
/// segment first if the active one is full); its first offset and its place.
fn stage(
    config: Config,
    partition: &Partition,
    ws: &mut WriterState,
    records: Vec<Bytes>,
) -> Result<(u64, Place)> {
    let batch_len = HEADER_LEN + records.iter().map(|r| 4 + r.len()).sum::<usize>();
    let count = u32::try_from(records.len())
        .ok()
        .filter(|_| u32::try_from(batch_len).is_ok())
        .ok_or_else(|| Error::new(ErrorKind::InvalidParams, "batch larger than 4 GiB"))?;
    let needs_roll = match &ws.active {
        None => true,
        Some((_, _, size)) => *size > 0 && size + batch_len as u64 > config.segment_bytes,
    };
    if needs_roll {
        roll(config, partition, ws)?;
    }
    let first = ws.next_offset;
    let Some((segment_index, _, size)) = ws.active.clone() else {
        return Err(Error::new(
            ErrorKind::Internal,
            "no active segment after a roll",
        ));
    };
    let written = segment::encode_batch(&mut ws.buf, first, &records)?;
    ws.active = ws.active.take().map(|(i, f, s)| (i, f, s + written as u64));
    ws.next_offset += u64::from(count);
    let loc = Loc {
        segment: segment_index,
        pos: size,
        len: written as u32,
    };
    ws.pending_entries.push(Staged {
        entry: Entry::stored(first, loc)?,
        records: records.into(),
    });
    Ok((first, Place::in_segment(segment_index, size)))
}

/// Start a new segment at the partition's next offset. The full one is written and,
/// unless the policy is `Never`, synced first, so a torn tail can only ever be in the
/// last segment.
fn roll(config: Config, partition: &Partition, ws: &mut WriterState) -> Result<()> {
    let dir = partition
        .dir
        .as_ref()
        .ok_or_else(|| Error::new(ErrorKind::Internal, "a memory partition has no segments"))?;
    if let Some((_, file, _)) = ws.active.clone() {
        flush(partition, ws)?;
        if config.fsync != FsyncPolicy::Never {
            file.sync_data()
                .map_err(|e| io_error("cannot sync a segment of", dir, e))?;
        }
    }
    let path = dir.join(segment::file_name(ws.next_offset));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| io_error("cannot create segment", &path, e))?;
    if config.fsync != FsyncPolicy::Never {
        sync_dir(dir)?;
    }
    let file = Arc::new(file);
    let index = ws.segment_count;
    ws.segment_count += 1;
    ws.pending_segments.push(Segment::new(
        path,
        Arc::clone(&file),
        ws.next_offset,
        config.segment_bytes,
        (index, &partition.mapped),
    ));
    ws.active = Some((index, file, 0));
    ws.buf_start = 0;
    Ok(())
}

/// Write a partition's buffered batches to its active segment.
fn flush(partition: &Partition, ws: &mut WriterState) -> Result<()> {
    if ws.buf.is_empty() {
        return Ok(());
    }
    let Some((_, file, _)) = &ws.active else {
        return Err(Error::new(
            ErrorKind::Internal,
            "buffered batches without a segment",
        ));
    };
    file.write_all_at(&ws.buf, ws.buf_start).map_err(|e| {
        let dir = partition.dir.clone().unwrap_or_default();
        io_error("cannot write a segment in", &dir, e)
    })?;
    ws.buf_start += ws.buf.len() as u64;
    ws.buf.clear();
    Ok(())
}

fn poisoned_error(why: &str) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("the embedded log failed to write earlier and must be reopened: {why}"),
    )
}
