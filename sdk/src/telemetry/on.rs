//! The spans, with the `opentelemetry` API.

use std::borrow::Cow;
use std::future::Future;
use std::sync::OnceLock;

use agentlog_wire::trace::TraceContext;
use futures::future::Either;
use opentelemetry::context::FutureExt as _;
use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};

use super::{Kind, Parent, Value};

/// The tracer, once [`enable`] took it from the global provider.
static TRACER: OnceLock<BoxedTracer> = OnceLock::new();

/// Make spans from now on, with the tracer of the global tracer provider (set it first:
/// `opentelemetry::global::set_tracer_provider`). Once enabled, tracing stays on for the
/// process; a second call changes nothing.
pub fn enable() {
    TRACER.get_or_init(|| {
        let scope = InstrumentationScope::builder("agentlog")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        global::tracer_with_scope(scope)
    });
}

/// Whether spans are made ([`enable`] was called).
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

/// The span current in this task (for facts known deep inside a call, as a request's method
/// and task id), or none. Ending it is for whoever started it.
pub fn current() -> Span {
    if !enabled() {
        return Span::none();
    }
    let cx = Context::current();
    Span {
        cx: cx.has_active_span().then_some(cx),
    }
}

/// One span, ended when dropped (or by [`end`](Self::end)); empty while tracing is off.
#[derive(Debug, Default, Clone)]
pub struct Span {
    cx: Option<Context>,
}

impl Span {
    /// No span.
    pub fn none() -> Self {
        Self::default()
    }

    /// A span `name` of `kind` under `parent`, or none while tracing is off.
    pub fn start(name: &'static str, kind: Kind, parent: Parent<'_>) -> Self {
        let Some(tracer) = TRACER.get() else {
            return Self::none();
        };
        let parent_cx = match parent {
            Parent::Remote(context) => context
                .and_then(remote)
                .map_or_else(Context::new, |remote| {
                    Context::new().with_remote_span_context(remote)
                }),
            Parent::Current => {
                let current = Context::current();
                if !current.has_active_span() {
                    return Self::none();
                }
                current
            }
        };
        let kind = match kind {
            Kind::Server => SpanKind::Server,
            Kind::Client => SpanKind::Client,
            Kind::Consumer => SpanKind::Consumer,
            Kind::Internal => SpanKind::Internal,
        };
        let span = tracer
            .span_builder(Cow::Borrowed(name))
            .with_kind(kind)
            .start_with_context(tracer, &parent_cx);
        Self {
            cx: Some(parent_cx.with_span(span)),
        }
    }

    /// Whether this is a span (tracing is on).
    pub fn is_some(&self) -> bool {
        self.cx.is_some()
    }

    /// Set attribute `key`.
    pub fn set<'a>(&self, key: &'static str, value: impl Into<Value<'a>>) {
        if let Some(cx) = &self.cx {
            cx.span().set_attribute(key_value(key, value.into()));
        }
    }

    /// Name the span anew (once what it does is known).
    pub fn rename(&self, name: &'static str) {
        if let Some(cx) = &self.cx {
            cx.span().update_name(Cow::Borrowed(name));
        }
    }

    /// Mark the span failed, `why` a short stable reason (an error kind's name, never a
    /// message that might quote content).
    pub fn fail(&self, why: &'static str) {
        if let Some(cx) = &self.cx {
            cx.span().set_status(Status::error(why));
        }
    }

    /// The W3C context of this span, for the records written under it: its trace, its own
    /// span id, its sampling flag, and the state of `carried` (what the parent came with).
    pub fn trace_context(&self, carried: Option<&TraceContext>) -> Option<TraceContext> {
        let cx = self.cx.as_ref()?;
        let span = cx.span();
        let context = span.span_context();
        if !context.is_valid() {
            return None;
        }
        let parent = format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        );
        TraceContext::parse(&parent, carried.map(TraceContext::tracestate))
    }

    /// Run `work` with this span current (its children find it), or as it is when empty.
    ///
    /// Not an `async fn`: one that awaits the future it is given keeps it twice (as its
    /// argument and as the future it awaits), so every wrapper doubles the request's future,
    /// which is then copied and allocated that big.
    pub fn in_scope<F: Future>(&self, work: F) -> impl Future<Output = F::Output> + use<F> {
        match &self.cx {
            Some(cx) => Either::Left(work.with_context(cx.clone())),
            None => Either::Right(work),
        }
    }

    /// `work` with this span current, owned (for a task spawned on the span's behalf).
    pub fn bind<F: Future>(self, work: F) -> impl Future<Output = F::Output> + use<F> {
        match self.cx {
            Some(cx) => Either::Left(work.with_context(cx)),
            None => Either::Right(work),
        }
    }

    /// End the span now.
    pub fn end(self) {
        if let Some(cx) = &self.cx {
            cx.span().end();
        }
    }
}

/// The OpenTelemetry span context of a W3C one (a remote parent).
fn remote(context: &TraceContext) -> Option<SpanContext> {
    let trace_id = TraceId::from_hex(context.trace_id()).ok()?;
    let span_id = SpanId::from_hex(context.parent_id()).ok()?;
    let flags = if context.sampled() {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let state = context
        .tracestate()
        .parse::<TraceState>()
        .unwrap_or_default();
    Some(SpanContext::new(trace_id, span_id, flags, true, state))
}

fn key_value(key: &'static str, value: Value<'_>) -> KeyValue {
    match value {
        Value::Str(text) => KeyValue::new(key, text.to_owned()),
        Value::Int(number) => KeyValue::new(key, number),
        Value::Bool(flag) => KeyValue::new(key, flag),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_context_reads_back_as_w3c() {
        let context = TraceContext::parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("a=1"),
        )
        .unwrap();
        let remote = remote(&context).unwrap();
        assert_eq!(remote.trace_id().to_string(), context.trace_id());
        assert_eq!(remote.span_id().to_string(), context.parent_id());
        assert!(remote.is_sampled() && remote.is_remote());
        assert_eq!(remote.trace_state().header(), "a=1");
    }
}
