//! The fold's unit tests: each rule (the content-only fold against the full one:
//! `content.rs`).

#![allow(clippy::unwrap_used)]

use super::*;
use crate::{RecordHeader, StateCode};
use content::fold_of_content;

mod content;

pub(super) fn record(n: u64, message_id: &str, body: RecordBody) -> Record {
    Record {
        header: RecordHeader {
            task_id: "t".into(),
            context_id: "c".into(),
            message_id: message_id.into(),
            timestamp_ms: 1_700_000_000_000 + n,
            ..RecordHeader::default()
        },
        body,
    }
}

pub(super) fn command() -> Record {
    record(
        0,
        "m1",
        RecordBody::Command {
            params: r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#
                .into(),
            retention_ms: 60_000,
        },
    )
}

fn status(n: u64, id: &str, state: TaskState) -> Record {
    record(n, id, RecordBody::status(state, String::new()))
}

#[test]
fn a_parsed_command_applies_exactly_as_the_record() {
    let record = command();
    let mut parsed = TaskMachine::new();
    let mut folded = TaskMachine::new();
    assert_eq!(
        parsed.apply_parsed_command(&record.header, "m1", 60_000, false),
        Ok(())
    );
    assert!(
        matches!(folded.apply(&record), Ok(Change::Created(r)) if r.message.message_id == "m1")
    );
    assert_eq!(parsed, folded);
    // A second command is a duplicate either way.
    assert_eq!(
        parsed.apply_parsed_command(&record.header, "m1", 60_000, false),
        Err(Outcome::Duplicate)
    );
    assert_eq!(folded.apply(&record), Err(Outcome::Duplicate));
    assert_eq!(parsed, folded);
}

#[test]
fn a_status_parsed_by_its_writer_is_what_parsing_its_record_gives() {
    use crate::a2a::{Message, Part};
    let mut message = Message::agent_text("s1".to_owned(), "");
    message.parts = vec![
        Part::text("done"),
        Part {
            media_type: Some("application/vnd.agentlog.mcp-result+json".to_owned()),
            ..Part::data(
                serde_json::json!({"content": [{"type": "text", "text": "Hello, é!"}], "n": 1.5, "big": 12345678901234567u64}),
            )
        },
    ];
    message.task_id = Some("t".to_owned());
    let json = serde_json::to_string(&message).unwrap();
    for state in [TaskState::Working, TaskState::Completed, TaskState::Failed] {
        let with = record(1, "s1", RecordBody::status(state, json.clone()));
        assert_eq!(
            Parsed::of(&with),
            Parsed::status(state, Some(message.clone()))
        );
        let without = status(2, "s2", state);
        assert_eq!(Parsed::of(&without), Parsed::status(state, None));
    }
}

#[test]
fn first_terminal_wins() {
    let records = [
        command(),
        status(1, "s1", TaskState::Working),
        status(2, "s2", TaskState::Completed),
        status(3, "s3", TaskState::Failed),
    ];
    let f = fold(&records);
    assert_eq!(f.state(), Some(TaskState::Completed));
    assert_eq!(f.stats().after_terminal, 1);
    assert_eq!(f.status_timestamp_ms(), 1_700_000_000_002);
}

#[test]
fn cancel_request_races_by_log_order() {
    let cancel = record(
        2,
        "x1",
        RecordBody::CancelRequest {
            metadata: String::new(),
        },
    );
    let done = status(3, "s2", TaskState::Completed);
    let f = fold([&command(), &cancel, &done]);
    assert_eq!(f.state(), Some(TaskState::Canceled));
    let f = fold([&command(), &done, &cancel]);
    assert_eq!(f.state(), Some(TaskState::Completed));
}

#[test]
fn illegal_and_unknown_states_are_counted_and_ignored() {
    let records = [
        command(),
        status(1, "s1", TaskState::Submitted),
        record(
            2,
            "s2",
            RecordBody::StatusUpdate {
                state: StateCode(99),
                message: String::new(),
            },
        ),
        record(
            3,
            "s3",
            RecordBody::StatusUpdate {
                state: TaskState::Completed.into(),
                message: String::new(),
            },
        ),
        record(
            4,
            "s4",
            RecordBody::Terminal {
                state: TaskState::Working.into(),
                message: String::new(),
            },
        ),
    ];
    let f = fold(&records);
    assert_eq!(f.state(), Some(TaskState::Submitted));
    assert_eq!(f.stats().illegal_transitions, 4);
}

#[test]
fn orphans_and_duplicates_are_ignored() {
    let f = fold([
        &status(1, "s0", TaskState::Working),
        &command(),
        &command(),
        &status(2, "s1", TaskState::Working),
        &status(3, "s1", TaskState::InputRequired),
    ]);
    assert_eq!(f.stats().orphans, 1);
    assert_eq!(f.stats().duplicates, 2);
    assert_eq!(f.state(), Some(TaskState::Working));
}

#[test]
fn artifacts_append_and_replace() {
    let art = |n, id: &str, text: &str, append| {
        record(
            n,
            id,
            RecordBody::ArtifactUpdate {
                append,
                last_chunk: false,
                artifact: format!(r#"{{"artifactId":"a","parts":[{{"text":"{text}"}}]}}"#),
            },
        )
    };
    let f = fold([
        &command(),
        &art(1, "a1", "x", false),
        &art(2, "a2", "y", true),
    ]);
    let task = f.task().unwrap();
    assert_eq!(task.artifacts.len(), 1);
    assert_eq!(task.artifacts[0].parts.len(), 2);
    let f = fold([
        &command(),
        &art(1, "a1", "x", false),
        &art(2, "a2", "y", false),
    ]);
    assert_eq!(f.task().unwrap().artifacts[0].parts.len(), 1);
}

fn follow_up(n: u64, id: &str) -> Record {
    record(
        n,
        id,
        RecordBody::Continue {
            params: format!(
                r#"{{"message":{{"messageId":"{id}","role":"ROLE_USER","parts":[{{"text":"more"}}]}}}}"#
            ),
        },
    )
}

/// A record written by worker `source` under `attempt`.
pub(super) fn by(source: &str, attempt: u32, mut record: Record) -> Record {
    record.header.source = source.into();
    record.header.attempt = attempt;
    record
}

/// `source`'s claim of `turn` under `attempt`, written at `n`, leased until `until`.
fn claim(n: u64, source: &str, attempt: u32, turn: &str, until: u64) -> Record {
    let body = RecordBody::Claim {
        turn: turn.into(),
        lease_until_ms: 1_700_000_000_000 + until,
    };
    by(
        source,
        attempt,
        record(n, &format!("c-{source}-{attempt}-{n}"), body),
    )
}

fn artifact(n: u64, text: &str) -> Record {
    record(
        n,
        &format!("a{n}"),
        RecordBody::ArtifactUpdate {
            append: true,
            last_chunk: false,
            artifact: format!(r#"{{"artifactId":"out","parts":[{{"text":"{text}"}}]}}"#),
        },
    )
}

fn claimed(f: &TaskFold) -> Option<(u32, u32, &str)> {
    f.machine()
        .claim()
        .map(|c| (c.attempt, c.turn_attempt, &*c.holder))
}

#[test]
fn a_claim_fences_every_other_writer() {
    let f = fold([
        &command(),
        &claim(1, "w1", 1, "m1", 100),
        &by("w1", 1, status(2, "s1", TaskState::Working)),
        // Another worker's claim of the same attempt, and what it writes: fenced.
        &claim(3, "w2", 1, "m1", 100),
        &by("w2", 1, artifact(4, "two")),
        // Records under no claim, once the task has claims: fenced too.
        &artifact(5, "none"),
        &by("w1", 1, artifact(6, "one")),
        &by("w1", 1, status(7, "s2", TaskState::Completed)),
    ]);
    assert_eq!(f.state(), Some(TaskState::Completed));
    assert_eq!(f.stats().fenced, 3);
    let task = f.task().unwrap();
    assert_eq!(task.artifacts[0].parts.len(), 1);
    assert_eq!(task.artifacts[0].parts[0].as_text(), Some("one"));
    assert_eq!(claimed(&f), None, "a terminal task keeps no claim");
}

#[test]
fn a_takeover_applies_only_after_the_lease_and_fences_the_old_attempt() {
    let start = [
        command(),
        claim(1, "w1", 1, "m1", 100),
        by("w1", 1, status(2, "s1", TaskState::Working)),
        by("w1", 1, artifact(3, "old")),
    ];
    // Before the lease ends: fenced, and the old holder keeps the turn.
    let early = claim(99, "w2", 2, "m1", 300);
    let f = fold(start.iter().chain([&early]));
    assert_eq!(f.stats().fenced, 1);
    assert_eq!(claimed(&f), Some((1, 1, "w1")));
    // At the lease's end: the next attempt takes over; the old one's late records are fenced.
    let f = fold(start.iter().chain(&[
        claim(100, "w2", 2, "m1", 300),
        by("w1", 1, artifact(101, "late")),
        by("w1", 1, status(102, "s2", TaskState::Completed)),
        by("w2", 2, artifact(103, "new")),
        by("w2", 2, status(104, "s3", TaskState::Completed)),
    ]));
    assert_eq!(f.stats().fenced, 2);
    assert_eq!(f.state(), Some(TaskState::Completed));
    let texts: Vec<_> = f.task().unwrap().artifacts[0]
        .parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect();
    assert_eq!(texts, ["old", "new"]);
    // A takeover must take exactly the next attempt number.
    let f = fold(start.iter().chain([&claim(200, "w2", 3, "m1", 300)]));
    assert_eq!(claimed(&f), Some((1, 1, "w1")));
}

#[test]
fn renewals_extend_the_lease_and_a_release_ends_it() {
    let start = [
        command(),
        claim(1, "w1", 1, "m1", 100),
        claim(50, "w1", 1, "m1", 200),
    ];
    let f = fold(start.iter().chain([&claim(150, "w2", 2, "m1", 400)]));
    assert_eq!(f.stats().fenced, 1, "the renewed lease still holds at 150");
    assert_eq!(
        f.machine().claim().unwrap().lease_until_ms,
        1_700_000_000_200
    );
    // Only the holder renews.
    let f = fold(start.iter().chain([&claim(60, "w2", 1, "m1", 900)]));
    assert_eq!(
        f.machine().claim().unwrap().lease_until_ms,
        1_700_000_000_200
    );
    // A lease that is already over releases the turn: a takeover may follow at once.
    let f = fold(
        start
            .iter()
            .chain(&[claim(60, "w1", 1, "m1", 60), claim(61, "w2", 2, "m1", 400)]),
    );
    assert_eq!(claimed(&f), Some((2, 2, "w2")));
}

#[test]
fn an_interruption_ends_the_turn_and_the_next_turn_needs_a_new_attempt() {
    let f = fold([
        &command(),
        &claim(1, "w1", 1, "m1", 100),
        &by("w1", 1, status(2, "s1", TaskState::InputRequired)),
        // No turn waits on a worker: a claim and the old attempt's records are fenced.
        &claim(3, "w1", 1, "m1", 100),
        &by("w1", 1, artifact(4, "late")),
        &follow_up(5, "m2"),
        // The new turn's first claim is the task's next attempt, whoever writes it.
        &claim(6, "w2", 1, "m2", 100),
        &claim(7, "w1", 2, "m2", 100),
    ]);
    assert_eq!(f.stats().fenced, 3);
    // The claim started the new turn: working, at the claim's time.
    assert_eq!(f.state(), Some(TaskState::Working));
    assert_eq!(f.status_timestamp_ms(), 1_700_000_000_007);
    assert_eq!(claimed(&f), Some((2, 1, "w1")));
    assert_eq!(f.machine().last_message_id(), Some("m2"));
}

#[test]
fn a_turn_is_over_once_the_task_ends_asks_for_input_or_moves_past_it() {
    let machine = |records: &[Record]| fold(records).machine().clone();
    assert!(!TaskMachine::new().turn_is_over("m1"));
    let running = [command(), claim(1, "w1", 1, "m1", 100)];
    assert!(!machine(&running).turn_is_over("m1"));
    let with_follow_up = [running[0].clone(), running[1].clone(), follow_up(2, "m2")];
    assert!(!machine(&with_follow_up).turn_is_over("m2"), "queued");
    assert!(
        machine(&with_follow_up).turn_is_over("m9"),
        "never this task's"
    );
    let asked = [command(), status(3, "s1", TaskState::InputRequired)];
    assert!(machine(&asked).turn_is_over("m1"));
    let done = [command(), status(3, "s1", TaskState::Completed)];
    assert!(machine(&done).turn_is_over("m1"));
}

#[test]
fn a_claim_starts_a_submitted_turn_and_leaves_a_working_one_as_it_is() {
    let f = fold([&command(), &claim(5, "w1", 1, "m1", 100)]);
    assert_eq!(f.state(), Some(TaskState::Working));
    assert_eq!(f.task().unwrap().status.state, TaskState::Working);
    assert_eq!(f.status_timestamp_ms(), 1_700_000_000_005);
    // A takeover of a working turn, and a renewal, change no state or time.
    let f = fold([
        &command(),
        &claim(5, "w1", 1, "m1", 100),
        &claim(50, "w1", 1, "m1", 200),
        &claim(200, "w2", 2, "m1", 300),
    ]);
    assert_eq!(f.state(), Some(TaskState::Working));
    assert_eq!(f.status_timestamp_ms(), 1_700_000_000_005);
    assert_eq!(claimed(&f), Some((2, 2, "w2")));
}

#[test]
fn a_task_that_never_had_a_claim_takes_records_of_attempt_0_only() {
    let f = fold([
        &command(),
        &status(1, "s1", TaskState::Working),
        &by("w1", 3, artifact(2, "unclaimed")),
        &artifact(3, "legacy"),
    ]);
    assert_eq!(f.stats().fenced, 1);
    assert_eq!(f.task().unwrap().artifacts[0].parts.len(), 1);
    assert_eq!(f.machine().attempts(), 0);
}

#[test]
fn a_follow_up_waits_behind_the_turn_until_the_holder_takes_it() {
    let start = [
        command(),
        claim(1, "w1", 1, "m1", 100),
        by("w1", 1, status(2, "s1", TaskState::Working)),
        follow_up(3, "m2"),
        follow_up(4, "m3"),
    ];
    let f = fold(&start);
    assert_eq!(f.state(), Some(TaskState::Working));
    assert_eq!(f.machine().last_message_id(), Some("m1"));
    assert_eq!(f.machine().pending().collect::<Vec<_>>(), ["m2", "m3"]);
    assert_eq!(f.task().unwrap().history.len(), 3);
    // Only the holder takes, and only the first waiting one.
    let f = fold(start.iter().chain(&[
        claim(5, "w2", 1, "m2", 100),
        claim(6, "w1", 1, "m3", 100),
        claim(7, "w1", 1, "m2", 150),
    ]));
    assert_eq!(f.stats().fenced, 2);
    assert_eq!(f.machine().last_message_id(), Some("m2"));
    assert_eq!(f.machine().pending().collect::<Vec<_>>(), ["m3"]);
    assert_eq!(claimed(&f), Some((1, 1, "w1")));
    // An interruption goes on to the waiting follow-up at once.
    let f = fold(start.iter().chain([&by(
        "w1",
        1,
        record(
            8,
            "s2",
            RecordBody::StatusUpdate {
                state: TaskState::InputRequired.into(),
                message:
                    r#"{"messageId":"s2","role":"ROLE_AGENT","parts":[{"text":"which?"}]}"#.into(),
            },
        ),
    )]));
    assert_eq!(f.state(), Some(TaskState::Submitted));
    assert_eq!(f.machine().last_message_id(), Some("m2"));
    assert_eq!(f.machine().pending().collect::<Vec<_>>(), ["m3"]);
    assert!(f.machine().awaits_claim());
    let task = f.task().unwrap();
    assert_eq!(task.status.message, None);
    assert_eq!(
        task.history.len(),
        4,
        "the agent's question stays in the history"
    );
}

#[test]
fn continue_resumes_an_interrupted_task_and_follows_up_a_running_one() {
    let cont = follow_up(3, "m2");
    let f = fold([&command(), &cont]);
    assert_eq!(f.stats().illegal_transitions, 0);
    assert_eq!(f.machine().pending().collect::<Vec<_>>(), ["m2"]);
    let f = fold([
        &command(),
        &status(2, "s1", TaskState::InputRequired),
        &cont,
    ]);
    assert_eq!(f.state(), Some(TaskState::Submitted));
    let task = f.into_task().unwrap();
    assert_eq!(task.history.len(), 2);
    assert_eq!(task.history[1].task_id.as_deref(), Some("t"));
    assert_eq!(task.history[1].context_id.as_deref(), Some("c"));
}

fn reply(n: u64, text: &str) -> Record {
    record(
        n,
        &format!("reply-{n}"),
        RecordBody::Reply {
            message: format!(
                r#"{{"messageId":"r{n}","role":"ROLE_AGENT","parts":[{{"text":"{text}"}}]}}"#
            ),
        },
    )
}

#[test]
fn a_reply_to_an_unseen_task_answers_in_its_place() {
    let records = [
        command(),
        claim(1, "w1", 1, "m1", 100),
        by("w1", 1, reply(2, "direct")),
        by("w1", 1, status(3, "late", TaskState::Working)),
    ];
    let f = fold(&records);
    assert_eq!(f.task(), None, "no task: the reply answered in its place");
    let answer = f.answer().unwrap();
    assert_eq!(answer.message_id, "r2");
    assert_eq!(answer.context_id.as_deref(), Some("c"));
    assert_eq!(answer.task_id, None);
    assert!(f.machine().is_answered());
    assert_eq!(f.state(), Some(TaskState::Completed));
    assert_eq!(f.stats().after_terminal, 1);
    // It expires as a finished task does, at the reply's time plus the retention.
    assert_eq!(
        f.machine().expires_at_ms(),
        Some(records[2].header.timestamp_ms + 60_000)
    );
}

#[test]
fn a_reply_to_a_task_the_client_has_seen_completes_it() {
    // After an artifact, a status, or with returnImmediately, the client holds a task: the
    // reply completes it with its message.
    let immediate = {
        let mut c = command();
        c.body = RecordBody::Command {
            params: r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}"#.into(),
            retention_ms: 60_000,
        };
        c
    };
    let histories = [
        vec![
            command(),
            claim(1, "w1", 1, "m1", 100),
            by("w1", 1, artifact(2, "x")),
        ],
        vec![
            command(),
            claim(1, "w1", 1, "m1", 100),
            by("w1", 1, status(2, "s", TaskState::Working)),
        ],
        vec![immediate, claim(1, "w1", 1, "m1", 100)],
    ];
    for mut records in histories {
        records.push(by("w1", 1, reply(5, "done")));
        let f = fold(&records);
        assert_eq!(f.answer(), None);
        let task = f.task().unwrap();
        assert_eq!(task.status.state, TaskState::Completed);
        let message = task.status.message.as_ref().unwrap();
        assert_eq!(message.task_id.as_deref(), Some("t"));
        assert_eq!(task.history.last(), Some(message));
        assert!(!f.machine().is_answered());
        assert_eq!(fold_of_content(&records).as_ref(), f.task());
    }
}

#[test]
fn a_reply_is_fenced_like_every_worker_record() {
    let records = [
        command(),
        claim(1, "w1", 1, "m1", 100),
        by("w2", 1, reply(2, "not mine")),
        by("w1", 2, reply(3, "wrong attempt")),
    ];
    let f = fold(&records);
    assert_eq!(f.stats().fenced, 2);
    assert_eq!(f.answer(), None);
    assert_eq!(f.state(), Some(TaskState::Working));
}
