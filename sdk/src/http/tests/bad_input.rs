//! Bad input, as a table of cases: each gets the right error, nothing is written, and the
//! server stays up; content types, id types and version headers that are served pass.

use super::*;

/// How a case's request differs from a good one, and what must come back.
struct Case {
    name: &'static str,
    body: Vec<u8>,
    content_type: Option<&'static str>,
    headers: Vec<(&'static str, &'static str)>,
    /// Send the body as a stream of chunks with no `Content-Length`.
    chunked: bool,
    status: StatusCode,
    code: i64,
    /// Substrings of `error.message`.
    says: &'static [&'static str],
}

fn case(name: &'static str, body: impl Into<Vec<u8>>, code: i64) -> Case {
    Case {
        name,
        body: body.into(),
        content_type: Some("application/json"),
        headers: Vec::new(),
        chunked: false,
        status: StatusCode::OK,
        code,
        says: &[],
    }
}

impl Case {
    fn says(mut self, says: &'static [&'static str]) -> Self {
        self.says = says;
        self
    }
    fn content_type(mut self, content_type: Option<&'static str>) -> Self {
        self.content_type = content_type;
        self
    }
    fn header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }
    fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }
    fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }
}

const MSG: &str = r#"{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}"#;

fn bad_cases() -> Vec<Case> {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{}"}}]}}}}}}"#,
        "x".repeat(1024 * 1024)
    );
    vec![
        // -32700: not JSON.
        case("empty body", "", -32700).says(&["Invalid JSON"]),
        case("lone brace", "{", -32700),
        case("plain text", "hello", -32700),
        case("trailing comma", r#"{"jsonrpc":"2.0","id":1,}"#, -32700),
        case(
            "truncated",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask""#,
            -32700,
        ),
        case("single quotes", "{'jsonrpc':'2.0'}", -32700),
        case("trailing garbage", r#"{"jsonrpc":"2.0"} x"#, -32700),
        case("NaN literal", r#"{"jsonrpc":"2.0","id":NaN}"#, -32700),
        case(
            "not UTF-8",
            &b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}"[..],
            -32700,
        ),
        case("unclosed batch", "[1,2", -32700),
        // -32600: JSON, but not a JSON-RPC request object.
        case("empty batch", "[]", -32600),
        case(
            "batch of one",
            format!("[{}]", rpc_text("GetTask", r#"{"id":"x"}"#)),
            -32600,
        ),
        case("string", r#""GetTask""#, -32600),
        case("number", "42", -32600),
        case("null", "null", -32600),
        case("boolean", "true", -32600),
        case("empty object", "{}", -32600).says(&["jsonrpc"]),
        case(
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"x"}}"#,
            -32600,
        ),
        case(
            "jsonrpc as number",
            r#"{"jsonrpc":2.0,"id":1,"method":"GetTask","params":{"id":"x"}}"#,
            -32600,
        ),
        case("missing method", r#"{"jsonrpc":"2.0","id":1}"#, -32600).says(&["method"]),
        case(
            "method not a string",
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            -32600,
        ),
        case("params a string", rpc_text("GetTask", r#""x""#), -32600).says(&["params"]),
        case("params a number", rpc_text("GetTask", "3"), -32600),
        // -32601: unknown methods.
        case("camelCase method", rpc_text("sendMessage", "{}"), -32601).says(&["sendMessage"]),
        case(
            "0.3 name that never existed",
            rpc_text("tasks/list", "{}"),
            -32601,
        ),
        case("empty method", rpc_text("", "{}"), -32601),
        case("near miss", rpc_text("message/sendx", "{}"), -32601),
        // -32602: parameters.
        case(
            "SendMessage without params",
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage"}"#,
            -32602,
        )
        .says(&["params"]),
        case(
            "SendMessage without message",
            rpc_text("SendMessage", "{}"),
            -32602,
        )
        .says(&["message"]),
        case(
            "parts not a list",
            rpc_text(
                "SendMessage",
                r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":"hi"}}"#,
            ),
            -32602,
        )
        .says(&["message.parts"]),
        case(
            "unknown role",
            rpc_text(
                "SendMessage",
                r#"{"message":{"messageId":"m","role":"ROLE_X","parts":[{"text":"hi"}]}}"#,
            ),
            -32602,
        )
        .says(&["message.role"]),
        case(
            "historyLength a string",
            rpc_text(
                "SendMessage",
                &format!(r#"{{"message":{MSG},"configuration":{{"historyLength":"ten"}}}}"#),
            ),
            -32602,
        )
        .says(&["configuration.historyLength"]),
        case(
            "historyLength negative",
            rpc_text(
                "SendMessage",
                &format!(r#"{{"message":{MSG},"configuration":{{"historyLength":-1}}}}"#),
            ),
            -32602,
        )
        .says(&["historyLength"]),
        case(
            "GetTask id a number",
            rpc_text("GetTask", r#"{"id":5}"#),
            -32602,
        )
        .says(&["id"]),
        case(
            "GetTask without params",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask"}"#,
            -32602,
        ),
        case(
            "GetTask historyLength a string",
            rpc_text("GetTask", r#"{"id":"x","historyLength":"all"}"#),
            -32602,
        )
        .says(&["historyLength"]),
        case(
            "GetTask params a list",
            rpc_text("GetTask", r#"["x"]"#),
            -32602,
        ),
        case(
            "ListTasks pageSize a string",
            rpc_text("ListTasks", r#"{"pageSize":"x"}"#),
            -32602,
        )
        .says(&["pageSize"]),
        case(
            "ListTasks pageSize 0",
            rpc_text("ListTasks", r#"{"pageSize":0}"#),
            -32602,
        )
        .says(&["pageSize"]),
        case(
            "ListTasks pageSize 1000",
            rpc_text("ListTasks", r#"{"pageSize":1000}"#),
            -32602,
        )
        .says(&["pageSize"]),
        case(
            "CancelTask id a list",
            rpc_text("CancelTask", r#"{"id":[]}"#),
            -32602,
        )
        .says(&["id"]),
        case(
            "0.3 send without message",
            rpc_text("message/send", "{}"),
            -32602,
        ),
        case(
            "SubscribeToTask id a number",
            rpc_text("SubscribeToTask", r#"{"id":1}"#),
            -32602,
        )
        .says(&["id"]),
        case(
            "bad Last-Event-ID",
            rpc_text("SubscribeToTask", r#"{"id":"x"}"#),
            -32602,
        )
        .header("last-event-id", "abc")
        .says(&["Last-Event-ID"]),
        // A2A errors.
        case(
            "GetTask unknown id",
            rpc_text("GetTask", r#"{"id":"nope"}"#),
            -32001,
        )
        .says(&["nope"]),
        case(
            "CancelTask unknown id",
            rpc_text("CancelTask", r#"{"id":"nope"}"#),
            -32001,
        ),
        case(
            "SubscribeToTask unknown id",
            rpc_text("SubscribeToTask", r#"{"id":"nope"}"#),
            -32001,
        )
        .says(&["not found"]),
        case(
            "0.3 get unknown id",
            rpc_text("tasks/get", r#"{"id":"nope"}"#),
            -32001,
        ),
        case(
            "push config",
            rpc_text(
                "CreateTaskPushNotificationConfig",
                r#"{"taskId":"t","url":"http://x"}"#,
            ),
            -32003,
        ),
        case(
            "extended card",
            rpc_text("GetExtendedAgentCard", "{}"),
            -32004,
        ),
        case(
            "A2A-Version 2.0",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32009,
        )
        .header("a2a-version", "2.0")
        .says(&["2.0"]),
        case(
            "A2A-Version garbage",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32009,
        )
        .header("a2a-version", "latest"),
        case(
            "A2A-Version 0.2",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32009,
        )
        .header("a2a-version", "0.2"),
        // Transport refusals: an HTTP status and a JSON-RPC body.
        case("oversize body", big.clone(), -32600)
            .status(StatusCode::PAYLOAD_TOO_LARGE)
            .says(&["exceeds 1048576 bytes"]),
        case("oversize chunked body", big, -32600)
            .chunked()
            .status(StatusCode::PAYLOAD_TOO_LARGE)
            .says(&["exceeds 1048576 bytes"]),
        case(
            "no content type",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32005,
        )
        .content_type(None)
        .status(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        .says(&["application/json", "application/a2a+json"]),
        case(
            "a part of a media type the agent does not take",
            rpc_text(
                "SendMessage",
                r#"{"message":{"messageId":"m-media","role":"ROLE_USER","parts":[{"raw":"dGNr","mediaType":"application/x-unsupported-tck-type"}]}}"#,
            ),
            -32005,
        )
        .says(&["application/x-unsupported-tck-type", "text/plain"]),
        case("text/plain", rpc_text("GetTask", r#"{"id":"x"}"#), -32005)
            .content_type(Some("text/plain"))
            .status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        case("form", rpc_text("GetTask", r#"{"id":"x"}"#), -32005)
            .content_type(Some("application/x-www-form-urlencoded"))
            .status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        case(
            "json lookalike",
            rpc_text("GetTask", r#"{"id":"x"}"#),
            -32005,
        )
        .content_type(Some("application/jsonx"))
        .status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
    ]
}

#[tokio::test]
async fn bad_requests_get_the_right_errors_and_the_server_stays_up() {
    let app = app().await;
    let cases = bad_cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let mut builder = Request::post("/");
        if let Some(content_type) = case.content_type {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        for (name, value) in &case.headers {
            builder = builder.header(*name, *value);
        }
        let body = if case.chunked {
            let chunks: Vec<Result<Bytes, std::io::Error>> = case
                .body
                .chunks(64 * 1024)
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            Body::from_stream(futures::stream::iter(chunks))
        } else {
            Body::from(case.body.clone())
        };
        let reply = call(&app, builder.body(body).unwrap()).await;
        // Every error before a stream starts is plain JSON, streaming methods' too (§3.1.6).
        if !reply.content_type().starts_with("application/json") {
            failures.push(format!(
                "{}: content type {}",
                case.name,
                reply.content_type()
            ));
            continue;
        }
        let error = reply.json();
        let code = error["error"]["code"].as_i64();
        let message = error["error"]["message"].as_str().unwrap_or_default();
        let said = case.says.iter().all(|s| message.contains(s));
        if reply.status != case.status || code != Some(case.code) || !said {
            failures.push(format!(
                "{}: got {} {error}, want {} {} saying {:?}",
                case.name, reply.status, case.status, case.code, case.says
            ));
        }
        if error["jsonrpc"] != "2.0" {
            failures.push(format!("{}: not a JSON-RPC body: {error}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Still serving.
    let reply = rpc(
        &app,
        envelope(json!(1), "SendMessage", send_params("hi", true)),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let task = &reply.json()["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{task}");
    let id = task["id"].as_str().unwrap();
    let reply = rpc(&app, envelope(json!(2), "GetTask", json!({"id": id}))).await;
    assert_eq!(reply.json()["result"]["id"], id);
}

#[tokio::test]
async fn both_content_types_and_parameters_are_accepted() {
    let app = app().await;
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON;charset=UTF-8",
        "application/a2a+json",
        "application/a2a+json; charset=utf-8",
    ] {
        let request = Request::post("/")
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(rpc_text("GetTask", r#"{"id":"nope"}"#)))
            .unwrap();
        let reply = call(&app, request).await;
        assert_eq!(reply.status, StatusCode::OK, "{content_type}");
        assert_eq!(reply.content_type(), "application/json");
        assert_eq!(reply.json()["error"]["code"], -32001, "{content_type}");
    }
}

#[tokio::test]
async fn ids_are_echoed_with_their_json_type() {
    let app = app().await;
    for id in [json!("abc"), json!(7), json!(1.5), Value::Null, json!("")] {
        // An error reply...
        let reply = rpc(&app, envelope(id.clone(), "GetTask", json!({"id": "nope"}))).await;
        assert_eq!(reply.json()["id"], id);
        // ...and a success.
        let reply = rpc(
            &app,
            envelope(id.clone(), "SendMessage", send_params("x", true)),
        )
        .await;
        let body = reply.json();
        assert_eq!(body["id"], id, "{body}");
        assert!(body["result"]["task"].is_object(), "{body}");
    }
    // The exact text, not only the value: `1.50` stays `1.50`.
    let reply = call(
        &app,
        rpc_request(r#"{"jsonrpc":"2.0","id":1.50,"method":"GetTask","params":{"id":"n"}}"#),
    )
    .await;
    assert!(reply.text().contains(r#""id":1.50"#), "{}", reply.text());
}

#[tokio::test]
async fn a2a_version_values_that_are_served_pass() {
    let app = app().await;
    for version in ["1.0", "1.0.1", "0.3", " 1.0 ", ""] {
        let request = Request::post("/")
            .header(header::CONTENT_TYPE, "application/json")
            .header("a2a-version", version)
            .body(Body::from(rpc_text("GetTask", r#"{"id":"nope"}"#)))
            .unwrap();
        let reply = call(&app, request).await;
        assert_eq!(reply.json()["error"]["code"], -32001, "{version:?}");
    }
}
