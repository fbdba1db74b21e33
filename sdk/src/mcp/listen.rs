//! `subscriptions/listen` (2026-07-28) with the Tasks extension's `notifications/tasks`: the
//! push beside polling. The request's response is the stream: first
//! `notifications/subscriptions/acknowledged` naming what is honored, then a
//! `notifications/tasks` carrying the whole `DetailedTask` (what `tasks/get` answers at that
//! moment) for each task asked for, once on subscribing and again whenever it changes, each
//! frame tagged `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id.
//!
//! `notifications.taskIds` are honored for the caller's own tasks (another caller's id is left
//! out of the acknowledgement exactly as an unknown one), and `resourceSubscriptions` for the
//! URIs the caller may read (`super::watch`): each change of one is a
//! `notifications/resources/updated {uri}`. `toolsListChanged`, `promptsListChanged` (with
//! prompts served) and `resourcesListChanged` are honored when `true`: a reload that changes
//! that list (`super::reload`) sends its `notifications/…/list_changed`, and so does a task
//! the caller's `resources/list` gains (written through any replica) or loses (expired): one
//! notification for a burst of them. Asking for task
//! notifications without declaring the extension is -32021. Each task is followed from the view's events
//! (`Bridge::subscribe_to_task`, so any replica serves it and the records are the truth);
//! a finished task gets its one notification. Once every task followed has finished (and when
//! no resource is watched nor list change asked, which only the client ends), the stream ends with the listen result
//! (the spec's graceful end); a client that goes away ends it too. There is no replay: a client that lost the stream listens again and gets each
//! task's current state first.

use std::collections::BTreeSet;

use agentlog_wire::a2a::SubscribeToTaskRequest;
use agentlog_wire::mcp::TASKS_EXTENSION;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};

use super::McpBridge;
use super::reload::{ListChanged, next_change};
use super::rpc::{Ctx, McpReply, McpStream, error_reply};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind};

/// The `_meta` key tagging every frame of a listen stream with its request's id.
const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The most tasks one listen stream follows (each holds one of the bridge's stream places).
const MAX_TASKS: usize = 100;

fn invalid(message: &str, field: &str) -> Error {
    Error::new(ErrorKind::InvalidParams, message).with_detail("field", field)
}

/// The task ids, the resource URIs and the list changes a listen request asks notifications
/// for.
fn asked(
    params: Option<&Map<String, Value>>,
) -> crate::Result<(Vec<String>, Vec<String>, ListChanged)> {
    let notifications = match params.and_then(|p| p.get("notifications")) {
        Some(Value::Object(notifications)) => notifications,
        _ => return Err(invalid("notifications must be an object", "notifications")),
    };
    let strings = |member: &str| match notifications.get(member) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| id.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                invalid(
                    &format!("{member} must be strings"),
                    &format!("notifications.{member}"),
                )
            }),
        Some(_) => Err(invalid(
            &format!("{member} must be an array"),
            &format!("notifications.{member}"),
        )),
    };
    let flag = |member: &str| match notifications.get(member) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(asked)) => Ok(*asked),
        Some(_) => Err(invalid(
            &format!("{member} must be a boolean"),
            &format!("notifications.{member}"),
        )),
    };
    let lists = ListChanged {
        tools: flag("toolsListChanged")?,
        prompts: flag("promptsListChanged")?,
        resources: flag("resourcesListChanged")?,
    };
    Ok((
        strings("taskIds")?,
        strings("resourceSubscriptions")?,
        lists,
    ))
}

fn frame(method: &str, mut params: Map<String, Value>, subscription: &Value) -> Vec<u8> {
    params.insert("_meta".into(), json!({META_SUBSCRIPTION_ID: subscription}));
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
        .unwrap_or_default()
}

impl McpBridge {
    /// `subscriptions/listen` (modern): see the module docs.
    pub(super) async fn listen(
        &self,
        ctx: &Ctx<'_>,
        params: Option<&Map<String, Value>>,
    ) -> McpReply {
        let (asked, uris, mut lists) = match asked(params) {
            Ok(asked) => asked,
            Err(error) => return error_reply(ctx.id, &error, true),
        };
        if !asked.is_empty() && !ctx.era.declares_extension(TASKS_EXTENSION) {
            let error = Error::new(
                ErrorKind::ExtensionSupportRequired,
                format!("task notifications need the {TASKS_EXTENSION} extension: declare it in clientCapabilities.extensions"),
            )
            .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}));
            return error_reply(ctx.id, &error, true);
        }
        let subscription: Value = serde_json::from_str(ctx.id.get()).unwrap_or(Value::Null);
        let mut honored = Vec::new();
        let mut followed: Vec<BoxStream<'static, Map<String, Value>>> = Vec::new();
        let mut seen = BTreeSet::new();
        for task_id in asked {
            if honored.len() >= MAX_TASKS || !seen.insert(task_id.clone()) {
                continue;
            }
            match self.follow(ctx.caller, &task_id).await {
                Ok(Some(stream)) => {
                    honored.push(task_id);
                    followed.push(stream);
                }
                Ok(None) => {}
                // Its partition held nowhere now: retry, never "unknown".
                Err(error) => return error_reply(ctx.id, &error, true),
            }
        }
        let mut watched = Vec::new();
        let mut changes: Vec<BoxStream<'static, String>> = Vec::new();
        let mut seen = BTreeSet::new();
        for uri in uris {
            if watched.len() >= MAX_TASKS || !seen.insert(uri.clone()) {
                continue;
            }
            match self.watchable(ctx.caller, &uri).await {
                Ok(what) => {
                    changes.push(self.watch(ctx.caller, uri.clone(), what).await);
                    watched.push(uri);
                }
                Err(error) if error.kind().info().retryable => {
                    return error_reply(ctx.id, &error, true);
                }
                Err(_) => {}
            }
        }
        // As the capabilities declare them: prompts' only with prompts served.
        lists.prompts &= !self.inner.catalog.prompts.is_empty();
        let changes_heard = self.list_changes();
        let mut ack = Map::new();
        let mut notifications = Map::new();
        for (asked, member) in [
            (lists.tools, "toolsListChanged"),
            (lists.prompts, "promptsListChanged"),
            (lists.resources, "resourcesListChanged"),
        ] {
            if asked {
                notifications.insert(member.into(), json!(true));
            }
        }
        if !honored.is_empty() {
            notifications.insert("taskIds".into(), json!(honored));
        }
        if !watched.is_empty() {
            notifications.insert("resourceSubscriptions".into(), json!(watched));
        }
        ack.insert("notifications".into(), Value::Object(notifications));
        let first = frame(
            "notifications/subscriptions/acknowledged",
            ack,
            &subscription,
        );
        let tasks = {
            let subscription = subscription.clone();
            futures::stream::select_all(followed)
                .map(move |task| frame("notifications/tasks", task, &subscription))
        };
        let updates = {
            let subscription = subscription.clone();
            futures::stream::select_all(changes).map(move |uri| {
                frame(
                    "notifications/resources/updated",
                    super::watch::updated(&uri),
                    &subscription,
                )
            })
        };
        let new_tasks = if lists.resources {
            self.task_list_changes(ctx.caller)
        } else {
            futures::stream::pending().boxed()
        };
        let listed = {
            let subscription = subscription.clone();
            let reloads = futures::stream::unfold(changes_heard, |mut heard| async move {
                let changed = next_change(&mut heard).await?;
                Some((changed, heard))
            })
            .flat_map(move |changed| futures::stream::iter(changed.methods(lists)));
            let tasks = new_tasks.map(|()| "notifications/resources/list_changed");
            futures::stream::select(reloads, tasks)
                .map(move |method| frame(method, Map::new(), &subscription))
        };
        // A watch never ends, nor do list changes: then only the client ends the stream.
        let tasks: BoxStream<'static, Vec<u8>> = if watched.is_empty() && !lists.any() {
            tasks.boxed()
        } else {
            let pushed = futures::stream::select(updates, listed);
            futures::stream::select(tasks.chain(futures::stream::pending()), pushed).boxed()
        };
        let id = ctx.id.to_owned();
        let this = self.clone();
        let end = futures::stream::once(async move {
            let mut result = Map::new();
            result.insert("_meta".into(), json!({META_SUBSCRIPTION_ID: subscription}));
            super::rpc::success(&id, &this.modern_result(result, "complete"))
        });
        let stream: McpStream = Box::pin(
            futures::stream::once(async { first })
                .chain(tasks)
                .chain(end),
        );
        McpReply::Stream(stream)
    }

    /// The `DetailedTask`s of `caller`'s task `task_id` as it changes: now, then after each of
    /// its events until it ends; `None` when it is not the caller's (or not known), an error
    /// when its partition is held nowhere now (retryable). Its partition stays held while
    /// the stream lives (`super::shares`).
    async fn follow(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> crate::Result<Option<BoxStream<'static, Map<String, Value>>>> {
        let Ok((_, bridge, id)) = self.locate(task_id) else {
            return Ok(None);
        };
        let hold = self.hold_task(task_id).await?;
        let request = SubscribeToTaskRequest {
            tenant: None,
            id: id.to_owned(),
        };
        let events = match bridge.subscribe_to_task(caller, request, None).await {
            Ok(events) => events,
            // Finished already: its last state, once.
            Err(e) if e.kind() == ErrorKind::UnsupportedOperation => {
                let Ok(task) = self.detailed(caller, task_id).await else {
                    return Ok(None);
                };
                return Ok(Some(futures::stream::once(async { task }).boxed()));
            }
            Err(e) if e.kind().info().retryable => return Err(e),
            Err(_) => return Ok(None),
        };
        let (this, caller, task_id) = (self.clone(), caller.clone(), task_id.to_owned());
        // The stream's first event is the task's snapshot: the notification on subscribing.
        let stream = futures::stream::unfold(
            (events, None::<Map<String, Value>>, false),
            move |(mut events, mut last, ended)| {
                let (this, caller, task_id) = (this.clone(), caller.clone(), task_id.clone());
                async move {
                    if ended {
                        return None;
                    }
                    loop {
                        let event = events.next().await?.ok()?;
                        let task = this.detailed(&caller, &task_id).await.ok()?;
                        // Artifacts and repeated states change nothing a client reads.
                        let mut same = task.clone();
                        same.remove("lastUpdatedAt");
                        if last.as_ref() == Some(&same) {
                            if event.last {
                                return None;
                            }
                            continue;
                        }
                        last = Some(same);
                        return Some((task, (events, last, event.last)));
                    }
                }
            },
        );
        Ok(Some(super::shares::keeping(stream, hold)))
    }
}
