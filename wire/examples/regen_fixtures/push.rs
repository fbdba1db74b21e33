//! The fold scenarios of `fixtures/fold.json` for push records (rule 16): they change nothing
//! of the task.

use agentlog_wire::{Record, RecordBody, TaskState};
use serde_json::Value;

use crate::folds::{case, hi_command, rec, status};

const T0: u64 = 1_700_000_000_000;

fn config(id: &str, at: u64) -> Record {
    rec(
        "task-1",
        &format!("push-{id}-{at}"),
        T0 + at,
        RecordBody::PushConfig {
            config: format!(
                r#"{{"id":"{id}","taskId":"task-1","url":"https://example.com/hook","token":"tok"}}"#
            ),
        },
    )
}

pub(crate) fn push() -> Vec<Value> {
    let deleted = rec(
        "task-1",
        "push-del",
        T0 + 30,
        RecordBody::PushConfigDeleted {
            config_id: "p-1".into(),
        },
    );
    let letter = rec(
        "task-1",
        "push-dead",
        T0 + 40,
        RecordBody::PushDeadLetter {
            config_id: "p-1".into(),
            update: 3,
            attempts: 8,
            reason: "HTTP 500".into(),
        },
    );
    let scenarios: Vec<(&str, Vec<Record>)> = vec![
        (
            "push records (a config registered, deleted, a notification given up) apply and change nothing of the task",
            vec![
                hi_command(),
                config("p-1", 10),
                status("s-1", T0 + 20, TaskState::Working, ""),
                deleted.clone(),
                letter.clone(),
            ],
        ),
        (
            "push records apply after the terminal record and are never duplicates by id; before the command they are orphans",
            vec![
                config("p-0", 0),
                hi_command(),
                status("t-1", T0 + 5, TaskState::Completed, ""),
                config("p-1", 10),
                config("p-1", 10),
                deleted,
            ],
        ),
        (
            "a push config that does not parse, or has no id, is invalid",
            vec![
                hi_command(),
                rec(
                    "task-1",
                    "push-bad",
                    T0 + 10,
                    RecordBody::PushConfig {
                        config: r#"{"url":"https://example.com/hook"}"#.into(),
                    },
                ),
                letter,
            ],
        ),
    ];
    scenarios
        .into_iter()
        .map(|(description, records)| case(description, records))
        .collect()
}
