//! The fold scenarios of `fixtures/fold.json` for replies (rule 15): an agent answering a
//! message with a message instead of a task.

use agentlog_wire::{Record, RecordBody};
use serde_json::Value;

use crate::SEND_HI;
use crate::claims::{by, chunk, claim};
use crate::folds::{RETENTION_MS, case, hi_command, rec, status};

const T0: u64 = 1_700_000_000_000;

/// `worker`'s reply under `attempt`, written `at` ms after the command.
fn reply(worker: &str, attempt: u32, id: &str, at: u64, text: &str) -> Record {
    let message =
        format!(r#"{{"messageId":"{id}","role":"ROLE_AGENT","parts":[{{"text":"{text}"}}]}}"#);
    by(
        worker,
        attempt,
        rec("task-1", id, T0 + at, RecordBody::Reply { message }),
    )
}

pub(crate) fn replies() -> Vec<Value> {
    let immediate = rec(
        "task-1",
        "m-1",
        T0,
        RecordBody::Command {
            params: SEND_HI.replacen('{', r#"{"configuration":{"returnImmediately":true},"#, 1),
            retention_ms: RETENTION_MS,
        },
    );
    let scenarios: Vec<(&str, Vec<Record>)> = vec![
        (
            "a reply before the client saw the task answers in its place: no task, the reply is the answer (in the context, part of no task), and it expires as a finished task",
            vec![
                hi_command(),
                claim("w1", 1, "m-1", 10, 10_000),
                reply("w1", 1, "r-1", 20, "Direct message response"),
            ],
        ),
        (
            "records after an answering reply are after the terminal",
            vec![
                hi_command(),
                claim("w1", 1, "m-1", 10, 10_000),
                reply("w1", 1, "r-1", 20, "hello"),
                by(
                    "w1",
                    1,
                    status("s-1", T0 + 30, agentlog_wire::TaskState::Working, ""),
                ),
                reply("w1", 1, "r-2", 40, "again"),
            ],
        ),
        (
            "a reply after an artifact completes the task with the reply as its status message",
            vec![
                hi_command(),
                claim("w1", 1, "m-1", 10, 10_000),
                chunk("w1", 1, "a-1", 20, "part"),
                reply("w1", 1, "r-1", 30, "done"),
            ],
        ),
        (
            "a reply to a command that asked for the task at once (returnImmediately) completes the task",
            vec![
                immediate,
                claim("w1", 1, "m-1", 10, 10_000),
                reply("w1", 1, "r-1", 20, "done"),
            ],
        ),
        (
            "a reply not written by the current claim is fenced",
            vec![
                hi_command(),
                claim("w1", 1, "m-1", 10, 10_000),
                reply("w2", 1, "r-1", 20, "not mine"),
                reply("w1", 2, "r-2", 30, "wrong attempt"),
            ],
        ),
        (
            "a reply whose message does not parse is invalid",
            vec![
                hi_command(),
                claim("w1", 1, "m-1", 10, 10_000),
                by(
                    "w1",
                    1,
                    rec(
                        "task-1",
                        "r-1",
                        T0 + 20,
                        RecordBody::Reply {
                            message: "{not json".into(),
                        },
                    ),
                ),
            ],
        ),
    ];
    scenarios
        .into_iter()
        .map(|(description, records)| case(description, records))
        .collect()
}
