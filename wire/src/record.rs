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

use crate::{StateCode, TaskState, WireError};

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
    /// The media type of the body's JSON payload.
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
    /// [`SIGNATURE_LEN`] bytes. In JSON, standard base64.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "base64_bytes")]
    pub signature: Vec<u8>,
}

/// Bytes as standard base64 text in JSON.
mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
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
/// Version, kind, timestamp, deadline and hops: the same in every format version.
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
        self.encode_parts(out, true)
    }

    /// The encoding, with the signature or (for the signing payload) with an empty one.
    fn encode_parts(&self, out: &mut Vec<u8>, with_signature: bool) -> Result<(), WireError> {
        let h = &self.header;
        if h.task_id.is_empty() {
            return Err(WireError::InvalidField {
                field: "task_id",
                reason: "must not be empty".into(),
            });
        }
        if !matches!(h.signature.len(), 0 | SIGNATURE_LEN) {
            return Err(WireError::InvalidField {
                field: "signature",
                reason: format!(
                    "{} bytes: a signature has {SIGNATURE_LEN}",
                    h.signature.len()
                ),
            });
        }
        let path_len = u8::try_from(h.bridge_hops.len()).map_err(|_| WireError::FieldTooLong {
            field: "bridge_hops",
            len: h.bridge_hops.len(),
            max: MAX_BRIDGE_PATH,
        })?;
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
        put_str16(out, "key_id", &h.key_id)?;
        out.push(path_len);
        for bridge in &h.bridge_hops {
            put_str16(out, "bridge_hops", bridge)?;
        }
        self.encode_body(out)?;
        if with_signature && !h.signature.is_empty() {
            out.push(SIGNATURE_LEN as u8);
            out.extend_from_slice(&h.signature);
        } else {
            out.push(0);
        }
        Ok(())
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
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
        if !matches!(
            version,
            RECORD_FORMAT_VERSION | FORMAT_V3 | FORMAT_V2 | FORMAT_V1
        ) {
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
        let mut header = RecordHeader {
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
            key_id: String::new(),
            bridge_hops: Vec::new(),
            signature: Vec::new(),
        };
        let signed_format = version == RECORD_FORMAT_VERSION;
        if signed_format {
            header.key_id = r.str16("key_id")?;
            let count = r.u8("bridge_hops")?;
            header.bridge_hops = (0..count)
                .map(|_| r.str16("bridge_hops"))
                .collect::<Result<_, _>>()?;
        }
        if header.task_id.is_empty() {
            return Err(WireError::InvalidField {
                field: "task_id",
                reason: "must not be empty".into(),
            });
        }
        let body = match kind {
            RecordKind::Command => {
                let retention_ms = if version >= FORMAT_V3 {
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
        if signed_format {
            let len = r.u8("signature")?;
            if usize::from(len) != SIGNATURE_LEN && len != 0 {
                return Err(WireError::InvalidField {
                    field: "signature",
                    reason: format!("{len} bytes: a signature has {SIGNATURE_LEN}"),
                });
            }
            header.signature = r.take("signature", usize::from(len))?.to_vec();
        }
        let rest = bytes.len() - r.pos;
        if rest != 0 {
            return Err(WireError::TrailingBytes { count: rest });
        }
        Ok(Record { header, body })
    }

    /// The bytes an ed25519 signature over this record covers: [`SIGNING_DOMAIN`] followed by
    /// the record's encoding (format [`RECORD_FORMAT_VERSION`]) with an empty signature. It
    /// covers every field but the signature: `hops`, the key id and the bridge path too.
    pub fn signing_payload(&self) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::with_capacity(SIGNING_DOMAIN.len() + self.encoded_len_hint());
        out.extend_from_slice(SIGNING_DOMAIN);
        self.encode_parts(&mut out, false)?;
        Ok(out)
    }

    /// Whether the record carries a key id and a signature (not whether the signature holds:
    /// that takes the key, outside this crate).
    pub fn is_signed(&self) -> bool {
        !self.header.key_id.is_empty() && self.header.signature.len() == SIGNATURE_LEN
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
            + 2
            + h.key_id.len()
            + 1
            + h.bridge_hops.iter().map(|b| 2 + b.len()).sum::<usize>()
            + 1
            + h.signature.len()
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
mod tests;
