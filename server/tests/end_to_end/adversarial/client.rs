//! A raw HTTP/1.1 client over one socket: requests are bytes as written, responses are
//! parsed just enough to check them (status, headers, a body by length, chunks or close).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// How long a read waits before the case fails (an upper bound against hangs, never a
/// timing assertion).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// One response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; for an event stream, the `data:` of its last frame.
    pub fn json(&self) -> Value {
        let text = self.text();
        if self
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"))
        {
            let last = text
                .split("\n\n")
                .filter_map(|frame| {
                    frame
                        .lines()
                        .find_map(|l| l.strip_prefix("data:"))
                        .map(str::trim)
                })
                .last()
                .unwrap_or("null");
            return serde_json::from_str(last).unwrap_or(Value::Null);
        }
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// The JSON-RPC error code, 0 for a result, `None` for a body that is neither.
    pub fn rpc_code(&self) -> Option<i64> {
        let json = self.json();
        if json.is_null() {
            // JSON serde_json will not read back (an echoed lone surrogate): the code is
            // still where the server writes it.
            let text = self.text();
            let rest = text.split_once(r#""error":{"code":"#)?.1;
            let end = rest.find([',', '}'])?;
            return rest[..end].parse().ok();
        }
        if json.get("result").is_some() {
            return Some(0);
        }
        json.get("error")?.get("code")?.as_i64()
    }

    pub fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// A connection to the server.
pub struct Conn {
    pub stream: TcpStream,
    /// Bytes read past the last response.
    buffered: Vec<u8>,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        Conn::over(stream)
    }

    pub fn over(stream: TcpStream) -> Conn {
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        Conn {
            stream,
            buffered: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Send `request` and read one response.
    pub fn exchange(&mut self, request: &[u8]) -> Option<Response> {
        // The server may refuse and close before reading everything: the answer counts.
        let _ = self.send(request);
        self.read_response()
    }

    /// The next response, or `None` when the server closed the connection without one.
    pub fn read_response(&mut self) -> Option<Response> {
        loop {
            let response = self.read_one()?;
            // An interim answer (100 Continue) precedes the response.
            if !(100..200).contains(&response.status) {
                return Some(response);
            }
        }
    }

    fn read_one(&mut self) -> Option<Response> {
        let head_end = loop {
            if let Some(at) = find(&self.buffered, b"\r\n\r\n") {
                break at;
            }
            if !self.fill()? {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buffered[..head_end]).into_owned();
        self.buffered.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status = lines.next()?.split(' ').nth(1)?.parse::<u16>().ok()?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let body = if status == 204 || status == 304 || (100..200).contains(&status) {
            Vec::new()
        } else if let Some(length) = get("content-length") {
            let length: usize = length.parse().ok()?;
            while self.buffered.len() < length {
                if !self.fill()? {
                    return None;
                }
            }
            self.buffered.drain(..length).collect()
        } else if get("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
            self.read_chunked()?
        } else {
            while self.fill()? {}
            std::mem::take(&mut self.buffered)
        };
        Some(Response {
            status,
            headers,
            body,
        })
    }

    fn read_chunked(&mut self) -> Option<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(at) = find(&self.buffered, b"\r\n") {
                    break at;
                }
                if !self.fill()? {
                    return None;
                }
            };
            let size_text = String::from_utf8_lossy(&self.buffered[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            self.buffered.drain(..line_end + 2);
            while self.buffered.len() < size + 2 {
                if !self.fill()? {
                    return None;
                }
            }
            body.extend(self.buffered.drain(..size));
            self.buffered.drain(..2);
            if size == 0 {
                return Some(body);
            }
        }
    }

    /// Read more; `Some(false)` at the end of the stream, `None` on an error.
    fn fill(&mut self) -> Option<bool> {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => Some(false),
            Ok(n) => {
                self.buffered.extend_from_slice(&chunk[..n]);
                Some(true)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => Some(true),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                Some(false)
            }
            Err(e) => panic!("reading a response: {e}"),
        }
    }

    /// Whether the server has closed the connection (reads end), waiting up to `wait`.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        self.stream.set_read_timeout(Some(wait)).expect("timeout");
        let mut byte = [0u8; 1];
        let closed = match self.stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe),
        };
        self.stream
            .set_read_timeout(Some(PATIENCE))
            .expect("timeout");
        closed
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `POST path` with a JSON body and these extra header lines (each `Name: value`); `Host`
/// is loopback unless given.
pub fn post(path: &str, body: &[u8], headers: &[&str]) -> Vec<u8> {
    let mut head = format!("POST {path} HTTP/1.1\r\n");
    if !headers
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("host:"))
    {
        head.push_str("Host: 127.0.0.1\r\n");
    }
    if !headers
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("content-type:"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    request
}

/// A JSON-RPC request body with id 1.
pub fn rpc(method: &str, params: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#).into_bytes()
}

/// A raw request: the head lines as given, `\n` written as CRLF (no Host or length added),
/// then the body.
pub fn raw(head: &str, body: &[u8]) -> Vec<u8> {
    let mut request = head.replace('\n', "\r\n").into_bytes();
    request.extend_from_slice(body);
    request
}
