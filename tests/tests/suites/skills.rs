//! Skills: one agent, many handlers. A message goes to the handler of the skill it names
//! (metadata `agentlog.skill`, or lc_a2a's `skillId`), a task keeps its skill through its
//! follow-ups, a message naming none goes to the default handler; a message refused by its
//! skill (an unknown id, a data part its schema rejects) is answered -32602 naming the
//! failing path with nothing written; and one definition is a tool and a skill, answered
//! over MCP and A2A by one handler: in process, and by `agentlog serve --tools` with an
//! `agentlog worker --tool` over Apache Iggy (SKIPPED without an `iggy-server`).

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentlog::agent::AgentTopics;
use agentlog::bridge::{RpcReply, RpcRequest, card_from_json, skill_schemas_from_json};
use agentlog::log::Log;
use agentlog::mcp::{McpBridge, McpConfig, tool_skills};
use agentlog::worker::{
    Skills, TaskContext, ToolCall, Tools, Worker, WorkerConfig, handler_fn, tool_fn,
};
use agentlog::{Bridge, BridgeConfig, Caller, ErrorKind};
use agentlog_integration::iggy_server::IggyServer;
use agentlog_integration::mcp_rpc::rpc_as;
use agentlog_wire::TaskState;
use agentlog_wire::a2a::{PartContent, SendMessageRequest, SendMessageResponse, Task};
use agentlog_wire::mcp::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::child::agentlog;

const AGENT: &str = "skills.agent";

/// A card with two skills (`translate` with an input schema, `count` without) as card JSON
/// gives them.
fn card_json() -> Value {
    json!({"name": "Skilled", "skills": [
        {"id": "translate", "name": "Translate", "description": "To French", "tags": ["fr"],
         "inputModes": ["application/json"],
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"], "additionalProperties": false}},
        {"id": "count", "name": "Count", "description": "Counts words", "tags": ["count"]}]})
}

async fn bridge(log: &Log) -> Bridge {
    let fields = card_json();
    let config = BridgeConfig::new(AGENT)
        .card(card_from_json(AGENT, &fields).expect("card"))
        .skill_schemas(skill_schemas_from_json(&fields).expect("schemas"));
    Bridge::open(log.clone(), config).await.expect("bridge")
}

/// The handler of skill `name`: completes with `<name>: <what it got>`.
fn answering(name: &'static str) -> impl agentlog::worker::Handler {
    handler_fn(move |task: TaskContext| async move {
        let got = match task.message().parts.iter().find_map(|p| match &p.content {
            PartContent::Data(data) => Some(data.to_string()),
            _ => None,
        }) {
            Some(data) => data,
            None => task.text(),
        };
        if got == "more" {
            task.input_required("and?").await?;
            return Ok(());
        }
        let skill = task.skill().unwrap_or("-").to_owned();
        task.complete(Some(&format!("{name}: {got} ({skill})")))
            .await?;
        Ok(())
    })
}

async fn worker(log: &Log, bridge: &Bridge) -> Worker {
    let config = WorkerConfig::new(AGENT)
        .view(bridge.view().clone())
        .lease(Duration::from_secs(10));
    let skills = Skills::new()
        .skill("translate", answering("translate"))
        .skill("count", answering("count"))
        .default_handler(answering("default"));
    Worker::start(log.clone(), config, skills)
        .await
        .expect("worker")
}

fn request(message: Value) -> SendMessageRequest {
    serde_json::from_value(json!({"message": message})).expect("request")
}

async fn send(bridge: &Bridge, message: Value) -> agentlog::Result<Task> {
    match bridge
        .send_message(&Caller::principal("alice"), request(message))
        .await?
    {
        SendMessageResponse::Task(task) => Ok(task),
        other => panic!("not a task: {other:?}"),
    }
}

/// The text of a finished task's status message.
fn said(task: &Task) -> String {
    let message = task.status.message.as_ref().expect("a status message");
    message
        .parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect::<Vec<_>>()
        .join("")
}

/// Records on the agent's topics (events and commands).
async fn written(log: &Log) -> u64 {
    let topics = AgentTopics::of(AGENT);
    let mut total = 0;
    for topic in [&topics.events, &topics.commands] {
        total += log
            .end_offsets(topic)
            .await
            .expect("ends")
            .iter()
            .sum::<u64>();
    }
    total
}

#[tokio::test]
async fn each_message_runs_the_handler_of_its_skill() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let bridge = bridge(&log).await;
    let _worker = worker(&log, &bridge).await;

    let by_metadata = send(
        &bridge,
        json!({"messageId": "m-1", "role": "ROLE_USER",
               "metadata": {"agentlog.skill": "translate"},
               "parts": [{"data": {"text": "hello"}, "mediaType": "application/json"}]}),
    )
    .await
    .expect("translate");
    assert_eq!(by_metadata.status.state, TaskState::Completed);
    assert_eq!(
        said(&by_metadata),
        r#"translate: {"text":"hello"} (translate)"#
    );

    let by_skill_id = send(
        &bridge,
        json!({"messageId": "m-2", "role": "ROLE_USER", "metadata": {"skillId": "count"},
               "parts": [{"text": "one two"}]}),
    )
    .await
    .expect("count");
    assert_eq!(said(&by_skill_id), "count: one two (count)");

    let by_default = send(
        &bridge,
        json!({"messageId": "m-3", "role": "ROLE_USER", "parts": [{"text": "plain"}]}),
    )
    .await
    .expect("default");
    assert_eq!(said(&by_default), "default: plain (-)");

    // A follow-up names no skill: the task keeps its first message's.
    let asking = send(
        &bridge,
        json!({"messageId": "m-4", "role": "ROLE_USER", "metadata": {"skillId": "count"},
               "parts": [{"text": "more"}]}),
    )
    .await
    .expect("ask");
    assert_eq!(asking.status.state, TaskState::InputRequired);
    let answered = send(
        &bridge,
        json!({"messageId": "m-5", "role": "ROLE_USER", "taskId": asking.id,
               "parts": [{"text": "three"}]}),
    )
    .await
    .expect("follow-up");
    assert_eq!(said(&answered), "count: three (count)");
}

#[tokio::test]
async fn a_message_its_skill_refuses_is_answered_32602_naming_the_path_with_nothing_written() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let bridge = bridge(&log).await;
    let before = written(&log).await;

    let refused = |message: Value| {
        let bridge = bridge.clone();
        async move {
            send(&bridge, message)
                .await
                .expect_err("refused by the bridge")
        }
    };
    let field = |error: &agentlog::Error| {
        error
            .details()
            .iter()
            .find(|(key, _)| *key == "field")
            .map(|(_, value)| value.clone())
            .expect("a field")
    };
    let bad = refused(json!({"messageId": "b-1", "role": "ROLE_USER",
        "metadata": {"agentlog.skill": "translate"},
        "parts": [{"text": "note"}, {"data": {"text": 5, "extra": true}}]}))
    .await;
    assert_eq!(bad.kind(), ErrorKind::InvalidParams);
    // The field names the first failing path; the message every problem.
    assert_eq!(field(&bad), "message.parts[1].data/text");
    assert!(bad.message().contains("/text: 5 is not of type"), "{bad}");
    assert!(bad.message().contains("extra"), "{bad}");
    let wrong_type = refused(json!({"messageId": "b-2", "role": "ROLE_USER",
        "metadata": {"agentlog.skill": "translate"}, "parts": [{"data": {"text": 5}}]}))
    .await;
    assert_eq!(field(&wrong_type), "message.parts[0].data/text");
    let no_data = refused(json!({"messageId": "b-3", "role": "ROLE_USER",
        "metadata": {"agentlog.skill": "translate"}, "parts": [{"text": "hello"}]}))
    .await;
    assert_eq!(field(&no_data), "message.parts");
    let unknown = refused(json!({"messageId": "b-4", "role": "ROLE_USER",
        "metadata": {"skillId": "summarize"}, "parts": [{"text": "x"}]}))
    .await;
    assert_eq!(unknown.kind(), ErrorKind::InvalidParams);
    assert_eq!(field(&unknown), "message.metadata.skillId");
    assert!(unknown.message().contains("translate, count"), "{unknown}");

    // The same over JSON-RPC: -32602 with the path in the error's metadata.
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {
        "messageId": "b-5", "role": "ROLE_USER", "metadata": {"agentlog.skill": "translate"},
        "parts": [{"data": {"text": ["x"]}}]}}})
    .to_string();
    let RpcReply::Json(reply) = bridge
        .handle(RpcRequest::new(body.as_bytes(), Caller::principal("alice")))
        .await
    else {
        panic!("not JSON");
    };
    let reply: Value = serde_json::from_slice(&reply).expect("json");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let data = reply["error"]["data"].to_string();
    assert!(data.contains("message.parts[0].data/text"), "{reply}");

    assert_eq!(written(&log).await, before, "nothing is on the log");
}

#[tokio::test]
async fn a_schema_for_a_skill_the_card_does_not_list_is_refused_at_open() {
    let log = agentlog::log::open("memory://").await.expect("log");
    let config = BridgeConfig::new(AGENT).skill_schemas(
        [("ghost".to_owned(), json!({"type": "object"}))]
            .into_iter()
            .collect(),
    );
    let error = Bridge::open(log, config).await.expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.message().contains("ghost"), "{error}");
}

#[tokio::test]
async fn one_definition_is_a_tool_and_a_skill_answered_by_one_handler() {
    const SHARED: &str = "skills.shared";
    let log = agentlog::log::open("memory://").await.expect("log");
    let mut definitions = McpConfig::from_json(
        json!({"tools": [{"name": "upper", "description": "Upper-cases text",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                            "required": ["text"]},
            "skill": true}]}),
        None,
    )
    .expect("definitions");
    // What `serve --tools` does: the tool's skill joins the card, its schema the bridge's.
    let skills = tool_skills(&mut definitions, SHARED).expect("skills");
    let mut card = card_from_json(SHARED, &json!({"name": "Shared"})).expect("card");
    card.skills = skills.iter().map(|(skill, _)| skill.clone()).collect();
    let schemas = skills
        .into_iter()
        .map(|(skill, schema)| (skill.id, schema))
        .collect();
    let bridge = Bridge::open(
        log.clone(),
        BridgeConfig::new(SHARED).card(card).skill_schemas(schemas),
    )
    .await
    .expect("bridge");
    let listed = &bridge.agent_card().skills[0];
    assert_eq!(
        (listed.id.as_str(), listed.description.as_str()),
        ("upper", "Upper-cases text")
    );
    assert_eq!(listed.input_modes, ["application/json"]);
    assert_eq!(listed.output_modes, ["text/plain", "application/json"]);
    let mcp = McpBridge::open(log.clone(), definitions)
        .await
        .expect("mcp");

    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let upper = tool_fn(move |call: ToolCall| {
        let calls = counted.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            let text = call.arguments["text"]
                .as_str()
                .unwrap_or_default()
                .to_uppercase();
            Ok(CallToolResult {
                content: vec![ContentBlock::text(text.clone())],
                structured_content: Some(json!({"upper": text})),
                ..CallToolResult::default()
            })
        }
    });
    let config = WorkerConfig::new(SHARED)
        .view(bridge.view().clone())
        .lease(Duration::from_secs(10));
    let _worker = Worker::start(
        log.clone(),
        config,
        Skills::new().tools(Tools::new().tool("upper", upper)),
    )
    .await
    .expect("worker");

    let alice = Caller::principal("alice");
    let (status, body) = rpc_as(
        &mcp,
        &alice,
        "tools/call",
        json!({"name": "upper", "arguments": {"text": "over mcp"}}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "OVER MCP", "{body}");

    let task = send(
        &bridge,
        json!({"messageId": "s-1", "role": "ROLE_USER", "metadata": {"agentlog.skill": "upper"},
               "parts": [{"data": {"text": "over a2a"}}]}),
    )
    .await
    .expect("a2a");
    assert_eq!(task.status.state, TaskState::Completed);
    let artifact = &task.artifacts[0];
    assert_eq!(artifact.artifact_id, "upper");
    assert_eq!(artifact.parts[0].as_text(), Some("OVER A2A"));
    assert_eq!(
        artifact.parts[1].content,
        PartContent::Data(json!({"upper": "OVER A2A"}))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one handler answered both");

    // The tool's schema holds on both sides: a tool error over MCP, -32602 over A2A.
    let (_, body) = rpc_as(
        &mcp,
        &alice,
        "tools/call",
        json!({"name": "upper", "arguments": {"text": 1}}),
        None,
    )
    .await;
    assert_eq!(body["result"]["isError"], true, "{body}");
    let refused = send(
        &bridge,
        json!({"messageId": "s-2", "role": "ROLE_USER", "metadata": {"agentlog.skill": "upper"},
               "parts": [{"data": {"text": 1}}]}),
    )
    .await
    .expect_err("refused");
    assert_eq!(refused.kind(), ErrorKind::InvalidParams);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// POST the JSON `body` to `url` (`http://host:port/path`): the reply's JSON body.
fn post(url: &str, headers: &str, body: &Value) -> Value {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest.split_at(rest.find('/').expect("path"));
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let body = body.to_string();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read");
    let (_, body) = reply.split_once("\r\n\r\n").expect("a body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {reply}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_tools_and_a_tool_worker_answer_one_definition_over_mcp_and_a2a() {
    let Some(iggy) = IggyServer::start().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"{"tools": [{"name": "upper", "description": "Upper-cases", "skill": true,
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                            "required": ["text"]}}]}"#,
    )
    .expect("write");
    let log = iggy.url();
    let tools = tools.display().to_string();
    let (_serving, line) = agentlog(&[
        "serve",
        "--agent",
        "words",
        "--listen",
        "127.0.0.1:0",
        "--log",
        &log,
        "--tools",
        &tools,
    ]);
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    // One worker process, one command: the tool's MCP calls and its skill's A2A tasks.
    let (_working, line) = agentlog(&[
        "worker",
        "--log",
        &log,
        "--agent",
        "words",
        "--tool",
        "upper",
        "--exec",
        "tr a-z A-Z",
    ]);
    assert!(
        line.starts_with("agentlog worker for agent \"words\""),
        "{line}"
    );

    let called = post(
        &format!("{url}mcp"),
        "",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "upper", "arguments": {"text": "over mcp"}}}),
    );
    assert_eq!(
        called["result"]["content"][0]["text"], r#"{"TEXT":"OVER MCP"}"#,
        "{called}"
    );
    let sent = post(
        &url,
        "A2A-Version: 1.0\r\n",
        &json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
            "messageId": "cli-1", "role": "ROLE_USER", "metadata": {"agentlog.skill": "upper"},
            "parts": [{"data": {"text": "over a2a"}}]}}}),
    );
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["artifacts"][0]["artifactId"], "upper", "{sent}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], r#"{"TEXT":"OVER A2A"}"#,
        "{sent}"
    );
}
