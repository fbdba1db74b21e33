//! Reloading the definitions while serving: [`McpBridge::reload`] checks a new [`McpConfig`]
//! as [`McpBridge::open`] does and, once it is sound, serves it from the next request on (a
//! request or stream that started keeps the definitions it started with; a refused one
//! changes nothing). What is reloaded is the MCP side: tools, resources, templates, prompts
//! and the server's own settings; the A2A side stays as opened (`McpConfig::bridge`,
//! `McpConfig::a2a`, the bridges of agents already open: an agent new to the definitions gets
//! its bridge opened, one no longer named keeps serving its tasks as resources).
//!
//! What changed is told to the clients that hear it, as the spec words it ("the list of
//! tools/prompts/resources has changed", so a listing that stays the same is no change):
//! `notifications/tools/list_changed`, `…/prompts/list_changed` and
//! `…/resources/list_changed` (configured resources or templates), on each
//! `subscriptions/listen` stream whose filter asked for that kind (2026-07-28) and on each
//! legacy session's standalone stream (`GET`), unasked (2025-era servers send them so). The
//! definitions are the process's own (each replica reads its own file), so each replica
//! reloads and tells the streams it holds. A subscribed configured resource (or template
//! match) whose contents a reload changes is `notifications/resources/updated` (`super::watch`).

use std::sync::{Arc, RwLock};

use tokio::sync::broadcast;

use super::{Inner, McpBridge, McpConfig};
use crate::error::Result;
use crate::log::Log;

/// How many reloads a slow stream may fall behind before it is told everything changed.
const PENDING_CHANGES: usize = 16;

/// What the clones of one bridge share across reloads.
pub(super) struct Live {
    current: RwLock<Arc<Inner>>,
    changes: broadcast::Sender<ListChanged>,
    /// Every reload's definitions (a subscribed configured resource compares what it reads).
    reloaded: broadcast::Sender<Arc<Inner>>,
    /// One reload at a time: each compares with the definitions it replaces.
    reloading: tokio::sync::Mutex<()>,
    log: Log,
    /// The partitions held on demand for watches (`super::shares`).
    pub(super) watched: Arc<super::shares::Holds>,
}

impl Live {
    /// The definitions served now.
    pub(super) fn served(&self) -> Arc<Inner> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").finish_non_exhaustive()
    }
}

/// Which lists a reload changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListChanged {
    /// `tools/list`'s.
    pub tools: bool,
    /// `prompts/list`'s.
    pub prompts: bool,
    /// `resources/list`'s configured resources, or `resources/templates/list`'s templates.
    pub resources: bool,
}

impl ListChanged {
    /// Every list (what a stream that fell behind is told).
    pub(super) const ALL: ListChanged = ListChanged {
        tools: true,
        prompts: true,
        resources: true,
    };

    /// Whether any list changed.
    pub fn any(&self) -> bool {
        self.tools || self.prompts || self.resources
    }

    /// The notification of each list changed, among those `wanted` (tools, prompts,
    /// resources, in that order).
    pub(super) fn methods(self, wanted: ListChanged) -> Vec<&'static str> {
        [
            (
                self.tools && wanted.tools,
                "notifications/tools/list_changed",
            ),
            (
                self.prompts && wanted.prompts,
                "notifications/prompts/list_changed",
            ),
            (
                self.resources && wanted.resources,
                "notifications/resources/list_changed",
            ),
        ]
        .into_iter()
        .filter_map(|(changed, method)| changed.then_some(method))
        .collect()
    }
}

/// Which listings differ between `old` and `new`.
fn changed(old: &Inner, new: &Inner) -> ListChanged {
    let tools = |inner: &Inner| -> Vec<(serde_json::Value, serde_json::Value)> {
        inner
            .tools
            .values()
            .map(|e| (e.modern.clone(), e.legacy.clone()))
            .collect()
    };
    let prompts = |inner: &Inner| -> Vec<serde_json::Value> {
        inner
            .catalog
            .prompts
            .values()
            .map(|p| serde_json::to_value(&p.prompt).unwrap_or_default())
            .collect()
    };
    let resources = |inner: &Inner| -> Vec<serde_json::Value> {
        let catalog = &inner.catalog;
        let listed = catalog
            .resources
            .iter()
            .map(|r| serde_json::to_value(&r.resource).unwrap_or_default());
        let templates = catalog
            .templates
            .iter()
            .map(|(_, t)| serde_json::to_value(&t.template).unwrap_or_default());
        listed.chain(templates).collect()
    };
    ListChanged {
        tools: tools(old) != tools(new),
        prompts: prompts(old) != prompts(new),
        resources: resources(old) != resources(new),
    }
}

impl McpBridge {
    /// A bridge serving `inner`, reloadable.
    pub(super) fn live(log: Log, inner: Inner) -> Self {
        let inner = Arc::new(inner);
        let (changes, _) = broadcast::channel(PENDING_CHANGES);
        let (reloaded, _) = broadcast::channel(PENDING_CHANGES);
        let live = Live {
            current: RwLock::new(inner.clone()),
            changes,
            reloaded,
            reloading: tokio::sync::Mutex::new(()),
            log,
            watched: Arc::default(),
        };
        Self {
            inner,
            live: Arc::new(live),
        }
    }

    /// This bridge over the definitions served now.
    pub(super) fn current(&self) -> McpBridge {
        let current = self
            .live
            .current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if Arc::ptr_eq(&current, &self.inner) {
            return self.clone();
        }
        McpBridge {
            inner: current.clone(),
            live: self.live.clone(),
        }
    }

    /// Serve `config`'s definitions from now on (the module docs): checked as [`open`]
    /// checks them (an error changes nothing), its `bridge` and `a2a` replaced by the ones
    /// served; the lists that changed are told to the streams that hear them, and returned.
    ///
    /// [`open`]: McpBridge::open
    pub async fn reload(&self, mut config: McpConfig) -> Result<ListChanged> {
        let _one = self.live.reloading.lock().await;
        let old = self.current().inner;
        config.bridge = old.config.bridge.clone();
        config.a2a = old.config.a2a.clone();
        let new = Inner::build(
            &self.live.log,
            config,
            old.bridges.clone(),
            Some(old.sessions.clone()),
        )
        .await?;
        let changed = changed(&old, &new);
        let new = Arc::new(new);
        *self
            .live
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = new.clone();
        // No stream listening is no one to tell.
        let _ = self.live.reloaded.send(new);
        if changed.any() {
            let _ = self.live.changes.send(changed);
        }
        Ok(changed)
    }

    /// The definitions of the reloads from now on.
    pub(super) fn reloads(&self) -> broadcast::Receiver<Arc<Inner>> {
        self.live.reloaded.subscribe()
    }

    /// The list changes of the reloads from now on.
    pub(super) fn list_changes(&self) -> broadcast::Receiver<ListChanged> {
        self.live.changes.subscribe()
    }
}

/// The next change `changes` hears (everything, when it fell behind); `None` once the bridge
/// is gone.
pub(super) async fn next_change(
    changes: &mut broadcast::Receiver<ListChanged>,
) -> Option<ListChanged> {
    match changes.recv().await {
        Ok(changed) => Some(changed),
        Err(broadcast::error::RecvError::Lagged(_)) => Some(ListChanged::ALL),
        Err(broadcast::error::RecvError::Closed) => None,
    }
}
