use agentlog_wire::{RecordBody, RecordHeader, TaskState};
use bytes::Bytes;

use super::*;
use crate::bridge::BridgeConfig;
use crate::bridge::test_support::send_request;
use crate::log::Log;

/// A worker's record of `task_id`, written by `source` under `attempt` at `timestamp_ms`.
fn worker_record(
    task_id: &str,
    source: &str,
    attempt: u32,
    timestamp_ms: u64,
    body: RecordBody,
) -> Bytes {
    let record = Record {
        header: RecordHeader {
            task_id: task_id.to_owned(),
            source: source.to_owned(),
            attempt,
            timestamp_ms,
            ..RecordHeader::default()
        },
        body,
    };
    Bytes::from(record.encode().unwrap())
}

fn claim(turn: &str, lease_until_ms: u64) -> RecordBody {
    RecordBody::Claim {
        turn: turn.to_owned(),
        lease_until_ms,
    }
}

/// Read until the timeline stands at its history's end.
async fn history(timeline: &mut Timeline) -> Vec<TimelineRecord> {
    let mut records = Vec::new();
    while timeline.position() < timeline.history_end() {
        records.extend(timeline.next().await.unwrap());
    }
    records
}

#[tokio::test]
async fn every_record_of_the_task_comes_with_its_verdict_then_new_ones_live() {
    let log: Log = crate::log::open("memory://").await.unwrap();
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("timeline"))
        .await
        .unwrap();
    let alice = Caller::principal("alice");
    // Another task first, so the partition holds records that are not the task's.
    for message_id in ["other", "m-1"] {
        bridge
            .send_message(&alice, send_request(message_id, true))
            .await
            .unwrap();
    }
    let task_id = agentlog_wire::ids::task_id("", "alice", "m-1");
    let events = &bridge.config().topics.events;
    let now = crate::retention::now_ms();
    let worker = |source: &str, attempt: u32, at: u64, body: RecordBody| {
        worker_record(&task_id, source, attempt, now + at, body)
    };
    let working = RecordBody::status(TaskState::Working, String::new());
    let done = RecordBody::status(TaskState::Completed, String::new());
    let payloads = vec![
        worker("w1", 1, 1, claim("m-1", now + 5)),
        worker("w1", 1, 2, working.clone()),
        // w1's lease ran out: w2 takes the turn over, and w1's late record is fenced.
        worker("w2", 2, 10, claim("m-1", now + 10_000)),
        worker("w1", 1, 11, working),
        worker("w2", 2, 12, done),
    ];
    log.append(events, task_id.as_bytes(), payloads)
        .await
        .unwrap();

    let mut timeline = bridge.timeline(&alice, None, &task_id).await.unwrap();
    let records = history(&mut timeline).await;
    let seen: Vec<(&str, Verdict)> = records
        .iter()
        .map(|r| (r.record.header.source.as_str(), r.verdict))
        .collect();
    let bridge_source = bridge.config().source.as_str();
    assert_eq!(
        seen,
        vec![
            (bridge_source, Verdict::Applied(None)),
            ("w1", Verdict::Applied(Some(ClaimKind::First))),
            ("w1", Verdict::Applied(None)),
            ("w2", Verdict::Applied(Some(ClaimKind::Takeover))),
            ("w1", Verdict::Ignored(Outcome::Fenced)),
            ("w2", Verdict::Applied(None)),
        ]
    );
    assert!(records.windows(2).all(|w| w[0].offset < w[1].offset));
    assert!(records.iter().all(|r| *r.record.header.task_id == *task_id));

    // A record appended later arrives live, judged against everything before it.
    let late = worker_record(
        &task_id,
        "w1",
        1,
        now + 20,
        RecordBody::status(TaskState::Failed, String::new()),
    );
    log.append(events, task_id.as_bytes(), vec![late])
        .await
        .unwrap();
    let mut live = Vec::new();
    while live.is_empty() {
        live = timeline.next().await.unwrap();
    }
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].verdict, Verdict::Ignored(Outcome::AfterTerminal));
}

#[tokio::test]
async fn another_callers_task_is_not_found_as_a_missing_one() {
    let log: Log = crate::log::open("memory://").await.unwrap();
    let bridge = Bridge::open(log, BridgeConfig::new("timeline"))
        .await
        .unwrap();
    let alice = Caller::principal("alice");
    bridge
        .send_message(&alice, send_request("m-1", true))
        .await
        .unwrap();
    let task_id = agentlog_wire::ids::task_id("", "alice", "m-1");
    let kind = |result: Result<Timeline>| result.map(|_| ()).unwrap_err().kind();
    let bob = Caller::principal("bob");
    assert_eq!(
        kind(bridge.timeline(&bob, None, &task_id).await),
        ErrorKind::TaskNotFound
    );
    assert_eq!(
        kind(bridge.timeline(&alice, None, "missing").await),
        ErrorKind::TaskNotFound
    );
    // Alice in another tenant: refused by the tenant rules before anything is read.
    assert_eq!(
        kind(bridge.timeline(&alice, Some("acme"), &task_id).await),
        ErrorKind::PermissionDenied
    );
    assert_eq!(
        kind(bridge.timeline(&alice, None, "").await),
        ErrorKind::InvalidParams
    );
    let mut timeline = bridge.timeline(&alice, None, &task_id).await.unwrap();
    assert_eq!(history(&mut timeline).await.len(), 1);
}
