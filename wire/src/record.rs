//! The log record: the unit written on a topic, and its binary encoding.
//!
//! A record is a [`RecordHeader`] (who, which task, when) and a [`RecordBody`] (what happened).
//! JSON payloads (A2A params, messages, artifacts) travel as the exact text they arrived as, so
//! a `SendMessage`'s params are carried byte-identical from the bridge to the worker.
//!
//! # Encoding, format version 4
//!
//! All integers little-endian. `str16` = u16 length + UTF-8 bytes, `str32` = u32 length + UTF-8.
//!
//! | field | type |
//! | --- | --- |
//! | format version | u8, = 4 |
//! | kind | u8, [`RecordKind`] code |
//! | timestamp | u64, milliseconds since the Unix epoch |
//! | deadline | u64, milliseconds since the Unix epoch, 0 = none |
//! | hops | u8, how many bridges the call behind the record went through (the length of the bridge path, at most 255) |
//! | attempt | u32, the claim the record was written under (0 = none) |
//! | task id, context id, message id, source, principal, tenant, content type | 7 × str16 |
//! | key id | str16, the id of the key that signed the record; empty = unsigned (format 4) |
//! | bridge path | u8 count + count × str16, the ids of the bridges the call went through, the writing bridge last (format 4) |
//! | body | per kind, below |
//! | signature | u8 length (0 or 64) + that many bytes: the ed25519 signature of [`Record::signing_payload`] (format 4) |
//!
//! | kind | body |
//! | --- | --- |
//! | command | retention: u64 (ms a finished task is kept, 0 = forever), params: str32 (a `SendMessageRequest` as JSON) |
//! | continue | params: str32 (a `SendMessageRequest` as JSON) |
//! | cancel request | metadata: str32 (a JSON object, or empty) |
//! | status update, terminal | state: u8 code, message: str32 (a `Message` as JSON, or empty) |
//! | artifact update | flags: u8 (bit 0 append, bit 1 lastChunk, others 0), artifact: str32 (an `Artifact` as JSON) |
//! | claim | turn: str16 (the client `messageId` claimed), lease deadline: u64 (Unix ms) |
//! | reply | message: str32 (the agent's answering `Message` as JSON; format 4 only) |
//! | push config | config: str32 (a `TaskPushNotificationConfig` as JSON, its `id` set; format 4 only) |
//! | push config deleted | config id: str16 (format 4 only) |
//! | push dead letter | config id: str16, update: u64 (the offset of the record whose notification was given up), attempts: u32, reason: str32 (format 4 only) |
//!
//! Format version 3 is version 4 without the key id, the bridge path and the signature;
//! version 2 is version 3 without a command's `retention`; version 1 is version 2 without
//! `attempt` (and without claims). All are still read, as unsigned records with an empty
//! bridge path, a version-2 command as retention 0 (kept forever) and a version-1 record as
//! attempt 0, so a log written by an older release stays readable. They re-encode as
//! version 4.
//!
//! # What a signature covers
//!
//! [`Record::signing_payload`] is [`SIGNING_DOMAIN`] followed by the record's encoding with
//! an empty signature (its length byte 0): every field, `hops`, the key id and the bridge
//! path included. Nothing on the way changes a record once written (a bridge stamps the path
//! when it writes; no relay rewrites it), so nothing is left out but the signature itself.
//!
//! The decoder rejects an unknown version or kind, truncation, bad UTF-8, unknown flag bits, an
//! empty task id and trailing bytes, each with its own [`WireError`]. Unknown *state* codes are
//! kept as they are ([`StateCode`]) so a record re-encodes to the same bytes.

use serde::{Deserialize, Serialize};
use strum::{EnumIter, IntoStaticStr};

use crate::{StateCode, TaskState};

/// The record format version this crate writes. It reads this one, version 3 (records from
/// before signatures and bridge paths, read unsigned with an empty path), version 2 (commands
/// from before retention, read as kept forever) and version 1 (records from before claims,
/// read with attempt 0).
pub const RECORD_FORMAT_VERSION: u8 = 4;

/// The format version before signatures and bridge paths.
const FORMAT_V3: u8 = 3;

/// The format version before retention: commands carry no `retention`.
const FORMAT_V2: u8 = 2;

/// The format version before claims: no `attempt` field, no claim records.
const FORMAT_V1: u8 = 1;

/// The prefix of every [`Record::signing_payload`], so a signature over a record can never be
/// confused with a signature over anything else.
pub const SIGNING_DOMAIN: &[u8] = b"agentlog/record-signature/v1\0";

/// The length of a record's signature when it has one (ed25519).
pub const SIGNATURE_LEN: usize = 64;

/// The most bridges a record's path can name (its count is one byte).
pub const MAX_BRIDGE_PATH: usize = u8::MAX as usize;

/// What a record says happened. Pinned codes; **a retired code is never reused**.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter, IntoStaticStr)]
#[repr(u8)]
pub enum RecordKind {
    /// A new task: a `SendMessage` from a client.
    Command = 1,
    /// A follow-up message to an existing (input- or auth-required) task.
    Continue = 2,
    /// A client asked to cancel the task.
    CancelRequest = 3,
    /// A worker moved the task to a non-terminal state.
    StatusUpdate = 4,
    /// A worker produced (a chunk of) an artifact.
    ArtifactUpdate = 5,
    /// A worker ended the task: completed, failed, canceled or rejected.
    Terminal = 6,
    /// A worker claims a turn of the task: it runs it under a lease it renews.
    Claim = 7,
    /// A worker answered the client's message with a message instead of a task (fold rule
    /// 15). Format 4 only: an older format's record of this kind is `unknown_kind`.
    Reply = 8,
    /// A client registered (or replaced) a push notification config of the task. Format 4
    /// only, as are the other push kinds.
    PushConfig = 9,
    /// A client deleted a push notification config of the task.
    PushConfigDeleted = 10,
    /// The push sender gave up delivering one update to one config: a dead letter.
    PushDeadLetter = 11,
    /// Where the push sender is with one config whose receiver keeps failing: its
    /// notifications before an update are done, the rest are not (so the partition's
    /// progress need not wait for that config).
    PushProgress = 12,
}

impl RecordKind {
    /// The pinned code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The kind for a code, or `None` if this version does not know it.
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => RecordKind::Command,
            2 => RecordKind::Continue,
            3 => RecordKind::CancelRequest,
            4 => RecordKind::StatusUpdate,
            5 => RecordKind::ArtifactUpdate,
            6 => RecordKind::Terminal,
            7 => RecordKind::Claim,
            8 => RecordKind::Reply,
            9 => RecordKind::PushConfig,
            10 => RecordKind::PushConfigDeleted,
            11 => RecordKind::PushDeadLetter,
            12 => RecordKind::PushProgress,
            _ => return None,
        })
    }
}

/// Who, which task and when: present on every record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordHeader {
    /// The task: the correlation key and the partitioning key.
    pub task_id: String,
    /// The conversation the task belongs to.
    pub context_id: String,
    /// For command and continue, the A2A `messageId`; for other kinds an id chosen by the
    /// producer, unique within the task. Readers drop a repeated id (the log may hold
    /// duplicates: Iggy does not dedupe, and producers retry).
    pub message_id: String,
    /// The agent, bridge or worker that wrote the record.
    pub source: String,
    /// The authenticated caller; empty for anonymous.
    pub principal: String,
    /// The tenant; empty for the default tenant.
    pub tenant: String,
    /// How many bridges the call behind the record went through: the length of
    /// `bridge_hops` for records written by a bridge of format 4 (older records: as written).
    /// Covered by signatures.
    pub hops: u8,
    /// For a claim, the attempt it claims; for a worker's status, artifact and terminal
    /// records, the attempt they were written under (the fold fences out the others). Attempts
    /// count a task's claims from 1; 0 for records written under no claim.
    #[serde(default)]
    pub attempt: u32,
    /// When the work must be done by, in Unix milliseconds; 0 for no deadline.
    pub deadline_ms: u64,
    /// When the record was written, in Unix milliseconds.
    pub timestamp_ms: u64,
    /// The media type of the body's JSON payload. Its parameters may carry the W3C trace
    /// context of the call that wrote the record ([`crate::trace`]); nothing else reads them.
    pub content_type: String,
    /// The id of the key that signed the record (its signature is `signature`); empty for an
    /// unsigned record (and every record of formats 1 to 3).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_id: String,
    /// The bridges the call behind the record went through, in order, the writing bridge
    /// last (loop protection: the hop guard). Empty for worker records and older formats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bridge_hops: Vec<String>,
    /// The ed25519 signature of [`Record::signing_payload`] by `key_id`: empty, or
    /// 64 bytes (`SIGNATURE_LEN`). In JSON, standard base64.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "base64_bytes")]
    pub signature: Vec<u8>,
}

/// Bytes as standard base64 text in JSON.
pub(crate) mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// What happened, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum RecordBody {
    /// A new task; `params` is the `SendMessageRequest` JSON exactly as received.
    Command {
        /// `SendMessageRequest` JSON.
        params: String,
        /// How long the task stays answerable once finished, in milliseconds; 0 = forever
        /// (fold rule 14). Fixed at creation, so every reader expires the task alike.
        #[serde(default)]
        retention_ms: u64,
    },
    /// A follow-up message; `params` is the `SendMessageRequest` JSON exactly as received.
    Continue {
        /// `SendMessageRequest` JSON.
        params: String,
    },
    /// A cancel request; `metadata` is the request's metadata JSON object, or empty.
    CancelRequest {
        /// JSON object or empty.
        metadata: String,
    },
    /// A non-terminal status.
    StatusUpdate {
        /// The state code.
        state: StateCode,
        /// The status `Message` JSON, or empty.
        message: String,
    },
    /// An artifact or a chunk of one.
    ArtifactUpdate {
        /// Append these parts to the artifact with the same id instead of replacing it.
        append: bool,
        /// This is the artifact's last chunk.
        last_chunk: bool,
        /// The `Artifact` JSON.
        artifact: String,
    },
    /// The end of the task.
    Terminal {
        /// The terminal state code.
        state: StateCode,
        /// The final status `Message` JSON, or empty.
        message: String,
    },
    /// A worker's claim on a turn: the attempt (in the header) runs the turn until its lease
    /// runs out, unless renewed. A lease already over when written releases the turn.
    Claim {
        /// The `messageId` of the client message whose turn is claimed.
        turn: String,
        /// Until when the claim holds, Unix milliseconds.
        lease_until_ms: u64,
    },
    /// The agent's answer to the client's message as a message, not a task (fold rule 15).
    Reply {
        /// The answering `Message` JSON.
        message: String,
    },
    /// A push notification config registered for the task (fold rule 16).
    PushConfig {
        /// The `TaskPushNotificationConfig` JSON, with its `id` and `taskId`.
        config: String,
    },
    /// A push notification config of the task deleted (fold rule 16).
    PushConfigDeleted {
        /// The config's id.
        config_id: String,
    },
    /// The push sender gave up on one notification (fold rule 16: it changes nothing).
    PushDeadLetter {
        /// The config the notification was for.
        config_id: String,
        /// The offset, in the task's partition, of the record the notification told of.
        update: u64,
        /// How many times it was sent.
        attempts: u32,
        /// Why the last attempt failed.
        reason: String,
    },
    /// The push sender's progress with one config (fold rule 16: it changes nothing): every
    /// notification of the task's updates before offset `next` is done (delivered or a dead
    /// letter), those from `next` on are not all. A sender taking the partition over resumes
    /// the config at `next`.
    PushProgress {
        /// The config.
        config_id: String,
        /// The offset, in the task's partition, of the first update not done.
        next: u64,
    },
}

impl RecordBody {
    /// The record that sets `state` with `message` (JSON, or empty): a terminal record for a
    /// terminal state, a status update otherwise (what fold rule 4 requires of each).
    pub fn status(state: TaskState, message: String) -> Self {
        if state.is_terminal() {
            RecordBody::Terminal {
                state: state.into(),
                message,
            }
        } else {
            RecordBody::StatusUpdate {
                state: state.into(),
                message,
            }
        }
    }

    /// The kind of this body.
    pub const fn kind(&self) -> RecordKind {
        match self {
            RecordBody::Command { .. } => RecordKind::Command,
            RecordBody::Continue { .. } => RecordKind::Continue,
            RecordBody::CancelRequest { .. } => RecordKind::CancelRequest,
            RecordBody::StatusUpdate { .. } => RecordKind::StatusUpdate,
            RecordBody::ArtifactUpdate { .. } => RecordKind::ArtifactUpdate,
            RecordBody::Terminal { .. } => RecordKind::Terminal,
            RecordBody::Claim { .. } => RecordKind::Claim,
            RecordBody::Reply { .. } => RecordKind::Reply,
            RecordBody::PushConfig { .. } => RecordKind::PushConfig,
            RecordBody::PushConfigDeleted { .. } => RecordKind::PushConfigDeleted,
            RecordBody::PushDeadLetter { .. } => RecordKind::PushDeadLetter,
            RecordBody::PushProgress { .. } => RecordKind::PushProgress,
        }
    }
}

/// One record on the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Who, which task, when.
    #[serde(flatten)]
    pub header: RecordHeader,
    /// What happened.
    #[serde(flatten)]
    pub body: RecordBody,
}

impl Serialize for StateCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(self.0)
    }
}

impl<'de> Deserialize<'de> for StateCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u8::deserialize(deserializer).map(StateCode)
    }
}

/// The encoding: `encode`, `decode`, `signing_payload` (the format table is above).
mod codec;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
