//! Membership records: the bridges sharing an agent's partitions say on `<agent>.members` that
//! they joined (with the URL their peers reach them at), are alive, leave, or that another
//! missed its lease, and that a partition moved to them is caught up. Every bridge folds the
//! same records in log order into the same [`Assignment`] ([`MemberFold`]).
//!
//! These are not [`Record`](crate::Record)s: a task record's header (task, context, principal,
//! tenant, deadline, claim, bridge path, content type) says nothing of a member, and every
//! reader of an agent's task topics (the view, the push sender, the console, `agentlog tail`)
//! would have to learn to pass over kinds that never belong to a task. A membership record is
//! a record of its own, on a topic of its own, with its own version byte, pinned kind codes and
//! signing domain, so that a signature over one can never be taken for a signature over a task
//! record.
//!
//! # Encoding, format version 1
//!
//! Little-endian; `str16` is UTF-8 with a u16 length prefix.
//!
//! | field | type |
//! | --- | --- |
//! | format version | u8, = 1 |
//! | kind | u8, [`MemberKind`] code |
//! | timestamp | u64, the writer's clock, Unix ms: the fold's only time |
//! | member | str16, the member the record is about (not empty) |
//! | source | str16, the member that wrote it (an eviction: the one that noticed) |
//! | key id | str16, the signer's key id; empty = unsigned |
//! | body | join: str16 url, u64 lease_ms (> 0); ready: u32 partition, u64 move (the [`Move::since`] it answers); snapshot: u64 after (the offset of the last record it folds), str32 state (the fold as JSON, [`MemberFold::state`]); heartbeat, leave, evict: nothing |
//! | signature | u8 length (0 or 64) + the ed25519 signature of [`MemberRecord::signing_payload`] |
//!
//! The decoder rejects an unknown version (`unknown_version`) or kind (`unknown_kind`),
//! truncation (`truncated`), trailing bytes (`trailing_bytes`), bad UTF-8 (`invalid_utf8`), an
//! empty member, a join's zero lease and a signature length other than 0 and 64
//! (`invalid_field`). The fold's rules are on [`MemberFold`] and in `wire/README.md`.

use serde::{Deserialize, Serialize};
use strum::{EnumIter, IntoStaticStr};

mod codec;
mod fold;

pub use fold::{AssignedMember, Assignment, MemberFold, MemberStats, Move};

/// The membership record format version this crate writes and reads.
pub const MEMBER_FORMAT_VERSION: u8 = 1;

/// The prefix of every [`MemberRecord::signing_payload`]: not [`crate::SIGNING_DOMAIN`], so a
/// membership signature and a task record's can never stand for one another.
pub const MEMBER_SIGNING_DOMAIN: &[u8] = b"agentlog/member-signature/v1\0";

/// What a membership record says. Pinned codes; **a retired code is never reused**.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[repr(u8)]
pub enum MemberKind {
    /// A bridge joins (or rejoins, or renews its URL and lease).
    Join = 1,
    /// A member is alive: its lease starts again at the record's time.
    Heartbeat = 2,
    /// A member is leaving: its partitions move (warmed up) to the others, then it is gone.
    Leave = 3,
    /// A member missed its lease: it is gone at once.
    Evict = 4,
    /// A member caught up a partition moved to it: the map switches to it.
    Ready = 5,
    /// The fold of every record up to an offset, so a reader need not fold from the start.
    Snapshot = 6,
}

impl MemberKind {
    /// The pinned code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The kind for a code, or `None` if this version does not know it.
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => MemberKind::Join,
            2 => MemberKind::Heartbeat,
            3 => MemberKind::Leave,
            4 => MemberKind::Evict,
            5 => MemberKind::Ready,
            6 => MemberKind::Snapshot,
            _ => return None,
        })
    }

    /// The snake-case name (`join`, `heartbeat`, `leave`, `evict`, `ready`, `snapshot`).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// What happened, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum MemberBody {
    /// The member joins at `url`, alive for `lease_ms` after each of its records.
    Join {
        /// Where its peers reach it (`http://host:port`, as `--advertise` says).
        url: String,
        /// How long after its latest join or heartbeat it counts as alive, ms.
        lease_ms: u64,
    },
    /// The member is alive.
    Heartbeat,
    /// The member leaves, handing its partitions over warmed up.
    Leave,
    /// The member missed its lease (the record's `source` noticed).
    Evict,
    /// The member caught up `partition`, moved to it by the move that began at `since`.
    Ready {
        /// The partition.
        partition: u32,
        /// The [`Move::since`] of the move this answers (a stale answer to an older move of
        /// the same partition is ignored).
        #[serde(rename = "move")]
        since: u64,
    },
    /// The fold of every record of the topic up to offset `after`, as [`MemberFold::state`]
    /// gives it: a reader may start from it and fold the records after `after`. The fold
    /// itself passes over it (it changes nothing, and is not counted).
    Snapshot {
        /// The offset of the last record it folds.
        after: u64,
        /// The fold's state (JSON).
        state: String,
    },
}

impl MemberBody {
    /// The kind of this body.
    pub const fn kind(&self) -> MemberKind {
        match self {
            MemberBody::Join { .. } => MemberKind::Join,
            MemberBody::Heartbeat => MemberKind::Heartbeat,
            MemberBody::Leave => MemberKind::Leave,
            MemberBody::Evict => MemberKind::Evict,
            MemberBody::Ready { .. } => MemberKind::Ready,
            MemberBody::Snapshot { .. } => MemberKind::Snapshot,
        }
    }
}

/// One membership record on `<agent>.members`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberRecord {
    /// When it was written, the writer's clock, Unix ms. Leases are judged by these times
    /// alone (never a reader's clock), so members' clocks must agree to well within a lease.
    pub timestamp_ms: u64,
    /// The member the record is about: the writer's own name, or the evicted member's.
    pub member: String,
    /// The member that wrote it.
    pub source: String,
    /// The id of the key that signed it; empty when unsigned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_id: String,
    /// What happened.
    #[serde(flatten)]
    pub body: MemberBody,
    /// The ed25519 signature of [`MemberRecord::signing_payload`]: empty or 64 bytes; in
    /// JSON, standard base64.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::record::base64_bytes"
    )]
    pub signature: Vec<u8>,
}

impl MemberRecord {
    /// An unsigned record of `member`, written by `source` at `timestamp_ms`.
    pub fn new(timestamp_ms: u64, member: &str, source: &str, body: MemberBody) -> Self {
        Self {
            timestamp_ms,
            member: member.to_owned(),
            source: source.to_owned(),
            key_id: String::new(),
            body,
            signature: Vec::new(),
        }
    }

    /// Whether it carries a key id and a signature (whether they hold is a verifier's to say).
    pub fn is_signed(&self) -> bool {
        !self.key_id.is_empty() && !self.signature.is_empty()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
