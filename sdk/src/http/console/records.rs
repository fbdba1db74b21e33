//! `GET api/tasks/{agent}/{id}/records`: a task's records as SSE, from the bridge's
//! [`Timeline`], each rendered for the page (what it says, and what the fold made of it).

use std::convert::Infallible;

use agentlog_wire::a2a::{Artifact, Message, SendMessageRequest, TaskPushNotificationConfig};
use agentlog_wire::fold::{ClaimKind, Outcome};
use agentlog_wire::jsonrpc::Operation;
use agentlog_wire::trace::TraceContext;
use agentlog_wire::{RecordBody, StateCode};
use axum::http::request::Parts;
use axum::response::Response;
use axum::response::sse::Event;
use futures::StreamExt;
use serde_json::{Value, json};

use super::api::summary;
use super::{Console, json_error, query};
use crate::bridge::{Timeline, TimelineRecord, Verdict};

/// `GET api/tasks/{agent}/{id}/records`: an error before anything is read is a JSON error;
/// then one `id: <offset>` + `data: <record>` frame per record, `event: caught-up` once the
/// records the log held when asked are out, and the records appended after, until the
/// client leaves. `Last-Event-ID` (or `?after=`) skips records up to that offset.
pub(super) async fn follow(console: &Console, parts: &Parts, agent: &str, id: &str) -> Response {
    let caller = match console.caller(parts, Operation::GetTask).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let agent = match console.agent(agent) {
        Ok(agent) => agent,
        Err(refusal) => return refusal,
    };
    let after = parts
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query(parts, "after"))
        .and_then(|v| v.trim().parse::<u64>().ok());
    let id = percent_encoding::percent_decode_str(id).decode_utf8_lossy();
    let tenant = query(parts, "tenant");
    let timeline = match agent.bridge.timeline(&caller, tenant.as_deref(), &id).await {
        Ok(timeline) => timeline,
        Err(error) => return json_error(&error),
    };
    let state = Following {
        timeline,
        after,
        caught_up: false,
        failed: false,
    };
    let events = futures::stream::unfold(state, |mut state| async move {
        if state.failed {
            return None;
        }
        let mut events = Vec::new();
        if !state.caught_up && state.timeline.position() >= state.timeline.history_end() {
            state.caught_up = true;
            let position = state.timeline.position();
            events.push(Event::default().event("caught-up").data(position.to_string()));
            return Some((events, state));
        }
        match state.timeline.next().await {
            Ok(records) => {
                for record in records {
                    if state.after.is_some_and(|after| record.offset <= after) {
                        continue;
                    }
                    events.push(
                        Event::default()
                            .id(record.offset.to_string())
                            .data(render(&record).to_string()),
                    );
                }
            }
            Err(error) => {
                state.failed = true;
                let body = json!({"error": {"kind": error.kind().as_str(), "message": error.to_rpc().message}});
                events.push(Event::default().event("error").data(body.to_string()));
            }
        }
        Some((events, state))
    })
    .flat_map(|events| futures::stream::iter(events.into_iter().map(Ok::<_, Infallible>)));
    crate::http::rpc::sse(events)
}

struct Following {
    timeline: Timeline,
    after: Option<u64>,
    caught_up: bool,
    failed: bool,
}

/// One record as the page shows it. A push config shows its id and its URL without the
/// query: never its token or credentials.
pub(super) fn render(entry: &TimelineRecord) -> Value {
    let record = &entry.record;
    let header = &record.header;
    let (verdict, reason, claim) = match entry.verdict {
        Verdict::Applied(kind) => ("applied", None, kind.map(claim_name)),
        Verdict::Ignored(outcome) => ("ignored", Some(outcome_name(outcome)), None),
        Verdict::Rejected => ("rejected", Some("not trusted".to_owned()), None),
    };
    let mut value = json!({
        "offset": entry.offset,
        "partition": entry.partition,
        "time": header.timestamp_ms,
        "source": header.source,
        "attempt": header.attempt,
        "messageId": header.message_id,
        "hops": header.bridge_hops,
        "signed": record.is_signed(),
        "verdict": verdict,
        "reason": reason,
        "claim": claim,
        "trace": TraceContext::from_content_type(&header.content_type)
            .map(|c| c.traceparent().to_owned()),
    });
    let (kind, summary, detail) = body(&record.body);
    value["kind"] = Value::from(kind);
    value["summary"] = Value::from(summary);
    value["detail"] = detail;
    match &record.body {
        RecordBody::Claim {
            turn,
            lease_until_ms,
        } => {
            value["turn"] = Value::from(turn.as_str());
            value["leaseUntil"] = Value::from(*lease_until_ms);
        }
        RecordBody::StatusUpdate { state, .. } | RecordBody::Terminal { state, .. } => {
            value["state"] = state_value(*state);
        }
        _ => {}
    }
    value
}

/// The record's kind, a one-line summary and what the page shows when it is opened.
fn body(body: &RecordBody) -> (std::borrow::Cow<'static, str>, String, Value) {
    match body {
        RecordBody::Command { params, .. } => {
            let (text, detail) = request(params);
            ("command".into(), text, detail)
        }
        RecordBody::Continue { params } => {
            let (text, detail) = request(params);
            ("continue".into(), text, detail)
        }
        RecordBody::CancelRequest { .. } => {
            ("cancel".into(), "cancel requested".to_owned(), Value::Null)
        }
        RecordBody::StatusUpdate { message, .. } => {
            let (text, detail) = message_text(message);
            ("status".into(), text, detail)
        }
        RecordBody::Terminal { message, .. } => {
            let (text, detail) = message_text(message);
            ("terminal".into(), text, detail)
        }
        RecordBody::Reply { message } => {
            let (text, detail) = message_text(message);
            ("reply".into(), text, detail)
        }
        RecordBody::ArtifactUpdate {
            append,
            last_chunk,
            artifact,
        } => match serde_json::from_str::<Artifact>(artifact) {
            Ok(parsed) => {
                let name = parsed.name.as_deref().unwrap_or(&parsed.artifact_id);
                let mut flags = Vec::new();
                if *append {
                    flags.push("append");
                }
                if *last_chunk {
                    flags.push("last chunk");
                }
                let flags = if flags.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", flags.join(", "))
                };
                let text = format!("{name}{flags}: {}", summary(&parsed.parts));
                (
                    "artifact".into(),
                    text,
                    serde_json::to_value(&parsed).unwrap_or(Value::Null),
                )
            }
            Err(e) => (
                "artifact".into(),
                format!("<bad artifact: {e}>"),
                Value::Null,
            ),
        },
        RecordBody::Claim { turn, .. } => ("claim".into(), format!("turn {turn}"), Value::Null),
        RecordBody::PushConfig { config } => {
            let text = match serde_json::from_str::<TaskPushNotificationConfig>(config) {
                Ok(config) => {
                    let url = config.url.split(['?', '#']).next().unwrap_or_default();
                    format!("{} → {url}", config.id.as_deref().unwrap_or_default())
                }
                Err(e) => format!("<bad config: {e}>"),
            };
            ("push-config".into(), text, Value::Null)
        }
        RecordBody::PushConfigDeleted { config_id } => (
            "push-deleted".into(),
            format!("config {config_id} deleted"),
            Value::Null,
        ),
        RecordBody::PushProgress { config_id, next } => (
            "push-progress".into(),
            format!("config {config_id}: done before the update at offset {next}"),
            Value::Null,
        ),
        RecordBody::PushDeadLetter {
            config_id,
            update,
            attempts,
            reason,
        } => (
            "dead-letter".into(),
            format!(
                "config {config_id}: the update at offset {update} given up after {attempts} attempts: {reason}"
            ),
            Value::Null,
        ),
        // A kind this page has no words for yet (the wire crate's newer ones): its name.
        #[allow(unreachable_patterns)]
        other => (kind_name(other.kind()).into(), String::new(), Value::Null),
    }
}

/// A record kind's name in the page's style (`PushProgress` → `push-progress`).
fn kind_name(kind: agentlog_wire::RecordKind) -> String {
    let name: &'static str = kind.into();
    let mut kebab = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            kebab.push('-');
        }
        kebab.push(c.to_ascii_lowercase());
    }
    kebab
}

fn request(params: &str) -> (String, Value) {
    match serde_json::from_str::<SendMessageRequest>(params) {
        Ok(request) => (
            summary(&request.message.parts),
            serde_json::to_value(&request.message).unwrap_or(Value::Null),
        ),
        Err(e) => (format!("<bad request: {e}>"), Value::Null),
    }
}

fn message_text(message: &str) -> (String, Value) {
    if message.is_empty() {
        return (String::new(), Value::Null);
    }
    match serde_json::from_str::<Message>(message) {
        Ok(message) => (
            summary(&message.parts),
            serde_json::to_value(&message).unwrap_or(Value::Null),
        ),
        Err(e) => (format!("<bad message: {e}>"), Value::Null),
    }
}

fn state_value(state: StateCode) -> Value {
    match state.state() {
        Ok(state) => serde_json::to_value(state).unwrap_or(Value::Null),
        Err(_) => Value::from(format!("state {}", state.0)),
    }
}

fn claim_name(kind: ClaimKind) -> &'static str {
    match kind {
        ClaimKind::First => "first",
        ClaimKind::Renewal => "renewal",
        ClaimKind::Takeover => "takeover",
        ClaimKind::Advance => "advance",
    }
}

fn outcome_name(outcome: Outcome) -> String {
    match outcome {
        Outcome::Fenced => "fenced".to_owned(),
        Outcome::Duplicate => "duplicate".to_owned(),
        Outcome::AfterTerminal => "after terminal".to_owned(),
        Outcome::IllegalTransition => "illegal transition".to_owned(),
        Outcome::Invalid => "invalid".to_owned(),
        Outcome::Orphan => "orphan".to_owned(),
        other => format!("{other:?}").to_lowercase(),
    }
}
