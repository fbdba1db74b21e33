//! The resources, resource template and prompts `agentlog serve --demo` serves over MCP
//! beside its tools: the fixtures the MCP conformance suite reads and gets by name. They are
//! written in the definitions file's own format (`McpConfig::from_json`, what `serve --tools
//! FILE` reads), so they show that format too.

use agentlog::mcp::McpConfig;
use serde_json::json;

use super::tool_config::RED_PIXEL_PNG;

/// The demo's resources, template and prompts (no tools: those are `demo_tools`).
pub fn demo_definitions() -> agentlog::Result<McpConfig> {
    McpConfig::from_json(
        json!({
            "resources": [
                {"uri": "test://static-text", "name": "static-text", "title": "A text resource",
                 "description": "A static text resource", "mimeType": "text/plain",
                 "text": "This is the content of the static text resource."},
                {"uri": "test://static-binary", "name": "static-binary", "title": "A binary resource",
                 "description": "A 1x1 red PNG", "mimeType": "image/png", "blob": RED_PIXEL_PNG},
                {"uri": "test://watched-resource", "name": "watched-resource", "title": "A resource to subscribe to",
                 "description": "The resource the conformance suite subscribes to (static: it never changes)",
                 "mimeType": "text/plain", "text": "Watch me."}
            ],
            "resourceTemplates": [
                {"uriTemplate": "test://template/{id}/data", "name": "template-data",
                 "description": "JSON data for an id", "mimeType": "application/json",
                 "text": "{\"id\":\"{id}\",\"templateTest\":true,\"data\":\"Data for ID: {id}\"}",
                 "completions": {"id": ["123", "456", "789"]}}
            ],
            "prompts": [
                {"name": "test_simple_prompt", "description": "A prompt without arguments",
                 "messages": [{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}]},
                {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments",
                 "arguments": [
                     {"name": "arg1", "description": "First test argument", "required": true,
                      "values": ["test-value", "testing", "paris", "park"]},
                     {"name": "arg2", "description": "Second test argument", "required": true}
                 ],
                 "messages": [{"role": "user", "content": {"type": "text", "text": "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"}}]},
                {"name": "test_prompt_with_embedded_resource", "description": "A prompt embedding a resource",
                 "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": true,
                                "values": ["test://static-text", "test://example-resource"]}],
                 "messages": [
                     {"role": "user", "content": {"type": "resource", "resource": {
                         "uri": "{resourceUri}", "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
                     {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}
                 ]},
                {"name": "test_input_required_result_prompt",
                 "description": "Asks the client what context to use (MRTR), answered by the demo worker",
                 "agent": "mcp.demo"},
                {"name": "test_prompt_with_image", "description": "A prompt with an image",
                 "messages": [
                     {"role": "user", "content": {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}},
                     {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}
                 ]}
            ]
        }),
        None,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_demo_definitions_open_a_bridge() {
        let config = demo_definitions().unwrap();
        assert_eq!(
            (
                config.resources.len(),
                config.resource_templates.len(),
                config.prompts.len()
            ),
            (3, 1, 5)
        );
        let log = agentlog::log::open("memory://").await.unwrap();
        agentlog::mcp::McpBridge::open(log, config).await.unwrap();
    }
}
