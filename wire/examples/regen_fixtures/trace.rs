//! `trace_context.json`: the W3C trace context as records carry it in their header's
//! `content_type` parameters (wire/README.md, "Trace context"): header values read and the
//! content type a record gets from them, and content types read back.

use agentlog_wire::trace::{TraceContext, parameters};
use serde_json::{Value, json};

use crate::ok;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const JSON: &str = "application/json";

pub(crate) fn trace() -> Vec<Value> {
    let long_state = (0..40)
        .map(|i| format!("k{i}=v"))
        .collect::<Vec<_>>()
        .join(",");
    let wide_state = format!("a={}", "x".repeat(257));
    let headers: Vec<(&str, &str, Option<&str>)> = vec![
        ("a parent alone", PARENT, None),
        (
            "a parent and a state of two members",
            PARENT,
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
        ),
        (
            "a state whose value has a quote and a backslash (escaped in the quoted-string)",
            PARENT,
            Some("a=x\"y\\z"),
        ),
        (
            "a state with spaces and empty members: trimmed, kept as sent",
            PARENT,
            Some(" a=1 ,, b=2 "),
        ),
        (
            "an unsampled parent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
            None,
        ),
        (
            "a later version with a field more: its first 55 characters kept",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            Some("a=1"),
        ),
        (
            "version 00 with anything after the flags: no context",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            None,
        ),
        (
            "upper-case hex: no context (the state goes with the parent)",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
            Some("a=1"),
        ),
        (
            "version ff: no context",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            None,
        ),
        (
            "an all-zero trace id: no context",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            None,
        ),
        (
            "an all-zero parent id: no context",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            None,
        ),
        (
            "too short: no context",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-01",
            None,
        ),
        (
            "a member without '=': the state is dropped, the parent kept",
            PARENT,
            Some("a=1,b"),
        ),
        (
            "an upper-case key: the state is dropped",
            PARENT,
            Some("Rojo=1"),
        ),
        (
            "'=' in a value: the state is dropped",
            PARENT,
            Some("a=1=2"),
        ),
        (
            "more than 32 members: the state is dropped",
            PARENT,
            Some(long_state.as_str()),
        ),
        (
            "a value over 256 characters: the state is dropped",
            PARENT,
            Some(wide_state.as_str()),
        ),
    ];
    let mut cases: Vec<Value> = headers
        .into_iter()
        .map(|(description, parent, state)| {
            let context = TraceContext::parse(parent, state);
            ok(
                description,
                json!({"traceparent": parent, "tracestate": state}),
                json!({
                    "context": context.as_ref().map(as_json),
                    "contentType": context.as_ref().map(|c| c.in_content_type(JSON)),
                }),
            )
        })
        .collect();

    let content_types = [
        ("no parameters: no context", JSON.to_owned()),
        (
            "a charset beside the context, names in mixed case",
            format!("application/json; charset=utf-8; TraceParent={PARENT}; TRACESTATE=\"a=1\""),
        ),
        (
            "a quoted traceparent and no space after ';'",
            format!("application/json;traceparent=\"{PARENT}\";tracestate=\"a=1,b=2\""),
        ),
        (
            "the state first",
            format!("application/json; tracestate=\"a=1\"; traceparent={PARENT}"),
        ),
        (
            "a state without a parent: no context",
            "application/json; tracestate=\"a=1\"".to_owned(),
        ),
        (
            "an invalid parent: no context",
            "application/json; traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz"
                .to_owned(),
        ),
        (
            "an invalid state: the parent alone",
            format!("application/json; traceparent={PARENT}; tracestate=\"A=1\""),
        ),
    ];
    cases.extend(content_types.into_iter().map(|(description, content_type)| {
        let params: serde_json::Map<String, Value> = parameters(&content_type)
            .into_iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), Value::String(value)))
            .collect();
        ok(
            format!("read back: {description}"),
            json!({"contentType": content_type}),
            json!({
                "parameters": params,
                "context": TraceContext::from_content_type(&content_type).as_ref().map(as_json),
            }),
        )
    }));
    cases
}

fn as_json(context: &TraceContext) -> Value {
    json!({"traceparent": context.traceparent(), "tracestate": context.tracestate()})
}
