//! The append paths from the calling task: in memory, direct (the appending task writes), or a
//! request to the writer thread (`writer.rs`); the watchers of each partition woken once the
//! batch is acknowledged, but the applier it was made for.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::inner::Inner;
use super::partition::{EndMoved, Partition};
use super::writer::{self, Command};
use crate::error::{Error, ErrorKind, Result};
use crate::log::raw::Place;
use crate::log::{Appended, Applier, closed_error};

/// Append `payloads` to `partition` (number `index` of its topic), made for `by`: the
/// body of `append`, `append_for` and `append_to` once the partition is chosen.
pub(super) async fn append_routed(
    inner: &Inner,
    index: u32,
    partition: Arc<Partition>,
    payloads: Vec<Bytes>,
    by: Option<Applier>,
) -> Result<Appended> {
    let count = u32::try_from(payloads.len())
        .map_err(|_| Error::new(ErrorKind::InvalidParams, "too many records in one batch"))?;
    if count == 0 {
        return Ok(Appended {
            partition: index,
            first_offset: partition.end()?,
            count,
            place: Place::UNKNOWN,
        });
    }
    let (first_offset, place) = match &inner.writer {
        None => {
            let (first, moved) = partition.append_in_memory(payloads, by)?;
            moved.announce();
            (first, Place::UNKNOWN)
        }
        Some(_) if inner.write_config.direct() => {
            let (landed, moved) =
                writer::append_direct(inner.write_config, &inner.shared, &partition, payloads, by)?;
            moved.announce();
            landed
        }
        Some(tx) => {
            let (ack, acked) = oneshot::channel();
            tx.send(Command::Append {
                batches: vec![(partition, payloads, by)],
                ack,
            })
            .map_err(|_| closed_error())?;
            let firsts = acked.await.map_err(|_| closed_error())??;
            firsts.first().copied().ok_or_else(|| {
                Error::new(ErrorKind::Internal, "the writer acknowledged no batch")
            })?
        }
    };
    Ok(Appended {
        partition: index,
        first_offset,
        count,
        place,
    })
}

/// A batch of `append_all` routed to its partition: the partition's index, the batch's
/// record count, the partition, the records, and the applier they are made for.
pub(super) type Routed = (u32, u32, Arc<Partition>, Vec<Bytes>, Option<Applier>);

/// `append_all`'s batches appended
/// one after the other from the calling task (memory, or the direct path). Watchers wake
/// once all landed; should one fail, those that landed wake every watcher, their appliers'
/// too (told of the failure, they apply nothing).
pub(super) fn append_each(inner: &Inner, routed: Vec<Routed>) -> Result<Vec<Appended>> {
    let mut out = Vec::with_capacity(routed.len());
    let mut moved = Vec::with_capacity(routed.len());
    let mut failed = None;
    for (index, count, partition, payloads, by) in routed {
        let landed = if count == 0 {
            partition.end().map(|end| (end, Place::UNKNOWN))
        } else if inner.writer.is_none() {
            partition
                .append_in_memory(payloads, by)
                .map(|(first, end)| {
                    moved.push(end);
                    (first, Place::UNKNOWN)
                })
        } else {
            writer::append_direct(inner.write_config, &inner.shared, &partition, payloads, by).map(
                |(landed, end)| {
                    moved.push(end);
                    landed
                },
            )
        };
        match landed {
            Ok((first_offset, place)) => out.push(Appended {
                partition: index,
                first_offset,
                count,
                place,
            }),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    match failed {
        None => {
            moved.into_iter().for_each(EndMoved::announce);
            Ok(out)
        }
        Some(e) => {
            moved.into_iter().for_each(EndMoved::announce_to_all);
            Err(e)
        }
    }
}
