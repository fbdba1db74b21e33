//! The W3C trace context through a process's environment (OpenTelemetry's environment
//! carriers): `agentlog worker --exec` gives its command the turn's own span as `TRACEPARENT`
//! and `TRACESTATE`, and `agentlog send` (`get`, `cancel`, `list`) sends what it finds there
//! as the call's headers (or, while exporting, the context of its own client span under it),
//! so the call a command makes is a child of the turn that ran it.

use agentlog::worker::TaskContext;
use agentlog_wire::trace::TraceContext;

/// The parent's variable.
pub(super) const TRACEPARENT_ENV: &str = "TRACEPARENT";
/// The state's variable.
pub(super) const TRACESTATE_ENV: &str = "TRACESTATE";

/// The variables a command run for `task`'s turn gets: its span's context, or empty ones
/// (so a context inherited from the worker's own environment is not passed on as the turn's).
pub(super) fn of(task: &TaskContext) -> [(&'static str, String); 2] {
    let span = task.span_context();
    [
        (
            TRACEPARENT_ENV,
            span.map(|s| s.traceparent().to_owned()).unwrap_or_default(),
        ),
        (
            TRACESTATE_ENV,
            span.map(|s| s.tracestate().to_owned()).unwrap_or_default(),
        ),
    ]
}

/// The context in this process's environment, if a valid one is there.
pub(super) fn from_env() -> Option<TraceContext> {
    let parent = std::env::var(TRACEPARENT_ENV).ok()?;
    let state = std::env::var(TRACESTATE_ENV).ok();
    TraceContext::parse(&parent, state.as_deref())
}
