//! A small A2A 1.0 JSON-RPC client over HTTP: card discovery, calls, and SSE streams.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agentlog::telemetry::{Kind, Parent, Span};
use agentlog_wire::a2a::{AgentCard, AgentInterface};
use agentlog_wire::trace::{TRACEPARENT, TRACESTATE, TraceContext};
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use url::Url;

use super::{CliError, CliResult};

/// The well-known path of the agent card, relative to the agent's base URL.
const CARD_PATH: &str = ".well-known/agent-card.json";

/// A client of one agent's JSON-RPC endpoint.
#[derive(Debug)]
pub(super) struct A2aClient {
    http: reqwest::Client,
    endpoint: Url,
    tenant: Option<String>,
    next_id: AtomicU64,
    /// `Authorization` of every call (never of the public card's fetch).
    authorization: Option<HeaderValue>,
    /// The W3C trace context of every call, if any.
    trace: Option<TraceContext>,
}

impl A2aClient {
    /// Discover the agent at `url`: read its card at `<url>/.well-known/agent-card.json` and
    /// use the card's first JSONRPC 1.x interface. When there is no card there (or `url` is
    /// not a base URL), `url` itself is taken as the JSON-RPC endpoint.
    pub(super) async fn discover(url: &str) -> CliResult<Self> {
        let base = base_url(url)?;
        let http = http_client()?;
        let card_url = card_url(&base);
        let response = get_card(&http, &card_url, url).await?;
        let card = if response.status().is_success() {
            response.json::<AgentCard>().await.ok()
        } else {
            None
        };
        let (endpoint, tenant) = match card {
            Some(card) => {
                let interface = pick_interface(&card).ok_or_else(|| {
                    CliError::msg(format!(
                        "the agent card at {card_url} offers no JSONRPC 1.0 interface (it offers: {})",
                        offered(&card)
                    ))
                })?;
                let endpoint = card_url.join(&interface.url).map_err(|e| {
                    CliError::msg(format!(
                        "the agent card at {card_url} has a bad interface URL {:?}: {e}",
                        interface.url
                    ))
                })?;
                (endpoint, interface.tenant.clone())
            }
            None => (base, None),
        };
        Ok(Self {
            http,
            endpoint,
            tenant,
            next_id: AtomicU64::new(1),
            authorization: None,
            trace: None,
        })
    }

    /// The same client sending `trace` (`traceparent`, `tracestate`) with every call.
    pub(super) fn with_trace(mut self, trace: Option<TraceContext>) -> Self {
        self.trace = trace;
        self
    }

    /// The same client sending `token` as a bearer token with every call.
    pub(super) fn with_token(mut self, token: Option<&str>) -> CliResult<Self> {
        if let Some(token) = token {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
                .map_err(|_| CliError::msg("the token is not a valid header value"))?;
            value.set_sensitive(true);
            self.authorization = Some(value);
        }
        Ok(self)
    }

    /// The tenant the card's interface asks for, to put in every request.
    pub(super) fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// The client span of one call of `method` (while this process exports spans), under the
    /// context this client was given; and the context the call sends: the span's, else the
    /// given one.
    fn span(&self, method: &'static str) -> (Span, Option<TraceContext>) {
        let span = Span::start(method, Kind::Client, Parent::Remote(self.trace.as_ref()));
        if span.is_some() {
            span.set("rpc.system", "a2a");
            span.set("rpc.method", method);
            if let Some(host) = self.endpoint.host_str() {
                span.set("server.address", host);
            }
            if let Some(port) = self.endpoint.port_or_known_default() {
                span.set("server.port", port);
            }
        }
        let sent = span
            .trace_context(self.trace.as_ref())
            .or_else(|| self.trace.clone());
        (span, sent)
    }

    fn request(
        &self,
        method: &str,
        params: &Value,
        accept: &'static str,
        trace: Option<&TraceContext>,
    ) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = self
            .http
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .header("A2A-Version", HeaderValue::from_static("1.0"))
            .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let request = match trace {
            Some(trace) if trace.tracestate().is_empty() => {
                request.header(TRACEPARENT, trace.traceparent())
            }
            Some(trace) => request
                .header(TRACEPARENT, trace.traceparent())
                .header(TRACESTATE, trace.tracestate()),
            None => request,
        };
        match &self.authorization {
            Some(value) => request.header(reqwest::header::AUTHORIZATION, value.clone()),
            None => request,
        }
    }

    /// Call `method` and return its `result`.
    pub(super) async fn call(&self, method: &'static str, params: &Value) -> CliResult<Value> {
        let (span, trace) = self.span(method);
        let result = span
            .in_scope(self.call_with(method, params, trace.as_ref()))
            .await;
        if let Err(error) = &result {
            mark_failed(&span, error);
        }
        result
    }

    async fn call_with(
        &self,
        method: &str,
        params: &Value,
        trace: Option<&TraceContext>,
    ) -> CliResult<Value> {
        let response = self
            .request(method, params, "application/json", trace)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| self.unreachable(&e))?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(value) if value.get("result").is_some() || value.get("error").is_some() => {
                rpc_result(value)
            }
            _ if !status.is_success() => Err(CliError::msg(format!(
                "{} answered HTTP {status}",
                self.endpoint
            ))),
            _ => Err(CliError::msg(format!(
                "{} did not answer with a JSON-RPC response",
                self.endpoint
            ))),
        }
    }

    /// Call a streaming `method`; each item is the `result` of one SSE frame. A JSON-RPC error
    /// (before or during the stream) is an `Err` item, after which the stream ends.
    pub(super) async fn stream(
        &self,
        method: &'static str,
        params: &Value,
    ) -> CliResult<BoxStream<'static, CliResult<Value>>> {
        let (span, trace) = self.span(method);
        let opened = self.open_stream(method, params, trace.as_ref()).await;
        let events = match opened {
            Ok(events) => events,
            Err(error) => {
                mark_failed(&span, &error);
                return Err(error);
            }
        };
        // The span lasts as long as the stream, and says how it ended.
        Ok(events
            .inspect(move |event| {
                if let Err(error) = event {
                    mark_failed(&span, error);
                }
            })
            .boxed())
    }

    async fn open_stream(
        &self,
        method: &str,
        params: &Value,
        trace: Option<&TraceContext>,
    ) -> CliResult<BoxStream<'static, CliResult<Value>>> {
        let response = self
            .request(method, params, "text/event-stream", trace)
            .header("Cache-Control", "no-store")
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            // An error detected before the stream started may come back as plain JSON.
            let body = response.bytes().await.map_err(|e| self.unreachable(&e))?;
            return match serde_json::from_slice::<Value>(&body) {
                Ok(value) if value.get("error").is_some() => Err(rpc_result(value)
                    .err()
                    .unwrap_or_else(|| CliError::msg("unexpected answer"))),
                _ => Err(CliError::msg(format!(
                    "{} answered HTTP {status} without an event stream",
                    self.endpoint
                ))),
            };
        }
        let endpoint = self.endpoint.to_string();
        let bytes = Box::pin(response.bytes_stream());
        let events = futures::stream::unfold(
            (bytes, SseParser::default(), Vec::<String>::new(), false),
            move |(mut bytes, mut parser, mut ready, done)| {
                let endpoint = endpoint.clone();
                async move {
                    if done {
                        return None;
                    }
                    loop {
                        if !ready.is_empty() {
                            let data = ready.remove(0);
                            let item = serde_json::from_str::<Value>(&data)
                                .map_err(|e| {
                                    CliError::msg(format!("bad event from {endpoint}: {e}"))
                                })
                                .and_then(rpc_result);
                            let done = item.is_err();
                            return Some((item, (bytes, parser, ready, done)));
                        }
                        match bytes.next().await {
                            Some(Ok(chunk)) => ready.extend(parser.push(&chunk)),
                            Some(Err(e)) => {
                                let err = CliError::msg(format!(
                                    "the event stream from {endpoint} broke: {}",
                                    chain(&e)
                                ));
                                return Some((Err(err), (bytes, parser, ready, true)));
                            }
                            None => {
                                ready.extend(parser.finish());
                                if ready.is_empty() {
                                    return None;
                                }
                            }
                        }
                    }
                }
            },
        );
        Ok(events.boxed())
    }

    fn unreachable(&self, err: &reqwest::Error) -> CliError {
        CliError::msg(format!("cannot reach {}: {}", self.endpoint, chain(err)))
    }
}

/// Mark a call's span failed: its JSON-RPC error code, or that it got no answer.
fn mark_failed(span: &Span, error: &CliError) {
    if !span.is_some() {
        return;
    }
    match error {
        CliError::Rpc { code, .. } => {
            span.set("rpc.jsonrpc.error_code", i32::try_from(*code).unwrap_or(0));
            span.fail("rpc_error");
        }
        _ => span.fail("no_answer"),
    }
}

/// An agent's card as fetched: where from, its JSON as served, and that JSON read as a card.
#[derive(Debug)]
pub(super) struct FetchedCard {
    /// The card's URL.
    pub(super) url: Url,
    /// The JSON as served (a signature covers the card's 1.0 fields only; see
    /// `agentlog_wire::a2a::card_payload`).
    pub(super) json: Value,
    /// The JSON read as an A2A 1.0 card (unknown and legacy 0.3 fields dropped).
    pub(super) card: AgentCard,
}

/// Fetch the card of the agent at `url`, found as [`A2aClient::discover`] finds it
/// (`<url>/.well-known/agent-card.json`, or `url` itself when it names a card). Unlike
/// `discover`, a missing or unreadable card is an error.
pub(super) async fn fetch_card(url: &str) -> CliResult<FetchedCard> {
    let base = base_url(url)?;
    let http = http_client()?;
    let card_url = card_url(&base);
    let response = get_card(&http, &card_url, url).await?;
    let status = response.status();
    if !status.is_success() {
        return Err(CliError::msg(format!(
            "no agent card at {card_url}: HTTP {status}"
        )));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| CliError::msg(format!("cannot read {card_url}: {}", chain(&e))))?;
    let json: Value = serde_json::from_slice(&body)
        .map_err(|e| CliError::msg(format!("the card at {card_url} is not JSON: {e}")))?;
    let card = agentlog_wire::a2a::from_json("AgentCard", &json)
        .map_err(|e| CliError::msg(format!("the card at {card_url} is not an A2A card: {e}")))?;
    Ok(FetchedCard {
        url: card_url,
        json,
        card,
    })
}

/// `url` as an http(s) base URL.
fn base_url(url: &str) -> CliResult<Url> {
    let base = Url::parse(url).map_err(|e| CliError::msg(format!("bad URL {url:?}: {e}")))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(CliError::msg(format!(
            "bad URL {url:?}: expected an http:// or https:// URL"
        )));
    }
    Ok(base)
}

fn http_client() -> CliResult<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("agentlog/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| CliError::msg(format!("cannot build an HTTP client: {}", chain(&e))))
}

/// `GET` the card at `card_url`; `url` is what the user gave, for the error.
async fn get_card(
    http: &reqwest::Client,
    card_url: &Url,
    url: &str,
) -> CliResult<reqwest::Response> {
    http.get(card_url.clone())
        .header(ACCEPT, "application/json")
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| CliError::msg(format!("cannot reach {url}: {}", chain(&e))))
}

/// `<base>/.well-known/agent-card.json`, keeping the base's path (as the Python SDK does);
/// a URL that already names a card is kept.
fn card_url(base: &Url) -> Url {
    if base.path().ends_with("/agent-card.json") {
        return base.clone();
    }
    let mut url = base.clone();
    let path = format!("{}/{CARD_PATH}", base.path().trim_end_matches('/'));
    url.set_path(&path);
    url.set_query(None);
    url
}

/// The first JSONRPC interface of protocol version 1.x (§8.3.2: first = preferred).
fn pick_interface(card: &AgentCard) -> Option<&AgentInterface> {
    card.supported_interfaces.iter().find(|i| {
        i.protocol_binding.eq_ignore_ascii_case("JSONRPC")
            && i.protocol_version.split('.').next() == Some("1")
    })
}

fn offered(card: &AgentCard) -> String {
    let all: Vec<String> = card
        .supported_interfaces
        .iter()
        .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
        .collect();
    if all.is_empty() {
        "nothing".to_owned()
    } else {
        all.join(", ")
    }
}

/// The `result` of a JSON-RPC response, or its `error` as [`CliError::Rpc`].
fn rpc_result(mut response: Value) -> CliResult<Value> {
    if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("unknown error")
            .to_owned();
        let message = match code {
            -31401 => format!("{message}; pass --token TOKEN (or set AGENTLOG_TOKEN)"),
            _ => message,
        };
        return Err(CliError::Rpc { code, message });
    }
    match response.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(CliError::msg("a JSON-RPC response without result or error")),
    }
}

/// An error and its causes on one line (reqwest's own message leaves the cause out).
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last().is_none_or(|last| !last.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// Splits a `text/event-stream` body into the `data` of each event. Fed bytes as they
/// arrive; lines may be split anywhere, even inside a UTF-8 character.
#[derive(Debug, Default)]
struct SseParser {
    pending: Vec<u8>,
    data: Vec<String>,
}

impl SseParser {
    /// Feed `chunk`; returns the data of every event it completed.
    fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            self.line(line, &mut events);
        }
        events
    }

    /// The end of the body: an event not closed by a blank line still counts.
    fn finish(&mut self) -> Vec<String> {
        let mut events = Vec::new();
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            let line = String::from_utf8_lossy(&rest).into_owned();
            self.line(line.trim_end_matches('\r'), &mut events);
        }
        self.line("", &mut events);
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<String>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                events.push(self.data.join("\n"));
                self.data.clear();
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            self.data
                .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
        }
        // `event:`, `id:`, `retry:` and `:` comments carry nothing we need.
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_survive_any_split() {
        let body =
            "data: {\"a\":\"é\"}\r\n\r\n: keep-alive\n\nevent: error\ndata: x\ndata: y\n\ndata:z";
        for split in 0..body.len() {
            let (a, b) = body.as_bytes().split_at(split);
            let mut parser = SseParser::default();
            let mut events = parser.push(a);
            events.extend(parser.push(b));
            events.extend(parser.finish());
            assert_eq!(
                events,
                vec!["{\"a\":\"é\"}", "x\ny", "z"],
                "split at {split}"
            );
        }
    }

    #[test]
    fn card_url_keeps_the_base_path() {
        let card = |s: &str| card_url(&Url::parse(s).unwrap()).to_string();
        assert_eq!(card("http://h:1"), "http://h:1/.well-known/agent-card.json");
        assert_eq!(
            card("http://h/a2a/"),
            "http://h/a2a/.well-known/agent-card.json"
        );
        assert_eq!(
            card("http://h/.well-known/agent-card.json"),
            "http://h/.well-known/agent-card.json"
        );
    }

    #[test]
    fn the_first_jsonrpc_1x_interface_wins() {
        let card: AgentCard = serde_json::from_value(json!({
            "supportedInterfaces": [
                {"url": "http://h/g", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "http://h/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t"}
            ]
        }))
        .unwrap();
        let interface = pick_interface(&card).unwrap();
        assert_eq!(interface.url, "/rpc");
        assert_eq!(interface.tenant.as_deref(), Some("t"));
        assert_eq!(offered(&card), "GRPC 1.0, JSONRPC 0.3, JSONRPC 1.0");
    }

    #[test]
    fn rpc_errors_keep_code_and_message() {
        let err = rpc_result(json!({"jsonrpc": "2.0", "id": 1,
            "error": {"code": -32001, "message": "Task not found: abc"}}))
        .unwrap_err();
        assert_eq!(err.to_string(), "Task not found: abc (-32001)");
        let ok = rpc_result(json!({"jsonrpc": "2.0", "id": 1, "result": {"x": 1}})).unwrap();
        assert_eq!(ok, json!({"x": 1}));
    }
}
