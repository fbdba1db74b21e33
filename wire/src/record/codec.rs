//! The binary encoding of a [`Record`] (format table: the parent module's documentation).

use super::{
    FORMAT_V1, FORMAT_V2, FORMAT_V3, MAX_BRIDGE_PATH, RECORD_FORMAT_VERSION, Record, RecordBody,
    RecordHeader, RecordKind, SIGNATURE_LEN, SIGNING_DOMAIN,
};
use crate::bytes::{Reader, put_str16, put_str32};
use crate::{StateCode, WireError};

pub(super) const ARTIFACT_APPEND: u8 = 0b01;
pub(super) const ARTIFACT_LAST_CHUNK: u8 = 0b10;
/// Version, kind, timestamp, deadline and hops: the same in every format version.
pub(super) const HOPS_AT: usize = 1 + 1 + 8 + 8;
pub(super) const FIXED_HEADER_LEN: usize = HOPS_AT + 1 + 4;

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
            RecordBody::Reply { message } => put_str32(out, "message", message),
            RecordBody::PushConfig { config } => put_str32(out, "config", config),
            RecordBody::PushConfigDeleted { config_id } => put_str16(out, "config_id", config_id),
            RecordBody::PushDeadLetter {
                config_id,
                update,
                attempts,
                reason,
            } => {
                put_str16(out, "config_id", config_id)?;
                out.extend_from_slice(&update.to_le_bytes());
                out.extend_from_slice(&attempts.to_le_bytes());
                put_str32(out, "reason", reason)
            }
            RecordBody::PushProgress { config_id, next } => {
                put_str16(out, "config_id", config_id)?;
                out.extend_from_slice(&next.to_le_bytes());
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
        let kind = kind_in(version, kind_code).ok_or(WireError::UnknownKind(kind_code))?;
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
            RecordKind::Reply => RecordBody::Reply {
                message: r.str32("message")?,
            },
            RecordKind::PushConfig => RecordBody::PushConfig {
                config: r.str32("config")?,
            },
            RecordKind::PushConfigDeleted => RecordBody::PushConfigDeleted {
                config_id: r.str16("config_id")?,
            },
            RecordKind::PushDeadLetter => RecordBody::PushDeadLetter {
                config_id: r.str16("config_id")?,
                update: r.u64("update")?,
                attempts: u32::from_le_bytes(r.array("attempts")?),
                reason: r.str32("reason")?,
            },
            RecordKind::PushProgress => RecordBody::PushProgress {
                config_id: r.str16("config_id")?,
                next: r.u64("next")?,
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

    /// The kind and task id of an encoded record, read without decoding the rest: what a
    /// reader that passes over most records looks at first. `None` where [`decode`](Self::decode)
    /// fails before the task id (an unknown version or kind, a cut header) or on the task id
    /// itself; whether the rest decodes is not checked.
    pub fn peek(bytes: &[u8]) -> Option<(RecordKind, &str)> {
        let version = *bytes.first()?;
        let kind = kind_in(version, *bytes.get(1)?)?;
        let at = if version == FORMAT_V1 {
            HOPS_AT + 1
        } else {
            FIXED_HEADER_LEN
        };
        let mut r = Reader {
            bytes: bytes.get(at..)?,
            pos: 0,
        };
        let len = u16::from_le_bytes(r.array("task_id").ok()?);
        let task_id = std::str::from_utf8(r.take("task_id", usize::from(len)).ok()?).ok()?;
        (!task_id.is_empty()).then_some((kind, task_id))
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
            RecordBody::Reply { message } => message.len(),
            RecordBody::PushConfig { config } => config.len(),
            // a hint: the str32 prefix counted below covers the id's str16 one
            RecordBody::PushConfigDeleted { config_id } => config_id.len(),
            RecordBody::PushDeadLetter {
                config_id, reason, ..
            } => 2 + config_id.len() + 8 + 4 + reason.len(),
            RecordBody::PushProgress { config_id, .. } => 2 + config_id.len() + 8,
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

/// The kind of `code` in format `version`, if that version has it.
fn kind_in(version: u8, code: u8) -> Option<RecordKind> {
    if !matches!(
        version,
        RECORD_FORMAT_VERSION | FORMAT_V3 | FORMAT_V2 | FORMAT_V1
    ) {
        return None;
    }
    RecordKind::from_code(code).filter(|kind| match kind {
        RecordKind::Claim => version != FORMAT_V1,
        RecordKind::Reply
        | RecordKind::PushConfig
        | RecordKind::PushConfigDeleted
        | RecordKind::PushDeadLetter
        | RecordKind::PushProgress => version == RECORD_FORMAT_VERSION,
        _ => true,
    })
}
