//! `/mcp` (Streamable HTTP; MCP 2025-11-25 and 2026-07-28): the transport's refusals with
//! their statuses, the envelope (a parse error is 400 in both eras), and each era's codes: in
//! the `initialize` era JSON-RPC errors travel with 200; in the 2026-07-28 era invalid params
//! and header mismatches are 400, an unknown method 404 (mcp-notes.md).

use crate::adversarial::cases::Case;
use crate::adversarial::client::{post, raw};

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn mcp(body: &str, headers: &[&str]) -> Vec<u8> {
    let mut all = vec!["Accept: application/json, text/event-stream"];
    all.extend_from_slice(headers);
    post("/mcp", body.as_bytes(), &all)
}

fn legacy(name: &str, body: &str, status: u16, code: Option<i64>) -> Case {
    Case::new(name, mcp(body, &[]), status, code)
}

/// A 2026-07-28 request: the body's `_meta` and the headers that mirror it.
fn modern(
    name: &str,
    method: &str,
    tool: Option<&str>,
    params: &str,
    status: u16,
    code: Option<i64>,
) -> Case {
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{META}{params}}}}}"#);
    let method_header = format!("Mcp-Method: {method}");
    let mut headers = vec!["MCP-Protocol-Version: 2026-07-28", method_header.as_str()];
    let name_header = tool.map(|t| format!("Mcp-Name: {t}"));
    if let Some(h) = &name_header {
        headers.push(h);
    }
    Case::new(name, mcp(&body, &headers), status, code)
}

pub fn cases() -> Vec<Case> {
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let mut cases = vec![
        // The transport.
        Case::new("GET", raw("GET /mcp HTTP/1.1\nHost: 127.0.0.1\nAccept: text/event-stream\n\n", b""), 405, Some(405))
            .header("allow", "POST"),
        Case::new("DELETE", raw("DELETE /mcp HTTP/1.1\nHost: 127.0.0.1\n\n", b""), 405, Some(405)),
        Case::new("text/plain", post("/mcp", list.as_bytes(), &["Content-Type: text/plain", "Accept: application/json"]), 415, Some(-32600)),
        Case::new("Accept of HTML only", post("/mcp", list.as_bytes(), &["Accept: text/html"]), 406, Some(-32600)),
        Case::new("Accept of a stream only", post("/mcp", list.as_bytes(), &["Accept: text/event-stream"]), 406, Some(-32600)),
        Case::new("no Accept", post("/mcp", list.as_bytes(), &[]), 200, Some(0)),
        Case::new("a foreign Host", mcp(list, &["Host: evil.example"]), 403, Some(-32600)),
        Case::new("two Host headers", mcp(list, &["Host: 127.0.0.1", "Host: evil.example"]), 400, Some(-32600)),
        Case::new("a foreign Origin", mcp(list, &["Origin: https://evil.example"]), 403, Some(-32600)),
        Case::new("a loopback Origin", mcp(list, &["Origin: http://localhost:6274"]), 200, Some(0))
            .header("access-control-allow-origin", "http://localhost:6274"),
        Case::new("MCP-Protocol-Version not ASCII", mcp(list, &["MCP-Protocol-Version: 2025-11-25\u{e9}"]), 400, Some(-32600))
            .says(&["MCP-Protocol-Version"]),
        Case::new("Mcp-Method not ASCII", mcp(list, &["Mcp-Method: tools/list\u{e9}"]), 400, Some(-32600)),
        Case::new("a body past the limit", mcp(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"x":"{}"}}}}"#, "x".repeat(1 << 20)), &[]), 413, Some(-32600)),
        // The envelope: 400 in both eras.
        legacy("not JSON", "{", 400, Some(-32700)),
        legacy("empty", "", 400, Some(-32700)),
        legacy("a batch", &format!("[{list}]"), 400, Some(-32600)),
        legacy("no jsonrpc", r#"{"id":1,"method":"tools/list"}"#, 400, Some(-32600)),
        legacy("method a number", r#"{"jsonrpc":"2.0","id":1,"method":7}"#, 400, Some(-32600)),
        legacy("id an object", r#"{"jsonrpc":"2.0","id":{},"method":"tools/list"}"#, 400, Some(-32600)),
        legacy("params a string", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}"#, 400, Some(-32600)),
        legacy("params null", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}"#, 400, Some(-32600)),
        // The initialize era.
        legacy("tools/list", list, 200, Some(0)),
        legacy("tools/list with slashes escaped", r#"{"jsonrpc":"2.0","id":1,"method":"tools\/list"}"#, 200, Some(0)),
        legacy("tools/list all escaped", r#"{"jsonrpc":"2.0","id":1,"method":"\u0074ools\u002flist"}"#, 200, Some(0)),
        legacy("ping", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, 200, Some(0)),
        legacy("an unknown method", r#"{"jsonrpc":"2.0","id":1,"method":"tools/destroy"}"#, 200, Some(-32601)),
        legacy("params an array", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}"#, 200, Some(-32602)),
        legacy("tools/call of no tool", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"adv-none","arguments":{}}}"#, 200, Some(-32602)),
        legacy("tools/call without a name", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#, 200, Some(-32602)),
        legacy("tools/call with a numeric name", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#, 200, Some(-32602)),
        legacy("tools/call arguments an array", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":["Ada"]}}"#, 200, Some(-32602)),
        // MCP 2025-11-25: arguments that fail the input schema are a tool execution error
        // (`isError`), so the model can correct them, not a protocol error.
        legacy("tools/call arguments against the schema", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":5}}}"#, 200, Some(0))
            .says(&["Invalid arguments"]),
        legacy("tools/list with a cursor not ours", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"nope"}}"#, 200, Some(-32602)),
        legacy("tasks/get of no task", r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"adv-none"}}"#, 200, Some(-32602)),
        legacy("tasks/get without a taskId", r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}"#, 200, Some(-32602)),
        legacy("logging/setLevel to a level that is none", r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}"#, 200, Some(-32602)),
        legacy("a notification", r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, 202, None),
        // The 2026-07-28 era.
        modern("server/discover", "server/discover", None, "", 200, Some(0)),
        modern("tools/list", "tools/list", None, "", 200, Some(0)),
        modern("an unknown method", "tools/destroy", None, "", 404, Some(-32601)),
        modern("tools/call of no tool", "tools/call", Some("adv-none"), r#","name":"adv-none""#, 400, Some(-32602)),
        modern("tools/call whose Mcp-Name differs", "tools/call", Some("echo"), r#","name":"greet","arguments":{"name":"Ada"}"#, 400, Some(-32020)),
        Case::new(
            "a body version unlike its header",
            mcp(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#), &["MCP-Protocol-Version: 2025-11-25", "Mcp-Method: tools/list"]),
            400,
            Some(-32020),
        ),
        Case::new(
            "Mcp-Method unlike the body",
            mcp(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#), &["MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call"]),
            400,
            Some(-32020),
        ),
        Case::new(
            "_meta an array",
            mcp(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[]}}"#, &["MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list"]),
            400,
            Some(-32602),
        ),
    ];
    // Every method of both eras, with params that are an array: -32602 (MCP params are
    // objects), 400 in the modern era and 200 in the legacy one.
    for method in [
        "tools/list",
        "tools/call",
        "tasks/get",
        "tasks/list",
        "tasks/cancel",
        "tasks/result",
        "logging/setLevel",
        "initialize",
    ] {
        cases.push(legacy(
            &format!("{method}, params an array"),
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":[{{"name":"greet"}}]}}"#
            ),
            200,
            Some(-32602),
        ));
    }
    cases
}
