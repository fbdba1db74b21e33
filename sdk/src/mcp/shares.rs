//! The tool agents' views when bridges share the agents' partitions
//! (`skills/a2a-bridge/partitions.md`): each holds the share the members' map gives this bridge,
//! as the A2A agent's view does, so that a bridge holds its share of the MCP tasks and a
//! request about another member's task is forwarded (`http::forward`'s MCP module).
//!
//! - A tool agent's bridge opens holding nothing, then holds the share of
//!   `McpConfig::bridge.holding` that its topic has (a tool topic may have fewer partitions
//!   than the agent's); [`McpBridge::follow_owners`] keeps it holding what a changing map
//!   gives (dynamic membership), releasing, after a grace, what the map gives another member,
//!   copies held on demand included. A partition moving here (`OwnerMap::is_moving`, a planned
//!   move whose successor is this member) is held on demand meanwhile, and the placement says
//!   the move ready only once these views have it too (`Owners::warm_up`), so it is caught up
//!   when the map switches to this member, not replayed then under a request. The sessions' agent holds every partition: any member
//!   serves a session's stream and end.
//! - A subscription follows a task where its partition is held: a request whose items are all
//!   held by another member is forwarded there; one that lands where they are not held (a
//!   legacy session's stream, a listen mixing members' tasks) holds the task's partition on
//!   demand while it watches ([`McpBridge::hold_while_watched`]), pinned (a retire of the copy
//!   waits for the watch). The last watch of a partition held for watches alone retires it.
//!   A watch of a partition held as assigned pins it too: when the map moves it away it is
//!   retired (new requests go to its new holder) but still followed here until the watch
//!   ends, so the watch hears its task on with no gap and the client does nothing.
//! - A task listing over members is one page: [`ListShare`] says which partitions this
//!   bridge lists and carries the other members' pages (`super::list`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::stream::{BoxStream, Stream, StreamExt as _};

use super::{Inner, McpBridge};
use crate::bridge::{Bridge, BridgeConfig};
use crate::error::Result;
use crate::log::Log;
use crate::security::owners::{OwnerMap, Owners};
use crate::view::TaskView;

/// Open tool agent `config.id`'s bridge: with every partition when `config.holding` is
/// `None`, else holding the share it names that the agent's topic has.
pub(super) async fn open_tool_bridge(log: &Log, config: BridgeConfig) -> Result<Bridge> {
    let share = config.holding.clone();
    let config = BridgeConfig {
        holding: share.as_ref().map(|_| Vec::new()),
        ..config
    };
    let bridge = Bridge::open(log.clone(), config).await?;
    if let Some(share) = share {
        let view = bridge.view();
        for p in share.into_iter().filter(|p| *p < view.partitions()) {
            view.hold(p).await?;
        }
    }
    Ok(bridge)
}

/// Make `bridge`'s view hold, as assigned, exactly what `map` gives this member among its
/// partitions (and those beyond the map, which nobody owns), on demand those moving here (the
/// warm-up: caught up in the background before the map switches to this member, then held
/// as assigned with nothing left to replay), and retire the rest (released after the
/// bridge's sync timeout); a partition held on demand for a watch stays until its last watch
/// ends. A partition moving here that the view still has, retiring from an earlier hold, is
/// pinned in `warm` while it moves here: followed on (warm), not released.
async fn hold_share(
    bridge: &Bridge,
    map: &OwnerMap,
    watched: &Holds,
    agent: &str,
    warm: &mut Warm,
) {
    let (view, grace) = (bridge.view(), bridge.config().sync_timeout);
    let owned = |p: u32| map.owner(p).is_none_or(|owner| owner.index == map.me());
    let incoming =
        |p: u32| map.is_moving(p) && map.successor(p).is_some_and(|to| to.index == map.me());
    let held_as_assigned: std::collections::BTreeSet<u32> = view
        .partition_status()
        .iter()
        .filter(|s| s.assigned)
        .map(|s| s.partition)
        .collect();
    for p in (0..view.partitions()).filter(|p| owned(*p)) {
        if !held_as_assigned.contains(&p)
            && let Err(error) = view.hold(p).await
        {
            tracing::warn!(partition = p, agent, error = %error.report(), "a tool agent's view cannot hold its share");
        }
    }
    warm.retain(|(of, p), _| of != agent || incoming(*p));
    for p in (0..view.partitions()).filter(|p| incoming(*p) && !view.holds(*p)) {
        // Retiring here (a hold on demand would keep its release): pinned instead.
        if let Some(pin) = view.pin(p) {
            warm.insert((agent.to_owned(), p), pin);
            continue;
        }
        if let Err(error) = view.hold_on_demand(p).await {
            tracing::warn!(partition = p, agent, error = %error.report(), "a tool agent's view cannot warm a partition moving here");
        }
    }
    for p in view.held_partitions() {
        if owned(p) || incoming(p) || watched.watched(agent, p) {
            continue;
        }
        if let Err(error) = view.retire(p, grace).await {
            tracing::warn!(partition = p, agent, error = %error.report(), "a tool agent's view cannot release a partition");
        }
    }
}

impl McpBridge {
    /// Keep the tool agents' views (those of the definitions served, reloads' new agents
    /// too) holding the partitions `owners`' map gives this member, as the map changes (the
    /// module docs). What `http::mcp::router` does for a route that forwards; without a
    /// Tokio runtime it does nothing.
    pub fn follow_owners(&self, owners: Owners) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let live = Arc::downgrade(&self.live);
        // A move's switch here waits for the tool views to have the partition too.
        let checked = live.clone();
        owners.warm_up(Arc::new(move |p| {
            checked.upgrade().is_none_or(|live| {
                live.served().bridges.values().all(|bridge| {
                    let view = bridge.view();
                    p >= view.partitions() || view.partition_ready(p)
                })
            })
        }));
        let mut maps = owners.subscribe();
        let mut reloads = self.reloads();
        runtime.spawn(async move {
            let mut warm = Warm::new();
            loop {
                let map = maps.borrow_and_update().clone();
                let Some(live) = live.upgrade() else {
                    return;
                };
                let inner: Arc<Inner> = live.served();
                let holds = live.watched.clone();
                drop(live);
                warm.retain(|(agent, _), _| inner.bridges.contains_key(agent));
                for (agent, bridge) in &inner.bridges {
                    hold_share(bridge, &map, &holds, agent, &mut warm).await;
                }
                drop(inner);
                tokio::select! {
                    changed = maps.changed() => if changed.is_err() { return },
                    reloaded = reloads.recv() => if matches!(reloaded, Err(tokio::sync::broadcast::error::RecvError::Closed)) { return },
                }
            }
        });
    }

    /// [`hold_while_watched`](Self::hold_while_watched) for the MCP task (or resource task)
    /// `task_id` (`<agent>:<A2A id>`); `None` for an agent nothing here serves (the lookup
    /// that follows answers it).
    pub(super) async fn hold_task(&self, task_id: &str) -> Result<Option<Arc<WatchHold>>> {
        let Some((agent, id)) = task_id.rsplit_once(':') else {
            return Ok(None);
        };
        let Some(bridge) = self.inner.task_bridges.get(agent) else {
            return Ok(None);
        };
        self.hold_while_watched(agent, bridge, id).await
    }

    /// Keep the partition of task `id` of `agent`'s `bridge` followed here while the guard
    /// lives. Held as assigned, it is pinned: a move of it away retires it (new requests go
    /// to its new holder) and its release waits for the watch, which hears its task on
    /// without a gap. Else it is held on demand, pinned too; once no watch keeps it, it is
    /// retired (after the sync timeout's grace) unless it is held as assigned by then.
    pub(super) async fn hold_while_watched(
        &self,
        agent: &str,
        bridge: &Bridge,
        id: &str,
    ) -> Result<Option<Arc<WatchHold>>> {
        let view = bridge.view();
        let p = view.partition_of(id);
        let grace = bridge.config().sync_timeout;
        if assigned(view, p)
            && let Some(pin) = view.pin(p)
        {
            return Ok(Some(Arc::new(WatchHold {
                holds: None,
                agent: agent.to_owned(),
                partition: p,
                view: view.clone(),
                grace,
                pin: Some(pin),
            })));
        }
        // Counted first: a release of the last watch's hold meanwhile leaves it alone.
        let mut hold = WatchHold {
            holds: Some(self.live.watched.enter(agent, p)),
            agent: agent.to_owned(),
            partition: p,
            view: view.clone(),
            grace,
            pin: None,
        };
        if !view.holds(p) {
            view.hold_on_demand(p).await?;
        }
        // Pinned: a copy retired under the watch (placement releasing it once its owner is
        // heard from) is still followed until the watch ends.
        hold.pin = view.pin(p);
        Ok(Some(Arc::new(hold)))
    }
}

/// Partitions moving here that a tool agent's view (by agent) still has from an earlier hold,
/// pinned while they move here.
type Warm = std::collections::HashMap<(String, u32), crate::view::PartitionPin>;

/// Whether `view` holds partition `p` as assigned (not on demand).
fn assigned(view: &TaskView, p: u32) -> bool {
    view.partition_status()
        .iter()
        .any(|s| s.partition == p && s.assigned)
}

/// How many watches keep each (agent, partition) held on demand.
#[derive(Debug, Default)]
pub(super) struct Holds(Mutex<HashMap<(String, u32), usize>>);

impl Holds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u32), usize>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn watched(&self, agent: &str, p: u32) -> bool {
        self.lock().contains_key(&(agent.to_owned(), p))
    }

    fn enter(self: &Arc<Self>, agent: &str, p: u32) -> Arc<Self> {
        *self.lock().entry((agent.to_owned(), p)).or_insert(0) += 1;
        Arc::clone(self)
    }

    /// One watch fewer: whether it was the last.
    fn leave(&self, agent: &str, p: u32) -> bool {
        let mut holds = self.lock();
        let key = (agent.to_owned(), p);
        let Some(count) = holds.get_mut(&key) else {
            return false;
        };
        *count = count.saturating_sub(1);
        if *count > 0 {
            return false;
        }
        holds.remove(&key);
        true
    }
}

/// A partition kept for a watch (module docs): dropped with the watch.
#[derive(Debug)]
pub(super) struct WatchHold {
    /// The count of the watches holding it on demand; `None`: held as assigned, pinned only.
    holds: Option<Arc<Holds>>,
    agent: String,
    partition: u32,
    view: TaskView,
    grace: std::time::Duration,
    pin: Option<crate::view::PartitionPin>,
}

impl Drop for WatchHold {
    fn drop(&mut self) {
        let Some(holds) = self.holds.take() else {
            return;
        };
        if !holds.leave(&self.agent, self.partition) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (view, p, grace) = (self.view.clone(), self.partition, self.grace);
        let agent = self.agent.clone();
        runtime.spawn(async move {
            // Watched again, or held as assigned since: kept.
            if holds.watched(&agent, p) || assigned(&view, p) {
                return;
            }
            if let Err(error) = view.retire(p, grace).await {
                tracing::warn!(partition = p, error = %error.report(), "cannot release a partition held for a watch");
            }
        });
    }
}

/// `stream`, keeping `hold` (a watch's partition) until it ends or is dropped.
pub(super) fn keeping<S>(stream: S, hold: Option<Arc<WatchHold>>) -> BoxStream<'static, S::Item>
where
    S: Stream + Send + 'static,
{
    futures::stream::unfold((Box::pin(stream), hold), |(mut stream, hold)| async move {
        let item = stream.next().await?;
        Some((item, (stream, hold)))
    })
    .boxed()
}

/// Which partitions a task listing (`tasks/list`, `resources/list`) covers on this bridge,
/// when bridges share the agents' partitions: the HTTP route's fan-out (`http::forward`)
/// hands it over.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListShare {
    /// The partitions of the members' map listed here.
    pub(crate) partitions: Vec<u32>,
    /// The map's partition count: a topic's partitions from it on are nobody's, listed here
    /// (`u32::MAX`: none are).
    pub(crate) covered: u32,
    /// The other members' pages, to merge (the bodies of their answers to the same request
    /// over their shares); `None`: this is a member's share, answered as its raw page.
    pub(crate) pages: Option<Vec<Bytes>>,
}

impl ListShare {
    /// A member's share of a fan-out: these partitions only, its page answered raw.
    pub(crate) fn member(partitions: Vec<u32>) -> Self {
        Self {
            partitions,
            covered: u32::MAX,
            pages: None,
        }
    }

    /// The partitions of a topic of `count` partitions this bridge lists.
    pub(super) fn of_topic(&self, count: u32) -> Vec<u32> {
        let mut listed: Vec<u32> = self
            .partitions
            .iter()
            .copied()
            .filter(|p| *p < count.min(self.covered))
            .collect();
        listed.extend(self.covered.min(count)..count);
        listed
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::security::peers::Members;

    #[test]
    fn a_share_lists_its_partitions_that_a_topic_has_and_those_beyond_the_map() {
        let share = ListShare {
            partitions: vec![1, 5],
            covered: 8,
            pages: Some(Vec::new()),
        };
        assert_eq!(share.of_topic(4), [1]);
        assert_eq!(share.of_topic(12), [1, 5, 8, 9, 10, 11]);
        assert_eq!(ListShare::member(vec![2, 3]).of_topic(16), [2, 3]);
    }

    #[test]
    fn the_last_watch_of_a_partition_says_so() {
        let holds = Arc::new(Holds::default());
        holds.enter("a", 3);
        holds.enter("a", 3);
        assert!(holds.watched("a", 3) && !holds.watched("b", 3));
        assert!(!holds.leave("a", 3));
        assert!(holds.leave("a", 3));
        assert!(!holds.watched("a", 3));
        assert!(!holds.leave("a", 3));
    }

    #[tokio::test]
    async fn a_tool_view_holds_its_share_and_follows_a_new_map() {
        let log = crate::log::open("memory://?partitions=8").await.unwrap();
        let urls: Vec<String> = (0..2).map(|i| format!("http://b{i}")).collect();
        let members = Members::new(1, 2, urls.clone()).unwrap();
        let mut template = BridgeConfig::new("a2a");
        template.holding = Some(members.owned_by(1, 16));
        let tool = crate::mcp::tests::tool("t", serde_json::json!({"type": "object"}));
        let mut config = crate::mcp::McpConfig::new(vec![tool]);
        config.bridge = template;
        let mcp = McpBridge::open(log, config).await.unwrap();
        let view = mcp.bridges().values().next().unwrap().view().clone();
        // The tool topic has 8 partitions: member 1 of 2 holds the odd ones.
        assert_eq!(view.held_partitions(), [1, 3, 5, 7]);
        assert_eq!(mcp.inner.sessions.view().held_partitions().len(), 8);
        // A map giving member 1 the first half.
        let owners = Owners::new(members.owner_map(16).unwrap());
        mcp.follow_owners(owners.clone());
        let (owned, successors): (Vec<u32>, Vec<u32>) =
            (0..16).map(|p| if p < 4 { (1, 0) } else { (0, 1) }).unzip();
        owners.set(OwnerMap::new(1, urls.clone(), owned, successors).unwrap());
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while view.held_partitions() != [0, 1, 2, 3] {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{:?}",
                view.held_partitions()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // Partition 6 moves here: warmed on demand while member 0 serves it, then held as
        // assigned by the same hold once the map switches.
        let status = |p: u32| {
            view.partition_status()
                .into_iter()
                .find(|s| s.partition == p)
        };
        let map = |owned: &[u32]| {
            let successors = owned.iter().map(|o| 1 - o).collect();
            OwnerMap::new(1, urls.clone(), owned.to_vec(), successors).unwrap()
        };
        let mut owned: Vec<u32> = (0..16).map(|p| u32::from(p < 4)).collect();
        owners.set(map(&owned).moving([6]));
        while !status(6).is_some_and(|s| !s.assigned && s.ready) {
            assert!(tokio::time::Instant::now() < deadline, "{:?}", status(6));
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let warmed = status(6).unwrap().held_at_ms;
        owned[6] = 1;
        owners.set(map(&owned));
        while !status(6).is_some_and(|s| s.assigned) {
            assert!(tokio::time::Instant::now() < deadline, "{:?}", status(6));
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(status(6).unwrap().held_at_ms, warmed);
        assert_eq!(view.held_partitions(), [0, 1, 2, 3, 6]);
    }

    #[tokio::test]
    async fn a_planned_move_warms_the_tool_views_of_the_member_it_moves_to() {
        use crate::members::{Membership, MembershipConfig, feed_owners};
        use std::time::Duration;
        let log = crate::log::open("memory://?partitions=4").await.unwrap();
        let member = |name: &str| {
            MembershipConfig::new("a2a", name, format!("http://{name}"))
                .lease(Duration::from_secs(30))
                .heartbeat(Duration::from_millis(100))
        };
        // A member's MCP bridge, its tool views following the map its membership feeds.
        let serve = |membership: &Membership| {
            let (log, watch) = (log.clone(), membership.watch());
            let owners = Owners::new(membership.view().owner_map().unwrap());
            async move {
                let mut template = BridgeConfig::new("a2a");
                template.holding = Some(Vec::new());
                let tool = crate::mcp::tests::tool("t", serde_json::json!({"type": "object"}));
                let mut config = crate::mcp::McpConfig::new(vec![tool]);
                config.bridge = template;
                let mcp = McpBridge::open(log, config).await.unwrap();
                tokio::spawn(feed_owners(watch, owners.clone()));
                mcp.follow_owners(owners.clone());
                let view = mcp.bridges().values().next().unwrap().view().clone();
                (mcp, view, owners)
            }
        };
        let until = |view: TaskView, what: fn(&[crate::view::PartitionStatus], u32) -> bool, p| async move {
            tokio::time::timeout(Duration::from_secs(10), async {
                while !what(&view.partition_status(), p) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .unwrap_or_else(|_| panic!("partition {p}: {:?}", view.partition_status()));
        };
        let warm = |s: &[crate::view::PartitionStatus], p| {
            s.iter().any(|s| s.partition == p && !s.assigned && s.ready)
        };
        let assigned = |s: &[crate::view::PartitionStatus], p| {
            s.iter().any(|s| s.partition == p && s.assigned)
        };
        let a = Membership::join(log.clone(), member("a"), 4).await.unwrap();
        let (_mcp_a, view_a, _) = serve(&a).await;
        for p in 0..4 {
            until(view_a.clone(), assigned, p).await;
        }
        // b joins: half of a's partitions move to it, warm. Nobody says them ready yet, so
        // the moves stand: a serves them, b's tool view catches them up on demand.
        let b = Membership::join(log.clone(), member("b"), 4).await.unwrap();
        let incoming = b.view().incoming();
        assert_eq!(incoming.len(), 2);
        let (_mcp_b, view_b, owners_b) = serve(&b).await;
        for (p, _) in &incoming {
            until(view_b.clone(), warm, *p).await;
            assert!(view_a.holds(*p));
        }
        // What b's placement asks before it says them ready: warm here, and nothing else.
        for p in 0..4 {
            let moving = incoming.iter().any(|(q, _)| *q == p);
            assert_eq!(owners_b.warm(p), moving, "partition {p}");
        }
        let warmed: Vec<u64> = view_b
            .partition_status()
            .iter()
            .map(|s| s.held_at_ms)
            .collect();
        // Ready: the map switches, b's tool view holds them as assigned by the same holds.
        for (p, since) in &incoming {
            b.ready(*p, *since).await.unwrap();
        }
        for (p, _) in &incoming {
            until(view_b.clone(), assigned, *p).await;
        }
        let now: Vec<u64> = view_b
            .partition_status()
            .iter()
            .map(|s| s.held_at_ms)
            .collect();
        assert_eq!(now, warmed);
        let moved: Vec<u32> = incoming.iter().map(|(p, _)| *p).collect();
        assert_eq!(view_b.held_partitions(), moved);
        b.stop().await;
        a.stop().await;
    }

    #[tokio::test]
    async fn a_partition_moving_back_while_it_retires_here_stays_warm() {
        use std::time::Duration;
        let log = crate::log::open("memory://?partitions=4").await.unwrap();
        let urls: Vec<String> = (0..2).map(|i| format!("http://b{i}")).collect();
        let mut template = BridgeConfig::new("a2a");
        template.holding = Some(vec![0, 1, 2, 3]);
        // A short grace: a retired partition nothing keeps goes soon.
        template.sync_timeout = Duration::from_millis(100);
        let tool = crate::mcp::tests::tool("t", serde_json::json!({"type": "object"}));
        let mut config = crate::mcp::McpConfig::new(vec![tool]);
        config.bridge = template;
        let mcp = McpBridge::open(log, config).await.unwrap();
        let view = mcp.bridges().values().next().unwrap().view().clone();
        let map = |owned: [u32; 4], moving: &[u32]| {
            let successors = owned.iter().map(|o| 1 - o).collect();
            OwnerMap::new(1, urls.clone(), owned.to_vec(), successors)
                .unwrap()
                .moving(moving.iter().copied())
        };
        let owners = Owners::new(map([1; 4], &[]));
        mcp.follow_owners(owners.clone());
        let status = |p: u32| {
            view.partition_status()
                .into_iter()
                .find(|s| s.partition == p)
        };
        tokio::time::timeout(Duration::from_secs(10), async {
            while !status(3).is_some_and(|s| s.assigned && s.ready) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();
        let held = status(3).unwrap().held_at_ms;
        // Partition 3 moves away (retired here), then, within the grace, back here.
        owners.set(map([1, 1, 1, 0], &[]));
        while view.holds(3) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        owners.set(map([1, 1, 1, 0], &[3]));
        // Well past the grace it is still followed here, then held as assigned by the same
        // hold once the map switches back.
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(view.pin(3).is_some(), "released while moving back");
        owners.set(map([1; 4], &[]));
        tokio::time::timeout(Duration::from_secs(10), async {
            while !status(3).is_some_and(|s| s.assigned) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(status(3).unwrap().held_at_ms, held);
    }
}
