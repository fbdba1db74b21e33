//! The JSON-RPC envelope (JSON-RPC 2.0 §4, §5.1; A2A §9): what is not JSON is -32700, what is
//! JSON but no request object is -32600, an unknown method -32601; all in an HTTP 200 (A2A
//! §9: JSON-RPC errors travel with 200, as the official SDKs send them).

use crate::adversarial::cases::{Case, method_case, rpc_case};
use crate::adversarial::client::post;

/// Every A2A method name, 1.0 and 0.3, with params that reach the method and answer without
/// writing: the error each gets for an unknown task (or the method's own answer; `serve`
/// serves push notifications by default, so the push-config methods look the task up too).
pub const METHODS: &[(&str, &str, i64)] = &[
    ("GetTask", r#"{"id":"no-such-task"}"#, -32001),
    ("CancelTask", r#"{"id":"no-such-task"}"#, -32001),
    ("SubscribeToTask", r#"{"id":"no-such-task"}"#, -32001),
    ("ListTasks", r#"{"pageSize":1}"#, 0),
    (
        "CreateTaskPushNotificationConfig",
        r#"{"taskId":"no-such-task","url":"https://example.com/hook"}"#,
        -32001,
    ),
    (
        "GetTaskPushNotificationConfig",
        r#"{"taskId":"no-such-task","id":"c"}"#,
        -32001,
    ),
    (
        "ListTaskPushNotificationConfigs",
        r#"{"taskId":"no-such-task"}"#,
        -32001,
    ),
    (
        "DeleteTaskPushNotificationConfig",
        r#"{"taskId":"no-such-task","id":"c"}"#,
        -32001,
    ),
    // No extended card declared: -32004, as the official Python server answers (-32007 is
    // for a card that declares one and has none configured).
    ("GetExtendedAgentCard", "{}", -32004),
    ("tasks/get", r#"{"id":"no-such-task"}"#, -32001),
    ("tasks/cancel", r#"{"id":"no-such-task"}"#, -32001),
    ("tasks/resubscribe", r#"{"id":"no-such-task"}"#, -32001),
    (
        "tasks/pushNotificationConfig/set",
        r#"{"taskId":"no-such-task","pushNotificationConfig":{"url":"https://example.com/hook"}}"#,
        -32001,
    ),
    (
        "tasks/pushNotificationConfig/get",
        r#"{"id":"no-such-task"}"#,
        -32001,
    ),
    (
        "tasks/pushNotificationConfig/list",
        r#"{"id":"no-such-task"}"#,
        -32001,
    ),
    (
        "tasks/pushNotificationConfig/delete",
        r#"{"id":"no-such-task","pushNotificationConfigId":"c"}"#,
        -32001,
    ),
    ("agent/getAuthenticatedExtendedCard", "{}", -32004),
];

/// `name` with every character written as a `\uXXXX` escape.
fn all_escaped(name: &str) -> String {
    name.chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect()
}

pub fn cases() -> Vec<Case> {
    let mut cases = vec![
        // -32700: not JSON.
        rpc_case("empty body", "", -32700),
        rpc_case("whitespace only", "  \n\t ", -32700),
        rpc_case("lone brace", "{", -32700),
        rpc_case("plain text", "hello", -32700),
        rpc_case("trailing comma", r#"{"jsonrpc":"2.0","id":1,}"#, -32700),
        rpc_case("single quotes", "{'jsonrpc':'2.0'}", -32700),
        rpc_case(
            "trailing garbage",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask"} x"#,
            -32700,
        ),
        rpc_case("NaN literal", r#"{"jsonrpc":"2.0","id":NaN}"#, -32700),
        rpc_case(
            "Infinity literal",
            r#"{"jsonrpc":"2.0","id":Infinity}"#,
            -32700,
        ),
        rpc_case(
            "comment",
            r#"{"jsonrpc":"2.0" /* c */,"id":1,"method":"GetTask"}"#,
            -32700,
        ),
        rpc_case(
            "not UTF-8",
            &b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}"[..],
            -32700,
        ),
        // Grammatical JSON (RFC 8259 §8.2 leaves lone surrogates to the reader): served, the
        // id echoed as sent.
        rpc_case(
            "a lone surrogate escape in the id",
            r#"{"jsonrpc":"2.0","id":"\ud800","method":"GetTask","params":{"id":"x"}}"#,
            -32001,
        ),
        rpc_case(
            "bad escape",
            r#"{"jsonrpc":"2.0","id":"\q","method":"GetTask"}"#,
            -32700,
        ),
        rpc_case(
            "control character in a string",
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\u{1}b\",\"method\":\"GetTask\"}",
            -32700,
        ),
        rpc_case("unclosed batch", "[1,2", -32700),
        // RFC 8259 §8.1: a parser MAY ignore a BOM; serde_json does not, and neither do we
        // (no JSON-RPC client sends one).
        rpc_case(
            "byte order mark",
            &b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\"}"[..],
            -32700,
        ),
        // Deep nesting is read without recursion (serde_json skips values iteratively): no
        // stack to overflow, whatever the depth within the body limit.
        rpc_case(
            "arrays nested 100,000 deep",
            format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)),
            -32600,
        ),
        rpc_case(
            "an unknown member nested 100,000 deep",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{{"id":"x","m":{}1{}}}}}"#,
                r#"{"a":"#.repeat(100_000),
                "}".repeat(100_000)
            ),
            -32001,
        ),
        rpc_case(
            "bad JSON in a skipped member",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","x":[1,}"#,
            -32700,
        ),
        // -32600: JSON, no request object.
        rpc_case("empty batch", "[]", -32600),
        rpc_case(
            "batch of one",
            format!(
                "[{}]",
                String::from_utf8_lossy(&crate::adversarial::client::rpc("GetTask", "{}"))
            ),
            -32600,
        ),
        rpc_case("string", r#""GetTask""#, -32600),
        rpc_case("number", "42", -32600),
        rpc_case("null", "null", -32600),
        rpc_case("boolean", "true", -32600),
        rpc_case("empty object", "{}", -32600).says(&["jsonrpc"]),
        rpc_case(
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{}}"#,
            -32600,
        ),
        rpc_case(
            "jsonrpc 2",
            r#"{"jsonrpc":"2","id":1,"method":"GetTask","params":{}}"#,
            -32600,
        ),
        rpc_case(
            "jsonrpc as number",
            r#"{"jsonrpc":2.0,"id":1,"method":"GetTask","params":{}}"#,
            -32600,
        ),
        rpc_case(
            "jsonrpc null",
            r#"{"jsonrpc":null,"id":1,"method":"GetTask","params":{}}"#,
            -32600,
        ),
        rpc_case("missing method", r#"{"jsonrpc":"2.0","id":1}"#, -32600).says(&["method"]),
        rpc_case(
            "method a number",
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            -32600,
        ),
        rpc_case(
            "method null",
            r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
            -32600,
        ),
        rpc_case(
            "method an array",
            r#"{"jsonrpc":"2.0","id":1,"method":["GetTask"]}"#,
            -32600,
        ),
        rpc_case(
            "method an object",
            r#"{"jsonrpc":"2.0","id":1,"method":{"name":"GetTask"}}"#,
            -32600,
        ),
        rpc_case(
            "id an object",
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask","params":{}}"#,
            -32600,
        ),
        rpc_case(
            "id an array",
            r#"{"jsonrpc":"2.0","id":[1],"method":"GetTask","params":{}}"#,
            -32600,
        ),
        rpc_case(
            "id true",
            r#"{"jsonrpc":"2.0","id":true,"method":"GetTask","params":{}}"#,
            -32600,
        ),
        rpc_case(
            "duplicate id",
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask"}"#,
            -32600,
        ),
        rpc_case(
            "duplicate method",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"ListTasks"}"#,
            -32600,
        ),
        rpc_case(
            "params a string",
            crate::adversarial::client::rpc("GetTask", r#""x""#),
            -32600,
        )
        .says(&["params"]),
        rpc_case(
            "params a number",
            crate::adversarial::client::rpc("GetTask", "3"),
            -32600,
        ),
        rpc_case(
            "params true",
            crate::adversarial::client::rpc("GetTask", "true"),
            -32600,
        ),
        rpc_case(
            "params null",
            crate::adversarial::client::rpc("GetTask", "null"),
            -32600,
        ),
        // -32601: names no method.
        method_case("camelCase 0.3-style name", "sendMessage", "{}", -32601).says(&["sendMessage"]),
        method_case("0.3 name that never existed", "tasks/list", "{}", -32601),
        method_case("empty method", "", "{}", -32601),
        method_case("near miss", "message/sendx", "{}", -32601),
        method_case("case differs", "gettask", "{}", -32601),
        method_case("trailing space", "GetTask ", "{}", -32601),
        method_case("escaped unknown name", "tasks\\/list", "{}", -32601).says(&["tasks/list"]),
        method_case("rpc. reserved prefix", "rpc.discover", "{}", -32601),
        method_case("MCP method on the A2A endpoint", "tools/list", "{}", -32601),
        method_case("non-ASCII name", "GetTäsk", "{}", -32601),
        // Ids of every JSON-RPC type are served, and echoed byte for byte.
        rpc_case(
            "id a long string",
            format!(
                r#"{{"jsonrpc":"2.0","id":"{}","method":"GetTask","params":{{"id":"x"}}}}"#,
                "i".repeat(10_000)
            ),
            -32001,
        ),
        rpc_case(
            "id null",
            r#"{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"x"}}"#,
            -32001,
        ),
        rpc_case(
            "id a huge number",
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"GetTask","params":{"id":"x"}}"#,
            -32001,
        ),
        rpc_case(
            "id a fraction",
            r#"{"jsonrpc":"2.0","id":1.5e3,"method":"GetTask","params":{"id":"x"}}"#,
            -32001,
        ),
        rpc_case(
            "no id (a notification)",
            r#"{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}"#,
            -32001,
        ),
        rpc_case(
            "unknown members are ignored",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"},"extra":{"a":[1]}}"#,
            -32001,
        ),
        // Version headers (A2A §3.6): Major.Minor of a served version, else -32009.
        Case::new(
            "A2A-Version 2.0",
            post(
                "/",
                &crate::adversarial::client::rpc("GetTask", r#"{"id":"x"}"#),
                &["A2A-Version: 2.0"],
            ),
            200,
            Some(-32009),
        ),
        Case::new(
            "A2A-Version junk",
            post(
                "/",
                &crate::adversarial::client::rpc("GetTask", r#"{"id":"x"}"#),
                &["A2A-Version: banana"],
            ),
            200,
            Some(-32009),
        ),
        Case::new(
            "A2A-Version 1.0.7",
            post(
                "/",
                &crate::adversarial::client::rpc("GetTask", r#"{"id":"x"}"#),
                &["A2A-Version: 1.0.7"],
            ),
            200,
            Some(-32001),
        ),
        Case::new(
            "A2A-Version 0.3 with a 1.0 name",
            post(
                "/",
                &crate::adversarial::client::rpc("GetTask", r#"{"id":"x"}"#),
                &["A2A-Version: 0.3"],
            ),
            200,
            Some(-32001),
        ),
        Case::new(
            "A2A-Version non-UTF-8",
            {
                let mut r = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nA2A-Version: 1.\xff\r\n".to_vec();
                let body = crate::adversarial::client::rpc("GetTask", r#"{"id":"x"}"#);
                r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                r.extend_from_slice(&body);
                r
            },
            200,
            Some(-32009),
        ),
    ];
    // Every method, by its plain name, with `/` escaped, and with every character escaped:
    // any valid JSON string names the method (PHP's encoder writes `\/`).
    for (method, params, code) in METHODS {
        cases.push(method_case(
            format!("{method}, plain"),
            method,
            params,
            *code,
        ));
        if method.contains('/') {
            let slashes = method.replace('/', "\\/");
            cases.push(method_case(
                format!("{method}, slashes escaped"),
                &slashes,
                params,
                *code,
            ));
        }
        let escaped = all_escaped(method);
        cases.push(method_case(
            format!("{method}, all escaped"),
            &escaped,
            params,
            *code,
        ));
    }
    cases
}
