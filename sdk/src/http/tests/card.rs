//! The card (ETag, 304), a prefixed RPC path, health, routing errors and `/metrics`.

use super::*;

/// `GET /metrics` of `app`: 200 with an OpenMetrics body, its text.
async fn scrape(app: &Router) -> String {
    let reply = call(app, Request::get("/metrics").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        reply
            .content_type()
            .starts_with("application/openmetrics-text")
    );
    reply.text()
}

#[tokio::test]
async fn the_card_has_an_etag_and_answers_304() {
    let bridge = bridge().await;
    let mut expected = bridge.agent_card().clone();
    crate::http::card::offer_http_json(&mut expected);
    let expected = serde_json::to_value(expected).unwrap();
    let app = router(bridge, HttpConfig::default());
    let mut etags = Vec::new();
    for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
        let reply = call(&app, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.content_type(), "application/json");
        assert_eq!(reply.json(), expected);
        assert_eq!(reply.headers[header::CACHE_CONTROL], "public, max-age=300");
        let etag = reply.headers[header::ETAG].to_str().unwrap().to_owned();
        assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34);
        etags.push(etag);
    }
    assert_eq!(etags[0], etags[1]);
    let etag = &etags[0];
    for (if_none_match, status) in [
        (etag.clone(), StatusCode::NOT_MODIFIED),
        (format!("W/{etag}"), StatusCode::NOT_MODIFIED),
        (format!("\"other\", {etag}"), StatusCode::NOT_MODIFIED),
        ("*".to_owned(), StatusCode::NOT_MODIFIED),
        ("\"other\"".to_owned(), StatusCode::OK),
    ] {
        let request = Request::get("/.well-known/agent-card.json")
            .header(header::IF_NONE_MATCH, &if_none_match)
            .body(Body::empty())
            .unwrap();
        let reply = call(&app, request).await;
        assert_eq!(reply.status, status, "{if_none_match}");
        assert_eq!(reply.headers[header::ETAG], etag.as_str());
        if status == StatusCode::NOT_MODIFIED {
            assert!(reply.body.is_empty());
        }
    }
    // Last-Modified, and If-Modified-Since when no If-None-Match is sent.
    let reply = call(
        &app,
        Request::get("/.well-known/agent-card.json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let last_modified = reply.headers[header::LAST_MODIFIED]
        .to_str()
        .unwrap()
        .to_owned();
    let built = httpdate::parse_http_date(&last_modified).unwrap();
    let earlier = httpdate::fmt_http_date(built - Duration::from_secs(1));
    let later = httpdate::fmt_http_date(built + Duration::from_secs(3600));
    for (headers, status) in [
        (
            vec![(header::IF_MODIFIED_SINCE, last_modified.clone())],
            StatusCode::NOT_MODIFIED,
        ),
        (
            vec![(header::IF_MODIFIED_SINCE, later)],
            StatusCode::NOT_MODIFIED,
        ),
        (vec![(header::IF_MODIFIED_SINCE, earlier)], StatusCode::OK),
        (
            vec![(header::IF_MODIFIED_SINCE, "not a date".to_owned())],
            StatusCode::OK,
        ),
        // If-None-Match wins over If-Modified-Since.
        (
            vec![
                (header::IF_NONE_MATCH, "\"other\"".to_owned()),
                (header::IF_MODIFIED_SINCE, last_modified.clone()),
            ],
            StatusCode::OK,
        ),
    ] {
        let mut request = Request::get("/.well-known/agent-card.json");
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        let reply = call(&app, request.body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, status, "{headers:?}");
        assert_eq!(reply.headers[header::LAST_MODIFIED], last_modified.as_str());
    }
}

#[tokio::test]
async fn a_prefixed_rpc_path_serves_rpc_and_the_card_under_it() {
    let app = router(
        bridge().await,
        HttpConfig {
            rpc_path: "/a2a".to_owned(),
            ..HttpConfig::default()
        },
    );
    for path in ["/a2a", "/a2a/"] {
        let request = Request::post(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(rpc_text("GetTask", r#"{"id":"n"}"#)))
            .unwrap();
        assert_eq!(call(&app, request).await.json()["error"]["code"], -32001);
    }
    for path in [
        "/.well-known/agent-card.json",
        "/a2a/.well-known/agent-card.json",
        "/a2a/.well-known/agent.json",
    ] {
        let reply = call(&app, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert!(reply.headers.contains_key(header::ETAG));
    }
    let reply = call(&app, rpc_request(rpc_text("GetTask", "{}"))).await;
    assert_eq!(
        reply.status,
        StatusCode::NOT_FOUND,
        "/ is not the RPC path here"
    );
    let reply = call(
        &app,
        Request::head("/a2a/.well-known/agent-card.json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.body.is_empty());
}

#[tokio::test]
async fn health_routing_errors_and_methods() {
    let app = app().await;
    let reply = call(&app, Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(
        (reply.status, reply.text().as_str()),
        (StatusCode::OK, "ok")
    );

    let reply = call(&app, Request::get("/nope").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.json()["error"]["code"], 404);
    assert_eq!(reply.json()["error"]["status"], "NOT_FOUND");

    for method in ["GET", "PUT", "DELETE"] {
        let request = Request::builder()
            .method(method)
            .uri("/")
            .body(Body::empty())
            .unwrap();
        let reply = call(&app, request).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(reply.headers[header::ALLOW], "POST");
        assert_eq!(reply.json()["error"]["code"], 405);
    }
    let reply = call(&app, Request::post("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn metrics_count_requests_by_method_and_code() {
    let app = app().await;
    rpc(
        &app,
        envelope(json!(1), "SendMessage", send_params("a", true)),
    )
    .await;
    rpc(&app, envelope(json!(2), "GetTask", json!({"id": "nope"}))).await;
    rpc(&app, envelope(json!(3), "GetTask", json!({"id": "nope"}))).await;
    rpc(&app, envelope(json!(4), "NoSuchMethod", json!({}))).await;
    call(&app, rpc_request("{")).await;
    rpc(
        &app,
        envelope(json!(5), "SubscribeToTask", json!({"id": "nope"})),
    )
    .await;
    let text = scrape(&app).await;
    for line in [
        r#"agentlog_rpc_requests_total{method="SendMessage",code="0"} 1"#,
        r#"agentlog_rpc_requests_total{method="GetTask",code="-32001"} 2"#,
        r#"agentlog_rpc_requests_total{method="unknown",code="-32601"} 1"#,
        r#"agentlog_rpc_requests_total{method="unknown",code="-32700"} 1"#,
        r#"agentlog_rpc_requests_total{method="SubscribeToTask",code="-32001"} 1"#,
        r#"agentlog_rpc_request_duration_seconds_count{method="GetTask"} 2"#,
        "agentlog_view_lag_records ",
        "agentlog_view_records_total ",
        "agentlog_view_undecodable_records_total 0",
        // A current-thread test runtime: one worker.
        "agentlog_runtime_worker_threads 1",
        "# EOF",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[tokio::test]
async fn metrics_count_log_operations_when_given_the_logs_metrics() {
    use crate::log::layers::{FaultLayer, Faults, LogMetrics, MetricsLayer};
    let faults = Faults::new();
    let metrics = LogMetrics::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(FaultLayer::new(faults.clone()))
        .layer(MetricsLayer::new(metrics.clone()));
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("t"))
        .await
        .unwrap();
    let config = HttpConfig {
        log_metrics: Some(metrics.clone()),
        ..HttpConfig::default()
    };
    let counted = router(bridge, config);
    rpc(
        &counted,
        envelope(json!(1), "SendMessage", send_params("a", true)),
    )
    .await;
    faults.drop_connection(1);
    let topic = crate::log::TopicRef::new("agentlog", "t.events");
    assert!(log.end_offsets(&topic).await.is_err());
    let text = scrape(&counted).await;
    for line in [
        r#"agentlog_log_operations_total{op="append_all",outcome="ok"} 1"#,
        r#"agentlog_log_operations_total{op="end_offsets",outcome="unavailable"} 1"#,
        r#"agentlog_log_operation_duration_seconds_count{op="append_all"} 1"#,
        r#"agentlog_log_operation_duration_seconds_bucket{le="+Inf",op="append_all"} 1"#,
        // The command goes to the events topic and its copy to the commands topic.
        r#"agentlog_log_records_total{op="append_all"} 2"#,
        r#"agentlog_log_bytes_total{op="append_all"} "#,
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    // Kinds that did not occur, and operations never called, have no series.
    assert!(!text.contains(r#"outcome="corrupt""#), "{text}");
    assert!(!text.contains(r#"op="leave""#), "{text}");
    // Without the field, no log metrics.
    let plain = scrape(&app().await).await;
    assert!(!plain.contains("agentlog_log_operations_total{"), "{plain}");
}

#[tokio::test]
async fn scraping_in_a_loop_reaches_the_log_at_most_once_a_second() {
    use crate::log::layers::{LogMetrics, LogOp, MetricsLayer};
    let metrics = LogMetrics::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(MetricsLayer::new(metrics.clone()));
    let bridge = Bridge::open(log, BridgeConfig::new("t")).await.unwrap();
    let app = router(bridge, HttpConfig::default());
    let before = metrics.calls(LogOp::EndOffsets);
    let first = scrape(&app).await;
    assert!(first.contains("agentlog_view_lag_records 0"), "{first}");
    for _ in 0..50 {
        scrape(&app).await;
    }
    let measured = metrics.calls(LogOp::EndOffsets) - before;
    assert_eq!(measured, 1, "51 scrapes asked the log {measured} times");
}

#[tokio::test]
async fn the_log_metrics_router_serves_only_the_logs_metrics() {
    use crate::log::layers::{LogMetrics, MetricsLayer};
    let metrics = LogMetrics::new();
    let log = crate::log::open("memory://")
        .await
        .unwrap()
        .layer(MetricsLayer::new(metrics.clone()));
    let topic = crate::log::TopicRef::new("s", "t");
    log.ensure_topic(&topic, 1).await.unwrap();
    log.append(&topic, b"k", vec![Bytes::from_static(b"abcd")])
        .await
        .unwrap();
    let app = log_metrics_router(metrics);
    let text = scrape(&app).await;
    for line in [
        r#"agentlog_log_operations_total{op="ensure_topic",outcome="ok"} 1"#,
        r#"agentlog_log_records_total{op="append"} 1"#,
        r#"agentlog_log_bytes_total{op="append"} 4"#,
        "# EOF",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(!text.contains("agentlog_rpc_"), "{text}");
    let reply = call(&app, Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}
