//! The writer thread: group commit for every partition of one log.
//!
//! Appends queue a request and await its acknowledgement. The thread takes everything
//! queued (one *drain*), encodes each batch into its partition's buffer, writes each
//! touched partition with one `write`, syncs each touched file once (policy `Always`),
//! publishes the batches to readers and only then acknowledges them all. While it syncs,
//! new requests pile up and share the next sync, so a sync's cost is split across every
//! append that was waiting for it.
//!
//! A write or sync error *poisons* the log: the in-memory view may no longer match the
//! file (and after a failed `fsync` the kernel may have dropped the dirty pages), so every
//! later append fails until the log is reopened; recovery then keeps what is intact.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::files::{io_error, sync_dir};
use super::options::FsyncPolicy;
use super::partition::{Entry, Loc, Partition, Segment, WriterState, lock};
use super::segment::{self, HEADER_LEN};
use crate::error::{Error, ErrorKind, Result};

/// Most requests taken in one drain, so acknowledgements are not held back too long.
const MAX_DRAIN_REQUESTS: usize = 4096;
/// Most payload bytes taken in one drain.
const MAX_DRAIN_BYTES: usize = 64 * 1024 * 1024;

/// A request to the writer thread.
#[derive(Debug)]
pub(crate) enum Command {
    /// Append a batch; the acknowledgement carries the first offset.
    Append {
        partition: Arc<Partition>,
        records: Vec<Bytes>,
        ack: oneshot::Sender<Result<u64>>,
    },
    /// Write and sync everything queued before, acknowledge, and stop.
    Close { ack: oneshot::Sender<Result<()>> },
}

/// Start the writer thread of a file-mode log.
pub(crate) fn spawn(
    rx: Receiver<Command>,
    fsync: FsyncPolicy,
    segment_bytes: u64,
) -> Result<JoinHandle<()>> {
    let mut writer = Writer {
        fsync,
        segment_bytes,
        dirty: Vec::new(),
        dirty_since: None,
        poisoned: None,
    };
    std::thread::Builder::new()
        .name("agentlog-writer".into())
        .spawn(move || writer.run(rx))
        .map_err(|e| {
            Error::new(ErrorKind::Internal, "cannot start the log writer thread").with_source(e)
        })
}

struct Writer {
    fsync: FsyncPolicy,
    segment_bytes: u64,
    /// Files written since their last sync.
    dirty: Vec<Arc<File>>,
    dirty_since: Option<Instant>,
    /// Why the log stopped accepting appends, once it has.
    poisoned: Option<String>,
}

impl Writer {
    fn run(&mut self, rx: Receiver<Command>) {
        loop {
            let first = match (self.fsync, self.dirty_since) {
                (FsyncPolicy::Interval(every), Some(since)) => {
                    let wait = (since + every).saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
                        Ok(command) => command,
                        Err(RecvTimeoutError::Timeout) => {
                            self.sync_dirty();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
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
                        if let Command::Append { records, .. } = &command {
                            bytes += records.iter().map(Bytes::len).sum::<usize>();
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
        self.sync_dirty();
    }

    /// Handle one drain; `true` once a close was handled.
    fn drain(&mut self, commands: Vec<Command>) -> bool {
        let mut acks = Vec::with_capacity(commands.len());
        let mut touched: Vec<Arc<Partition>> = Vec::new();
        let mut close = None;
        for command in commands {
            match command {
                Command::Close { ack } if close.is_none() => close = Some(ack),
                Command::Close { ack } => {
                    let _ = ack.send(Ok(()));
                }
                Command::Append { ack, .. } if close.is_some() => {
                    let _ = ack.send(Err(super::closed_error()));
                }
                Command::Append {
                    partition,
                    records,
                    ack,
                } => {
                    if let Some(why) = &self.poisoned {
                        let _ = ack.send(Err(poisoned_error(why)));
                        continue;
                    }
                    match self.stage(&partition, records, &mut touched) {
                        Ok(first) => acks.push((ack, first)),
                        Err(e) if e.kind() == ErrorKind::InvalidParams => {
                            let _ = ack.send(Err(e));
                        }
                        Err(e) => {
                            self.poison(&e);
                            let _ = ack.send(Err(e));
                        }
                    }
                }
            }
        }
        let outcome = self.commit(&touched);
        for (ack, first) in acks {
            let _ = ack.send(match &outcome {
                Ok(()) => Ok(first),
                Err(why) => Err(poisoned_error(why)),
            });
        }
        match close {
            Some(ack) => {
                let synced = self.sync_all_dirty();
                let result = match &self.poisoned {
                    Some(why) => Err(poisoned_error(why)),
                    None => synced,
                };
                let _ = ack.send(result);
                true
            }
            None => false,
        }
    }

    /// Encode a batch into its partition's buffer and assign its offsets.
    fn stage(
        &mut self,
        partition: &Arc<Partition>,
        records: Vec<Bytes>,
        touched: &mut Vec<Arc<Partition>>,
    ) -> Result<u64> {
        let batch_len = HEADER_LEN + records.iter().map(|r| 4 + r.len()).sum::<usize>();
        let count = u32::try_from(records.len())
            .ok()
            .filter(|_| u32::try_from(batch_len).is_ok())
            .ok_or_else(|| Error::new(ErrorKind::InvalidParams, "batch larger than 4 GiB"))?;
        let mut ws = lock(&partition.writer)?;
        if !ws.touched {
            ws.touched = true;
            touched.push(Arc::clone(partition));
        }
        let needs_roll = match &ws.active {
            None => true,
            Some((_, _, size)) => *size > 0 && size + batch_len as u64 > self.segment_bytes,
        };
        if needs_roll {
            self.roll(partition, &mut ws)?;
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
        ws.pending_entries.push(Entry {
            base: first,
            count,
            loc: Some(Loc {
                segment: segment_index,
                pos: size,
                len: written as u32,
            }),
            records: Some(records.into()),
        });
        Ok(first)
    }

    /// Start a new segment at the partition's next offset. The full one is written and,
    /// unless the policy is `Never`, synced first, so a torn tail can only ever be in the
    /// last segment.
    fn roll(&mut self, partition: &Partition, ws: &mut WriterState) -> Result<()> {
        let dir = partition
            .dir
            .as_ref()
            .ok_or_else(|| Error::new(ErrorKind::Internal, "a memory partition has no segments"))?;
        if let Some((_, file, _)) = ws.active.clone() {
            flush(partition, ws)?;
            if self.fsync != FsyncPolicy::Never {
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
        if self.fsync != FsyncPolicy::Never {
            sync_dir(dir)?;
        }
        let file = Arc::new(file);
        let index = ws.segment_count;
        ws.segment_count += 1;
        ws.pending_segments.push(Segment {
            path,
            file: Arc::clone(&file),
        });
        ws.active = Some((index, file, 0));
        ws.buf_start = 0;
        Ok(())
    }

    /// Write every touched partition, sync as the policy says, then publish.
    /// `Err` carries the poison reason.
    fn commit(&mut self, touched: &[Arc<Partition>]) -> std::result::Result<(), String> {
        let mut staged = Vec::with_capacity(touched.len());
        for partition in touched {
            let written = lock(&partition.writer).and_then(|mut ws| {
                ws.touched = false;
                flush(partition, &mut ws)?;
                let file = ws.active.as_ref().map(|a| Arc::clone(&a.1));
                let segments = std::mem::take(&mut ws.pending_segments);
                let entries = std::mem::take(&mut ws.pending_entries);
                Ok((file, segments, entries, ws.next_offset))
            });
            match written {
                Ok((file, segments, entries, end)) => {
                    if let Some(file) = file
                        && !self.dirty.iter().any(|f| Arc::ptr_eq(f, &file))
                    {
                        self.dirty.push(file);
                    }
                    staged.push((partition, segments, entries, end));
                }
                Err(e) => self.poison(&e),
            }
        }
        if let Some(why) = &self.poisoned {
            return Err(why.clone());
        }
        if self.dirty_since.is_none() && !self.dirty.is_empty() {
            self.dirty_since = Some(Instant::now());
        }
        match self.fsync {
            FsyncPolicy::Always => {
                if let Err(e) = self.sync_all_dirty() {
                    return Err(e.message().to_string());
                }
            }
            FsyncPolicy::Interval(every) => {
                if self
                    .dirty_since
                    .is_some_and(|since| since.elapsed() >= every)
                {
                    self.sync_dirty();
                }
            }
            // Synced only by `close`.
            FsyncPolicy::Never => {}
        }
        for (partition, segments, entries, end) in staged {
            if let Err(e) = partition.publish(segments, entries, end) {
                self.poison(&e);
            }
        }
        match &self.poisoned {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        }
    }

    /// Sync every dirty file; poison on failure.
    fn sync_all_dirty(&mut self) -> Result<()> {
        for file in std::mem::take(&mut self.dirty) {
            if let Err(e) = file.sync_data() {
                let err = Error::new(
                    ErrorKind::Internal,
                    format!("fsync of a segment failed: {e}"),
                );
                self.poison(&err);
                self.dirty_since = None;
                return Err(err);
            }
        }
        self.dirty_since = None;
        Ok(())
    }

    fn sync_dirty(&mut self) {
        // A failure poisons the log; the next append reports it.
        let _ = self.sync_all_dirty();
    }

    fn poison(&mut self, err: &Error) {
        if self.poisoned.is_none() {
            tracing::error!(error = %err, "the embedded log stops accepting appends");
            self.poisoned = Some(err.to_string());
        }
    }
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
