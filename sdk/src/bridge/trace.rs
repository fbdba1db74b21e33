//! The W3C trace context of the call a bridge is answering: the bindings read it from the
//! request (`traceparent`, `tracestate`) and the bridge writes it into every record it appends
//! for that call (`agentlog_wire::trace`: the header's `content_type` parameters), so the work
//! a record starts, in any process and after any restart, can name the call as its parent.
//!
//! The context rides with the call as a task-local value: set around one call's whole
//! handling ([`traced`], which `Bridge::handle` uses), read where a record header is made.
//! While spans are made ([`crate::telemetry`]), `Bridge::handle` answers under a server span
//! of its own (a child of the caller's) and the records carry that span's context instead.

use std::future::Future;

use agentlog_wire::trace::TraceContext;

use crate::error::Result;
use crate::telemetry::{Kind, Parent, Span};

/// The span attribute of how a call went: `ok`, or an error kind's name.
pub(super) const OUTCOME: &str = "agentlog.outcome";

/// The media type of every record's JSON payload.
const JSON: &str = "application/json";

/// Run `work` as part of the call traced by `context` (nothing changes without one): the
/// records the bridge writes meanwhile carry it. For transports that call the bridge other
/// than through `Bridge::handle` (the MCP route).
pub fn traced<F: Future>(
    context: Option<TraceContext>,
    work: F,
) -> impl Future<Output = F::Output> + use<F> {
    crate::telemetry::carrying(context, work)
}

/// The trace context of the call being answered (or of the handler's turn making the call),
/// if it has one.
pub fn current() -> Option<TraceContext> {
    crate::telemetry::carried()
}

/// The span of one request to the bridge (named after its method once dispatch knows it),
/// under the context the request came with; empty while tracing is off.
pub(super) fn request_span(agent: &str, carried: Option<&TraceContext>) -> Span {
    let span = Span::start("A2A request", Kind::Server, Parent::Remote(carried));
    if span.is_some() {
        span.set("rpc.system", "a2a");
        span.set("agentlog.agent", agent);
    }
    span
}

/// A `view sync` span under the current one while `work` (a wait for the view to apply
/// `partition` up to the log's end) runs.
pub(super) async fn sync_span<T>(
    partition: u32,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    let span = Span::start("view sync", Kind::Internal, Parent::Current);
    if !span.is_some() {
        return work.await;
    }
    span.set("agentlog.log.partition", partition);
    let result = work.await;
    if let Err(error) = &result {
        span.set(OUTCOME, error.kind().as_str());
        span.fail(error.kind().as_str());
    }
    span.end();
    result
}

/// The `content_type` of a record written now: JSON, with the call's trace context.
pub(super) fn content_type() -> String {
    match current() {
        Some(context) => context.in_content_type(JSON),
        None => JSON.to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[tokio::test]
    async fn a_call_is_traced_only_inside_its_scope() {
        assert_eq!(content_type(), JSON);
        let context = TraceContext::parse(PARENT, Some("a=1")).unwrap();
        let inside = traced(Some(context.clone()), async { (current(), content_type()) }).await;
        assert_eq!(inside.0, Some(context.clone()));
        assert_eq!(TraceContext::from_content_type(&inside.1), Some(context));
        assert_eq!(traced(None, async { current() }).await, None);
        assert_eq!(current(), None);
    }

    /// A traced call's turn sees the call's context, and what the worker writes for it
    /// carries a span of its own in the same trace (its claim, the call's).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_turn_is_a_child_of_the_call() {
        use crate::bridge::{Bridge, BridgeConfig, RpcReply, RpcRequest};
        use crate::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
        use agentlog_wire::{Record, RecordBody};

        let log = crate::log::open("memory://").await.unwrap();
        let bridge = Bridge::open(log.clone(), BridgeConfig::new("traced"))
            .await
            .unwrap();
        let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let handler = handler_fn(move |task: TaskContext| {
            let seen_tx = seen_tx.clone();
            async move {
                let _ = seen_tx.send(task.trace_context().cloned());
                task.complete(Some("done")).await?;
                Ok(())
            }
        });
        let worker = Worker::start(log.clone(), WorkerConfig::new("traced"), handler)
            .await
            .unwrap();
        let context = TraceContext::parse(PARENT, Some("a=1")).unwrap();
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
        let request =
            RpcRequest::new(body, crate::agent::Caller::anonymous()).trace(Some(context.clone()));
        let RpcReply::Json(reply) = bridge.handle(request).await else {
            panic!("a JSON reply");
        };
        assert!(String::from_utf8_lossy(&reply).contains("TASK_STATE_COMPLETED"));
        assert_eq!(seen.recv().await.unwrap(), Some(context.clone()));

        let task_id = agentlog_wire::ids::task_id("", "", "m-1");
        let records = records_of(&bridge, &task_id).await;
        let of = |r: &Record| TraceContext::from_content_type(&r.header.content_type);
        let command = records.first().unwrap();
        assert_eq!(of(command), Some(context.clone()));
        // The worker has a view of its own (as in another process): its claim, read from
        // the command's copy on its queue, carries the command's context.
        let claim = records
            .iter()
            .find(|r| matches!(r.body, RecordBody::Claim { .. }))
            .unwrap();
        assert_eq!(claim.header.source, worker.source());
        assert_eq!(of(claim), Some(context.clone()));
        let terminal = records
            .iter()
            .find(|r| matches!(r.body, RecordBody::Terminal { .. }))
            .unwrap();
        let child = of(terminal).unwrap();
        assert_eq!(child.trace_id(), context.trace_id());
        assert_ne!(child.parent_id(), context.parent_id());
        assert_eq!(child.tracestate(), "a=1");
        worker.shutdown().await.unwrap();
    }

    /// The records of task `task_id` on `bridge`'s events topic, in log order.
    async fn records_of(
        bridge: &crate::bridge::Bridge,
        task_id: &str,
    ) -> Vec<agentlog_wire::Record> {
        let topic = &bridge.config().topics.events;
        let partition = bridge.view().partition_of(task_id);
        bridge
            .log()
            .read(topic, partition, 0, 1000)
            .await
            .unwrap()
            .iter()
            .map(|s| agentlog_wire::Record::decode(&s.payload).unwrap())
            .filter(|r| r.header.task_id == task_id)
            .collect()
    }

    /// A handler calling another agent's bridge in its process: the command it makes there
    /// carries the turn's own context (and the hop path), so the callee's turn is in the
    /// caller's trace, under the caller's turn.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_handlers_call_to_another_agent_carries_its_turn_on() {
        use crate::bridge::{Bridge, BridgeConfig, RpcReply, RpcRequest};
        use crate::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
        use agentlog_wire::a2a::{Message, SendMessageRequest, SendMessageResponse};

        let log = crate::log::open("memory://").await.unwrap();
        let caller = Bridge::open(log.clone(), BridgeConfig::new("caller"))
            .await
            .unwrap();
        let callee = Bridge::open(log.clone(), BridgeConfig::new("callee"))
            .await
            .unwrap();
        let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let onward = callee.clone();
        let calling = handler_fn(move |task: TaskContext| {
            let (seen_tx, onward) = (seen_tx.clone(), onward.clone());
            async move {
                let mut request = SendMessageRequest {
                    tenant: None,
                    message: Message::user_text("m-2", "onward"),
                    configuration: None,
                    metadata: None,
                };
                task.stamp(&mut request);
                let answer = onward
                    .send_message(&crate::agent::Caller::anonymous(), request)
                    .await?;
                let SendMessageResponse::Task(called) = answer else {
                    panic!("a task");
                };
                let _ = seen_tx.send((task.span_context().cloned(), called.id));
                task.complete(Some("called")).await?;
                Ok(())
            }
        });
        let answering = handler_fn(|task: TaskContext| async move {
            task.complete(Some("done")).await?;
            Ok(())
        });
        let workers = [
            Worker::start(log.clone(), WorkerConfig::new("caller"), calling)
                .await
                .unwrap(),
            Worker::start(log.clone(), WorkerConfig::new("callee"), answering)
                .await
                .unwrap(),
        ];
        let context = TraceContext::parse(PARENT, Some("a=1")).unwrap();
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
        let request =
            RpcRequest::new(body, crate::agent::Caller::anonymous()).trace(Some(context.clone()));
        let RpcReply::Json(reply) = caller.handle(request).await else {
            panic!("a JSON reply");
        };
        assert!(String::from_utf8_lossy(&reply).contains("TASK_STATE_COMPLETED"));
        let (turn, called) = seen.recv().await.unwrap();
        let turn = turn.unwrap();
        assert_eq!(turn.trace_id(), context.trace_id());
        assert_ne!(turn.parent_id(), context.parent_id());

        let records = records_of(&callee, &called).await;
        let command = records.first().unwrap();
        assert_eq!(
            TraceContext::from_content_type(&command.header.content_type),
            Some(turn)
        );
        assert_eq!(command.header.bridge_hops, ["caller", "callee"]);
        // Outside a traced turn or call, nothing is carried.
        assert_eq!(current(), None);
        for worker in workers {
            worker.shutdown().await.unwrap();
        }
    }
}
