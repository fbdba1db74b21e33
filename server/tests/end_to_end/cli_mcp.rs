//! `agentlog serve --demo` serves the demo MCP tools on /mcp beside the A2A endpoint, and
//! `--tools FILE` adds tools, resources and prompts from a file.

use std::io::{Read, Write};
use std::time::Duration;

use crate::support::Server;
use serde_json::{Value, json};

/// POST `body` to `url` (`http://host:port/path`): the status and the body.
fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
    let (status, reply) = post_full(url, headers, body);
    let body = reply
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// POST `body` to `url`: the status and the whole reply, headers included.
fn post_full(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest.split_at(rest.find('/').expect("path"));
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let body = body.to_string();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).expect("write");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read");
    let status = reply[9..12].parse().expect("status");
    (status, reply)
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn modern(extension: bool) -> Value {
    let caps = if extension {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps})
}

#[test]
fn serve_demo_serves_the_demo_tools_over_mcp() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, banner) = Server::start_with("memory://", &[], dir.path());
    assert!(
        banner.contains("MCP at http://127.0.0.1:") && banner.contains("/mcp ("),
        "{banner}"
    );
    let mcp = format!("{}mcp", server.url);
    let (status, body) = post(
        &mcp,
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!(status, 200, "{body}");
    let list = json_of(&body);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for name in [
        "echo",
        "test_simple_text",
        "greet",
        "slow_compute",
        "protocol_error_job",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let (_, body) = post(
        &mcp,
        &[],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "Ada"}}}),
    );
    assert_eq!(
        json_of(&body)["result"]["content"][0]["text"],
        "Hello, Ada!"
    );
    // A modern task on the demo worker, read back until it completes.
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "slow_compute"),
    ];
    let (_, body) = post(
        &mcp,
        &headers,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "slow_compute", "arguments": {"seconds": 0.1}, "_meta": modern(true)}}),
    );
    let created = json_of(&body);
    assert_eq!(created["result"]["resultType"], "task", "{body}");
    let task_id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let headers = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tasks/get"),
            ("Mcp-Name", task_id.as_str()),
        ];
        let (_, body) = post(
            &mcp,
            &headers,
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get",
            "params": {"taskId": task_id, "_meta": modern(true)}}),
        );
        let got = json_of(&body);
        if got["result"]["status"] == "completed" {
            assert_eq!(
                got["result"]["result"]["content"][0]["text"],
                "Computed for 0.1 seconds"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{body}");
        std::thread::sleep(Duration::from_millis(50));
    }
    server.stop();
}

#[test]
fn serve_tools_adds_the_tools_of_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools.json");
    std::fs::write(dir.path().join("notes.md"), "# Notes").expect("write");
    std::fs::write(
        &tools,
        r#"{"tools": [{"name": "upper", "description": "Upper-cases", "inputSchema": {"type": "object"}}],
            "resources": [{"uri": "docs://notes", "name": "notes", "mimeType": "text/markdown", "file": "notes.md"}],
            "prompts": [{"name": "ask", "description": "Asks", "arguments": [{"name": "q", "required": true}],
                         "messages": [{"role": "user", "content": {"type": "text", "text": "Q: {q}"}}]}]}"#,
    )
    .expect("write");
    let tools = tools.to_str().expect("path");
    let (server, banner) = Server::spawn(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log",
            "memory://",
            "--tools",
            tools,
        ],
        dir.path(),
    );
    assert!(banner.contains("(1 tools)"), "{banner}");
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("url");
    let (_, body) = post(
        &format!("{url}mcp"),
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let list = json_of(&body);
    assert_eq!(list["result"]["tools"][0]["name"], "upper");
    let mcp = |method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        json_of(&post(&format!("{url}mcp"), &[], &body).1)
    };
    let notes = mcp("resources/read", json!({"uri": "docs://notes"}));
    assert_eq!(notes["result"]["contents"][0]["text"], "# Notes", "{notes}");
    let asked = mcp(
        "prompts/get",
        json!({"name": "ask", "arguments": {"q": "why?"}}),
    );
    assert_eq!(asked["result"]["messages"][0]["content"]["text"], "Q: why?");
    // The A2A agent's tasks are resources too: one nobody answers reads as its status.
    let send = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": true}}});
    let (_, sent) = post(url, &[("A2A-Version", "1.0")], &send);
    let task_id = json_of(&sent)["result"]["task"]["id"]
        .as_str()
        .expect("task id")
        .to_owned();
    let listed = mcp("resources/list", json!({}));
    let task = listed["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| {
            r["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(&format!(":{task_id}")))
        })
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    let read = mcp("resources/read", json!({"uri": task["uri"]}));
    let status: Value = json_of(
        read["result"]["contents"][0]["text"]
            .as_str()
            .expect("text"),
    );
    assert_eq!(status["status"], "working", "{read}");
    server.stop();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"name": "a b", "inputSchema": {"type": "object"}}]"#,
    )
    .expect("write");
    let out = crate::support::fails(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--log",
        "memory://",
        "--tools",
        bad.to_str().expect("path"),
    ]);
    assert!(out.contains("a b"), "{out}");
}

#[test]
fn a_secured_serve_makes_the_mcp_route_an_oauth_resource_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("issuer.key");
    let key = key.to_str().expect("utf-8 path");
    crate::support::ok(&["keygen", "--out", key]);
    let public = format!("{key}.pub");
    let (server, _banner) = Server::start_with(
        "memory://",
        &[
            "--jwt-issuer",
            "https://issuer.example",
            "--jwt-audience",
            "demo",
            "--jwt-key",
            &public,
        ],
        dir.path(),
    );
    let mcp = format!("{}mcp", server.url);
    let metadata_url = format!("{}.well-known/oauth-protected-resource/mcp", server.url);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});

    let (status, reply) = post_full(&mcp, &[], &list);
    assert_eq!(status, 401, "{reply}");
    assert!(
        reply.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{reply}"
    );
    let metadata = crate::support::http_get(&metadata_url);
    let metadata = json_of(metadata.split_once("\r\n\r\n").map_or("", |(_, b)| b));
    assert_eq!(metadata["resource"], mcp.as_str(), "{metadata}");
    assert_eq!(
        metadata["authorization_servers"],
        json!(["https://issuer.example"])
    );

    let token = crate::support::ok(&[
        "token",
        "--key",
        key,
        "--issuer",
        "https://issuer.example",
        "--audience",
        "demo",
        "--subject",
        "alice",
    ]);
    let bearer = format!("Bearer {}", token.trim());
    let (status, body) = post(&mcp, &[("Authorization", &bearer)], &list);
    assert_eq!(status, 200, "{body}");
    assert!(json_of(&body)["result"]["tools"].is_array(), "{body}");
    server.stop();
}

/// Read `stream` until what it sent holds `needle` (bounded by the stream's read timeout).
fn read_until(stream: &mut std::net::TcpStream, seen: &mut String, needle: &str) {
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        let n = stream.read(&mut buf).expect("read");
        assert!(n > 0, "closed before {needle:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

#[test]
fn serve_reloads_the_tools_file_on_sighup_and_tells_a_listening_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tools.json");
    let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
    std::fs::write(&path, json!([tool("upper")]).to_string()).expect("write");
    let (server, banner) = Server::spawn(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log",
            "memory://",
            "--tools",
            path.to_str().expect("path"),
        ],
        dir.path(),
    );
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("url")
        .to_owned();
    // A 2026-07-28 client listening for the tools' list.
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": modern(false)}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("write");
    let mut seen = String::new();
    read_until(
        &mut stream,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    );
    std::fs::write(&path, json!([tool("upper"), tool("lower")]).to_string()).expect("write");
    let pid = server.child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    read_until(&mut stream, &mut seen, "notifications/tools/list_changed");
    let (_, body) = post(
        &format!("{url}mcp"),
        &[],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let names: Vec<Value> = json_of(&body)["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, [json!("lower"), json!("upper")]);
    server.stop();
}
