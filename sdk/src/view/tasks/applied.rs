//! What the view lists of a task's applied records: their offsets, each marked with whether it
//! has content, in one word each — and, for a task that has applied more than [`MAX_LISTED`]
//! (one that streams for hours), only the first ones, a mark saying from where the rest are
//! read from the log, and the last one's offset. So a task's memory in the view is bounded
//! however long it runs: [`MAX_LISTED`] words.

use super::expiry::LiveRecords;
use crate::log::raw::Place;

/// The most applied records the view lists for one task.
pub const MAX_LISTED: usize = 1024;

/// One applied record of a task: its offset in the task's partition, and whether its change
/// [has content](agentlog_wire::fold::Change::has_content) (then a snapshot reads it back).
/// One word: the marks take the offset's top bits, which no log reaches (2^61 records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Applied(pub(in crate::view) u64);

impl Applied {
    const CONTENT: u64 = 1 << 63;
    /// Not a record: the task's applied records from this offset on are not listed.
    const SPILL: u64 = 1 << 62;
    /// After a spill: the offset of the task's last applied record.
    const LAST: u64 = 1 << 61;
    const MARKS: u64 = Self::CONTENT | Self::SPILL | Self::LAST;

    pub(in crate::view) fn new(offset: u64, has_content: bool) -> Self {
        debug_assert_eq!(offset & Self::MARKS, 0, "an offset of 2^61 or more");
        Self(if has_content {
            offset | Self::CONTENT
        } else {
            offset
        })
    }

    /// The record's offset.
    pub fn offset(self) -> u64 {
        self.0 & !Self::MARKS
    }

    /// Whether the record adds to the task's history or artifacts.
    pub fn has_content(self) -> bool {
        self.0 & Self::CONTENT != 0
    }

    fn is_spill(self) -> bool {
        self.0 & Self::SPILL != 0
    }
}

/// From which offset a task's applied records are not listed, and its last one's offset.
pub(in crate::view) fn spilled(records: &[Applied]) -> Option<(u64, u64)> {
    match records {
        [.., spill, last] if spill.is_spill() => Some((spill.offset(), last.offset())),
        _ => None,
    }
}

/// The records that are listed.
pub(in crate::view) fn listed(records: &[Applied]) -> &[Applied] {
    match spilled(records) {
        Some(_) => &records[..records.len() - 2],
        None => records,
    }
}

/// The offset of the task's last applied record.
pub(in crate::view) fn position(records: &[Applied]) -> u64 {
    records.last().map_or(0, |r| r.offset())
}

/// Record an applied record of a task (`records`, whose kept records `live` counts).
pub(in crate::view) fn push(
    records: &mut smallvec::SmallVec<[Applied; 4]>,
    applied: Applied,
    live: Option<&mut LiveRecords>,
) {
    let offset = applied.offset();
    match spilled(records) {
        Some((_, last)) => {
            // Every chunk from the spill to the last record stays counted: add the ones
            // the new last record reaches.
            if let Some(live) = live {
                live.extend(last, offset);
            }
            if let Some(slot) = records.last_mut() {
                *slot = Applied(offset | Applied::LAST);
            }
        }
        None if records.len() + 1 >= MAX_LISTED => {
            if let Some(live) = live {
                live.add(offset);
            }
            records.push(Applied(offset | Applied::SPILL));
            records.push(Applied(offset | Applied::LAST));
        }
        None => {
            if let Some(live) = live {
                live.add(offset);
            }
            records.push(applied);
        }
    }
}

/// Take a task's records out of `live` (it expired, or started again).
pub(in crate::view) fn forget(records: &[Applied], live: &mut LiveRecords) {
    for record in listed(records) {
        live.remove(record.offset());
    }
    if let Some((from, last)) = spilled(records) {
        live.retract(from, last);
    }
}

/// The offsets a task's records keep counted in `live`, one per record (a spilled range
/// gives every chunk it covers): what a restored view counts.
pub(in crate::view) fn counted(records: &[Applied], out: &mut Vec<u64>) {
    out.extend(listed(records).iter().map(|r| r.offset()));
    if let Some((from, last)) = spilled(records) {
        out.extend(LiveRecords::chunk_offsets(from, last));
    }
}

/// How many of a task's content records keep their [`Place`]: a usual finished task's
/// command, artifact and last status message. A `GetTask` reads those at their places (no
/// lookup in the log's index); any later ones are looked up.
pub(in crate::view) const PLACED: usize = 3;

/// The places of a task's first [`PLACED`] content records, in order (4 bytes each, beside
/// the entry's owner, where the padding was).
pub(in crate::view) type Places = [Place; PLACED];

/// No place known.
pub(in crate::view) const NO_PLACES: Places = [Place::UNKNOWN; PLACED];

/// Note `place` for the record `records` ends with (just pushed), if it has content and is
/// among the first [`PLACED`] that do.
pub(in crate::view) fn note_place(places: &mut Places, records: &[Applied], place: Place) {
    let listed = listed(records);
    if !listed.last().is_some_and(|r| r.has_content()) || spilled(records).is_some() {
        return;
    }
    let nth = listed.iter().filter(|r| r.has_content()).count() - 1;
    if let Some(slot) = places.get_mut(nth) {
        *slot = place;
    }
}

/// The places of the listed records with content, as [`content_offsets`] lists them
/// ([`Place::UNKNOWN`] past the first [`PLACED`]).
pub(in crate::view) fn content_places(
    records: &[Applied],
    places: &Places,
) -> smallvec::SmallVec<[Place; 4]> {
    let count = listed(records).iter().filter(|r| r.has_content()).count();
    (0..count)
        .map(|n| places.get(n).copied().unwrap_or(Place::UNKNOWN))
        .collect()
}

/// The offsets of the listed records with content.
pub(in crate::view) fn content_offsets(records: &[Applied]) -> smallvec::SmallVec<[u64; 4]> {
    listed(records)
        .iter()
        .filter(|r| r.has_content())
        .map(|r| r.offset())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_task_lists_a_bounded_prefix_and_its_last_record() {
        let mut records = smallvec::SmallVec::new();
        let mut live = LiveRecords::default();
        for offset in 0..100_000u64 {
            push(
                &mut records,
                Applied::new(offset * 3, offset % 2 == 0),
                Some(&mut live),
            );
        }
        assert_eq!(records.len(), MAX_LISTED + 1);
        assert_eq!(listed(&records).len(), MAX_LISTED - 1);
        let (from, last) = spilled(&records).expect("spilled");
        assert_eq!((from, last), (3 * (MAX_LISTED as u64 - 1), 3 * 99_999));
        assert_eq!(position(&records), last);
        assert!(live.any_in(last..last + 1) && live.any_in(from..from + 1));
        forget(&records, &mut live);
        assert!(
            !live.any_in(0..u64::MAX),
            "every chunk counted is uncounted"
        );
    }
}
