//! The fold scenarios of `fixtures/fold.json` for claims, fencing and follow-ups (rules 10 to
//! 13): takeovers, stale attempts' late records, renewals and releases, turns.

use agentlog_wire::{Record, RecordBody, TaskState};
use serde_json::Value;

use crate::folds::{case, hi_command, rec, status};

/// Milliseconds after the command's timestamp.
const T0: u64 = 1_700_000_000_000;

/// `record` as written by `worker` under `attempt`.
pub(crate) fn by(worker: &str, attempt: u32, mut record: Record) -> Record {
    record.header.source = worker.into();
    record.header.attempt = attempt;
    record
}

/// `worker`'s claim of `turn` under `attempt`, written at `at`, leased until `until` (both
/// in milliseconds after the command).
pub(crate) fn claim(worker: &str, attempt: u32, turn: &str, at: u64, until: u64) -> Record {
    by(
        worker,
        attempt,
        rec(
            "task-1",
            &format!("claim-{worker}-{attempt}-{at}"),
            T0 + at,
            RecordBody::Claim {
                turn: turn.into(),
                lease_until_ms: T0 + until,
            },
        ),
    )
}

fn working(worker: &str, attempt: u32, id: &str, at: u64) -> Record {
    by(worker, attempt, status(id, T0 + at, TaskState::Working, ""))
}

fn completed(worker: &str, attempt: u32, id: &str, at: u64) -> Record {
    by(
        worker,
        attempt,
        status(id, T0 + at, TaskState::Completed, ""),
    )
}

fn asks(worker: &str, attempt: u32, id: &str, at: u64) -> Record {
    let message =
        format!(r#"{{"messageId":"{id}","role":"ROLE_AGENT","parts":[{{"text":"which city?"}}]}}"#);
    by(
        worker,
        attempt,
        status(id, T0 + at, TaskState::InputRequired, &message),
    )
}

pub(crate) fn chunk(worker: &str, attempt: u32, id: &str, at: u64, text: &str) -> Record {
    artifact(worker, attempt, id, at, text, true)
}

/// An artifact update; `append: false` starts the artifact over.
fn artifact(worker: &str, attempt: u32, id: &str, at: u64, text: &str, append: bool) -> Record {
    by(
        worker,
        attempt,
        rec(
            "task-1",
            id,
            T0 + at,
            RecordBody::ArtifactUpdate {
                append,
                last_chunk: false,
                artifact: format!(
                    r#"{{"artifactId":"out","name":"echo","parts":[{{"text":"{text}"}}]}}"#
                ),
            },
        ),
    )
}

fn follow_up(id: &str, at: u64) -> Record {
    rec(
        "task-1",
        id,
        T0 + at,
        RecordBody::Continue {
            params: format!(
                r#"{{"message":{{"messageId":"{id}","taskId":"task-1","role":"ROLE_USER","parts":[{{"text":"and paris"}}]}}}}"#
            ),
        },
    )
}

pub(crate) fn claims() -> Vec<Value> {
    let command = hi_command;
    let scenarios: Vec<(&str, Vec<Record>)> = vec![
        (
            "claims: a worker's claim starts the turn (working); it streams and completes",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 10_010),
                chunk("w1", 1, "a-1", 20, "echo: "),
                chunk("w1", 1, "a-2", 30, "hi"),
                completed("w1", 1, "t-1", 40),
            ],
        ),
        (
            "claims: a second claim of the same attempt is fenced, and so is what its writer writes",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 10_010),
                claim("w2", 1, "m-1", 11, 10_011),
                working("w2", 1, "s-2", 12),
                working("w1", 1, "s-1", 13),
                chunk("w2", 1, "a-2", 14, "from w2"),
                completed("w1", 1, "t-1", 20),
            ],
        ),
        (
            "claims: records under no claim are fenced once the task has a claim",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 10_010),
                working("", 0, "s-0", 11),
                chunk("w1", 0, "a-0", 12, "attempt 0"),
                working("w1", 1, "s-1", 13),
            ],
        ),
        (
            "claims: a takeover before the lease ends is fenced",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                claim("w2", 2, "m-1", 4_999, 10_000),
                working("w2", 2, "s-2", 5_001),
            ],
        ),
        (
            "claims: a takeover at the lease's end applies and the next attempt holds the turn",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                claim("w2", 2, "m-1", 5_000, 10_000),
                chunk("w2", 2, "a-1", 5_010, "echo: hi"),
                completed("w2", 2, "t-1", 5_020),
            ],
        ),
        (
            "claims: a stale attempt's late artifact is fenced after a takeover, whose first write starts the artifact over",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                chunk("w1", 1, "a-1", 20, "ec"),
                claim("w2", 2, "m-1", 6_000, 11_000),
                chunk("w1", 1, "a-2", 6_001, "ho (late)"),
                artifact("w2", 2, "a-3", 6_002, "echo: ", false),
                chunk("w2", 2, "a-4", 6_003, "hi"),
            ],
        ),
        (
            "claims: a late terminal from a fenced-out attempt is ignored and the holder's completes",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                claim("w2", 2, "m-1", 6_000, 11_000),
                by("w1", 1, status("t-1", T0 + 6_001, TaskState::Failed, "")),
                completed("w2", 2, "t-2", 6_002),
            ],
        ),
        (
            "claims: a renewal extends the lease, so a takeover before its new end is fenced",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                claim("w1", 1, "m-1", 3_000, 8_000),
                claim("w2", 2, "m-1", 6_000, 11_000),
                chunk("w1", 1, "a-1", 6_001, "still mine"),
            ],
        ),
        (
            "claims: only the holder renews",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                claim("w2", 1, "m-1", 3_000, 90_000),
                claim("w3", 2, "m-1", 5_000, 10_000),
                working("w3", 2, "s-1", 5_001),
            ],
        ),
        (
            "claims: a renewal whose lease is already over releases the turn for a takeover at once",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                claim("w1", 1, "m-1", 100, 100),
                claim("w2", 2, "m-1", 101, 5_101),
                completed("w2", 2, "t-1", 102),
            ],
        ),
        (
            "claims: a takeover must take exactly the next attempt number",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                claim("w2", 3, "m-1", 6_000, 11_000),
                claim("w2", 1, "m-1", 6_001, 11_001),
                claim("w2", 2, "m-1", 6_002, 11_002),
                working("w2", 2, "s-1", 6_003),
            ],
        ),
        (
            "claims: the first claim of a turn must be the task's next attempt",
            vec![
                command(),
                claim("w1", 2, "m-1", 10, 5_000),
                claim("w1", 0, "m-1", 11, 5_000),
                claim("w1", 1, "m-1", 12, 5_000),
                working("w1", 1, "s-1", 13),
            ],
        ),
        (
            "claims: asking for input ends the turn; claims and the old attempt's records are fenced until a continue",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                asks("w1", 1, "s-2", 20),
                claim("w1", 1, "m-1", 21, 5_021),
                chunk("w1", 1, "a-1", 22, "late"),
                follow_up("m-2", 30),
                claim("w2", 1, "m-2", 31, 5_031),
                claim("w2", 2, "m-2", 32, 5_032),
                working("w2", 2, "s-3", 33),
                completed("w2", 2, "t-1", 40),
            ],
        ),
        (
            "claims: a task that never had a claim takes records of attempt 0 only",
            vec![
                command(),
                working("", 0, "s-1", 10),
                chunk("w1", 4, "a-1", 11, "under a claim nobody made"),
                chunk("", 0, "a-2", 12, "legacy"),
                completed("", 0, "t-1", 13),
            ],
        ),
        (
            "claims: a claim of a turn the task does not wait on is fenced",
            vec![
                command(),
                claim("w1", 1, "m-9", 10, 5_000),
                claim("w1", 1, "m-1", 11, 5_000),
                working("w1", 1, "s-1", 12),
            ],
        ),
        (
            "claims: a claim before the command is an orphan, after the terminal it is ignored",
            vec![
                claim("w1", 1, "m-1", 0, 5_000),
                command(),
                rec(
                    "task-1",
                    "cancel-1",
                    T0 + 10,
                    RecordBody::CancelRequest {
                        metadata: String::new(),
                    },
                ),
                claim("w1", 1, "m-1", 11, 5_000),
                completed("w1", 1, "t-1", 12),
            ],
        ),
        (
            "claims: a redelivered claim and a redelivered worker record are duplicates",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                claim("w1", 1, "m-1", 10, 5_000),
                chunk("w1", 1, "a-1", 11, "once"),
                chunk("w1", 1, "a-1", 11, "once"),
            ],
        ),
        (
            "follow-ups: a message to a working task joins the history and waits behind the turn",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                follow_up("m-2", 20),
                chunk("w1", 1, "a-1", 21, "echo: hi"),
            ],
        ),
        (
            "follow-ups: the holder takes the first waiting follow-up; the turn answers it",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                follow_up("m-2", 20),
                follow_up("m-3", 21),
                claim("w2", 1, "m-2", 22, 5_000),
                claim("w1", 1, "m-3", 23, 5_000),
                claim("w1", 1, "m-2", 24, 5_024),
                chunk("w1", 1, "a-1", 25, "echo: and paris"),
                completed("w1", 1, "t-1", 30),
            ],
        ),
        (
            "follow-ups: a turn that asks for input while a follow-up waits goes on to it",
            vec![
                command(),
                claim("w1", 1, "m-1", 10, 5_000),
                working("w1", 1, "s-1", 11),
                follow_up("m-2", 20),
                asks("w1", 1, "s-2", 21),
                chunk("w1", 1, "a-1", 22, "late, fenced"),
                claim("w2", 2, "m-2", 23, 5_023),
                working("w2", 2, "s-3", 24),
            ],
        ),
    ];
    scenarios
        .into_iter()
        .map(|(description, records)| case(description, records))
        .collect()
}
