//! What the crash test's child writes, shared by the child (`src/bin/crash_child.rs`) and
//! the parent (`tests/log_crash.rs`) so the parent can tell exactly what each record holds.

use bytes::Bytes;

/// Concurrent appending tasks in the child.
pub const TASKS: u64 = 4;

/// The id of the `n`-th batch of `task` in `round`.
pub fn batch_id(round: u64, task: u64, n: u64) -> u64 {
    round * 1_000_000_000 + task * 100_000_000 + n
}

/// `(round, task, n)` of a batch id.
pub fn split_id(id: u64) -> (u64, u64, u64) {
    (id / 1_000_000_000, id / 100_000_000 % 10, id % 100_000_000)
}

/// Records in batch `id` (1 to 8).
pub fn batch_len(id: u64) -> usize {
    1 + (id % 8) as usize
}

/// Record `i` of batch `id`: `"<id>:<i>:"` then a filler of varying length.
pub fn record(id: u64, i: usize) -> Bytes {
    let filler = (id as usize * 31 + i * 7) % 300;
    let mut out = format!("{id}:{i}:").into_bytes();
    out.extend((0..filler).map(|j| b'a' + ((id as usize + j) % 26) as u8));
    Bytes::from(out)
}

/// `(id, i)` named by a record's prefix, if it has one.
pub fn parse(payload: &[u8]) -> Option<(u64, usize)> {
    let text = std::str::from_utf8(payload).ok()?;
    let mut parts = text.splitn(3, ':');
    let id = parts.next()?.parse().ok()?;
    let i = parts.next()?.parse().ok()?;
    Some((id, i))
}
