//! Each of N bridges sharing an agent's partitions (`serve --member`'s static map, p mod N)
//! holds exactly the tasks of its partitions, and task ids spread evenly over partitions, so
//! with many tasks each bridge holds all tasks × its share within 1%: bridges' memory and
//! apply work split evenly (`tests/benches/scale` measures those).

use std::collections::BTreeSet;
use std::time::Duration;

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::log::partition_for_key;
use agentlog::{AgentTopics, Caller};
use agentlog_integration::bench::{task_id, task_records};
use bytes::Bytes;

const P: u32 = 16;
const TASKS: usize = 16_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_of_n_bridges_holds_exactly_its_partitions_tasks_a_fair_share_of_all() {
    let log = agentlog::log::open(&format!("memory://?partitions={P}"))
        .await
        .expect("log");
    let topics = AgentTopics::of("shares");
    topics.ensure(&log).await.expect("topics");
    // Each task's first record (its command: the view then knows the task), in its partition.
    let now = agentlog::retention::now_ms();
    let mut per_partition = vec![0usize; P as usize];
    for t in 0..TASKS {
        let record = task_records(t, now).swap_remove(0);
        let id = record.header.task_id.clone();
        per_partition[partition_for_key(id.as_bytes(), P) as usize] += 1;
        let bytes = Bytes::from(record.encode().expect("encode"));
        log.append(&topics.events, id.as_bytes(), vec![bytes])
            .await
            .expect("append");
    }
    for n in [1u32, 2, 4] {
        let mut held_ids = BTreeSet::new();
        let mut total = 0;
        for i in 0..n {
            let owned: Vec<u32> = (0..P).filter(|p| p % n == i).collect();
            let mut config = BridgeConfig::new("shares");
            config.holding = Some(owned.clone());
            config.checkpoint_every = None;
            let bridge = Bridge::open(log.clone(), config).await.expect("bridge");
            bridge
                .view()
                .sync(None, Duration::from_secs(120))
                .await
                .expect("caught up");
            let held = bridge.view().task_count();
            let exact: usize = owned.iter().map(|p| per_partition[*p as usize]).sum();
            assert_eq!(
                held, exact,
                "member {i} of {n}: the tasks of its partitions"
            );
            // A fair split of random ids is binomial: within 4 σ of the share.
            let s = owned.len() as f64 / f64::from(P);
            let share = TASKS as f64 * s;
            let sigma = (TASKS as f64 * s * (1.0 - s)).sqrt();
            assert!(
                (held as f64 - share).abs() <= 4.0 * sigma,
                "member {i} of {n} holds {held} tasks, its share is {share} ± {sigma:.0}"
            );
            // No task is held twice, none by nobody (every 97th looked up).
            let caller = Caller::principal("bench");
            for t in (0..TASKS).step_by(97) {
                let id = task_id(t);
                if bridge.view().lookup(&caller, &id).is_some() {
                    assert!(held_ids.insert(id), "task {t} held twice");
                }
            }
            total += held;
        }
        assert_eq!(total, TASKS, "N = {n}");
        assert_eq!(held_ids.len(), TASKS.div_ceil(97), "N = {n}");
    }
}

/// The ids of half a million tasks split over P = 16 partitions and N ∈ {2, 4} members:
/// each member's share within 1% (a binomial σ is at most 0.12% there; 1% is 8 σ), each
/// partition's within 2%.
#[test]
fn half_a_million_task_ids_split_over_members_within_one_percent_of_their_shares() {
    let tasks = 500_000usize;
    let mut per_partition = vec![0usize; P as usize];
    for t in 0..tasks {
        per_partition[partition_for_key(task_id(t).as_bytes(), P) as usize] += 1;
    }
    let even = tasks as f64 / f64::from(P);
    for (p, count) in per_partition.iter().enumerate() {
        let off = (*count as f64 - even).abs() / even;
        assert!(off <= 0.02, "partition {p}: {count} tasks, {even} expected");
    }
    for n in [2u32, 4] {
        for i in 0..n {
            let held: usize = (0..P)
                .filter(|p| p % n == i)
                .map(|p| per_partition[p as usize])
                .sum();
            let share = tasks as f64 / f64::from(n);
            let off = (held as f64 - share).abs() / share;
            assert!(
                off <= 0.01,
                "member {i} of {n}: {held} tasks, share {share}"
            );
        }
    }
}
