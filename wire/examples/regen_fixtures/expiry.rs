//! The fold scenarios of `fixtures/fold.json` for expiry (rule 14): when a finished task
//! expires, and what a command written before or after that does.

use agentlog_wire::{Record, RecordBody, TaskState};
use serde_json::Value;

use crate::folds::{RETENTION_MS, case, hi_command, rec, status};

/// The command's timestamp.
const T0: u64 = 1_700_000_000_000;

/// A command for task 1 with `message_id` (text `text`), written `at` ms after the first,
/// keeping the task `retention_ms` once finished.
fn command(message_id: &str, text: &str, at: u64, retention_ms: u64) -> Record {
    rec(
        "task-1",
        message_id,
        T0 + at,
        RecordBody::Command {
            params: format!(
                r#"{{"message":{{"messageId":"{message_id}","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}"#
            ),
            retention_ms,
        },
    )
}

fn completed(id: &str, at: u64) -> Record {
    status(id, T0 + at, TaskState::Completed, "")
}

pub(crate) fn expiry() -> Vec<Value> {
    let scenarios: Vec<(&str, Vec<Record>)> = vec![
        (
            "a finished task expires its retention after its terminal status",
            vec![
                hi_command(),
                status("s-1", T0 + 10, TaskState::Working, ""),
                completed("t-1", 20),
            ],
        ),
        (
            "a command written at the expiry starts the task afresh: a new incarnation",
            vec![
                hi_command(),
                completed("t-1", 20),
                command("m-1", "hi again", 20 + RETENTION_MS, RETENTION_MS),
            ],
        ),
        (
            "a new incarnation keeps nothing of the old one, not even its retention",
            vec![
                hi_command(),
                status("s-1", T0 + 10, TaskState::Working, ""),
                rec(
                    "task-1",
                    "a-1",
                    T0 + 15,
                    RecordBody::ArtifactUpdate {
                        append: false,
                        last_chunk: true,
                        artifact: r#"{"artifactId":"out","parts":[{"text":"old"}]}"#.into(),
                    },
                ),
                completed("t-1", 20),
                command("m-1", "hi again", 20 + RETENTION_MS + 5, 0),
                status("s-2", T0 + RETENTION_MS + 30, TaskState::Working, ""),
                completed("t-2", RETENTION_MS + 40),
            ],
        ),
        (
            "a command written one millisecond before the expiry is a duplicate",
            vec![
                hi_command(),
                completed("t-1", 20),
                command("m-1", "hi again", 20 + RETENTION_MS - 1, RETENTION_MS),
            ],
        ),
        (
            "the old incarnation's late records are ignored after the expiry",
            vec![
                hi_command(),
                completed("t-1", 20),
                status("s-9", T0 + 20 + RETENTION_MS, TaskState::Working, ""),
                completed("t-9", 20 + RETENTION_MS + 1),
            ],
        ),
        (
            "an interrupted task never expires",
            vec![
                hi_command(),
                status("s-1", T0 + 10, TaskState::InputRequired, ""),
                command("m-1", "hi again", 10 + 10 * RETENTION_MS, RETENTION_MS),
            ],
        ),
        (
            "a task kept forever (retention 0) never expires",
            vec![
                command("m-1", "hi", 0, 0),
                completed("t-1", 20),
                command("m-1", "hi again", 20 + 1_000 * RETENTION_MS, 0),
            ],
        ),
        (
            "a canceled task expires from its cancel",
            vec![
                hi_command(),
                rec(
                    "task-1",
                    "cancel-1",
                    T0 + 30,
                    RecordBody::CancelRequest {
                        metadata: String::new(),
                    },
                ),
            ],
        ),
    ];
    scenarios
        .into_iter()
        .chain([(
            "rule 8 remembers every client message id and the newest 256 others",
            remembered(),
        )])
        .map(|(description, records)| case(description, records))
        .collect()
}

/// The command, 257 artifact chunks with their own ids, then the first chunk's id again (out
/// of the newest 256: it applies) and the last's (a duplicate), then the command again (a
/// duplicate however far back).
fn remembered() -> Vec<Record> {
    let chunk = |n: usize, ms: u64| {
        rec(
            "task-1",
            &format!("a-{n}"),
            T0 + ms,
            RecordBody::ArtifactUpdate {
                append: true,
                last_chunk: false,
                artifact: format!(r#"{{"artifactId":"out","parts":[{{"text":"{n} "}}]}}"#),
            },
        )
    };
    let mut records = vec![hi_command()];
    records.extend((0..=256).map(|n| chunk(n, 1 + n as u64)));
    records.push(chunk(0, 300));
    records.push(chunk(256, 301));
    records.push(command("m-1", "hi", 302, RETENTION_MS));
    records
}
