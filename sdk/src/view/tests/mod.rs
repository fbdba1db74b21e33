//! Unit tests of the view's subscriptions and its follower, over the in-memory log (expiry and
//! checkpoints: `retention.rs`).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agentlog_wire::{Record, RecordBody, RecordHeader, TaskState};
use bytes::Bytes;
use tokio::sync::broadcast::error::RecvError;

use super::tasks::applied::content_offsets;
use super::*;
use crate::log::raw::Place;

mod applier;
mod holding;
mod listing;
pub(super) mod retention;

/// An upper bound for anything a test waits for.
pub(super) const PATIENCE: Duration = Duration::from_secs(30);

async fn view_over_memory() -> (Log, TopicRef, TaskView) {
    let log = crate::log::open("memory://").await.unwrap();
    let topic = TopicRef::new("s", "events");
    log.ensure_topic(&topic, 1).await.unwrap();
    let view = TaskView::start(log.clone(), topic.clone()).await.unwrap();
    (log, topic, view)
}

/// A view of `partitions` partitions over a memory log counted by `metrics`: what the view
/// asks of the log.
async fn view_over_counted_memory(
    metrics: &crate::log::layers::LogMetrics,
    partitions: u32,
) -> (Log, TopicRef, TaskView) {
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(crate::log::layers::MetricsLayer::new(metrics.clone()));
    let topic = TopicRef::new("s", "events");
    log.ensure_topic(&topic, partitions).await.unwrap();
    let view = TaskView::start(log.clone(), topic.clone()).await.unwrap();
    (log, topic, view)
}

pub(super) fn record(task: &str, message_id: &str, body: RecordBody) -> Record {
    Record {
        header: RecordHeader {
            task_id: task.to_owned(),
            context_id: format!("ctx-{task}"),
            message_id: message_id.to_owned(),
            principal: "p".to_owned(),
            timestamp_ms: 1_700_000_000_000,
            ..RecordHeader::default()
        },
        body,
    }
}

fn command(task: &str) -> Record {
    let params = format!(
        r#"{{"message":{{"messageId":"m-{task}","role":"ROLE_USER","parts":[{{"text":"hi"}}]}}}}"#
    );
    record(
        task,
        &format!("m-{task}"),
        RecordBody::Command {
            params,
            retention_ms: 0,
        },
    )
}

fn completed(task: &str) -> Record {
    let body = RecordBody::Terminal {
        state: TaskState::Completed.into(),
        message: String::new(),
    };
    record(task, &format!("done-{task}"), body)
}

/// `task`'s artifact `x`, "out", whole.
fn artifact_out(task: &str) -> Record {
    record(
        task,
        "art",
        RecordBody::ArtifactUpdate {
            append: false,
            last_chunk: true,
            artifact: r#"{"artifactId":"x","parts":[{"text":"out"}]}"#.into(),
        },
    )
}

/// Append `records[n]`, sync `view`, and give the fold of `records[..=n]`.
async fn append_and_fold(
    log: &Log,
    topic: &TopicRef,
    view: &TaskView,
    records: &[Record],
    n: usize,
) -> agentlog_wire::a2a::Task {
    append(log, topic, &records[n]).await;
    view.sync(None, PATIENCE).await.unwrap();
    agentlog_wire::fold::fold(&records[..=n])
        .into_task()
        .unwrap()
}

pub(super) async fn append(log: &Log, topic: &TopicRef, record: &Record) {
    let bytes = Bytes::from(record.encode().unwrap());
    log.append(topic, record.header.task_id.as_bytes(), vec![bytes])
        .await
        .unwrap();
}

#[tokio::test]
async fn a_terminal_record_closes_the_subscribers_channel() {
    let (log, topic, view) = view_over_memory().await;
    append(&log, &topic, &command("t1")).await;
    view.sync(None, PATIENCE).await.unwrap();
    let (info, mut events) = view.subscribe(None, "t1").unwrap();
    assert_eq!(info.state, TaskState::Submitted);
    assert!(!view.read_of("t1").watchers.is_empty());

    append(&log, &topic, &completed("t1")).await;
    view.sync(None, PATIENCE).await.unwrap();
    let event = tokio::time::timeout(PATIENCE, events.recv()).await.unwrap();
    assert_eq!(event.unwrap().state, TaskState::Completed);
    // Nothing follows a terminal record: the channel is gone, not kept for ever.
    let next = tokio::time::timeout(PATIENCE, events.recv()).await.unwrap();
    assert!(matches!(next, Err(RecvError::Closed)));
    assert!(view.read_of("t1").watchers.is_empty());
}

#[tokio::test]
async fn listing_changes_tells_the_owner_of_each_task_gained_or_expired_and_nothing_else() {
    let log = crate::log::open("memory://").await.unwrap();
    let topic = TopicRef::new("s", "events");
    log.ensure_topic(&topic, 4).await.unwrap();
    let view = TaskView::start(log.clone(), topic.clone()).await.unwrap();
    append(&log, &topic, &command("before")).await;
    view.sync(None, PATIENCE).await.unwrap();
    let mut changes = view.listing_changes();
    let mut again = view.listing_changes();
    let mut other = command("t2");
    other.header.principal = "q".to_owned();
    // Two tasks on (most likely) different partitions, and a record of a known task.
    for record in [command("t1"), completed("before"), other] {
        append(&log, &topic, &record).await;
    }
    view.sync(None, PATIENCE).await.unwrap();
    let owners = |receiver: &mut tokio::sync::broadcast::Receiver<Caller>| {
        let mut owners = Vec::new();
        while let Ok(owner) = receiver.try_recv() {
            owners.push(owner.principal);
        }
        owners.sort();
        owners
    };
    assert_eq!(owners(&mut changes), ["p", "q"]);
    assert_eq!(owners(&mut again), ["p", "q"]);
    // A task finished long enough ago to have expired: gained, then dropped.
    let now = crate::retention::now_ms();
    let mut kept = retention::command("gone", "hi", now - 2_000, 1_000);
    kept.header.principal = "r".to_owned();
    let mut done = retention::status("gone", "done", now - 1_500, TaskState::Completed);
    done.header.principal = "r".to_owned();
    append(&log, &topic, &kept).await;
    append(&log, &topic, &done).await;
    view.sync(None, PATIENCE).await.unwrap();
    view.expire_now();
    assert_eq!(owners(&mut changes), ["r", "r"]);
}

#[tokio::test]
async fn subscribing_to_a_terminal_task_leaves_nothing_behind() {
    let (log, topic, view) = view_over_memory().await;
    append(&log, &topic, &command("t1")).await;
    append(&log, &topic, &completed("t1")).await;
    view.sync(None, PATIENCE).await.unwrap();
    let (info, mut events) = view.subscribe(None, "t1").unwrap();
    assert_eq!(info.state, TaskState::Completed);
    let next = tokio::time::timeout(PATIENCE, events.recv()).await.unwrap();
    assert!(matches!(next, Err(RecvError::Closed)));
    assert!(view.read_of("t1").watchers.is_empty());
}

#[tokio::test]
async fn a_watch_on_a_new_task_hears_every_change_after_its_command() {
    let (log, topic, view) = view_over_memory().await;
    let watch = view.watch_new("w");
    // Both records are on the log before the view applies either: the follower takes the
    // command and what follows it in one go, and the watch still hears the change after it.
    append(&log, &topic, &command("w")).await;
    append(&log, &topic, &completed("w")).await;
    view.sync(None, PATIENCE).await.unwrap();
    let mut events = watch.created().expect("the events of the created task");
    let event = tokio::time::timeout(PATIENCE, events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((event.offset, event.state), (1, TaskState::Completed));
    let next = tokio::time::timeout(PATIENCE, events.recv()).await.unwrap();
    assert!(matches!(next, Err(RecvError::Closed)));
    // A watch given up before its task exists leaves nothing behind.
    drop(view.watch_new("never"));
    assert!(view.read_of("never").pending.is_empty());
}

#[tokio::test]
async fn the_follower_applies_appends_with_nobody_asking() {
    // No request syncs and nobody subscribes: the follower alone brings the view to the
    // log's end.
    let (log, topic, view) = view_over_memory().await;
    for n in 0..200 {
        append(&log, &topic, &command(&format!("t{n}"))).await;
    }
    tokio::time::timeout(PATIENCE, async {
        while view.task_count() < 200 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(view.lag().await.unwrap(), 0);
}

#[tokio::test]
async fn an_own_command_is_applied_inline_only_right_after_what_is_applied() {
    let (log, topic, view) = view_over_memory().await;
    let caller = Caller::principal("p");
    let (a, b) = (command("a"), command("b"));
    // Appended on this (single-threaded) runtime without yielding: the follower has not run.
    append(&log, &topic, &a).await;
    view.apply_own_command(0, 0, Place::UNKNOWN, &a, false);
    let inline = view
        .lookup(&caller, "a")
        .expect("applied inline, no await in between");
    assert_eq!(inline.state, TaskState::Submitted);
    assert_eq!(&*inline.records, &[Applied::new(0, true)]);

    // Not right after what is applied (offset 1 was not applied yet): kept until the view
    // reaches it, which reads offset 1 alone from the log.
    append(&log, &topic, &completed("a")).await;
    append(&log, &topic, &b).await;
    view.apply_own_command(0, 2, Place::UNKNOWN, &b, false);
    assert!(view.lookup(&caller, "b").is_none());
    view.sync(None, PATIENCE).await.unwrap();
    // Already applied: a second call changes nothing.
    view.apply_own_command(0, 0, Place::UNKNOWN, &a, false);

    // A view that folds everything from the log agrees on every task.
    agrees_with_a_fresh_view(&view, &log, &topic, &["a", "b"]).await;
    assert_eq!(
        view.lookup(&caller, "a").unwrap().state,
        TaskState::Completed
    );
}

/// Check that a view folding `topic` from the log alone agrees with `view` on every one of
/// `tasks` (caller "p") and on the counters.
async fn agrees_with_a_fresh_view(view: &TaskView, log: &Log, topic: &TopicRef, tasks: &[&str]) {
    let caller = Caller::principal("p");
    let fresh = TaskView::start(log.clone(), topic.clone()).await.unwrap();
    fresh.sync(None, PATIENCE).await.unwrap();
    for task in tasks {
        let (mine, theirs) = (
            view.lookup(&caller, task).unwrap(),
            fresh.lookup(&caller, task).unwrap(),
        );
        assert_eq!(
            (
                mine.state,
                mine.status_timestamp_ms,
                &mine.last_message_id,
                &mine.records
            ),
            (
                theirs.state,
                theirs.status_timestamp_ms,
                &theirs.last_message_id,
                &theirs.records
            ),
            "task {task}"
        );
    }
    assert_eq!(view.counters(), fresh.counters());
}

#[tokio::test]
async fn own_appends_answered_out_of_order_are_applied_as_appended_once_the_view_reaches_them() {
    let (log, topic, view) = view_over_memory().await;
    let caller = Caller::principal("p");
    let (a, b, done_b) = (command("a"), command("b"), completed("b"));
    // Appended on this (single-threaded) runtime without yielding: the follower has not run.
    append(&log, &topic, &a).await;
    append(&log, &topic, &b).await;
    append(&log, &topic, &done_b).await;
    // b's command and its end are answered first: the view stands before them, so they wait.
    let own = view.apply_own_command(0, 1, Place::UNKNOWN, &b, false);
    assert_eq!(own, OwnCommand::NotApplied);
    assert!(
        view.apply_own(0, 2, Place::UNKNOWN, std::slice::from_ref(&done_b))
            .is_none()
    );
    assert!(view.lookup(&caller, "b").is_none());
    // a's comes last: applied, and b's records after it, with no await in between.
    let own = view.apply_own_command(0, 0, Place::UNKNOWN, &a, false);
    assert_eq!(own, OwnCommand::Created);
    let b_now = view
        .lookup(&caller, "b")
        .expect("b applied from what was kept");
    assert_eq!(b_now.state, TaskState::Completed);
    let status = view.partition_status();
    assert_eq!(
        status.iter().find(|s| s.partition == 0).map(|s| s.applied),
        Some(3)
    );
    // Nothing is applied twice when the follower or a sync comes by.
    view.sync(None, PATIENCE).await.unwrap();
    agrees_with_a_fresh_view(&view, &log, &topic, &["a", "b"]).await;
}

#[tokio::test]
async fn own_records_kept_while_the_view_is_behind_are_applied_by_the_follower() {
    use crate::log::layers::{LogMetrics, LogOp};
    let metrics = LogMetrics::new();
    let (log, topic, view) = view_over_counted_memory(&metrics, 1).await;
    let caller = Caller::principal("p");
    // Someone else's record at 0, then this process's command at 1, kept (the view is at 0).
    append(&log, &topic, &command("theirs")).await;
    let mine = command("mine");
    append(&log, &topic, &mine).await;
    assert_eq!(
        view.apply_own_command(0, 1, Place::UNKNOWN, &mine, false),
        OwnCommand::NotApplied
    );
    view.sync(None, PATIENCE).await.unwrap();
    assert!(view.lookup(&caller, "theirs").is_some());
    assert_eq!(
        view.lookup(&caller, "mine").map(|t| t.state),
        Some(TaskState::Submitted)
    );
    // Only the record before it was read from the log.
    assert_eq!(metrics.records(LogOp::Read), 1);
}

#[tokio::test]
async fn a_task_read_back_from_its_content_records_is_the_fold_of_all_of_them() {
    let (log, topic, view) = view_over_memory().await;
    let caller = Caller::principal("p");
    let status = |id: &str, state: TaskState, text: Option<&str>| {
        let message = text.map_or(String::new(), |t| {
            format!(r#"{{"messageId":"s-{t}","role":"ROLE_AGENT","parts":[{{"text":"{t}"}}]}}"#)
        });
        record("a", id, RecordBody::status(state, message))
    };
    let artifact = artifact_out("a");
    // Status messages, superseded by ones without; records the machine ignores in between.
    let records = [
        command("a"),
        status("s1", TaskState::Working, Some("thinking")),
        status("s1", TaskState::Working, Some("a duplicate")),
        artifact,
        status("s2", TaskState::Working, None),
        status("s3", TaskState::InputRequired, Some("which one?")),
        status("s4", TaskState::Submitted, None),
        status("s5", TaskState::Completed, None),
        status("s6", TaskState::Failed, Some("after the end")),
    ];
    let all = agentlog_wire::fold::fold(&records).into_task().unwrap();
    for n in 0..records.len() {
        let expected = append_and_fold(&log, &topic, &view, &records, n).await;
        let info = view.lookup(&caller, "a").unwrap();
        assert_eq!(
            view.load(&info).await.unwrap(),
            expected,
            "after record {n}"
        );
        assert_eq!(view.get(&caller, "a").await.unwrap().unwrap(), expected);
    }
    let info = view.lookup(&caller, "a").unwrap();
    // Read back: the command, the two status messages, the artifact; not the duplicate, the
    // message-less statuses or what came after the terminal.
    assert_eq!(content_offsets(&info.records).as_slice(), [0, 1, 3, 5]);
    assert_eq!(info.offsets().collect::<Vec<_>>(), [0, 1, 3, 4, 5, 6, 7]);
    assert_eq!(all.status.state, TaskState::Completed);
    assert!(all.status.message.is_none());
    assert_eq!(all.history.len(), 3);
    // Another caller sees nothing, as with lookup.
    assert!(
        view.get(&Caller::principal("q"), "a")
            .await
            .unwrap()
            .is_none()
    );
    assert!(view.get(&caller, "nope").await.unwrap().is_none());
}

/// A task read again unchanged is given from its kept fold, without a read of the log, and
/// read and folded again once anything of it changes; who may see it is checked every time.
#[tokio::test]
async fn a_task_polled_unchanged_is_read_from_the_log_twice_then_kept() {
    use crate::log::layers::{LogMetrics, LogOp};
    let metrics = LogMetrics::new();
    let (log, topic, view) = view_over_counted_memory(&metrics, 2).await;
    let caller = Caller::principal("p");
    let records = [
        command("a"),
        record(
            "a",
            "s1",
            RecordBody::status(TaskState::Working, String::new()),
        ),
        artifact_out("a"),
        record(
            "a",
            "s2",
            RecordBody::status(TaskState::Completed, String::new()),
        ),
    ];
    for n in 0..records.len() {
        let expected = append_and_fold(&log, &topic, &view, &records, n).await;
        let reads = metrics.calls(LogOp::ReadAt);
        for _ in 0..4 {
            assert_eq!(view.get(&caller, "a").await.unwrap().unwrap(), expected);
        }
        assert_eq!(metrics.calls(LogOp::ReadAt), reads + 2, "after record {n}");
        assert!(
            view.get(&Caller::principal("q"), "a")
                .await
                .unwrap()
                .is_none()
        );
    }
}

#[tokio::test]
async fn the_input_required_index_follows_each_task_in_and_out() {
    let (log, topic, view) = view_over_memory().await;
    let asks = |task: &str, at: u64| {
        let mut r = record(
            task,
            &format!("ask-{task}"),
            RecordBody::status(TaskState::InputRequired, String::new()),
        );
        r.header.timestamp_ms = at;
        r
    };
    append(&log, &topic, &command("t1")).await;
    append(&log, &topic, &asks("t1", 1_700_000_000_500)).await;
    append(&log, &topic, &command("t2")).await;
    view.sync(None, PATIENCE).await.unwrap();
    // Built on the first call from what the view holds, then kept record by record.
    let ids = |v: Vec<(Arc<str>, u64)>| -> Vec<(String, u64)> {
        v.into_iter().map(|(id, at)| (id.to_string(), at)).collect()
    };
    assert_eq!(
        ids(view.awaiting_input(0)),
        [("t1".to_owned(), 1_700_000_000_500)]
    );
    append(&log, &topic, &asks("t2", 1_700_000_000_900)).await;
    let cancel = record(
        "t1",
        "cancel-t1",
        RecordBody::CancelRequest {
            metadata: String::new(),
        },
    );
    append(&log, &topic, &cancel).await;
    view.sync(None, PATIENCE).await.unwrap();
    assert_eq!(
        ids(view.awaiting_input(0)),
        [("t2".to_owned(), 1_700_000_000_900)]
    );
    assert!(view.awaiting_input(7).is_empty());
}

#[tokio::test]
async fn a_handed_off_command_gives_the_first_turn_the_log_gives_at_its_offset_only() {
    let (log, topic, view) = view_over_memory().await;
    let caller = Caller::principal("p");
    let parsed = |record: &Record| match &record.body {
        RecordBody::Command { params, .. } => {
            serde_json::from_str::<agentlog_wire::a2a::SendMessageRequest>(params).unwrap()
        }
        _ => unreachable!("a command"),
    };
    let mut a = command("a");
    a.header.bridge_hops = vec!["b1".into()];
    append(&log, &topic, &a).await;
    view.sync(None, PATIENCE).await.unwrap();
    let info = view.lookup(&caller, "a").unwrap();
    let from_log = view.load_turn(&info, Some("m-a")).await.unwrap();
    assert_eq!(from_log.1.hops, ["b1"]);

    // Nothing kept until a worker asks.
    view.hand_off(0, &a, &parsed(&a));
    assert!(view.take_handed_off("a", 0).is_none());
    view.hand_off_commands();
    view.hand_off(0, &a, &parsed(&a));
    assert_eq!(view.load_turn(&info, Some("m-a")).await.unwrap(), from_log);
    assert!(view.take_handed_off("a", 0).is_none(), "taken by that load");

    // Kept at another offset than the task's command: not used, the log is read.
    let mut other = parsed(&a);
    other.message.parts = vec![agentlog_wire::a2a::Part::text("not what the log holds")];
    view.hand_off(7, &a, &other);
    assert_eq!(view.load_turn(&info, Some("m-a")).await.unwrap(), from_log);
    // At the command's offset it is used: the parse is the caller's word (here a wrong one,
    // to see that the log was not read).
    view.hand_off(0, &a, &other);
    let (task, _) = view.load_turn(&info, Some("m-a")).await.unwrap();
    assert_eq!(
        task.history[0].parts[0].as_text(),
        Some("not what the log holds")
    );

    // Once the task has more content than its command, the log is read.
    view.hand_off(0, &a, &parsed(&a));
    let done = record(
        "a",
        "s1",
        RecordBody::StatusUpdate {
            state: TaskState::Working.into(),
            message: serde_json::to_string(&agentlog_wire::a2a::Message::agent_text("s1", "on it"))
                .unwrap(),
        },
    );
    append(&log, &topic, &done).await;
    view.sync(None, PATIENCE).await.unwrap();
    let later = view.lookup(&caller, "a").unwrap();
    let (task, _) = view.load_turn(&later, Some("m-a")).await.unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    assert!(
        view.take_handed_off("a", 0).is_some(),
        "not taken by that load"
    );
}

/// A worker's view keeps the new commands its follower applies (another process's bridge
/// wrote them): their first turns load without a read of the log, as the log folds them.
#[tokio::test]
async fn a_command_the_follower_applies_gives_its_first_turn_without_a_read() {
    use crate::log::layers::{LogMetrics, LogOp};
    let metrics = LogMetrics::new();
    let (log, topic, view) = view_over_counted_memory(&metrics, 4).await;
    view.wait_caught_up().await;
    let caller = Caller::principal("p");
    // Before a worker asks, the follower keeps nothing.
    append(&log, &topic, &command("before")).await;
    view.sync(None, PATIENCE).await.unwrap();
    let info = view.lookup(&caller, "before").unwrap();
    let reads = metrics.calls(LogOp::ReadAt);
    view.load_turn(&info, Some("m-before")).await.unwrap();
    assert_eq!(metrics.calls(LogOp::ReadAt), reads + 1, "read from the log");

    view.hand_off_commands();
    let mut a = command("a");
    a.header.bridge_hops = vec!["b1".into()];
    append(&log, &topic, &a).await;
    view.sync(None, PATIENCE).await.unwrap();
    let info = view.lookup(&caller, "a").unwrap();
    let reads = metrics.calls(LogOp::ReadAt);
    let kept = view.load_turn(&info, Some("m-a")).await.unwrap();
    assert_eq!(metrics.calls(LogOp::ReadAt), reads, "nothing read");
    assert_eq!(kept.1.hops, ["b1"]);
    // Taken by that load: the next one reads the log, and folds the same.
    let from_log = view.load_turn(&info, Some("m-a")).await.unwrap();
    assert_eq!(metrics.calls(LogOp::ReadAt), reads + 1);
    assert_eq!(kept, from_log);

    // A command over 16 KiB is not kept: its load reads the log.
    let mut big = command("big");
    let RecordBody::Command { params, .. } = &mut big.body else {
        unreachable!("a command")
    };
    *params = params.replace("hi", &"x".repeat(20_000));
    append(&log, &topic, &big).await;
    view.sync(None, PATIENCE).await.unwrap();
    let info = view.lookup(&caller, "big").unwrap();
    let reads = metrics.calls(LogOp::ReadAt);
    view.load_turn(&info, Some("m-big")).await.unwrap();
    assert_eq!(metrics.calls(LogOp::ReadAt), reads + 1, "read from the log");
}

/// A read about one task asks the log for its partition's end alone, and sees what any
/// writer appended there before it asked.
#[tokio::test]
async fn a_sync_of_one_partition_asks_for_that_partitions_end_only() {
    use crate::log::layers::{LogMetrics, LogOp};
    let metrics = LogMetrics::new();
    let (log, topic, view) = view_over_counted_memory(&metrics, 4).await;
    view.wait_caught_up().await;
    append(&log, &topic, &command("t1")).await;
    let partition = view.partition_of("t1");
    let (ends, end) = (
        metrics.calls(LogOp::EndOffsets),
        metrics.calls(LogOp::EndOffset),
    );
    view.sync(Some(partition), PATIENCE).await.unwrap();
    assert!(view.lookup_any("t1").is_some());
    assert_eq!(metrics.calls(LogOp::EndOffset), end + 1);
    assert_eq!(metrics.calls(LogOp::EndOffsets), ends);
    // ListTasks' sync asks about every partition at once.
    view.sync(None, PATIENCE).await.unwrap();
    assert_eq!(metrics.calls(LogOp::EndOffsets), ends + 1);
}

#[tokio::test]
async fn a_worker_waits_for_its_bridges_command_on_its_way_not_for_the_log() {
    let (_log, _topic, view) = view_over_memory().await;
    // Nothing marked until a worker shares the view.
    assert!(view.appending_command("a").is_none());
    view.own_command_landed("a", PATIENCE).await;

    view.hand_off_commands();
    let appending = view.appending_command("a").expect("marked");
    assert!(view.appending_command("a").is_none(), "one mark per task");
    // Another task's look does not wait.
    view.own_command_landed("b", PATIENCE).await;
    // This one's waits until the mark drops (the bridge applied its command, or gave up).
    let waiter = {
        let view = view.clone();
        tokio::spawn(async move { view.own_command_landed("a", PATIENCE).await })
    };
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    drop(appending);
    tokio::time::timeout(PATIENCE, waiter)
        .await
        .expect("woken when the mark drops")
        .expect("the waiter ran");
    // Bounded when nothing drops the mark.
    let _stuck = view.appending_command("a").expect("marked again");
    view.own_command_landed("a", Duration::from_millis(20))
        .await;
}
