//! Read-your-writes across replicas over Apache Iggy: a task acknowledged by bridge A is
//! found by bridge B at once, 10,000 times in a row, while other clients load both.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use agentlog::Caller;
use agentlog::worker::{Worker, WorkerConfig};
use agentlog_integration::bridge_suite::{bridge, get, request, task};
use agentlog_integration::iggy_server::IggyServer;
use agentlog_server::agents::DemoHandler;
use agentlog_wire::a2a::ListTasksRequest;

const ROUNDS: usize = 10_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_on_one_bridge_is_read_on_another_10_000_times_on_iggy() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let agent = "ryw";
    let log_a = agentlog::log::open(&server.url()).await.expect("connect");
    let log_b = agentlog::log::open(&server.url()).await.expect("connect");
    let a = bridge(&log_a, agent).await;
    let b = bridge(&log_b, agent).await;
    // The worker has a connection of its own, as a worker process would.
    let log_w = agentlog::log::open(&server.url()).await.expect("connect");
    let worker = Worker::start(log_w, WorkerConfig::new(agent), DemoHandler)
        .await
        .expect("worker");

    let stop = Arc::new(AtomicBool::new(false));
    let load_ops = Arc::new(AtomicUsize::new(0));
    let mut load = Vec::new();
    // One other caller sending, reading and listing on both replicas, and a worker running
    // every task: the views follow a log that others keep moving.
    for n in 0..1 {
        let (a, b, stop, ops) = (a.clone(), b.clone(), stop.clone(), load_ops.clone());
        load.push(tokio::spawn(async move {
            let c = Caller::principal(format!("load-{n}"));
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let t = task(
                    b.send_message(&c, request(&format!("l-{i}"), "load", true))
                        .await
                        .expect("load send"),
                );
                a.get_task(&c, get(&t.id)).await.expect("load get");
                let list = ListTasksRequest {
                    page_size: Some(5),
                    ..Default::default()
                };
                b.list_tasks(&c, list).await.expect("load list");
                ops.fetch_add(3, Ordering::Relaxed);
                i += 1;
            }
        }));
    }

    let c = Caller::principal("alice");
    let mut not_found = 0;
    let started = std::time::Instant::now();
    for i in 0..ROUNDS {
        let sent = task(
            a.send_message(&c, request(&format!("m-{i}"), "hello", true))
                .await
                .expect("send on a"),
        );
        match b.get_task(&c, get(&sent.id)).await {
            Ok(seen) => assert_eq!(seen.id, sent.id),
            Err(e) if e.kind() == agentlog::ErrorKind::TaskNotFound => not_found += 1,
            Err(e) => panic!("round {i}: {e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    for l in load {
        l.await.expect("load task");
    }
    eprintln!(
        "[iggy] read-your-writes: {ROUNDS} rounds in {:?}, {not_found} not found, {} load operations beside them",
        started.elapsed(),
        load_ops.load(Ordering::Relaxed)
    );
    assert_eq!(not_found, 0);
    worker.shutdown().await.expect("shutdown");
}
