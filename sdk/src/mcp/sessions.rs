//! Legacy resource subscriptions: `resources/subscribe` and `resources/unsubscribe {uri}`,
//! heard on the session's standalone stream (`GET` with `Mcp-Session-Id`).
//!
//! The `initialize` era sends notifications that answer no request on a stream the client
//! opens with a GET, per session; the subscription may be POSTed to one replica and the GET
//! held by another, so the subscriptions live on the log. A legacy `initialize` over HTTP is
//! given a minted session id ([`McpBridge::new_session`], random, 122 bits); the session is a
//! task of the caller on agent [`SESSIONS_AGENT`], created by its first subscription (message
//! id `mcp-session:<id>`, so every replica derives the same task; a `GET` writes nothing and
//! waits for it), and each
//! subscribe or unsubscribe is a follow-up message of it (fold rule 12: it joins the history,
//! the task stays submitted; no worker runs it). A stream reads the subscriptions from the
//! history, then follows the task's events, and watches each subscribed URI
//! ([`McpBridge::watch`]). `DELETE` with the session id cancels the task (writing it first if
//! need be), which then expires with the sessions agent's retention, and a request naming an
//! ended session is answered 404; a session never deleted and that subscribed stays on the log.
//!
//! The stream also carries the `list_changed` notifications unasked (as 2025-era servers
//! send them): this replica's reloads', and `notifications/resources/list_changed` when the
//! caller's `resources/list` gains a task (written through any replica) or loses one (expired).
//!
//! Only the session's caller reaches it (the task is the caller's): another caller naming the
//! id gets a task of its own, empty. A subscription is checked as a read would be: a URI the
//! caller may not read is -32602 with `data.uri`, nothing written.

use std::collections::{BTreeMap, HashSet};

use agentlog_wire::a2a::{
    CancelTaskRequest, GetTaskRequest, Message, Role, SendMessageConfiguration, SendMessageRequest,
    Task,
};
use agentlog_wire::fold::Change;
use agentlog_wire::mcp::call::{SUBSCRIPTIONS_MEDIA_TYPE, data_part, typed_part};
use futures::StreamExt as _;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::McpBridge;
use super::reload::{ListChanged, next_change};
use super::rpc::{Ctx, McpStream};
use crate::agent::Caller;
use crate::bridge::Bridge;
use crate::error::{Error, ErrorKind, Result};

/// The agent whose topics hold the legacy sessions' subscriptions.
pub const SESSIONS_AGENT: &str = "mcp.sessions";

/// How often a session's stream looks for the task its first subscription makes.
const SESSION_LOOK: std::time::Duration = std::time::Duration::from_millis(250);

/// How many URIs one session may watch at once.
const MAX_SUBSCRIPTIONS: usize = 100;

/// A session id a client may send back: what [`McpBridge::new_session`] mints, or another
/// server's ids of visible ASCII.
fn check_session(session: &str) -> Result<()> {
    let fine = !session.is_empty()
        && session.len() <= 128
        && session.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if fine {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidRequest,
            "Mcp-Session-Id is not a session id",
        )
        .with_detail("header", "Mcp-Session-Id"))
    }
}

/// The session task's first message id (its task id derives from it and the caller).
fn session_message_id(session: &str) -> String {
    format!("mcp-session:{session}")
}

fn session_task_id(caller: &Caller, session: &str) -> String {
    agentlog_wire::ids::task_id(
        &caller.tenant,
        &caller.principal,
        &session_message_id(session),
    )
}

/// A message on the session's task: not waited on, and carrying one data part.
fn session_message(message_id: String, task_id: Option<String>, data: Value) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message: Message {
            message_id,
            context_id: None,
            task_id,
            role: Role::User,
            parts: vec![typed_part(data, SUBSCRIPTIONS_MEDIA_TYPE)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        },
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

/// What one session message changes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SubscriptionChange {
    /// Subscribed to the URI; a task's changes count from position `after` (the task as the
    /// subscriber read it then), so a stream started later misses none.
    Subscribe {
        uri: String,
        after: Option<u64>,
    },
    Unsubscribe {
        uri: String,
    },
}

/// The subscription change a session message carries, if any.
fn change_of(message: &Message) -> Option<SubscriptionChange> {
    let data = data_part(message, SUBSCRIPTIONS_MEDIA_TYPE)?.as_object()?;
    if let Some(uri) = data.get("subscribe").and_then(Value::as_str) {
        let after = data.get("after").and_then(Value::as_u64);
        return Some(SubscriptionChange::Subscribe {
            uri: uri.to_owned(),
            after,
        });
    }
    let uri = data.get("unsubscribe").and_then(Value::as_str)?;
    Some(SubscriptionChange::Unsubscribe {
        uri: uri.to_owned(),
    })
}

/// The subscribed URIs (each with where its changes count from).
type Subscribed = BTreeMap<String, Option<u64>>;

fn apply(uris: &mut Subscribed, change: SubscriptionChange) {
    match change {
        SubscriptionChange::Subscribe { uri, after } => {
            uris.insert(uri, after);
        }
        SubscriptionChange::Unsubscribe { uri } => {
            uris.remove(&uri);
        }
    }
}

/// The URIs subscribed after `messages`, in order, and the message ids seen.
fn subscribed(messages: &[Message]) -> (Subscribed, HashSet<String>) {
    let mut uris = Subscribed::new();
    let mut seen = HashSet::new();
    for message in messages {
        seen.insert(message.message_id.clone());
        if let Some(change) = change_of(message) {
            apply(&mut uris, change);
        }
    }
    (uris, seen)
}

impl McpBridge {
    /// A new session id when `body` is a legacy `initialize` request (the HTTP route sends it
    /// as `Mcp-Session-Id`), else `None`. Nothing is written: a session costs nothing until
    /// it subscribes or opens its stream.
    pub fn new_session(&self, body: &[u8]) -> Option<String> {
        // Cheap for every other request: only a body naming the method is parsed.
        if !body.windows(12).any(|w| w == b"\"initialize\"") {
            return None;
        }
        let parsed = agentlog_wire::jsonrpc::parse_request(body).ok()?;
        (parsed.method == "initialize").then(|| uuid::Uuid::new_v4().simple().to_string())
    }

    fn sessions(&self) -> &Bridge {
        &self.inner.sessions
    }

    /// The session's task, created if it is not on the log yet (idempotent: the same first
    /// message from every replica).
    async fn session_task(&self, caller: &Caller, session: &str) -> Result<Task> {
        check_session(session)?;
        let id = session_task_id(caller, session);
        let bridge = self.sessions();
        let read = |history_length| GetTaskRequest {
            tenant: None,
            id: id.clone(),
            history_length,
        };
        match bridge.get_task(caller, read(None)).await {
            Ok(task) => return Ok(task),
            Err(e) if e.kind() == ErrorKind::TaskNotFound => {}
            Err(e) => return Err(e),
        }
        let first = session_message(
            session_message_id(session),
            None,
            json!({"session": session}),
        );
        bridge.send_message(caller, first).await?;
        bridge.get_task(caller, read(None)).await
    }

    /// Whether `caller`'s session `session` was ended (`DELETE`), as this replica's view has
    /// it: a request naming it is then answered 404 (a client starts a new session). Only
    /// memory is read, so an end written through another replica counts once this replica's
    /// view has applied it.
    pub fn session_ended(&self, caller: &Caller, session: &str) -> bool {
        self.sessions()
            .view()
            .lookup(caller, &session_task_id(caller, session))
            .is_some_and(|info| info.state.is_terminal())
    }

    /// Legacy `resources/subscribe` or `resources/unsubscribe {uri}` (`subscribe` says which):
    /// the change written on the session's task; `{}`. Needs the session's id (over HTTP, the
    /// `Mcp-Session-Id` a legacy `initialize` answered).
    pub(super) async fn change_subscription(
        &self,
        ctx: &Ctx<'_>,
        params: Option<&Map<String, Value>>,
        subscribe: bool,
    ) -> Result<Map<String, Value>> {
        let uri = match params.and_then(|p| p.get("uri")) {
            Some(Value::String(uri)) => uri.as_str(),
            _ => {
                return Err(Error::new(ErrorKind::InvalidParams, "uri is required")
                    .with_detail("field", "uri"));
            }
        };
        let Some(session) = ctx.headers.and_then(|h| h.session_id.as_deref()) else {
            return Err(Error::new(
                ErrorKind::InvalidRequest,
                "resources/subscribe needs a session: send the Mcp-Session-Id the initialize response carried",
            )
            .with_detail("header", "Mcp-Session-Id"));
        };
        let data = if subscribe {
            let watched = self.watchable(ctx.caller, uri).await?;
            json!({"subscribe": uri, "after": watched.after()})
        } else {
            json!({"unsubscribe": uri})
        };
        let task = self.session_task(ctx.caller, session).await?;
        if task.status.state.is_terminal() {
            return Err(ended(session));
        }
        let change = session_message(uuid::Uuid::new_v4().to_string(), Some(task.id), data);
        self.sessions().send_message(ctx.caller, change).await?;
        Ok(Map::new())
    }

    /// The legacy session's standalone stream (HTTP `GET` with `Mcp-Session-Id`): a
    /// `notifications/resources/updated` for each change of a URI the session subscribes to,
    /// as the subscriptions change, until the client goes away or the session is deleted.
    pub async fn session_stream(&self, caller: &Caller, session: &str) -> Result<McpStream> {
        self.current().stream_session(caller, session).await
    }

    async fn stream_session(&self, caller: &Caller, session: &str) -> Result<McpStream> {
        check_session(session)?;
        let id = session_task_id(caller, session);
        let read = GetTaskRequest {
            tenant: None,
            id: id.clone(),
            history_length: Some(0),
        };
        // Nothing is written: a session that never subscribes costs the log nothing.
        match self.sessions().get_task(caller, read).await {
            Ok(task) if task.status.state.is_terminal() => return Err(ended(session)),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::TaskNotFound => {}
            Err(e) => return Err(e),
        }
        let (tx, rx) = mpsc::channel::<Vec<u8>>(64);
        let (this, caller) = (self.clone(), caller.clone());
        // This replica's reloads, and the caller's new tasks (resources/list gains them), heard
        // from now on: their list changes go unasked.
        let mut lists = self.list_changes();
        let mut new_tasks = self.task_list_changes(&caller);
        tokio::spawn(async move {
            // Until a subscription makes the session's task there is no subscription to hear:
            // look for it in this replica's view (memory) now and then. Subscribed before its
            // history is read: no change falls between the two.
            let mut events = loop {
                if let Some((_, events)) = this.sessions().view().subscribe(Some(&caller), &id) {
                    break events;
                }
                tokio::select! {
                    () = tx.closed() => return,
                    Some(changed) = next_change(&mut lists) => {
                        if !tell(&tx, changed).await {
                            return;
                        }
                    }
                    Some(()) = new_tasks.next() => {
                        if !tell(&tx, TASKS_LISTED).await {
                            return;
                        }
                    }
                    () = tokio::time::sleep(SESSION_LOOK) => {}
                }
            };
            let read = GetTaskRequest {
                tenant: None,
                id: id.clone(),
                history_length: None,
            };
            let Ok(task) = this.sessions().get_task(&caller, read).await else {
                return;
            };
            let (mut uris, mut seen) = subscribed(&task.history);
            let (changed_tx, mut changed) = mpsc::channel::<String>(64);
            let mut watching: BTreeMap<String, tokio::task::AbortHandle> = BTreeMap::new();
            let mut watched = None;
            loop {
                if watched.as_ref() != Some(&uris) {
                    this.rewatch(&caller, &uris, &mut watching, &changed_tx)
                        .await;
                    watched = Some(uris.clone());
                }
                tokio::select! {
                    () = tx.closed() => break,
                    Some(lists_changed) = next_change(&mut lists) => {
                        if !tell(&tx, lists_changed).await {
                            break;
                        }
                    }
                    Some(()) = new_tasks.next() => {
                        if !tell(&tx, TASKS_LISTED).await {
                            break;
                        }
                    }
                    Some(uri) = changed.recv() => {
                        let frame = notification("notifications/resources/updated", super::watch::updated(&uri));
                        if tx.send(frame).await.is_err() {
                            break;
                        }
                    }
                    event = events.recv() => match event {
                        Ok(event) => match &event.change {
                            Change::FollowedUp(request) | Change::Continued(request) => {
                                let message = &request.message;
                                if seen.insert(message.message_id.clone())
                                    && let Some(change) = change_of(message)
                                {
                                    apply(&mut uris, change);
                                }
                            }
                            _ if event.state.is_terminal() => break,
                            _ => {}
                        },
                        // Behind: the history again (the log is the truth).
                        Err(RecvError::Lagged(_)) => {
                            let request = GetTaskRequest { tenant: None, id: id.clone(), history_length: None };
                            match this.sessions().get_task(&caller, request).await {
                                Ok(task) => (uris, seen) = subscribed(&task.history),
                                Err(_) => break,
                            }
                        }
                        Err(RecvError::Closed) => break,
                    },
                }
            }
            for (_, watch) in watching {
                watch.abort();
            }
        });
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|frame| (frame, rx))
        })))
    }

    /// Watch exactly `uris` (the first [`MAX_SUBSCRIPTIONS`]): start the new ones' watches,
    /// each sending its changes to `changed`, and stop the dropped ones'.
    async fn rewatch(
        &self,
        caller: &Caller,
        uris: &Subscribed,
        watching: &mut BTreeMap<String, tokio::task::AbortHandle>,
        changed: &mpsc::Sender<String>,
    ) {
        watching.retain(|uri, watch| {
            let keep = uris.contains_key(uri);
            if !keep {
                watch.abort();
            }
            keep
        });
        for (uri, after) in uris {
            if watching.len() >= MAX_SUBSCRIPTIONS {
                break;
            }
            if watching.contains_key(uri) {
                continue;
            }
            // Checked again here: the caller may have lost sight of it since.
            let Ok(watched) = self.watchable(caller, uri).await else {
                continue;
            };
            let watched = watched.since(*after);
            let mut changes = self.watch(caller, uri.clone(), watched).await;
            let changed = changed.clone();
            let handle = tokio::spawn(async move {
                while let Some(uri) = changes.next().await {
                    if changed.send(uri).await.is_err() {
                        break;
                    }
                }
            });
            watching.insert(uri.clone(), handle.abort_handle());
        }
    }

    /// `DELETE` with `Mcp-Session-Id`: the session's task (created if need be, so that the end
    /// is on the log) cancelled, so its streams and subscriptions end, every replica answers
    /// its later requests 404 ([`session_ended`](Self::session_ended)), and it expires.
    pub async fn end_session(&self, caller: &Caller, session: &str) -> Result<()> {
        let task = self.session_task(caller, session).await?;
        let request = CancelTaskRequest {
            tenant: None,
            id: task.id,
            metadata: None,
        };
        match self.sessions().cancel_task(caller, request).await {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::TaskNotFound | ErrorKind::TaskNotCancelable
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// The error of a request naming an ended session (HTTP answers it 404).
fn ended(session: &str) -> Error {
    Error::new(
        ErrorKind::TaskNotFound,
        format!("Session not found: {session} was ended; initialize again"),
    )
    .with_detail("header", "Mcp-Session-Id")
}

/// A JSON-RPC notification's bytes.
/// What a new task of the caller changes: `resources/list`.
const TASKS_LISTED: ListChanged = ListChanged {
    tools: false,
    prompts: false,
    resources: true,
};

/// Send the notification of each list `changed` on a session's stream: `false` once the
/// client is gone.
async fn tell(tx: &mpsc::Sender<Vec<u8>>, changed: ListChanged) -> bool {
    for method in changed.methods(ListChanged::ALL) {
        if tx.send(notification(method, Map::new())).await.is_err() {
            return false;
        }
    }
    true
}

fn notification(method: &str, params: Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn message(id: &str, data: Value) -> Message {
        session_message(id.to_owned(), None, data).message
    }

    #[test]
    fn the_subscriptions_are_the_history_folded_in_order() {
        let history = [
            message("m0", json!({"session": "s"})),
            message("m1", json!({"subscribe": "test://a"})),
            message("m2", json!({"subscribe": "test://b", "after": 7})),
            message("m3", json!({"unsubscribe": "test://a"})),
            message("m4", json!({"other": "test://c"})),
        ];
        let (uris, seen) = subscribed(&history);
        assert_eq!(
            uris.into_iter().collect::<Vec<_>>(),
            [("test://b".to_owned(), Some(7))]
        );
        assert_eq!(seen.len(), 5);
    }

    #[test]
    fn session_ids_are_visible_ascii_and_bounded() {
        assert!(check_session("0123abcd").is_ok());
        for bad in ["", "a b", "é", &"x".repeat(129)] {
            assert_eq!(
                check_session(bad).unwrap_err().kind(),
                ErrorKind::InvalidRequest
            );
        }
    }
}
