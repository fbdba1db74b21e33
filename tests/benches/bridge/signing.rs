//! Signed records and a trust, on against off in the same run (`BRIDGE_BENCH=signing`): the
//! blocking round trip, returnImmediately throughput, and a view's replay of a signed log.

use std::time::{Duration, Instant};

use agentlog::AgentTopics;
use agentlog::bridge::BridgeConfig;
use agentlog::log::Log;
use agentlog::log::embedded::EmbeddedLog;
use agentlog::security::{RecordSigner, RecordVerifier, Role, SigningKey, Trust};
use agentlog::view::{TaskView, ViewOptions};
use agentlog::worker::WorkerConfig;
use agentlog_integration::bench::{task_records, write_tasks_with};
use hdrhistogram::Histogram;

use super::{file_log, round_trip, throughput};

fn bridge_key() -> SigningKey {
    SigningKey::from_seed([1; 32])
}

fn worker_key() -> SigningKey {
    SigningKey::from_seed([2; 32])
}

fn verifier() -> RecordVerifier {
    RecordVerifier::new(
        Trust::new()
            .with_role(bridge_key().verifying_key(), Role::Bridge)
            .with_role(worker_key().verifying_key(), Role::Worker),
    )
}

/// The bridge's and the worker's configurations for agent `agent`, signing and checking or
/// not. Each gets a verifier of its own, as two processes would.
fn configs(agent: &str, signed: bool) -> (BridgeConfig, WorkerConfig) {
    let mut bridge = BridgeConfig::new(agent);
    bridge.checkpoint_every = None;
    let mut worker = WorkerConfig::new(agent);
    if signed {
        bridge.signer = Some(RecordSigner::new(bridge_key()));
        bridge.trust = Some(verifier());
        worker.signer = Some(RecordSigner::new(worker_key()));
        worker.trust = Some(verifier());
    }
    (bridge, worker)
}

fn label(signed: bool) -> &'static str {
    if signed { "on" } else { "off" }
}

pub(super) async fn part() {
    println!("\n## Signed records and trust: on against off, same run\n");
    round_trips().await;
    throughputs().await;
    replays().await;
}

async fn round_trips() {
    println!(
        "Blocking SendMessage round trip (bridge → worker → bridge), one client; rounds alternate off and on, 4 × 1,000 samples each, merged:\n"
    );
    println!("| log | signing + trust | samples | p50 µs | p99 µs | p99.9 µs |");
    println!("|---|---|---|---|---|---|");
    for file in [false, true] {
        let mut hists = [
            Histogram::<u64>::new(3).unwrap(),
            Histogram::<u64>::new(3).unwrap(),
        ];
        for round in 0..4 {
            for signed in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let log = if file {
                    file_log(&dir, None)
                } else {
                    Log::new(EmbeddedLog::in_memory())
                };
                let (bridge, worker) = configs(&format!("rt-{round}"), signed);
                let hist = round_trip(log, bridge, worker, 1_000).await;
                hists[usize::from(signed)].add(&hist).unwrap();
            }
        }
        let name = if file {
            "file:// (default: fsync every 100 ms)"
        } else {
            "memory://"
        };
        for signed in [false, true] {
            let h = &hists[usize::from(signed)];
            println!(
                "| {name} | {} | {} | {} | {} | {} |",
                label(signed),
                h.len(),
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.value_at_quantile(0.999)
            );
        }
        let (off, on) = (&hists[0], &hists[1]);
        println!(
            "| {name} | on / off | | {:.2} | {:.2} | {:.2} |",
            ratio(on.value_at_quantile(0.5), off.value_at_quantile(0.5)),
            ratio(on.value_at_quantile(0.99), off.value_at_quantile(0.99)),
            ratio(on.value_at_quantile(0.999), off.value_at_quantile(0.999))
        );
    }
}

fn ratio(on: u64, off: u64) -> f64 {
    on as f64 / off.max(1) as f64
}

async fn throughputs() {
    println!(
        "\nSendMessage with returnImmediately, in process (the bridge signs each command and its view checks nothing of its own: no worker runs), median of 3 alternating rounds:\n"
    );
    println!("| log | concurrent senders | off tasks/s | on tasks/s | on / off |");
    println!("|---|---|---|---|---|");
    for senders in [1, 64] {
        for file in [false, true] {
            let mut rates = [Vec::new(), Vec::new()];
            for _ in 0..3 {
                for signed in [false, true] {
                    let dir = tempfile::tempdir().unwrap();
                    let log = if file {
                        file_log(&dir, None)
                    } else {
                        Log::new(EmbeddedLog::in_memory())
                    };
                    let (bridge, _) = configs("tp", signed);
                    rates[usize::from(signed)].push(throughput(log, bridge, senders).await);
                }
            }
            let off = agentlog_integration::bench::median(rates[0].iter().copied());
            let on = agentlog_integration::bench::median(rates[1].iter().copied());
            let name = if file {
                "file:// (default)"
            } else {
                "memory://"
            };
            println!(
                "| {name} | {senders} | {off:.0} | {on:.0} | {:.2} |",
                on / off
            );
        }
    }
}

/// A view's replay of 10,000 tasks (40,000 records) with and without a trust: what a restart
/// without a usable checkpoint costs (a checkpoint is not checked again).
async fn replays() {
    const TASKS: usize = 10_000;
    println!(
        "\nA view's replay of {TASKS} finished tasks ({} records; memory://), median of 3:\n",
        TASKS * 4
    );
    println!("| records | trust | replay ms | µs per record |");
    println!("|---|---|---|---|");
    for signed in [false, true] {
        let log = Log::new(EmbeddedLog::in_memory());
        let topics = AgentTopics::of("replay");
        topics.ensure(&log).await.unwrap();
        write_tasks_with(&log, &topics, 0..TASKS, move |t| {
            let mut records = task_records(t, 0);
            if signed {
                let bridge = RecordSigner::new(bridge_key());
                let worker = RecordSigner::new(worker_key());
                for (n, record) in records.iter_mut().enumerate() {
                    let signer = if n == 0 { &bridge } else { &worker };
                    signer.sign(record).unwrap();
                }
            }
            records
        })
        .await;
        let mut times = Vec::new();
        for _ in 0..3 {
            let mut options = ViewOptions::new();
            options.verifier = signed.then(verifier);
            let started = Instant::now();
            let view = TaskView::start_with(log.clone(), topics.events.clone(), options)
                .await
                .unwrap();
            view.sync(None, Duration::from_secs(600)).await.unwrap();
            view.wait_caught_up().await;
            times.push(started.elapsed().as_secs_f64() * 1e3);
            assert_eq!(view.task_count(), TASKS);
            if let Some(v) = view.verifier() {
                assert_eq!(v.rejected_total(), 0);
            }
        }
        let ms = agentlog_integration::bench::median(times);
        println!(
            "| {} | {} | {ms:.0} | {:.1} |",
            if signed { "signed" } else { "unsigned" },
            if signed { "on" } else { "off" },
            ms * 1e3 / (TASKS * 4) as f64
        );
    }
}
