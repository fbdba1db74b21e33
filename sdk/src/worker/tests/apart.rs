//! A worker in a process of its own (its own view, no bridge beside it): what its turns ask
//! of the log.

use super::*;
use crate::log::layers::{LogMetrics, LogOp, MetricsLayer};

/// A turn another process's bridge wrote reaches the handler from what the worker's view
/// applied: its command not read back, the log's end not asked for before the claim.
#[tokio::test]
async fn a_turn_written_elsewhere_asks_the_log_for_no_read_back_and_no_end() {
    let log = crate::log::open("memory://").await.unwrap();
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("agent"))
        .await
        .unwrap();
    let metrics = LogMetrics::new();
    let counted = log.clone().layer(MetricsLayer::new(metrics.clone()));
    let mut config = WorkerConfig::new("agent");
    config.shutdown_timeout = PATIENCE;
    let handler = handler_fn(|task: TaskContext| async move {
        task.complete(Some("done")).await?;
        Ok(())
    });
    let worker = Worker::start(counted, config, handler).await.unwrap();
    let asked = || [LogOp::ReadAt, LogOp::EndOffset, LogOp::EndOffsets].map(|op| metrics.calls(op));
    let before = asked();
    for i in 0..20 {
        let task = send(&bridge, user(&format!("hi {i}")), false).await;
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(
            task.history[0].parts[0].as_text(),
            Some(&*format!("hi {i}"))
        );
    }
    assert_eq!(asked(), before, "read_at, end_offset, end_offsets");
    let h = Harness {
        log,
        bridge,
        worker,
    };
    h.shutdown().await;
}
