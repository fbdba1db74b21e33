//! The W3C trace context of the call a bridge is answering: the bindings read it from the
//! request (`traceparent`, `tracestate`) and the bridge writes it into every record it appends
//! for that call (`agentlog_wire::trace`: the header's `content_type` parameters), so the work
//! a record starts, in any process and after any restart, can name the call as its parent.
//!
//! The context rides with the call as a task-local value: set around one call's whole
//! handling ([`traced`], which `Bridge::handle` uses), read where a record header is made.

use std::future::Future;

use agentlog_wire::trace::TraceContext;

/// The media type of every record's JSON payload.
const JSON: &str = "application/json";

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// Run `work` as part of the call traced by `context` (nothing changes without one): the
/// records the bridge writes meanwhile carry it. For transports that call the bridge other
/// than through `Bridge::handle` (the MCP route).
pub async fn traced<F: Future>(context: Option<TraceContext>, work: F) -> F::Output {
    match context {
        Some(context) => CURRENT.scope(context, work).await,
        None => work.await,
    }
}

/// The trace context of the call being answered, if it has one.
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(TraceContext::clone).ok()
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
}
