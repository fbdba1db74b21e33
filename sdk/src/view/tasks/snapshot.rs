//! The view's tasks to and from a checkpoint ([`checkpoint::codec`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use super::Slot;
use super::applied::{self, Applied};
use super::expiry::LiveRecords;
use super::index::{ListIndex, Listed, OwnerId};
use super::{Entry, Tasks};
use crate::view::checkpoint::Checkpoint;
use crate::view::checkpoint::codec::{self, CodecError, TaskRecord};
use crate::view::key::{Key, KeyRef};
use agentlog_wire::fold::TaskMachine;

/// A checkpoint of the tasks being encoded a slice of slots at a time, while records keep
/// applying between slices: so that no request waits for an encoding of every task. It holds
/// the tasks as they stood when it began: a slot the encoder has not reached yet keeps, at its
/// first change since ([`Tasks::preserve`]), what it held then.
pub(in crate::view) struct Snapshotting {
    /// The slots below are encoded (advanced by the encoder, under the read lock).
    upto: AtomicU32,
    /// The slots from here on were never used when it began.
    end: Slot,
    /// What a changed slot held when the checkpoint began: a task, encoded, or nothing.
    saved: HashMap<Slot, Option<Box<[u8]>>>,
}

impl Tasks {
    /// Begin a checkpoint of the tasks as they are now, appending the owners to `out`; where
    /// the task count goes ([`codec::patch_count`]). [`encode_checkpoint_slice`] appends the
    /// tasks, [`end_checkpoint`] ends it.
    ///
    /// [`encode_checkpoint_slice`]: Self::encode_checkpoint_slice
    /// [`end_checkpoint`]: Self::end_checkpoint
    pub(in crate::view) fn begin_checkpoint(&mut self, out: &mut Vec<u8>) -> usize {
        let at = codec::encode_owners(out, self.owners.all());
        self.snapshotting = Some(Snapshotting {
            upto: AtomicU32::new(0),
            end: self.entries.slot_end(),
            saved: HashMap::new(),
        });
        at
    }

    /// Append the tasks of the checkpoint's next `slots` slots to `out`: how many, and whether
    /// those were the last.
    pub(in crate::view) fn encode_checkpoint_slice(
        &self,
        out: &mut Vec<u8>,
        slots: u32,
    ) -> (u64, bool) {
        let Some(snapshot) = &self.snapshotting else {
            return (0, true);
        };
        let from = snapshot.upto.load(Ordering::Relaxed);
        let to = from.saturating_add(slots).min(snapshot.end);
        let mut count = 0;
        for slot in from..to {
            match snapshot.saved.get(&slot) {
                Some(Some(task)) => out.extend_from_slice(task),
                Some(None) => continue,
                None => match self.entries.entry(slot) {
                    Some(entry) => encode_entry(out, entry),
                    None => continue,
                },
            }
            count += 1;
        }
        snapshot.upto.store(to, Ordering::Relaxed);
        (count, to == snapshot.end)
    }

    pub(in crate::view) fn end_checkpoint(&mut self) {
        self.snapshotting = None;
    }

    /// Before `slot` changes (a task applies a record, arrives in it or leaves it): if a
    /// checkpoint being encoded has not reached it, keep what it holds for the checkpoint.
    pub(in crate::view) fn preserve(&mut self, slot: Slot) {
        let Some(snapshot) = &mut self.snapshotting else {
            return;
        };
        if slot < *snapshot.upto.get_mut() || slot >= snapshot.end {
            return;
        }
        let entries = &self.entries;
        snapshot.saved.entry(slot).or_insert_with(|| {
            entries.entry(slot).map(|entry| {
                let mut task = Vec::new();
                encode_entry(&mut task, entry);
                task.into_boxed_slice()
            })
        });
    }

    /// The tasks a checkpoint holds that `keep` takes (a checkpoint of every partition is
    /// restored one partition at a time), with every index rebuilt at once, or why its tasks
    /// do not decode. The list index is built on a second
    /// thread while the tasks are, so that a restart is ready sooner; the later records keep
    /// it up to date.
    pub(in crate::view) fn from_checkpoint(
        checkpoint: Checkpoint<'_>,
        count_live: bool,
        keep: impl Fn(&str) -> bool + Sync,
    ) -> Result<Self, CodecError> {
        let mut tasks = Tasks::new(count_live);
        let owners: Vec<OwnerId> = checkpoint
            .owners
            .iter()
            .map(|c| tasks.owners.intern(&c.principal, &c.tenant))
            .collect();
        // Decoding checks every task's owner.
        let owner_of = |task: &TaskRecord<'_>| owners.get(task.owner as usize).copied();
        let list = &checkpoint.tasks;
        let keep = &keep;
        // A task that does not decode is kept, so that the loop below fails on it.
        let kept = move || {
            list.iter()
                .filter(move |task| task.as_ref().map_or(true, |task| keep(task.id)))
        };
        let (index, in_order) = std::thread::scope(|scope| {
            // Decodes the tasks a second time, beside the main thread: a task that does not
            // decode fails the main thread's loop, and this index goes unused.
            let index = scope.spawn(|| {
                ListIndex::build(kept().zip(0..).filter_map(|(task, slot)| {
                    let task = task.ok()?;
                    let listed = Listed::of(
                        owner_of(&task)?,
                        KeyRef::of(task.id),
                        KeyRef::of(task.context_id),
                        task.machine.state,
                        task.machine.status_timestamp_ms,
                    )?;
                    Some((slot, listed))
                }))
            });
            let mut live = count_live.then(Vec::new);
            tasks.entries.reserve(list.len());
            // A fresh map gives slots 0, 1, 2... in order: the index thread counts on it.
            let mut in_order = true;
            for (task, expected) in kept().zip(0..) {
                let task = task?;
                let owner = owner_of(&task).ok_or(CodecError::Malformed("owner"))?;
                let applied: smallvec::SmallVec<[Applied; 4]> =
                    task.records.into_iter().map(Applied).collect();
                if let Some(offsets) = live.as_mut() {
                    applied::counted(&applied, offsets);
                }
                let slot = tasks.entries.insert(Entry {
                    id: Key::new(task.id),
                    context: Key::new(task.context_id),
                    owner,
                    places: task.places,
                    machine: TaskMachine::from_snapshot(task.machine),
                    records: applied,
                });
                in_order &= slot == expected;
            }
            tasks.live = live.map(LiveRecords::build);
            let index = index
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            Ok::<_, CodecError>((index, in_order))
        })?;
        // Out of order never happens, short of a bug: then the index waits and is built from
        // the tasks once the view has caught up.
        if in_order {
            tasks.indexes_built(index);
        }
        Ok(tasks)
    }
}

/// Append `entry` as a checkpoint stores a task.
fn encode_entry(out: &mut Vec<u8>, entry: &Entry) {
    let words = entry.records.iter().map(|r| r.0);
    codec::encode_task(
        out,
        &entry.id,
        entry.owner,
        &entry.context,
        &entry.machine.snapshot(),
        words,
        &entry.places,
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentlog_wire::{Record, TaskState};

    use super::*;
    use crate::log::raw::Place;
    use crate::retention::now_ms;
    use crate::view::tests::retention::{command, status};

    /// A checkpoint of `tasks` encoded in one go.
    fn whole(tasks: &mut Tasks) -> Vec<u8> {
        let mut out = Vec::new();
        let at = tasks.begin_checkpoint(&mut out);
        let (count, done) = tasks.encode_checkpoint_slice(&mut out, u32::MAX);
        assert!(done);
        tasks.end_checkpoint();
        codec::patch_count(&mut out, at, count);
        out
    }

    #[test]
    fn a_checkpoint_encoded_while_records_apply_holds_the_tasks_as_they_were_when_it_began() {
        let mut tasks = Tasks::new(false);
        let now = now_ms();
        let mut offset = 0;
        let mut apply = |tasks: &mut Tasks, record: Record| {
            tasks.apply(offset, Place::UNKNOWN, &record);
            offset += 1;
        };
        // Slots 0..10; a retention of 1 ms, so finished tasks expire at once.
        for n in 0..10 {
            apply(&mut tasks, command(&format!("t{n}"), "hi", now, 1));
        }
        apply(&mut tasks, status("t0", "s0", now, TaskState::Completed));
        tasks.index_ready();
        let before = whole(&mut tasks);

        let mut sliced = Vec::new();
        let at = tasks.begin_checkpoint(&mut sliced);
        let (mut count, done) = tasks.encode_checkpoint_slice(&mut sliced, 3);
        assert!(!done);
        // Encoded already (slots 0..3) or not: tasks change, finish, leave and arrive.
        apply(&mut tasks, status("t1", "s1", now, TaskState::Working));
        apply(&mut tasks, status("t5", "s5", now, TaskState::Working));
        apply(&mut tasks, status("t7", "s7", now, TaskState::Completed));
        assert_eq!(tasks.expire(now + 10), 2, "t0 and t7 expired");
        for n in 0..3 {
            // Into the freed slots 7 and 0, then a slot the checkpoint never saw.
            apply(&mut tasks, command(&format!("new{n}"), "hi", now, 1));
        }
        loop {
            let (encoded, done) = tasks.encode_checkpoint_slice(&mut sliced, 3);
            count += encoded;
            // Changes between slices too.
            apply(&mut tasks, status("t9", "s9", now, TaskState::Working));
            if done {
                break;
            }
        }
        tasks.end_checkpoint();
        codec::patch_count(&mut sliced, at, count);
        assert_eq!(count, 10);
        assert!(sliced == before, "the sliced checkpoint differs");
        assert!(tasks.snapshotting.is_none());
        assert_ne!(whole(&mut tasks), before, "the tasks did change");
    }

    #[test]
    fn a_checkpoint_keeps_where_the_records_are() {
        let mut tasks = Tasks::new(false);
        let now = now_ms();
        let place = |n: u32| Place::from_raw(n * 100);
        tasks.apply(0, place(1), &command("t0", "hi", now, 0));
        tasks.apply(1, place(2), &command("t1", "hi", now, 0));
        tasks.apply(2, place(3), &status("t0", "s0", now, TaskState::Working));
        // A status with no message has no content to read back: no place kept for it.
        let places = |tasks: &Tasks, id: &str| tasks.entries.get(id).unwrap().places;
        let t0 = places(&tasks, "t0");
        assert_eq!(t0, [place(1), Place::UNKNOWN, Place::UNKNOWN]);
        assert_eq!(places(&tasks, "t1")[0], place(2));
        let mut bytes = Vec::new();
        codec::encode_header(&mut bytes, now, "s", "t", &[codec::Position::default()]);
        bytes.extend(whole(&mut tasks));
        codec::seal(&mut bytes);
        let restored =
            Tasks::from_checkpoint(codec::decode(&bytes).unwrap(), false, |_| true).unwrap();
        assert_eq!(places(&restored, "t0"), t0);
        assert_eq!(places(&restored, "t1"), places(&tasks, "t1"));
    }
}
