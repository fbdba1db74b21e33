//! Dynamic membership: the bridges sharing an agent's partitions say who they are on
//! `<agent>.members` ([`agentlog_wire::members`]: join with the URL peers reach them at,
//! heartbeat, leave, evict, ready), and every bridge folds that topic into the same sticky,
//! balanced [`Assignment`] (`skills/a2a-bridge/partitions.md`).
//!
//! A [`Membership`] is one member's runner over a [`Log`]: [`Membership::join`] writes its
//! join and returns once the assignment includes it; then it heartbeats, follows the topic,
//! writes an eviction for any member whose lease its clock sees over (whoever notices first;
//! the fold ignores an early or repeated one, judging by the records' times alone), joins
//! again if it was evicted, and publishes each new assignment through a watch
//! ([`Membership::watch`]). [`Membership::ready`] says a partition moved to it is caught up;
//! [`Membership::leave`] hands its partitions over warmed up, then stops. The member in the
//! lowest slot writes a snapshot of the fold every [`MembershipConfig::snapshot_every`]
//! records; a joining member starts from the newest one its trust admits, so neither its start
//! nor the topic's expiry depends on the topic's whole history.
//!
//! Not an Iggy consumer group: a group's leave reshuffles most partitions, its members carry
//! no URL, and its members outlive a server restart as ghosts. Here a member is gone when it
//! leaves or its lease runs out in the log's own records, whatever the server did.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::members::Assignment;
use tokio::sync::watch;

use crate::agent::DEFAULT_STREAM;
use crate::log::TopicRef;
use crate::security::owners::{OwnerMap, Owners};
use crate::security::{RecordSigner, RecordVerifier};

mod run;

pub use run::{Membership, ReadyReporter};

/// How long a member counts as alive after its latest join or heartbeat, by default.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// After how many records a snapshot of the fold is written, by default: a joining member
/// reads at most about this many records past the newest one.
pub const DEFAULT_SNAPSHOT_EVERY: u64 = 1000;

/// The topic an agent's membership records are on: `<agent>.members`, one partition (one
/// order every member folds alike).
pub fn members_topic(stream: &str, agent: &str) -> TopicRef {
    TopicRef::new(stream, format!("{agent}.members"))
}

/// How a bridge takes part in its agent's membership.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MembershipConfig {
    /// The agent whose partitions are shared.
    pub agent: String,
    /// The stream holding its topics.
    pub stream: String,
    /// This member's name: stable across its restarts, unique among the agent's members.
    pub name: String,
    /// The URL its peers reach it at (`--advertise`).
    pub url: String,
    /// How long it counts as alive after each of its records ([`DEFAULT_LEASE`]).
    pub lease: Duration,
    /// How often it says it is alive, and looks for members whose lease is over (a third of
    /// the lease when not set).
    pub heartbeat: Option<Duration>,
    /// Signs the records it writes (`serve --signing-key`).
    pub signer: Option<RecordSigner>,
    /// Checks the records it reads (`serve --trust`): others are not folded.
    pub verifier: Option<RecordVerifier>,
    /// After how many records the member in the lowest slot writes a snapshot of the fold, so
    /// that a joining member folds from the newest one instead of from the start
    /// ([`DEFAULT_SNAPSHOT_EVERY`]).
    pub snapshot_every: u64,
}

impl MembershipConfig {
    /// Member `name` of `agent`'s bridges, reached at `url`.
    pub fn new(agent: impl Into<String>, name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            stream: DEFAULT_STREAM.to_owned(),
            name: name.into(),
            url: url.into(),
            lease: DEFAULT_LEASE,
            heartbeat: None,
            signer: None,
            verifier: None,
            snapshot_every: DEFAULT_SNAPSHOT_EVERY,
        }
    }

    fn heartbeat_every(&self) -> Duration {
        self.heartbeat
            .unwrap_or(self.lease / 3)
            .max(Duration::from_millis(1))
    }
}

setters!(MembershipConfig {
    stream: String,
    lease: Duration,
    snapshot_every: u64,
} optional {
    heartbeat: Duration,
    signer: RecordSigner,
    verifier: RecordVerifier,
});

/// The `move` a `ready` names when it answers no move: the member says it holds a partition
/// it owns caught up (after it started, or took the partition over at an eviction). The fold
/// ignores it (no move begins at this position); [`MemberView::ready`] keeps it.
pub const NO_MOVE: u64 = u64::MAX;

/// The newest `ready` about a partition written by the member that owned it once folded:
/// that member holds it caught up since `at_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyMark {
    /// The member that wrote it.
    pub member: String,
    /// The record's time (the writer's clock), Unix ms.
    pub at_ms: u64,
    /// Where the record is on `<agent>.members`.
    pub offset: u64,
}

/// Where a present member's own records are on `<agent>.members`, as far as this member
/// has read: which run of it is there, and whether it was alive after a point in the topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Its latest join (a restart under its name writes one): 0 when that was before where
    /// this member began reading.
    pub joined: u64,
    /// Its latest record of any kind.
    pub latest: u64,
}

/// The assignment as one member sees it: published by [`Membership::watch`] whenever it
/// changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberView {
    /// Who holds which partition.
    pub assignment: Assignment,
    /// This member's slot (its index for its peers), or `None` while it is not a member
    /// (evicted and not yet joined again, or gone after leaving).
    pub me: Option<u32>,
    /// Per partition, the newest `ready` its owner wrote (a move's, or [`NO_MOVE`]'s), read
    /// since this member started: a bridge holding a copy on demand releases it once its
    /// owner holds the partition ([`MemberView::owner_holds`]). Not part of the fold (a
    /// snapshot does not carry it).
    pub ready: Vec<Option<ReadyMark>>,
    /// Per present member, where its own records are ([`Seen`]): read since this member
    /// started, not part of the fold either.
    pub seen: BTreeMap<String, Seen>,
    /// The offset after the last record read.
    pub read_to: u64,
}

impl MemberView {
    /// The partitions this member should hold now: its targets and those it serves until
    /// they are ready elsewhere.
    pub fn held(&self) -> Vec<u32> {
        self.me
            .map(|me| self.assignment.held_by(me))
            .unwrap_or_default()
    }

    /// The partitions moving to this member, each with the move its `ready` names.
    pub fn incoming(&self) -> Vec<(u32, u64)> {
        self.me
            .map(|me| self.assignment.incoming(me))
            .unwrap_or_default()
    }

    /// Whether `partition`'s owner, a member other than this one, holds it caught up and
    /// was alive after offset `after` of the topic: it said so ([`ReadyMark`]) since its
    /// latest join (the run that said so is the one still there, not one that died and
    /// restarted since), and wrote a record at or past `after`. What releases a copy held on
    /// demand since `after`: a dead owner's old mark never does (it writes nothing more),
    /// and an owner that held the partition before the copy began does as soon as it is
    /// heard from again.
    pub fn owner_holds(&self, partition: u32, after: u64) -> bool {
        let a = &self.assignment;
        let Some(owner) = a.owner(partition).filter(|o| Some(*o) != self.me) else {
            return false;
        };
        let (Some(owner), Some(Some(mark))) = (a.member(owner), self.ready.get(partition as usize))
        else {
            return false;
        };
        mark.member == owner.name
            && self
                .seen
                .get(&owner.name)
                .is_some_and(|seen| mark.offset >= seen.joined && seen.latest >= after)
    }

    /// The map the forwarder reads ([`Owners::set`]): member indexes are slots (an index no
    /// member holds has an empty URL and owns nothing); each partition's owner is who serves
    /// it now, its successor the member it moves to (marked [`OwnerMap::is_moving`]), else the
    /// next member (the owner itself when alone). `None` while this bridge is not a member,
    /// or no member holds anything.
    pub fn owner_map(&self) -> Option<OwnerMap> {
        self.owner_map_as(self.me?)
    }

    /// [`owner_map`](Self::owner_map) as seen by slot `me`, which may be no member's (this
    /// bridge after it left: it forwards everything).
    fn owner_map_as(&self, me: u32) -> Option<OwnerMap> {
        let a = &self.assignment;
        let slots = a.members.iter().map(|m| m.slot).max()?.max(me);
        let urls = (0..=slots)
            .map(|s| a.member(s).map(|m| m.url.clone()).unwrap_or_default())
            .collect();
        let owners: Vec<u32> = (0..a.partitions())
            .map(|p| a.owner(p))
            .collect::<Option<_>>()?;
        let successors = (0..a.partitions())
            .zip(&owners)
            .map(|(p, owner)| a.successor(p).unwrap_or(*owner))
            .collect();
        let moving = (0..a.partitions()).filter(|p| a.moves[*p as usize].is_some());
        Some(
            OwnerMap::new(me, urls, owners, successors)
                .ok()?
                .moving(moving),
        )
    }
}

/// Put each new assignment's [`MemberView::owner_map`] in force in `owners` until the
/// member stops. Once this bridge is no member (it left, or was evicted and joins again) the
/// map keeps its last slot, which owns nothing, so that it forwards what others now serve;
/// with no member left at all the last map stays in force (a stale owner costs a forward at
/// most).
pub async fn feed_owners(mut watch: MemberWatch, owners: Owners) {
    let mut last_me = None;
    loop {
        let map = {
            let view = watch.borrow_and_update();
            last_me = view.me.or(last_me);
            last_me.and_then(|me| view.owner_map_as(me))
        };
        if let Some(map) = map
            && *owners.current() != map
        {
            owners.set(map);
        }
        if watch.changed().await.is_err() {
            return;
        }
    }
}

/// A receiver of the assignment as it changes.
pub type MemberWatch = watch::Receiver<Arc<MemberView>>;

#[cfg(test)]
mod tests;
