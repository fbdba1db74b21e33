//! One client over any of the three bindings: a call is an A2A method and its params in the
//! JSON-RPC shape; JSON-RPC posts them as they are, HTTP+JSON makes the route of the method
//! (the tenant in the path), gRPC converts them to the proto request through the wire types
//! (the SDK's conversions) and its answer back. Every answer comes back as A2A 1.0 JSON, every
//! refusal as its `ErrorInfo` reason, metadata and message, so the three can be compared.

use std::net::SocketAddr;

use agentlog::grpc::proto::a2a_service_client::A2aServiceClient;
use agentlog::grpc::proto::{self as pb};
use agentlog_wire::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig,
};
use futures::StreamExt as _;
use serde_json::{Value, json};
use tonic::transport::Channel;
use tonic_types::StatusExt as _;

/// Params in the JSON-RPC shape as the wire type the call takes.
macro_rules! parse {
    ($params:expr) => {
        serde_json::from_value($params).expect("params the wire types take")
    };
}

/// A proto answer, converted to the wire type, as JSON.
macro_rules! json_of {
    ($converted:expr) => {
        serde_json::to_value($converted.expect("a proto answer the wire types take")).expect("JSON")
    };
}

/// A2A's three protocol bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    HttpJson,
    Grpc,
}

pub const BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];

/// What a refused call says, on any binding.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub reason: String,
    pub message: String,
    pub metadata: Value,
}

impl Refusal {
    pub fn to_json(&self) -> Value {
        json!({"reason": self.reason, "message": self.message, "metadata": self.metadata})
    }
}

/// A client of one server over one binding.
#[derive(Debug, Clone)]
pub struct Client {
    pub binding: Binding,
    /// The service parameters every call carries: HTTP headers, gRPC metadata.
    parameters: Vec<(&'static str, String)>,
    http: reqwest::Client,
    base: String,
    grpc: A2aServiceClient<Channel>,
}

/// A call's answer, or the error that refused it.
pub type Answer = Result<Value, Refusal>;

impl Client {
    pub async fn connect(binding: Binding, http: SocketAddr, grpc: SocketAddr) -> Self {
        let channel = Channel::from_shared(format!("http://{grpc}"))
            .expect("uri")
            .connect()
            .await
            .expect("connect");
        Self {
            binding,
            parameters: vec![("a2a-version", "1.0".to_owned())],
            http: reqwest::Client::new(),
            base: format!("http://{http}"),
            grpc: A2aServiceClient::new(channel),
        }
    }

    /// This client with the service parameter `name` (lowercase) set to `value` on every call.
    pub fn with(&self, name: &'static str, value: &str) -> Self {
        let mut client = self.clone();
        client.parameters.retain(|(n, _)| *n != name);
        client.parameters.push((name, value.to_owned()));
        client
    }

    /// A unary method.
    pub async fn call(&self, method: &str, params: Value) -> Answer {
        match self.binding {
            Binding::JsonRpc => {
                let reply = self.json_rpc(method, &params).send().await.expect("send");
                let body: Value = reply.json().await.expect("a JSON-RPC reply");
                rpc_answer(&body)
            }
            Binding::HttpJson => {
                let reply = self.rest(method, &params).send().await.expect("send");
                let status = reply.status();
                let body: Value = reply.json().await.expect("a JSON body");
                if status.is_success() {
                    Ok(body)
                } else {
                    Err(rest_refusal(&body))
                }
            }
            Binding::Grpc => self.grpc_call(method, params).await,
        }
    }

    /// A streaming method: its events, an error after the first one as a last `{"error"}`
    /// event; an error before any is the call's.
    pub async fn stream(&self, method: &str, params: Value) -> Result<Vec<Value>, Refusal> {
        if self.binding == Binding::Grpc {
            return self.grpc_stream(method, params).await;
        }
        let request = match self.binding {
            Binding::JsonRpc => self.json_rpc(method, &params),
            _ => self.rest(method, &params),
        };
        let reply = request.send().await.expect("send");
        let sse = reply
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !sse {
            let body: Value = reply.json().await.expect("a JSON body");
            return Err(match self.binding {
                Binding::JsonRpc => rpc_answer(&body).expect_err("an error before the stream"),
                _ => rest_refusal(&body),
            });
        }
        let mut text = String::new();
        let mut body = reply.bytes_stream();
        while let Some(chunk) = body.next().await {
            text.push_str(std::str::from_utf8(&chunk.expect("a chunk")).expect("UTF-8"));
        }
        let mut events = Vec::new();
        for frame in text.split("\n\n").filter(|f| !f.trim().is_empty()) {
            let data: String = frame
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            let value: Value = serde_json::from_str(&data).expect("an SSE frame of JSON");
            events.push(match self.binding {
                Binding::JsonRpc => match rpc_answer(&value) {
                    Ok(event) => event,
                    Err(refusal) => json!({"error": refusal.to_json()}),
                },
                _ if value.get("error").is_some() => {
                    json!({"error": rest_refusal(&value).to_json()})
                }
                _ => value,
            });
        }
        Ok(events)
    }

    fn json_rpc(&self, method: &str, params: &Value) -> reqwest::RequestBuilder {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.headers(self.http.post(format!("{}/", self.base)).json(&body))
    }

    /// The HTTP+JSON request standing for `method`: its route (under `/{tenant}` when the
    /// params name one), its query or body.
    fn rest(&self, method: &str, params: &Value) -> reqwest::RequestBuilder {
        let mut params = params.clone();
        let tenant = params
            .as_object_mut()
            .and_then(|p| p.remove("tenant"))
            .and_then(|t| t.as_str().map(|t| format!("/{t}")))
            .unwrap_or_default();
        let base = format!("{}{tenant}", self.base);
        let id = params["id"].as_str().unwrap_or_default().to_owned();
        let request = match method {
            "SendMessage" => self.http.post(format!("{base}/message:send")).json(&params),
            "SendStreamingMessage" => self
                .http
                .post(format!("{base}/message:stream"))
                .json(&params),
            "GetTask" => self
                .http
                .get(format!("{base}/tasks/{id}"))
                .query(&query(&params, &["id"])),
            "ListTasks" => self
                .http
                .get(format!("{base}/tasks"))
                .query(&query(&params, &[])),
            "CancelTask" => {
                let mut body = json!({});
                if let Some(metadata) = params.get("metadata") {
                    body["metadata"] = metadata.clone();
                }
                self.http
                    .post(format!("{base}/tasks/{id}:cancel"))
                    .json(&body)
            }
            "SubscribeToTask" => self.http.get(format!("{base}/tasks/{id}:subscribe")),
            "GetExtendedAgentCard" => self.http.get(format!("{base}/extendedAgentCard")),
            "CreateTaskPushNotificationConfig" => {
                let task = params["taskId"].as_str().unwrap_or_default().to_owned();
                let url = format!("{base}/tasks/{task}/pushNotificationConfigs");
                self.http.post(url).json(&params)
            }
            other => panic!("no HTTP+JSON route for {other} in this suite"),
        };
        self.headers(request)
    }

    fn headers(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        for (name, value) in &self.parameters {
            request = request.header(*name, value);
        }
        request
    }

    /// `message` with the service parameters as metadata.
    fn grpc_request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        for (name, value) in &self.parameters {
            let value = value.parse().expect("ASCII metadata");
            request.metadata_mut().insert(*name, value);
        }
        request
    }

    async fn grpc_call(&self, method: &str, params: Value) -> Answer {
        let mut c = self.grpc.clone();
        let answer = match method {
            "SendMessage" => {
                let request: SendMessageRequest = parse!(params);
                c.send_message(self.grpc_request(request.into()))
                    .await
                    .map(|r| json_of!(SendMessageResponse::try_from(r.into_inner())))
            }
            "GetTask" => {
                let request: GetTaskRequest = parse!(params);
                c.get_task(self.grpc_request(request.into()))
                    .await
                    .map(|r| json_of!(Task::try_from(r.into_inner())))
            }
            "ListTasks" => {
                let request: ListTasksRequest = parse!(params);
                c.list_tasks(self.grpc_request(request.into()))
                    .await
                    .map(|r| json_of!(ListTasksResponse::try_from(r.into_inner())))
            }
            "CancelTask" => {
                let request: CancelTaskRequest = parse!(params);
                c.cancel_task(self.grpc_request(request.into()))
                    .await
                    .map(|r| json_of!(Task::try_from(r.into_inner())))
            }
            "GetExtendedAgentCard" => {
                let request = pb::GetExtendedAgentCardRequest {
                    tenant: params["tenant"].as_str().unwrap_or_default().to_owned(),
                };
                c.get_extended_agent_card(self.grpc_request(request))
                    .await
                    .map(|r| json_of!(AgentCard::try_from(r.into_inner())))
            }
            "CreateTaskPushNotificationConfig" => {
                let config: TaskPushNotificationConfig = parse!(params);
                c.create_task_push_notification_config(self.grpc_request(config.into()))
                    .await
                    .map(|r| {
                        json_of!(Ok::<_, ()>(TaskPushNotificationConfig::from(
                            r.into_inner()
                        )))
                    })
            }
            other => panic!("no gRPC call for {other} in this suite"),
        };
        answer.map_err(|status| grpc_refusal(&status))
    }

    async fn grpc_stream(&self, method: &str, params: Value) -> Result<Vec<Value>, Refusal> {
        let mut c = self.grpc.clone();
        let opened = match method {
            "SendStreamingMessage" => {
                let request: SendMessageRequest = parse!(params);
                c.send_streaming_message(self.grpc_request(request.into()))
                    .await
            }
            "SubscribeToTask" => {
                let request: SubscribeToTaskRequest = parse!(params);
                c.subscribe_to_task(self.grpc_request(request.into())).await
            }
            other => panic!("{other} does not stream"),
        };
        let mut stream = opened.map_err(|status| grpc_refusal(&status))?.into_inner();
        let mut events = Vec::new();
        loop {
            match stream.message().await {
                Ok(Some(event)) => events.push(json_of!(StreamResponse::try_from(event))),
                Ok(None) => return Ok(events),
                Err(status) if events.is_empty() => return Err(grpc_refusal(&status)),
                Err(status) => {
                    events.push(json!({"error": grpc_refusal(&status).to_json()}));
                    return Ok(events);
                }
            }
        }
    }
}

/// The query parameters of `params`, but `skip`: strings as they are, the rest as JSON.
fn query(params: &Value, skip: &[&str]) -> Vec<(String, String)> {
    let Some(map) = params.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str().map_or_else(|| v.to_string(), str::to_owned),
            )
        })
        .collect()
}

/// A JSON-RPC response's result, or its error.
fn rpc_answer(body: &Value) -> Answer {
    if let Some(result) = body.get("result") {
        return Ok(result.clone());
    }
    let error = &body["error"];
    Err(Refusal {
        reason: error["data"][0]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        message: error["message"].as_str().unwrap_or_default().to_owned(),
        metadata: error["data"][0]["metadata"].clone(),
    })
}

/// An HTTP+JSON error: a `google.rpc.Status` whose details hold the ErrorInfo.
fn rest_refusal(body: &Value) -> Refusal {
    let error = &body["error"];
    let info = error["details"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d.get("reason").is_some()))
        .cloned()
        .unwrap_or(Value::Null);
    Refusal {
        reason: info["reason"].as_str().unwrap_or_default().to_owned(),
        message: error["message"].as_str().unwrap_or_default().to_owned(),
        metadata: info["metadata"].clone(),
    }
}

fn grpc_refusal(status: &tonic::Status) -> Refusal {
    let info = status.get_details_error_info();
    let metadata = info.as_ref().map_or(Value::Null, |i| {
        Value::Object(
            i.metadata
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    });
    Refusal {
        reason: info.map(|i| i.reason).unwrap_or_default(),
        message: status.message().to_owned(),
        metadata,
    }
}
