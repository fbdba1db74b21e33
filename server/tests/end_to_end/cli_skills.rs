//! Skills through `agentlog serve`: a card file's skill with an `inputSchema` and a
//! definitions file's tool that is a skill too are both on the card (the schema itself is
//! not), and a message its skill refuses (an unknown id, data its schema rejects, no data
//! part) is answered -32602 naming the failing path; a tool that is a skill of another agent
//! stops `serve` from starting; the demo's `shout` skill is answered by its own handler.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// A JSON-RPC `SendMessage` of `message` to the A2A endpoint at `url`: the reply.
fn send(url: &str, message: Value) -> Value {
    send_with(url, message, true)
}

/// `send`, blocking (the finished task) unless `at_once`.
fn send_with(url: &str, message: Value, at_once: bool) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": {"message": message, "configuration": {"returnImmediately": at_once}}})
    .to_string();
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let (_, body) = reply.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {reply}"))
}

#[test]
fn serve_lists_the_skills_of_the_card_and_the_definitions_and_checks_their_input() {
    let dir = tempfile::tempdir().unwrap();
    let card = dir.path().join("card.json");
    std::fs::write(
        &card,
        r#"{"name": "Words", "skills": [{"id": "summarize", "name": "Summarize",
            "description": "Summarizes text", "tags": ["text"], "inputModes": ["application/json"],
            "inputSchema": {"type": "object", "required": ["text"]}}]}"#,
    )
    .unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"{"tools": [{"name": "upper", "description": "Upper-cases text",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                            "required": ["text"]},
            "skill": {"tags": ["text"], "examples": ["{\"text\": \"hi\"}"]}}]}"#,
    )
    .unwrap();
    let (mut server, banner) = Server::spawn(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log",
            "memory://",
            "--agent",
            "words",
            "--card",
            card.to_str().unwrap(),
            "--tools",
            tools.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(banner.contains("(1 tools)"), "{banner} {}", server.stderr());
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();

    let served = http_get(&format!("{url}.well-known/agent-card.json"));
    let (_, body) = served.split_once("\r\n\r\n").unwrap();
    let card: Value = serde_json::from_str(body).unwrap();
    let skills = card["skills"].as_array().unwrap();
    let ids: Vec<&str> = skills.iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, ["summarize", "upper"]);
    assert_eq!(skills[1]["inputModes"], json!(["application/json"]));
    assert_eq!(
        skills[1]["outputModes"],
        json!(["text/plain", "application/json"])
    );
    assert_eq!(skills[1]["tags"], json!(["text"]));
    assert!(
        !body.contains("inputSchema"),
        "schemas are not on the card: {body}"
    );

    let bad = send(
        &url,
        json!({"messageId": "m-1", "role": "ROLE_USER", "metadata": {"agentlog.skill": "upper"},
               "parts": [{"data": {"text": 1}}]}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]
            .to_string()
            .contains("message.parts[0].data/text"),
        "{bad}"
    );
    let no_data = send(
        &url,
        json!({"messageId": "m-2", "role": "ROLE_USER", "metadata": {"skillId": "summarize"},
               "parts": [{"text": "a long text"}]}),
    );
    assert_eq!(no_data["error"]["code"], -32602, "{no_data}");
    let unknown = send(
        &url,
        json!({"messageId": "m-3", "role": "ROLE_USER", "metadata": {"agentlog.skill": "nope"},
               "parts": [{"text": "x"}]}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("summarize, upper"),
        "{unknown}"
    );
    // A good one is on the log, waiting for the agent's workers.
    let good = send(
        &url,
        json!({"messageId": "m-4", "role": "ROLE_USER", "metadata": {"agentlog.skill": "upper"},
               "parts": [{"data": {"text": "hi"}}]}),
    );
    assert_eq!(
        good["result"]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{good}"
    );
    server.stop();
}

#[test]
fn a_tool_that_is_a_skill_of_another_agent_stops_serve() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"name": "upper", "inputSchema": {"type": "object"}, "agent": "mcp.upper", "skill": true}]"#,
    )
    .unwrap();
    let error = fails(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--log",
        "memory://",
        "--agent",
        "words",
        "--tools",
        tools.to_str().unwrap(),
    ]);
    assert!(error.contains("bad --tools"), "{error}");
    assert!(error.contains("\"agent\""), "{error}");
}

#[test]
fn the_demo_answers_its_shout_skill_and_echoes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = Server::start_with("memory://", &[], dir.path());
    let url = server.url.clone();
    let served = http_get(&format!("{url}.well-known/agent-card.json"));
    let (_, body) = served.split_once("\r\n\r\n").unwrap();
    let card: Value = serde_json::from_str(body).unwrap();
    let ids: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["echo", "shout"]);
    let shouted = send_with(
        &url,
        json!({"messageId": "d-1", "role": "ROLE_USER", "metadata": {"agentlog.skill": "shout"},
               "parts": [{"data": {"text": "hello"}}]}),
        false,
    );
    let task = &shouted["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{shouted}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "HELLO",
        "{shouted}"
    );
    let refused = send(
        &url,
        json!({"messageId": "d-2", "role": "ROLE_USER", "metadata": {"agentlog.skill": "shout"},
               "parts": [{"data": {"text": ""}}]}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let echoed = send_with(
        &url,
        json!({"messageId": "d-3", "role": "ROLE_USER", "parts": [{"text": "hi"}]}),
        false,
    );
    assert_eq!(
        echoed["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{echoed}"
    );
    server.stop();
}
