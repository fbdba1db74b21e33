//! How the embedded log trades durability for speed.

use std::time::Duration;

/// When the embedded log forces written batches to stable storage.
///
/// Every policy writes a batch to the segment file (the OS page cache) before acknowledging
/// it, so an acknowledged append always survives the *process* being killed. The policies
/// differ in what survives a crash of the *machine* (power loss, kernel panic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// `fdatasync` before acknowledging: an acknowledged append survives power loss.
    /// Concurrent appends share one sync (group commit), so the cost is paid per drain of
    /// the writer's queue, not per append.
    Always,
    /// Acknowledge once written (the appending task writes the batch itself); a background
    /// thread syncs the written files every interval, so no written batch stays unsynced for
    /// much longer than this and no append waits for a sync. A machine crash loses at most
    /// that window. A failed background sync poisons the log (later appends fail).
    Interval(Duration),
    /// Never sync explicitly (the OS writes back when it likes). For tests and benchmarks.
    Never,
}

impl Default for FsyncPolicy {
    /// `Interval(100 ms)`. Every acknowledged append is already written to the OS, so a
    /// crash or kill of the agentlog process loses nothing acknowledged; a crash of the
    /// machine loses at most the last 100 ms. Syncing before every acknowledgement
    /// (`Always`, or `file:///dir?fsync=always`) costs a disk flush per append round: on the
    /// reference VM it multiplies the blocking SendMessage round trip several times and its
    /// p99 by ~10 (`tests/benches/README.md`). Choose `Always` where power-loss durability of
    /// every acknowledged message matters more than latency.
    fn default() -> Self {
        FsyncPolicy::Interval(std::time::Duration::from_millis(100))
    }
}

/// Options of the embedded log.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EmbeddedOptions {
    /// When written batches are synced to disk. Default: [`FsyncPolicy::Interval`] of 100 ms.
    pub fsync: FsyncPolicy,
    /// A partition rolls to a new segment file once its active one reaches this size.
    /// Default: 64 MiB.
    pub segment_bytes: u64,
    /// Recently appended batches kept in memory per partition so that followers read the
    /// tail without touching the file. Older batches are read from the segment file.
    /// Default: 4 MiB.
    pub cache_bytes_per_partition: usize,
    /// What `open` does on a checksum failure that is not a torn tail: `false` (default)
    /// refuses to open with [`ErrorKind::Corrupt`](crate::ErrorKind::Corrupt); `true`
    /// cuts the partition at the corrupt batch, dropping it and everything after it.
    pub truncate_corrupt: bool,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        Self {
            fsync: FsyncPolicy::default(),
            segment_bytes: 64 * 1024 * 1024,
            cache_bytes_per_partition: 4 * 1024 * 1024,
            truncate_corrupt: false,
        }
    }
}

impl EmbeddedOptions {
    /// These options with another fsync policy.
    pub fn fsync(mut self, fsync: FsyncPolicy) -> Self {
        self.fsync = fsync;
        self
    }

    /// These options with another segment size.
    pub fn segment_bytes(mut self, segment_bytes: u64) -> Self {
        self.segment_bytes = segment_bytes;
        self
    }

    /// These options with another per-partition tail cache size.
    pub fn cache_bytes_per_partition(mut self, bytes: usize) -> Self {
        self.cache_bytes_per_partition = bytes;
        self
    }

    /// These options with another corruption policy (see [`Self::truncate_corrupt`]).
    pub fn truncate_corrupt(mut self, truncate: bool) -> Self {
        self.truncate_corrupt = truncate;
        self
    }
}
