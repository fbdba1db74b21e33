//! On a real loopback port: TCP_NODELAY, shutdown, the body timeout, the connection bound.

use tokio::net::TcpListener;

use super::*;
use crate::http::connections::tune_accepted;

/// A `GetTask` of an unknown task over `stream` as raw HTTP/1.1, and the whole response.
async fn raw_get_task(mut stream: tokio::net::TcpStream) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = rpc_text("GetTask", r#"{"id":"nope"}"#);
    let request = format!(
        "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(PATIENCE, stream.read_to_string(&mut response))
        .await
        .unwrap()
        .unwrap();
    response
}

/// `app()` served on a loopback port until [`Running::stop`].
struct Running {
    address: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Through [`serve`], or [`serve_bounded`] with `max_connections`.
    async fn start(max_connections: Option<usize>) -> Running {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let app = app().await;
        let server = match max_connections {
            None => tokio::spawn(serve(listener, app, shutdown)),
            Some(bound) => tokio::spawn(serve_bounded(listener, app, bound, shutdown)),
        };
        Running {
            address,
            stop,
            server,
        }
    }

    /// Shut down, and wait for the server to return cleanly.
    async fn stop(self) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, self.server)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

#[tokio::test]
async fn accepted_sockets_get_nodelay() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (mut accepted, _) = listener.accept().await.unwrap();
    assert!(!accepted.nodelay().unwrap());
    tune_accepted(&mut accepted);
    assert!(accepted.nodelay().unwrap());
    drop(client);
}

#[tokio::test]
async fn serves_on_loopback_and_shuts_down() {
    let running = Running::start(None).await;
    let stream = tokio::net::TcpStream::connect(running.address)
        .await
        .unwrap();
    let response = raw_get_task(stream).await;
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.contains("-32001"), "{response}");
    running.stop().await;
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_gets_408() {
    let config = HttpConfig {
        body_timeout: Duration::from_millis(100),
        ..HttpConfig::default()
    };
    let app = router(bridge().await, config);
    // The head, a first chunk, then nothing more.
    let first = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from_static(
        b"{\"jsonrpc\":",
    ))]);
    let trickle = futures::StreamExt::chain(first, futures::stream::pending());
    let started = std::time::Instant::now();
    let reply = call(&app, rpc_request(Body::from_stream(trickle))).await;
    assert_eq!(reply.status, StatusCode::REQUEST_TIMEOUT);
    assert!(started.elapsed() < Duration::from_secs(5));
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(body["id"].is_null());
    // The server still serves.
    let fine = rpc(&app, envelope(json!(1), "GetTask", json!({"id": "nope"}))).await;
    assert_eq!(fine.status, StatusCode::OK);
}

#[tokio::test]
async fn connections_past_the_bound_get_503_at_once() {
    let running = Running::start(Some(1)).await;
    let address = running.address;
    // One connection open and idle holds the only place.
    let idle = tokio::net::TcpStream::connect(address).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = tokio::net::TcpStream::connect(address).await.unwrap();
    let response = raw_get_task(refused).await;
    assert!(response.starts_with("HTTP/1.1 503"), "{response}");
    assert!(response.contains("retry-after: 1"), "{response}");
    assert!(response.contains("\"kind\":\"overloaded\""), "{response}");
    // Its place given back, the next connection is served.
    drop(idle);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let served = tokio::net::TcpStream::connect(address).await.unwrap();
    let response = raw_get_task(served).await;
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    running.stop().await;
}
