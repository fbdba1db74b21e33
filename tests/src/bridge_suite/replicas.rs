//! The bridge suite across replicas: two bridges and two workers on one log, many concurrent
//! tasks with cancels, and a restart answering as before.

use super::*;

pub(super) async fn two_bridges_two_workers(subject: &dyn Backend, agent: &str) {
    let log_a = subject.log().await;
    let log_b = subject.replica(&log_a).await;
    let a = bridge(&log_a, agent).await;
    let b = bridge(&log_b, agent).await;
    let w1 = worker(&log_a, agent, DemoHandler).await;
    let w2 = worker(&log_b, agent, DemoHandler).await;
    let c = Caller::principal("alice");
    for i in 0..10 {
        let t = task(
            a.send_message(&c, request(&format!("m-{i}"), &format!("n{i}"), true))
                .await
                .expect("send on a"),
        );
        // Read-your-writes on the other replica, at once.
        let seen = b.get_task(&c, get(&t.id)).await.expect("get on b");
        assert_eq!(seen.id, t.id);
    }
    let long = task(
        a.send_message(&c, request("m-long", "sleep 30", true))
            .await
            .expect("send"),
    );
    wait_for(&b, &c, &long.id, |t| t.status.state == TaskState::Working).await;
    let canceled = b
        .cancel_task(&c, cancel(&long.id))
        .await
        .expect("cancel on b");
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let streamed = collect(
        b.send_streaming_message(&c, request("m-s", "via b", false), None, None)
            .await
            .expect("stream on b"),
    )
    .await;
    assert!(streamed.last().is_some_and(|e| e.last));
    for i in 0..10 {
        let id = agentlog_wire::ids::task_id("", "alice", &format!("m-{i}"));
        let t = wait_for(&a, &c, &id, |t| t.status.state.is_terminal()).await;
        assert_eq!(t, b.get_task(&c, get(&id)).await.expect("same on b"));
    }
    w1.shutdown().await.expect("shutdown");
    w2.shutdown().await.expect("shutdown");
}

pub(super) async fn many_concurrent_tasks_with_cancels(subject: &dyn Backend, agent: &str) {
    let log = subject.log().await;
    let b = bridge(&log, agent).await;
    let w1 = worker(&log, agent, DemoHandler).await;
    let w2 = worker(&log, agent, DemoHandler).await;
    let c = Caller::anonymous();
    let n = 1000;
    let sends = (0..n).map(|i| {
        let b = b.clone();
        let c = c.clone();
        async move {
            let text = if i % 3 == 0 {
                "sleep 0.3".to_owned()
            } else {
                format!("t{i}")
            };
            task(
                b.send_message(&c, request(&format!("bulk-{i}"), &text, true))
                    .await
                    .expect("send"),
            )
            .id
        }
    });
    let ids: Vec<String> = futures::future::join_all(sends).await;
    let cancels = ids
        .iter()
        .enumerate()
        .filter(|(i, _)| rand::random::<u8>() < 64 || i % 3 == 0 && i % 2 == 0)
        .map(|(_, id)| {
            let b = b.clone();
            let c = c.clone();
            let id = id.clone();
            async move {
                match b.cancel_task(&c, cancel(&id)).await {
                    Ok(t) => assert_eq!(t.status.state, TaskState::Canceled),
                    Err(e) => assert_eq!(e.kind(), ErrorKind::TaskNotCancelable, "{e}"),
                }
            }
        });
    futures::future::join_all(cancels).await;
    let mut terminal = 0;
    for id in &ids {
        let t = wait_for(&b, &c, id, |t| t.status.state.is_terminal()).await;
        assert!(
            matches!(t.status.state, TaskState::Completed | TaskState::Canceled),
            "{:?}",
            t.status.state
        );
        terminal += 1;
    }
    assert_eq!(terminal, n);
    let list = b
        .list_tasks(
            &c,
            ListTasksRequest {
                page_size: Some(1),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(list.total_size, n, "none lost");
    w1.shutdown().await.expect("shutdown");
    w2.shutdown().await.expect("shutdown");
}

pub(super) async fn restart_answers_identically(subject: &dyn Backend, agent: &str) {
    let (b, w) = demo_agent(subject, agent).await;
    let log = b.log().clone();
    let c = Caller::principal("alice");
    let mut ids = Vec::new();
    for (i, text) in ["one", "input", "fail", "two"].iter().enumerate() {
        ids.push(
            task(
                b.send_message(&c, request(&format!("r-{i}"), text, false))
                    .await
                    .expect("send"),
            )
            .id,
        );
    }
    let canceled = task(
        b.send_message(&c, request("r-c", "input", false))
            .await
            .expect("send"),
    );
    b.cancel_task(&c, cancel(&canceled.id))
        .await
        .expect("cancel");
    ids.push(canceled.id);
    let mut before = Vec::new();
    for id in &ids {
        before.push(b.get_task(&c, get(id)).await.expect("get"));
    }
    let listed = b
        .list_tasks(
            &c,
            ListTasksRequest {
                include_artifacts: Some(true),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    w.shutdown().await.expect("shutdown");
    drop(b);
    // A bridge over the same log handle for memory; a reopened log otherwise.
    let log = subject.restart(&log).await.unwrap_or(log);
    let again = bridge(&log, agent).await;
    for (id, expected) in ids.iter().zip(&before) {
        assert_eq!(
            &again
                .get_task(&c, get(id))
                .await
                .expect("get after restart"),
            expected
        );
    }
    let relisted = again
        .list_tasks(
            &c,
            ListTasksRequest {
                include_artifacts: Some(true),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(relisted, listed);
}
