//! Streaming sends (SSE framing, event ids, resumption) and the blocking send through the worker.

use super::*;

#[tokio::test]
async fn streaming_send_yields_the_task_then_events_each_with_an_id_and_resumes() {
    let (app, worker) = app_with_worker(HttpConfig::default()).await;
    let reply = rpc(
        &app,
        // Slow enough that the stream starts before the task ends.
        envelope(
            json!("s1"),
            "SendStreamingMessage",
            send_params("sleep 0.6", false),
        ),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let frames = reply.frames();
    assert!(frames.len() >= 3, "{frames:?}");
    let first = frames[0].json();
    assert!(first["result"]["task"].is_object(), "{first}");
    let task_id = first["result"]["task"]["id"].as_str().unwrap().to_owned();
    let mut last_position = None;
    for frame in &frames {
        assert_eq!(frame.event, None, "{frame:?}");
        let position: u64 = frame.id.as_deref().expect("an id line").parse().unwrap();
        assert!(Some(position) >= last_position, "positions never go back");
        last_position = Some(position);
        assert_eq!(
            frame.json()["id"],
            "s1",
            "every frame carries the request id"
        );
    }
    let last = frames.last().unwrap().json();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
    assert!(
        frames
            .iter()
            .any(|f| f.json()["result"]["artifactUpdate"].is_object())
    );

    // Resume after the first frame: exactly the frames that followed it.
    let request = Request::post("/")
        .header(header::CONTENT_TYPE, "application/json")
        .header("last-event-id", frames[0].id.clone().unwrap())
        .body(Body::from(
            envelope(json!("s1"), "SubscribeToTask", json!({"id": task_id})).to_string(),
        ))
        .unwrap();
    let resumed = call(&app, request).await.frames();
    assert_eq!(resumed, frames[1..].to_vec());

    // Without Last-Event-ID, subscribing to the finished task is refused before any stream:
    // a plain JSON-RPC error response (A2A §3.1.6), not an SSE stream.
    let reply = rpc(
        &app,
        envelope(json!(3), "SubscribeToTask", json!({"id": task_id})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.content_type().starts_with("application/json"));
    assert_eq!(reply.json()["error"]["code"], -32004);
    assert_eq!(reply.json()["id"], 3);
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn blocking_send_completes_through_the_worker() {
    let (app, worker) = app_with_worker(HttpConfig::default()).await;
    let reply = rpc(
        &app,
        envelope(json!(1), "SendMessage", send_params("round trip", false)),
    )
    .await;
    let body = reply.json();
    let task = &body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
    let parts = task["artifacts"][0]["parts"].as_array().unwrap();
    let text: String = parts.iter().map(|p| p["text"].as_str().unwrap()).collect();
    assert_eq!(text, "echo: round trip");
    worker.shutdown().await.unwrap();
}
