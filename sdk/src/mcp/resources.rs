//! Resources: `resources/list` (the configured resources, then the caller's tasks, newest
//! first), `resources/templates/list` (the tasks' two templates, then the configured ones)
//! and `resources/read` (a configured resource, a task or one of its artifacts, or a match
//! of a configured template).
//!
//! A task is read back through its agent's bridge as the caller (`Bridge::get_task`), and
//! listed through `Bridge::list_tasks` ([`super::list::page`]): another caller's or another
//! tenant's task reads exactly as a URI nobody serves, -32602 with `data.uri` (the
//! 2026-07-28 rule; the `initialize` era's -32002 was only advice, and its clients read both).
//! How a task reads (its artifacts, a tool call's result, or its status):
//! `agentlog_wire::mcp::resource`.

use std::collections::BTreeMap;

use agentlog_wire::a2a::{GetTaskRequest, Task};
use agentlog_wire::mcp::resource::{
    ARTIFACT_URI_TEMPLATE, TASK_URI_TEMPLATE, artifact_contents, task_contents, task_listing,
};
use agentlog_wire::mcp::{ResourceContents, ResourceTemplate, TaskResource, prompt::fill};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::stream::BoxStream;
use futures::{FutureExt as _, StreamExt};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::catalog::{Catalog, ResourceBody};
use super::rpc::Ctx;
use super::{Cache, McpBridge, cursor};
use crate::agent::Caller;
use crate::bridge::Bridge;
use crate::error::{Error, ErrorKind, Result};

/// Where a `resources/list` page starts: at a configured resource, or among the tasks (after
/// a position, or at the first).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Position {
    Configured(usize),
    Tasks(Option<(u64, String)>),
}

impl Position {
    fn encode(&self) -> String {
        let value = match self {
            Position::Configured(at) => json!(["r", at]),
            Position::Tasks(None) => json!(["t"]),
            Position::Tasks(Some((ms, id))) => json!(["t", ms, id]),
        };
        URL_SAFE_NO_PAD.encode(value.to_string())
    }

    fn decode(cursor: &str) -> Result<Position> {
        let bad = invalid_cursor;
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        match value.as_array().map(Vec::as_slice) {
            Some([kind, at]) if kind == "r" => at
                .as_u64()
                .and_then(|at| usize::try_from(at).ok())
                .map(Position::Configured)
                .ok_or_else(bad),
            Some([kind]) if kind == "t" => Ok(Position::Tasks(None)),
            Some([kind, ms, id]) if kind == "t" => match (ms.as_u64(), id.as_str()) {
                (Some(ms), Some(id)) => Ok(Position::Tasks(Some((ms, id.to_owned())))),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

fn invalid_cursor() -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        "Invalid cursor: not a resources/list cursor this server issued",
    )
    .with_detail("field", "cursor")
}

/// -32602 for a URI nothing here serves (or the caller may not see), naming it in `data.uri`.
pub(super) fn not_found(uri: &str) -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!("Resource not found: {uri}"),
    )
    .with_data_field("uri", json!(uri))
}

fn body_contents(uri: &str, mime_type: Option<&str>, body: &ResourceBody) -> ResourceContents {
    match body {
        ResourceBody::Text(text) => ResourceContents::text(uri, mime_type, text.clone()),
        ResourceBody::Blob(bytes) => ResourceContents::blob(uri, mime_type, bytes),
    }
}

/// What `resources/read` of `uri` answers from configuration: a configured resource's body,
/// else (unless `uri` names a task) the first configured template's match, its text with the
/// URI's values; `None` when configuration does not serve `uri`.
pub(super) fn configured_contents(catalog: &Catalog, uri: &str) -> Option<ResourceContents> {
    if let Some(resource) = catalog.resource(uri) {
        let mime = resource.resource.mime_type.as_deref();
        return Some(body_contents(uri, mime, &resource.body));
    }
    if TaskResource::of(uri).is_some() {
        return None;
    }
    let (template, values) = catalog.matching(uri)?;
    let mime = template.template.mime_type.as_deref();
    let body = match &template.body {
        ResourceBody::Text(text) => {
            let values: BTreeMap<&str, &str> = values
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect();
            ResourceBody::Text(fill(text, &values))
        }
        blob => blob.clone(),
    };
    Some(body_contents(uri, mime, &body))
}

fn to_object<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

impl McpBridge {
    /// `resources/list`: a page of the configured resources, then of the caller's tasks on
    /// every tool agent and A2A agent (`tasks_page_size` a page, as legacy `tasks/list`).
    pub(super) async fn list_resources(
        &self,
        ctx: &Ctx<'_>,
        params: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>> {
        let start = match cursor(params)? {
            None => Position::Configured(0),
            Some(cursor) => Position::decode(cursor)?,
        };
        let page_size = self.inner.config.tasks_page_size.clamp(1, 100);
        let configured = &self.inner.catalog.resources;
        let mut listed = Vec::new();
        let mut next = None;
        let after = match start {
            Position::Configured(from) => {
                let rest = configured.get(from..).ok_or_else(invalid_cursor)?;
                listed.extend(rest.iter().take(page_size).map(|r| to_object(&r.resource)));
                let end = from + listed.len();
                next = Some(if end < configured.len() {
                    Position::Configured(end)
                } else {
                    Position::Tasks(None)
                });
                None
            }
            Position::Tasks(after) => after,
        };
        let raw = super::list::answers_raw(ctx.share);
        if listed.len() < page_size {
            let room = page_size - listed.len();
            let bridges = &self.inner.task_bridges;
            let page =
                super::list::page(ctx.caller, bridges, after.as_ref(), room, ctx.share).await?;
            if raw {
                return Ok(super::list::shared_result(&page));
            }
            listed.extend(page.tasks.iter().map(|(agent, _, task)| {
                to_object(task_listing(&format!("{agent}:{}", task.id), task))
            }));
            next = page.next.map(|position| Position::Tasks(Some(position)));
        } else if raw {
            // A member's share of a page the configured resources fill: no task of it.
            let none = super::list::Page {
                tasks: Vec::new(),
                next: None,
            };
            return Ok(super::list::shared_result(&none));
        }
        let mut result = Map::new();
        result.insert("resources".into(), Value::Array(listed));
        if let Some(next) = next {
            result.insert("nextCursor".into(), json!(next.encode()));
        }
        if ctx.era.is_modern() {
            // The caller's own tasks, which change as they run.
            self.cache_hints(&mut result, Cache::Stale);
        }
        Ok(result)
    }

    /// When `caller`'s `resources/list` gains or loses a task, from now on: a task new on any
    /// agent it lists, written through whichever replica or worker (the views follow the log),
    /// or one expired. One item for a burst (what arrived while the last was told); it never
    /// ends.
    pub(super) fn task_list_changes(&self, caller: &Caller) -> BoxStream<'static, ()> {
        let views = self.inner.task_bridges.values().map(|bridge| {
            let new_tasks = bridge.view().listing_changes();
            futures::stream::unfold(
                (new_tasks, caller.clone()),
                |(mut new_tasks, caller)| async move {
                    loop {
                        match new_tasks.recv().await {
                            Ok(owner) if owner == caller => break,
                            Ok(_) => {}
                            // Behind: some may have been the caller's.
                            Err(RecvError::Lagged(_)) => break,
                            Err(RecvError::Closed) => return None,
                        }
                    }
                    Some(((), (new_tasks, caller)))
                },
            )
        });
        let heard = futures::stream::select_all(views.map(StreamExt::boxed));
        futures::stream::unfold(heard, |mut heard| async move {
            heard.next().await?;
            // The rest of the burst, already heard: the same change.
            while let Some(Some(())) = heard.next().now_or_never() {}
            Some(((), heard))
        })
        .chain(futures::stream::pending())
        .boxed()
    }

    /// `resources/templates/list`: the tasks' templates, then the configured ones, on one
    /// page (a cursor is never issued, so any is refused).
    pub(super) fn list_resource_templates(
        &self,
        params: Option<&Map<String, Value>>,
        modern: bool,
    ) -> Result<Map<String, Value>> {
        if let Some(cursor) = cursor(params)? {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!("Invalid cursor: {cursor}"),
            )
            .with_detail("field", "cursor"));
        }
        let builtin = |uri_template: &str, name: &str, title: &str, description: &str| {
            to_object(ResourceTemplate {
                uri_template: uri_template.to_owned(),
                name: name.to_owned(),
                title: Some(title.to_owned()),
                description: Some(description.to_owned()),
                mime_type: None,
                annotations: None,
                icons: None,
                meta: None,
            })
        };
        let mut templates = vec![
            builtin(
                TASK_URI_TEMPLATE,
                "task",
                "A task's outputs",
                "The artifacts of a task you may see (taskId is <agent>:<task id>, an MCP task's id), a tool call's result, or else its status as JSON",
            ),
            builtin(
                ARTIFACT_URI_TEMPLATE,
                "task-artifact",
                "One artifact of a task",
                "The parts of one artifact of a task you may see, each with its media type",
            ),
        ];
        templates.extend(
            self.inner
                .catalog
                .templates
                .iter()
                .map(|(_, config)| to_object(&config.template)),
        );
        let mut result = Map::new();
        result.insert("resourceTemplates".into(), Value::Array(templates));
        if modern {
            self.cache_hints(&mut result, Cache::Public);
        }
        Ok(result)
    }

    /// `resources/read {uri}`: a configured resource, a task or one of its artifacts (as
    /// the caller), or a configured template's match (its text with the URI's values).
    pub(super) async fn read_resource(
        &self,
        ctx: &Ctx<'_>,
        params: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>> {
        let uri = match params.and_then(|p| p.get("uri")) {
            Some(Value::String(uri)) => uri.as_str(),
            _ => {
                return Err(Error::new(ErrorKind::InvalidParams, "uri is required")
                    .with_detail("field", "uri"));
            }
        };
        let (contents, cache) = match configured_contents(&self.inner.catalog, uri) {
            Some(contents) => (vec![contents], Cache::Public),
            None => match TaskResource::of(uri) {
                Some(named) => self.read_task(ctx, uri, named).await?,
                None => return Err(not_found(uri)),
            },
        };
        let mut result = Map::new();
        result.insert("contents".into(), to_object(contents));
        if ctx.era.is_modern() {
            self.cache_hints(&mut result, cache);
        }
        Ok(result)
    }

    /// The task the resource `uri` names by `task_id` (`<agent>:<id>`): the bridge serving
    /// it, its id there, and the task as `caller` reads it (the view synced with the log). A
    /// task the caller cannot see is the resource not found.
    pub(super) async fn task_resource<'a>(
        &'a self,
        caller: &Caller,
        uri: &str,
        task_id: &'a str,
    ) -> Result<(&'a Bridge, &'a str, Task)> {
        let (agent, id) = task_id.rsplit_once(':').ok_or_else(|| not_found(uri))?;
        let bridge = self
            .inner
            .task_bridges
            .get(agent)
            .ok_or_else(|| not_found(uri))?;
        let request = GetTaskRequest {
            tenant: None,
            id: id.to_owned(),
            history_length: Some(0),
        };
        let task = bridge.get_task(caller, request).await.map_err(|e| {
            if e.kind() == ErrorKind::TaskNotFound {
                not_found(uri)
            } else {
                e
            }
        })?;
        Ok((bridge, id, task))
    }

    /// A task's (or one artifact's) contents, read as the caller, and how long they keep.
    async fn read_task(
        &self,
        ctx: &Ctx<'_>,
        uri: &str,
        named: TaskResource,
    ) -> Result<(Vec<ResourceContents>, Cache)> {
        let task_id = match &named {
            TaskResource::Task(id) | TaskResource::Artifact(id, _) => id.as_str(),
        };
        let (_, _, task) = self.task_resource(ctx.caller, uri, task_id).await?;
        let contents = match &named {
            TaskResource::Task(_) => task_contents(task_id, &task),
            TaskResource::Artifact(_, artifact) => {
                artifact_contents(task_id, &task, artifact).ok_or_else(|| not_found(uri))?
            }
        };
        // A finished task's outputs never change again.
        let cache = if task.status.state.is_terminal() {
            Cache::Private
        } else {
            Cache::Stale
        };
        Ok((contents, cache))
    }
}

#[cfg(test)]
pub(super) mod tests;
