//! Unit tests of expiry and checkpoints in the view, over the in-memory log.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use super::*;
use crate::view::checkpoint::{self, codec};
use agentlog_wire::{Record, RecordBody, TaskState};

const PATIENCE: Duration = Duration::from_secs(30);
/// Long ago: 2023-11-14.
const LONG_AGO: u64 = 1_700_000_000_000;

pub(super) fn caller() -> Caller {
    Caller::principal("p")
}

/// [`super::record`] written at `ms`.
pub(super) fn at(task: &str, message_id: &str, ms: u64, body: RecordBody) -> Record {
    let mut record = super::record(task, message_id, body);
    record.header.timestamp_ms = ms;
    record
}

pub(in crate::view) fn command(task: &str, text: &str, ms: u64, retention_ms: u64) -> Record {
    let params = format!(
        r#"{{"message":{{"messageId":"m-{task}","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}"#
    );
    at(
        task,
        &format!("m-{task}"),
        ms,
        RecordBody::Command {
            params,
            retention_ms,
        },
    )
}

pub(in crate::view) fn status(task: &str, id: &str, ms: u64, state: TaskState) -> Record {
    at(task, id, ms, RecordBody::status(state, String::new()))
}

pub(super) async fn memory_log(partitions: u32) -> (Log, TopicRef, TopicRef) {
    let log = crate::log::open("memory://").await.unwrap();
    let (events, checkpoints) = (
        TopicRef::new("s", "a.events"),
        TopicRef::new("s", "a.checkpoints"),
    );
    log.ensure_topic(&events, partitions).await.unwrap();
    log.ensure_topic(&checkpoints, 1).await.unwrap();
    (log, events, checkpoints)
}

pub(super) async fn caught_up_view(log: &Log, events: &TopicRef, options: ViewOptions) -> TaskView {
    let view = TaskView::start_with(log.clone(), events.clone(), options)
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, view.wait_caught_up())
        .await
        .unwrap();
    view.sync(None, PATIENCE).await.unwrap();
    view
}

#[tokio::test]
async fn a_finished_task_is_gone_for_every_reader_once_its_retention_has_passed() {
    let (log, events, _) = memory_log(1).await;
    // A view that compacts: it counts the records retained tasks need.
    let compacting = ViewOptions {
        compact: Some(CompactTopics {
            commands: TopicRef::new("s", "a.commands"),
            commands_retention_ms: 0,
        }),
        ..ViewOptions::default()
    };
    let view = caught_up_view(&log, &events, compacting).await;
    let now = now_ms();
    // Finished a second ago with a retention of 1.3 s: it expires 300 ms from now.
    append(&log, &events, &command("t", "hi", now - 2_000, 1_300)).await;
    append(
        &log,
        &events,
        &status("t", "done", now - 1_000, TaskState::Completed),
    )
    .await;
    view.sync(None, PATIENCE).await.unwrap();
    let filter = ListFilter {
        page_size: 10,
        ..ListFilter::default()
    };
    assert!(view.lookup(&caller(), "t").is_some());
    assert!(view.get(&caller(), "t").await.unwrap().is_some());
    assert_eq!(view.list(&caller(), &filter).1, 1);
    assert_eq!(view.expiring_count(), 1);
    assert!(
        view.inner.parts[0]
            .read()
            .live
            .as_ref()
            .unwrap()
            .any_in(0..2),
        "its two records are counted"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Gone for every way of asking, dropped or not yet.
    assert!(view.lookup(&caller(), "t").is_none());
    assert!(view.lookup_any("t").is_none());
    assert!(view.subscribe(None, "t").is_none());
    assert!(view.get(&caller(), "t").await.unwrap().is_none());
    assert_eq!(view.list(&caller(), &filter).1, 0);
    view.expire_now();
    assert_eq!((view.task_count(), view.expiring_count()), (0, 0));
    assert!(
        !view.inner.parts[0]
            .read()
            .live
            .as_ref()
            .unwrap()
            .any_in(0..u64::MAX)
    );
    // A late record of the task does not bring it back (an orphan now).
    append(
        &log,
        &events,
        &status("t", "late", now_ms(), TaskState::Failed),
    )
    .await;
    view.sync(None, PATIENCE).await.unwrap();
    assert_eq!(view.task_count(), 0);
}

#[tokio::test]
async fn interrupted_and_running_tasks_never_expire() {
    let (log, events, _) = memory_log(1).await;
    // Each with a retention of 1 ms, long ago; and a finished one kept forever (0).
    let tasks = [
        ("asks", TaskState::InputRequired, 1),
        ("runs", TaskState::Working, 1),
        ("kept", TaskState::Completed, 0),
    ];
    for (task, state, retention_ms) in tasks {
        append(&log, &events, &command(task, "hi", LONG_AGO, retention_ms)).await;
        append(&log, &events, &status(task, "s", LONG_AGO, state)).await;
    }
    let view = caught_up_view(&log, &events, ViewOptions::default()).await;
    view.expire_now();
    for (task, ..) in tasks {
        assert!(view.lookup(&caller(), task).is_some(), "{task}");
    }
    assert_eq!(view.expiring_count(), 0);
}

#[tokio::test]
async fn a_command_after_the_expiry_starts_a_new_incarnation() {
    let (log, events, _) = memory_log(1).await;
    append(&log, &events, &command("t", "old", LONG_AGO, 60_000)).await;
    append(
        &log,
        &events,
        &status("t", "done", LONG_AGO + 10, TaskState::Completed),
    )
    .await;
    // A duplicate written before the expiry: ignored, on replay too.
    append(&log, &events, &command("t", "twin", LONG_AGO + 20, 60_000)).await;
    let view = caught_up_view(&log, &events, ViewOptions::default()).await;
    assert!(view.lookup(&caller(), "t").is_none(), "expired long ago");
    let now = now_ms();
    append(&log, &events, &command("t", "new", now, 60_000)).await;
    view.sync(None, PATIENCE).await.unwrap();
    let info = view.lookup(&caller(), "t").unwrap();
    assert_eq!(
        (info.state, info.status_timestamp_ms),
        (TaskState::Submitted, now)
    );
    assert_eq!(info.offsets().collect::<Vec<_>>(), [3]);
    let task = view.get(&caller(), "t").await.unwrap().unwrap();
    assert_eq!(task.history.len(), 1);
    assert_eq!(task.history[0].parts[0].as_text(), Some("new"));
    // A full replay agrees (it kept the old incarnation until rule 14 replaced it).
    let replayed = caught_up_view(&log, &events, ViewOptions::default()).await;
    assert_eq!(replayed.get(&caller(), "t").await.unwrap().unwrap(), task);
}

/// A random history of many tasks: commands (some long finished, some reincarnated),
/// statuses, artifacts, claims and worker records, continues, cancels, duplicates. The first
/// `old` records were written long ago (finished tasks among them with a retention of a
/// minute: expired by now), the rest now (kept a day: nothing expires while a test compares),
/// as a log written over time is.
pub(super) fn random_history(seed: u64, tasks: usize, records: usize, old: usize) -> Vec<Record> {
    let mut state = seed | 1;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let now = now_ms();
    let mut out = Vec::with_capacity(records);
    for n in 0..records {
        let task = format!("t{}", next(tasks as u64));
        let (ms, retention) = if n < old {
            (LONG_AGO + n as u64, 60_000)
        } else {
            (now + n as u64, 86_400_000)
        };
        let id = format!("r{}", next(40));
        let body = match next(10) {
            0 | 1 => RecordBody::Command {
                params: format!(
                    r#"{{"message":{{"messageId":"m-{task}","role":"ROLE_USER","parts":[{{"text":"{n}"}}]}}}}"#
                ),
                retention_ms: retention,
            },
            2 => RecordBody::Continue {
                params: format!(
                    r#"{{"message":{{"messageId":"c-{n}","taskId":"{task}","role":"ROLE_USER","parts":[{{"text":"more"}}]}}}}"#
                ),
            },
            3 => RecordBody::Claim {
                turn: format!("m-{task}"),
                lease_until_ms: ms + 10_000,
            },
            4 => RecordBody::CancelRequest {
                metadata: String::new(),
            },
            5 | 6 => RecordBody::status(
                [
                    TaskState::Working,
                    TaskState::InputRequired,
                    TaskState::Completed,
                    TaskState::Failed,
                ][next(4) as usize],
                if next(2) == 0 {
                    String::new()
                } else {
                    format!(
                        r#"{{"messageId":"s-{n}","role":"ROLE_AGENT","parts":[{{"text":"{n}"}}]}}"#
                    )
                },
            ),
            _ => RecordBody::ArtifactUpdate {
                append: next(2) == 0,
                last_chunk: false,
                artifact: format!(
                    r#"{{"artifactId":"a{}","parts":[{{"text":"{n}"}}]}}"#,
                    next(2)
                ),
            },
        };
        let mut record = at(&task, &id, ms, body);
        if let RecordBody::Command { .. } = record.body {
            record.header.message_id = format!("m-{task}");
        }
        record.header.attempt = next(3) as u32;
        record.header.source = ["", "w1"][next(2) as usize].to_owned();
        out.push(record);
    }
    out
}

/// Everything a view answers about the tasks `ids`, in a comparable form.
async fn answers(view: &TaskView, ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        let info = view.lookup(&caller(), id).map(|i| {
            format!(
                "{:?} {} {} {:?} {:?} {} {:?} {:?}",
                i.state,
                i.status_timestamp_ms,
                i.status_has_message,
                i.last_message_id,
                i.claim,
                i.attempts,
                i.pending,
                i.offsets().collect::<Vec<_>>()
            )
        });
        let task = view.get(&caller(), id).await.unwrap();
        out.push(format!(
            "{id}: {info:?} {}",
            serde_json::to_string(&task).unwrap()
        ));
    }
    let (page, total) = view.list(
        &caller(),
        &ListFilter {
            page_size: 100,
            ..ListFilter::default()
        },
    );
    out.push(format!(
        "list {total}: {:?}",
        page.iter().map(|i| i.id.clone()).collect::<Vec<_>>()
    ));
    out
}

#[tokio::test]
async fn a_view_started_from_a_checkpoint_answers_as_a_full_replay() {
    for seed in 1..=12u64 {
        let (log, events, checkpoints) = memory_log(3).await;
        let cut = (seed as usize * 37) % 600;
        // Records written long ago come before the checkpoint (a view that has caught up
        // reads records written after it: with the time they were written).
        let old = cut * (seed as usize % 3) / 2;
        let history = random_history(seed, 40, 600, old);
        for record in &history[..cut] {
            append(&log, &events, record).await;
        }
        let writer = caught_up_view(
            &log,
            &events,
            ViewOptions::checkpointed(checkpoints.clone()),
        )
        .await;
        writer.checkpoint().await.unwrap().unwrap();
        for record in &history[cut..] {
            append(&log, &events, record).await;
        }
        let restored = caught_up_view(
            &log,
            &events,
            ViewOptions::restore_only(checkpoints.clone()),
        )
        .await;
        assert!(restored.restored_from().is_some(), "seed {seed}: restored");
        let replayed = caught_up_view(&log, &events, ViewOptions::default()).await;
        assert!(replayed.restored_from().is_none());
        let ids: Vec<String> = (0..40).map(|n| format!("t{n}")).collect();
        assert_eq!(
            answers(&restored, &ids).await,
            answers(&replayed, &ids).await,
            "seed {seed}, checkpoint after {cut} records"
        );
        writer.sync(None, PATIENCE).await.unwrap();
        assert_eq!(
            answers(&writer, &ids).await,
            answers(&replayed, &ids).await,
            "seed {seed}: writer"
        );
    }
}

/// Store `bytes` as the newest checkpoint of partition `of` on `topic`.
async fn store(log: &Log, topic: &TopicRef, of: u32, bytes: &[u8]) {
    checkpoint::store(log, topic, of, bytes).await.unwrap();
}

/// The newest checkpoint of partition `of` on `topic`, as stored.
async fn newest(log: &Log, topic: &TopicRef, of: u32) -> Vec<u8> {
    let manifest = checkpoint::manifests(log, topic, of, 1)
        .await
        .unwrap()
        .remove(0);
    checkpoint::read(log, topic, &manifest).await.unwrap()
}

#[tokio::test]
async fn a_damaged_checkpoint_is_ignored_for_the_one_before_it_or_a_replay() {
    let (log, events, checkpoints) = memory_log(2).await;
    let history = random_history(7, 20, 200, 100);
    for record in &history {
        append(&log, &events, record).await;
    }
    let writer = caught_up_view(
        &log,
        &events,
        ViewOptions::checkpointed(checkpoints.clone()),
    )
    .await;
    let good = writer.checkpoint().await.unwrap().unwrap();
    let mut damaged = Vec::new();
    for of in 0..2 {
        let mut bytes = newest(&log, &checkpoints, of).await;
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        assert!(codec::decode(&bytes).is_err());
        store(&log, &checkpoints, of, &bytes).await;
        damaged.push(bytes);
    }
    let ids: Vec<String> = (0..20).map(|n| format!("t{n}")).collect();
    let replayed = caught_up_view(&log, &events, ViewOptions::default()).await;
    let restored = caught_up_view(
        &log,
        &events,
        ViewOptions::restore_only(checkpoints.clone()),
    )
    .await;
    assert_eq!(restored.restored_from(), Some(good.positions));
    assert_eq!(
        answers(&restored, &ids).await,
        answers(&replayed, &ids).await
    );

    // Two damaged ones: a replay.
    for (of, bytes) in (0..).zip(&damaged) {
        store(&log, &checkpoints, of, bytes).await;
    }
    let restored = caught_up_view(
        &log,
        &events,
        ViewOptions::restore_only(checkpoints.clone()),
    )
    .await;
    assert!(restored.restored_from().is_none());
    assert_eq!(
        answers(&restored, &ids).await,
        answers(&replayed, &ids).await
    );
}

#[tokio::test]
async fn a_checkpoint_of_another_log_is_ignored() {
    // Two logs with the same topic and as many records, but not the same records.
    let (ours, events, checkpoints) = memory_log(2).await;
    let (theirs, _, their_checkpoints) = memory_log(2).await;
    for (log, seed) in [(&ours, 3), (&theirs, 4)] {
        for record in &random_history(seed, 20, 200, 100) {
            append(log, &events, record).await;
        }
    }
    assert_eq!(
        ours.end_offsets(&events).await.unwrap().iter().sum::<u64>(),
        theirs
            .end_offsets(&events)
            .await
            .unwrap()
            .iter()
            .sum::<u64>()
    );
    let writer = caught_up_view(
        &theirs,
        &events,
        ViewOptions::checkpointed(their_checkpoints.clone()),
    )
    .await;
    writer.checkpoint().await.unwrap().unwrap();
    let mut foreign = Vec::new();
    for of in 0..2 {
        let bytes = newest(&theirs, &their_checkpoints, of).await;
        store(&ours, &checkpoints, of, &bytes).await;
        let decoded = codec::decode(&bytes).unwrap();
        let why = checkpoint::verify(&ours, &events, 2, of, &decoded)
            .await
            .unwrap_err();
        assert!(
            why.contains("not the one it saw") || why.contains("ends at"),
            "partition {of}: {why}"
        );
        foreign.push(bytes);
    }
    let restored = caught_up_view(
        &ours,
        &events,
        ViewOptions::restore_only(checkpoints.clone()),
    )
    .await;
    assert!(restored.restored_from().is_none());
    let replayed = caught_up_view(&ours, &events, ViewOptions::default()).await;
    let ids: Vec<String> = (0..20).map(|n| format!("t{n}")).collect();
    assert_eq!(
        answers(&restored, &ids).await,
        answers(&replayed, &ids).await
    );
    // A checkpoint of another topic is refused by name.
    let other = TopicRef::new("s", "b.events");
    let decoded = codec::decode(&foreign[0]).unwrap();
    let why = checkpoint::verify(&ours, &other, 2, 0, &decoded)
        .await
        .unwrap_err();
    assert!(why.contains("not of"), "{why}");
}
