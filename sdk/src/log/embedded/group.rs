//! Consumer groups: in-process members sharing a topic's partitions.
//!
//! Assignment is sticky: every partition has one owner, members own as even a share as the
//! count allows (the shares differ by at most one), and a join or leave moves only the
//! partitions that must move to even the shares out (a leaver's partitions, and from the
//! most loaded members the excess a joiner takes). Every join, leave or drop bumps the group's
//! generation, and members pick up the new assignment on their next `poll` (waiting members
//! are woken through a watch). A member starts a partition it newly owns at the group's
//! committed offset, so whatever the previous owner polled but did not commit is delivered
//! again; a member keeps its place in the partitions it keeps.
//!
//! Committed offsets are durable in file mode: `groups/<group>.json` in the topic's
//! directory, replaced atomically (write temporary, sync, rename, sync directory) on every
//! commit. Commits only move forward, so a late commit from a member that lost the
//! partition cannot rewind its new owner.

use std::fs;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::partition::lock;
use super::topic::Topic;
use crate::error::{Error, ErrorKind, Result};
use crate::log::{Delivery, GroupConsumer};

/// A group's state, shared by its members.
#[derive(Debug)]
pub(crate) struct Group {
    topic: Arc<Topic>,
    name: String,
    /// The offsets file; `None` in memory mode.
    path: Option<PathBuf>,
    sync: bool,
    state: Mutex<GroupState>,
    generation: watch::Sender<u64>,
    /// Serializes offsets-file writes so the last write carries the newest offsets.
    persist: Mutex<()>,
}

#[derive(Debug)]
struct GroupState {
    /// Member ids in join order.
    members: Vec<u64>,
    /// Each partition's owner, once the group has members.
    owners: Vec<Option<u64>>,
    next_member: u64,
    generation: u64,
    committed: Vec<u64>,
}

impl GroupState {
    /// Give every partition a live owner, evening the shares out while moving as few
    /// partitions as possible.
    fn rebalance(&mut self) {
        let members = &self.members;
        for owner in &mut self.owners {
            if owner.is_some_and(|o| !members.contains(&o)) {
                *owner = None;
            }
        }
        if members.is_empty() {
            return;
        }
        let load =
            |owners: &[Option<u64>], m: u64| owners.iter().filter(|o| **o == Some(m)).count();
        // The members holding the most keep the larger shares: fewer partitions move.
        let mut by_load: Vec<u64> = members.clone();
        by_load.sort_by_key(|m| std::cmp::Reverse(load(&self.owners, *m)));
        let (base, extra) = (
            self.owners.len() / members.len(),
            self.owners.len() % members.len(),
        );
        let target = |m: u64| {
            base + usize::from(
                by_load
                    .iter()
                    .position(|x| *x == m)
                    .is_some_and(|i| i < extra),
            )
        };
        for &member in members {
            let mut excess = load(&self.owners, member).saturating_sub(target(member));
            for owner in self.owners.iter_mut().rev() {
                if excess == 0 {
                    break;
                }
                if *owner == Some(member) {
                    *owner = None;
                    excess -= 1;
                }
            }
        }
        for &member in members {
            let mut missing = target(member).saturating_sub(load(&self.owners, member));
            for owner in self.owners.iter_mut() {
                if missing == 0 {
                    break;
                }
                if owner.is_none() {
                    *owner = Some(member);
                    missing -= 1;
                }
            }
        }
    }
}

/// The offsets file's contents.
#[derive(Debug, Serialize, Deserialize)]
struct OffsetsFile {
    group: String,
    committed: Vec<u64>,
}

impl Group {
    /// Load group `name` of `topic`, reading its committed offsets if it has a file.
    pub fn load(topic: Arc<Topic>, name: &str, path: Option<PathBuf>, sync: bool) -> Result<Self> {
        let partitions = topic.partitions.len();
        let mut committed = vec![0; partitions];
        if let Some(path) = &path
            && path.exists()
        {
            let bytes =
                fs::read(path).map_err(|e| super::files::io_error("cannot read", path, e))?;
            // Commits are at-least-once bookkeeping: an offsets file that a machine crash left
            // empty or torn (it is synced only under `FsyncPolicy::Always`) costs redelivery,
            // not data, so start the group from the beginning rather than refuse to open.
            match serde_json::from_slice::<OffsetsFile>(&bytes) {
                Ok(file) => {
                    for (slot, offset) in committed.iter_mut().zip(file.committed) {
                        *slot = offset;
                    }
                }
                Err(error) => tracing::warn!(
                    file = %path.display(), %error,
                    "unreadable group offsets: the group starts from offset 0 (records are redelivered)"
                ),
            }
        }
        let (generation, _) = watch::channel(0);
        Ok(Self {
            topic,
            name: name.to_string(),
            path,
            sync,
            state: Mutex::new(GroupState {
                members: Vec::new(),
                owners: vec![None; partitions],
                next_member: 0,
                generation: 0,
                committed,
            }),
            generation,
            persist: Mutex::new(()),
        })
    }

    fn join(&self) -> Result<u64> {
        let mut state = lock(&self.state)?;
        let id = state.next_member;
        state.next_member += 1;
        state.members.push(id);
        self.bump(&mut state);
        Ok(id)
    }

    fn leave(&self, id: u64) {
        if let Ok(mut state) = self.state.lock() {
            state.members.retain(|m| *m != id);
            self.bump(&mut state);
        }
    }

    fn bump(&self, state: &mut GroupState) {
        state.rebalance();
        state.generation += 1;
        self.generation.send_replace(state.generation);
    }

    /// The partitions `id` owns now, each with the group's committed offset.
    fn assignment(&self, id: u64) -> Result<Vec<(u32, u64)>> {
        let state = lock(&self.state)?;
        Ok(state
            .owners
            .iter()
            .zip(&state.committed)
            .enumerate()
            .filter(|(_, (owner, _))| **owner == Some(id))
            .map(|(p, (_, offset))| (p as u32, *offset))
            .collect())
    }

    /// Move `partition`'s committed offset forward to `next_offset` and persist it.
    async fn commit(self: &Arc<Self>, partition: u32, next_offset: u64) -> Result<()> {
        let Some(part) = self.topic.partitions.get(partition as usize) else {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!("{} has no partition {partition}", self.topic.name),
            ));
        };
        let end = part.end()?;
        if next_offset > end {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "cannot commit offset {next_offset} past the end {end} of partition {partition}"
                ),
            ));
        }
        {
            let mut state = lock(&self.state)?;
            let slot = &mut state.committed[partition as usize];
            if next_offset <= *slot {
                return Ok(());
            }
            *slot = next_offset;
        }
        if self.path.is_none() {
            return Ok(());
        }
        let group = Arc::clone(self);
        tokio::task::spawn_blocking(move || group.persist())
            .await
            .map_err(|e| {
                Error::new(ErrorKind::Internal, "the offsets writer panicked").with_source(e)
            })?
    }

    fn persist(&self) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let _order = lock(&self.persist)?;
        let file = OffsetsFile {
            group: self.name.clone(),
            committed: lock(&self.state)?.committed.clone(),
        };
        let bytes = serde_json::to_vec(&file).map_err(|e| {
            Error::new(ErrorKind::Internal, "cannot encode group offsets").with_source(e)
        })?;
        super::files::write_atomic(path, &bytes, self.sync)
    }
}

/// A partition this member owns, and where it is in it.
#[derive(Debug)]
struct Owned {
    partition: u32,
    next: u64,
    end: watch::Receiver<u64>,
}

/// One member of an embedded consumer group.
#[derive(Debug)]
pub(crate) struct Member {
    group: Arc<Group>,
    closed: Arc<AtomicBool>,
    id: u64,
    generation: watch::Receiver<u64>,
    /// The generation whose assignment `owned` is; `None` before the first poll. Kept apart
    /// from the watch's "seen" mark, which waiting for a change consumes.
    adopted: Option<u64>,
    owned: Vec<Owned>,
    /// Where the next poll starts looking, so partitions are served in turn.
    cursor: usize,
    left: bool,
}

impl Member {
    /// Join `group` as a new member.
    pub fn join(group: Arc<Group>, closed: Arc<AtomicBool>) -> Result<Self> {
        let generation = group.generation.subscribe();
        let id = group.join()?;
        Ok(Self {
            group,
            closed,
            id,
            generation,
            adopted: None,
            owned: Vec::new(),
            cursor: 0,
            left: false,
        })
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(super::closed_error());
        }
        Ok(())
    }

    /// Adopt the current assignment if the group changed since the last one adopted.
    fn refresh(&mut self) -> Result<()> {
        let current = *self.generation.borrow_and_update();
        if self.adopted == Some(current) {
            return Ok(());
        }
        self.adopted = Some(current);
        let assignment = self.group.assignment(self.id)?;
        let mut owned = Vec::with_capacity(assignment.len());
        for (partition, committed) in assignment {
            let kept = self
                .owned
                .iter()
                .position(|o| o.partition == partition)
                .map(|i| self.owned.swap_remove(i));
            owned.push(match kept {
                Some(o) => o,
                None => {
                    let part = &self.group.topic.partitions[partition as usize];
                    Owned {
                        partition,
                        next: committed,
                        end: part.watch_end()?,
                    }
                }
            });
        }
        self.owned = owned;
        Ok(())
    }

    /// One pass over the owned partitions, starting at the cursor.
    fn try_take(&mut self, max: usize) -> Result<Option<Delivery>> {
        let n = self.owned.len();
        for k in 0..n {
            let i = (self.cursor + k) % n;
            let owned = &mut self.owned[i];
            let end = *owned.end.borrow_and_update();
            if end <= owned.next {
                continue;
            }
            let part = &self.group.topic.partitions[owned.partition as usize];
            let records = part.read(owned.next, max)?;
            if let Some(last) = records.last() {
                owned.next = last.offset + 1;
                self.cursor = i + 1;
                return Ok(Some(Delivery {
                    partition: owned.partition,
                    records,
                }));
            }
        }
        Ok(None)
    }
}

type Wake<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

#[async_trait]
impl GroupConsumer for Member {
    async fn poll(&mut self, max: usize, timeout: Duration) -> Result<Option<Delivery>> {
        let deadline = tokio::time::Instant::now() + timeout;
        let max = max.max(1);
        loop {
            self.check_open()?;
            self.refresh()?;
            if let Some(delivery) = self.try_take(max)? {
                return Ok(Some(delivery));
            }
            // Wait for an owned partition to grow or the group to change. `try_take` marked
            // every end as seen, so an append after it is not missed.
            let mut wakes: Vec<Wake<'_>> = Vec::with_capacity(self.owned.len() + 1);
            wakes.push(Box::pin(async { self.generation.changed().await.is_ok() }));
            for owned in &mut self.owned {
                wakes.push(Box::pin(async { owned.end.changed().await.is_ok() }));
            }
            match tokio::time::timeout_at(deadline, futures::future::select_all(wakes)).await {
                Err(_) => return Ok(None),
                Ok((true, _, _)) => {}
                // A sender is gone: the log was closed.
                Ok((false, _, _)) => return Err(super::closed_error()),
            }
        }
    }

    async fn commit(&mut self, partition: u32, next_offset: u64) -> Result<()> {
        self.check_open()?;
        self.group.commit(partition, next_offset).await
    }

    fn owned_partitions(&self) -> Vec<u32> {
        let mut owned: Vec<u32> = self.owned.iter().map(|o| o.partition).collect();
        owned.sort_unstable();
        owned
    }

    async fn leave(mut self: Box<Self>) -> Result<()> {
        self.left = true;
        self.group.leave(self.id);
        Ok(())
    }
}

impl Drop for Member {
    /// A dropped member releases its partitions, just like `leave`.
    fn drop(&mut self) {
        if !self.left {
            self.group.leave(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(partitions: usize) -> GroupState {
        GroupState {
            members: Vec::new(),
            owners: vec![None; partitions],
            next_member: 0,
            generation: 0,
            committed: vec![0; partitions],
        }
    }

    /// Rebalance after the membership change, and count the partitions that changed owner
    /// (a partition of a departed member counts).
    fn moves(state: &mut GroupState, change: impl FnOnce(&mut Vec<u64>)) -> usize {
        let before = state.owners.clone();
        change(&mut state.members);
        state.rebalance();
        before
            .iter()
            .zip(&state.owners)
            .filter(|(b, a)| b.is_some() && b != a)
            .count()
    }

    fn loads(state: &GroupState) -> Vec<usize> {
        state
            .members
            .iter()
            .map(|m| state.owners.iter().filter(|o| **o == Some(*m)).count())
            .collect()
    }

    #[test]
    fn joins_and_leaves_move_only_the_partitions_that_must_move() {
        let mut s = state(8);
        assert_eq!(moves(&mut s, |m| m.push(1)), 0);
        assert_eq!(loads(&s), [8]);
        // A joiner takes its share from the others, nothing else moves.
        assert_eq!(moves(&mut s, |m| m.push(2)), 4);
        assert_eq!(loads(&s), [4, 4]);
        assert_eq!(moves(&mut s, |m| m.push(3)), 2);
        assert_eq!(loads(&s).iter().sum::<usize>(), 8);
        assert!(loads(&s).iter().all(|l| (2..=3).contains(l)));
        // A leaver's partitions go to the others; theirs stay.
        let kept: Vec<_> = s.owners.iter().map(|o| o.filter(|m| *m != 2)).collect();
        let leaver = loads(&s)[1];
        assert_eq!(moves(&mut s, |m| m.retain(|x| *x != 2)), leaver);
        for (before, now) in kept.iter().zip(&s.owners) {
            if before.is_some() {
                assert_eq!(before, now);
            }
        }
        assert_eq!(loads(&s), [4, 4]);
        // More members than partitions: some own nothing, every partition has an owner.
        let mut s = state(2);
        moves(&mut s, |m| m.extend([1, 2, 3]));
        assert!(s.owners.iter().all(Option::is_some));
        assert_eq!(loads(&s).iter().sum::<usize>(), 2);
        assert_eq!(moves(&mut s, |m| m.push(4)), 0);
        moves(&mut s, |m| m.clear());
        assert!(s.owners.iter().all(Option::is_none));
    }
}
