//! Tests of [`TaskContext`](super::TaskContext).
#![allow(clippy::unwrap_used)]
use super::*;
use crate::log::layers::{FaultLayer, Faults, LogOp};
use crate::log::{Log, TopicRef};
use crate::worker::attempt::{TaskRef, Writer};
use agentlog_wire::Record;
use agentlog_wire::a2a::Role;

async fn context(history: Vec<Message>, index: usize) -> (TaskContext, Log, TopicRef) {
    context_on(crate::log::open("memory://").await.unwrap(), history, index).await
}

async fn context_on(log: Log, history: Vec<Message>, index: usize) -> (TaskContext, Log, TopicRef) {
    let events = TopicRef::new("s", "a.events");
    log.ensure_topic(&events, 1).await.unwrap();
    let writer = Arc::new(Writer::for_tests(log.clone(), events.clone()));
    let task = TaskRef {
        id: "t".into(),
        context_id: "c".into(),
        caller: Caller::principal("alice").in_tenant("acme"),
    };
    let attempt =
        Attempt::new(task, 7, "m1".into(), writer, Duration::from_secs(10)).with_turn_attempt(2);
    let view = TaskView::start(log.clone(), events.clone()).await.unwrap();
    let ctx = TaskContext::new(Parts {
        attempt: Arc::new(attempt),
        history,
        message_index: index,
        cancellation: CancellationToken::new(),
        restart: HashSet::from(["out".to_owned()]),
        view,
        sync_timeout: Duration::from_secs(10),
        hops: Vec::new(),
        trace: None,
        span: None,
    })
    .unwrap();
    (ctx, log, events)
}

async fn records(log: &Log, events: &TopicRef) -> Vec<Record> {
    log.read(events, 0, 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|s| Record::decode(&s.payload).unwrap())
        .collect()
}

#[tokio::test]
async fn the_message_is_the_turns_and_history_ends_with_it() {
    let mut first = Message::user_text("m1", "a");
    first.parts.push(Part::data(serde_json::json!({"k": 1})));
    first.parts.push(Part::text("b"));
    let history = vec![
        first,
        Message::agent_text("x", "?"),
        Message::user_text("m2", "c"),
    ];
    let (ctx, _, _) = context(history.clone(), 0).await;
    assert_eq!(ctx.message().message_id, "m1");
    assert_eq!(ctx.history().len(), 1);
    assert_eq!(ctx.text(), "a\nb");
    assert_eq!((ctx.attempt(), ctx.is_retry()), (2, true));
    assert_eq!(ctx.idempotency_key(), "t/m1");
    let (ctx, _, _) = context(history.clone(), 2).await;
    assert_eq!(ctx.history().len(), 3);
    assert_eq!(ctx.text(), "c");
    assert_eq!(ctx.idempotency_key(), "t/m2");
    assert_eq!(ctx.caller(), &Caller::principal("alice").in_tenant("acme"));
    assert!(
        TaskContext::new(Parts {
            attempt: ctx.inner.attempt.clone(),
            history,
            message_index: 3,
            cancellation: CancellationToken::new(),
            restart: HashSet::new(),
            view: ctx.inner.view.clone(),
            sync_timeout: Duration::from_secs(1),
            hops: Vec::new(),
            trace: None,
            span: None,
        })
        .is_none()
    );
}

#[tokio::test]
async fn records_carry_the_owner_the_attempt_and_deterministic_ids() {
    let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
    ctx.working(None).await.unwrap();
    ctx.working(Some("busy")).await.unwrap();
    ctx.complete(Some("done")).await.unwrap();
    let records = records(&log, &events).await;
    assert_eq!(records.len(), 3);
    for (sequence, r) in (0..).zip(&records) {
        assert_eq!(r.header.task_id, "t");
        assert_eq!(r.header.context_id, "c");
        assert_eq!(r.header.source, "w");
        assert_eq!(r.header.principal, "alice");
        assert_eq!(r.header.tenant, "acme");
        assert_eq!(r.header.attempt, 7);
        assert_eq!(r.header.content_type, "application/json");
        assert_eq!(
            r.header.message_id,
            agentlog_wire::ids::record_id("t", "m1", 7, sequence)
        );
        assert!(r.header.timestamp_ms > 0);
    }
    let RecordBody::StatusUpdate { state, message } = &records[1].body else {
        panic!("not a status update: {:?}", records[1].body);
    };
    assert_eq!(state.state().unwrap(), TaskState::Working);
    let message: Message = serde_json::from_str(message).unwrap();
    assert_eq!(message.role, Role::Agent);
    assert_eq!(message.message_id, records[1].header.message_id);
    assert_eq!(message.task_id.as_deref(), Some("t"));
    assert!(matches!(records[2].body, RecordBody::Terminal { .. }));
}

#[tokio::test]
async fn a_retry_starts_over_the_artifacts_an_earlier_run_wrote() {
    let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
    let chunk = |id: &str| Artifact {
        artifact_id: id.into(),
        name: None,
        description: None,
        parts: vec![Part::text("x")],
        metadata: None,
        extensions: Vec::new(),
    };
    ctx.artifact(chunk("out"), true, false).await.unwrap();
    ctx.artifact(chunk("out"), true, false).await.unwrap();
    ctx.artifact(chunk("other"), true, false).await.unwrap();
    ctx.flush().await.unwrap();
    let appends: Vec<bool> = records(&log, &events)
        .await
        .iter()
        .map(|r| matches!(r.body, RecordBody::ArtifactUpdate { append: true, .. }))
        .collect();
    assert_eq!(appends, [false, true, true]);
}

fn text_artifact(id: &str) -> Artifact {
    Artifact {
        artifact_id: id.into(),
        name: None,
        description: None,
        parts: vec![Part::text(id)],
        metadata: None,
        extensions: Vec::new(),
    }
}

/// A context on a log whose appends each take 30 ms, and its faults.
async fn slow_context() -> (TaskContext, Log, TopicRef, Faults) {
    let faults = Faults::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(FaultLayer::new(faults.clone()));
    let (ctx, log, events) = context_on(log, vec![Message::user_text("m1", "hi")], 0).await;
    faults.delay(LogOp::Append, Duration::from_millis(30));
    (ctx, log, events, faults)
}

fn artifact_ids(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| match &r.body {
            RecordBody::ArtifactUpdate { artifact, .. } => {
                serde_json::from_str::<Artifact>(artifact)
                    .unwrap()
                    .artifact_id
            }
            other => format!("{:?}", other.kind()),
        })
        .collect()
}

#[tokio::test]
async fn reports_made_while_one_is_on_its_way_go_out_together_in_order() {
    let (ctx, log, events, faults) = slow_context().await;
    // A report that leaves the turn open does not wait, and is sent once the handler yields
    // (on this one-thread runtime nothing else runs until the test awaits the end): the
    // burst and the end go as one append.
    for id in ["a", "b", "c", "d"] {
        ctx.artifact(text_artifact(id), false, true).await.unwrap();
    }
    ctx.complete(None).await.unwrap();
    assert_eq!(faults.counts().delays, 1);
    let written = records(&log, &events).await;
    assert_eq!(artifact_ids(&written), ["a", "b", "c", "d", "Terminal"]);
    assert_eq!(ctx.last_written(), Some(4));
    assert_eq!(ctx.progress(), Progress::Terminal);
}

#[tokio::test]
async fn a_handler_s_reports_go_out_as_it_yields_with_no_task_of_their_own() {
    let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
    let mine = ctx.clone();
    let mut handler = Box::pin(ctx.sends_on_yield(async move {
        for id in ["a", "b"] {
            mine.artifact(text_artifact(id), false, true).await.unwrap();
        }
        std::future::pending::<()>().await;
    }));
    // One poll: the handler queues two reports and yields; they are on the log (one append,
    // the memory log answers at once) before anything else on this one-thread runtime runs.
    assert!(futures::poll!(handler.as_mut()).is_pending());
    assert_eq!(ctx.last_written(), Some(1));
    assert_eq!(artifact_ids(&records(&log, &events).await), ["a", "b"]);
}

#[tokio::test]
async fn a_report_queued_outside_the_handler_s_poll_goes_out_though_the_handler_never_yields_again()
{
    let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
    let mine = ctx.clone();
    let handler = ctx.sends_on_yield(async move {
        // A task of the handler's reports; the handler itself waits for ever.
        tokio::spawn(async move {
            mine.artifact(text_artifact("a"), false, true)
                .await
                .unwrap();
        });
        std::future::pending::<()>().await;
    });
    let running = tokio::spawn(handler);
    tokio::time::timeout(Duration::from_secs(10), async {
        while ctx.last_written().is_none() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(artifact_ids(&records(&log, &events).await), ["a"]);
    running.abort();
}

#[tokio::test]
async fn a_failed_report_drops_what_queued_behind_it_and_is_told_once() {
    let (ctx, log, events, faults) = slow_context().await;
    faults.fail_append(1);
    for id in ["a", "b", "c"] {
        ctx.artifact(text_artifact(id), false, true).await.unwrap();
    }
    // The turn's end waits for everything before it: the failure of the first report is
    // its answer, and nothing of the three, nor the end, is on the log.
    let error = ctx.complete(None).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(records(&log, &events).await.is_empty());
    assert_eq!(ctx.progress(), Progress::Open);
    // Told once: what the handler reports next is written.
    ctx.artifact(text_artifact("e"), false, true).await.unwrap();
    ctx.flush().await.unwrap();
    ctx.complete(None).await.unwrap();
    let written = records(&log, &events).await;
    assert_eq!(artifact_ids(&written), ["e", "Terminal"]);

    // A failure nobody waited for is what the next report returns, in place of writing it
    // (without the delay, the failed append answers as soon as the handler yields).
    let (ctx, log, events, faults) = slow_context().await;
    faults.clear_delays();
    faults.fail_append(1);
    ctx.artifact(text_artifact("a"), false, true).await.unwrap();
    tokio::task::yield_now().await;
    let error = ctx.working(None).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    ctx.artifact(text_artifact("b"), false, true).await.unwrap();
    assert_eq!(ctx.flush().await.map_err(|e| e.kind()), Ok(()));
    assert_eq!(artifact_ids(&records(&log, &events).await), ["b"]);
}

#[tokio::test]
async fn nothing_is_written_after_the_turn_ends_or_the_token_fires() {
    let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
    ctx.input_required("more?").await.unwrap();
    assert_eq!(ctx.progress(), Progress::Interrupted);
    ctx.complete(None).await.unwrap();
    assert_eq!(ctx.follow_up().await.unwrap(), None);
    assert_eq!(records(&log, &events).await.len(), 1);

    let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
    ctx.cancellation().cancel();
    ctx.working(Some("x")).await.unwrap();
    ctx.fail("x").await.unwrap();
    assert!(records(&log, &events).await.is_empty());
    assert_eq!(ctx.progress(), Progress::Open);
}

#[tokio::test]
async fn progress_that_is_not_a_finite_number_is_refused_and_writes_nothing() {
    let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
    for (progress, total) in [(f64::NAN, None), (1.0, Some(f64::INFINITY))] {
        let e = ctx.report(progress, total, None).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
    }
    assert!(records(&log, &events).await.is_empty());
    ctx.report(1.0, Some(2.0), None).await.unwrap();
    ctx.flush().await.unwrap();
    assert_eq!(records(&log, &events).await.len(), 1);
}

#[tokio::test]
async fn a_log_message_is_a_working_status_with_a_log_part_until_the_turn_ends() {
    use agentlog_wire::mcp::LoggingLevel;
    use agentlog_wire::mcp::call::log_of;
    let (ctx, log, events) = context(vec![Message::user_text("m1", "hi")], 0).await;
    ctx.log(
        LoggingLevel::Notice,
        Some("db"),
        serde_json::json!({"rows": 3}),
    )
    .await
    .unwrap();
    ctx.log(LoggingLevel::Debug, None, serde_json::json!("plain"))
        .await
        .unwrap();
    ctx.complete(None).await.unwrap();
    ctx.log(
        LoggingLevel::Error,
        None,
        serde_json::json!("after the end"),
    )
    .await
    .unwrap();
    let records = records(&log, &events).await;
    assert_eq!(records.len(), 3, "nothing is written once the turn ended");
    let logged: Vec<_> = records[..2]
        .iter()
        .map(|r| {
            let RecordBody::StatusUpdate { state, message } = &r.body else {
                panic!("not a status update: {:?}", r.body);
            };
            assert_eq!(state.state().unwrap(), TaskState::Working);
            log_of(&serde_json::from_str(message).unwrap()).unwrap()
        })
        .collect();
    assert_eq!(
        (
            logged[0].level,
            logged[0].logger.as_deref(),
            &logged[0].data
        ),
        (
            LoggingLevel::Notice,
            Some("db"),
            &serde_json::json!({"rows": 3})
        )
    );
    assert_eq!(
        (
            logged[1].level,
            logged[1].logger.as_deref(),
            &logged[1].data
        ),
        (LoggingLevel::Debug, None, &serde_json::json!("plain"))
    );
}
