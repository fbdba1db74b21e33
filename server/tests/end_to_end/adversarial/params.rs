//! The params of every method, 1.0 and 0.3: each malformed shape is -32602 (JSON-RPC §5.1:
//! invalid method parameters) with nothing written; params that name what does not exist
//! get the method's own error (-32001 task not found). A2A methods take named params, so an
//! array is -32602 too (JSON-RPC allows positional params; A2A defines none).

use crate::adversarial::cases::{Case, method_case};
use crate::adversarial::envelope::METHODS;

const MSG: &str = r#"{"messageId":"adv-m","role":"ROLE_USER","parts":[{"text":"hi"}]}"#;
const MSG03: &str = r#"{"kind":"message","messageId":"adv-m03","role":"user","parts":[{"kind":"text","text":"hi"}]}"#;

/// A 1.0 send whose message is `message` (and whose other members are `rest`, a leading
/// comma included).
fn send(message: &str, rest: &str) -> String {
    format!(r#"{{"message":{message}{rest}}}"#)
}

/// A 1.0 message with `member` spliced in after the role.
fn message_with(member: &str) -> String {
    format!(r#"{{"messageId":"adv-x","role":"ROLE_USER","parts":[{{"text":"hi"}}],{member}}}"#)
}

pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // Every method that takes params, with params of every shape that is no params object.
    for (method, _, _) in METHODS {
        for (shape, params) in [
            ("an empty array", "[]"),
            ("an array of a string", r#"["no-such-task"]"#),
            ("an array of an object", r#"[{"id":"no-such-task"}]"#),
            ("an array of arrays", "[[1],[2]]"),
        ] {
            // Refused before the method runs, whatever the method (push methods included).
            cases.push(method_case(
                format!("{method}, params {shape}"),
                method,
                params,
                -32602,
            ));
        }
    }
    for method in [
        "SendMessage",
        "SendStreamingMessage",
        "message/send",
        "message/stream",
    ] {
        cases.push(method_case(
            format!("{method}, params an array"),
            method,
            &format!("[{MSG}]"),
            -32602,
        ));
        cases.push(
            Case::new(
                format!("{method}, no params"),
                crate::adversarial::client::post(
                    "/",
                    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#).as_bytes(),
                    &[],
                ),
                200,
                Some(-32602),
            )
            .says(&["params"]),
        );
        cases.push(method_case(
            format!("{method}, empty params"),
            method,
            "{}",
            -32602,
        ));
        cases.push(method_case(
            format!("{method}, message a string"),
            method,
            r#"{"message":"hi"}"#,
            -32602,
        ));
        cases.push(method_case(
            format!("{method}, message an array"),
            method,
            &format!(r#"{{"message":[{MSG}]}}"#),
            -32602,
        ));
        cases.push(method_case(
            format!("{method}, message null"),
            method,
            r#"{"message":null}"#,
            -32602,
        ));
    }
    for (name, params) in [
        (
            "no messageId",
            send(r#"{"role":"ROLE_USER","parts":[{"text":"hi"}]}"#, ""),
        ),
        (
            "messageId a number",
            send(
                r#"{"messageId":5,"role":"ROLE_USER","parts":[{"text":"hi"}]}"#,
                "",
            ),
        ),
        (
            "messageId an array",
            send(
                r#"{"messageId":["m"],"role":"ROLE_USER","parts":[{"text":"hi"}]}"#,
                "",
            ),
        ),
        (
            "no role",
            send(r#"{"messageId":"adv-r","parts":[{"text":"hi"}]}"#, ""),
        ),
        (
            "role unknown",
            send(
                r#"{"messageId":"adv-r","role":"ROLE_ROBOT","parts":[{"text":"hi"}]}"#,
                "",
            ),
        ),
        (
            "role a number",
            send(
                r#"{"messageId":"adv-r","role":7,"parts":[{"text":"hi"}]}"#,
                "",
            ),
        ),
        (
            "no parts",
            send(r#"{"messageId":"adv-p","role":"ROLE_USER"}"#, ""),
        ),
        (
            "parts a string",
            send(
                r#"{"messageId":"adv-p","role":"ROLE_USER","parts":"hi"}"#,
                "",
            ),
        ),
        (
            "parts an object",
            send(
                r#"{"messageId":"adv-p","role":"ROLE_USER","parts":{"text":"hi"}}"#,
                "",
            ),
        ),
        (
            "a part with no content",
            send(
                r#"{"messageId":"adv-p","role":"ROLE_USER","parts":[{}]}"#,
                "",
            ),
        ),
        (
            "a part with two contents",
            send(
                r#"{"messageId":"adv-p","role":"ROLE_USER","parts":[{"text":"a","url":"https://x"}]}"#,
                "",
            ),
        ),
        (
            "a part an array",
            send(
                r#"{"messageId":"adv-p","role":"ROLE_USER","parts":[["hi"]]}"#,
                "",
            ),
        ),
        (
            "a part's text a number",
            send(
                r#"{"messageId":"adv-p","role":"ROLE_USER","parts":[{"text":1}]}"#,
                "",
            ),
        ),
        (
            "a part's raw not base64",
            send(
                r#"{"messageId":"adv-p","role":"ROLE_USER","parts":[{"raw":"%%%"}]}"#,
                "",
            ),
        ),
        (
            "configuration an array",
            send(MSG, r#","configuration":[]"#),
        ),
        (
            "configuration a string",
            send(MSG, r#","configuration":"x""#),
        ),
        (
            "configuration with an array inside",
            send(
                MSG,
                r#","configuration":{"acceptedOutputModes":"text/plain"}"#,
            ),
        ),
        (
            "returnImmediately a string",
            send(MSG, r#","configuration":{"returnImmediately":"yes"}"#),
        ),
        // ProtoJSON reads an int32 from a number or a decimal string ("2"), nothing else.
        (
            "historyLength a word",
            send(MSG, r#","configuration":{"historyLength":"two"}"#),
        ),
        (
            "historyLength a fraction",
            send(MSG, r#","configuration":{"historyLength":1.5}"#),
        ),
        (
            "historyLength huge",
            send(MSG, r#","configuration":{"historyLength":1e100}"#),
        ),
        ("metadata an array", send(MSG, r#","metadata":[]"#)),
        ("metadata a string", send(MSG, r#","metadata":"x""#)),
        (
            "message metadata an array",
            send(&message_with(r#""metadata":[1]"#), ""),
        ),
        (
            "agentlog.hops not a list",
            send(&message_with(r#""metadata":{"agentlog.hops":"a"}"#), ""),
        ),
        (
            "agentlog.hops of numbers",
            send(&message_with(r#""metadata":{"agentlog.hops":[1,2]}"#), ""),
        ),
        (
            "contextId a number",
            send(&message_with(r#""contextId":5"#), ""),
        ),
        (
            "taskId an object",
            send(&message_with(r#""taskId":{"id":"t"}"#), ""),
        ),
        (
            "extensions a string",
            send(&message_with(r#""extensions":"urn:x""#), ""),
        ),
        (
            "referenceTaskIds a string",
            send(&message_with(r#""referenceTaskIds":"t""#), ""),
        ),
        ("tenant a number", send(MSG, r#","tenant":5"#)),
    ] {
        for method in ["SendMessage", "SendStreamingMessage"] {
            cases.push(method_case(
                format!("{method}, {name}"),
                method,
                &params,
                -32602,
            ));
        }
    }
    for (name, params) in [
        (
            "no message",
            r#"{"configuration":{"blocking":true}}"#.to_owned(),
        ),
        (
            "kind of another object",
            format!(
                r#"{{"message":{}}}"#,
                MSG03.replace(r#""kind":"message""#, r#""kind":"task""#)
            ),
        ),
        (
            "role unknown",
            format!(
                r#"{{"message":{}}}"#,
                MSG03.replace(r#""role":"user""#, r#""role":"robot""#)
            ),
        ),
        (
            "a part of an unknown kind",
            format!(
                r#"{{"message":{}}}"#,
                MSG03.replace(
                    r#""kind":"text","text":"hi""#,
                    r#""kind":"video","text":"hi""#
                )
            ),
        ),
        (
            "a file part without a file",
            format!(
                r#"{{"message":{}}}"#,
                MSG03.replace(r#""kind":"text","text":"hi""#, r#""kind":"file""#)
            ),
        ),
        (
            "configuration an array",
            format!(r#"{{"message":{MSG03},"configuration":[]}}"#),
        ),
        (
            "blocking a string",
            format!(r#"{{"message":{MSG03},"configuration":{{"blocking":"no"}}}}"#),
        ),
        (
            "metadata an array",
            format!(r#"{{"message":{MSG03},"metadata":[]}}"#),
        ),
    ] {
        for method in ["message/send", "message/stream"] {
            cases.push(method_case(
                format!("{method}, {name}"),
                method,
                &params,
                -32602,
            ));
        }
    }
    // A call loop (the hop guard): refused -32600 in an HTTP 200, as every JSON-RPC error
    // (skills/security/hops.md); the demo bridge's id is its agent's name.
    for (name, hops) in [
        ("through this bridge", r#"["a","demo"]"#),
        ("past the most hops", r#"["a","b","c","d","e","f","g","h"]"#),
    ] {
        let params = send(
            &message_with(&format!(r#""metadata":{{"agentlog.hops":{hops}}}"#)),
            "",
        );
        cases.push(
            method_case(
                format!("SendMessage, a loop {name}"),
                "SendMessage",
                &params,
                -32600,
            )
            .says(&["call"]),
        );
    }
    // Reading and cancelling: an id is required and must be a string.
    let long_id = format!(r#"{{"id":"{}"}}"#, "t".repeat(100_000));
    for method in [
        "GetTask",
        "CancelTask",
        "SubscribeToTask",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
    ] {
        for (name, params, code) in [
            ("no id", "{}", -32602),
            ("id a number", r#"{"id":5}"#, -32602),
            ("id null", r#"{"id":null}"#, -32602),
            ("id an array", r#"{"id":["t"]}"#, -32602),
            ("id an object", r#"{"id":{"id":"t"}}"#, -32602),
            ("an unknown id", r#"{"id":"adv-no-such-task"}"#, -32001),
            (
                "an id of control characters",
                r#"{"id":"\u0000\u0001"}"#,
                -32001,
            ),
            ("a long id", long_id.as_str(), -32001),
        ] {
            cases.push(method_case(
                format!("{method}, {name}"),
                method,
                params,
                code,
            ));
        }
    }
    for method in ["GetTask", "tasks/get"] {
        for (name, params) in [
            (
                "historyLength a word",
                r#"{"id":"x","historyLength":"two"}"#,
            ),
            (
                "historyLength a fraction",
                r#"{"id":"x","historyLength":0.5}"#,
            ),
            ("historyLength negative", r#"{"id":"x","historyLength":-1}"#),
            (
                "historyLength huge",
                r#"{"id":"x","historyLength":99999999999999999999}"#,
            ),
        ] {
            cases.push(method_case(
                format!("{method}, {name}"),
                method,
                params,
                -32602,
            ));
        }
    }
    for (name, params) in [
        ("pageSize zero", r#"{"pageSize":0}"#),
        ("pageSize negative", r#"{"pageSize":-1}"#),
        ("pageSize past 100", r#"{"pageSize":101}"#),
        ("pageSize a word", r#"{"pageSize":"ten"}"#),
        ("pageSize a fraction", r#"{"pageSize":2.5}"#),
        ("pageToken not ours", r#"{"pageToken":"not-a-token"}"#),
        ("pageToken a number", r#"{"pageToken":5}"#),
        ("status unknown", r#"{"status":"TASK_STATE_BORED"}"#),
        ("status a number", r#"{"status":99}"#),
        ("status a list", r#"{"status":["TASK_STATE_COMPLETED"]}"#),
        ("contextId a number", r#"{"contextId":5}"#),
        ("historyLength negative", r#"{"historyLength":-3}"#),
        ("includeArtifacts a string", r#"{"includeArtifacts":"yes"}"#),
        (
            "statusTimestampAfter a word",
            r#"{"statusTimestampAfter":"yesterday"}"#,
        ),
        (
            "statusTimestampAfter a number",
            r#"{"statusTimestampAfter":1700000000}"#,
        ),
        (
            "statusTimestampAfter offset +25:00",
            r#"{"statusTimestampAfter":"2025-01-01T00:00:00+25:00"}"#,
        ),
        (
            "statusTimestampAfter offset -00:60",
            r#"{"statusTimestampAfter":"2025-01-01T00:00:00-00:60"}"#,
        ),
        (
            "statusTimestampAfter offset +5:00",
            r#"{"statusTimestampAfter":"2025-01-01T00:00:00+5:000"}"#,
        ),
        (
            "statusTimestampAfter month 13",
            r#"{"statusTimestampAfter":"2025-13-01T00:00:00Z"}"#,
        ),
        (
            "statusTimestampAfter February 30",
            r#"{"statusTimestampAfter":"2025-02-30T00:00:00Z"}"#,
        ),
        (
            "statusTimestampAfter hour 24",
            r#"{"statusTimestampAfter":"2025-01-01T24:00:00Z"}"#,
        ),
        (
            "statusTimestampAfter no zone",
            r#"{"statusTimestampAfter":"2025-01-01T00:00:00"}"#,
        ),
        (
            "statusTimestampAfter before 1970",
            r#"{"statusTimestampAfter":"1969-12-31T23:59:59Z"}"#,
        ),
        ("tenant a number", r#"{"tenant":5}"#),
    ] {
        cases.push(method_case(
            format!("ListTasks, {name}"),
            "ListTasks",
            params,
            -32602,
        ));
    }
    // What is served: the edges of the valid ranges.
    for (name, params) in [
        ("pageSize 1", r#"{"pageSize":1}"#),
        ("pageSize 100", r#"{"pageSize":100}"#),
        (
            "pageSize a decimal string (ProtoJSON)",
            r#"{"pageSize":"10"}"#,
        ),
        (
            "statusTimestampAfter offset +23:59",
            r#"{"statusTimestampAfter":"2025-01-01T00:00:00+23:59"}"#,
        ),
        (
            "statusTimestampAfter with a fraction",
            r#"{"statusTimestampAfter":"2025-01-01T00:00:00.123456Z"}"#,
        ),
        (
            "status and contextId",
            r#"{"status":"TASK_STATE_COMPLETED","contextId":"adv-none"}"#,
        ),
        ("no params", "{}"),
    ] {
        cases.push(method_case(
            format!("ListTasks, {name}"),
            "ListTasks",
            params,
            0,
        ));
    }
    cases
}
