//! Resource subscriptions, both eras: what a subscribed URI names ([`McpBridge::watchable`])
//! and its changes ([`McpBridge::watch`]), each a `notifications/resources/updated {uri}`.
//!
//! A task's resource changes when a record changes the task: a status (progress and log
//! statuses too, since a task without artifacts reads as its result or status) or an
//! artifact; an artifact's resource only when that artifact does. The changes are the task's
//! events, which the view follows from the log, so a subscription held by one replica hears of
//! a change any replica (or worker) wrote. A configured resource or template match changes
//! when a reload of this replica's definitions (`super::reload`) changes what it reads
//! (removed: it reads as not found). A finished task changes no more: its watch stays open and
//! quiet, so that only the client ends a subscription. Bridges sharing the agents' partitions:
//! the task's partition is kept here while the task can change (`super::shares`): pinned, and
//! held on demand when the view does not hold it, so a move of it away does not quiet the watch.

use std::sync::Arc;

use agentlog_wire::a2a::{StreamResponse, SubscribeToTaskRequest};
use agentlog_wire::mcp::TaskResource;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::McpBridge;
use super::resources::{configured_contents, not_found};
use super::shares::WatchHold;
use crate::agent::Caller;
use crate::bridge::Bridge;
use crate::error::Result;

/// What a subscribed URI names.
#[derive(Debug, Clone)]
pub(super) enum Watched {
    /// A configured resource or a configured template's match: changes with a reload.
    Quiet,
    /// A task's outputs (`artifact: None`) or one of its artifacts; changes are the task's
    /// records after position `after`.
    Task {
        bridge: Bridge,
        id: String,
        artifact: Option<String>,
        after: u64,
        /// The task's partition kept for the watch (`super::shares`).
        hold: Option<Arc<WatchHold>>,
    },
}

impl Watched {
    /// The position changes count from, for a task.
    pub(super) fn after(&self) -> Option<u64> {
        match self {
            Watched::Quiet => None,
            Watched::Task { after, .. } => Some(*after),
        }
    }

    /// Changes counted from `after` instead (a subscription made earlier).
    pub(super) fn since(self, from: Option<u64>) -> Self {
        match (self, from) {
            (
                Watched::Task {
                    bridge,
                    id,
                    artifact,
                    hold,
                    ..
                },
                Some(after),
            ) => Watched::Task {
                bridge,
                id,
                artifact,
                after,
                hold,
            },
            (watched, _) => watched,
        }
    }
}

/// The notification telling a subscriber that `uri` changed.
pub(super) fn updated(uri: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut params = serde_json::Map::new();
    params.insert("uri".into(), json!(uri));
    params
}

impl McpBridge {
    /// What `uri` names, as `caller` may read it: a configured resource, a task the caller may
    /// see (an artifact URI need not name an artifact yet), or a configured template's match;
    /// anything else is -32602 with `data.uri`, as `resources/read` answers it.
    pub(super) async fn watchable(&self, caller: &Caller, uri: &str) -> Result<Watched> {
        let catalog = &self.inner.catalog;
        if catalog.resource(uri).is_some() {
            return Ok(Watched::Quiet);
        }
        if let Some(named) = TaskResource::of(uri) {
            let (task_id, artifact) = match named {
                TaskResource::Task(id) => (id, None),
                TaskResource::Artifact(id, artifact) => (id, Some(artifact)),
            };
            // Followed where its partition is held: here, held for the watch if need be.
            let hold = self.hold_task(&task_id).await?;
            // Read (the view synced with the log), then its position: a change written after
            // the read is one the subscriber hears of.
            let (bridge, id, _) = self.task_resource(caller, uri, &task_id).await?;
            let info = bridge
                .view()
                .lookup(caller, id)
                .ok_or_else(|| not_found(uri))?;
            return Ok(Watched::Task {
                bridge: bridge.clone(),
                id: id.to_owned(),
                artifact,
                after: info.position(),
                hold,
            });
        }
        if catalog.matching(uri).is_some() {
            return Ok(Watched::Quiet);
        }
        Err(not_found(uri))
    }

    /// `uri`'s changes after the position [`watchable`](Self::watchable) read (or the one
    /// [`Watched::since`] set), one item (the URI) each; it never ends by itself.
    pub(super) async fn watch(
        &self,
        caller: &Caller,
        uri: String,
        watched: Watched,
    ) -> BoxStream<'static, String> {
        let Watched::Task {
            bridge,
            id,
            artifact,
            after,
            hold,
        } = watched
        else {
            return self.configured_changes(uri);
        };
        let request = SubscribeToTaskRequest { tenant: None, id };
        let events = match bridge.subscribe_to_task(caller, request, Some(after)).await {
            Ok(events) => events,
            // Finished before `after` (nothing to follow) or gone: it changes no more.
            Err(e) => {
                tracing::debug!(error = %e.report(), "resource subscription to {uri}: the task is not followed");
                return futures::stream::pending().boxed();
            }
        };
        let changes = events.filter_map(move |event| {
            let changed = match event.map(|e| e.response) {
                // The snapshot: the task as it is now, no change.
                Ok(StreamResponse::Task(_) | StreamResponse::Message(_)) => None,
                Ok(StreamResponse::StatusUpdate(_)) => artifact.is_none().then_some(()),
                Ok(StreamResponse::ArtifactUpdate(update)) => artifact
                    .as_ref()
                    .is_none_or(|wanted| *wanted == update.artifact.artifact_id)
                    .then_some(()),
                Err(e) => {
                    tracing::debug!(error = %e.report(), "resource subscription to {uri}: the task's stream failed");
                    None
                }
            };
            let uri = uri.clone();
            async move { changed.map(|()| uri) }
        });
        // The partition stays held while the task can change: a finished one lets it go.
        super::shares::keeping(changes, hold)
            .chain(futures::stream::pending())
            .boxed()
    }

    /// The reloads that change what configuration reads for `uri`, one item (the URI) each.
    fn configured_changes(&self, uri: String) -> BoxStream<'static, String> {
        let reloads = self.reloads();
        let last = configured_contents(&self.current().inner.catalog, &uri);
        let this = self.clone();
        let changes =
            futures::stream::unfold((reloads, last, uri), move |(mut reloads, mut last, uri)| {
                let this = this.clone();
                async move {
                    loop {
                        let now = match reloads.recv().await {
                            Ok(inner) => configured_contents(&inner.catalog, &uri),
                            // Behind: what the definitions served now read.
                            Err(RecvError::Lagged(_)) => {
                                configured_contents(&this.current().inner.catalog, &uri)
                            }
                            Err(RecvError::Closed) => return None,
                        };
                        if now != last {
                            last = now;
                            return Some((uri.clone(), (reloads, last, uri)));
                        }
                    }
                }
            });
        changes.chain(futures::stream::pending()).boxed()
    }
}
