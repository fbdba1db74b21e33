//! Membership records (`agentlog_wire::members`) under the same keys and trust as task
//! records: a bridge's key signs its joins, heartbeats, leaves, evictions and readiness, and
//! a trust lets in only records signed by a current key allowed them (role `bridge`, or
//! `members` in a key's `kinds`). Their signing payload has its own domain, so a membership
//! signature can never pass for a task record's.

use std::fmt;
use std::sync::atomic::Ordering;

use agentlog_wire::members::MemberRecord;

use super::{RecordSigner, RecordVerifier, Rejection, Trust, encode_error};
use crate::error::Result;

/// The name that allows membership records in a trust file key's `kinds`.
pub(super) const KIND_NAME: &str = "members";

impl RecordSigner {
    /// Sign a membership record in place: its key id, then its signature.
    pub fn sign_member(&self, record: &mut MemberRecord) -> Result<()> {
        record.key_id = self.key.kid().to_owned();
        record.signature.clear();
        let payload = record.signing_payload().map_err(encode_error)?;
        record.signature = self.key.sign(&payload).to_vec();
        Ok(())
    }
}

impl Trust {
    /// Whether a membership record is signed by a current key of this trust allowed
    /// membership records, with a signature that holds (checks in [`Rejection`]'s order).
    pub fn check_member(&self, record: &MemberRecord) -> std::result::Result<(), Rejection> {
        if !record.is_signed() {
            return Err(Rejection::Unsigned);
        }
        let key = self.keys.get(&record.key_id).ok_or(Rejection::UnknownKey)?;
        if key.retired {
            return Err(Rejection::RetiredKey);
        }
        if !key.members {
            return Err(Rejection::KindNotAllowed);
        }
        let payload = record
            .signing_payload()
            .map_err(|_| Rejection::BadSignature)?;
        if key.key.verify(&payload, &record.signature) {
            Ok(())
        } else {
            Err(Rejection::BadSignature)
        }
    }
}

impl RecordVerifier {
    /// Whether to let a membership record (at `offset` of `partition` of `topic`) in: if
    /// not, it is counted under its reason (with the task records' rejections) and a warning
    /// names its position.
    pub fn admit_member(
        &self,
        record: &MemberRecord,
        topic: &dyn fmt::Display,
        partition: u32,
        offset: u64,
    ) -> bool {
        match self.inner.trust.check_member(record) {
            Ok(()) => true,
            Err(reason) => {
                self.inner.rejected[reason.index()].fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    topic = %topic, partition, offset, %reason,
                    key_id = %record.key_id,
                    kind = record.body.kind().name(),
                    member = %record.member,
                    "ignoring a membership record the trust does not allow"
                );
                false
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentlog_wire::members::MemberBody;

    use super::super::Role;
    use super::*;
    use crate::security::SigningKey;

    fn heartbeat() -> MemberRecord {
        MemberRecord::new(1_800_000_000_000, "b0", "b0", MemberBody::Heartbeat)
    }

    #[test]
    fn a_bridge_key_signs_membership_and_nothing_else_passes() {
        let bridge = RecordSigner::new(SigningKey::generate().unwrap());
        let worker = RecordSigner::new(SigningKey::generate().unwrap());
        let stranger = RecordSigner::new(SigningKey::generate().unwrap());
        let trust = Trust::new()
            .with_role(bridge.verifying_key(), Role::Bridge)
            .with_role(worker.verifying_key(), Role::Worker);
        let signed = |signer: &RecordSigner| {
            let mut record = heartbeat();
            signer.sign_member(&mut record).unwrap();
            record
        };
        assert_eq!(trust.check_member(&signed(&bridge)), Ok(()));
        assert_eq!(trust.check_member(&heartbeat()), Err(Rejection::Unsigned));
        assert_eq!(
            trust.check_member(&signed(&stranger)),
            Err(Rejection::UnknownKey)
        );
        assert_eq!(
            trust.check_member(&signed(&worker)),
            Err(Rejection::KindNotAllowed)
        );
        let mut changed = signed(&bridge);
        changed.member = "b1".into();
        assert_eq!(trust.check_member(&changed), Err(Rejection::BadSignature));
        let retired = trust.clone().retire(bridge.key_id());
        assert_eq!(
            retired.check_member(&signed(&bridge)),
            Err(Rejection::RetiredKey)
        );
        // The same key's signature over a task record's bytes is not a membership signature.
        let verifier = RecordVerifier::new(trust);
        assert!(verifier.admit_member(&signed(&bridge), &"t", 0, 0));
        assert!(!verifier.admit_member(&changed, &"t", 0, 1));
        assert_eq!(verifier.rejected_total(), 1);
    }

    #[test]
    fn a_trust_file_allows_membership_by_role_or_by_kind() {
        let keys: Vec<RecordSigner> = (0..3)
            .map(|_| RecordSigner::new(SigningKey::generate().unwrap()))
            .collect();
        let jwk = |s: &RecordSigner| s.verifying_key().to_jwk();
        let text = serde_json::json!({"keys": [
            {"role": "bridge", "jwk": jwk(&keys[0])},
            {"kinds": ["members"], "jwk": jwk(&keys[1])},
            {"kinds": ["command"], "jwk": jwk(&keys[2])},
        ]})
        .to_string();
        let trust = Trust::parse(&text, std::path::Path::new(".")).unwrap();
        let verdicts: Vec<_> = keys
            .iter()
            .map(|k| {
                let mut record = heartbeat();
                k.sign_member(&mut record).unwrap();
                trust.check_member(&record)
            })
            .collect();
        assert_eq!(verdicts, [Ok(()), Ok(()), Err(Rejection::KindNotAllowed)]);
    }
}
