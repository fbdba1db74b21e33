//! The newest records of a partition, kept in memory: what this handle appended and what it
//! read, contiguous up to the newest offset it knows. A read of a recent task (a GetTask, a
//! worker loading its turn, the view catching up on its own appends) is then answered
//! without a round trip. A record at an offset never changes, so a kept copy is always the
//! record; only what is past the kept range goes to the server.

use std::collections::VecDeque;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::log::StoredRecord;
use crate::log::raw::Place;

/// The newest records of one partition, at most `budget` bytes of payload.
#[derive(Debug)]
pub(super) struct Tail {
    kept: Mutex<Kept>,
    budget: usize,
}

#[derive(Debug, Default)]
struct Kept {
    /// The offset of `records[0]`.
    start: u64,
    records: VecDeque<Bytes>,
    bytes: usize,
}

impl Kept {
    fn end(&self) -> u64 {
        self.start + self.records.len() as u64
    }
}

impl Tail {
    pub(super) fn new(budget: usize) -> Tail {
        Tail {
            kept: Mutex::new(Kept::default()),
            budget,
        }
    }

    /// Keep `payloads`, the records at `first..`: appended after what is kept, or starting
    /// it anew past a gap; what is kept already is left alone.
    pub(super) fn keep(&self, first: u64, payloads: impl IntoIterator<Item = Bytes>) {
        if self.budget == 0 {
            return;
        }
        let mut kept = self.kept.lock();
        for (offset, payload) in (first..).zip(payloads) {
            let end = kept.end();
            if offset > end || kept.records.is_empty() {
                // A gap (or nothing kept): what is kept no longer reaches the newest.
                kept.records.clear();
                kept.bytes = 0;
                kept.start = offset;
            }
            if offset == kept.end() {
                kept.bytes += payload.len();
                kept.records.push_back(payload);
            }
        }
        while kept.bytes > self.budget {
            let Some(oldest) = kept.records.pop_front() else {
                break;
            };
            kept.bytes -= oldest.len();
            kept.start += 1;
        }
    }

    /// Up to `max` kept records from `from` on, when `from` is kept (else nothing: the
    /// server knows more than this).
    pub(super) fn read(&self, partition: u32, from: u64, max: usize) -> Vec<StoredRecord> {
        let kept = self.kept.lock();
        let Some(skip) = from
            .checked_sub(kept.start)
            .and_then(|s| usize::try_from(s).ok())
        else {
            return Vec::new();
        };
        kept.records
            .iter()
            .skip(skip)
            .take(max)
            .zip(from..)
            .map(|(payload, offset)| StoredRecord {
                partition,
                offset,
                payload: payload.clone(),
                place: Place::UNKNOWN,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads(texts: &[&'static str]) -> Vec<Bytes> {
        texts
            .iter()
            .map(|t| Bytes::from_static(t.as_bytes()))
            .collect()
    }

    fn offsets(records: &[StoredRecord]) -> Vec<u64> {
        records.iter().map(|r| r.offset).collect()
    }

    #[test]
    fn keeps_the_newest_contiguous_records_within_its_budget() {
        let tail = Tail::new(10);
        tail.keep(5, payloads(&["aaa", "bbb"]));
        tail.keep(7, payloads(&["ccc"]));
        assert_eq!(offsets(&tail.read(0, 5, 10)), [5, 6, 7]);
        let at = |offset| tail.read(0, offset, 1).pop().map(|r| r.payload);
        assert_eq!(at(6), Some(Bytes::from_static(b"bbb")));
        assert!(at(8).is_none() && at(4).is_none());
        // Over budget: the oldest go.
        tail.keep(8, payloads(&["ddd"]));
        assert_eq!(offsets(&tail.read(0, 6, 10)), [6, 7, 8]);
        assert!(tail.read(0, 5, 10).is_empty());
        // Kept already: left alone; a gap starts anew.
        tail.keep(7, payloads(&["xxx", "ddd", "eee"]));
        assert_eq!(at(7), Some(Bytes::from_static(b"ccc")));
        assert_eq!(offsets(&tail.read(0, 7, 10)), [7, 8, 9]);
        tail.keep(20, payloads(&["z"]));
        assert_eq!(offsets(&tail.read(0, 20, 10)), [20]);
        assert!(at(9).is_none());
        assert_eq!(offsets(&tail.read(0, 20, 0)), Vec::<u64>::new());
    }

    #[test]
    fn a_zero_budget_keeps_nothing() {
        let tail = Tail::new(0);
        tail.keep(0, payloads(&["a"]));
        assert!(tail.read(0, 0, 1).is_empty());
    }
}
