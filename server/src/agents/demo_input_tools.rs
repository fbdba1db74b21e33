//! The demo tools that ask the client for input (`ToolCall::ask`): the MCP conformance
//! suite's MRTR fixtures (`test_input_required_result_*`, `test_streaming_elicitation`) and
//! the Tasks scenarios' `multi_input` and `test_tool_with_task` (MRTR, then a task:
//! `ToolConfig::input_before_task`). On a sync modern call each ask is an `input_required`
//! result (MRTR); on a task, `tasks/get` shows it and `tasks/update` answers it.

use agentlog_wire::mcp::CallToolResult;
use serde_json::{Map, Value, json};

use super::tool_config::{config, no_arguments};
use agentlog::mcp::{TaskSupport, ToolConfig};
use agentlog::worker::{HandlerError, ToolCall, ToolHandler, Tools, tool_fn};

fn elicit(message: &str, property: &str, kind: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message, "requestedSchema": {
        "type": "object", "properties": {property: {"type": kind}}, "required": [property]}}})
}

fn sample(text: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens}})
}

fn roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

/// The definitions: each takes no arguments.
pub(super) fn demo_input_tools() -> Vec<ToolConfig> {
    let sync = |name: &str, description: &str| {
        config(name, description, no_arguments(), TaskSupport::Forbidden)
    };
    vec![
        sync(
            "test_input_required_result_elicitation",
            "Asks the user's name (elicitation), then greets",
        ),
        sync(
            "test_input_required_result_sampling",
            "Asks the client's model for the capital of France (sampling)",
        ),
        sync(
            "test_input_required_result_list_roots",
            "Asks for the client's roots",
        ),
        sync(
            "test_input_required_result_request_state",
            "Asks for a confirmation, answers state-ok once the requestState checked out",
        ),
        sync(
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a greeting and the roots at once",
        ),
        sync(
            "test_input_required_result_multi_round",
            "Asks a name, then a colour, then answers",
        ),
        sync(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation (its requestState is checked on retry)",
        ),
        sync(
            "test_input_required_result_capabilities",
            "Asks only for the input kinds the call's clientCapabilities declare",
        ),
        sync(
            "test_streaming_elicitation",
            "Asks the user's name (elicitation) as an input_required result, never a request on the stream",
        ),
        ToolConfig {
            input_before_task: true,
            ..config(
                "test_tool_with_task",
                "Asks the user's name (MRTR before any task exists), then greets as a task; runs only as a task",
                no_arguments(),
                TaskSupport::Required,
            )
        },
        config(
            "multi_input",
            "Asks two questions at once (two elicitations), then answers both; a task when the client takes tasks",
            no_arguments(),
            TaskSupport::Optional,
        ),
    ]
}

/// A tool that asks `requests` (by key) with `text` until every key has a response, then
/// answers `done(responses)`.
fn asking(
    text: &'static str,
    requests: Value,
    done: fn(&Map<String, Value>) -> String,
) -> impl ToolHandler {
    tool_fn(move |call: ToolCall| {
        let requests = requests.as_object().cloned().unwrap_or_default();
        async move {
            let responses = call.input_responses.clone().unwrap_or_default();
            if requests.keys().all(|key| responses.contains_key(key)) {
                return Ok(CallToolResult::text(done(&responses)));
            }
            ask(&call, text, requests).await
        }
    })
}

async fn ask(
    call: &ToolCall,
    text: &str,
    requests: Map<String, Value>,
) -> Result<CallToolResult, HandlerError> {
    call.ask(text, requests).await?;
    Ok(CallToolResult::text("asked"))
}

/// What an elicitation response accepted for `field`, as text.
fn field(responses: &Map<String, Value>, key: &str, field: &str) -> String {
    match responses
        .get(key)
        .and_then(|r| r.pointer(&format!("/content/{field}")))
    {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "?".to_owned(),
    }
}

/// The text of a sampling response.
fn sampled(responses: &Map<String, Value>, key: &str) -> String {
    let content = responses.get(key).and_then(|r| r.get("content"));
    let text = |c: &Value| c.get("text").and_then(Value::as_str).map(str::to_owned);
    match content {
        Some(Value::Array(blocks)) => blocks.iter().filter_map(text).collect::<Vec<_>>().join(" "),
        Some(block) => text(block).unwrap_or_default(),
        None => String::new(),
    }
}

fn root_uris(responses: &Map<String, Value>, key: &str) -> String {
    let roots = responses
        .get(key)
        .and_then(|r| r.get("roots"))
        .and_then(Value::as_array);
    let uris: Vec<&str> = roots
        .into_iter()
        .flatten()
        .filter_map(|root| root.get("uri").and_then(Value::as_str))
        .collect();
    uris.join(", ")
}

/// The handlers, added to `tools`.
pub(super) fn with_demo_input_handlers(tools: Tools) -> Tools {
    let name = json!({"user_name": elicit("What is your name?", "name", "string")});
    let confirm = json!({"confirm": elicit("Please confirm", "ok", "boolean")});
    tools
        .tool(
            "test_input_required_result_elicitation",
            asking("What is your name?", name.clone(), |r| {
                format!("Hello, {}!", field(r, "user_name", "name"))
            }),
        )
        .tool(
            "test_input_required_result_sampling",
            asking(
                "A question for the client's model",
                json!({"capital_question": sample("What is the capital of France?", 100)}),
                |r| format!("The model says: {}", sampled(r, "capital_question")),
            ),
        )
        .tool(
            "test_input_required_result_list_roots",
            asking("Which roots?", json!({"client_roots": roots()}), |r| {
                format!("Roots: {}", root_uris(r, "client_roots"))
            }),
        )
        .tool(
            "test_input_required_result_request_state",
            // The bridge checked the requestState before this turn ran.
            asking("Please confirm", confirm.clone(), |r| {
                format!("state-ok: confirmed {}", field(r, "confirm", "ok"))
            }),
        )
        .tool(
            "test_input_required_result_tampered_state",
            asking("Please confirm", confirm, |r| {
                format!("Confirmed {}", field(r, "confirm", "ok"))
            }),
        )
        .tool(
            "test_input_required_result_multiple_inputs",
            asking(
                "Three questions",
                json!({"user_name": elicit("What is your name?", "name", "string"),
                       "greeting": sample("Generate a greeting", 50),
                       "client_roots": roots()}),
                |r| {
                    format!(
                        "{} {}! Roots: {}",
                        sampled(r, "greeting"),
                        field(r, "user_name", "name"),
                        root_uris(r, "client_roots")
                    )
                },
            ),
        )
        .tool(
            "test_tool_with_task",
            asking("What is your name?", name.clone(), |r| {
                format!("Hello, {}!", field(r, "user_name", "name"))
            }),
        )
        .tool(
            "test_streaming_elicitation",
            asking("What is your name?", name, |r| {
                format!("Hello, {}!", field(r, "user_name", "name"))
            }),
        )
        .tool(
            "multi_input",
            asking(
                "Two questions",
                json!({"first_name": elicit("Your first name?", "name", "string"),
                       "last_name": elicit("Your last name?", "name", "string")}),
                |r| {
                    format!(
                        "Hello, {} {}!",
                        field(r, "first_name", "name"),
                        field(r, "last_name", "name")
                    )
                },
            ),
        )
        .tool(
            "test_input_required_result_multi_round",
            tool_fn(|call: ToolCall| async move {
                // Each round asks a new key; the last round's responses are the answers to it.
                let responses = call.input_responses.clone().unwrap_or_default();
                if responses.contains_key("step2") {
                    let color = field(&responses, "step2", "color");
                    return Ok(CallToolResult::text(format!(
                        "Your favorite color is {color}"
                    )));
                }
                let (key, request) = if responses.contains_key("step1") {
                    (
                        "step2",
                        elicit("Step 2: What is your favorite color?", "color", "string"),
                    )
                } else {
                    (
                        "step1",
                        elicit("Step 1: What is your name?", "name", "string"),
                    )
                };
                let mut requests = Map::new();
                requests.insert(key.to_owned(), request);
                ask(&call, "One more question", requests).await
            }),
        )
        .tool(
            "test_input_required_result_capabilities",
            tool_fn(|call: ToolCall| async move {
                let responses = call.input_responses.clone().unwrap_or_default();
                if !responses.is_empty() {
                    let keys: Vec<&str> = responses.keys().map(String::as_str).collect();
                    return Ok(CallToolResult::text(format!(
                        "Answered: {}",
                        keys.join(", ")
                    )));
                }
                // Only what this client can answer (the bridge refuses the others: -32021).
                let declared = call.client_capabilities();
                let mut requests = Map::new();
                if declared.contains_key("sampling") {
                    requests.insert("question".to_owned(), sample("Say hello", 20));
                }
                if declared.contains_key("elicitation") {
                    requests.insert("name".to_owned(), elicit("Your name?", "name", "string"));
                }
                if declared.contains_key("roots") {
                    requests.insert("roots".to_owned(), roots());
                }
                if requests.is_empty() {
                    return Ok(CallToolResult::text("This client takes no input requests"));
                }
                ask(&call, "Questions this client can answer", requests).await
            }),
        )
}
