//! Who owns each partition, as the forwarder reads it: an [`OwnerMap`] (for every partition,
//! its owner and its successor, each a member index and URL) held in an [`Owners`] cell that
//! may be swapped while requests read it. Static membership (`serve --member`,
//! [`Members::owner_map`](super::peers::Members::owner_map)) sets it once; dynamic membership
//! sets a new map whenever the assignment changes, and a request reads whichever map is
//! current when it arrives (a stale one costs at most a forward that lands on a bridge which
//! then serves it anyway: owning is placement, not safety).

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::error::{Error, ErrorKind, Result};

/// A member as the forwarder reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its member index.
    pub index: u32,
    /// Its base URL, without a trailing slash.
    pub url: Arc<str>,
}

/// One assignment of a topic's partitions to members: this member's index, every member's
/// URL, and for each partition its owner and its successor (who holds it on demand when the
/// owner does not answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerMap {
    me: u32,
    urls: Vec<Arc<str>>,
    owners: Vec<u32>,
    successors: Vec<u32>,
    /// Per partition, whether it is moving to its successor (a planned move's target,
    /// catching up); empty: none is.
    moving: Vec<bool>,
}

impl OwnerMap {
    /// The map where this member is `me`, the members are at `urls` (in member order), and
    /// partition p is owned by `owners[p]` with `successors[p]` standing in. Every index must
    /// name a member, and both lists have one entry per partition.
    pub fn new(me: u32, urls: Vec<String>, owners: Vec<u32>, successors: Vec<u32>) -> Result<Self> {
        let members = urls.len();
        let bad = |why: String| Error::new(ErrorKind::Config, why);
        if me as usize >= members {
            return Err(bad(format!(
                "member {me} is not one of the {members} members"
            )));
        }
        if owners.len() != successors.len() {
            return Err(bad(format!(
                "{} partitions have an owner, {} a successor",
                owners.len(),
                successors.len()
            )));
        }
        if let Some(p) = owners
            .iter()
            .chain(&successors)
            .position(|m| *m as usize >= members)
        {
            return Err(bad(format!(
                "entry {p} of the map names a member beyond the {members} members"
            )));
        }
        Ok(Self {
            me,
            urls: urls
                .into_iter()
                .map(|u| Arc::from(u.trim_end_matches('/')))
                .collect(),
            owners,
            successors,
            moving: Vec::new(),
        })
    }

    /// This map with `partitions` moving to their successors: each successor is a planned
    /// move's target, catching the partition up before the map switches to it (dynamic
    /// membership's warm-up), so it may warm what it will serve.
    pub fn moving(mut self, partitions: impl IntoIterator<Item = u32>) -> Self {
        for p in partitions {
            let p = p as usize;
            if p < self.owners.len() {
                self.moving.resize(self.owners.len(), false);
                self.moving[p] = true;
            }
        }
        self
    }

    /// Whether `partition` is moving to its [`successor`](Self::successor).
    pub fn is_moving(&self, partition: u32) -> bool {
        self.moving
            .get(partition as usize)
            .copied()
            .unwrap_or(false)
    }

    /// This member's index.
    pub fn me(&self) -> u32 {
        self.me
    }

    /// How many members there are.
    pub fn members(&self) -> u32 {
        u32::try_from(self.urls.len()).unwrap_or(u32::MAX)
    }

    /// How many partitions the map covers.
    pub fn partitions(&self) -> u32 {
        u32::try_from(self.owners.len()).unwrap_or(u32::MAX)
    }

    /// Every member's URL, in member order.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        self.urls.iter().map(|u| &**u)
    }

    /// Member `index`, if there is one.
    pub fn member(&self, index: u32) -> Option<Peer> {
        let url = self.urls.get(index as usize)?;
        Some(Peer {
            index,
            url: Arc::clone(url),
        })
    }

    /// The owner of `partition` (`None` beyond the map).
    pub fn owner(&self, partition: u32) -> Option<Peer> {
        self.member(*self.owners.get(partition as usize)?)
    }

    /// Who stands in for the owner of `partition` (`None` beyond the map).
    pub fn successor(&self, partition: u32) -> Option<Peer> {
        self.member(*self.successors.get(partition as usize)?)
    }

    /// The partitions `member` owns, ascending.
    pub fn owned_by(&self, member: u32) -> Vec<u32> {
        (0u32..)
            .zip(&self.owners)
            .filter(|(_, owner)| **owner == member)
            .map(|(p, _)| p)
            .collect()
    }
}

/// Whether partition p is caught up in views of this bridge beside the one its placement
/// holds (an MCP route's tool agents'): asked before a planned move's target says p ready.
pub type WarmCheck = Arc<dyn Fn(u32) -> bool + Send + Sync>;

/// The current [`OwnerMap`], readable by every request and replaceable at run time, and the
/// [`WarmCheck`]s of the views that follow it. Cheap to clone (clones share the cell).
#[derive(Clone)]
pub struct Owners(
    Arc<watch::Sender<Arc<OwnerMap>>>,
    Arc<Mutex<Vec<WarmCheck>>>,
);

impl std::fmt::Debug for Owners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Owners").field(&self.current()).finish()
    }
}

impl Owners {
    /// A cell holding `map`.
    pub fn new(map: OwnerMap) -> Self {
        Self(Arc::new(watch::Sender::new(Arc::new(map))), Arc::default())
    }

    /// Have [`warm`](Self::warm) ask `check` too: a view that warms the partitions moving
    /// here (holds them before the map switches) says when one is caught up.
    pub fn warm_up(&self, check: WarmCheck) {
        self.1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(check);
    }

    /// Whether every view registered by [`warm_up`](Self::warm_up) has `partition` caught
    /// up (none registered: it has).
    pub fn warm(&self, partition: u32) -> bool {
        let checks = self
            .1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        checks.iter().all(|check| check(partition))
    }

    /// The map in force now.
    pub fn current(&self) -> Arc<OwnerMap> {
        Arc::clone(&self.0.borrow())
    }

    /// Put `map` in force: requests arriving from now on read it; subscribers hear of it.
    pub fn set(&self, map: OwnerMap) {
        self.0.send_replace(Arc::new(map));
    }

    /// A receiver that hears of every new map (to hold and release partitions as it changes).
    pub fn subscribe(&self) -> watch::Receiver<Arc<OwnerMap>> {
        self.0.subscribe()
    }
}

impl PartialEq for Owners {
    /// The same cell.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Owners {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn urls(n: u32) -> Vec<String> {
        (0..n).map(|i| format!("http://b{i}/")).collect()
    }

    #[test]
    fn a_map_answers_owner_and_successor_and_refuses_what_cannot_be() {
        let map = OwnerMap::new(1, urls(2), vec![0, 1, 0, 1], vec![1, 0, 1, 0]).unwrap();
        assert_eq!((map.me(), map.members(), map.partitions()), (1, 2, 4));
        assert_eq!(
            map.owner(2),
            Some(Peer {
                index: 0,
                url: "http://b0".into()
            })
        );
        assert_eq!(map.successor(2).unwrap().index, 1);
        assert_eq!(map.owner(4), None);
        assert_eq!(map.owned_by(1), vec![1, 3]);
        assert!((0..5).all(|p| !map.is_moving(p)));
        let map = map.moving([2, 9]);
        assert_eq!(
            (0..5).map(|p| map.is_moving(p)).collect::<Vec<_>>(),
            [false, false, true, false, false]
        );
        for bad in [
            OwnerMap::new(2, urls(2), vec![0], vec![1]),
            OwnerMap::new(0, urls(2), vec![0, 1], vec![1]),
            OwnerMap::new(0, urls(2), vec![0, 2], vec![1, 0]),
        ] {
            assert_eq!(bad.unwrap_err().kind(), ErrorKind::Config);
        }
    }

    #[test]
    fn a_new_map_is_read_by_the_next_request_and_heard_by_subscribers() {
        let owners = Owners::new(OwnerMap::new(0, urls(2), vec![0, 1], vec![1, 0]).unwrap());
        let mut changes = owners.subscribe();
        let same = owners.clone();
        assert_eq!(owners, same);
        owners.set(OwnerMap::new(0, urls(2), vec![1, 1], vec![0, 0]).unwrap());
        assert!(changes.has_changed().unwrap());
        // Warm until a registered view says otherwise.
        assert!(owners.warm(1));
        same.warm_up(Arc::new(|p| p != 1));
        assert!(owners.warm(0) && !owners.warm(1));
        assert_eq!(same.current().owned_by(1), vec![0, 1]);
        assert_eq!(changes.borrow_and_update().owner(0).unwrap().index, 1);
    }
}
