//! Deterministic ids: the same request gives the same task on every replica and in every
//! language, which is what makes `SendMessage` idempotent without any stored index.

use sha2::{Digest, Sha256};

/// The task id for a new task: a UUID (version 8, RFC 9562 variant) made of the first 16 bytes
/// of `SHA-256("agentlog/task-id/v1" ‖ tenant ‖ principal ‖ messageId)`, each field prefixed
/// by its length as a u32 little-endian so that no two inputs share an encoding.
///
/// So a retried `SendMessage` (same message id, same caller) names the same task, through
/// any bridge and after any restart, while two callers can never collide on a message id.
pub fn task_id(tenant: &str, principal: &str, message_id: &str) -> String {
    derive("agentlog/task-id/v1", &[tenant, principal, message_id])
}

/// The context id given to a new task whose message names none: derived like [`task_id`] with
/// its own domain tag, so a retry gets the same context too.
pub fn context_id(tenant: &str, principal: &str, message_id: &str) -> String {
    derive("agentlog/context-id/v1", &[tenant, principal, message_id])
}

/// The `message_id` of the `sequence`-th record (from 0) a worker writes under `attempt` for
/// the turn `turn` (the client `messageId` it answers) of task `task_id`:
/// `<attempt_id(task_id, turn, attempt)>.<sequence>`. A record written again (a retried
/// append, a redelivery) carries the same id and the fold drops the copy (fold rule 8), while
/// two attempts never share one.
pub fn record_id(task_id: &str, turn: &str, attempt: u32, sequence: u32) -> String {
    sequenced(&attempt_id(task_id, turn, attempt), sequence)
}

/// What every [`record_id`] of one attempt starts with: derived like [`task_id`] from
/// (task, turn, attempt), so a writer hashes once per attempt and numbers its records after it.
pub fn attempt_id(task_id: &str, turn: &str, attempt: u32) -> String {
    derive(
        "agentlog/attempt-id/v1",
        &[task_id, turn, &attempt.to_string()],
    )
}

/// The [`record_id`] of the `sequence`-th record of the attempt whose [`attempt_id`] is given.
pub fn sequenced(attempt_id: &str, sequence: u32) -> String {
    format!("{attempt_id}.{sequence}")
}

fn derive(domain: &str, fields: &[&str]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(domain.as_bytes());
    for field in fields {
        hasher.update((field.len() as u32).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    let digest = hasher.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80; // version 8: custom
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 9562 variant
    // 8-4-4-4-12 lowercase hex, written straight into one allocation: this runs on every
    // SendMessage.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_stable_uuid_v8() {
        let id = task_id("", "alice", "m-1");
        assert_eq!(id, task_id("", "alice", "m-1"));
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "8");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn fields_cannot_run_into_each_other() {
        assert_ne!(task_id("", "ab", "c"), task_id("", "a", "bc"));
        assert_ne!(task_id("t", "", "m"), task_id("", "t", "m"));
        assert_ne!(task_id("", "a", "m"), context_id("", "a", "m"));
        assert_ne!(record_id("t", "m", 1, 0), record_id("t", "m", 2, 0));
        assert_ne!(record_id("t", "m", 1, 0), record_id("t", "m", 1, 1));
        assert_ne!(record_id("t", "m", 1, 12), record_id("t", "m", 11, 2));
        assert_eq!(record_id("t", "m", 1, 0), record_id("t", "m", 1, 0));
    }
}
