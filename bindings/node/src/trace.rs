//! [`TraceCarrier`]: a W3C trace context as JS hands it over and gets it back, shared by the
//! bridge, MCP and handler-context bindings.

use napi_derive::napi;

/// A W3C trace context as HTTP headers carry it.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct TraceCarrier {
    /// The `traceparent` value.
    pub traceparent: String,
    /// The `tracestate` value, when there is one.
    pub tracestate: Option<String>,
}

impl TraceCarrier {
    /// The context `carrier` holds, if a valid one (W3C's rules: a bad one is none).
    pub(crate) fn context(
        carrier: Option<TraceCarrier>,
    ) -> Option<agentlog_wire::trace::TraceContext> {
        let carrier = carrier?;
        agentlog_wire::trace::TraceContext::parse(
            &carrier.traceparent,
            carrier.tracestate.as_deref(),
        )
    }

    pub(crate) fn of(context: &agentlog_wire::trace::TraceContext) -> Self {
        Self {
            traceparent: context.traceparent().to_owned(),
            tracestate: Some(context.tracestate().to_owned()).filter(|s| !s.is_empty()),
        }
    }
}
