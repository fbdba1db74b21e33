//! The fault suite: every fault of [`FaultLayer`] against a bridge and a worker, on any
//! backend. The faults go on one component's handle (a bridge's, or a worker's) over storage
//! the others share, as one process's connection fails while the log lives on: a crash
//! between the bridge's two appends, a failed append or batch, dropped connections, failed
//! polls and commits, short reads, and a log too slow to answer in time.

use std::time::Duration;

use agentlog::log::Log;
use agentlog::log::layers::{FaultLayer, Faults, RetryLayer};
use agentlog::worker::{Worker, WorkerConfig};
use agentlog::{Bridge, BridgeConfig, Caller, ErrorKind};
use agentlog_wire::TaskState;
use agentlog_wire::a2a::Task;

use crate::bridge_suite::{Backend, SOON, bridge, get, request, task, wait_for};
use crate::streamer::{Streamer, one_attempt, task_records};

/// Run every case against `subject`.
pub async fn run_all(subject: &dyn Backend) {
    crate::run_cases!(
        subject,
        "f",
        [
            a_crash_between_the_two_appends_leaves_no_task_behind,
            a_failed_commands_append_leaves_no_task_behind,
            a_failed_append_is_an_error_the_client_retries,
            the_retry_layer_hides_transient_faults_from_the_worker,
            a_worker_whose_connection_drops_carries_on,
            failed_polls_and_commits_are_retried,
            short_reads_answer_the_same,
            a_log_too_slow_to_answer_gives_a_retryable_timeout,
        ]
    );
}

/// A second handle on `log`'s storage with a fault layer: for memory:// and file:// the
/// same backend, for a broker its own connection.
async fn faulted(subject: &dyn Backend, log: &Log, faults: &Faults) -> Log {
    subject
        .replica(log)
        .await
        .layer(FaultLayer::new(faults.clone()))
}

fn worker_config(agent: &str) -> WorkerConfig {
    let mut config = WorkerConfig::new(agent);
    config.lease = Duration::from_secs(1);
    config.requeue_after = Duration::from_millis(500);
    config.shutdown_timeout = Duration::from_millis(300);
    config
}

async fn streamer_worker(log: &Log, agent: &str, streamer: &Streamer) -> Worker {
    Worker::start(log.clone(), worker_config(agent), streamer.clone())
        .await
        .expect("worker")
}

async fn done(bridge: &Bridge, caller: &Caller, id: &str) -> Task {
    let t = wait_for(bridge, caller, id, |t| t.status.state.is_terminal()).await;
    assert_eq!(t.status.state, TaskState::Completed, "task {id}");
    t
}

async fn a_crash_between_the_two_appends_leaves_no_task_behind(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let observer = bridge(&log, agent).await;
    let faults = Faults::new();
    let doomed = bridge(&faulted(subject, &log, &faults).await, agent).await;
    let streamer = Streamer::new(3, Duration::from_millis(1));
    let w = streamer_worker(&log, agent, &streamer).await;
    let c = Caller::principal("alice");
    faults.crash_between_appends();
    let err = doomed
        .send_message(&c, request("m-1", "half", false))
        .await
        .expect_err("the bridge died between its appends");
    assert!(err.is_retryable(), "{err}");
    assert!(faults.is_crashed());
    assert_eq!(faults.counts().crash, 1);
    // Nobody retries: the sweeper puts the command back on the queue.
    let id = agentlog_wire::ids::task_id("", "alice", "m-1");
    let t = done(&observer, &c, &id).await;
    one_attempt(&t, 3);
    w.shutdown().await.expect("shutdown");
}

async fn a_failed_commands_append_leaves_no_task_behind(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let faults = Faults::new();
    let b = bridge(&faulted(subject, &log, &faults).await, agent).await;
    let streamer = Streamer::new(3, Duration::from_millis(1));
    let w = streamer_worker(&log, agent, &streamer).await;
    let c = Caller::principal("alice");
    // The second batch of the bridge's `append_all` (the commands copy) fails.
    faults.fail_batch(1);
    let err = b
        .send_message(&c, request("m-1", "no copy", false))
        .await
        .expect_err("the commands append failed");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(faults.counts().batch, 1);
    let id = agentlog_wire::ids::task_id("", "alice", "m-1");
    done(&b, &c, &id).await;
    assert_eq!(streamer.runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    w.shutdown().await.expect("shutdown");
}

async fn a_failed_append_is_an_error_the_client_retries(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let faults = Faults::new();
    let b = bridge(&faulted(subject, &log, &faults).await, agent).await;
    let c = Caller::principal("alice");
    // A cancel's append fails: a retryable error, and the retry cancels.
    let first = task(
        b.send_message(&c, request("m-0", "x", true))
            .await
            .expect("send"),
    );
    faults.fail_append(1);
    let err = b
        .cancel_task(&c, crate::bridge_suite::cancel(&first.id))
        .await
        .expect_err("the cancel's append failed");
    assert!(err.is_retryable(), "{err}");
    assert_eq!(faults.counts().append, 1);
    let canceled = b
        .cancel_task(&c, crate::bridge_suite::cancel(&first.id))
        .await
        .expect("the retried cancel");
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // A send whose first append fails writes nothing; its retry runs the task once.
    let streamer = Streamer::new(3, Duration::from_millis(1));
    let w = streamer_worker(&log, agent, &streamer).await;
    faults.fail_batch_with(0, ErrorKind::Timeout);
    let err = b
        .send_message(&c, request("m-1", "retry me", false))
        .await
        .expect_err("the send's append failed");
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let id = agentlog_wire::ids::task_id("", "alice", "m-1");
    assert!(
        task_records(&log, agent, &id).await.is_empty(),
        "nothing written"
    );
    let t = task(
        b.send_message(&c, request("m-1", "retry me", false))
            .await
            .expect("the retry"),
    );
    assert_eq!(t.status.state, TaskState::Completed);
    assert_eq!(streamer.runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    w.shutdown().await.expect("shutdown");
}

async fn the_retry_layer_hides_transient_faults_from_the_worker(
    subject: &dyn Backend,
    agent: &str,
) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let faults = Faults::new();
    let worker_log = faulted(subject, &log, &faults)
        .await
        .layer(RetryLayer::new());
    let streamer = Streamer::new(5, Duration::from_millis(20));
    let w = streamer_worker(&worker_log, agent, &streamer).await;
    let c = Caller::principal("alice");
    let mut ids = Vec::new();
    for i in 0..8 {
        ids.push(
            task(
                b.send_message(&c, request(&format!("m-{i}"), "x", true))
                    .await
                    .expect("send"),
            )
            .id,
        );
    }
    // While the handlers stream: appends fail now and then, each retried below the worker.
    for _ in 0..6 {
        faults.fail_append(2);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    for id in &ids {
        let t = done(&b, &c, id).await;
        assert_eq!(one_attempt(&t, 5), 1, "no handler saw a fault");
    }
    assert!(
        faults.counts().append > 0,
        "faults fired: {:?}",
        faults.counts()
    );
    assert_eq!(
        streamer.runs.load(std::sync::atomic::Ordering::SeqCst),
        ids.len()
    );
    w.shutdown().await.expect("shutdown");
}

async fn a_worker_whose_connection_drops_carries_on(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let faults = Faults::new();
    let streamer = Streamer::new(3, Duration::from_millis(5));
    let w = streamer_worker(&faulted(subject, &log, &faults).await, agent, &streamer).await;
    let c = Caller::principal("alice");
    // Everything the worker does fails for a while: polls, view reads, claims.
    faults.drop_connection(40);
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(
            task(
                b.send_message(&c, request(&format!("m-{i}"), "x", true))
                    .await
                    .expect("send"),
            )
            .id,
        );
    }
    for id in &ids {
        done(&b, &c, id).await;
    }
    assert!(faults.counts().dropped > 0, "{:?}", faults.counts());
    w.shutdown().await.expect("shutdown");
}

async fn failed_polls_and_commits_are_retried(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let faults = Faults::new();
    let streamer = Streamer::new(2, Duration::from_millis(1));
    let w = streamer_worker(&faulted(subject, &log, &faults).await, agent, &streamer).await;
    let c = Caller::principal("alice");
    for i in 0..3 {
        faults.fail_poll();
        faults.fail_commit();
        let t = task(
            b.send_message(&c, request(&format!("m-{i}"), "x", false))
                .await
                .expect("send"),
        );
        assert_eq!(t.status.state, TaskState::Completed);
    }
    // Commits are paced (the worker commits finished work every so often): wait for the
    // first, which meets the failure set above.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while faults.counts().commit == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let counts = faults.counts();
    assert!(counts.poll > 0 && counts.commit > 0, "{counts:?}");
    assert_eq!(streamer.runs.load(std::sync::atomic::Ordering::SeqCst), 3);
    w.shutdown().await.expect("shutdown");
}

async fn short_reads_answer_the_same(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let streamer = Streamer::new(40, Duration::ZERO);
    let w = streamer_worker(&log, agent, &streamer).await;
    let c = Caller::principal("alice");
    let t = task(
        b.send_message(&c, request("m-1", "x", false))
            .await
            .expect("send"),
    );
    let faults = Faults::new();
    faults.short_reads(3);
    let short = bridge(&faulted(subject, &log, &faults).await, agent).await;
    assert_eq!(short.get_task(&c, get(&t.id)).await.expect("get"), t);
    assert!(faults.counts().short_reads > 0, "{:?}", faults.counts());
    w.shutdown().await.expect("shutdown");
}

async fn a_log_too_slow_to_answer_gives_a_retryable_timeout(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    let t = task(
        b.send_message(&c, request("m-1", "x", true))
            .await
            .expect("send"),
    );
    let faults = Faults::new();
    let mut config = BridgeConfig::new(agent);
    config.sync_timeout = Duration::from_millis(200);
    let slow = Bridge::open(faulted(subject, &log, &faults).await, config)
        .await
        .expect("bridge");
    faults.delay_all(Duration::from_secs(3));
    let started = std::time::Instant::now();
    let err = slow.get_task(&c, get(&t.id)).await.expect_err("too slow");
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.is_retryable());
    assert!(started.elapsed() < SOON, "bounded by the sync timeout");
    faults.clear_delays();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        slow.get_task(&c, get(&t.id))
            .await
            .expect("in time again")
            .id,
        t.id
    );
}
