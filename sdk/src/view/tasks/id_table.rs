//! [`IdTable`]: which slot holds the task of an id, found in one cache line.
//!
//! Each entry is a task's slot beside 32 bits of its id's hash and a hint the caller keeps
//! there (16 bytes), in an open-addressed table (linear probing) kept at most half full, so a
//! lookup almost always finds its answer, or the empty entry that says there is none, in the
//! first line it reads. The hint reaches the caller's test before the test reads the task: the
//! view keeps there where the task's first records lie in the log, so that their loads start
//! while the task's entry loads (one wait instead of two; `log/place.rs`).
//!
//! Why not `hashbrown`, which the view used before: its control bytes and its buckets are two
//! arrays, so in a table larger than the CPU's caches a lookup waits for two misses one after
//! the other (the control group names the bucket, then the bucket names the slot). Every
//! `GetTask` of a view of many tasks waited for both.
//!
//! The table is [`SHARDS`] shards, each grown on its own, so that no insert rehashes every task
//! at once under the view's write lock; growing reads only the table (the position comes from
//! the stored hash bits), never the tasks.

use super::Slot;

/// Shards; a power of two.
const SHARDS: usize = 64;

/// Entries per cache line.
const PER_LINE: usize = 4;

/// An entry's key holding no slot. A slot of `u32::MAX` cannot be stored (it would take a slab
/// of 4 billion tasks).
const EMPTY: u64 = u64::MAX;

/// Slots by id hash ([module docs](self)). The caller hashes ids and says which slot holds
/// which id; the table compares the stored hash bits first and asks only on a match.
pub(in crate::view) struct IdTable {
    shards: Box<[Shard]>,
}

/// One shard: a power-of-two number of entries, at most half of them used.
#[derive(Default)]
struct Shard {
    lines: Vec<Line>,
    len: usize,
}

/// One cache line of entries, aligned so that a probe starting in it reads only it.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Line([Entry; PER_LINE]);

/// A slot under its hash bits (`key`, see [`pack`]), and the caller's hint.
#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    hint: u64,
}

impl Entry {
    const EMPTY: Self = Self {
        key: EMPTY,
        hint: 0,
    };
}

fn shard_of(hash: u64) -> usize {
    // The entries keep the hash's low 32 bits (and place by them); the shard, bits above.
    (hash >> 48) as usize & (SHARDS - 1)
}

fn pack(hash: u32, slot: Slot) -> u64 {
    debug_assert_ne!(slot, Slot::MAX, "the empty entry's slot");
    (u64::from(hash) << 32) | u64::from(slot)
}

fn hash_of(entry: u64) -> u32 {
    (entry >> 32) as u32
}

fn slot_of(entry: u64) -> Slot {
    entry as Slot
}

impl Default for IdTable {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        }
    }
}

impl IdTable {
    /// The slot stored under `hash` that `is` accepts, given each candidate slot with its hint
    /// (the caller compares the slot's id).
    pub(in crate::view) fn find(
        &self,
        hash: u64,
        is: impl FnMut(Slot, u64) -> bool,
    ) -> Option<Slot> {
        self.shards[shard_of(hash)].find(hash as u32, is)
    }

    /// Store `slot` and its `hint` under `hash`; the caller knows no slot of the same id is
    /// stored.
    pub(in crate::view) fn insert(&mut self, hash: u64, slot: Slot, hint: u64) {
        self.shards[shard_of(hash)].insert(hash as u32, slot, hint);
    }

    /// Replace the hint of `slot`, stored under `hash`.
    pub(in crate::view) fn set_hint(&mut self, hash: u64, slot: Slot, hint: u64) {
        let shard = &mut self.shards[shard_of(hash)];
        if let Some(i) = shard.position(hash as u32, slot) {
            shard.lines[i / PER_LINE].0[i % PER_LINE].hint = hint;
        }
    }

    /// Forget `slot`, stored under `hash`; whether it was stored.
    pub(in crate::view) fn remove(&mut self, hash: u64, slot: Slot) -> bool {
        self.shards[shard_of(hash)].remove(hash as u32, slot)
    }

    /// Room for `additional` more slots without growing.
    pub(in crate::view) fn reserve(&mut self, additional: usize) {
        for shard in self.shards.iter_mut() {
            shard.reserve(additional / SHARDS + 1);
        }
    }
}

impl Shard {
    fn capacity(&self) -> usize {
        self.lines.len() * PER_LINE
    }

    fn get(&self, i: usize) -> Entry {
        self.lines[i / PER_LINE].0[i % PER_LINE]
    }

    fn set(&mut self, i: usize, entry: Entry) {
        self.lines[i / PER_LINE].0[i % PER_LINE] = entry;
    }

    /// Where `hash` would be placed, and the mask that wraps a probe; `None` while empty.
    fn home(&self, hash: u32) -> Option<(usize, usize)> {
        let mask = self.capacity().checked_sub(1)?;
        Some((hash as usize & mask, mask))
    }

    fn find(&self, hash: u32, mut is: impl FnMut(Slot, u64) -> bool) -> Option<Slot> {
        let (mut i, mask) = self.home(hash)?;
        // Ends: the table is never more than half full, so an empty entry follows.
        loop {
            let Entry { key, hint } = self.get(i);
            if key == EMPTY {
                return None;
            }
            if hash_of(key) == hash && is(slot_of(key), hint) {
                return Some(slot_of(key));
            }
            i = (i + 1) & mask;
        }
    }

    /// Where `slot` is stored under `hash`.
    fn position(&self, hash: u32, slot: Slot) -> Option<usize> {
        let wanted = pack(hash, slot);
        let (mut i, mask) = self.home(hash)?;
        loop {
            match self.get(i).key {
                EMPTY => return None,
                key if key == wanted => return Some(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn insert(&mut self, hash: u32, slot: Slot, hint: u64) {
        self.reserve(1);
        self.place(Entry {
            key: pack(hash, slot),
            hint,
        });
        self.len += 1;
    }

    /// Put `entry` in the first empty entry from its home on (there is one: see `find`).
    fn place(&mut self, entry: Entry) {
        let Some((mut i, mask)) = self.home(hash_of(entry.key)) else {
            return;
        };
        while self.get(i).key != EMPTY {
            i = (i + 1) & mask;
        }
        self.set(i, entry);
    }

    fn remove(&mut self, hash: u32, slot: Slot) -> bool {
        let Some(mut i) = self.position(hash, slot) else {
            return false;
        };
        let mask = self.capacity() - 1;
        // Backward-shift deletion: move later entries of the probe run into the hole when
        // their home lies at or before it, so no probe ever stops early and no tombstone stays.
        let mut hole = i;
        loop {
            i = (i + 1) & mask;
            let entry = self.get(i);
            if entry.key == EMPTY {
                break;
            }
            let home = hash_of(entry.key) as usize & mask;
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
                self.set(hole, entry);
                hole = i;
            }
        }
        self.set(hole, Entry::EMPTY);
        self.len -= 1;
        true
    }

    /// Grow (doubling) until `additional` more entries keep the table at most half full.
    fn reserve(&mut self, additional: usize) {
        let needed = (self.len + additional).saturating_mul(2);
        if needed <= self.capacity() {
            return;
        }
        let capacity = needed.next_power_of_two().max(PER_LINE);
        let old = std::mem::replace(
            &mut self.lines,
            vec![Line([Entry::EMPTY; PER_LINE]); capacity / PER_LINE],
        );
        for entry in old.iter().flat_map(|line| line.0) {
            if entry.key != EMPTY {
                self.place(entry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes that collide on purpose: few distinct low bits, so probes run long and wrap.
    fn crowded(n: u32) -> u64 {
        (u64::from(n % 5) << 48) | u64::from(n % 7) | (u64::from(n) << 40)
    }

    #[test]
    fn slots_are_found_under_their_hash_and_removal_keeps_probes_whole() {
        let mut table = IdTable::default();
        let count = 3_000u32;
        for n in 0..count {
            table.insert(crowded(n), n, u64::from(n) * 3);
        }
        // The hint comes with its slot, whatever entries were shifted or moved.
        let find = |table: &IdTable, n: u32| {
            table.find(crowded(n), |slot, hint| {
                slot == n && (hint == u64::from(n) * 3 || hint == u64::from(n) * 5)
            })
        };
        assert!((0..count).all(|n| find(&table, n) == Some(n)));
        assert_eq!(
            table.find(crowded(1), |_, _| false),
            None,
            "the caller's test decides"
        );
        // Remove every third: the rest are still found (backward shifts moved them).
        for n in (0..count).step_by(3) {
            assert!(table.remove(crowded(n), n));
            assert!(!table.remove(crowded(n), n), "removed once");
        }
        for n in 0..count {
            assert_eq!(find(&table, n), (n % 3 != 0).then_some(n), "slot {n}");
        }
        for n in (0..count).step_by(3) {
            table.insert(crowded(n), n, u64::from(n) * 3);
        }
        for n in (1..count).step_by(2) {
            table.set_hint(crowded(n), n, u64::from(n) * 5);
        }
        assert!((0..count).all(|n| find(&table, n) == Some(n)));
        let hint = |n: u32| {
            let mut seen = None;
            table.find(crowded(n), |slot, hint| {
                seen = Some(hint);
                slot == n
            });
            seen
        };
        assert_eq!(hint(7), Some(35), "set");
        assert_eq!(hint(6), Some(18), "as inserted");
    }

    #[test]
    fn a_table_stays_at_most_half_full_and_grows_without_losing_slots() {
        let mut table = IdTable::default();
        table.reserve(10_000);
        let capacities: Vec<usize> = table.shards.iter().map(Shard::capacity).collect();
        let hash = |n: u32| u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for n in 0..10_000 {
            table.insert(hash(n), n, u64::from(n));
        }
        let after: Vec<usize> = table.shards.iter().map(Shard::capacity).collect();
        assert_eq!(capacities, after, "reserved room is used before growing");
        assert!(table.shards.iter().all(|s| s.len * 2 <= s.capacity()));
        for n in 10_000..50_000 {
            table.insert(hash(n), n, u64::from(n));
        }
        assert!(table.shards.iter().all(|s| s.len * 2 <= s.capacity()));
        let kept = |n: u32| table.find(hash(n), |slot, hint| slot == n && hint == u64::from(n));
        assert!((0..50_000).all(|n| kept(n) == Some(n)));
        assert_eq!(table.shards.iter().map(|s| s.len).sum::<usize>(), 50_000);
    }
}
