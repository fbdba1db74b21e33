//! The view as an applier of its own appends: they do not wake its follower (its appender
//! applies them), and what the appender could only keep for later wakes it.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::log::layers::{LogMetrics, LogOp};

/// Append `command` made for `view`, as its bridge does, and offer it to the view.
async fn append_own_command(
    log: &Log,
    topic: &TopicRef,
    view: &TaskView,
    command: &Record,
) -> OwnCommand {
    let bytes = Bytes::from(command.encode().unwrap());
    let key = command.header.task_id.as_bytes();
    let appended = log
        .append_for(topic, key, vec![bytes], view.applier())
        .await
        .unwrap();
    view.apply_own_command(0, appended.first_offset, appended.place, command, false)
}

#[tokio::test]
async fn an_own_append_kept_for_later_is_applied_by_the_follower_without_a_sync() {
    let metrics = LogMetrics::new();
    let (log, topic, view) = view_over_counted_memory(&metrics, 1).await;
    let caller = Caller::principal("p");
    let mine = command("mine");
    // Another applier is at the partition: the appender can only keep its record.
    let busy = view.inner.parts[0].feed.lock().await;
    assert_eq!(
        append_own_command(&log, &topic, &view, &mine).await,
        OwnCommand::NotApplied
    );
    drop(busy);
    // The log's end did not wake the follower (the append was made for the view); the kept
    // record did. No sync here: only the follower can apply it.
    tokio::time::timeout(PATIENCE, async {
        while view.lookup(&caller, "mine").is_none() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the follower never applied the kept record");
    // Applied as kept, not read back from the log.
    assert_eq!(metrics.records(LogOp::Read), 0);
}

#[tokio::test]
async fn records_of_other_appenders_still_reach_the_view_through_its_follower() {
    let (log, topic, view) = view_over_memory().await;
    let caller = Caller::principal("p");
    // Made for the view and applied inline, then someone else's: the follower wakes for the
    // second alone and reads it.
    let (mine, theirs) = (command("mine"), command("theirs"));
    assert_eq!(
        append_own_command(&log, &topic, &view, &mine).await,
        OwnCommand::Created
    );
    append(&log, &topic, &theirs).await;
    tokio::time::timeout(PATIENCE, async {
        while view.lookup(&caller, "theirs").is_none() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the follower never applied another appender's record");
    agrees_with_a_fresh_view(&view, &log, &topic, &["mine", "theirs"]).await;
}
