//! The rows of the table: each scenario drives one client through the same calls whatever
//! its binding, checks what must hold, and returns its transcript (every answer, or the
//! error in its place) for the suite to compare across bindings.

use std::time::Duration;

use serde_json::{Value, json};

use super::client::{Answer, Client};

/// A fresh message id.
fn message_id() -> String {
    format!("m-{:016x}", rand::random::<u64>())
}

/// SendMessage's params: `text` from the user, in `task` when given, with `more` merged into
/// the message (`contextId`, `parts`, ...), `returnImmediately` when `immediately`.
fn send(text: &str, immediately: bool, more: Value) -> Value {
    let mut message =
        json!({"messageId": message_id(), "role": "ROLE_USER", "parts": [{"text": text}]});
    if let (Some(message), Some(more)) = (message.as_object_mut(), more.as_object()) {
        message.extend(more.clone());
    }
    let mut params = json!({"message": message});
    if immediately {
        params["configuration"] = json!({"returnImmediately": true});
    }
    params
}

/// What a transcript holds of an answer.
pub fn outcome(answer: &Answer) -> Value {
    match answer {
        Ok(value) => value.clone(),
        Err(refusal) => json!({"error": refusal.to_json()}),
    }
}

fn ok(answer: Answer, what: &str) -> Value {
    answer.unwrap_or_else(|refusal| panic!("{what}: {refusal:?}"))
}

fn reason(answer: &Answer) -> &str {
    answer.as_ref().err().map_or("", |r| r.reason.as_str())
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

fn text(parts: &Value) -> String {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

const TERMINAL: [&str; 4] = [
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

/// GetTask of `id` until its state is terminal.
async fn finished(c: &Client, id: &str) -> Value {
    for _ in 0..200 {
        let task = ok(c.call("GetTask", json!({"id": id})).await, "GetTask");
        if TERMINAL.contains(&state(&task)) {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not finish");
}

pub async fn blocking_send_and_get_with_history_lengths(c: &Client) -> Vec<Value> {
    let sent = ok(
        c.call("SendMessage", send("hello", false, json!({}))).await,
        "send",
    );
    let task = &sent["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED");
    assert_eq!(text(&task["artifacts"][0]["parts"]), "echo: hello");
    let id = task["id"].as_str().expect("an id");
    let mut transcript = vec![sent.clone()];
    for history in [None, Some(0), Some(1), Some(10)] {
        let mut params = json!({"id": id});
        if let Some(n) = history {
            params["historyLength"] = json!(n);
        }
        let got = ok(c.call("GetTask", params).await, "GetTask");
        let kept = got["history"].as_array().map_or(0, Vec::len);
        assert!(
            history.is_none_or(|n| kept <= n),
            "{kept} messages for {history:?}"
        );
        transcript.push(got);
    }
    transcript
}

pub async fn non_blocking_send_then_the_finished_task(c: &Client) -> Vec<Value> {
    let sent = ok(
        c.call("SendMessage", send("sleep 0.3", true, json!({})))
            .await,
        "send",
    );
    // What the task is when the answer leaves depends on timing: only that it is not over.
    let early = !TERMINAL.contains(&state(&sent["task"]));
    assert!(early, "returnImmediately answered {sent}");
    let done = finished(c, sent["task"]["id"].as_str().expect("an id")).await;
    assert_eq!(text(&done["artifacts"][0]["parts"]), "slept 0.3 s");
    vec![json!({"answeredBeforeTheEnd": early}), done]
}

pub async fn streaming_send(c: &Client) -> Vec<Value> {
    let events = c
        .stream(
            "SendStreamingMessage",
            send("hello stream", false, json!({})),
        )
        .await
        .expect("a stream");
    assert!(events[0].get("task").is_some(), "{events:?}");
    let last = events.last().expect("events");
    assert_eq!(state(&last["statusUpdate"]), "TASK_STATE_COMPLETED");
    events
}

pub async fn a_message_as_the_answer(c: &Client) -> Vec<Value> {
    let answer = ok(
        c.call("SendMessage", send("reply hi there", false, json!({})))
            .await,
        "send",
    );
    assert_eq!(text(&answer["message"]["parts"]), "hi there");
    let events = c
        .stream(
            "SendStreamingMessage",
            send("reply streamed", false, json!({})),
        )
        .await
        .expect("a stream");
    assert_eq!(events.len(), 1, "{events:?}");
    vec![answer, json!(events)]
}

pub async fn input_required_then_the_follow_up(c: &Client) -> Vec<Value> {
    let asked = ok(
        c.call("SendMessage", send("input", false, json!({}))).await,
        "send",
    );
    let task = &asked["task"];
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED");
    let ids = json!({"taskId": task["id"], "contextId": task["contextId"]});
    let done = ok(
        c.call("SendMessage", send("the answer", false, ids)).await,
        "follow-up",
    );
    assert_eq!(state(&done["task"]), "TASK_STATE_COMPLETED");
    let got = ok(
        c.call("GetTask", json!({"id": task["id"]})).await,
        "GetTask",
    );
    vec![asked, done, got]
}

pub async fn cancel_and_cancel_again(c: &Client) -> Vec<Value> {
    let sent = ok(
        c.call("SendMessage", send("sleep 30", true, json!({})))
            .await,
        "send",
    );
    let id = sent["task"]["id"].clone();
    let canceled = c.call("CancelTask", json!({"id": id})).await;
    assert_eq!(
        state(canceled.as_ref().expect("canceled")),
        "TASK_STATE_CANCELED"
    );
    let again = c.call("CancelTask", json!({"id": id})).await;
    assert_eq!(reason(&again), "TASK_NOT_CANCELABLE");
    let got = c.call("GetTask", json!({"id": id})).await;
    vec![outcome(&canceled), outcome(&again), outcome(&got)]
}

pub async fn a_failing_task(c: &Client) -> Vec<Value> {
    let sent = ok(
        c.call("SendMessage", send("fail", false, json!({}))).await,
        "send",
    );
    assert_eq!(state(&sent["task"]), "TASK_STATE_FAILED");
    vec![sent]
}

pub async fn list_tasks_filters_and_pages(c: &Client) -> Vec<Value> {
    let context = format!("ctx-{:016x}", rand::random::<u64>());
    let mut ids = Vec::new();
    for word in ["one", "two", "three"] {
        let more = json!({"contextId": context});
        let sent = ok(c.call("SendMessage", send(word, false, more)).await, "send");
        ids.push(sent["task"]["id"].clone());
    }
    let mut transcript = Vec::new();
    for filter in [
        json!({}),
        json!({"includeArtifacts": true}),
        json!({"historyLength": 0}),
        json!({"status": "TASK_STATE_COMPLETED"}),
        json!({"status": "TASK_STATE_WORKING"}),
        json!({"pageSize": 2}),
    ] {
        let mut params = json!({"contextId": context});
        params
            .as_object_mut()
            .expect("an object")
            .extend(filter.as_object().cloned().unwrap_or_default());
        transcript.push(ok(c.call("ListTasks", params).await, "ListTasks"));
    }
    let listed: Vec<_> = transcript[0]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(
        listed,
        [ids[2].clone(), ids[1].clone(), ids[0].clone()],
        "newest first"
    );
    let token = transcript[5]["nextPageToken"].clone();
    let rest = json!({"contextId": context, "pageSize": 2, "pageToken": token});
    let next = ok(c.call("ListTasks", rest).await, "the next page");
    assert_eq!(next["tasks"][0]["id"], ids[0]);
    transcript.push(next);
    transcript
}

pub async fn subscribing_to_a_running_then_a_finished_task(c: &Client) -> Vec<Value> {
    let sent = ok(
        c.call("SendMessage", send("sleep 0.5", true, json!({})))
            .await,
        "send",
    );
    let id = sent["task"]["id"].clone();
    let events = c
        .stream("SubscribeToTask", json!({"id": id}))
        .await
        .expect("a stream");
    // Where the first snapshot finds the task depends on timing; the rest does not.
    assert_eq!(events[0]["task"]["id"], id, "{events:?}");
    let last = events.last().expect("events");
    assert_eq!(state(&last["statusUpdate"]), "TASK_STATE_COMPLETED");
    let artifacts: String = events
        .iter()
        .map(|e| text(&e["artifactUpdate"]["artifact"]["parts"]))
        .collect();
    assert_eq!(artifacts, "slept 0.5 s");
    let after = c.stream("SubscribeToTask", json!({"id": id})).await;
    let after = match after {
        Ok(events) => json!(events),
        Err(refusal) => json!({"error": refusal.to_json()}),
    };
    vec![
        json!({"first": "task", "last": last, "artifacts": artifacts}),
        after,
    ]
}

pub async fn every_error_a_client_can_cause(c: &Client) -> Vec<Value> {
    let done = ok(
        c.call("SendMessage", send("hello", false, json!({}))).await,
        "send",
    );
    let finished = done["task"]["id"].clone();
    let unknown = json!({"id": "no-such-task"});
    let calls = [
        ("GetTask", unknown.clone()),
        ("CancelTask", unknown.clone()),
        ("GetTask", json!({"id": finished, "historyLength": -1})),
        ("ListTasks", json!({"pageSize": -1})),
        ("ListTasks", json!({"pageToken": "not-a-token"})),
        (
            "SendMessage",
            send("again", false, json!({"taskId": finished})),
        ),
        (
            "SendMessage",
            send("where", false, json!({"taskId": "no-such-task"})),
        ),
        (
            "SendMessage",
            send(
                "",
                false,
                json!({"parts": [{"url": "https://example.com/a.png", "mediaType": "image/png"}]}),
            ),
        ),
        ("SendMessage", send("", false, json!({"parts": []}))),
        ("GetExtendedAgentCard", json!({})),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": finished, "url": "https://example.com/hook"}),
        ),
    ];
    let mut transcript = Vec::new();
    for (method, params) in calls {
        let answer = c.call(method, params.clone()).await;
        assert!(answer.is_err(), "{method} {params} answered {answer:?}");
        transcript.push(json!({"call": method, "answer": outcome(&answer)}));
    }
    for (method, params) in [
        ("SubscribeToTask", unknown),
        ("SubscribeToTask", json!({"id": finished})),
    ] {
        let refused = c
            .stream(method, params)
            .await
            .expect_err("refused before the stream");
        transcript.push(json!({"call": method, "answer": {"error": refused.to_json()}}));
    }
    transcript
}

pub async fn tenants_partition_tasks(c: &Client) -> Vec<Value> {
    let same = message_id();
    let mut ids = Vec::new();
    let mut transcript = Vec::new();
    for tenant in ["acme", "globex"] {
        let mut params = send("tenant", false, json!({"messageId": same}));
        params["tenant"] = json!(tenant);
        let sent = ok(c.call("SendMessage", params).await, "send");
        ids.push(sent["task"]["id"].clone());
        transcript.push(sent);
    }
    assert_ne!(ids[0], ids[1], "one messageId, two tenants: two tasks");
    let mine = c
        .call("GetTask", json!({"tenant": "acme", "id": ids[0]}))
        .await;
    let theirs = c
        .call("GetTask", json!({"tenant": "globex", "id": ids[0]}))
        .await;
    let default = c.call("GetTask", json!({"id": ids[1]})).await;
    assert!(mine.is_ok(), "{mine:?}");
    assert_eq!(reason(&theirs), "TASK_NOT_FOUND");
    assert_eq!(reason(&default), "TASK_NOT_FOUND");
    transcript.extend([outcome(&mine), outcome(&theirs), outcome(&default)]);
    transcript
}

pub async fn service_parameters(c: &Client) -> Vec<Value> {
    let unknown = json!({"id": "no-such-task"});
    let version = c.with("a2a-version", "99.0").call("GetTask", unknown).await;
    assert_eq!(reason(&version), "VERSION_NOT_SUPPORTED");
    // The message lists the versions the binding speaks: gRPC serves 1.0 alone, the HTTP
    // bindings 0.3 too. The rest of the refusal is the same.
    let version = version.map_err(|mut refusal| {
        assert!(refusal.message.contains("99.0"), "{refusal:?}");
        refusal.message.clear();
        refusal
    });
    let ext = || json!({"messageId": format!("ext-{:016x}", rand::random::<u64>())});
    let without = c.call("SendMessage", send("needs it", false, ext())).await;
    assert_eq!(reason(&without), "EXTENSION_SUPPORT_REQUIRED");
    let with = c.with("a2a-extensions", super::REQUIRED);
    let accepted = with.call("SendMessage", send("has it", false, ext())).await;
    assert_eq!(
        state(&accepted.as_ref().expect("accepted")["task"]),
        "TASK_STATE_COMPLETED"
    );
    vec![outcome(&version), outcome(&without), outcome(&accepted)]
}

/// A server with edge auth: no token, an unknown one, a scope short, and another principal's
/// task; then the owner's own read.
pub async fn auth(
    anonymous: &Client,
    alice: &Client,
    bob: &Client,
    reader: &Client,
    stranger: &Client,
) -> Vec<Value> {
    let hello = || send("hello", false, json!({}));
    let mut transcript = Vec::new();
    for (who, c) in [
        ("anonymous", anonymous),
        ("unknown token", stranger),
        ("read-only", reader),
    ] {
        let refused = c.call("SendMessage", hello()).await;
        assert!(refused.is_err(), "{who}: {refused:?}");
        transcript.push(json!({who: outcome(&refused)}));
    }
    let sent = ok(alice.call("SendMessage", hello()).await, "alice sends");
    let id = sent["task"]["id"].clone();
    let theirs = bob.call("GetTask", json!({"id": id})).await;
    assert_eq!(reason(&theirs), "TASK_NOT_FOUND");
    let hers = reader.call("GetTask", json!({"id": id})).await;
    assert_eq!(
        reason(&hers),
        "TASK_NOT_FOUND",
        "reader is another principal"
    );
    let own = ok(
        alice.call("GetTask", json!({"id": id})).await,
        "alice reads",
    );
    transcript.extend([sent, outcome(&theirs), outcome(&hers), own]);
    transcript
}
