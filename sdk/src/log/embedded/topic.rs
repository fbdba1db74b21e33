//! A topic: its partitions and, in file mode, its directory and metadata file.
//!
//! ```text
//! <dir>/topics/<stream>/<topic>/meta.json     {"stream", "topic", "partitions"}
//! <dir>/topics/<stream>/<topic>/<p>/*.seg      segments of partition p
//! <dir>/topics/<stream>/<topic>/groups/*.json  committed offsets per group
//! ```
//!
//! Directory names are the escaped names ([`encode_name`]); the real names are read from
//! `meta.json`. `meta.json` is written last, atomically, so a topic whose creation was
//! interrupted simply does not exist yet.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::EmbeddedOptions;
use super::files::{encode_name, io_error, sync_dir, write_atomic};
use super::options::FsyncPolicy;
use super::partition::Partition;
use crate::error::{Error, ErrorKind, Result};
use crate::log::TopicRef;

const META: &str = "meta.json";

#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    stream: String,
    topic: String,
    partitions: u32,
}

/// A topic of the embedded log.
#[derive(Debug)]
pub(crate) struct Topic {
    pub name: TopicRef,
    /// The topic's directory; `None` in memory mode.
    pub dir: Option<PathBuf>,
    pub partitions: Vec<Arc<Partition>>,
}

impl Topic {
    /// A new in-memory topic.
    pub fn in_memory(name: TopicRef, partitions: u32) -> Self {
        Self {
            name,
            dir: None,
            partitions: (0..partitions)
                .map(|p| Arc::new(Partition::new(p, None, usize::MAX)))
                .collect(),
        }
    }

    /// Create a topic's directories and metadata under `root` (the log's `topics` dir).
    pub fn create(
        root: &Path,
        name: TopicRef,
        partitions: u32,
        options: &EmbeddedOptions,
    ) -> Result<Self> {
        let sync = options.fsync != FsyncPolicy::Never;
        let stream_dir = root.join(encode_name(&name.stream)?);
        let dir = stream_dir.join(encode_name(&name.topic)?);
        let mut parts = Vec::with_capacity(partitions as usize);
        for p in 0..partitions {
            let part_dir = dir.join(p.to_string());
            fs::create_dir_all(&part_dir).map_err(|e| io_error("cannot create", &part_dir, e))?;
            parts.push(Arc::new(Partition::new(
                p,
                Some(part_dir),
                options.cache_bytes_per_partition,
            )));
        }
        let groups = dir.join("groups");
        fs::create_dir_all(&groups).map_err(|e| io_error("cannot create", &groups, e))?;
        if sync {
            sync_dir(&dir)?;
            sync_dir(&stream_dir)?;
            sync_dir(root)?;
        }
        let meta = Meta {
            stream: name.stream.clone(),
            topic: name.topic.clone(),
            partitions,
        };
        let bytes = serde_json::to_vec(&meta).map_err(|e| {
            Error::new(ErrorKind::Internal, "cannot encode topic metadata").with_source(e)
        })?;
        write_atomic(&dir.join(META), &bytes, sync)?;
        Ok(Self {
            name,
            dir: Some(dir),
            partitions: parts,
        })
    }

    /// Every topic found under `root`, recovered (see [`Partition::recover`]).
    pub fn recover_all(root: &Path, options: &EmbeddedOptions) -> Result<Vec<Self>> {
        Self::open_all(root, |p, dir| Partition::recover(p, dir, options))
    }

    /// Every topic under `root` of a log another process writes, its partitions read-only
    /// and nothing indexed yet (see [`Partition::refresh`]).
    pub fn open_all_read_only(root: &Path) -> Result<Vec<Self>> {
        Self::open_all(root, Partition::read_only)
    }

    /// The topic `name` under `root` of a log another process writes, if it has been
    /// created there since the log was opened (read-only, as [`open_all_read_only`]).
    ///
    /// [`open_all_read_only`]: Self::open_all_read_only
    pub fn open_read_only(root: &Path, name: &TopicRef) -> Result<Option<Self>> {
        let dir = root
            .join(encode_name(&name.stream)?)
            .join(encode_name(&name.topic)?);
        let found = Self::open_dir(dir, &Partition::read_only)?;
        Ok(found.filter(|topic| topic.name == *name))
    }

    fn open_all(
        root: &Path,
        open_partition: impl Fn(u32, PathBuf) -> Result<Partition> + Sync,
    ) -> Result<Vec<Self>> {
        let mut topics = Vec::new();
        for stream in read_dirs(root)? {
            for dir in read_dirs(&stream)? {
                topics.extend(Self::open_dir(dir, &open_partition)?);
            }
        }
        Ok(topics)
    }

    /// The topic in `dir`, or `None` if it has no metadata: it does not exist, or its
    /// creation was interrupted (never acknowledged).
    fn open_dir(
        dir: PathBuf,
        open_partition: &(impl Fn(u32, PathBuf) -> Result<Partition> + Sync),
    ) -> Result<Option<Self>> {
        let meta_path = dir.join(META);
        if !meta_path.exists() {
            return Ok(None);
        }
        let bytes = fs::read(&meta_path).map_err(|e| io_error("cannot read", &meta_path, e))?;
        let meta: Meta = serde_json::from_slice(&bytes).map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                format!(
                    "unreadable topic metadata in {} at byte {}",
                    meta_path.display(),
                    e.column()
                ),
            )
        })?;
        let partitions = open_in_parallel(meta.partitions, |p| {
            open_partition(p, dir.join(p.to_string())).map(Arc::new)
        })?;
        Ok(Some(Self {
            name: TopicRef::new(meta.stream, meta.topic),
            dir: Some(dir),
            partitions,
        }))
    }

    /// Where group `group`'s committed offsets live, in file mode.
    pub fn offsets_path(&self, group: &str) -> Result<Option<PathBuf>> {
        match &self.dir {
            None => Ok(None),
            Some(dir) => Ok(Some(
                dir.join("groups")
                    .join(format!("{}.json", encode_name(group)?)),
            )),
        }
    }
}

/// The subdirectories of `dir` (none if it does not exist).
fn read_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for item in fs::read_dir(dir).map_err(|e| io_error("cannot list", dir, e))? {
        let item = item.map_err(|e| io_error("cannot list", dir, e))?;
        if item.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.push(item.path());
        }
    }
    Ok(out)
}

/// `open(p)` for every partition `p` below `partitions`, on up to one thread per core: a
/// partition's recovery reads and checks every byte of its segments, and partitions share
/// nothing. The results in partition order; the first error if any failed.
fn open_in_parallel<T: Send>(
    partitions: u32,
    open: impl Fn(u32) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(partitions as usize);
    if threads <= 1 {
        return (0..partitions).map(open).collect();
    }
    let next = std::sync::atomic::AtomicU32::new(0);
    let mut opened: Vec<(u32, Result<T>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let p = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if p >= partitions {
                            return mine;
                        }
                        mine.push((p, open(p)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    opened.sort_by_key(|(p, _)| *p);
    opened.into_iter().map(|(_, opened)| opened).collect()
}
