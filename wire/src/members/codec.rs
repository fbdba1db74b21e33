//! The binary encoding of a [`MemberRecord`] (format table: the parent module's documentation).

use super::{MEMBER_FORMAT_VERSION, MEMBER_SIGNING_DOMAIN, MemberBody, MemberKind, MemberRecord};
use crate::WireError;
use crate::bytes::{Reader, put_str16};

/// The length of a signature when there is one (ed25519).
const SIGNATURE_LEN: usize = 64;

impl MemberRecord {
    /// The record's encoding.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::with_capacity(64 + self.member.len() + self.source.len());
        self.encode_parts(&mut out, true)?;
        Ok(out)
    }

    /// What a signature covers: [`MEMBER_SIGNING_DOMAIN`], then the encoding with an empty
    /// signature (its length byte 0): every field, the key id included.
    pub fn signing_payload(&self) -> Result<Vec<u8>, WireError> {
        let mut out = MEMBER_SIGNING_DOMAIN.to_vec();
        self.encode_parts(&mut out, false)?;
        Ok(out)
    }

    fn encode_parts(&self, out: &mut Vec<u8>, with_signature: bool) -> Result<(), WireError> {
        if self.member.is_empty() {
            return Err(invalid("member", "must not be empty".into()));
        }
        if !matches!(self.signature.len(), 0 | SIGNATURE_LEN) {
            return Err(invalid(
                "signature",
                format!(
                    "{} bytes: a signature has {SIGNATURE_LEN}",
                    self.signature.len()
                ),
            ));
        }
        out.push(MEMBER_FORMAT_VERSION);
        out.push(self.body.kind().code());
        out.extend_from_slice(&self.timestamp_ms.to_le_bytes());
        put_str16(out, "member", &self.member)?;
        put_str16(out, "source", &self.source)?;
        put_str16(out, "key_id", &self.key_id)?;
        match &self.body {
            MemberBody::Join { url, lease_ms } => {
                if *lease_ms == 0 {
                    return Err(invalid("lease_ms", "a join's lease must be above 0".into()));
                }
                put_str16(out, "url", url)?;
                out.extend_from_slice(&lease_ms.to_le_bytes());
            }
            MemberBody::Ready { partition, since } => {
                out.extend_from_slice(&partition.to_le_bytes());
                out.extend_from_slice(&since.to_le_bytes());
            }
            MemberBody::Snapshot { after, state } => {
                out.extend_from_slice(&after.to_le_bytes());
                let len = u32::try_from(state.len()).map_err(|_| WireError::FieldTooLong {
                    field: "state",
                    len: state.len(),
                    max: u32::MAX as usize,
                })?;
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(state.as_bytes());
            }
            MemberBody::Heartbeat | MemberBody::Leave | MemberBody::Evict => {}
        }
        if with_signature && !self.signature.is_empty() {
            out.push(SIGNATURE_LEN as u8);
            out.extend_from_slice(&self.signature);
        } else {
            out.push(0);
        }
        Ok(())
    }

    /// Read a record from exactly `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader { bytes, pos: 0 };
        let version = r.u8("version")?;
        if version != MEMBER_FORMAT_VERSION {
            return Err(WireError::UnknownVersion(version));
        }
        let code = r.u8("kind")?;
        let kind = MemberKind::from_code(code).ok_or(WireError::UnknownKind(code))?;
        let timestamp_ms = r.u64("timestamp_ms")?;
        let member = r.str16("member")?;
        if member.is_empty() {
            return Err(invalid("member", "must not be empty".into()));
        }
        let source = r.str16("source")?;
        let key_id = r.str16("key_id")?;
        let body = match kind {
            MemberKind::Join => {
                let url = r.str16("url")?;
                let lease_ms = r.u64("lease_ms")?;
                if lease_ms == 0 {
                    return Err(invalid("lease_ms", "a join's lease must be above 0".into()));
                }
                MemberBody::Join { url, lease_ms }
            }
            MemberKind::Heartbeat => MemberBody::Heartbeat,
            MemberKind::Leave => MemberBody::Leave,
            MemberKind::Evict => MemberBody::Evict,
            MemberKind::Ready => MemberBody::Ready {
                partition: u32::from_le_bytes(r.array("partition")?),
                since: r.u64("move")?,
            },
            MemberKind::Snapshot => MemberBody::Snapshot {
                after: r.u64("after")?,
                state: {
                    let len = u32::from_le_bytes(r.array("state")?);
                    r.text("state", usize::try_from(len).unwrap_or(usize::MAX))?
                },
            },
        };
        let signature_len = usize::from(r.u8("signature")?);
        if !matches!(signature_len, 0 | SIGNATURE_LEN) {
            return Err(invalid(
                "signature",
                format!("length {signature_len}: a signature has {SIGNATURE_LEN}"),
            ));
        }
        let signature = r.take("signature", signature_len)?.to_vec();
        let trailing = bytes.len() - r.pos;
        if trailing > 0 {
            return Err(WireError::TrailingBytes { count: trailing });
        }
        Ok(Self {
            timestamp_ms,
            member,
            source,
            key_id,
            body,
            signature,
        })
    }
}

fn invalid(field: &'static str, reason: String) -> WireError {
    WireError::InvalidField { field, reason }
}
