//! The embedded log: in-process, durable in a directory (`file:///dir`) or in memory
//! (`memory://`).
//!
//! # On disk
//!
//! ```text
//! <dir>/LOCK                                  exclusive advisory lock: one writing process per dir
//! <dir>/topics/<stream>/<topic>/meta.json     partition count (see `topic`)
//! <dir>/topics/<stream>/<topic>/<p>/<base>.seg  append-only segments (see `segment`), named
//!                                             after their first offset
//! <dir>/topics/<stream>/<topic>/groups/<g>.json committed offsets (see `group`)
//! ```
//!
//! Every batch carries a CRC32C of its header and one of its body.
//!
//! Another process may read the directory beside the writer with
//! [`EmbeddedLog::open_read_only`] (how `agentlog tail` reads a running server's log): it
//! takes no lock, writes and repairs nothing, and follows the writer by reading the files
//! again (see `Partition::refresh`).
//!
//! # Durability and group commit
//!
//! [`FsyncPolicy`] says when written batches are synced; the default is an
//! [`FsyncPolicy::Interval`] of 100 ms (an acknowledged append survives the process being
//! killed, and a machine crash loses at most the unsynced window); [`FsyncPolicy::Always`]
//! makes every acknowledged append survive power loss. Under `Interval` and `Never` the
//! appending task writes its batch itself (one positional `write` under the partition's
//! writer lock) and a background *syncer* thread `fdatasync`s the written files every
//! interval, off the append path. Under `Always` one writer thread takes every queued append
//! at once, writes each touched partition with one `write`, syncs each touched file once and
//! then acknowledges all of them (group commit). `append_all` takes several batches (for
//! several topics) in one round. See `writer`.
//! Batches become readable (and `watch_end` moves) only once acknowledged.
//!
//! # Recovery policy
//!
//! `open` scans every segment:
//! - A **torn tail** (the last batch of a partition's last segment is incomplete, fails its
//!   body checksum while ending exactly at the end of the file, or is zero fill) is what a
//!   crash during a write leaves. A batch is acknowledged only after its write returned (and,
//!   under `Always`, its sync), so a torn one was never acknowledged: `open` cuts it off, logs
//!   a `tracing` warning and carries on.
//! - Anything else (a bad header or body followed by more data, a batch or segment out of
//!   sequence, damage in an older segment) means acknowledged data was changed. `open`
//!   refuses with [`ErrorKind::Corrupt`] naming the file and byte offset, unless
//!   [`EmbeddedOptions::truncate_corrupt`] is set, which cuts the partition there instead.
//! - Reads verify checksums again whenever they go to the file; damage that appears after
//!   `open` is reported as [`ErrorKind::Corrupt`], never returned as data.
//! - A gap between two segment files (the next one starts after the previous one ends) is
//!   what [`LogBackend::delete_segments`] leaves: a hole, read over (a segment starting
//!   before the previous one ends is corruption).
//!
//! # Deleting segments
//!
//! [`LogBackend::segments`] lists a partition's sealed segments: every one but the newest
//! (appended to) and the one holding the newest record (so a partition never loses its last
//! record, and a read before the end always returns something).
//! [`LogBackend::delete_segments`] takes them out of the index (its memory shrinks with it)
//! and unlinks their files; a read that planned before finishes from the unlinked file (see
//! `partition::delete`). Afterwards `read(from)` in a hole returns the records from the next
//! offset that exists, `read_at` leaves deleted offsets out, and end offsets stay. Holes may
//! be anywhere: the first segment may start after 0, and there may be gaps between segments.
//! A read-only open drops from its index the segments whose files the writer deleted and
//! follows the writer over the holes. `memory://` keeps everything and lists no segments.
//!
//! # Limits
//!
//! The batch index lives in memory: 24 bytes per batch (the bridge and the workers append one
//! record per batch, so ~25 MB per million records), with the tail cache's records beside it.
//! File reads and the offsets-file writes of `commit` run on the calling task (reads) or the
//! blocking pool (commits); reads of the cached tail touch no file, older batches are read
//! through a read-only map of their segment (see `mapped`). Under `Interval` and `Never`, appends
//! `pwrite` on the calling task (page cache, microseconds); a segment roll (every
//! `segment_bytes`) also syncs the full segment and creates the next one there.
//!
//! # Scheduling
//!
//! Memory and direct appends, and reads, complete without waiting on anything, so a task
//! looping over them would never give its runtime thread back: each of them first takes a
//! unit of tokio's cooperative budget (`cooperate`), as tokio's own I/O does.

mod append;
mod files;
mod group;
mod inner;
mod lock;
mod mapped;
mod options;
mod partition;
mod segment;
mod syncers;
mod topic;
mod writer;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use foldhash::HashMap;
use tokio::sync::{oneshot, watch};

pub use options::{EmbeddedOptions, FsyncPolicy};

use self::group::{Group, Member};
use self::inner::Inner;
use self::lock::DirLock;
use self::partition::{Partition, lock as lock_mutex};
use self::topic::Topic;
use self::writer::{Command, Shared};
// The submodules name it `super::closed_error`.
use super::closed_error;
use super::raw::{LogBackend, Place, Prefetcher};
use super::{AppendBatch, Appended, Applier, GroupConsumer, SegmentInfo, StoredRecord, TopicRef};
use crate::error::{Error, ErrorKind, Result};

/// The embedded log backend. Cheap to share behind an `Arc` (see [`super::Log`]).
#[derive(Debug)]
pub struct EmbeddedLog {
    inner: Arc<Inner>,
}

/// How often a read-only log looks at a followed partition's files while records arrive...
const POLL_BUSY: Duration = Duration::from_millis(2);
/// ...and at most how long it waits while nothing moves.
const POLL_IDLE: Duration = Duration::from_millis(250);

impl EmbeddedLog {
    /// A log that lives in memory only and vanishes when dropped (`memory://`).
    pub fn in_memory() -> Self {
        Self {
            inner: Arc::new(Inner::without_writer(None, HashMap::default(), false)),
        }
    }

    /// Open (creating if needed) the durable log in `dir` and recover it (see the module
    /// docs for the recovery policy). Fails at once with [`ErrorKind::Config`] if another
    /// process (or another open log of this one) holds the directory.
    pub fn open(dir: PathBuf, options: EmbeddedOptions) -> Result<Self> {
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("cannot create log directory {}", dir.display()),
            )
            .with_source(e)
        })?;
        let dir_lock = DirLock::acquire(&dir)?;
        let root = dir.join("topics");
        let topics = Topic::recover_all(&root, &options)?
            .into_iter()
            .map(|t| (t.name.clone(), Arc::new(t)))
            .collect();
        let (tx, rx) = mpsc::channel();
        let write_config = writer::Config {
            fsync: options.fsync,
            segment_bytes: options.segment_bytes,
        };
        let shared = Arc::new(Shared::default());
        let thread = writer::spawn(rx, write_config, Arc::clone(&shared))?;
        Ok(Self {
            inner: Arc::new(Inner {
                dir: Some(dir),
                options,
                topics: RwLock::new(topics),
                groups: Mutex::new(HashMap::default()),
                closed: Arc::new(AtomicBool::new(false)),
                writer: Some(tx),
                write_config,
                shared,
                thread: Mutex::new(Some(thread)),
                dir_lock: Mutex::new(Some(dir_lock)),
                read_only: false,
            }),
        })
    }

    /// Open the durable log in `dir` to read it beside the process that owns it (an
    /// `agentlog serve`, say; this is how `agentlog tail` reads a live log).
    ///
    /// It takes no lock, writes nothing and repairs nothing. It sees the topics that exist
    /// at `open`, and one created later once asked for it; in them, whole batches only (one
    /// being written shows up once it is whole). It follows the writer by reading the files again: `end_offsets` does, and
    /// `watch_end` starts a poller for its partition (every 2 ms while records arrive,
    /// backing off to 250 ms when nothing moves). Segments are read with `pread`, never
    /// mapped. Appends, `ensure_topic` and `join_group` fail with [`ErrorKind::Config`].
    pub fn open_read_only(dir: PathBuf) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::new(
                ErrorKind::Config,
                format!("no log directory at {}", dir.display()),
            ));
        }
        let topics = Topic::open_all_read_only(&dir.join("topics"))?;
        for topic in &topics {
            for partition in &topic.partitions {
                partition.refresh()?;
            }
        }
        let topics = topics
            .into_iter()
            .map(|t| (t.name.clone(), Arc::new(t)))
            .collect();
        Ok(Self {
            inner: Arc::new(Inner::without_writer(Some(dir), topics, true)),
        })
    }
}

#[async_trait]
impl LogBackend for EmbeddedLog {
    async fn ensure_topic(&self, topic: &TopicRef, partitions: u32) -> Result<()> {
        let inner = &self.inner;
        inner.check_open()?;
        inner.check_writable()?;
        if partitions == 0 {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                "a topic needs at least one partition",
            ));
        }
        let mut topics = inner
            .topics
            .write()
            .map_err(|_| Error::new(ErrorKind::Internal, "the topic table was poisoned"))?;
        if topics.contains_key(topic) {
            return Ok(());
        }
        let created = match &inner.dir {
            None => Topic::in_memory(topic.clone(), partitions),
            Some(dir) => Topic::create(
                &dir.join("topics"),
                topic.clone(),
                partitions,
                &inner.options,
            )?,
        };
        topics.insert(topic.clone(), Arc::new(created));
        Ok(())
    }

    async fn partitions(&self, topic: &TopicRef) -> Result<u32> {
        Ok(self.inner.topic(topic)?.partitions.len() as u32)
    }

    async fn append(&self, topic: &TopicRef, key: &[u8], payloads: Vec<Bytes>) -> Result<Appended> {
        cooperate().await;
        self.inner.check_writable()?;
        let (index, partition) = self.inner.route(topic, key)?;
        append::append_routed(&self.inner, index, partition, payloads, None).await
    }

    async fn append_for(
        &self,
        topic: &TopicRef,
        key: &[u8],
        payloads: Vec<Bytes>,
        applier: Applier,
    ) -> Result<Appended> {
        cooperate().await;
        self.inner.check_writable()?;
        let (index, partition) = self.inner.route(topic, key)?;
        append::append_routed(&self.inner, index, partition, payloads, Some(applier)).await
    }

    async fn append_to(
        &self,
        topic: &TopicRef,
        partition: u32,
        payloads: Vec<Bytes>,
    ) -> Result<Appended> {
        cooperate().await;
        self.inner.check_writable()?;
        let found = self.inner.partition(topic, partition)?;
        append::append_routed(&self.inner, partition, found, payloads, None).await
    }

    /// One round for every batch: written in order by the calling task (direct path), or
    /// handed to the writer thread as one request with one acknowledgement (`Always`).
    async fn append_all(&self, batches: Vec<AppendBatch<'_>>) -> Result<Vec<Appended>> {
        cooperate().await;
        let inner = &self.inner;
        inner.check_writable()?;
        let mut routed = Vec::with_capacity(batches.len());
        for batch in batches {
            let (index, partition) = inner.route(batch.topic, batch.key)?;
            let count = u32::try_from(batch.payloads.len()).map_err(|_| {
                Error::new(ErrorKind::InvalidParams, "too many records in one batch")
            })?;
            routed.push((index, count, partition, batch.payloads, batch.applied_by));
        }
        let tx = match &inner.writer {
            Some(tx) if !inner.write_config.direct() => tx,
            _ => {
                // Memory and direct appends complete on this task: one after the other.
                return append::append_each(inner, routed);
            }
        };
        let mut shape = Vec::with_capacity(routed.len());
        let mut sent = Vec::with_capacity(routed.len());
        for (index, count, partition, payloads, by) in routed {
            shape.push((index, count));
            sent.push((partition, payloads, by));
        }
        if sent.is_empty() {
            return Ok(Vec::new());
        }
        let (ack, acked) = oneshot::channel();
        tx.send(Command::Append { batches: sent, ack })
            .map_err(|_| closed_error())?;
        let firsts = acked.await.map_err(|_| closed_error())??;
        if firsts.len() != shape.len() {
            return Err(Error::new(
                ErrorKind::Internal,
                "the writer acknowledged another number of batches",
            ));
        }
        Ok(shape
            .into_iter()
            .zip(firsts)
            .map(|((partition, count), (first_offset, place))| Appended {
                partition,
                first_offset,
                count,
                place,
            })
            .collect())
    }

    async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>> {
        cooperate().await;
        self.inner.partition(topic, partition)?.read(from, max)
    }

    async fn read_at(
        &self,
        topic: &TopicRef,
        partition: u32,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Vec<StoredRecord>> {
        cooperate().await;
        self.inner
            .partition(topic, partition)?
            .read_at(offsets, places)
    }

    /// `None` in memory mode (no places) and read-only (nothing is mapped).
    fn prefetcher(&self, topic: &TopicRef) -> Option<Prefetcher> {
        if self.inner.read_only {
            return None;
        }
        let found = self.inner.topic(topic).ok()?;
        found.dir.as_ref()?;
        let mapped = found.partitions.iter().map(|p| Arc::clone(&p.mapped));
        Some(Prefetcher::new(mapped.collect()))
    }

    async fn end_offsets(&self, topic: &TopicRef) -> Result<Vec<u64>> {
        let found = self.inner.topic(topic)?;
        if self.inner.read_only {
            for partition in &found.partitions {
                partition.refresh()?;
            }
        }
        found.partitions.iter().map(|p| p.end()).collect()
    }

    async fn end_offset(&self, topic: &TopicRef, partition: u32) -> Result<u64> {
        let found = self.inner.partition(topic, partition)?;
        if self.inner.read_only {
            found.refresh()?;
        }
        found.end()
    }

    /// The sealed segments (see [`LogBackend::segments`]); none in memory mode, which keeps
    /// every record. Read-only, the files are looked at again first.
    async fn segments(&self, topic: &TopicRef, partition: u32) -> Result<Vec<SegmentInfo>> {
        let found = self.inner.partition(topic, partition)?;
        if self.inner.read_only {
            found.refresh()?;
        }
        found.segments()
    }

    /// Deletes sealed segments and their files on the blocking pool; the directory is synced
    /// unless the policy is `Never` (a deletion a machine crash undoes brings records back,
    /// which is harmless, but is not left to chance). Memory mode deletes nothing.
    async fn delete_segments(
        &self,
        topic: &TopicRef,
        partition: u32,
        bases: &[u64],
    ) -> Result<usize> {
        let inner = &self.inner;
        inner.check_writable()?;
        let found = inner.partition(topic, partition)?;
        if inner.dir.is_none() || bases.is_empty() {
            return Ok(0);
        }
        let sync = inner.options.fsync != FsyncPolicy::Never;
        let bases = bases.to_vec();
        tokio::task::spawn_blocking(move || found.delete_segments(&bases, sync))
            .await
            .map_err(|e| {
                Error::new(ErrorKind::Internal, "deleting segments panicked").with_source(e)
            })?
    }

    async fn watch_end(&self, topic: &TopicRef, partition: u32) -> Result<watch::Receiver<u64>> {
        let found = self.inner.partition(topic, partition)?;
        let receiver = found.watch_end()?;
        if found.start_polling() {
            tokio::spawn(poll_files(Arc::downgrade(&found)));
        }
        Ok(receiver)
    }

    async fn watch_end_for(
        &self,
        topic: &TopicRef,
        partition: u32,
        applier: Applier,
    ) -> Result<watch::Receiver<u64>> {
        let found = self.inner.partition(topic, partition)?;
        let receiver = found.watch_end_for(applier)?;
        if found.start_polling() {
            tokio::spawn(poll_files(Arc::downgrade(&found)));
        }
        Ok(receiver)
    }

    async fn join_group(&self, topic: &TopicRef, group: &str) -> Result<Box<dyn GroupConsumer>> {
        self.inner.check_writable()?;
        let found = self.inner.topic(topic)?;
        let shared = {
            let mut groups = lock_mutex(&self.inner.groups)?;
            let key = (topic.clone(), group.to_string());
            match groups.get(&key) {
                Some(shared) => Arc::clone(shared),
                None => {
                    let path = found.offsets_path(group)?;
                    // Committed offsets only decide what is redelivered, so they are synced
                    // only where every acknowledgement is (`Always`); elsewhere a commit costs
                    // a write and a rename, not two disk flushes.
                    let sync = self.inner.options.fsync == FsyncPolicy::Always;
                    let shared = Arc::new(Group::load(Arc::clone(&found), group, path, sync)?);
                    groups.insert(key, Arc::clone(&shared));
                    shared
                }
            }
        };
        Ok(Box::new(Member::join(
            shared,
            Arc::clone(&self.inner.closed),
        )?))
    }

    async fn ready(&self) -> Result<()> {
        let inner = &self.inner;
        inner.check_open()?;
        inner.check_writable()?;
        inner.shared.check()
    }

    async fn close(&self) -> Result<()> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let result = match inner.stop_writer() {
            Some(done) => done.await.unwrap_or(Ok(())),
            None => Ok(()),
        };
        inner.join_writer();
        inner.release();
        result
    }
}

/// Take a unit of the task's cooperative budget, yielding to the runtime once it is spent.
/// An append or read that never suspends would otherwise let a task that loops over them
/// (a writer publishing a burst, a follower catching up) hold its worker thread for
/// milliseconds while requests queue behind it. Taken before the operation, so that a task
/// dropped at the yield did nothing.
async fn cooperate() {
    tokio::task::coop::consume_budget().await;
}

/// Follow a read-only partition's files: read them again every [`POLL_BUSY`] while its end
/// moves, backing off to [`POLL_IDLE`] while it does not. Ends when the log closes.
async fn poll_files(partition: std::sync::Weak<Partition>) {
    let mut pause = POLL_BUSY;
    loop {
        tokio::time::sleep(pause).await;
        let Some(partition) = partition.upgrade() else {
            return;
        };
        if partition.is_closed() {
            return;
        }
        pause = match partition.refresh() {
            Ok(true) => POLL_BUSY,
            Ok(false) => (pause * 2).min(POLL_IDLE),
            Err(error) => {
                tracing::warn!(partition = partition.index, error = %error.report(), "read-only log: retrying");
                POLL_IDLE
            }
        };
    }
}

#[cfg(test)]
mod tests;
