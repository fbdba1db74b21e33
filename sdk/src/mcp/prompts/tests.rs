//! Prompts and completions from configuration, in process, in both eras.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::super::resources::tests::rpc_as;
use super::super::tests::modern_meta;
use super::super::{McpBridge, McpConfig};
use crate::agent::Caller;

async fn bridge() -> McpBridge {
    let log = crate::log::open("memory://").await.unwrap();
    let definitions = json!({
        "resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data", "name": "data", "text": "{id}",
             "completions": {"id": ["123", "124", "200"]}}
        ],
        "prompts": [
            {"name": "test_simple_prompt", "description": "A simple prompt",
             "messages": [{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}]},
            {"name": "test_prompt_with_arguments", "title": "With arguments", "description": "Two arguments",
             "arguments": [
                 {"name": "arg1", "description": "First", "required": true, "values": ["paris", "park", "rome"]},
                 {"name": "arg2", "description": "Second"}
             ],
             "messages": [
                 {"role": "user", "content": {"type": "text", "text": "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"}},
                 {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "test://{arg1}", "mimeType": "text/plain", "text": "about {arg1}"}}},
                 {"role": "user", "content": {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}}
             ]}
        ]
    });
    McpBridge::open(log, McpConfig::from_json(definitions, None).unwrap())
        .await
        .unwrap()
}

async fn rpc(mcp: &McpBridge, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    rpc_as(mcp, Caller::anonymous(), body).await
}

#[tokio::test]
async fn prompts_are_listed_in_name_order_per_era() {
    let mcp = bridge().await;
    let (_, legacy) = rpc(&mcp, "prompts/list", json!({})).await;
    assert_eq!(
        legacy["result"],
        json!({"prompts": [
            {"name": "test_prompt_with_arguments", "title": "With arguments", "description": "Two arguments",
             "arguments": [{"name": "arg1", "description": "First", "required": true},
                           {"name": "arg2", "description": "Second"}]},
            {"name": "test_simple_prompt", "description": "A simple prompt"}
        ]})
    );
    let (_, modern) = rpc(&mcp, "prompts/list", json!({"_meta": modern_meta()})).await;
    let result = &modern["result"];
    assert_eq!(
        (
            &result["resultType"],
            &result["cacheScope"],
            &result["ttlMs"]
        ),
        (&json!("complete"), &json!("public"), &json!(60_000))
    );
    let (_, bad) = rpc(&mcp, "prompts/list", json!({"cursor": "zzz"})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let (_, discover) = rpc(&mcp, "server/discover", json!({"_meta": modern_meta()})).await;
    let capabilities = &discover["result"]["capabilities"];
    assert_eq!(
        (&capabilities["prompts"], &capabilities["completions"]),
        (&json!({"listChanged": true}), &json!({}))
    );
}

#[tokio::test]
async fn a_prompt_is_got_with_its_arguments_substituted() {
    let mcp = bridge().await;
    let params = json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "paris", "arg2": "v2"},
                        "_meta": modern_meta()});
    let (status, got) = rpc(&mcp, "prompts/get", params).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(
        got["result"]["messages"],
        json!([
            {"role": "user", "content": {"type": "text", "text": "Prompt with arguments: arg1='paris', arg2='v2'"}},
            {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "test://paris", "mimeType": "text/plain", "text": "about paris"}}},
            {"role": "user", "content": {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}}
        ])
    );
    assert_eq!(got["result"]["description"], "Two arguments");
    assert_eq!(got["result"]["resultType"], "complete");
    // An optional argument left out is empty.
    let (_, optional) = rpc(
        &mcp,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}}),
    )
    .await;
    assert_eq!(
        optional["result"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='x', arg2=''"
    );
    let (_, simple) = rpc(&mcp, "prompts/get", json!({"name": "test_simple_prompt"})).await;
    assert_eq!(simple["result"]["messages"][0]["role"], "user");
    for (params, modern_status) in [
        (json!({"name": "test_prompt_with_arguments"}), 400),
        (
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": 5}}),
            400,
        ),
        (
            json!({"name": "test_prompt_with_arguments", "arguments": "x"}),
            400,
        ),
        (json!({"name": "nope"}), 400),
        (json!({}), 400),
    ] {
        let (status, refused) = rpc(&mcp, "prompts/get", params.clone()).await;
        assert_eq!(
            (status, refused["error"]["code"].as_i64()),
            (200, Some(-32602)),
            "{params}"
        );
        let mut modern = params.clone();
        modern["_meta"] = modern_meta();
        let (status, _) = rpc(&mcp, "prompts/get", modern).await;
        assert_eq!(status, modern_status, "{params}");
    }
}

#[tokio::test]
async fn arguments_and_template_variables_complete_from_their_values() {
    let mcp = bridge().await;
    let complete = |reference: Value, name: &str, value: &str| json!({"ref": reference, "argument": {"name": name, "value": value}});
    let prompt = json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"});
    let (_, got) = rpc(
        &mcp,
        "completion/complete",
        complete(prompt.clone(), "arg1", "pa"),
    )
    .await;
    assert_eq!(
        got["result"],
        json!({"completion": {"values": ["paris", "park"], "total": 2, "hasMore": false}})
    );
    let (_, none) = rpc(&mcp, "completion/complete", complete(prompt, "arg2", "")).await;
    assert_eq!(none["result"]["completion"]["values"], json!([]));
    let template = json!({"type": "ref/resource", "uri": "test://template/{id}/data"});
    let mut params = complete(template, "id", "12");
    params["_meta"] = modern_meta();
    let (_, got) = rpc(&mcp, "completion/complete", params).await;
    assert_eq!(got["result"]["completion"]["values"], json!(["123", "124"]));
    assert_eq!(got["result"]["resultType"], "complete");
    let tasks = json!({"type": "ref/resource", "uri": "agentlog://tasks/{taskId}"});
    let (_, empty) = rpc(&mcp, "completion/complete", complete(tasks, "taskId", "")).await;
    assert_eq!(empty["result"]["completion"]["total"], 0);
    for bad in [
        complete(json!({"type": "ref/prompt", "name": "nope"}), "a", ""),
        complete(json!({"type": "ref/resource", "uri": "x://{y}"}), "y", ""),
        complete(json!({"type": "ref/other"}), "a", ""),
        json!({"ref": {"type": "ref/prompt", "name": "test_simple_prompt"}, "argument": {"name": "a"}}),
    ] {
        let (_, refused) = rpc(&mcp, "completion/complete", bad.clone()).await;
        assert_eq!(refused["error"]["code"], -32602, "{bad}");
    }
}

#[tokio::test]
async fn without_prompts_or_templates_there_is_nothing_to_complete() {
    let log = crate::log::open("memory://").await.unwrap();
    let mcp = McpBridge::open(log, McpConfig::new(Vec::new()))
        .await
        .unwrap();
    for method in ["prompts/list", "prompts/get", "completion/complete"] {
        let (status, refused) = rpc(&mcp, method, json!({"_meta": modern_meta()})).await;
        assert_eq!(
            (status, refused["error"]["code"].as_i64()),
            (404, Some(-32601)),
            "{method}"
        );
    }
    let (_, discover) = rpc(&mcp, "server/discover", json!({"_meta": modern_meta()})).await;
    let capabilities = discover["result"]["capabilities"].as_object().unwrap();
    assert!(!capabilities.contains_key("prompts") && !capabilities.contains_key("completions"));
}
