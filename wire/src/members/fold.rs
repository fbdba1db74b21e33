//! The membership fold: records in log order to the members and the sticky, balanced
//! assignment of an agent's partitions to them.
//!
//! Each member has a *slot*, a small number that is its index for its peers (the forward mark
//! names it): the smallest not held by a present member when it joined, kept until it is gone.
//! Each partition has a *target* (the member that holds it once the moves are done) and, while
//! it moves, a [`Move`]: the member that held it serves it until the target writes that it is
//! ready. So a planned move warms up: the new holder catches up, the map switches, the old one
//! releases.
//!
//! Rules (`wire/README.md`, "The membership fold"):
//! 1. **Join** of an absent member adds it (lease from the record's time); the targets are
//!    rebalanced: it takes partitions only from members above their new share, at most
//!    ⌈P/N⌉, each a move from the member serving it (none when nobody served it). A join of a
//!    present member renews its URL and lease and keeps its partitions; a leaving one stays.
//! 2. **Heartbeat**: the member's lease starts again at the record's time (never earlier).
//! 3. **Leave**: the member is leaving. Its targets go to the others (the fewest first), each
//!    a move from it: it serves them until each is ready, and is gone once it serves nothing.
//!    With no one else left it is gone at once.
//! 4. **Evict** applies when the record's time is at or after the member's last record's
//!    time plus its lease: the member is gone at once; what it served, its targets serve now
//!    (no warm-up from a member that is not there), and its targets go to the others. Earlier
//!    (the member was alive after all), or about an absent member (a duplicate), it is ignored.
//! 5. **Ready** of partition p and move m by p's target ends p's move if it began at m; any
//!    other is stale and ignored.
//! 6. **Snapshot**: nothing (not even counted); a reader may start from its state instead
//!    ([`MemberFold::restore`]) and fold the records after its `after` offset.
//!
//! Balance: after every record each member that is not leaving holds ⌊P/N⌋ or ⌈P/N⌉ targets,
//! the members holding the most keeping the larger shares. Leases are judged by records' times
//! only, so the fold never reads a clock and every bridge computes the same map.

use serde::{Deserialize, Serialize};

use super::{MemberBody, MemberRecord};
use crate::WireError;

/// A partition moving: `from` serves it until its target is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Move {
    /// The slot of the member serving the partition meanwhile.
    pub from: u32,
    /// The fold position (records folded before it) of the record that began the move: a
    /// `ready` names it.
    pub since: u64,
}

/// A present member, as the assignment shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssignedMember {
    /// Its name (the records' `member`).
    pub name: String,
    /// Where its peers reach it.
    pub url: String,
    /// Its index for its peers.
    pub slot: u32,
    /// Whether it is leaving (it only serves partitions still moving away from it).
    pub leaving: bool,
}

/// Who holds which partition: the fold's result, what forwarding reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Assignment {
    /// The present members, by slot.
    pub members: Vec<AssignedMember>,
    /// Each partition's target's slot (`None`: no member).
    pub targets: Vec<Option<u32>>,
    /// Each partition's move, while it moves.
    pub moves: Vec<Option<Move>>,
}

impl Assignment {
    /// An assignment of `partitions` partitions to no member.
    pub fn empty(partitions: u32) -> Self {
        Self {
            members: Vec::new(),
            targets: vec![None; partitions as usize],
            moves: vec![None; partitions as usize],
        }
    }

    /// How many partitions.
    pub fn partitions(&self) -> u32 {
        u32::try_from(self.targets.len()).unwrap_or(u32::MAX)
    }

    /// The member in `slot`.
    pub fn member(&self, slot: u32) -> Option<&AssignedMember> {
        self.members.iter().find(|m| m.slot == slot)
    }

    /// The slot of the member named `name`.
    pub fn slot_of(&self, name: &str) -> Option<u32> {
        self.members.iter().find(|m| m.name == name).map(|m| m.slot)
    }

    /// The slot of the member that serves `partition` now: the one it moves from while it
    /// moves, else its target.
    pub fn owner(&self, partition: u32) -> Option<u32> {
        let p = partition as usize;
        match self.moves.get(p).copied().flatten() {
            Some(moving) => Some(moving.from),
            None => self.targets.get(p).copied().flatten(),
        }
    }

    /// The slot of the member that stands in when `partition`'s owner does not answer: its
    /// target while it moves (it is catching up), else the next member not leaving after the
    /// owner by slot (wrapping). `None` when there is no other.
    pub fn successor(&self, partition: u32) -> Option<u32> {
        let owner = self.owner(partition)?;
        let p = partition as usize;
        if self.moves.get(p).copied().flatten().is_some() {
            return self.targets.get(p).copied().flatten();
        }
        let staying = || {
            self.members
                .iter()
                .filter(|m| !m.leaving && m.slot != owner)
        };
        staying()
            .find(|m| m.slot > owner)
            .or_else(|| staying().next())
            .map(|m| m.slot)
    }

    /// The partitions `slot` is the target of, ascending.
    pub fn targets_of(&self, slot: u32) -> Vec<u32> {
        indexes(&self.targets, |t| *t == Some(slot))
    }

    /// The partitions `slot` should hold, ascending: its targets and those it still serves
    /// while they move away.
    pub fn held_by(&self, slot: u32) -> Vec<u32> {
        (0..self.partitions())
            .filter(|p| {
                self.targets[*p as usize] == Some(slot)
                    || self.moves[*p as usize].is_some_and(|m| m.from == slot)
            })
            .collect()
    }

    /// The partitions moving to `slot`, with the move each `ready` must name.
    pub fn incoming(&self, slot: u32) -> Vec<(u32, u64)> {
        (0..self.partitions())
            .filter_map(|p| {
                let moving = self.moves[p as usize]?;
                (self.targets[p as usize] == Some(slot)).then_some((p, moving.since))
            })
            .collect()
    }
}

fn indexes<T>(items: &[T], keep: impl Fn(&T) -> bool) -> Vec<u32> {
    (0u32..)
        .zip(items)
        .filter(|(_, item)| keep(item))
        .map(|(i, _)| i)
        .collect()
}

/// What the fold did with the records it was given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberStats {
    /// Records that changed something.
    pub applied: u64,
    /// Records that changed nothing: about an absent member, an eviction within the lease, a
    /// stale `ready`, a second `leave`.
    pub ignored: u64,
}

/// A present member's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lease {
    lease_ms: u64,
    last_seen_ms: u64,
}

/// The fold of an agent's membership records (the rules are in this module's documentation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberFold {
    assignment: Assignment,
    /// Parallel to `assignment.members`.
    leases: Vec<Lease>,
    folded: u64,
    stats: MemberStats,
}

impl MemberFold {
    /// The fold of no record, over `partitions` partitions.
    pub fn new(partitions: u32) -> Self {
        Self {
            assignment: Assignment::empty(partitions),
            leases: Vec::new(),
            folded: 0,
            stats: MemberStats::default(),
        }
    }

    /// The fold of `records`, in log order.
    pub fn of<'a>(partitions: u32, records: impl IntoIterator<Item = &'a MemberRecord>) -> Self {
        let mut fold = Self::new(partitions);
        for record in records {
            fold.apply(record);
        }
        fold
    }

    /// The assignment now.
    pub fn assignment(&self) -> &Assignment {
        &self.assignment
    }

    /// How many records were folded (the next one's position: a move begun by it has that
    /// [`Move::since`]).
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// What the fold did so far.
    pub fn stats(&self) -> MemberStats {
        self.stats
    }

    /// When the lease of the member named `name` ends (its last record's time plus its
    /// lease), if it is present: an eviction written at or after it applies.
    pub fn lease_end(&self, name: &str) -> Option<u64> {
        let at = self.index_of(name)?;
        let lease = self.leases[at];
        Some(lease.last_seen_ms.saturating_add(lease.lease_ms))
    }

    /// The fold's state as JSON, what a snapshot record carries: [`restore`](Self::restore)
    /// gives this fold back.
    pub fn state(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The fold a snapshot's `state` holds, over `partitions` partitions; refused
    /// (`invalid_json`, `invalid_field`) when it does not parse or does not hold together.
    pub fn restore(partitions: u32, state: &str) -> Result<Self, WireError> {
        let fold: Self = serde_json::from_str(state).map_err(|e| WireError::InvalidJson {
            what: "membership snapshot",
            reason: e.to_string(),
        })?;
        let a = &fold.assignment;
        let invalid = |reason: &str| WireError::InvalidField {
            field: "state",
            reason: reason.to_owned(),
        };
        if a.targets.len() != partitions as usize || a.moves.len() != partitions as usize {
            return Err(invalid("another partition count"));
        }
        if fold.leases.len() != a.members.len()
            || a.members.windows(2).any(|w| w[0].slot >= w[1].slot)
        {
            return Err(invalid(
                "members out of slot order, or without a lease each",
            ));
        }
        let present = |slot: &u32| a.member(*slot).is_some();
        let moves_ok = a.moves.iter().flatten().all(|m| present(&m.from));
        if !a.targets.iter().flatten().all(present) || !moves_ok {
            return Err(invalid("a partition names an absent member"));
        }
        Ok(fold)
    }

    /// Fold one more record; whether it changed anything. A snapshot changes nothing and is
    /// not counted, so a fold restored from one and a fold from the start agree.
    pub fn apply(&mut self, record: &MemberRecord) -> bool {
        if let MemberBody::Snapshot { .. } = record.body {
            return false;
        }
        let seq = self.folded;
        self.folded += 1;
        let applied = match &record.body {
            MemberBody::Join { url, lease_ms } => {
                self.join(&record.member, url, *lease_ms, record.timestamp_ms, seq)
            }
            MemberBody::Heartbeat => self.heartbeat(&record.member, record.timestamp_ms),
            MemberBody::Leave => self.leave(&record.member, seq),
            MemberBody::Evict => self.evict(&record.member, record.timestamp_ms, seq),
            MemberBody::Ready { partition, since } => {
                self.ready(&record.member, *partition, *since)
            }
            MemberBody::Snapshot { .. } => false,
        };
        if applied {
            self.stats.applied += 1;
        } else {
            self.stats.ignored += 1;
        }
        applied
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.assignment.members.iter().position(|m| m.name == name)
    }

    fn join(&mut self, name: &str, url: &str, lease_ms: u64, at: u64, seq: u64) -> bool {
        if let Some(i) = self.index_of(name) {
            let member = &mut self.assignment.members[i];
            member.url = url.to_owned();
            let lease = &mut self.leases[i];
            lease.lease_ms = lease_ms;
            lease.last_seen_ms = lease.last_seen_ms.max(at);
            if member.leaving {
                member.leaving = false;
                self.rebalance(seq);
            }
            return true;
        }
        let slot = (0u32..)
            .find(|s| self.assignment.member(*s).is_none())
            .unwrap_or(u32::MAX);
        let at_slot = self.assignment.members.partition_point(|m| m.slot < slot);
        self.assignment.members.insert(
            at_slot,
            AssignedMember {
                name: name.to_owned(),
                url: url.to_owned(),
                slot,
                leaving: false,
            },
        );
        self.leases.insert(
            at_slot,
            Lease {
                lease_ms,
                last_seen_ms: at,
            },
        );
        self.rebalance(seq);
        true
    }

    fn heartbeat(&mut self, name: &str, at: u64) -> bool {
        let Some(i) = self.index_of(name) else {
            return false;
        };
        let lease = &mut self.leases[i];
        lease.last_seen_ms = lease.last_seen_ms.max(at);
        true
    }

    fn leave(&mut self, name: &str, seq: u64) -> bool {
        let Some(i) = self.index_of(name) else {
            return false;
        };
        if self.assignment.members[i].leaving {
            return false;
        }
        self.assignment.members[i].leaving = true;
        self.rebalance(seq);
        true
    }

    fn evict(&mut self, name: &str, at: u64, seq: u64) -> bool {
        let Some(i) = self.index_of(name) else {
            return false;
        };
        let lease = self.leases[i];
        if at < lease.last_seen_ms.saturating_add(lease.lease_ms) {
            return false;
        }
        self.remove(i);
        self.rebalance(seq);
        true
    }

    fn ready(&mut self, name: &str, partition: u32, since: u64) -> bool {
        let Some(slot) = self.assignment.slot_of(name) else {
            return false;
        };
        let p = partition as usize;
        let a = &mut self.assignment;
        let answers = a.targets.get(p) == Some(&Some(slot))
            && a.moves
                .get(p)
                .copied()
                .flatten()
                .is_some_and(|m| m.since == since);
        if !answers {
            return false;
        }
        a.moves[p] = None;
        self.drop_idle_leavers();
        true
    }

    /// Take the member at `i` out: what it served, its targets serve now; its targets are
    /// nobody's until the rebalance.
    fn remove(&mut self, i: usize) {
        let member = self.assignment.members.remove(i);
        self.leases.remove(i);
        let a = &mut self.assignment;
        for (target, moving) in a.targets.iter_mut().zip(a.moves.iter_mut()) {
            if moving.is_some_and(|m| m.from == member.slot) {
                *moving = None;
            }
            if *target == Some(member.slot) {
                *target = None;
            }
        }
    }

    /// Leaving members that serve nothing any more are gone.
    fn drop_idle_leavers(&mut self) {
        while let Some(i) = self.assignment.members.iter().position(|m| {
            m.leaving
                && !self
                    .assignment
                    .moves
                    .iter()
                    .flatten()
                    .any(|mv| mv.from == m.slot)
        }) {
            self.remove(i);
        }
    }

    /// Balance the targets over the members not leaving, moving as few as it can, then
    /// start a move (at `seq`) for each partition whose target changed while another member
    /// serves it.
    fn rebalance(&mut self, seq: u64) {
        let a = &self.assignment;
        let before: Vec<Option<u32>> = (0..a.partitions()).map(|p| a.owner(p)).collect();
        let old_targets = a.targets.clone();
        let staying: Vec<u32> = a
            .members
            .iter()
            .filter(|m| !m.leaving)
            .map(|m| m.slot)
            .collect();
        let mut targets: Vec<Option<u32>> = old_targets
            .iter()
            .map(|t| t.filter(|slot| staying.contains(slot)))
            .collect();
        if staying.is_empty() {
            // Nobody to hand over to: leaving members are gone at once.
            let a = &mut self.assignment;
            a.members.clear();
            self.leases.clear();
            a.targets.iter_mut().for_each(|t| *t = None);
            a.moves.iter_mut().for_each(|m| *m = None);
            return;
        }
        let moving = |p: usize| self.assignment.moves[p].is_some();
        let load = |targets: &[Option<u32>], slot: u32| {
            targets.iter().filter(|t| **t == Some(slot)).count()
        };
        let count = targets.len();
        let (base, extra) = (count / staying.len(), count % staying.len());
        // The members holding the most keep the larger shares: fewer partitions move.
        let mut by_load = staying.clone();
        by_load.sort_by_key(|slot| (std::cmp::Reverse(load(&targets, *slot)), *slot));
        let share = |slot: u32| {
            base + usize::from(
                by_load
                    .iter()
                    .position(|s| *s == slot)
                    .is_some_and(|i| i < extra),
            )
        };
        for &slot in &staying {
            let mut excess = load(&targets, slot).saturating_sub(share(slot));
            // Partitions still moving to it go first (it has not caught them up), then the
            // highest.
            for pass_moving in [true, false] {
                for p in (0..count).rev() {
                    if excess > 0 && targets[p] == Some(slot) && moving(p) == pass_moving {
                        targets[p] = None;
                        excess -= 1;
                    }
                }
            }
        }
        for &slot in &staying {
            let mut missing = share(slot).saturating_sub(load(&targets, slot));
            // Partitions it serves now first (a move back to it is no move), then the lowest.
            for pass_serving in [true, false] {
                for p in 0..count {
                    if missing > 0
                        && targets[p].is_none()
                        && (before[p] == Some(slot)) == pass_serving
                    {
                        targets[p] = Some(slot);
                        missing -= 1;
                    }
                }
            }
        }
        let a = &mut self.assignment;
        for p in 0..count {
            let (old, new, server) = (old_targets[p], targets[p], before[p]);
            a.moves[p] = match (new, server) {
                (Some(new), Some(server)) if new != server => {
                    match a.moves[p] {
                        // The same move goes on.
                        Some(m) if old == Some(new) && m.from == server => Some(m),
                        _ => Some(Move {
                            from: server,
                            since: seq,
                        }),
                    }
                }
                _ => None,
            };
        }
        a.targets = targets;
        self.drop_idle_leavers();
    }
}
