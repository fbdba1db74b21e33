//! The command a sync or task `tools/call` becomes: a `SendMessageRequest` whose one data part
//! holds the call's params (`agentlog_wire::mcp::call`), recorded as the client's bytes.

use agentlog_wire::a2a::{Message, Role, SendMessageConfiguration, SendMessageRequest};
use agentlog_wire::mcp::call::{CALL_MEDIA_TYPE, command_params, typed_part};
use agentlog_wire::mcp::{CallToolParams, META_HOPS};
use serde_json::{Map, Value, json};

use crate::error::{Error, ErrorKind, Result};

/// The command recording a call: `message_id`, minted by the bridge (MCP has no idempotency
/// key, so every call is a new task whose id nobody can guess; `Bridge::mint_message_id`), the
/// raw params, the hop path, and the context `context_id` when given (else the bridge derives
/// one from the message id).
///
/// Returns the request, the command's params text (`raw` spliced in: the client's bytes) and
/// the message id. The request is built from `data` (`raw` as parsed) rather than parsed back
/// from the text: it is what parsing the text gives (tested), which the bridge vouches for
/// when the view applies the command without parsing it.
pub(super) fn command(
    era: &agentlog_wire::mcp::Era,
    raw: &str,
    data: Value,
    params: &CallToolParams,
    as_task: bool,
    context_id: Option<&str>,
    message_id: String,
) -> Result<(SendMessageRequest, String, String)> {
    let mut metadata = Map::new();
    if let Some(hops) = params.meta.as_ref().and_then(|m| m.get(META_HOPS)) {
        let path = crate::hops::parse_path(hops).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidParams,
                format!("_meta[\"{META_HOPS}\"] must be an array of bridge ids"),
            )
            .with_detail("field", format!("_meta.{META_HOPS}"))
        })?;
        metadata.insert(crate::hops::HOPS_METADATA_KEY.to_owned(), json!(path));
    }
    let version = match era {
        agentlog_wire::mcp::Era::Modern { version, .. } => version.as_str(),
        agentlog_wire::mcp::Era::Legacy => "legacy",
    };
    // createdAt of an MCP task: when the bridge accepted the call.
    let now = crate::retention::now_ms();
    let mut mcp = json!({"protocolVersion": version, "createdAtMs": now});
    if as_task {
        // A task's asks wait for tasks/update with no deadline; a sync call's expire.
        mcp["task"] = json!(true);
    }
    metadata.insert("agentlog.mcp".to_owned(), mcp);
    let text = command_params(&message_id, context_id, raw, &metadata, as_task);
    let request = SendMessageRequest {
        tenant: None,
        message: Message {
            message_id: message_id.clone(),
            context_id: context_id.map(str::to_owned),
            task_id: None,
            role: Role::User,
            parts: vec![typed_part(data, CALL_MEDIA_TYPE)],
            metadata: Some(metadata),
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        },
        configuration: as_task.then(|| SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    };
    Ok((request, text, message_id))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentlog_wire::mcp::Era;
    use serde::Deserialize;

    fn modern() -> Era {
        let meta = json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }});
        Era::of(meta.as_object()).unwrap()
    }

    /// The request is built, not parsed from the recorded text; the view folds the text, so
    /// the two must agree for every shape of call.
    #[test]
    fn the_built_request_is_the_recorded_text_parsed() {
        let raws = [
            r#"{"name":"t"}"#,
            r#"{"name":"greet","arguments":{"name":"Ada"}}"#,
            r#"{"name":"greet","arguments":null,"task":{"ttl":5}}"#,
            r#"{"name":"t","arguments":{"n":1.5e300,"big":18446744073709551615,"neg":-7,"s":"é\u0000\"","a":[true,null,{}]},"_meta":{"progressToken":7,"dev.agentlog/hops":["b1","b2"]}}"#,
            r#"{"name":"t","name":"u","arguments":{"k":1,"k":2},"inputResponses":{"x":{"action":"accept"}},"requestState":"a:b#1"}"#,
        ];
        for era in [Era::Legacy, modern()] {
            for raw in raws {
                for (as_task, context) in [(false, None), (true, Some("ctx-\"1\""))] {
                    let data: Value = serde_json::from_str(raw).unwrap();
                    let params = CallToolParams::deserialize(&data).unwrap();
                    let (request, text, message_id) =
                        command(&era, raw, data, &params, as_task, context, "m".into()).unwrap();
                    assert!(text.contains(raw), "{text}");
                    let parsed: SendMessageRequest = serde_json::from_str(&text).unwrap();
                    assert_eq!(request, parsed, "{text}");
                    assert_eq!(request.message.message_id, message_id);
                }
            }
        }
    }

    #[test]
    fn a_hop_path_that_is_not_bridge_ids_is_refused() {
        let raw = r#"{"name":"t","_meta":{"dev.agentlog/hops":[1]}}"#;
        let data: Value = serde_json::from_str(raw).unwrap();
        let params = CallToolParams::deserialize(&data).unwrap();
        let error = command(&Era::Legacy, raw, data, &params, false, None, "m".into()).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidParams);
    }
}
