//! The demo tools `agentlog serve --demo` serves over MCP: `echo`, and the fixture tools the
//! MCP conformance suite (`@modelcontextprotocol/conformance`) calls by name, so the suite can
//! run against a real bridge. All share one tool agent, [`DEMO_TOOLS_AGENT`], so one worker
//! serves them.

use std::time::Duration;

use agentlog_wire::mcp::{CallToolResult, ContentBlock, LoggingLevel};
use base64::Engine as _;
use serde_json::{Map, Value, json};

use agentlog::mcp::{TaskSupport, ToolConfig};

pub use super::tool_config::DEMO_TOOLS_AGENT;
use super::tool_config::{RED_PIXEL_PNG, config, no_arguments};
use agentlog::worker::{ToolCall, Tools, tool_fn};

/// The demo tools' definitions.
pub fn demo_tools() -> Vec<ToolConfig> {
    use TaskSupport::{Forbidden, Optional};
    let mut tools = vec![
        config(
            "echo",
            "Echoes its text back",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            Forbidden,
        ),
        config(
            "test_simple_text",
            "Returns simple text",
            no_arguments(),
            Forbidden,
        ),
        config(
            "test_image_content",
            "Returns a 1x1 red PNG",
            no_arguments(),
            Forbidden,
        ),
        config(
            "test_audio_content",
            "Returns a short WAV",
            no_arguments(),
            Forbidden,
        ),
        config(
            "test_embedded_resource",
            "Returns an embedded resource",
            no_arguments(),
            Forbidden,
        ),
        config(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            no_arguments(),
            Forbidden,
        ),
        config(
            "test_error_handling",
            "Always fails (isError)",
            no_arguments(),
            Forbidden,
        ),
        config(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100",
            no_arguments(),
            Forbidden,
        ),
        config(
            "test_tool_with_logging",
            "Logs three info messages 50 ms apart",
            no_arguments(),
            Forbidden,
        ),
        config(
            "test_logging_tool",
            "Logs one message at debug, info and warning",
            no_arguments(),
            Forbidden,
        ),
        config(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"}, "email": {"type": "string"}},
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
            Forbidden,
        ),
        config(
            "route_query",
            "Answers which region a query runs in; its region is mirrored into the Mcp-Param-Region header (x-mcp-header)",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"}}, "required": ["region"]}),
            Forbidden,
        ),
        config(
            "greet",
            "Greets by name",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            Forbidden,
        ),
        config(
            "slow_compute",
            "Sleeps `seconds`, then answers; a task when the client takes tasks",
            json!({"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0}}}),
            Optional,
        ),
        config(
            "failing_job",
            "Reports a tool error after about a second; runs only as a task",
            no_arguments(),
            TaskSupport::Required,
        ),
        config(
            "confirm_delete",
            "Asks the client to confirm (an elicitation), then answers; a task when the client takes tasks",
            json!({"type": "object", "properties": {"filename": {"type": "string"}}}),
            Optional,
        ),
        config(
            "protocol_error_job",
            "Fails with a protocol error",
            no_arguments(),
            Optional,
        ),
    ];
    let mut missing = config(
        "test_missing_capability",
        "Needs the client's sampling capability",
        no_arguments(),
        Forbidden,
    );
    let mut sampling = Map::new();
    sampling.insert("sampling".to_owned(), json!({}));
    missing.required_capabilities = Some(sampling);
    tools.push(missing);
    tools.extend(super::demo_input_tools::demo_input_tools());
    tools.extend(super::demo_client_requests::demo_client_request_tools());
    tools
}

/// A WAV of 8 silent 8-bit samples at 8 kHz, base64.
fn short_wav() -> String {
    let samples = [128u8; 8];
    let mut wav = Vec::with_capacity(44 + samples.len());
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    wav.extend_from_slice(&8000u32.to_le_bytes()); // byte rate
    wav.extend_from_slice(&1u16.to_le_bytes()); // block align
    wav.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    wav.extend_from_slice(&samples);
    base64::engine::general_purpose::STANDARD.encode(wav)
}

fn image() -> ContentBlock {
    ContentBlock::Image {
        data: RED_PIXEL_PNG.to_owned(),
        mime_type: "image/png".to_owned(),
        annotations: None,
        meta: None,
    }
}

fn blocks(content: Vec<ContentBlock>) -> CallToolResult {
    CallToolResult {
        content,
        ..CallToolResult::default()
    }
}

/// Sleep `duration`, or until the task is cancelled (then `false`).
async fn sleep_or_cancel(call: &ToolCall, duration: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(duration) => true,
        () = call.task.cancellation().cancelled() => false,
    }
}

/// The demo tools' handlers.
pub fn demo_tool_handlers() -> Tools {
    let tools = super::demo_input_tools::with_demo_input_handlers(base_handlers());
    super::demo_client_requests::with_client_request_handlers(tools)
}

/// The handlers of the tools that ask for no input.
fn base_handlers() -> Tools {
    Tools::new()
        .tool(
            "echo",
            tool_fn(|call: ToolCall| async move {
                let text = call.arguments.get("text").and_then(Value::as_str).unwrap_or_default();
                Ok(CallToolResult::text(text))
            }),
        )
        .tool(
            "test_simple_text",
            tool_fn(|_: ToolCall| async {
                Ok(CallToolResult::text("This is a simple text response for testing."))
            }),
        )
        .tool("test_image_content", tool_fn(|_: ToolCall| async { Ok(blocks(vec![image()])) }))
        .tool(
            "test_audio_content",
            tool_fn(|_: ToolCall| async {
                Ok(blocks(vec![ContentBlock::Audio {
                    data: short_wav(),
                    mime_type: "audio/wav".to_owned(),
                    annotations: None,
                    meta: None,
                }]))
            }),
        )
        .tool(
            "test_embedded_resource",
            tool_fn(|_: ToolCall| async {
                Ok(blocks(vec![ContentBlock::Resource {
                    resource: json!({"uri": "test://embedded-resource", "mimeType": "text/plain",
                        "text": "This is an embedded resource content."}),
                    annotations: None,
                    meta: None,
                }]))
            }),
        )
        .tool(
            "test_multiple_content_types",
            tool_fn(|_: ToolCall| async {
                Ok(blocks(vec![
                    ContentBlock::text("Multiple content types test:"),
                    image(),
                    ContentBlock::Resource {
                        resource: json!({"uri": "test://mixed-content-resource",
                            "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}),
                        annotations: None,
                        meta: None,
                    },
                ]))
            }),
        )
        .tool(
            "test_error_handling",
            tool_fn(|_: ToolCall| async {
                Ok(CallToolResult::error("This tool intentionally returns an error for testing"))
            }),
        )
        .tool(
            "test_tool_with_progress",
            tool_fn(|call: ToolCall| async move {
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 && !sleep_or_cancel(&call, Duration::from_millis(50)).await {
                        return Ok(CallToolResult::error("cancelled"));
                    }
                    call.task.report(progress, Some(100.0), None).await?;
                }
                Ok(CallToolResult::text("Progress test completed"))
            }),
        )
        .tool(
            "test_tool_with_logging",
            tool_fn(|call: ToolCall| async move {
                let steps = ["Tool execution started", "Tool processing data", "Tool execution completed"];
                for (i, text) in steps.into_iter().enumerate() {
                    if i > 0 && !sleep_or_cancel(&call, Duration::from_millis(50)).await {
                        return Ok(CallToolResult::error("cancelled"));
                    }
                    call.task.log(LoggingLevel::Info, None, json!(text)).await?;
                }
                Ok(CallToolResult::text("Logging test completed"))
            }),
        )
        .tool(
            "test_logging_tool",
            tool_fn(|call: ToolCall| async move {
                for level in [LoggingLevel::Debug, LoggingLevel::Info, LoggingLevel::Warning] {
                    let data = json!(format!("a {level} message"));
                    call.task.log(level, Some("test_logging_tool"), data).await?;
                }
                Ok(CallToolResult::text("Logged at debug, info and warning"))
            }),
        )
        .tool(
            "json_schema_2020_12_tool",
            tool_fn(|call: ToolCall| async move {
                Ok(CallToolResult::structured(Value::Object(call.arguments)))
            }),
        )
        .tool(
            "greet",
            tool_fn(|call: ToolCall| async move {
                let name = call.arguments.get("name").and_then(Value::as_str).unwrap_or("world");
                Ok(CallToolResult::text(format!("Hello, {name}!")))
            }),
        )
        .tool(
            "route_query",
            tool_fn(|call: ToolCall| async move {
                let region = call.arguments.get("region").and_then(Value::as_str).unwrap_or_default();
                Ok(CallToolResult::text(format!("Runs in {region}")))
            }),
        )
        .tool(
            "slow_compute",
            tool_fn(|call: ToolCall| async move {
                let seconds = call.arguments.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
                let duration = Duration::from_secs_f64(seconds.clamp(0.0, 3600.0));
                if !sleep_or_cancel(&call, duration).await {
                    // The log already says cancelled; nothing more is written.
                    return Ok(CallToolResult::error("cancelled"));
                }
                Ok(CallToolResult::text(format!("Computed for {seconds} seconds")))
            }),
        )
        .tool(
            "failing_job",
            tool_fn(|call: ToolCall| async move {
                sleep_or_cancel(&call, Duration::from_secs(1)).await;
                Ok(CallToolResult::error("The job failed (a tool execution error)"))
            }),
        )
        .tool(
            "confirm_delete",
            tool_fn(|call: ToolCall| async move {
                let filename = call
                    .arguments
                    .get("filename")
                    .and_then(Value::as_str)
                    .unwrap_or("the file")
                    .to_owned();
                let Some(answer) = call.input_responses.as_ref().and_then(|r| r.get("confirm")) else {
                    // First turn, or responses that did not answer: ask (again).
                    let mut requests = Map::new();
                    requests.insert("confirm".to_owned(), json!({
                        "method": "elicitation/create",
                        "params": {"message": format!("Delete {filename}?"), "requestedSchema": {
                            "type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}}
                    }));
                    call.ask(&format!("Delete {filename}?"), requests).await?;
                    return Ok(CallToolResult::text("asked"));
                };
                let yes = answer.get("action").and_then(Value::as_str) == Some("accept")
                    && answer.pointer("/content/confirm").and_then(Value::as_bool) != Some(false);
                Ok(CallToolResult::text(if yes {
                    format!("Deleted {filename}")
                } else {
                    format!("Kept {filename}")
                }))
            }),
        )
        .tool(
            "protocol_error_job",
            tool_fn(|_: ToolCall| async { Err("the job crashed (a protocol-level failure)".into()) }),
        )
        .tool(
            "test_missing_capability",
            tool_fn(|_: ToolCall| async {
                // Reached only with `sampling` declared: the check is the bridge's (-32021
                // otherwise); test_input_required_result_sampling is the one that samples.
                Ok(CallToolResult::text("the sampling capability is declared"))
            }),
        )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_demo_tool_has_a_handler_and_a_valid_definition() {
        let handlers = demo_tool_handlers();
        // The handlers of prompts and resources a worker answers are not tools (their call
        // names hold a `/`, which no tool name may).
        let mut names: Vec<&str> = handlers
            .names()
            .filter(|name| !name.contains('/'))
            .collect();
        names.sort_unstable();
        let tools = demo_tools();
        let mut defined: Vec<&str> = tools.iter().map(|t| t.tool.name.as_str()).collect();
        defined.sort_unstable();
        assert_eq!(names, defined);
        for tool in &tools {
            tool.tool.validate().unwrap();
            jsonschema::options()
                .build(&tool.tool.input_schema)
                .unwrap();
        }
        let wav = base64::engine::general_purpose::STANDARD
            .decode(short_wav())
            .unwrap();
        assert_eq!(
            (&wav[..4], &wav[8..12], wav.len()),
            (&b"RIFF"[..], &b"WAVE"[..], 52)
        );
    }
}
