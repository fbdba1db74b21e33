//! [`TaskMap`]: the view's tasks, each in a numbered slot of a slab that grows by fixed chunks,
//! found by id through a table that holds only slot numbers ([`IdTable`]).
//!
//! Why this shape: the indexes name a task by its 4-byte slot instead of a shared string; a
//! task costs its entry and a few bytes of table, with no allocation of its own for a UUID id
//! or context ([`Key`](crate::view::key::Key)); growing never moves the entries (a chunk is added)
//! and never rehashes every task at once under the view's write lock (the table grows by
//! shards).
//!
//! The table keeps, beside each slot, the places of the task's first [`LEAD`] content records
//! (a copy of the entry's first places, kept equal by [`TaskMap::note_place`]), which
//! [`TaskMap::find_ahead`] hands out before it reads the entry.

use std::hash::BuildHasher;

use super::applied::{self, Places};
use super::id_table::IdTable;
use super::{Entry, Slot};
use crate::log::raw::Place;
use crate::view::key::KeyRef;

/// How many of a task's first content places the id table keeps (all that fit its 8-byte hint).
pub(in crate::view) const LEAD: usize = 2;

/// The places of a task's first content records, as the id table keeps them.
pub(in crate::view) type Lead = [Place; LEAD];

/// Entries per slab chunk.
const CHUNK: usize = 1024;

/// Tasks by id ([module docs](self)).
#[derive(Default)]
pub(in crate::view) struct TaskMap {
    ids: IdTable,
    /// Fast, and seeded per process (ids come from clients).
    hasher: foldhash::fast::RandomState,
    chunks: Vec<Vec<Option<Entry>>>,
    /// Slots emptied by a removal, reused first.
    free: Vec<Slot>,
    len: usize,
}

fn entry_in(chunks: &[Vec<Option<Entry>>], slot: Slot) -> Option<&Entry> {
    let slot = slot as usize;
    chunks.get(slot / CHUNK)?.get(slot % CHUNK)?.as_ref()
}

fn entry_in_mut(chunks: &mut [Vec<Option<Entry>>], slot: Slot) -> Option<&mut Entry> {
    let slot = slot as usize;
    chunks
        .get_mut(slot / CHUNK)?
        .get_mut(slot % CHUNK)?
        .as_mut()
}

/// The id table's hint for a task with these places.
fn hint_of(places: &Places) -> u64 {
    u64::from(places[0].raw()) | u64::from(places[1].raw()) << 32
}

fn lead_of(hint: u64) -> Lead {
    [
        Place::from_raw(hint as u32),
        Place::from_raw((hint >> 32) as u32),
    ]
}

impl TaskMap {
    fn hash(&self, key: KeyRef<'_>) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The slot of task `id`, if the map holds it.
    pub(in crate::view) fn find(&self, id: &str) -> Option<Slot> {
        self.find_ahead(id, |_| {})
    }

    /// [`find`](Self::find), giving `ahead` the places of the first records of a task that
    /// may be `id`'s before it reads that task's entry: what a reader of the records starts
    /// loading now, so that the entry's load and theirs overlap.
    pub(in crate::view) fn find_ahead(
        &self,
        id: &str,
        mut ahead: impl FnMut(Lead),
    ) -> Option<Slot> {
        let key = KeyRef::of(id);
        let hash = self.hash(key);
        self.ids.find(hash, |slot, hint| {
            ahead(lead_of(hint));
            entry_in(&self.chunks, slot).is_some_and(|entry| entry.id.as_ref() == key)
        })
    }

    /// Note that the record task `slot` took last is kept at `place` ([`applied::note_place`]),
    /// forgetting the places noted before if `anew` (a new incarnation of the task).
    pub(in crate::view) fn note_place(&mut self, slot: Slot, place: Place, anew: bool) {
        let Some(entry) = entry_in_mut(&mut self.chunks, slot) else {
            return;
        };
        let before = hint_of(&entry.places);
        if anew {
            entry.places = applied::NO_PLACES;
        }
        applied::note_place(&mut entry.places, &entry.records, place);
        let hint = hint_of(&entry.places);
        if hint != before {
            let hash = self.hasher.hash_one(entry.id.as_ref());
            self.ids.set_hint(hash, slot, hint);
        }
    }

    pub(in crate::view) fn get(&self, id: &str) -> Option<&Entry> {
        self.entry(self.find(id)?)
    }

    /// Task `id` with its slot.
    pub(in crate::view) fn get_slot(&self, id: &str) -> Option<(Slot, &Entry)> {
        let slot = self.find(id)?;
        Some((slot, self.entry(slot)?))
    }

    pub(in crate::view) fn entry(&self, slot: Slot) -> Option<&Entry> {
        entry_in(&self.chunks, slot)
    }

    pub(in crate::view) fn entry_mut(&mut self, slot: Slot) -> Option<&mut Entry> {
        entry_in_mut(&mut self.chunks, slot)
    }

    /// Add a task the map does not hold yet (by its id); its slot.
    pub(in crate::view) fn insert(&mut self, entry: Entry) -> Slot {
        let hash = self.hash(entry.id.as_ref());
        let hint = hint_of(&entry.places);
        let slot = match self.free.pop() {
            Some(slot) => {
                if let Some(place) = self
                    .chunks
                    .get_mut(slot as usize / CHUNK)
                    .and_then(|chunk| chunk.get_mut(slot as usize % CHUNK))
                {
                    *place = Some(entry);
                }
                slot
            }
            None => {
                match self.chunks.last_mut() {
                    Some(chunk) if chunk.len() < CHUNK => chunk.push(Some(entry)),
                    _ => {
                        let mut chunk = Vec::with_capacity(CHUNK);
                        chunk.push(Some(entry));
                        self.chunks.push(chunk);
                    }
                }
                self.slot_end() - 1
            }
        };
        self.ids.insert(hash, slot, hint);
        self.len += 1;
        slot
    }

    /// Take the task in `slot` out; its slot is given to a later task.
    pub(in crate::view) fn remove(&mut self, slot: Slot) -> Option<Entry> {
        let entry = self
            .chunks
            .get_mut(slot as usize / CHUNK)?
            .get_mut(slot as usize % CHUNK)?
            .take()?;
        self.ids.remove(self.hash(entry.id.as_ref()), slot);
        self.free.push(slot);
        self.len -= 1;
        Some(entry)
    }

    pub(in crate::view) fn len(&self) -> usize {
        self.len
    }

    /// The slot the next [`insert`](Self::insert) takes.
    pub(in crate::view) fn next_slot(&self) -> Slot {
        self.free.last().copied().unwrap_or(self.slot_end())
    }

    /// One past the highest slot ever used.
    pub(in crate::view) fn slot_end(&self) -> Slot {
        let in_last = self.chunks.last().map_or(0, Vec::len);
        (self.chunks.len().saturating_sub(1) * CHUNK + in_last) as Slot
    }

    /// Room for `additional` more tasks in the tables (the slab grows by chunks anyway).
    pub(in crate::view) fn reserve(&mut self, additional: usize) {
        self.ids.reserve(additional);
    }

    /// Every task with its slot, in slot order.
    pub(in crate::view) fn iter(&self) -> impl Iterator<Item = (Slot, &Entry)> {
        self.chunks.iter().enumerate().flat_map(|(c, chunk)| {
            chunk
                .iter()
                .enumerate()
                .filter_map(move |(i, entry)| Some(((c * CHUNK + i) as Slot, entry.as_ref()?)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::key::Key;

    fn entry(id: &str) -> Entry {
        Entry {
            id: Key::new(id),
            context: Key::new("ctx"),
            owner: 0,
            places: crate::view::tasks::applied::NO_PLACES,
            machine: Default::default(),
            records: Default::default(),
        }
    }

    #[test]
    fn tasks_are_found_by_id_and_slots_are_reused() {
        let mut map = TaskMap::default();
        let ids: Vec<String> = (0..3 * CHUNK)
            .map(|n| match n % 2 {
                0 => uuid::Uuid::new_v4().to_string(),
                _ => format!("task-{n}"),
            })
            .collect();
        let slots: Vec<Slot> = ids.iter().map(|id| map.insert(entry(id))).collect();
        assert_eq!(map.len(), ids.len());
        for (id, slot) in ids.iter().zip(&slots) {
            assert_eq!(map.find(id), Some(*slot));
            assert!(map.get(id).is_some_and(|e| e.id.is(id)));
        }
        assert_eq!(map.find("nobody"), None);
        let gone = map.remove(slots[7]).map(|e| e.id);
        assert_eq!(gone, Some(Key::new(&ids[7])));
        assert_eq!(map.find(&ids[7]), None);
        assert!(map.remove(slots[7]).is_none(), "removed once");
        assert_eq!(
            map.insert(entry("newcomer")),
            slots[7],
            "the free slot is reused"
        );
        assert_eq!(map.find("newcomer"), Some(slots[7]));
        assert_eq!(map.iter().count(), ids.len());
        assert!(
            map.iter()
                .all(|(slot, e)| map.entry(slot).is_some_and(|f| f.id == e.id))
        );
    }

    #[test]
    fn the_table_keeps_a_tasks_first_places_as_its_entry_does() {
        let mut map = TaskMap::default();
        let content = |offset| crate::view::tasks::applied::Applied::new(offset, true);
        let mut first = entry("first");
        first.records.push(content(1));
        first.places[0] = Place::from_raw(11);
        let slot = map.insert(first);
        let other = map.insert(entry("other"));
        let lead = |map: &TaskMap, id: &str| {
            let mut seen = Vec::new();
            map.find_ahead(id, |lead| seen.push(lead))?;
            seen.pop()
        };
        assert_eq!(
            lead(&map, "first"),
            Some([Place::from_raw(11), Place::UNKNOWN])
        );
        assert_eq!(lead(&map, "other"), Some([Place::UNKNOWN; LEAD]));
        assert_eq!(lead(&map, "nobody"), None);
        // A content record noted: the table follows the entry; anew, both start over.
        map.entry_mut(slot)
            .expect("inserted")
            .records
            .push(content(7));
        map.note_place(slot, Place::from_raw(22), false);
        assert_eq!(
            map.get("first").expect("inserted").places[..LEAD],
            [11, 22].map(Place::from_raw)
        );
        assert_eq!(lead(&map, "first"), Some([11, 22].map(Place::from_raw)));
        map.entry_mut(slot).expect("inserted").records = smallvec::smallvec![content(9)];
        map.note_place(slot, Place::from_raw(33), true);
        assert_eq!(
            lead(&map, "first"),
            Some([Place::from_raw(33), Place::UNKNOWN])
        );
        assert_eq!(lead(&map, "other"), Some([Place::UNKNOWN; LEAD]));
        assert!(map.remove(other).is_some());
        assert_eq!(lead(&map, "other"), None);
    }

    #[test]
    fn an_entry_is_dense() {
        // What a finished task costs in the slab; the per-task budget is 256 bytes in all.
        assert!(std::mem::size_of::<Option<Entry>>() <= 152);
    }
}
