//! One bridge, three bindings: every row of a table of A2A scenarios (sends blocking and not,
//! streams, GetTask's history lengths, ListTasks' filters and pages, cancel, subscribe,
//! input-required, a message as the answer, a failing task, every error a client can cause,
//! the service parameters' errors, tenants) runs over JSON-RPC, HTTP+JSON and gRPC against one
//! server (the demo agent on an in-memory log, its router and its gRPC listener), and the three
//! transcripts must be equal once ids, timestamps and page tokens are named by where they first
//! appear (`scrub`). So must the refusals of a server with edge auth. Then a task sent on each
//! binding is read on every binding of this bridge and of a second replica over the same log,
//! subscribed to on another binding, and canceled on a third.

mod client;
mod scenarios;

use std::collections::HashMap;
use std::net::SocketAddr;

use agentlog::bridge::extensions::ExtensionScope;
use agentlog::http::auth::{Authenticator, EdgeAuth, Identity, Refusal, bearer_token};
use agentlog::worker::{Worker, WorkerConfig};
use agentlog::{Bridge, BridgeConfig, Caller};
use agentlog_server::agents::DemoHandler;
use agentlog_wire::a2a::{AgentExtension, SecurityScheme};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use client::{BINDINGS, Binding, Client};
use scenarios::outcome;

const AGENT: &str = "bindings-suite";
/// An extension the card requires of messages whose id starts with `ext-`.
pub const REQUIRED: &str = "urn:agentlog:test:bindings-required";

/// One bridge's two listeners.
#[derive(Debug, Clone, Copy)]
struct Replica {
    http: SocketAddr,
    grpc: SocketAddr,
}

/// Two bridges over one log, each served over HTTP and gRPC, and the demo worker, until
/// dropped.
struct Server {
    replicas: [Replica; 2],
    _worker: Worker,
    _stop: tokio::sync::watch::Sender<()>,
}

async fn start(auth: Option<EdgeAuth>) -> Server {
    let log = agentlog::log::open("memory://").await.expect("log");
    let (stop, stopped) = tokio::sync::watch::channel(());
    let mut config = BridgeConfig::new(AGENT);
    config.card.capabilities.extensions.push(AgentExtension {
        uri: REQUIRED.into(),
        description: None,
        required: true,
        params: None,
    });
    // Declared but none configured: GetExtendedAgentCard's own error.
    config.card.capabilities.extended_agent_card = Some(true);
    config.extension_scope =
        ExtensionScope::Matching(std::sync::Arc::new(|m| m.message_id.starts_with("ext-")));
    let mut replicas = Vec::new();
    let mut first = None;
    for _ in 0..2 {
        let bridge = Bridge::open(log.clone(), config.clone())
            .await
            .expect("bridge");
        first.get_or_insert_with(|| bridge.clone());
        let (http, grpc) = super::grpc::serve_both(bridge, auth.clone(), stopped.clone()).await;
        replicas.push(Replica { http, grpc });
    }
    let view = first.expect("a bridge").view().clone();
    let worker = Worker::start(log, WorkerConfig::new(AGENT).view(view), DemoHandler)
        .await
        .expect("worker");
    Server {
        replicas: [replicas[0], replicas[1]],
        _worker: worker,
        _stop: stop,
    }
}

async fn client(server: &Server, replica: usize, binding: Binding) -> Client {
    let Replica { http, grpc } = server.replicas[replica];
    Client::connect(binding, http, grpc).await
}

/// A row: a scenario's name and the scenario, which returns its transcript.
type Row = (
    &'static str,
    for<'a> fn(&'a Client) -> BoxFuture<'a, Vec<Value>>,
);

const TABLE: &[Row] = &[
    ("blocking send, GetTask with history lengths", |c| {
        Box::pin(scenarios::blocking_send_and_get_with_history_lengths(c))
    }),
    ("non-blocking send, then the finished task", |c| {
        Box::pin(scenarios::non_blocking_send_then_the_finished_task(c))
    }),
    ("streaming send", |c| Box::pin(scenarios::streaming_send(c))),
    ("a message as the answer", |c| {
        Box::pin(scenarios::a_message_as_the_answer(c))
    }),
    ("input-required, then the follow-up", |c| {
        Box::pin(scenarios::input_required_then_the_follow_up(c))
    }),
    ("cancel, and cancel again", |c| {
        Box::pin(scenarios::cancel_and_cancel_again(c))
    }),
    ("a failing task", |c| Box::pin(scenarios::a_failing_task(c))),
    ("ListTasks: filters and pages", |c| {
        Box::pin(scenarios::list_tasks_filters_and_pages(c))
    }),
    ("subscribe to a running, then a finished task", |c| {
        Box::pin(scenarios::subscribing_to_a_running_then_a_finished_task(c))
    }),
    ("every error a client can cause", |c| {
        Box::pin(scenarios::every_error_a_client_can_cause(c))
    }),
    ("tenants partition tasks", |c| {
        Box::pin(scenarios::tenants_partition_tasks(c))
    }),
    (
        "the service parameters: version and required extension",
        |c| Box::pin(scenarios::service_parameters(c)),
    ),
];

#[tokio::test]
async fn every_scenario_answers_alike_on_every_binding() {
    let server = start(None).await;
    let mut clients = Vec::new();
    for binding in BINDINGS {
        clients.push(client(&server, 0, binding).await);
    }
    for (name, scenario) in TABLE {
        let mut transcripts = Vec::new();
        for c in &clients {
            transcripts.push((c.binding, scrub(&json!(scenario(c).await))));
        }
        let (_, expected) = &transcripts[0];
        for (binding, transcript) in &transcripts[1..] {
            assert_eq!(
                transcript,
                expected,
                "{name}: {binding:?} differs from JSON-RPC\n{binding:?}: {}\nJSON-RPC: {}",
                pretty(transcript),
                pretty(expected)
            );
        }
    }
}

#[tokio::test]
async fn a_task_sent_on_one_binding_is_read_subscribed_to_and_canceled_on_the_others() {
    let server = start(None).await;
    let mut clients = Vec::new();
    for replica in 0..2 {
        for binding in BINDINGS {
            clients.push(client(&server, replica, binding).await);
        }
    }
    let send = |text: &str| {
        let id = format!("m-{:016x}", rand::random::<u64>());
        json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]},
               "configuration": {"returnImmediately": true}})
    };
    for (at, sender) in clients[..3].iter().enumerate() {
        let short = sender.call("SendMessage", send("sleep 1")).await;
        let long = sender.call("SendMessage", send("sleep 30")).await;
        let short = short.expect("sent")["task"]["id"].clone();
        let long = long.expect("sent")["task"]["id"].clone();
        // Subscribed to on the next binding of the other replica, to its end.
        let subscriber = &clients[3 + (at + 1) % 3];
        let events = subscriber
            .stream("SubscribeToTask", json!({"id": short}))
            .await
            .expect("a stream");
        assert_eq!(events[0]["task"]["id"], short, "{events:?}");
        let last = &events.last().expect("events")["statusUpdate"]["status"]["state"];
        assert_eq!(last, "TASK_STATE_COMPLETED", "{events:?}");
        // The finished one is the same task on every binding of both replicas; the other is
        // found everywhere, still running.
        let reads = read_everywhere(&clients, &short).await;
        assert_eq!(reads[0]["status"]["state"], "TASK_STATE_COMPLETED");
        for reader in &clients {
            let read = reader.call("GetTask", json!({"id": long})).await;
            let state = read.expect("found")["status"]["state"].clone();
            assert_ne!(state, "TASK_STATE_CANCELED", "{:?}", reader.binding);
        }
        // Canceled on the binding after that, of the other replica; canceled everywhere.
        let canceler = &clients[3 + (at + 2) % 3];
        let canceled = canceler.call("CancelTask", json!({"id": long})).await;
        assert_eq!(
            canceled.expect("canceled")["status"]["state"],
            "TASK_STATE_CANCELED"
        );
        let reads = read_everywhere(&clients, &long).await;
        assert_eq!(reads[0]["status"]["state"], "TASK_STATE_CANCELED");
    }
}

/// Tokens: `alice` and `bob` may do anything, `reader` only read.
#[derive(Debug)]
struct Tokens;

#[async_trait::async_trait]
impl Authenticator for Tokens {
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Identity, Refusal> {
        let all = || {
            vec![
                "tasks:send".into(),
                "tasks:read".into(),
                "tasks:cancel".into(),
            ]
        };
        let (who, scopes) = match bearer_token(headers)? {
            None => return Err(Refusal::Missing),
            Some(who @ ("alice" | "bob")) => (who, all()),
            Some("reader") => ("reader", vec!["tasks:read".into()]),
            Some(_) => return Err(Refusal::Invalid("unknown token".into())),
        };
        Ok(Identity {
            caller: Caller::principal(who),
            scopes,
        })
    }

    fn security_scheme(&self) -> (String, SecurityScheme) {
        let scheme = SecurityScheme::HttpAuthSecurityScheme {
            description: None,
            scheme: "Bearer".into(),
            bearer_format: None,
        };
        ("bearer".into(), scheme)
    }
}

#[tokio::test]
async fn auth_refusals_are_alike_on_every_binding() {
    let server = start(Some(EdgeAuth::new(Tokens))).await;
    let mut transcripts = Vec::new();
    for binding in BINDINGS {
        let anonymous = client(&server, 0, binding).await;
        let as_ = |who: &str| anonymous.with("authorization", &format!("Bearer {who}"));
        transcripts.push((
            binding,
            scrub(&json!(
                scenarios::auth(
                    &anonymous,
                    &as_("alice"),
                    &as_("bob"),
                    &as_("reader"),
                    &as_("mallory")
                )
                .await
            )),
        ));
    }
    let (_, expected) = &transcripts[0];
    for (binding, transcript) in &transcripts[1..] {
        assert_eq!(
            transcript,
            expected,
            "auth: {binding:?} differs from JSON-RPC\n{binding:?}: {}\nJSON-RPC: {}",
            pretty(transcript),
            pretty(expected)
        );
    }
}

/// GetTask of `id` on every client, which must all answer alike.
async fn read_everywhere(clients: &[Client], id: &Value) -> Vec<Value> {
    let mut reads = Vec::new();
    for reader in clients {
        let read = reader.call("GetTask", json!({"id": id})).await;
        reads.push(scrub(&outcome(&read)));
    }
    assert!(reads.windows(2).all(|w| w[0] == w[1]), "{reads:#?}");
    reads
}

/// Keys whose values differ from run to run (ids a server or a scenario makes, page tokens):
/// each distinct value becomes `#n` by the order of first appearance, wherever it appears, in
/// another string too (an error message naming a task).
const VARYING: [&str; 5] = ["id", "taskId", "contextId", "messageId", "nextPageToken"];

/// A time: whether two events share a millisecond is timing, so every time is the same.
const TIME: &str = "timestamp";

/// `value` comparable across bindings: varying values named, times alike, and nothing that
/// proto3 cannot tell from absence (`null`, empty lists and objects) kept.
fn scrub(value: &Value) -> Value {
    let mut names = HashMap::new();
    collect(value, &mut names);
    let mut by_length: Vec<_> = names.iter().collect();
    by_length.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    rename(value, &by_length)
}

fn collect(value: &Value, names: &mut HashMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                match item {
                    Value::String(s) if VARYING.contains(&key.as_str()) && !s.is_empty() => {
                        let next = format!("#{}", names.len());
                        names.entry(s.clone()).or_insert(next);
                    }
                    _ => collect(item, names),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, names)),
        _ => {}
    }
}

fn rename(value: &Value, names: &[(&String, &String)]) -> Value {
    match value {
        Value::String(s) => {
            let mut s = s.clone();
            for (from, to) in names {
                s = s.replace(from.as_str(), to);
            }
            Value::String(s)
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| rename(i, names)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match v {
                    Value::String(_) if k == TIME => (k.clone(), json!("<time>")),
                    _ => (k.clone(), rename(v, names)),
                })
                .filter(|(_, v)| !absent(v))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn absent(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}
