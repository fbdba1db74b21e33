//! A real webhook receiver for the push tests and benchmark: an HTTP/1.1 server on a
//! loopback port that keeps every request it gets (headers, body, when), answers a chosen
//! status, counts the connections made to it, and can go down (its port closed, open
//! connections cut) and come back on the same port.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Got {
    /// The request target (path and query).
    pub path: String,
    /// Its headers, names lowercase, in order.
    pub headers: Vec<(String, String)>,
    /// Its body, as sent.
    pub body: Vec<u8>,
    /// When its body was read.
    pub at: Instant,
    /// The same moment on the wall clock (the lag of the push bench).
    pub wall: std::time::SystemTime,
}

impl Got {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Default)]
struct State {
    got: std::sync::Mutex<Vec<Got>>,
    status: AtomicU16,
    /// Milliseconds to wait before answering each request.
    delay_ms: AtomicU64,
    connections: AtomicUsize,
    arrived: Notify,
}

/// A webhook receiver. Stops when dropped.
pub struct Receiver {
    addr: SocketAddr,
    state: Arc<State>,
    serving: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Receiver {
    /// A receiver on a free loopback port answering `status` to every request.
    pub async fn start(status: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(State::default());
        state.status.store(status, Ordering::SeqCst);
        let serving = tokio::spawn(serve(listener, state.clone()));
        Self {
            addr,
            state,
            serving: std::sync::Mutex::new(Some(serving)),
        }
    }

    /// The URL of `path` on it (`/hook` style).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Answer `status` from now on.
    pub fn answer(&self, status: u16) {
        self.state.status.store(status, Ordering::SeqCst);
    }

    /// Wait `delay` before answering each request from now on (a slow receiver).
    pub fn delay(&self, delay: Duration) {
        self.state
            .delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Close the port and cut every open connection: senders get refused connections.
    pub fn down(&self) {
        if let Some(serving) = self.serving.lock().expect("lock").take() {
            serving.abort();
        }
    }

    /// Listen on the same port again.
    pub async fn up(&self) {
        let mut listener = None;
        for _ in 0..100 {
            match TcpListener::bind(self.addr).await {
                Ok(bound) => {
                    listener = Some(bound);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        let listener = listener.expect("the port again");
        *self.serving.lock().expect("lock") =
            Some(tokio::spawn(serve(listener, self.state.clone())));
    }

    /// Every request so far.
    pub fn got(&self) -> Vec<Got> {
        self.state.got.lock().expect("lock").clone()
    }

    /// How many requests so far.
    pub fn count(&self) -> usize {
        self.state.got.lock().expect("lock").len()
    }

    /// How many connections were made to it.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Wait until it has `count` requests or `timeout` passed; every request so far.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<Got> {
        self.wait_until(count, timeout).await;
        self.got()
    }

    /// Wait until it has `count` requests or `timeout` passed; how many it has (nothing
    /// copied: what the push bench waits with while it measures its CPU).
    pub async fn wait_until(&self, count: usize, timeout: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.state.arrived.notified();
            let got = self.count();
            if got >= count {
                return got;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return self.count();
            }
        }
    }
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.down();
    }
}

/// Accept until aborted; aborting it cuts its connections too (they are its children).
async fn serve(listener: TcpListener, state: Arc<State>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                state.connections.fetch_add(1, Ordering::SeqCst);
                connections.spawn(connection(stream, state.clone()));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Requests on one keep-alive connection until it closes or one is malformed.
async fn connection(stream: TcpStream, state: Arc<State>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let path = line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut headers = Vec::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let Some((name, value)) = line.split_once(':') else {
                return;
            };
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim().to_owned();
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            }
            headers.push((name, value));
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let delay = state.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        let status = state.status.load(Ordering::SeqCst);
        state.got.lock().expect("lock").push(Got {
            path,
            headers,
            body,
            at: Instant::now(),
            wall: std::time::SystemTime::now(),
        });
        state.arrived.notify_waiters();
        let answer = format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\n\r\nok");
        if write.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// `POST url` with a JSON body over a fresh connection: the answer's body as JSON (a
/// JSON-RPC client for the suites that run `serve` as a child process).
pub async fn post_json(url: &str, body: &serde_json::Value) -> serde_json::Value {
    let body = body.to_string();
    let answer = request(
        url,
        &format!(
            "POST {{path}} HTTP/1.1\r\nHost: {{host}}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    serde_json::from_str(&answer).unwrap_or(serde_json::Value::Null)
}

/// `method url` with an optional JSON body over a fresh connection: the status and the body.
pub async fn call(method: &str, url: &str, body: Option<&serde_json::Value>) -> (u16, String) {
    let body = body.map(ToString::to_string).unwrap_or_default();
    let template = format!(
        "{method} {{path}} HTTP/1.1\r\nHost: {{host}}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, body) = exchange(url, &template).await;
    (status, body)
}

/// `GET url` over a fresh connection: the answer's body.
pub async fn get_text(url: &str) -> String {
    request(
        url,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    )
    .await
}

/// Send `template` (its `{path}` and `{host}` filled in from `url`) and read the answer's
/// body (a `Connection: close` answer, read to its end).
async fn request(url: &str, template: &str) -> String {
    exchange(url, template).await.1
}

/// [`request`], with the answer's status.
async fn exchange(url: &str, template: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    let mut stream = TcpStream::connect(host).await.expect("connect");
    let head = template.replace("{path}", path).replace("{host}", host);
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return (status, dechunk(body));
    }
    (status, body.to_owned())
}

/// A chunked body's bytes.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}
