//! Input a tool asked for (`tasks/update` answering `inputRequests`), read from a task's
//! history, so every replica and every worker agrees on what is still outstanding.
//!
//! # On the log
//!
//! - A tool **asks** with an input-required status whose message has a data part of media
//!   type [`INPUT_REQUESTS_MEDIA_TYPE`] holding `{inputRequests: {key: request, ...}}`.
//! - Each `tasks/update` that answers something is a **continue** whose message has a data
//!   part of media type [`INPUT_RESPONSES_MEDIA_TYPE`] holding `{inputResponses: {...}}`,
//!   with only keys still outstanding (the bridge drops unknown and already-answered keys,
//!   and writes nothing when none is left).
//! - The extension says a partial answer leaves the task `input_required`: the continue
//!   resumes the A2A task, but while keys of the last ask are unanswered the MCP task still
//!   reads `input_required` with those keys as its `inputRequests`, and the worker's turn
//!   asks again (the same requests) instead of running the tool.
//!
//! The answers to an ask are the first response to each of its keys anywhere in the
//! history: keys are never reused within a task (the extension's rule), and a response is
//! only written for a key that was asked.
//!
//! An ask of a call answered on its request (MRTR) records when it expires: its status
//! message's metadata holds `{"agentlog.mcp": {"inputDeadlineMs": <Unix ms>}}`
//! ([`deadline_metadata`], [`deadline_of`]). Past it, the workers' sweeper cancels the task and
//! a retry is refused as an expired `requestState`; every replica reads the same deadline.

use serde_json::{Map, Value};

use super::call::{INPUT_REQUESTS_MEDIA_TYPE, INPUT_RESPONSES_MEDIA_TYPE, data_part};
use crate::a2a::Message;

/// The last ask of a task and what has been answered of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PendingInput {
    /// The message of the last ask (its status message), to ask again with.
    pub ask: Option<Message>,
    /// Every request of the last ask, by key.
    pub requests: Map<String, Value>,
    /// The responses to those requests so far, by key (the first one per key).
    pub responses: Map<String, Value>,
    /// How many messages of the history asked with keyed requests, the last ask included
    /// (re-asks too): 1 for the first ask. The round an MRTR `requestState` names.
    pub round: usize,
}

impl PendingInput {
    /// The last ask's requests in `history` and the responses to them, or `None` when no
    /// message of the history asked for input with keyed requests.
    pub fn of(history: &[Message]) -> Option<Self> {
        let (ask, requests) = history
            .iter()
            .rev()
            .find_map(|m| Some((m, requests_of(m)?)))?;
        let mut responses = Map::new();
        let mut round = 0;
        for message in history {
            collect(message, requests, &mut responses);
            round += usize::from(requests_of(message).is_some());
        }
        Some(Self {
            ask: Some(ask.clone()),
            requests: requests.clone(),
            responses,
            round,
        })
    }

    /// The requests not answered yet, by key (the `inputRequests` of an input-required task).
    pub fn outstanding(&self) -> Map<String, Value> {
        self.requests
            .iter()
            .filter(|(key, _)| !self.responses.contains_key(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect()
    }

    /// Whether every request has its response.
    pub fn is_answered(&self) -> bool {
        self.requests
            .keys()
            .all(|key| self.responses.contains_key(key))
    }

    /// Of `responses` (a `tasks/update`'s), the ones this ask still waits for: unknown and
    /// already-answered keys are dropped.
    pub fn still_wanted(&self, responses: &Map<String, Value>) -> Map<String, Value> {
        responses
            .iter()
            .filter(|(key, _)| {
                self.requests.contains_key(*key) && !self.responses.contains_key(*key)
            })
            .map(|(key, response)| (key.clone(), response.clone()))
            .collect()
    }
}

/// The client capabilities that `requests` (keyed `inputRequests`) need and `declared` (a
/// request's `clientCapabilities`) lacks, as a capabilities object (empty: all declared), or
/// the method of a request that is no input request MCP knows (`Err`).
///
/// `elicitation/create` needs `elicitation` (with `url` for `mode: "url"`, and, when the
/// client declared sub-capabilities, `form` for a form: an empty object means form only);
/// `sampling/createMessage` needs `sampling` (with `tools` when it offers tools);
/// `roots/list` needs `roots`.
pub fn missing_capabilities(
    requests: &Map<String, Value>,
    declared: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let mut missing = Map::new();
    for request in requests.values() {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let params = request.get("params");
        let (capability, sub) = match method {
            "elicitation/create" => {
                let url = params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url");
                ("elicitation", Some(if url { "url" } else { "form" }))
            }
            "sampling/createMessage" => {
                let tools = params.and_then(|p| p.get("tools")).is_some();
                ("sampling", tools.then_some("tools"))
            }
            "roots/list" => ("roots", None),
            other => return Err(other.to_owned()),
        };
        let have = declared.get(capability).and_then(Value::as_object);
        let lacks = match (have, sub) {
            (None, _) => true,
            (Some(_), None) => false,
            // A bare `elicitation: {}` declares form mode (the spec's default).
            (Some(have), Some("form")) => !have.is_empty() && !have.contains_key("form"),
            (Some(have), Some(sub)) => !have.contains_key(sub),
        };
        if lacks {
            let entry = missing
                .entry(capability)
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Some(sub), Some(entry)) = (sub, entry.as_object_mut()) {
                entry.insert(sub.to_owned(), Value::Object(Map::new()));
            }
        }
    }
    Ok(missing)
}

/// The `inputRequests` a message asks with, if it asks.
fn requests_of(message: &Message) -> Option<&Map<String, Value>> {
    data_part(message, INPUT_REQUESTS_MEDIA_TYPE)?
        .get("inputRequests")?
        .as_object()
}

/// The metadata member holding agentlog's MCP fields (in a command's message: the era and
/// `createdAtMs`; in an ask's status message: its deadline).
pub const MCP_METADATA_KEY: &str = "agentlog.mcp";
/// The member of [`MCP_METADATA_KEY`] holding an ask's deadline, Unix milliseconds.
pub const INPUT_DEADLINE_KEY: &str = "inputDeadlineMs";

/// The metadata of an ask that expires at `deadline_ms`.
pub fn deadline_metadata(deadline_ms: u64) -> Map<String, Value> {
    let mut mcp = Map::new();
    mcp.insert(INPUT_DEADLINE_KEY.to_owned(), Value::from(deadline_ms));
    let mut metadata = Map::new();
    metadata.insert(MCP_METADATA_KEY.to_owned(), Value::Object(mcp));
    metadata
}

/// When the ask `message` expires, if it records a deadline.
pub fn deadline_of(message: &Message) -> Option<u64> {
    message
        .metadata
        .as_ref()?
        .get(MCP_METADATA_KEY)?
        .get(INPUT_DEADLINE_KEY)?
        .as_u64()
}

/// The `inputResponses` a message answers with, if it answers.
pub fn responses_of(message: &Message) -> Option<&Map<String, Value>> {
    data_part(message, INPUT_RESPONSES_MEDIA_TYPE)?
        .get("inputResponses")?
        .as_object()
}

fn collect(message: &Message, requests: &Map<String, Value>, into: &mut Map<String, Value>) {
    let Some(responses) = responses_of(message) else {
        return;
    };
    for (key, response) in responses {
        if requests.contains_key(key) && !into.contains_key(key) {
            into.insert(key.clone(), response.clone());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::a2a::{Message, Role};
    use crate::mcp::call::typed_part;
    use serde_json::json;

    fn ask(id: &str, requests: Value) -> Message {
        let mut m = Message::new_text(Role::Agent, id, "need input");
        m.parts.insert(
            0,
            typed_part(
                json!({ "inputRequests": requests }),
                INPUT_REQUESTS_MEDIA_TYPE,
            ),
        );
        m
    }

    fn answer(id: &str, responses: Value) -> Message {
        let mut m = Message::new_text(Role::User, id, "");
        m.parts = vec![typed_part(
            json!({ "inputResponses": responses }),
            INPUT_RESPONSES_MEDIA_TYPE,
        )];
        m
    }

    #[test]
    fn an_ask_records_its_deadline_in_its_metadata() {
        let mut message = ask("s", json!({"k": {"method": "roots/list"}}));
        assert_eq!(deadline_of(&message), None);
        message.metadata = Some(deadline_metadata(1_700_000_000_123));
        assert_eq!(
            serde_json::to_value(&message.metadata).unwrap(),
            json!({"agentlog.mcp": {"inputDeadlineMs": 1_700_000_000_123_u64}})
        );
        assert_eq!(deadline_of(&message), Some(1_700_000_000_123));
        message.metadata = Some(
            json!({"agentlog.mcp": {"inputDeadlineMs": "soon"}})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(deadline_of(&message), None);
    }

    #[test]
    fn nothing_pending_without_a_keyed_ask() {
        let history = vec![
            Message::user_text("c", "call"),
            Message::new_text(Role::Agent, "s", "which colour?"),
        ];
        assert_eq!(PendingInput::of(&history), None);
    }

    #[test]
    fn a_partial_answer_leaves_the_rest_outstanding() {
        let requests =
            json!({"a": {"method": "elicitation/create"}, "b": {"method": "roots/list"}});
        let mut history = vec![Message::user_text("c", "call"), ask("s1", requests.clone())];
        let pending = PendingInput::of(&history).unwrap();
        assert_eq!(pending.outstanding().len(), 2);
        assert!(!pending.is_answered());

        // Unknown keys are dropped, and so are keys already answered.
        let update = json!({"a": 1, "zzz": 2}).as_object().unwrap().clone();
        assert_eq!(
            pending.still_wanted(&update),
            *json!({"a": 1}).as_object().unwrap()
        );
        history.push(answer("u1", json!({"a": 1})));
        let pending = PendingInput::of(&history).unwrap();
        assert_eq!(pending.still_wanted(&update), Map::new());
        assert_eq!(
            Value::Object(pending.outstanding()),
            json!({"b": {"method": "roots/list"}})
        );

        // The worker asks again with the same requests; earlier answers still count.
        history.push(ask("s2", requests));
        history.push(answer("u2", json!({"b": 2, "a": 99})));
        let pending = PendingInput::of(&history).unwrap();
        assert!(pending.is_answered());
        assert_eq!(Value::Object(pending.responses), json!({"a": 1, "b": 2}));
        assert_eq!(pending.ask.unwrap().message_id, "s2");
        assert_eq!(pending.round, 2);
    }

    #[test]
    fn the_capabilities_input_requests_need() {
        let requests = json!({
            "a": {"method": "elicitation/create", "params": {"message": "?"}},
            "b": {"method": "sampling/createMessage", "params": {"messages": [], "tools": []}},
            "c": {"method": "roots/list"},
            "d": {"method": "elicitation/create", "params": {"mode": "url", "url": "https://x"}},
        });
        let requests = requests.as_object().unwrap();
        let missing = |declared: Value| {
            Value::Object(missing_capabilities(requests, declared.as_object().unwrap()).unwrap())
        };
        assert_eq!(
            missing(json!({})),
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}})
        );
        assert_eq!(
            missing(json!({"elicitation": {}, "sampling": {}, "roots": {}})),
            json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}})
        );
        assert_eq!(
            missing(
                json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}, "roots": {"listChanged": true}})
            ),
            json!({"elicitation": {"form": {}}})
        );
        assert_eq!(
            missing(
                json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}})
            ),
            json!({})
        );
        let unknown = json!({"x": {"method": "tools/call"}});
        assert_eq!(
            missing_capabilities(unknown.as_object().unwrap(), &Map::new()),
            Err("tools/call".to_owned())
        );
    }

    #[test]
    fn a_new_ask_waits_for_its_own_keys() {
        let history = vec![
            Message::user_text("c", "call"),
            ask("s1", json!({"a": {}})),
            answer("u1", json!({"a": 1})),
            ask("s2", json!({"b": {}})),
        ];
        let pending = PendingInput::of(&history).unwrap();
        assert_eq!(Value::Object(pending.outstanding()), json!({"b": {}}));
        assert!(pending.responses.is_empty());
    }
}
