//! Dynamic membership (`agentlog::members`) over a real Apache Iggy server, each member on
//! a handle of its own as separate bridges would be: joins settle balanced, a restart of the
//! server evicts nobody alive and keeps no ghost (a member that died while the server was
//! down is evicted after its lease, from the log's own records), and a leave hands over warmed
//! up. Passes with a SKIPPED line when there is no `iggy-server` binary.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use agentlog::log::Log;
use agentlog::members::{MemberView, MemberWatch, Membership, MembershipConfig};
use agentlog_integration::iggy_server::IggyServer;

const P: u32 = 8;

fn config(name: &str) -> MembershipConfig {
    // Longer than a server restart takes, so the members alive through it stay.
    MembershipConfig::new("members-iggy", name, format!("http://{name}:8080"))
        .lease(Duration::from_secs(5))
        .heartbeat(Duration::from_millis(200))
}

async fn until(watch: &MemberWatch, what: impl Fn(&MemberView) -> bool) -> Arc<MemberView> {
    let mut watch = watch.clone();
    let seen = tokio::time::timeout(Duration::from_secs(60), watch.wait_for(|v| what(v)))
        .await
        .expect("the assignment never got there")
        .unwrap();
    Arc::clone(&seen)
}

/// Say every partition moved to `member` is ready as soon as it is.
fn catch_up(member: &Membership) -> tokio::task::JoinHandle<()> {
    let (reporter, mut watch) = (member.reporter(), member.watch());
    tokio::spawn(async move {
        loop {
            let incoming = watch.borrow_and_update().incoming();
            for (p, since) in incoming {
                let _ = reporter.ready(p, since).await;
            }
            if watch.changed().await.is_err() {
                return;
            }
        }
    })
}

fn names(view: &MemberView) -> Vec<String> {
    view.assignment
        .members
        .iter()
        .map(|m| m.name.clone())
        .collect()
}

fn settled(members: &'static [&'static str]) -> impl Fn(&MemberView) -> bool {
    move |v: &MemberView| names(v) == members && v.assignment.moves.iter().all(Option::is_none)
}

async fn open(server: &IggyServer) -> Log {
    agentlog::log::open(&server.url()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_over_iggy_survive_a_server_restart_without_ghosts() {
    let Some(mut server) = IggyServer::start().await else {
        return;
    };
    let a = Membership::join(open(&server).await, config("a"), P)
        .await
        .unwrap();
    let _a_up = catch_up(&a);
    let b = Membership::join(open(&server).await, config("b"), P)
        .await
        .unwrap();
    let _b_up = catch_up(&b);
    let c = Membership::join(open(&server).await, config("c"), P)
        .await
        .unwrap();
    let _c_up = catch_up(&c);
    let three = until(&a.watch(), settled(&["a", "b", "c"])).await;
    for member in [&b, &c] {
        until(&member.watch(), |v| v.assignment == three.assignment).await;
    }

    // c dies while the server is down: after the restart it is evicted after its lease (no
    // ghost), a and b stay, and only c's partitions move.
    c.stop().await;
    server.restart().await;
    let two = until(&a.watch(), settled(&["a", "b"])).await;
    until(&b.watch(), |v| v.assignment == two.assignment).await;
    for p in 0..P {
        let before = three.assignment.targets[p as usize];
        if before != three.assignment.slot_of("c") {
            assert_eq!(two.assignment.targets[p as usize], before, "partition {p}");
        }
    }
    let mut shares: Vec<usize> = [0, 1]
        .iter()
        .map(|s| two.assignment.targets_of(*s).len())
        .collect();
    shares.sort_unstable();
    assert_eq!(shares, [4, 4]);

    // b leaves warmed up: a holds everything once b's partitions are ready there.
    assert!(b.leave(Duration::from_secs(60)).await.unwrap());
    let alone = until(&a.watch(), settled(&["a"])).await;
    assert_eq!(alone.held(), (0..P).collect::<Vec<_>>());
    a.stop().await;
}
