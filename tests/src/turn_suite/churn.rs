//! The turn suite's churn case: a thousand tasks while workers join and leave, every one
//! answered once, by one attempt.

use super::*;

pub(super) async fn a_thousand_tasks_while_workers_join_and_leave(
    subject: &dyn Backend,
    agent: &str,
) {
    const TASKS: usize = 1000;
    const CHUNKS: usize = 6;
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let c = Caller::principal("alice");
    // Turns outlast a leaver's grace period: leaving releases them mid-turn, and another
    // worker takes them over.
    let streamer = Streamer::new(CHUNKS, Duration::from_millis(100));
    let config = || {
        let mut config = worker_config(agent);
        config.shutdown_timeout = Duration::from_millis(100);
        config
    };
    let mut workers = vec![start(&log, config(), streamer.clone()).await];
    let sends = (0..TASKS).map(|i| {
        let b = b.clone();
        let c = c.clone();
        tokio::spawn(async move {
            b.send_message(&c, request(&format!("m-{i}"), "go", true))
                .await
        })
    });
    let ids: Vec<String> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|joined| task(joined.expect("join").expect("send")).id)
        .collect();
    // Churn: every 200 ms a worker joins or one leaves (its running turns are released),
    // with one to four alive, for CHURN_ROUNDS rounds; then the workers left finish what is
    // open. (Churning until the end would make finishing a race against the churn: on a
    // loaded machine a 600 ms turn may be released by every worker it lands on.)
    const CHURN_ROUNDS: usize = 50;
    let deadline = tokio::time::Instant::now() + SOON * 9;
    let mut round = 0usize;
    loop {
        let mut open = 0;
        for id in &ids {
            if b.view()
                .lookup(&c, id)
                .is_none_or(|info| !info.state.is_terminal())
            {
                open += 1;
            }
        }
        if open == 0 {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            let stuck: Vec<String> = ids
                .iter()
                .filter_map(|id| b.view().lookup(&c, id))
                .filter(|info| !info.state.is_terminal())
                .take(5)
                .map(|info| {
                    format!(
                        "{} in partition {}: {} claim {:?} attempts {} pending {:?}",
                        info.id,
                        info.partition,
                        info.state,
                        info.claim,
                        info.attempts,
                        info.pending
                    )
                })
                .collect();
            panic!("{open} tasks still open, e.g. {stuck:#?}");
        }
        round += 1;
        if round > CHURN_ROUNDS {
            // Settled: the workers alive now stay.
        } else if workers.len() < 2 || (workers.len() < 4 && !round.is_multiple_of(3)) {
            workers.push(start(&log, config(), streamer.clone()).await);
        } else {
            let leaving = workers.remove(round % workers.len());
            leaving.shutdown().await.expect("shutdown");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for id in &ids {
        let t = wait_for(&b, &c, id, |t| t.status.state.is_terminal()).await;
        assert_eq!(t.status.state, TaskState::Completed, "task {id}");
        one_attempt(&t, CHUNKS);
        // Exactly one terminal record applies; any other was fenced or came after it.
        let mut fold = TaskFold::new();
        let mut terminals = 0;
        for record in task_records(&log, agent, id).await {
            let applied = fold.apply(&record) == Outcome::Applied;
            if applied && matches!(record.body, RecordBody::Terminal { .. }) {
                terminals += 1;
            }
        }
        assert_eq!(terminals, 1, "task {id}");
        assert_eq!(fold.state(), Some(TaskState::Completed));
    }
    for w in workers {
        w.shutdown().await.expect("shutdown");
    }
    let retries = streamer.retries.load(Ordering::SeqCst);
    eprintln!(
        "[{}] churn: {round} membership changes, {} runs for {TASKS} tasks, {retries} of them takeovers",
        subject.name(),
        streamer.runs.load(Ordering::SeqCst),
    );
    assert!(
        retries > 0,
        "the churn released turns mid-run and they were taken over"
    );
}
