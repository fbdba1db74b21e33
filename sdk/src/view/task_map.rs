//! [`TaskMap`]: the view's tasks by id, in shards, so that growing never rehashes them all at
//! once under the view's write lock (one table of a million tasks doubling takes a fraction of
//! a second; a shard of it, a few milliseconds).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use super::tasks::Entry;

/// Shards; a power of two.
const SHARDS: usize = 64;

/// Tasks by id, in [`SHARDS`] hash tables.
pub(super) struct TaskMap {
    shards: Box<[HashMap<Arc<str>, Entry>]>,
    /// Picks a shard; each shard's table hashes with its own keys.
    picker: std::collections::hash_map::RandomState,
}

impl Default for TaskMap {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| HashMap::new()).collect(),
            picker: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl TaskMap {
    fn shard(&self, id: &str) -> usize {
        // The table below uses the low bits of its own hash; take the shard from the top.
        (self.picker.hash_one(id) >> 58) as usize & (SHARDS - 1)
    }

    pub(super) fn get(&self, id: &str) -> Option<&Entry> {
        self.shards[self.shard(id)].get(id)
    }

    pub(super) fn get_key_value(&self, id: &str) -> Option<(&Arc<str>, &Entry)> {
        self.shards[self.shard(id)].get_key_value(id)
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut Entry> {
        let shard = self.shard(id);
        self.shards[shard].get_mut(id)
    }

    pub(super) fn insert(&mut self, id: Arc<str>, entry: Entry) -> Option<Entry> {
        let shard = self.shard(&id);
        self.shards[shard].insert(id, entry)
    }

    pub(super) fn remove(&mut self, id: &str) -> Option<Entry> {
        let shard = self.shard(id);
        self.shards[shard].remove(id)
    }

    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(HashMap::len).sum()
    }

    /// Room for `additional` more tasks, spread over the shards.
    pub(super) fn reserve(&mut self, additional: usize) {
        for shard in self.shards.iter_mut() {
            shard.reserve(additional / SHARDS + 1);
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Entry)> {
        self.shards.iter().flat_map(HashMap::iter)
    }
}

impl<'a> IntoIterator for &'a TaskMap {
    type Item = (&'a Arc<str>, &'a Entry);
    type IntoIter = Box<dyn Iterator<Item = (&'a Arc<str>, &'a Entry)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}
