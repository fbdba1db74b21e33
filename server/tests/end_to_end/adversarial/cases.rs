//! A case: the raw request, and the status, JSON-RPC code and message parts that must come
//! back. A group's cases run one connection each; every failure is collected, then all are
//! reported together.

use std::net::SocketAddr;

use crate::adversarial::client::{Conn, Response, post, rpc};

pub struct Case {
    pub name: String,
    pub request: Vec<u8>,
    pub status: u16,
    /// The JSON-RPC code: `Some(0)` a result, `None` a body that is not JSON-RPC (or none).
    pub code: Option<i64>,
    /// Substrings of `error.message` (or of the body, when it is not JSON-RPC).
    pub says: Vec<&'static str>,
    /// Response headers that must be present, `(name, value)`; an empty value: any.
    pub headers: Vec<(&'static str, &'static str)>,
    /// The connection is closed with no response at all (hyper refuses before parsing).
    pub no_answer: bool,
}

impl Case {
    pub fn new(name: impl Into<String>, request: Vec<u8>, status: u16, code: Option<i64>) -> Case {
        Case {
            name: name.into(),
            request,
            status,
            code,
            says: Vec::new(),
            headers: Vec::new(),
            no_answer: false,
        }
    }

    pub fn says(mut self, says: &[&'static str]) -> Case {
        self.says.extend_from_slice(says);
        self
    }

    pub fn header(mut self, name: &'static str, value: &'static str) -> Case {
        self.headers.push((name, value));
        self
    }

    /// The server may close without answering (hyper's own refusals of unparsable heads
    /// answer 400 or close; either is a refusal that served nothing).
    pub fn or_no_answer(mut self) -> Case {
        self.no_answer = true;
        self
    }

    fn check(&self, response: Option<&Response>) -> Result<(), String> {
        let Some(response) = response else {
            return if self.no_answer {
                Ok(())
            } else {
                Err(format!("no response (wanted {})", self.status))
            };
        };
        let mut wrong = Vec::new();
        if response.status != self.status {
            wrong.push(format!(
                "status {} (wanted {})",
                response.status, self.status
            ));
        }
        let code = response.rpc_code();
        if code != self.code {
            wrong.push(format!("code {code:?} (wanted {:?})", self.code));
        }
        let json = response.json();
        let message = json["error"]["message"]
            .as_str()
            .map_or_else(|| response.text(), str::to_owned);
        for part in &self.says {
            if !message.contains(part) {
                wrong.push(format!("message lacks {part:?}"));
            }
        }
        for (name, value) in &self.headers {
            match response.header(name) {
                None => wrong.push(format!("no {name} header")),
                Some(got) if !value.is_empty() && !got.eq_ignore_ascii_case(value) => {
                    wrong.push(format!("{name}: {got} (wanted {value})"));
                }
                Some(_) => {}
            }
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            let body = response.text();
            let shown: String = body.chars().take(300).collect();
            Err(format!("{}; body {shown}", wrong.join(", ")))
        }
    }
}

/// A JSON-RPC request to `/` that must be answered `200` with `code`.
pub fn rpc_case(name: impl Into<String>, body: impl Into<Vec<u8>>, code: i64) -> Case {
    Case::new(
        name,
        post("/", &body.into(), &["A2A-Version: 1.0"]),
        200,
        Some(code),
    )
}

/// A JSON-RPC request for `method` with `params` spliced in as given.
pub fn method_case(name: impl Into<String>, method: &str, params: &str, code: i64) -> Case {
    rpc_case(name, rpc(method, params), code)
}

/// Run `cases` against `addr`, one connection each; the failures, by name.
pub fn run(group: &str, addr: SocketAddr, cases: &[Case]) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        let mut conn = Conn::open(addr);
        let response = conn.exchange(&case.request);
        if let Err(why) = case.check(response.as_ref()) {
            failures.push(format!("[{group}] {}: {why}", case.name));
        }
    }
    failures
}
