//! Without the `otel` feature: no spans, nothing to do.

use std::future::Future;

use agentlog_wire::trace::TraceContext;

use super::{Kind, Parent, Value};

/// Whether spans are made: never without the `otel` feature.
pub fn enabled() -> bool {
    false
}

/// No span: the `otel` feature is off.
pub fn current() -> Span {
    Span
}

/// No span: the `otel` feature is off.
#[derive(Debug, Default, Clone)]
pub struct Span;

impl Span {
    /// No span.
    pub fn none() -> Self {
        Self
    }

    /// No span.
    pub fn start(_name: &'static str, _kind: Kind, _parent: Parent<'_>) -> Self {
        Self
    }

    /// Never a span.
    pub fn is_some(&self) -> bool {
        false
    }

    /// Nothing to set.
    pub fn set<'a>(&self, _key: &'static str, _value: impl Into<Value<'a>>) {}

    /// Nothing to name.
    pub fn rename(&self, _name: &'static str) {}

    /// Nothing to mark.
    pub fn fail(&self, _why: &'static str) {}

    /// No context of its own.
    pub fn trace_context(&self, _carried: Option<&TraceContext>) -> Option<TraceContext> {
        None
    }

    /// `work` as it is (not an `async fn`, which would keep it twice: see the `on` one).
    pub fn in_scope<F: Future>(&self, work: F) -> impl Future<Output = F::Output> + use<F> {
        work
    }

    /// `work` as it is.
    pub fn bind<F: Future>(self, work: F) -> F {
        work
    }

    /// Nothing to end.
    pub fn end(self) {}
}
