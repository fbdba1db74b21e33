//! Owner isolation over HTTP: two principals (and two tenants) try every method on each
//! other's tasks, and see exactly what they would see of a task that does not exist.

use super::*;

/// `POST /` as the holder of `token`.
async fn call(app: &Router, token: &str, body: Value) -> Reply {
    post(
        app,
        "/",
        &[("authorization", &bearer(token))],
        &body.to_string(),
    )
    .await
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn message(message_id: &str, text: &str, task_id: Option<&str>) -> Value {
    let mut message =
        json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    json!({"message": message})
}

/// A reply with the task id replaced, to compare "not yours" with "does not exist".
fn masked(reply: &Reply, task_id: &str) -> String {
    format!("{} {}", reply.status, reply.body).replace(task_id, "<id>")
}

#[tokio::test]
async fn another_principal_sees_nothing_of_a_task_and_the_same_message_id_makes_two_tasks() {
    let (app, worker) = app_with(&config()).await;
    let alice = ed(&claims("alice", ALL_SCOPES));
    let bob = ed(&claims("bob", ALL_SCOPES));
    // `input` keeps the task open (input-required), so cancel and continue are meaningful.
    let sent = call(
        &app,
        &alice,
        rpc(1, "SendMessage", message("m-1", "input", None)),
    )
    .await;
    let task = &sent.body["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{:?}",
        sent.body
    );
    let id = task["id"].as_str().unwrap().to_owned();
    let missing = "00000000-0000-8000-8000-000000000000";
    let attempts = |task_id: &str| {
        vec![
            rpc(2, "GetTask", json!({"id": task_id})),
            rpc(3, "CancelTask", json!({"id": task_id})),
            rpc(4, "SendMessage", message("m-bob-1", "more", Some(task_id))),
            rpc(5, "tasks/get", json!({"id": task_id})),
            rpc(6, "tasks/cancel", json!({"id": task_id})),
        ]
    };
    for (theirs, nobodys) in attempts(&id).into_iter().zip(attempts(missing)) {
        let method = theirs["method"].as_str().unwrap().to_owned();
        let reply = call(&app, &bob, theirs).await;
        assert_eq!(reply.code(), -32001, "{method}: {:?}", reply.body);
        let absent = call(&app, &bob, nobodys).await;
        assert_eq!(masked(&reply, &id), masked(&absent, missing), "{method}");
    }
    // Streams: refused as for a missing task, frame for frame.
    for (method, params, missing_params) in [
        ("SubscribeToTask", json!({"id": id}), json!({"id": missing})),
        (
            "SendStreamingMessage",
            message("m-bob-2", "more", Some(&id)),
            message("m-bob-2", "more", Some(missing)),
        ),
    ] {
        let theirs = call(&app, &bob, rpc(7, method, params)).await;
        let absent = call(&app, &bob, rpc(7, method, missing_params)).await;
        assert!(theirs.text.contains("-32001"), "{method}: {}", theirs.text);
        assert_eq!(
            theirs.text.replace(&id, "<id>"),
            absent.text.replace(missing, "<id>"),
            "{method}"
        );
    }
    // Listing: each sees their own.
    let listed = |reply: &Reply| reply.body["result"]["tasks"].as_array().map_or(0, Vec::len);
    let bobs = call(&app, &bob, rpc(8, "ListTasks", json!({}))).await;
    assert_eq!(listed(&bobs), 0, "{:?}", bobs.body);
    assert_eq!(bobs.body["result"]["totalSize"], 0);
    let alices = call(&app, &alice, rpc(9, "ListTasks", json!({}))).await;
    assert_eq!(listed(&alices), 1, "{:?}", alices.body);
    // The same messageId from Bob is Bob's own task.
    let bobs_own = call(
        &app,
        &bob,
        rpc(10, "SendMessage", message("m-1", "hello", None)),
    )
    .await;
    let bobs_id = bobs_own.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(bobs_id, id);
    assert_eq!(
        bobs_own.body["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // Alice's task is untouched by all of Bob's attempts, and still hers to cancel.
    let got = call(&app, &alice, rpc(11, "GetTask", json!({"id": id}))).await;
    assert_eq!(
        got.body["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let canceled = call(&app, &alice, rpc(12, "CancelTask", json!({"id": id}))).await;
    assert_eq!(
        canceled.body["result"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_same_subject_in_another_tenant_is_someone_else() {
    let mut config = config();
    config.tenant_claim = Some("org".to_owned());
    let (app, worker) = app_with(&config).await;
    let in_org = |org: &str| {
        let mut c = claims("alice", ALL_SCOPES);
        c["org"] = json!(org);
        ed(&c)
    };
    let (acme, globex) = (in_org("acme"), in_org("globex"));
    let created = call(
        &app,
        &acme,
        rpc(1, "SendMessage", message("m-1", "input", None)),
    )
    .await;
    let id = created.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let other = call(&app, &globex, rpc(2, "GetTask", json!({"id": id}))).await;
    assert_eq!(other.code(), -32001, "{:?}", other.body);
    let listed = call(&app, &globex, rpc(3, "ListTasks", json!({}))).await;
    assert_eq!(listed.body["result"]["totalSize"], 0);
    let own = call(&app, &acme, rpc(4, "GetTask", json!({"id": id}))).await;
    assert_eq!(own.body["result"]["id"], json!(id));
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn no_token_or_signature_reaches_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let log = crate::log::open(&url).await.unwrap();
    let (app, worker) = app_on(log.clone(), &config()).await;
    let token = ed(&claims("alice", ALL_SCOPES));
    let signature = token.rsplit('.').next().unwrap().to_owned();
    for (i, text) in ["hello", "input"].into_iter().enumerate() {
        let reply = call(
            &app,
            &token,
            rpc(
                i as i64,
                "SendMessage",
                message(&format!("m-{i}"), text, None),
            ),
        )
        .await;
        assert!(reply.body["result"]["task"].is_object(), "{:?}", reply.body);
    }
    let listed = call(&app, &token, rpc(9, "ListTasks", json!({}))).await;
    assert_eq!(listed.body["result"]["totalSize"], 2);
    worker.shutdown().await.unwrap();
    drop(app);
    log.close().await.unwrap();
    let mut scanned = 0;
    let mut principal_seen = false;
    let mut pending = vec![dir.path().to_owned()];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        scanned += bytes.len();
        for needle in [token.as_str(), signature.as_str(), &token[..40]] {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "{} holds the token (or a piece of it)",
                path.display()
            );
        }
        let principal = format!("{ISSUER}#alice");
        principal_seen |= bytes
            .windows(principal.len())
            .any(|w| w == principal.as_bytes());
    }
    assert!(scanned > 0, "the log wrote nothing");
    assert!(principal_seen, "records carry the principal");
}
