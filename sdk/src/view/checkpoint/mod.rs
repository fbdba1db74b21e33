//! Checkpoints of the task view: a compact snapshot of its tasks at known positions of the
//! events topic, kept on the agent's checkpoint topic (`<agent>.checkpoints`, beside the log:
//! inside the embedded log's directory, or on the Iggy server).
//!
//! A checkpoint is only an accelerator. A view that starts from one replays only the records
//! after its positions, and answers exactly as after a full replay (the machine of every task
//! is restored field by field, see [`MachineSnapshot`]). A checkpoint is used only if its
//! checksum holds, it names this topic and its partition count, no position is past the log's
//! end, and at every position the record before it is the one the checkpoint saw (its length
//! and crc32c: a checkpoint of another log, or of a log that was reset, does not match).
//! Anything else is logged as a warning and the next older checkpoint is tried, then a full
//! replay.
//!
//! A checkpoint is of one partition of the events topic: its tasks, and its position (the
//! header's other positions are 0: nothing of them is in it). It is written by the partition's
//! owner to the checkpoint topic's partition `p mod` its partition count (one per events
//! partition for topics made since; a topic of one partition from before holds them all),
//! and any holder of the partition may read it. A checkpoint written before, of every
//! partition (its manifest names none), serves each partition's restore: its tasks of that
//! partition, at that partition's position.
//!
//! On the topic a checkpoint is a run of chunk records (at most [`CHUNK_BYTES`] each) and then
//! a manifest naming their offsets and its partition, so that two writers interleaving their
//! chunks do no harm and a reader finds the newest complete checkpoint of a partition by its
//! manifest.
//!
//! [`MachineSnapshot`]: agentlog_wire::fold::MachineSnapshot

pub(crate) mod codec;

use bytes::Bytes;

use crate::error::{Error, ErrorKind, Result};
use crate::log::{Log, TopicRef};
pub(crate) use codec::{Checkpoint, Position};

/// The largest chunk record of a checkpoint.
pub(crate) const CHUNK_BYTES: usize = 512 * 1024;

const CHUNK_MAGIC: &[u8] = b"agentlog/checkpoint-chunk\0";
/// A manifest of a checkpoint of every partition (written before checkpoints were per
/// partition): read, never written.
const MANIFEST_MAGIC: &[u8] = b"agentlog/checkpoint-manifest\0";
/// A manifest of one partition's checkpoint: then a u32 partition.
const PARTITION_MANIFEST_MAGIC: &[u8] = b"agentlog/checkpoint-manifest-of\0";

/// A complete checkpoint on the topic: where its manifest and chunks are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// The checkpoint topic's partition it is in.
    pub partition: u32,
    /// The events partition it is of; `None`: every partition.
    pub of: Option<u32>,
    /// The manifest record's offset.
    pub offset: u64,
    /// The chunk records' offsets, in order.
    pub chunks: Vec<u64>,
}

impl Manifest {
    /// The lowest offset the checkpoint occupies.
    pub(crate) fn first_offset(&self) -> u64 {
        self.chunks.iter().copied().min().unwrap_or(self.offset)
    }
}

/// The partition of the checkpoint topic `topic` that keeps events partition `of`'s
/// checkpoints.
pub(crate) async fn home(log: &Log, topic: &TopicRef, of: u32) -> Result<u32> {
    Ok(of % log.partitions(topic).await?.max(1))
}

/// Write `bytes` (an encoded checkpoint of events partition `of`) to `topic`: its chunks, then
/// its manifest.
pub(crate) async fn store(log: &Log, topic: &TopicRef, of: u32, bytes: &[u8]) -> Result<Manifest> {
    let partition = home(log, topic, of).await?;
    let mut chunks = Vec::with_capacity(bytes.len() / CHUNK_BYTES + 1);
    for chunk in bytes.chunks(CHUNK_BYTES) {
        let mut payload = Vec::with_capacity(CHUNK_MAGIC.len() + chunk.len());
        payload.extend_from_slice(CHUNK_MAGIC);
        payload.extend_from_slice(chunk);
        let appended = log
            .append_to(topic, partition, vec![Bytes::from(payload)])
            .await?;
        chunks.push(appended.first_offset);
    }
    let manifest = encode_manifest(Some(of), &chunks);
    let appended = log
        .append_to(topic, partition, vec![Bytes::from(manifest)])
        .await?;
    Ok(Manifest {
        partition,
        of: Some(of),
        offset: appended.first_offset,
        chunks,
    })
}

/// A manifest record naming `chunks`, of partition `of` (`None`: of every partition, as
/// written before checkpoints were per partition).
pub(crate) fn encode_manifest(of: Option<u32>, chunks: &[u64]) -> Vec<u8> {
    let mut manifest = Vec::with_capacity(PARTITION_MANIFEST_MAGIC.len() + 12 + 8 * chunks.len());
    match of {
        Some(of) => {
            manifest.extend_from_slice(PARTITION_MANIFEST_MAGIC);
            manifest.extend_from_slice(&of.to_le_bytes());
        }
        None => manifest.extend_from_slice(MANIFEST_MAGIC),
    }
    manifest.extend_from_slice(&(chunks.len() as u32).to_le_bytes());
    for offset in chunks {
        manifest.extend_from_slice(&offset.to_le_bytes());
    }
    let crc = crc32c::crc32c(&manifest);
    manifest.extend_from_slice(&crc.to_le_bytes());
    manifest
}

/// The newest `want` complete checkpoints on `topic` (which must exist) that hold events
/// partition `of` (its own, or one of every partition), newest first. Reads backwards from the
/// end of its home partition, a window at a time.
pub(crate) async fn manifests(
    log: &Log,
    topic: &TopicRef,
    of: u32,
    want: usize,
) -> Result<Vec<Manifest>> {
    let partition = home(log, topic, of).await?;
    let end = log.end_offset(topic, partition).await?;
    const WINDOW: u64 = 64;
    let mut found = Vec::new();
    let mut upto = end;
    while upto > 0 && found.len() < want {
        let from = upto.saturating_sub(WINDOW);
        let mut window = Vec::new();
        let mut next = from;
        // A read may stop short (and skip deleted offsets): read until the window is done.
        while next < upto {
            let batch = log
                .read(topic, partition, next, (upto - next) as usize)
                .await?;
            let Some(last) = batch.last().map(|r| r.offset) else {
                break;
            };
            window.extend(batch.into_iter().filter(|r| r.offset < upto));
            next = last + 1;
        }
        for record in window.iter().rev() {
            if let Some((whose, chunks)) = parse_manifest(&record.payload)
                && whose.is_none_or(|p| p == of)
            {
                found.push(Manifest {
                    partition,
                    of: whose,
                    offset: record.offset,
                    chunks,
                });
                if found.len() == want {
                    break;
                }
            }
        }
        upto = from;
    }
    Ok(found)
}

/// A manifest record's partition (`None`: every one) and chunk offsets, or `None` if
/// `payload` is not a whole manifest.
fn parse_manifest(payload: &[u8]) -> Option<(Option<u32>, Vec<u64>)> {
    let (of, body) = match payload.strip_prefix(PARTITION_MANIFEST_MAGIC) {
        Some(rest) => (
            Some(u32::from_le_bytes(rest.get(..4)?.try_into().ok()?)),
            rest.get(4..)?,
        ),
        None => (None, payload.strip_prefix(MANIFEST_MAGIC)?),
    };
    let (content, crc) = payload.split_at(payload.len().checked_sub(4)?);
    if crc32c::crc32c(content) != u32::from_le_bytes(crc.try_into().ok()?) {
        return None;
    }
    let count = u32::from_le_bytes(body.get(..4)?.try_into().ok()?) as usize;
    let offsets = body.get(4..4 + 8 * count)?;
    Some((
        of,
        offsets
            .chunks_exact(8)
            .filter_map(|b| b.try_into().ok().map(u64::from_le_bytes))
            .collect(),
    ))
}

/// The bytes of the checkpoint `manifest` names, its chunks joined.
pub(crate) async fn read(log: &Log, topic: &TopicRef, manifest: &Manifest) -> Result<Vec<u8>> {
    let mut sorted = manifest.chunks.clone();
    sorted.sort_unstable();
    let stored = log.read_at(topic, manifest.partition, &sorted).await?;
    let mut by_offset: std::collections::HashMap<u64, Bytes> =
        stored.into_iter().map(|r| (r.offset, r.payload)).collect();
    let total = by_offset.values().map(Bytes::len).sum();
    let mut bytes = Vec::with_capacity(total);
    for offset in &manifest.chunks {
        let payload = by_offset.remove(offset);
        let chunk = payload
            .as_deref()
            .and_then(|payload| payload.strip_prefix(CHUNK_MAGIC))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Corrupt,
                    format!(
                        "{topic}: checkpoint chunk at offset {offset} is missing or is not a chunk"
                    ),
                )
            })?;
        bytes.extend_from_slice(chunk);
    }
    Ok(bytes)
}

/// Check `checkpoint` against the log it claims to be of: `topic`, `partitions`, and the
/// record before the position of partition `of` (what a restore of `of` takes of it). `Err`
/// says why it does not fit.
pub(crate) async fn verify(
    log: &Log,
    topic: &TopicRef,
    partitions: u32,
    of: u32,
    checkpoint: &Checkpoint<'_>,
) -> std::result::Result<(), String> {
    if checkpoint.stream != topic.stream || checkpoint.topic != topic.topic {
        return Err(format!(
            "it is of {}/{}, not of {topic}",
            checkpoint.stream, checkpoint.topic
        ));
    }
    if checkpoint.positions.len() != partitions as usize {
        return Err(format!(
            "it has {} partitions, the topic {partitions}",
            checkpoint.positions.len()
        ));
    }
    let partition = of;
    let Some(position) = checkpoint.positions.get(of as usize) else {
        return Err(format!("it has no partition {of}"));
    };
    let end = log
        .end_offset(topic, of)
        .await
        .map_err(|e| format!("the log's end offset: {}", e.report()))?;
    {
        if position.next > end {
            return Err(format!(
                "partition {partition} ends at {end}, before the checkpoint's position {}",
                position.next
            ));
        }
        let Some(before) = position.next.checked_sub(1) else {
            return Ok(());
        };
        let found = log
            .read_at(topic, partition, &[before])
            .await
            .map_err(|e| format!("reading partition {partition} at {before}: {}", e.report()))?;
        let anchor = found
            .first()
            .filter(|r| r.offset == before)
            .map(|r| Position::anchor_of(&r.payload));
        if anchor != Some(position.anchor) {
            return Err(format!(
                "the record at partition {partition} offset {before} is not the one it saw (another log?)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_newest_complete_checkpoints_are_found_through_interleaved_chunks() {
        let log = crate::log::open("memory://").await.unwrap();
        let topic = TopicRef::new("s", "a.checkpoints");
        log.ensure_topic(&topic, 1).await.unwrap();
        assert_eq!(manifests(&log, &topic, 0, 2).await.unwrap(), Vec::new());
        let first: Vec<u8> = (0..CHUNK_BYTES * 2 + 10).map(|i| i as u8).collect();
        let a = store(&log, &topic, 0, &first).await.unwrap();
        assert_eq!(a.chunks.len(), 3);
        // A chunk of a checkpoint being written when the reader looks: not a manifest.
        let stray = [CHUNK_MAGIC, b"half"].concat();
        log.append_to(&topic, 0, vec![Bytes::from(stray)])
            .await
            .unwrap();
        // Another partition's checkpoint in the same partition of a one-partition topic.
        let other = store(&log, &topic, 1, b"other").await.unwrap();
        let b = store(&log, &topic, 0, b"second").await.unwrap();
        let found = manifests(&log, &topic, 0, 2).await.unwrap();
        assert_eq!(found, vec![b.clone(), a.clone()]);
        assert_eq!(read(&log, &topic, &a).await.unwrap(), first);
        assert_eq!(read(&log, &topic, &b).await.unwrap(), b"second");
        assert_eq!(manifests(&log, &topic, 0, 1).await.unwrap(), vec![b]);
        assert_eq!(manifests(&log, &topic, 1, 2).await.unwrap(), vec![other]);
        // One of every partition, as written before: found for each.
        let whole = log
            .append_to(
                &topic,
                0,
                vec![Bytes::from(encode_manifest(None, &a.chunks))],
            )
            .await
            .unwrap()
            .first_offset;
        for of in [0, 1] {
            let newest = manifests(&log, &topic, of, 1).await.unwrap();
            assert_eq!((newest[0].offset, newest[0].of), (whole, None));
        }
    }

    #[tokio::test]
    async fn each_partition_s_checkpoints_go_to_their_own_partition_of_the_topic() {
        let log = crate::log::open("memory://").await.unwrap();
        let topic = TopicRef::new("s", "a.checkpoints");
        log.ensure_topic(&topic, 4).await.unwrap();
        for of in 0..8u32 {
            let stored = store(&log, &topic, of, &of.to_le_bytes()).await.unwrap();
            assert_eq!(stored.partition, of % 4);
        }
        for of in 0..8u32 {
            let found = manifests(&log, &topic, of, 2).await.unwrap();
            assert_eq!(found.len(), 1, "partition {of}");
            assert_eq!(
                read(&log, &topic, &found[0]).await.unwrap(),
                of.to_le_bytes()
            );
        }
    }

    #[test]
    fn a_damaged_manifest_is_not_one() {
        for of in [None, Some(3)] {
            let manifest = encode_manifest(of, &[7]);
            assert_eq!(parse_manifest(&manifest), Some((of, vec![7])));
            for at in 0..manifest.len() {
                let mut damaged = manifest.clone();
                damaged[at] ^= 1;
                assert_eq!(parse_manifest(&damaged), None, "flip at {at} of {of:?}");
            }
        }
    }
}

#[cfg(test)]
mod proptests;
