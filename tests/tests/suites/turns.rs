//! The turn suite on every backend: `memory://`, `file://` and, when an `iggy-server` binary
//! is found, Apache Iggy.

use agentlog_integration::backends::{Dir, Iggy, Memory};
use agentlog_integration::iggy_server::IggyServer;
use agentlog_integration::turn_suite::run_all;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_on_memory() {
    run_all(&Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_on_file() {
    run_all(&Dir::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_on_iggy() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    run_all(&Iggy::new(server)).await;
}

/// A worker process SIGKILLed while 12 turns run: another worker takes each over once its
/// lease has run out; each task ends once, its artifact from the takeover alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_with_sigkill_is_taken_over_on_iggy() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use agentlog::Caller;
    use agentlog::worker::{Worker, WorkerConfig};
    use agentlog_integration::bridge_suite::{SOON, bridge, request, task, wait_for};
    use agentlog_integration::streamer::{CHILD_CHUNKS, Streamer, one_attempt, task_records};
    use agentlog_wire::{RecordBody, TaskState};

    let Some(server) = IggyServer::start().await else {
        return;
    };
    let agent = "killed";
    let log = agentlog::log::open(&server.url()).await.expect("connect");
    let b = bridge(&log, agent).await;
    let lease_ms = 2_000u64;
    let mut child = Command::new(env!("CARGO_BIN_EXE_turn_child"))
        .args([server.url(), agent.to_owned(), lease_ms.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn turn_child");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).expect("read");
    assert_eq!(line.trim(), "READY");

    let c = Caller::principal("alice");
    let mut ids = Vec::new();
    for i in 0..12 {
        let t = task(
            b.send_message(&c, request(&format!("m-{i}"), "go", true))
                .await
                .expect("send"),
        );
        ids.push(t.id);
    }
    for id in &ids {
        wait_for(&b, &c, id, |t| {
            t.artifacts.first().is_some_and(|a| a.parts.len() >= 2)
        })
        .await;
    }
    // SIGKILL: nothing is released, nothing committed.
    child.kill().expect("SIGKILL");
    let killed_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    child.wait().expect("reap");

    let mut config = WorkerConfig::new(agent);
    config.lease = Duration::from_millis(lease_ms);
    let streamer = Streamer::new(CHILD_CHUNKS, Duration::from_millis(1));
    let rescuer = Worker::start(log.clone(), config, streamer.clone())
        .await
        .expect("worker");
    let mut takeovers = Vec::new();
    for id in &ids {
        let deadline = tokio::time::Instant::now() + SOON * 2;
        let t = loop {
            let t = wait_for(&b, &c, id, |_| true).await;
            if t.status.state.is_terminal() || tokio::time::Instant::now() > deadline {
                break t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(t.status.state, TaskState::Completed, "task {id}");
        assert_eq!(
            one_attempt(&t, CHILD_CHUNKS),
            2,
            "task {id}: the takeover's chunks only"
        );
        let records = task_records(&log, agent, id).await;
        let terminals = records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Terminal { .. }))
            .count();
        assert_eq!(terminals, 1, "task {id}");
        let claim = records
            .iter()
            .find(|r| matches!(r.body, RecordBody::Claim { .. }) && r.header.attempt == 2)
            .expect("the takeover's claim");
        takeovers.push(claim.header.timestamp_ms.saturating_sub(killed_at));
    }
    assert_eq!(
        streamer.retries.load(std::sync::atomic::Ordering::SeqCst),
        ids.len()
    );
    takeovers.sort_unstable();
    eprintln!(
        "[iggy] SIGKILL to takeover claim, lease {lease_ms} ms: min {} ms, median {} ms, max {} ms",
        takeovers[0],
        takeovers[takeovers.len() / 2],
        takeovers[takeovers.len() - 1]
    );
    rescuer.shutdown().await.expect("shutdown");
}
