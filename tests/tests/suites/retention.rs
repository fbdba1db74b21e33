//! The retention suite (expiry, checkpoints) on every backend: `memory://`, `file://` and,
//! when an `iggy-server` binary is found, Apache Iggy.

use agentlog_integration::backends::{Dir, Iggy, Memory};
use agentlog_integration::iggy_server::IggyServer;
use agentlog_integration::retention_suite::run_all;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_on_memory() {
    run_all(&Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_on_file() {
    run_all(&Dir::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_on_iggy() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    run_all(&Iggy::new(server)).await;
}

/// Many short tasks with a short retention over small segments: once the retention has
/// passed and two checkpoints cover them, the log deletes every segment only expired tasks
/// needed, keeps the segments of a task still waiting for input, and answers it as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_stays_bounded_by_what_is_retained() {
    use std::time::Duration;

    use agentlog::bridge::{Bridge, BridgeConfig};
    use agentlog::view::CompactTopics;
    use agentlog::worker::{Worker, WorkerConfig};
    use agentlog::{AgentTopics, Caller};
    use agentlog_integration::bridge_suite::{follow_up, get, request, task};
    use agentlog_server::agents::DemoHandler;
    use agentlog_wire::TaskState;

    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!(
        "file://{}?segment_bytes=16384&retention=1s&fsync=never",
        dir.path().display()
    );
    let log = agentlog::log::open(&url).await.expect("open");
    let mut config = BridgeConfig::new("soak");
    config.checkpoint_every = None;
    let bridge = Bridge::open(log.clone(), config).await.expect("bridge");
    let worker = Worker::start(log.clone(), WorkerConfig::new("soak"), DemoHandler)
        .await
        .expect("worker");
    let c = Caller::principal("alice");
    let waiting = task(
        bridge
            .send_message(&c, request("keep", "input", false))
            .await
            .expect("send"),
    );
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    let topics = AgentTopics::of("soak");
    let segments = |topic: agentlog::log::TopicRef| {
        let log = log.clone();
        async move {
            let mut count = 0;
            for partition in 0..topics_partitions() {
                count += log
                    .segments(&topic, partition)
                    .await
                    .expect("segments")
                    .len();
            }
            count
        }
    };
    let sends = futures::stream::iter(0..3_000).map(|n| {
        let (bridge, c) = (bridge.clone(), c.clone());
        async move {
            let done = task(
                bridge
                    .send_message(&c, request(&format!("s-{n}"), "echo", false))
                    .await
                    .expect("send"),
            );
            assert_eq!(done.status.state, TaskState::Completed);
        }
    });
    use futures::StreamExt;
    sends.buffer_unordered(32).collect::<Vec<_>>().await;
    let before = segments(topics.events.clone()).await;
    assert!(
        before > 3 * topics_partitions() as usize,
        "the soak filled {before} segments"
    );

    // Two checkpoints past everything, the retention over: the view drops the tasks, and
    // the compaction deletes what only they needed.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let view = bridge.view();
    view.expire_now();
    view.checkpoint().await.expect("checkpoint");
    view.checkpoint().await.expect("checkpoint");
    let others = CompactTopics {
        commands: topics.commands.clone(),
        commands_retention_ms: 1_000,
    };
    let compacted = view.compact(Some(&others)).await.expect("compact");
    assert!(compacted.segments > 0);
    let after = segments(topics.events.clone()).await;
    eprintln!("events: {before} sealed segments, {after} after the compaction ({compacted:?})");
    // What is left: at most the segment holding the waiting task's records and the one the
    // checkpoints' positions sit in, per partition (sealed ones; the active one is extra).
    assert!(
        after <= 2 * topics_partitions() as usize,
        "{after} sealed segments left of {before}"
    );
    assert!(segments(topics.commands.clone()).await <= topics_partitions() as usize);
    assert!(view.task_count() <= 2, "{} tasks kept", view.task_count());

    // The waiting task is whole, and goes on.
    assert_eq!(
        bridge.get_task(&c, get(&waiting.id)).await.expect("get"),
        waiting
    );
    worker.shutdown().await.expect("shutdown");
    drop(bridge);
    log.close().await.expect("close");

    // A restart over the compacted log starts from the checkpoint and answers the same (the
    // task still waits for input, so no retention can expire it however slow the restart),
    // and the task goes on there.
    let log = agentlog::log::open(&url).await.expect("reopen");
    let mut config = BridgeConfig::new("soak");
    config.checkpoint_every = None;
    let again = Bridge::open(log.clone(), config).await.expect("bridge");
    assert!(again.view().restored_from().is_some());
    assert_eq!(
        again.get_task(&c, get(&waiting.id)).await.expect("get"),
        waiting
    );
    let worker = Worker::start(log.clone(), WorkerConfig::new("soak"), DemoHandler)
        .await
        .expect("worker");
    let done = task(
        again
            .send_message(&c, follow_up(&waiting.id, "keep-2", "yes"))
            .await
            .expect("continue"),
    );
    assert_eq!(done.status.state, TaskState::Completed);
    worker.shutdown().await.expect("shutdown");
    log.close().await.expect("close");
}

fn topics_partitions() -> u32 {
    agentlog::AgentTopics::of("soak").partitions
}
