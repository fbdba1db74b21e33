//! The fold scenarios of `fixtures/fold.json` before claims: the rules 1 to 9 and 12.

use agentlog_wire::fold::fold;
use agentlog_wire::{Record, RecordBody, StateCode, TaskState};
use serde_json::{Value, json};

use crate::{SEND_HI, header, ok};

pub(crate) fn rec(task: &str, message_id: &str, ms: u64, body: RecordBody) -> Record {
    Record {
        header: header(task, message_id, ms),
        body,
    }
}

pub(crate) fn status(id: &str, ms: u64, state: TaskState, message: &str) -> Record {
    let body = if state.is_terminal() {
        RecordBody::Terminal {
            state: state.into(),
            message: message.into(),
        }
    } else {
        RecordBody::StatusUpdate {
            state: state.into(),
            message: message.into(),
        }
    };
    rec("task-1", id, ms, body)
}

/// The retention of the scenarios' commands: one minute.
pub(crate) const RETENTION_MS: u64 = 60_000;

/// Task 1's command: "hi" from message m-1, kept one minute once finished.
pub(crate) fn hi_command() -> Record {
    rec(
        "task-1",
        "m-1",
        1_700_000_000_000,
        RecordBody::Command {
            params: SEND_HI.into(),
            retention_ms: RETENTION_MS,
        },
    )
}

pub(crate) fn folds() -> Vec<Value> {
    let command = hi_command;
    let agent_msg = |id: &str, text: &str| {
        format!(r#"{{"messageId":"{id}","role":"ROLE_AGENT","parts":[{{"text":"{text}"}}]}}"#)
    };
    let artifact = |id: &str, ms, append, last, text: &str| {
        rec(
            "task-1",
            id,
            ms,
            RecordBody::ArtifactUpdate {
                append,
                last_chunk: last,
                artifact: format!(
                    r#"{{"artifactId":"out","name":"echo","parts":[{{"text":"{text}"}}]}}"#
                ),
            },
        )
    };
    let cancel = |ms| {
        rec(
            "task-1",
            "cancel-1",
            ms,
            RecordBody::CancelRequest {
                metadata: String::new(),
            },
        )
    };
    let cont = |id: &str, ms| {
        rec(
            "task-1",
            id,
            ms,
            RecordBody::Continue {
                params: format!(
                    r#"{{"message":{{"messageId":"{id}","role":"ROLE_USER","parts":[{{"text":"paris"}}]}}}}"#
                ),
            },
        )
    };
    let scenarios: Vec<(&str, Vec<Record>)> = vec![
        ("a command alone is submitted", vec![command()]),
        (
            "working then completed with an artifact",
            vec![
                command(),
                status("s-1", 1_700_000_000_010, TaskState::Working, ""),
                artifact("a-1", 1_700_000_000_020, false, true, "echo: hi"),
                status("t-1", 1_700_000_000_030, TaskState::Completed, ""),
            ],
        ),
        (
            "artifact chunks append in log order",
            vec![
                command(),
                artifact("a-1", 1_700_000_000_010, false, false, "ec"),
                artifact("a-2", 1_700_000_000_011, true, false, "ho"),
                artifact("a-3", 1_700_000_000_012, true, true, ": hi"),
                status("t-1", 1_700_000_000_013, TaskState::Completed, ""),
            ],
        ),
        (
            "a non-append artifact replaces the earlier one",
            vec![
                command(),
                artifact("a-1", 1_700_000_000_010, false, false, "draft"),
                artifact("a-2", 1_700_000_000_011, false, true, "final"),
            ],
        ),
        (
            "the first terminal wins",
            vec![
                command(),
                status("t-1", 1_700_000_000_010, TaskState::Completed, ""),
                status("t-2", 1_700_000_000_020, TaskState::Failed, ""),
            ],
        ),
        (
            "a cancel request before the completion cancels",
            vec![
                command(),
                status("s-1", 1_700_000_000_010, TaskState::Working, ""),
                cancel(1_700_000_000_020),
                status("t-1", 1_700_000_000_030, TaskState::Completed, ""),
            ],
        ),
        (
            "a completion before the cancel request completes",
            vec![
                command(),
                status("s-1", 1_700_000_000_010, TaskState::Working, ""),
                status("t-1", 1_700_000_000_020, TaskState::Completed, ""),
                cancel(1_700_000_000_030),
            ],
        ),
        (
            "input-required, continue, completed",
            vec![
                command(),
                status(
                    "s-1",
                    1_700_000_000_010,
                    TaskState::InputRequired,
                    &agent_msg("s-1", "which city?"),
                ),
                cont("m-2", 1_700_000_000_020),
                status("s-2", 1_700_000_000_030, TaskState::Working, ""),
                status(
                    "t-1",
                    1_700_000_000_040,
                    TaskState::Completed,
                    &agent_msg("t-1", "sunny in paris"),
                ),
            ],
        ),
        (
            "a continue to a working task is a follow-up: it joins the history and waits",
            vec![
                command(),
                status("s-1", 1_700_000_000_010, TaskState::Working, ""),
                cont("m-2", 1_700_000_000_020),
            ],
        ),
        (
            "records before the command are orphans",
            vec![
                status("s-0", 1_699_999_999_000, TaskState::Working, ""),
                command(),
                status("s-1", 1_700_000_000_010, TaskState::Working, ""),
            ],
        ),
        (
            "a repeated command and a repeated message id are duplicates",
            vec![
                command(),
                command(),
                status("s-1", 1_700_000_000_010, TaskState::Working, ""),
                status("s-1", 1_700_000_000_011, TaskState::AuthRequired, ""),
            ],
        ),
        (
            "illegal transitions are ignored and counted",
            vec![
                command(),
                status("s-1", 1_700_000_000_010, TaskState::Submitted, ""),
                rec(
                    "task-1",
                    "s-2",
                    1_700_000_000_020,
                    RecordBody::StatusUpdate {
                        state: StateCode(42),
                        message: String::new(),
                    },
                ),
                rec(
                    "task-1",
                    "s-3",
                    1_700_000_000_030,
                    RecordBody::StatusUpdate {
                        state: TaskState::Completed.into(),
                        message: String::new(),
                    },
                ),
                rec(
                    "task-1",
                    "s-4",
                    1_700_000_000_040,
                    RecordBody::Terminal {
                        state: TaskState::Working.into(),
                        message: String::new(),
                    },
                ),
            ],
        ),
        (
            "records of another task are ignored",
            vec![
                command(),
                rec(
                    "task-2",
                    "s-1",
                    1_700_000_000_010,
                    RecordBody::StatusUpdate {
                        state: TaskState::Working.into(),
                        message: String::new(),
                    },
                ),
            ],
        ),
        (
            "an unparsable payload is ignored",
            vec![
                command(),
                rec(
                    "task-1",
                    "a-1",
                    1_700_000_000_010,
                    RecordBody::ArtifactUpdate {
                        append: false,
                        last_chunk: false,
                        artifact: "{not json".into(),
                    },
                ),
                status(
                    "t-1",
                    1_700_000_000_020,
                    TaskState::Rejected,
                    &agent_msg("t-1", "not my job"),
                ),
            ],
        ),
        (
            "a command with unparsable params creates no task",
            vec![rec(
                "task-1",
                "m-1",
                1_700_000_000_000,
                RecordBody::Command {
                    params: r#"{"message":{"role":"ROLE_USER"}}"#.into(),
                    retention_ms: RETENTION_MS,
                },
            )],
        ),
        (
            "auth-required then canceled",
            vec![
                command(),
                status(
                    "s-1",
                    1_700_000_000_010,
                    TaskState::AuthRequired,
                    &agent_msg("s-1", "sign in please"),
                ),
                cancel(1_700_000_000_020),
            ],
        ),
    ];
    scenarios
        .into_iter()
        .map(|(description, records)| case(description, records))
        .collect()
}

/// The fold vector of a scenario: its records, the task they fold to, the reply that
/// answered in its place, when it expires and the stats.
pub(crate) fn case(description: &str, records: Vec<Record>) -> Value {
    let f = fold(&records);
    let stats = f.stats();
    ok(
        description,
        json!({"records": records}),
        json!({"task": f.task(), "answer": f.answer(), "expiresAtMs": f.machine().expires_at_ms(), "stats": {"applied": stats.applied, "orphans": stats.orphans, "duplicates": stats.duplicates, "afterTerminal": stats.after_terminal, "illegalTransitions": stats.illegal_transitions, "invalid": stats.invalid, "fenced": stats.fenced}}),
    )
}
