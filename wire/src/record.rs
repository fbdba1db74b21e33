//! The log record: the unit written on a topic, and its binary encoding.
//!
//! A record is a [`RecordHeader`] (who, which task, when) and a [`RecordBody`] (what happened).
//! JSON payloads (A2A params, messages, artifacts) travel as the exact text they arrived as, so
//! a `SendMessage`'s params are carried byte-identical from the bridge to the worker.
//!
//! # Encoding, format version 3
//!
//! All integers little-endian. `str16` = u16 length + UTF-8 bytes, `str32` = u32 length + UTF-8.
//!
//! | field | type |
//! | --- | --- |
//! | format version | u8, = 3 |
//! | kind | u8, [`RecordKind`] code |
//! | timestamp | u64, milliseconds since the Unix epoch |
//! | deadline | u64, milliseconds since the Unix epoch, 0 = none |
//! | hops | u8, how many bridges relayed it |
//! | attempt | u32, the claim the record was written under (0 = none) |
//! | task id, context id, message id, source, principal, tenant, content type | 7 × str16 |
//! | body | per kind, below |
//!
//! | kind | body |
//! | --- | --- |
//! | command | retention: u64 (ms a finished task is kept, 0 = forever), params: str32 (a `SendMessageRequest` as JSON) |
//! | continue | params: str32 (a `SendMessageRequest` as JSON) |
//! | cancel request | metadata: str32 (a JSON object, or empty) |
//! | status update, terminal | state: u8 code, message: str32 (a `Message` as JSON, or empty) |
//! | artifact update | flags: u8 (bit 0 append, bit 1 lastChunk, others 0), artifact: str32 (an `Artifact` as JSON) |
//! | claim | turn: str16 (the client `messageId` claimed), lease deadline: u64 (Unix ms) |
//!
//! Format version 2 is the same without a command's `retention`; version 1 is version 2 without
//! `attempt` (and without claims). Both are still read, a command as retention 0 (kept forever)
//! and a version-1 record as attempt 0, so a log written by an older release stays readable.
//! They re-encode as version 3.
//!
//! The decoder rejects an unknown version or kind, truncation, bad UTF-8, unknown flag bits, an
//! empty task id and trailing bytes, each with its own [`WireError`]. Unknown *state* codes are
//! kept as they are ([`StateCode`]) so a record re-encodes to the same bytes.

use serde::{Deserialize, Serialize};
use strum::{EnumIter, IntoStaticStr};

use crate::{StateCode, TaskState, WireError};

/// The record format version this crate writes. It reads this one, version 2 (commands from
/// before retention, read as kept forever) and version 1 (records from before claims, read
/// with attempt 0).
pub const RECORD_FORMAT_VERSION: u8 = 3;

/// The format version before retention: commands carry no `retention`.
const FORMAT_V2: u8 = 2;

/// The format version before claims: no `attempt` field, no claim records.
const FORMAT_V1: u8 = 1;

/// The prefix of every [`Record::signing_payload`], so a signature over a record can never be
/// confused with a signature over anything else.
pub const SIGNING_DOMAIN: &[u8] = b"agentlog/record-signature/v1\0";

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
    /// How many bridges relayed the record (loop protection). Not covered by signatures.
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
    /// The media type of the body's JSON payload.
    pub content_type: String,
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

const ARTIFACT_APPEND: u8 = 0b01;
const ARTIFACT_LAST_CHUNK: u8 = 0b10;
/// Version, kind, timestamp, deadline and hops: the same in both format versions.
const HOPS_AT: usize = 1 + 1 + 8 + 8;
const FIXED_HEADER_LEN: usize = HOPS_AT + 1 + 4;

impl Record {
    /// The record's encoding in the current format version.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        self.encode_into(&mut out)?;
        Ok(out)
    }

    /// Append the record's encoding to `out`. On error `out` may hold a partial record.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let h = &self.header;
        if h.task_id.is_empty() {
            return Err(WireError::InvalidField {
                field: "task_id",
                reason: "must not be empty".into(),
            });
        }
        out.push(RECORD_FORMAT_VERSION);
        out.push(self.body.kind().code());
        out.extend_from_slice(&h.timestamp_ms.to_le_bytes());
        out.extend_from_slice(&h.deadline_ms.to_le_bytes());
        out.push(h.hops);
        out.extend_from_slice(&h.attempt.to_le_bytes());
        put_str16(out, "task_id", &h.task_id)?;
        put_str16(out, "context_id", &h.context_id)?;
        put_str16(out, "message_id", &h.message_id)?;
        put_str16(out, "source", &h.source)?;
        put_str16(out, "principal", &h.principal)?;
        put_str16(out, "tenant", &h.tenant)?;
        put_str16(out, "content_type", &h.content_type)?;
        match &self.body {
            RecordBody::Command {
                params,
                retention_ms,
            } => {
                out.extend_from_slice(&retention_ms.to_le_bytes());
                put_str32(out, "params", params)
            }
            RecordBody::Continue { params } => put_str32(out, "params", params),
            RecordBody::CancelRequest { metadata } => put_str32(out, "metadata", metadata),
            RecordBody::StatusUpdate { state, message }
            | RecordBody::Terminal { state, message } => {
                out.push(state.0);
                put_str32(out, "message", message)
            }
            RecordBody::ArtifactUpdate {
                append,
                last_chunk,
                artifact,
            } => {
                let mut flags = 0;
                if *append {
                    flags |= ARTIFACT_APPEND;
                }
                if *last_chunk {
                    flags |= ARTIFACT_LAST_CHUNK;
                }
                out.push(flags);
                put_str32(out, "artifact", artifact)
            }
            RecordBody::Claim {
                turn,
                lease_until_ms,
            } => {
                put_str16(out, "turn", turn)?;
                out.extend_from_slice(&lease_until_ms.to_le_bytes());
                Ok(())
            }
        }
    }

    /// Decode one record that fills `bytes` exactly.
    pub fn decode(bytes: &[u8]) -> Result<Record, WireError> {
        let mut r = Reader { bytes, pos: 0 };
        let version = r.u8("version")?;
        if !matches!(version, RECORD_FORMAT_VERSION | FORMAT_V2 | FORMAT_V1) {
            return Err(WireError::UnknownVersion(version));
        }
        let kind_code = r.u8("kind")?;
        let kind = RecordKind::from_code(kind_code)
            .filter(|kind| version != FORMAT_V1 || *kind != RecordKind::Claim)
            .ok_or(WireError::UnknownKind(kind_code))?;
        let timestamp_ms = r.u64("timestamp")?;
        let deadline_ms = r.u64("deadline")?;
        let hops = r.u8("hops")?;
        let attempt = if version == FORMAT_V1 {
            0
        } else {
            u32::from_le_bytes(r.array("attempt")?)
        };
        let header = RecordHeader {
            task_id: r.str16("task_id")?,
            context_id: r.str16("context_id")?,
            message_id: r.str16("message_id")?,
            source: r.str16("source")?,
            principal: r.str16("principal")?,
            tenant: r.str16("tenant")?,
            hops,
            attempt,
            deadline_ms,
            timestamp_ms,
            content_type: r.str16("content_type")?,
        };
        if header.task_id.is_empty() {
            return Err(WireError::InvalidField {
                field: "task_id",
                reason: "must not be empty".into(),
            });
        }
        let body = match kind {
            RecordKind::Command => {
                let retention_ms = if version == RECORD_FORMAT_VERSION {
                    r.u64("retention")?
                } else {
                    0
                };
                RecordBody::Command {
                    params: r.str32("params")?,
                    retention_ms,
                }
            }
            RecordKind::Continue => RecordBody::Continue {
                params: r.str32("params")?,
            },
            RecordKind::CancelRequest => RecordBody::CancelRequest {
                metadata: r.str32("metadata")?,
            },
            RecordKind::StatusUpdate => RecordBody::StatusUpdate {
                state: StateCode(r.u8("state")?),
                message: r.str32("message")?,
            },
            RecordKind::Terminal => RecordBody::Terminal {
                state: StateCode(r.u8("state")?),
                message: r.str32("message")?,
            },
            RecordKind::ArtifactUpdate => {
                let flags = r.u8("flags")?;
                if flags & !(ARTIFACT_APPEND | ARTIFACT_LAST_CHUNK) != 0 {
                    return Err(WireError::InvalidField {
                        field: "flags",
                        reason: format!("unknown flag bits in {flags:#04x}"),
                    });
                }
                RecordBody::ArtifactUpdate {
                    append: flags & ARTIFACT_APPEND != 0,
                    last_chunk: flags & ARTIFACT_LAST_CHUNK != 0,
                    artifact: r.str32("artifact")?,
                }
            }
            RecordKind::Claim => RecordBody::Claim {
                turn: r.str16("turn")?,
                lease_until_ms: r.u64("lease_until")?,
            },
        };
        let rest = bytes.len() - r.pos;
        if rest != 0 {
            return Err(WireError::TrailingBytes { count: rest });
        }
        Ok(Record { header, body })
    }

    /// The bytes an ed25519 signature over this record covers: [`SIGNING_DOMAIN`] followed by
    /// the record's encoding with `hops` set to 0 (relays change `hops`; nothing else).
    pub fn signing_payload(&self) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::with_capacity(SIGNING_DOMAIN.len() + self.encoded_len_hint());
        out.extend_from_slice(SIGNING_DOMAIN);
        let start = out.len();
        self.encode_into(&mut out)?;
        // The hops byte sits right after version, kind, timestamp and deadline.
        out[start + HOPS_AT] = 0;
        Ok(out)
    }

    fn encoded_len_hint(&self) -> usize {
        let h = &self.header;
        let body = match &self.body {
            RecordBody::Command { params, .. } => 8 + params.len(),
            RecordBody::Continue { params } => params.len(),
            RecordBody::CancelRequest { metadata } => metadata.len(),
            RecordBody::StatusUpdate { message, .. } | RecordBody::Terminal { message, .. } => {
                1 + message.len()
            }
            RecordBody::ArtifactUpdate { artifact, .. } => 1 + artifact.len(),
            // turn (str16) and lease (u64), less the str32 prefix counted below
            RecordBody::Claim { turn, .. } => 2 + turn.len() + 8 - 4,
        };
        FIXED_HEADER_LEN
            + 7 * 2
            + h.task_id.len()
            + h.context_id.len()
            + h.message_id.len()
            + h.source.len()
            + h.principal.len()
            + h.tenant.len()
            + h.content_type.len()
            + 4
            + body
    }
}

fn put_str16(out: &mut Vec<u8>, field: &'static str, s: &str) -> Result<(), WireError> {
    let len = u16::try_from(s.len()).map_err(|_| WireError::FieldTooLong {
        field,
        len: s.len(),
        max: u16::MAX as usize,
    })?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_str32(out: &mut Vec<u8>, field: &'static str, s: &str) -> Result<(), WireError> {
    let len = u32::try_from(s.len()).map_err(|_| WireError::FieldTooLong {
        field,
        len: s.len(),
        max: u32::MAX as usize,
    })?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], WireError> {
        let available = self.bytes.len() - self.pos;
        if available < n {
            return Err(WireError::Truncated {
                field,
                at: self.pos,
                needed: n - available,
            });
        }
        let slice = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], WireError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(field, N)?);
        Ok(out)
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(field)?[0])
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    fn text(&mut self, field: &'static str, len: usize) -> Result<String, WireError> {
        let bytes = self.take(field, len)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| WireError::InvalidUtf8 { field })
    }

    fn str16(&mut self, field: &'static str) -> Result<String, WireError> {
        let len = u16::from_le_bytes(self.array(field)?);
        self.text(field, usize::from(len))
    }

    fn str32(&mut self, field: &'static str) -> Result<String, WireError> {
        let len = u32::from_le_bytes(self.array(field)?);
        let len = usize::try_from(len).map_err(|_| WireError::FieldTooLong {
            field,
            len: usize::MAX,
            max: usize::MAX,
        })?;
        self.text(field, len)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    fn header() -> RecordHeader {
        RecordHeader {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            message_id: "m-1".into(),
            source: "bridge-a".into(),
            principal: "alice".into(),
            tenant: "acme".into(),
            hops: 1,
            attempt: 3,
            deadline_ms: 0,
            timestamp_ms: 1_700_000_000_000,
            content_type: "application/json".into(),
        }
    }

    fn every_body() -> Vec<RecordBody> {
        vec![
            RecordBody::Command {
                params:
                    r#"{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#
                        .into(),
                retention_ms: 604_800_000,
            },
            RecordBody::Continue {
                params: r#"{ "message" : {"messageId":"m-2"} }"#.into(),
            },
            RecordBody::CancelRequest {
                metadata: String::new(),
            },
            RecordBody::StatusUpdate {
                state: StateCode(2),
                message: String::new(),
            },
            RecordBody::ArtifactUpdate {
                append: true,
                last_chunk: false,
                artifact: r#"{"artifactId":"a","parts":[{"text":"x"}]}"#.into(),
            },
            RecordBody::Terminal {
                state: StateCode(3),
                message: String::new(),
            },
            RecordBody::Claim {
                turn: "m-1".into(),
                lease_until_ms: 1_700_000_010_000,
            },
        ]
    }

    #[test]
    fn a_status_body_is_terminal_exactly_for_terminal_states() {
        use strum::IntoEnumIterator;
        for state in TaskState::iter() {
            let body = RecordBody::status(state, String::new());
            let expected = if state.is_terminal() {
                RecordKind::Terminal
            } else {
                RecordKind::StatusUpdate
            };
            assert_eq!(body.kind(), expected, "{state:?}");
        }
    }

    #[test]
    fn pins_every_kind_code() {
        let pinned = [
            (RecordKind::Command, 1),
            (RecordKind::Continue, 2),
            (RecordKind::CancelRequest, 3),
            (RecordKind::StatusUpdate, 4),
            (RecordKind::ArtifactUpdate, 5),
            (RecordKind::Terminal, 6),
            (RecordKind::Claim, 7),
        ];
        assert_eq!(pinned.len(), RecordKind::iter().count());
        for (kind, code) in pinned {
            assert_eq!(kind.code(), code);
            assert_eq!(RecordKind::from_code(code), Some(kind));
        }
        for code in (0..=u8::MAX).filter(|c| !(1..=7).contains(c)) {
            assert_eq!(RecordKind::from_code(code), None);
        }
    }

    #[test]
    fn every_kind_round_trips_byte_identical() {
        for body in every_body() {
            let record = Record {
                header: header(),
                body,
            };
            let bytes = record.encode().unwrap();
            let decoded = Record::decode(&bytes).unwrap();
            assert_eq!(decoded, record);
            assert_eq!(decoded.encode().unwrap(), bytes);
        }
    }

    #[test]
    fn every_truncation_is_rejected() {
        for body in every_body() {
            let bytes = Record {
                header: header(),
                body,
            }
            .encode()
            .unwrap();
            for len in 0..bytes.len() {
                let err = Record::decode(&bytes[..len]).unwrap_err();
                assert!(
                    matches!(err, WireError::Truncated { .. }),
                    "len {len}: {err}"
                );
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(
                Record::decode(&longer),
                Err(WireError::TrailingBytes { count: 1 })
            );
        }
    }

    #[test]
    fn unknown_version_kind_and_flags_are_rejected() {
        let bytes = Record {
            header: header(),
            body: every_body().remove(4),
        }
        .encode()
        .unwrap();
        let mut v4 = bytes.clone();
        v4[0] = 4;
        assert_eq!(Record::decode(&v4), Err(WireError::UnknownVersion(4)));
        let mut kind = bytes.clone();
        kind[1] = 0;
        assert_eq!(Record::decode(&kind), Err(WireError::UnknownKind(0)));
        let flags_at = bytes.len() - 4 - r#"{"artifactId":"a","parts":[{"text":"x"}]}"#.len() - 1;
        let mut flags = bytes.clone();
        flags[flags_at] = 0b100;
        assert_eq!(Record::decode(&flags).unwrap_err().kind(), "invalid_field");
    }

    #[test]
    fn unknown_state_codes_survive_a_round_trip() {
        let record = Record {
            header: header(),
            body: RecordBody::StatusUpdate {
                state: StateCode(200),
                message: String::new(),
            },
        };
        let bytes = record.encode().unwrap();
        assert_eq!(Record::decode(&bytes).unwrap().encode().unwrap(), bytes);
    }

    /// The same record in format version 2: no retention in a command.
    fn v2_bytes(record: &Record) -> Vec<u8> {
        let mut bytes = record.encode().unwrap();
        bytes[0] = FORMAT_V2;
        if let RecordBody::Command { params, .. } = &record.body {
            let at = bytes.len() - params.len() - 4 - 8;
            bytes.drain(at..at + 8);
        }
        bytes
    }

    #[test]
    fn format_2_commands_read_as_kept_forever() {
        for body in every_body() {
            let mut record = Record {
                header: header(),
                body,
            };
            let v2 = v2_bytes(&record);
            if let RecordBody::Command { retention_ms, .. } = &mut record.body {
                *retention_ms = 0;
            }
            assert_eq!(Record::decode(&v2).unwrap(), record);
            for len in 0..v2.len() {
                assert!(Record::decode(&v2[..len]).is_err(), "len {len}");
            }
        }
    }

    /// The same record in format version 1: no attempt field (and no retention).
    fn v1_bytes(record: &Record) -> Vec<u8> {
        let v2 = v2_bytes(record);
        let mut v1 = Vec::with_capacity(v2.len() - 4);
        v1.push(FORMAT_V1);
        v1.extend_from_slice(&v2[1..FIXED_HEADER_LEN - 4]);
        v1.extend_from_slice(&v2[FIXED_HEADER_LEN..]);
        v1
    }

    #[test]
    fn format_1_records_read_as_attempt_0_and_claims_did_not_exist_then() {
        for body in every_body() {
            let mut record = Record {
                header: header(),
                body,
            };
            record.header.attempt = 0;
            let v1 = v1_bytes(&record);
            if let RecordBody::Command { retention_ms, .. } = &mut record.body {
                *retention_ms = 0;
            }
            if record.body.kind() == RecordKind::Claim {
                assert_eq!(Record::decode(&v1), Err(WireError::UnknownKind(7)));
                continue;
            }
            assert_eq!(Record::decode(&v1).unwrap(), record);
            for len in 0..v1.len() {
                assert!(Record::decode(&v1[..len]).is_err(), "len {len}");
            }
        }
    }

    #[test]
    fn signing_payload_ignores_hops_only() {
        let mut record = Record {
            header: header(),
            body: every_body().remove(0),
        };
        let signed = record.signing_payload().unwrap();
        assert!(signed.starts_with(SIGNING_DOMAIN));
        record.header.hops = 7;
        assert_eq!(record.signing_payload().unwrap(), signed);
        record.header.principal = "mallory".into();
        assert_ne!(record.signing_payload().unwrap(), signed);
        record.header.principal = "alice".into();
        record.header.attempt += 1;
        assert_ne!(record.signing_payload().unwrap(), signed);
    }

    #[test]
    fn empty_task_id_is_rejected_both_ways() {
        let mut record = Record {
            header: header(),
            body: every_body().remove(3),
        };
        record.header.task_id.clear();
        assert_eq!(record.encode().unwrap_err().kind(), "invalid_field");
    }
}
