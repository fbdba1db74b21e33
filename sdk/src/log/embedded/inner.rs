//! The state every handle of one embedded log shares, and how it finds topics and
//! partitions, refuses writes when read-only, and stops its writer.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;

use foldhash::HashMap;
use tokio::sync::oneshot;

use super::group::Group;
use super::lock::DirLock;
use super::partition::Partition;
use super::topic::Topic;
use super::writer::{self, Command, Shared};
use super::{EmbeddedOptions, FsyncPolicy, closed_error};
use crate::error::{Error, ErrorKind, Result};
use crate::log::raw::no_partition;
use crate::log::{TopicRef, partition_for_key};

/// What every handle of one embedded log shares.
#[derive(Debug)]
pub(super) struct Inner {
    /// The data directory; `None` in memory mode.
    pub(super) dir: Option<PathBuf>,
    pub(super) options: EmbeddedOptions,
    pub(super) topics: RwLock<HashMap<TopicRef, Arc<Topic>>>,
    pub(super) groups: Mutex<HashMap<(TopicRef, String), Arc<Group>>>,
    pub(super) closed: Arc<AtomicBool>,
    /// The background thread's queue (file mode).
    pub(super) writer: Option<Sender<Command>>,
    /// How batches are written (file mode).
    pub(super) write_config: writer::Config,
    /// Poisoning and dirty files, shared with the background thread.
    pub(super) shared: Arc<Shared>,
    pub(super) thread: Mutex<Option<JoinHandle<()>>>,
    /// Released by `close` or drop.
    pub(super) dir_lock: Mutex<Option<DirLock>>,
    /// Opened with [`EmbeddedLog::open_read_only`]: another process writes the files.
    pub(super) read_only: bool,
}

impl Inner {
    /// A log nothing in this process writes to a file: in memory, or read-only.
    pub(super) fn without_writer(
        dir: Option<PathBuf>,
        topics: HashMap<TopicRef, Arc<Topic>>,
        read_only: bool,
    ) -> Self {
        Self {
            dir,
            options: EmbeddedOptions::default(),
            topics: RwLock::new(topics),
            groups: Mutex::new(HashMap::default()),
            closed: Arc::new(AtomicBool::new(false)),
            writer: None,
            write_config: writer::Config {
                fsync: FsyncPolicy::Never,
                segment_bytes: 0,
            },
            shared: Arc::default(),
            thread: Mutex::new(None),
            dir_lock: Mutex::new(None),
            read_only,
        }
    }

    pub(super) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed_error());
        }
        Ok(())
    }

    /// Refuse a write to a log opened read-only.
    pub(super) fn check_writable(&self) -> Result<()> {
        if self.read_only {
            let dir = self.dir.as_deref().unwrap_or(std::path::Path::new("?"));
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "the log at {} is open read-only here; the process that owns it writes",
                    dir.display()
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn topic(&self, name: &TopicRef) -> Result<Arc<Topic>> {
        self.check_open()?;
        let poisoned = || Error::new(ErrorKind::Internal, "the topic table was poisoned");
        if let Some(topic) = self.topics.read().map_err(|_| poisoned())?.get(name) {
            return Ok(topic.clone());
        }
        // Read-only: the writing process may have created it since the open.
        if let (true, Some(dir)) = (self.read_only, &self.dir)
            && let Some(found) = Topic::open_read_only(&dir.join("topics"), name)?
        {
            let mut topics = self.topics.write().map_err(|_| poisoned())?;
            let topic = topics
                .entry(name.clone())
                .or_insert_with(|| Arc::new(found))
                .clone();
            return Ok(topic);
        }
        Err(Error::new(
            ErrorKind::InvalidParams,
            format!("topic {name} does not exist (call ensure_topic first)"),
        ))
    }

    pub(super) fn partition(&self, name: &TopicRef, partition: u32) -> Result<Arc<Partition>> {
        let topic = self.topic(name)?;
        topic
            .partitions
            .get(partition as usize)
            .cloned()
            .ok_or_else(|| no_partition(name, topic.partitions.len(), partition))
    }

    /// The partition `key` chooses in `topic`, and its index.
    pub(super) fn route(&self, topic: &TopicRef, key: &[u8]) -> Result<(u32, Arc<Partition>)> {
        let found = self.topic(topic)?;
        let index = partition_for_key(key, found.partitions.len() as u32);
        let partition = found
            .partitions
            .get(index as usize)
            .cloned()
            .ok_or_else(|| Error::new(ErrorKind::Internal, "partition_for_key out of range"))?;
        Ok((index, partition))
    }

    /// Stop the writer (after it wrote and synced everything queued) and wait for it.
    /// Direct appends still running finish first; later ones fail.
    pub(super) fn stop_writer(&self) -> Option<oneshot::Receiver<Result<()>>> {
        let tx = self.writer.as_ref()?;
        if let Ok(topics) = self.topics.read() {
            for topic in topics.values() {
                for partition in &topic.partitions {
                    if let Ok(mut ws) = partition.writer.lock() {
                        ws.closed = true;
                    }
                }
            }
        }
        let (ack, done) = oneshot::channel();
        tx.send(Command::Close { ack }).ok()?;
        Some(done)
    }

    pub(super) fn join_writer(&self) {
        if let Ok(mut thread) = self.thread.lock()
            && let Some(thread) = thread.take()
        {
            let _ = thread.join();
        }
    }

    pub(super) fn release(&self) {
        if let Ok(topics) = self.topics.read() {
            for topic in topics.values() {
                for partition in &topic.partitions {
                    partition.close();
                }
            }
        }
        if let Ok(mut dir_lock) = self.dir_lock.lock() {
            dir_lock.take();
        }
    }
}

impl Drop for Inner {
    /// Write and sync what is queued, then release the directory lock. Blocks the dropping
    /// thread for the writer's last drain (one write and one sync at most); call `close`
    /// first to do that without blocking a runtime thread.
    fn drop(&mut self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            // The thread acknowledges the close and exits; joining waits for both.
            drop(self.stop_writer());
            self.join_writer();
            self.release();
        }
    }
}
