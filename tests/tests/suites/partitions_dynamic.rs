//! Bridges sharing an agent's partitions by dynamic membership (`agentlog::members`, as
//! `serve --member-name` runs it: `server/src/cli/serve_members.rs`), several in one process
//! over one `memory://` log, each on a loopback listener with its own router, under a load
//! generator sending round-robin over the bridges as a plain balancer would:
//! - a planned join and a planned leave make no error of any kind, and every acknowledged task
//!   is readable afterwards (each move's window held open while the load runs: the placement
//!   of the members taking partitions is paused until the load has gone through it);
//! - a member killed and restarted under its name within its lease keeps its partitions,
//!   restores them from their checkpoints, and its successor releases the copies it held on
//!   demand meanwhile;
//! - a member killed and not back within its lease is evicted: its partitions go to the
//!   others at once, and the copies held on demand meanwhile are released once their new
//!   owners hold them.

use std::sync::Arc;
use std::time::Duration;

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::http::{Forwarding, HttpConfig, router, serve};
use agentlog::log::Log;
use agentlog::members::{self, MemberView, MemberWatch, Membership, MembershipConfig};
use agentlog::security::owners::Owners;
use agentlog::security::peers::PeerKey;
use agentlog_wire::members::Assignment;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

mod load;

pub(crate) use load::{Load, all_readable, rpc, send_params};

const P: u32 = 16;
const AGENT: &str = "dynamic";
const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
/// Requests the load makes through each phase before the test goes on.
const PER_PHASE: usize = 40;

/// One dynamic member: its bridge and server, its membership, and what follows it.
struct Member {
    name: String,
    url: String,
    bridge: Bridge,
    membership: Option<Membership>,
    /// Opens and closes the assignment its placement sees (closed: it holds nothing new).
    gate: watch::Sender<bool>,
    placement: JoinHandle<()>,
    stop: oneshot::Sender<()>,
    server: JoinHandle<()>,
}

/// Long enough that nobody is evicted unless a test means it: a restart is within the lease.
const LEASE: Duration = Duration::from_secs(30);

fn config(name: &str, url: &str, lease: Duration) -> MembershipConfig {
    MembershipConfig::new(AGENT, name, url)
        .lease(lease)
        .heartbeat(Duration::from_millis(200))
}

/// `source` as the placement sees it: passed through while `gate` is open, held back while
/// it is closed (an empty assignment until it first opens).
fn gated(mut source: MemberWatch, mut gate: watch::Receiver<bool>) -> MemberWatch {
    let empty = Arc::new(MemberView {
        assignment: Assignment::empty(P),
        me: None,
        ready: vec![None; P as usize],
        seen: Default::default(),
        read_to: 0,
    });
    let (tx, rx) = watch::channel(empty);
    tokio::spawn(async move {
        loop {
            if gate.wait_for(|open| *open).await.is_err() {
                return;
            }
            let now = source.borrow_and_update().clone();
            tx.send_if_modified(|seen| {
                let changed = **seen != *now;
                *seen = Arc::clone(&now);
                changed
            });
            tokio::select! {
                changed = source.changed() => if changed.is_err() { return },
                changed = gate.changed() => if changed.is_err() { return },
            }
        }
    });
    rx
}

impl Member {
    /// Member `name` over `log`, its placement's gate `open` or not.
    async fn start(log: &Log, name: &str, open: bool) -> Self {
        Self::start_leased(log, name, open, LEASE).await
    }

    /// [`start`](Self::start) with its own lease.
    async fn start_leased(log: &Log, name: &str, open: bool, lease: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let mut bridge_config = BridgeConfig::new(AGENT);
        bridge_config.holding = Some(Vec::new());
        bridge_config.blocking_timeout = Duration::from_secs(2);
        let bridge = Bridge::open(log.clone(), bridge_config)
            .await
            .expect("bridge");
        let membership = Membership::join(log.clone(), config(name, &url, lease), P)
            .await
            .expect("join");
        let map = membership.view().owner_map().expect("a map naming it");
        let owners = Owners::new(map);
        tokio::spawn(members::feed_owners(membership.watch(), owners.clone()));
        // As `serve` does: what it owns without a move is held before it serves.
        let now = membership.view();
        let incoming: Vec<u32> = now.incoming().iter().map(|(p, _)| *p).collect();
        if open {
            for p in now.held().into_iter().filter(|p| !incoming.contains(p)) {
                bridge.view().hold(p).await.expect("hold");
            }
        }
        let (gate, gate_rx) = watch::channel(open);
        let placement = tokio::spawn(agentlog::placement::hold_assigned(
            bridge.view().clone(),
            gated(membership.watch(), gate_rx),
            membership.reporter(),
            bridge.config().sync_timeout,
        ));
        let forwarding = Forwarding::new(owners, PeerKey::new(KEY).expect("key"));
        let app = router(bridge.clone(), HttpConfig::new().forward(forwarding));
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let stopped = async {
                let _ = stopped.await;
            };
            serve(listener, app, stopped).await.expect("serve");
        });
        Self {
            name: name.to_owned(),
            url,
            bridge,
            membership: Some(membership),
            gate,
            placement,
            stop,
            server,
        }
    }

    fn watch(&self) -> MemberWatch {
        self.membership.as_ref().expect("a member").watch()
    }

    fn slot(&self) -> u32 {
        self.membership
            .as_ref()
            .and_then(|m| m.view().me)
            .expect("a slot")
    }

    /// Stop its membership as a crash would (no leave) and wait for its placement to apply
    /// the last assignment it saw; its server goes on.
    async fn stop_membership(&mut self) {
        if let Some(membership) = self.membership.take() {
            membership.stop().await;
        }
        (&mut self.placement).await.expect("placement");
    }

    /// Stop its server, letting open requests finish.
    async fn stop_server(self) {
        let _ = self.stop.send(());
        self.server.await.expect("server");
    }

    /// As `kill -9`: its port refuses connections at once, nothing is written.
    async fn kill(mut self) {
        self.server.abort();
        let _ = (&mut self.server).await;
        self.stop_membership().await;
    }
}

async fn until(watch: &MemberWatch, what: impl Fn(&MemberView) -> bool) -> Arc<MemberView> {
    let mut watch = watch.clone();
    let seen = tokio::time::timeout(Duration::from_secs(60), watch.wait_for(|v| what(v)))
        .await
        .expect("the assignment never got there")
        .expect("a member");
    Arc::clone(&seen)
}

fn settled(names: &'static [&'static str]) -> impl Fn(&MemberView) -> bool {
    move |v: &MemberView| {
        let present: Vec<&str> = v
            .assignment
            .members
            .iter()
            .map(|m| m.name.as_str())
            .collect();
        present == names && v.assignment.moves.iter().all(Option::is_none)
    }
}

async fn memory_log() -> Log {
    agentlog::log::open(&format!("memory://?partitions={P}"))
        .await
        .expect("log")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_join_and_a_planned_leave_under_load_make_no_error() {
    let log = memory_log().await;
    let worker = agentlog::worker::Worker::start(
        log.clone(),
        agentlog::worker::WorkerConfig::new(AGENT),
        agentlog_server::agents::DemoHandler,
    )
    .await
    .expect("worker");
    let a = Member::start(&log, "a", true).await;
    let mut b = Member::start(&log, "b", true).await;
    until(&a.watch(), settled(&["a", "b"])).await;
    let mut load = Load::start(vec![a.url.clone(), b.url.clone()]);
    load.rounds(PER_PHASE).await;

    // c joins; its share moves to it warm. While its placement is paused the moves stand:
    // the load goes through c (which forwards) and through the old holders.
    let c = Member::start(&log, "c", false).await;
    let moving = until(&a.watch(), |v| v.assignment.slot_of("c").is_some()).await;
    assert!(moving.assignment.moves.iter().any(Option::is_some));
    load.rotation.lock().expect("rotation").push(c.url.clone());
    load.rounds(PER_PHASE).await;
    c.gate.send_replace(true);
    for member in [&a, &b, &c] {
        until(&member.watch(), settled(&["a", "b", "c"])).await;
    }
    load.rounds(PER_PHASE).await;

    // b leaves: a and c take its partitions warm while it serves on; the moves stand while
    // their placements are paused.
    a.gate.send_replace(false);
    c.gate.send_replace(false);
    let leaving = tokio::spawn(
        b.membership
            .take()
            .expect("b")
            .leave(Duration::from_secs(60)),
    );
    until(&a.watch(), |v| {
        v.assignment
            .members
            .iter()
            .any(|m| m.name == "b" && m.leaving)
    })
    .await;
    load.rounds(PER_PHASE).await;
    a.gate.send_replace(true);
    c.gate.send_replace(true);
    assert!(
        leaving.await.expect("leave").expect("leave written"),
        "b handed everything over"
    );
    (&mut b.placement).await.expect("placement");
    assert!(b.bridge.view().held_partitions().is_empty());
    load.rounds(PER_PHASE).await;
    // The balancer takes b out, then b stops.
    load.rotation
        .lock()
        .expect("rotation")
        .retain(|url| *url != b.url);
    load.rounds(1).await;
    b.stop_server().await;
    load.rounds(PER_PHASE).await;

    let (acknowledged, errors) = load.finish().await;
    assert!(errors.is_empty(), "{} errors: {errors:#?}", errors.len());
    all_readable(&acknowledged, &[&a.url, &c.url]).await;
    eprintln!(
        "planned join and leave under load: {} acknowledged, 0 errors",
        acknowledged.len()
    );
    // Each holds its targets, and only those; together, every partition once.
    let mut all = Vec::new();
    for mut member in [a, c] {
        let slot = member.slot();
        let targets = member
            .membership
            .as_ref()
            .expect("m")
            .view()
            .assignment
            .targets_of(slot);
        member.stop_membership().await;
        assert_eq!(
            member.bridge.view().held_partitions(),
            targets,
            "{}",
            member.name
        );
        all.extend(targets);
        member.stop_server().await;
    }
    all.sort_unstable();
    assert_eq!(all, (0..P).collect::<Vec<_>>());
    worker.shutdown().await.expect("worker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_member_restarted_under_its_name_keeps_its_partitions_and_the_copies_go() {
    let log = memory_log().await;
    let a = Member::start(&log, "a", true).await;
    let b = Member::start(&log, "b", true).await;
    let c = Member::start(&log, "c", true).await;
    let before = until(&a.watch(), settled(&["a", "b", "c"])).await;
    let client = reqwest::Client::new();
    let mut acknowledged = Vec::new();
    for k in 0..150 {
        let via = [&a.url, &b.url, &c.url][k % 3];
        let (status, body) = rpc(&client, via, "SendMessage", send_params(&format!("k-{k}"))).await;
        assert_eq!(status, 200, "{body}");
        acknowledged.push(
            body["result"]["task"]["id"]
                .as_str()
                .expect("a task")
                .to_owned(),
        );
    }
    // b's checkpoints, as its periodic ones would have been written before the kill.
    b.bridge.view().checkpoint().await.expect("checkpoint");
    let slot_b = b.slot();
    let of_b = before.assignment.targets_of(slot_b);
    b.kill().await;

    // Through the survivors, retrying a retryable refusal only: every task, b's included
    // (their successors hold them on demand).
    let mut retried = 0;
    for k in 150..200 {
        let via = [&a.url, &c.url][k % 2];
        loop {
            let (status, body) =
                rpc(&client, via, "SendMessage", send_params(&format!("k-{k}"))).await;
            if let Some(task) = body["result"]["task"]["id"].as_str() {
                acknowledged.push(task.to_owned());
                break;
            }
            assert_eq!(
                (status, &body["error"]["code"]),
                (503, &json!(-32603)),
                "{body}"
            );
            retried += 1;
        }
    }
    for task in &acknowledged {
        for url in [&a.url, &c.url] {
            let (status, body) = rpc(&client, url, "GetTask", json!({"id": task})).await;
            assert_eq!(
                (status, &body["result"]["id"]),
                (200, &json!(task)),
                "{body}"
            );
        }
    }
    let copies = |m: &Member| -> Vec<u32> {
        m.bridge
            .view()
            .partition_status()
            .into_iter()
            .filter(|s| !s.assigned)
            .map(|s| s.partition)
            .collect()
    };
    let (copies_a, copies_c) = (copies(&a), copies(&c));
    let mut stood_in: Vec<u32> = copies_a.iter().chain(&copies_c).copied().collect();
    stood_in.sort_unstable();
    stood_in.dedup();
    assert_eq!(
        stood_in, of_b,
        "b's successors hold its partitions on demand"
    );

    // b comes back under its name within its lease: the same slot and partitions, restored
    // from their checkpoints; once it says it holds them, its successors release their copies.
    let restarted_at = agentlog::retention::now_ms();
    let b = Member::start(&log, "b", true).await;
    assert_eq!(b.slot(), slot_b);
    let now = b.membership.as_ref().expect("b").view();
    assert_eq!(now.assignment.targets_of(slot_b), of_b);
    for member in [&a, &c] {
        until(&member.watch(), |v| {
            of_b.iter().all(|p| {
                v.ready[*p as usize]
                    .as_ref()
                    .is_some_and(|m| m.member == "b" && m.at_ms >= restarted_at)
            })
        })
        .await;
    }
    assert!(b.bridge.view().caught_up());
    for status in b.bridge.view().partition_status() {
        assert!(
            status.restored_from.is_some(),
            "partition {} restored",
            status.partition
        );
    }
    for task in &acknowledged {
        for url in [&a.url, &b.url, &c.url] {
            let (status, body) = rpc(&client, url, "GetTask", json!({"id": task})).await;
            assert_eq!(
                (status, &body["result"]["id"]),
                (200, &json!(task)),
                "{body}"
            );
        }
    }
    let mut all = Vec::new();
    for mut member in [a, b, c] {
        let targets = before.assignment.targets_of(member.slot());
        member.stop_membership().await;
        assert_eq!(
            member.bridge.view().held_partitions(),
            targets,
            "{}: copies released",
            member.name
        );
        all.extend(targets);
        member.stop_server().await;
    }
    all.sort_unstable();
    assert_eq!(all, (0..P).collect::<Vec<_>>());
    eprintln!(
        "kill and restart of a member: {} acknowledged, 0 lost, {retried} sends retried; copies of {stood_in:?} released",
        acknowledged.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_member_not_back_within_its_lease_is_evicted_and_the_copies_go() {
    // A short lease: the eviction is what this test waits for.
    let lease = Duration::from_secs(2);
    let log = memory_log().await;
    let a = Member::start_leased(&log, "a", true, lease).await;
    let b = Member::start_leased(&log, "b", true, lease).await;
    let c = Member::start_leased(&log, "c", true, lease).await;
    until(&a.watch(), settled(&["a", "b", "c"])).await;
    let client = reqwest::Client::new();
    let mut acknowledged = Vec::new();
    for k in 0..90 {
        let via = [&a.url, &b.url, &c.url][k % 3];
        let (status, body) = rpc(&client, via, "SendMessage", send_params(&format!("e-{k}"))).await;
        assert_eq!(status, 200, "{body}");
        acknowledged.push(
            body["result"]["task"]["id"]
                .as_str()
                .expect("a task")
                .to_owned(),
        );
    }
    b.kill().await;
    // Every task through the survivors: b's successor holds its partitions on demand.
    for task in &acknowledged {
        for url in [&a.url, &c.url] {
            let (status, body) = rpc(&client, url, "GetTask", json!({"id": task})).await;
            assert_eq!(
                (status, &body["result"]["id"]),
                (200, &json!(task)),
                "{body}"
            );
        }
    }
    // b's lease runs out: it is evicted, its partitions go to a and c at once, and whoever
    // now owns each says it holds it; a copy standing in for b is released.
    let evicted = until(&a.watch(), settled(&["a", "c"])).await;
    for member in [&a, &c] {
        until(&member.watch(), |v| {
            (0..P).all(|p| {
                let owner = v.assignment.owner(p).and_then(|o| v.assignment.member(o));
                let said = v.ready[p as usize].as_ref();
                owner.is_some_and(|o| said.is_some_and(|m| m.member == o.name))
            })
        })
        .await;
    }
    for task in &acknowledged {
        for url in [&a.url, &c.url] {
            let (status, body) = rpc(&client, url, "GetTask", json!({"id": task})).await;
            assert_eq!(
                (status, &body["result"]["id"]),
                (200, &json!(task)),
                "{body}"
            );
        }
    }
    let mut all = Vec::new();
    for mut member in [a, c] {
        let targets = evicted.assignment.targets_of(member.slot());
        member.stop_membership().await;
        assert_eq!(
            member.bridge.view().held_partitions(),
            targets,
            "{}",
            member.name
        );
        all.extend(targets);
        member.stop_server().await;
    }
    all.sort_unstable();
    assert_eq!(all, (0..P).collect::<Vec<_>>());
}
