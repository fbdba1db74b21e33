//! OpenTelemetry spans of what agentlog does: a call answered by a bridge, the log appends
//! and view syncs it waits on, a worker's turn, a push delivery.
//!
//! Spans are made only once a program has installed a tracer provider and called
//! `enable` (`export::Export::from_env` does both when the `OTEL_*` variables ask it to
//! export: the `agentlog` command and the language bindings call it, feature `otlp`);
//! until then every function here returns at once after one atomic load, and [`Span`] is
//! empty. Without the crate feature `otel` nothing here touches OpenTelemetry at all.
//!
//! A span's parent crosses the log as W3C trace context on records
//! ([`agentlog_wire::trace`]): [`Span::start`] takes the context a record or a request
//! carried, and [`Span::trace_context`] gives the span's own to write on the records made
//! under it. Within one process the current span rides with the future
//! ([`Span::in_scope`]), so the log's and the view's spans find their parent
//! ([`Parent::Current`]). No attribute carries a token, a credential or message content:
//! ids, names, counts and outcomes only.
//!
//! The W3C context of the work in progress rides with it as a task-local value ([`carrying`],
//! [`carried`]), with or without spans: a bridge sets it around the call it answers (its
//! records carry it), a worker around a handler's turn (the turn's own context), so a call
//! the handler makes to a bridge in this process continues the turn's trace.

use std::future::Future;

use agentlog_wire::trace::TraceContext;

#[cfg(feature = "otel")]
mod on;
#[cfg(feature = "otel")]
pub use on::{Span, current, enable, enabled};

#[cfg(feature = "otlp")]
pub mod export;

#[cfg(not(feature = "otel"))]
mod off;
#[cfg(not(feature = "otel"))]
pub use off::{Span, current, enabled};

tokio::task_local! {
    static CARRIED: TraceContext;
}

/// Run `work` as part of the work traced by `context` (as it is without one): what it writes
/// and the calls it makes carry `context` ([`carried`]).
/// Not an `async fn`, which would keep `work` twice (see [`Span::in_scope`]).
pub fn carrying<F: Future>(
    context: Option<TraceContext>,
    work: F,
) -> impl Future<Output = F::Output> + use<F> {
    match context {
        Some(context) => futures::future::Either::Left(CARRIED.scope(context, work)),
        None => futures::future::Either::Right(work),
    }
}

/// The trace context of the work in progress ([`carrying`]), if it has one.
pub fn carried() -> Option<TraceContext> {
    CARRIED.try_with(TraceContext::clone).ok()
}

/// What a span stands for, as OpenTelemetry's span kinds say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A call this process answers (a request to a bridge).
    Server,
    /// A call this process makes (a push POST).
    Client,
    /// Work a record on the log started (a worker's turn).
    Consumer,
    /// Work inside another span (an append, a sync).
    Internal,
}

/// Where a new span hangs.
#[derive(Debug, Clone, Copy)]
pub enum Parent<'a> {
    /// Under the context a record or request carried; a root span without one.
    Remote(Option<&'a TraceContext>),
    /// Under the span current in this task, and no span at all without one (an append no
    /// traced work asked for is not worth a trace of its own).
    Current,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// Text.
    Str(&'a str),
    /// A number.
    Int(i64),
    /// A flag.
    Bool(bool),
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(value: &'a str) -> Self {
        Value::Str(value)
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(value: &'a String) -> Self {
        Value::Str(value)
    }
}

impl From<bool> for Value<'_> {
    fn from(value: bool) -> Self {
        Value::Bool(value)
    }
}

impl From<u32> for Value<'_> {
    fn from(value: u32) -> Self {
        Value::Int(i64::from(value))
    }
}

impl From<u64> for Value<'_> {
    fn from(value: u64) -> Self {
        Value::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

impl From<usize> for Value<'_> {
    fn from(value: usize) -> Self {
        Value::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

impl From<i32> for Value<'_> {
    fn from(value: i32) -> Self {
        Value::Int(i64::from(value))
    }
}

impl From<u16> for Value<'_> {
    fn from(value: u16) -> Self {
        Value::Int(i64::from(value))
    }
}
