//! Unit tests of ListTasks' pages against a scan, and of a long task's bounded memory, over the
//! in-memory log.
#![allow(clippy::unwrap_used)]

use agentlog_wire::{RecordBody, TaskState};

use bytes::Bytes;

use super::retention::{at, caller, caught_up_view, command, memory_log, status};
use super::*;
use crate::view::key::{KeyRef, stable_hash};

#[tokio::test]
async fn list_pages_agree_with_a_scan_for_every_filter() {
    let (log, events, _) = memory_log(2).await;
    let now = now_ms();
    let states = [
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Failed,
    ];
    for n in 0..300u64 {
        let task = format!("t{n}");
        let mut command = command(&task, "hi", now + n % 50, 86_400_000);
        command.header.context_id = format!("ctx-{}", n % 4);
        append(&log, &events, &command).await;
        if n % 5 != 0 {
            let state = states[(n % 4) as usize];
            append(&log, &events, &status(&task, "s", now + n % 50 + 1, state)).await;
        }
    }
    let view = caught_up_view(&log, &events, ViewOptions::default()).await;
    let all: Vec<TaskInfo> = (0..300)
        .filter_map(|n| view.lookup(&caller(), &format!("t{n}")))
        .collect();
    for context in [None, Some("ctx-1"), Some("ctx-9")] {
        for state in [None, Some(TaskState::Submitted), Some(TaskState::Completed)] {
            for after in [None, Some(now + 25)] {
                let mut want: Vec<(u64, Arc<str>)> = all
                    .iter()
                    .filter(|i| context.is_none_or(|c| &*i.context_id == c))
                    .filter(|i| state.is_none_or(|s| i.state == s))
                    .filter(|i| after.is_none_or(|a| i.status_timestamp_ms >= a))
                    .map(|i| (i.status_timestamp_ms, i.id.clone()))
                    .collect();
                // Newest first; equal times by the id's stable hash, the same everywhere.
                want.sort_by_key(|(ts, id)| (*ts, stable_hash(KeyRef::of(id))));
                want.reverse();
                let mut filter = ListFilter {
                    context_id: context.map(str::to_owned),
                    state,
                    status_after_ms: after,
                    page_size: 7,
                    cursor: None,
                };
                let mut got = Vec::new();
                loop {
                    let (page, total) = view.list(&caller(), &filter);
                    assert_eq!(total, want.len(), "{context:?} {state:?} {after:?}");
                    let Some(last) = page.last() else { break };
                    filter.cursor = Some((last.status_timestamp_ms, last.id.to_string()));
                    got.extend(page.iter().map(|i| (i.status_timestamp_ms, i.id.clone())));
                }
                assert_eq!(got, want, "{context:?} {state:?} {after:?}");
            }
        }
    }
    // Another owner sees none of them.
    assert_eq!(
        view.list(
            &Caller::principal("q"),
            &ListFilter {
                page_size: 10,
                ..ListFilter::default()
            }
        )
        .1,
        0
    );
}

#[tokio::test]
async fn a_task_with_100k_records_keeps_bounded_memory_and_reads_back_whole() {
    let (log, events, checkpoints) = memory_log(1).await;
    let view = caught_up_view(
        &log,
        &events,
        ViewOptions::checkpointed(checkpoints.clone()),
    )
    .await;
    let now = now_ms();
    append(&log, &events, &command("long", "stream", now, 86_400_000)).await;
    // Another task's records in between: the long task's are not contiguous.
    append(&log, &events, &command("other", "hi", now, 86_400_000)).await;
    let mut batch = Vec::new();
    for n in 0..100_000u64 {
        let record = if n % 2 == 0 {
            status("long", &format!("s-{n}"), now + n, TaskState::Working)
        } else {
            at(
                "long",
                &format!("a-{n}"),
                now + n,
                RecordBody::ArtifactUpdate {
                    append: true,
                    last_chunk: false,
                    artifact: format!(r#"{{"artifactId":"out","parts":[{{"text":"{n}"}}]}}"#),
                },
            )
        };
        batch.push(Bytes::from(record.encode().unwrap()));
        if batch.len() == 1_000 {
            log.append(&events, b"long", std::mem::take(&mut batch))
                .await
                .unwrap();
        }
    }
    view.sync(None, PATIENCE).await.unwrap();
    {
        let tasks = view.read_of("long");
        let entry = tasks.entries.get("long").unwrap();
        assert_eq!(
            entry.records.len(),
            applied::MAX_LISTED + 1,
            "a bounded listing"
        );
        let seen = entry.machine.snapshot().seen.unwrap();
        assert!(
            seen.1.len() <= agentlog_wire::fold::RECENT_IDS,
            "a bounded dedupe window"
        );
    }
    // What GetTask answers is the fold of every record of the task.
    let task = view.get(&caller(), "long").await.unwrap().unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    assert_eq!(task.artifacts[0].parts.len(), 50_000);
    assert_eq!(task.artifacts[0].parts[49_999].as_text(), Some("99999"));
    // A snapshot at an earlier position, and a restart from a checkpoint, agree.
    let info = view.lookup(&caller(), "long").unwrap();
    let (snapshot, mut events) = view.subscribe(Some(&caller()), "long").unwrap();
    assert_eq!(view.load(&snapshot).await.unwrap(), task);
    assert!(events.try_recv().is_err());
    view.checkpoint().await.unwrap().unwrap();
    let restored = caught_up_view(
        &log,
        &events_topic(),
        ViewOptions::restore_only(checkpoints),
    )
    .await;
    assert!(restored.restored_from().is_some());
    assert_eq!(
        restored.get(&caller(), "long").await.unwrap().unwrap(),
        task
    );
    assert_eq!(
        restored.lookup(&caller(), "long").unwrap().position(),
        info.position()
    );
    // Finishing it frees what it pinned.
    append(
        &log,
        &events_topic(),
        &at(
            "long",
            "done",
            now + 200_000,
            RecordBody::status(TaskState::Completed, String::new()),
        ),
    )
    .await;
    view.sync(None, PATIENCE).await.unwrap();
    let done = view.get(&caller(), "long").await.unwrap().unwrap();
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.artifacts, task.artifacts);
}

fn events_topic() -> TopicRef {
    TopicRef::new("s", "a.events")
}
