//! The demo tools the MCP conformance suite calls in the `initialize` era to see the server
//! ask its client (`tools-call-sampling`, `tools-call-elicitation`,
//! `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`): each asks once
//! (`ToolCall::ask`), which a legacy call on an event stream relays as a request to the client
//! (and a 2026-07-28 one answers as MRTR), then answers with what the client said; and the
//! prompt `test_input_required_result_prompt` (`input-required-result-non-tool-request`),
//! which its worker answers after asking the client the same way.

use agentlog_wire::mcp::CallToolResult;
use serde_json::{Map, Value, json};

use super::tool_config::{config, no_arguments};
use agentlog::mcp::{TaskSupport, ToolConfig};
use agentlog::worker::{ToolCall, Tools, prompt_fn, tool_fn};

/// The key each of these tools asks under.
const KEY: &str = "client";

fn string_argument(name: &str, description: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string", "description": description}},
           "required": [name]})
}

/// The definitions.
pub(super) fn demo_client_request_tools() -> Vec<ToolConfig> {
    let sync = |name: &str, description: &str, schema: Value| {
        config(name, description, schema, TaskSupport::Forbidden)
    };
    vec![
        sync(
            "test_sampling",
            "Asks the client's model to answer the prompt (sampling/createMessage)",
            string_argument("prompt", "The prompt to send to the LLM"),
        ),
        sync(
            "test_elicitation",
            "Asks the user for a username and an email (elicitation/create)",
            string_argument("message", "The message to show the user"),
        ),
        sync(
            "test_elicitation_sep1034_defaults",
            "Asks the user with a form whose every field has a default (SEP-1034)",
            no_arguments(),
        ),
        sync(
            "test_elicitation_sep1330_enums",
            "Asks the user with the five enum shapes of SEP-1330",
            no_arguments(),
        ),
    ]
}

fn argument(call: &ToolCall, name: &str) -> String {
    call.arguments
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn elicitation(message: &str, schema: Value) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}})
}

/// What a tool asks, from its call.
fn request_of(tool: &str, call: &ToolCall) -> Value {
    match tool {
        "test_sampling" => json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": argument(call, "prompt")}}],
            "maxTokens": 100}}),
        "test_elicitation" => elicitation(
            &argument(call, "message"),
            json!({"type": "object", "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"}},
                "required": ["username", "email"]}),
        ),
        "test_elicitation_sep1034_defaults" => elicitation(
            "Please review and update the form fields with defaults",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status",
                           "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true}}}),
        ),
        _ => elicitation(
            "Please select options from the enum fields",
            json!({"type": "object", "properties": {
                "untitledSingle": {"type": "string", "description": "Select one option",
                                   "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Select one option with titles",
                                 "oneOf": [{"const": "value1", "title": "First Option"},
                                           {"const": "value2", "title": "Second Option"},
                                           {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                               "enum": ["opt1", "opt2", "opt3"],
                               "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "description": "Select multiple options",
                                  "minItems": 1, "maxItems": 3,
                                  "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                                "minItems": 1, "maxItems": 3,
                                "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                    {"const": "value2", "title": "Second Choice"},
                                                    {"const": "value3", "title": "Third Choice"}]}}}}),
        ),
    }
}

/// What a tool answers once the client responded.
fn answer_of(tool: &str, response: &Map<String, Value>) -> String {
    if tool == "test_sampling" {
        let content = response.get("content");
        let text = |c: &Value| c.get("text").and_then(Value::as_str).map(str::to_owned);
        let said = match content {
            Some(Value::Array(blocks)) => {
                blocks.iter().filter_map(text).collect::<Vec<_>>().join(" ")
            }
            Some(block) => text(block).unwrap_or_default(),
            None => String::new(),
        };
        return format!("LLM response: {said}");
    }
    let action = response
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("cancel");
    let content = response.get("content").cloned().unwrap_or(json!({}));
    if tool == "test_elicitation" {
        format!("User response: action={action}, content={content}")
    } else {
        format!("Elicitation completed: action={action}, content={content}")
    }
}

/// The prompt that asks first: a context (elicitation), then the prompt using it.
async fn context_prompt(
    call: ToolCall,
) -> Result<Map<String, Value>, agentlog::worker::HandlerError> {
    let responses = call.input_responses.clone().unwrap_or_default();
    if let Some(response) = responses.get("user_context") {
        let context = response
            .pointer("/content/context")
            .and_then(Value::as_str)
            .unwrap_or("none");
        let result = json!({"description": "A prompt using the context the client gave",
            "messages": [{"role": "user", "content": {"type": "text",
                "text": format!("Answer within this context: {context}")}}]});
        return Ok(result.as_object().cloned().unwrap_or_default());
    }
    let mut requests = Map::new();
    requests.insert(
        "user_context".to_owned(),
        elicitation(
            "What context should the prompt use?",
            json!({"type": "object", "properties": {"context": {"type": "string"}},
                   "required": ["context"]}),
        ),
    );
    call.ask("The prompt needs a context", requests).await?;
    Ok(Map::new())
}

/// The handlers, added to `tools`.
pub(super) fn with_client_request_handlers(mut tools: Tools) -> Tools {
    tools = tools.prompt(
        "test_input_required_result_prompt",
        prompt_fn(context_prompt),
    );
    for tool in demo_client_request_tools() {
        let name = tool.tool.name.clone();
        let handler_name = name.clone();
        tools = tools.tool(
            &name,
            tool_fn(move |call: ToolCall| {
                let name = handler_name.clone();
                async move {
                    let responses = call.input_responses.clone().unwrap_or_default();
                    if let Some(Value::Object(response)) = responses.get(KEY) {
                        return Ok(CallToolResult::text(answer_of(&name, response)));
                    }
                    let mut requests = Map::new();
                    requests.insert(KEY.to_owned(), request_of(&name, &call));
                    call.ask("The tool asks its client", requests).await?;
                    Ok(CallToolResult::text("asked"))
                }
            }),
        );
    }
    tools
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_says_what_the_client_said() {
        let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}});
        assert_eq!(
            answer_of("test_sampling", sampled.as_object().unwrap()),
            "LLM response: Paris"
        );
        let accepted = json!({"action": "accept", "content": {"username": "ada"}});
        assert_eq!(
            answer_of("test_elicitation", accepted.as_object().unwrap()),
            r#"User response: action=accept, content={"username":"ada"}"#
        );
        let declined = json!({"action": "decline"});
        assert_eq!(
            answer_of(
                "test_elicitation_sep1330_enums",
                declined.as_object().unwrap()
            ),
            "Elicitation completed: action=decline, content={}"
        );
    }
}
