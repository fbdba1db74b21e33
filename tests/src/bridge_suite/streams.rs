//! The bridge suite's streams (a snapshot, then live events; resuming) and ListTasks (filters
//! and pages).

use super::*;

pub(super) async fn streams_snapshot_then_events(subject: &dyn Backend, agent: &str) {
    let (b, w) = demo_agent(subject, agent).await;
    let c = Caller::anonymous();
    let t = task(
        b.send_message(&c, request("m-0", "sleep 0.6", true))
            .await
            .expect("send"),
    );
    // Two subscribers of one task see the same sequence.
    let s1 = b
        .subscribe_to_task(&c, subscribe(&t.id), None)
        .await
        .expect("subscribe 1");
    let s2 = b
        .subscribe_to_task(&c, subscribe(&t.id), None)
        .await
        .expect("subscribe 2");
    let (e1, e2) = tokio::join!(collect(s1), collect(s2));
    assert!(
        matches!(e1[0].response, StreamResponse::Task(_)),
        "first event is the task"
    );
    let tail = |events: &[StreamEvent]| -> Vec<StreamEvent> {
        let last = events.last().map(|e| e.position).unwrap_or(0);
        events
            .iter()
            .filter(|e| e.position <= last)
            .skip(1)
            .cloned()
            .collect()
    };
    let (t1, t2) = (tail(&e1), tail(&e2));
    let common: Vec<_> = t1
        .iter()
        .filter(|e| t2.iter().any(|f| f.position == e.position))
        .collect();
    assert!(!common.is_empty());
    for e in &common {
        let f = t2
            .iter()
            .find(|f| f.position == e.position)
            .expect("same position");
        assert_eq!(e.response, f.response);
    }
    let last = e1.last().expect("events");
    assert!(last.last);
    match &last.response {
        StreamResponse::StatusUpdate(u) => assert_eq!(u.status.state, TaskState::Completed),
        other => panic!("last event {other:?}"),
    }
    for pair in e1.windows(2) {
        assert!(pair[0].position < pair[1].position, "positions increase");
    }
    // Resume after the first event: the rest, no gap, no duplicate.
    let resume_at = e1[1].position;
    let resumed = collect(
        b.subscribe_to_task(&c, subscribe(&t.id), Some(resume_at))
            .await
            .expect("resume"),
    )
    .await;
    let expected: Vec<_> = e1
        .iter()
        .filter(|e| e.position > resume_at)
        .map(|e| (e.position, e.response.clone()))
        .collect();
    let got: Vec<_> = resumed
        .iter()
        .map(|e| (e.position, e.response.clone()))
        .collect();
    assert_eq!(got, expected);
    // Subscribing to a terminal task is an unsupported operation.
    let err = b
        .subscribe_to_task(&c, subscribe(&t.id), None)
        .await
        .map(|_| ())
        .expect_err("terminal");
    assert_eq!(err.kind(), ErrorKind::UnsupportedOperation);
    // SendStreamingMessage: task first, artifact chunks, then completed.
    let events = collect(
        b.send_streaming_message(&c, request("m-1", "stream me", false), None, None)
            .await
            .expect("stream"),
    )
    .await;
    assert!(matches!(events[0].response, StreamResponse::Task(_)));
    assert!(
        events
            .iter()
            .any(|e| matches!(e.response, StreamResponse::ArtifactUpdate(_)))
    );
    assert!(events.last().is_some_and(|e| e.last));
    w.shutdown().await.expect("shutdown");
}

pub(super) async fn list_tasks_filters_and_pages(subject: &dyn Backend, agent: &str) {
    let (b, w) = demo_agent(subject, agent).await;
    let c = Caller::principal("lister");
    let mut ids = Vec::new();
    for i in 0..7 {
        let mut r = request(&format!("m-{i}"), &format!("task {i}"), false);
        if i % 2 == 0 {
            r.message.context_id = Some("even".into());
        }
        ids.push(task(b.send_message(&c, r).await.expect("send")).id);
    }
    let waiting = task(
        b.send_message(&c, request("m-in", "input", false))
            .await
            .expect("send"),
    );
    let all = b
        .list_tasks(&c, ListTasksRequest::default())
        .await
        .expect("list");
    assert_eq!(all.total_size, 8);
    assert_eq!(all.next_page_token, "");
    assert!(
        all.tasks.iter().all(|t| t.artifacts.is_empty()),
        "no artifacts unless asked"
    );
    let stamps: Vec<_> = all
        .tasks
        .iter()
        .map(|t| t.status.timestamp.clone().unwrap_or_default())
        .collect();
    let mut sorted = stamps.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(stamps, sorted, "newest status first");
    // Pages of 3 cover everything once.
    let mut seen = HashSet::new();
    let mut token = None;
    loop {
        let page = b
            .list_tasks(
                &c,
                ListTasksRequest {
                    page_size: Some(3),
                    page_token: token.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("page");
        assert!(page.tasks.len() <= 3);
        assert_eq!(page.page_size, 3);
        for t in &page.tasks {
            assert!(seen.insert(t.id.clone()), "task listed twice");
        }
        if page.next_page_token.is_empty() {
            break;
        }
        token = Some(page.next_page_token);
    }
    assert_eq!(seen.len(), 8);
    let even = b
        .list_tasks(
            &c,
            ListTasksRequest {
                context_id: Some("even".into()),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(even.total_size, 4);
    let interrupted = b
        .list_tasks(
            &c,
            ListTasksRequest {
                status: Some(TaskState::InputRequired),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(
        interrupted
            .tasks
            .iter()
            .map(|t| t.id.clone())
            .collect::<Vec<_>>(),
        vec![waiting.id.clone()]
    );
    let with = b
        .list_tasks(
            &c,
            ListTasksRequest {
                include_artifacts: Some(true),
                history_length: Some(0),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert!(with.tasks.iter().any(|t| !t.artifacts.is_empty()));
    assert!(with.tasks.iter().all(|t| t.history.is_empty()));
    let future = b
        .list_tasks(
            &c,
            ListTasksRequest {
                status_timestamp_after: Some("2999-01-01T00:00:00Z".into()),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(future.total_size, 0);
    for bad in [Some(0), Some(101), Some(-1)] {
        let err = b
            .list_tasks(
                &c,
                ListTasksRequest {
                    page_size: bad,
                    ..Default::default()
                },
            )
            .await
            .expect_err("page size");
        assert_eq!(err.kind(), ErrorKind::InvalidParams);
    }
    let err = b
        .list_tasks(
            &c,
            ListTasksRequest {
                page_token: Some("garbage!".into()),
                ..Default::default()
            },
        )
        .await
        .expect_err("token");
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    let _ = ids;
    w.shutdown().await.expect("shutdown");
}
