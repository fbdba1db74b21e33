//! What the view holds per task, and how a record changes it: the task's machine, its
//! applied records, the owner and status indexes, the tasks waiting for a worker's claim, the
//! finished tasks by expiry, the offsets retained tasks need, and the live subscribers.

pub(super) mod applied;
mod expiry;
mod id_table;
pub(super) mod index;
mod snapshot;
pub(super) mod task_map;

use std::sync::Arc;

use agentlog_wire::a2a::SendMessageRequest;
use agentlog_wire::fold::{Change, ClaimKind, Outcome, Parsed, TaskMachine};
use agentlog_wire::{Record, RecordHeader, TaskState};
use foldhash::HashMap;
use smallvec::SmallVec;
use tokio::sync::broadcast;

use super::TaskEvent;
use super::key::Key;
use crate::agent::Caller;
use crate::log::raw::Place;
use applied::{Applied, NO_PLACES, Places};
use expiry::{Expiring, LiveRecords};
use index::{AwaitingClaim, ListIndex, Listed, OwnerId, Owners};
use snapshot::Snapshotting;
use task_map::{Lead, TaskMap};

/// A task's place in the map, stable for as long as the task is kept.
pub(super) type Slot = u32;

/// One task as the view keeps it.
pub(super) struct Entry {
    pub(super) id: Key,
    pub(super) context: Key,
    pub(super) owner: OwnerId,
    /// Where the log keeps its first content records ([`applied::PLACED`]).
    pub(super) places: Places,
    pub(super) machine: TaskMachine,
    /// Inline for the usual few records: a lookup touches no other allocation for them.
    pub(super) records: SmallVec<[Applied; 4]>,
}

impl Entry {
    /// Where the task sits in the `ListTasks` index (nowhere before its command, nor once a
    /// reply answered in its place: fold rule 15, there is no task to list).
    pub(super) fn listed(&self) -> Option<Listed> {
        if self.machine.is_answered() {
            return None;
        }
        Listed::of(
            self.owner,
            self.id.as_ref(),
            self.context.as_ref(),
            self.machine.state(),
            self.machine.status_timestamp_ms(),
        )
    }
}

/// Every task of one partition the view holds, and the indexes over them.
pub(super) struct Tasks {
    pub(super) entries: TaskMap,
    pub(super) owners: Owners,
    pub(super) index: ListIndex,
    /// The tasks whose turn no worker has claimed yet; kept only once a worker asked for it
    /// ([`Tasks::track_awaiting`]): a bridge's view does not pay for it.
    pub(super) awaiting: Option<AwaitingClaim>,
    /// The input-required tasks by since when they wait; kept only once a worker asked for it
    /// ([`Tasks::track_awaiting_input`]: its sweeper expires abandoned asks).
    pub(super) awaiting_input: Option<AwaitingClaim>,
    pub(super) watchers: HashMap<Slot, broadcast::Sender<Arc<TaskEvent>>>,
    /// Subscribers to tasks no record has created yet, by task id: the call about to write a
    /// new task's command ([`TaskView::watch_new`](super::TaskView::watch_new)). The command
    /// that creates the task moves its sender to `watchers`, so they hear every change after
    /// the command, whoever applies it and however many records that applier takes at once.
    pub(super) pending: HashMap<Key, broadcast::Sender<Arc<TaskEvent>>>,
    /// Told the owner of each task the view gains (its first record, or a new incarnation
    /// after it expired) or drops (expired), once someone asked (`TaskView::listing_changes`).
    pub(super) listing: Option<broadcast::Sender<Caller>>,
    /// Finished tasks by when they expire (fold rule 14): what [`Tasks::expire`] drops. Built
    /// with the list index, once the replay is done: a replay expires nothing.
    pub(super) expiring: Expiring,
    /// The offsets of the records retained tasks need; none in a view that does not compact
    /// (nothing asks).
    pub(super) live: Option<LiveRecords>,
    /// A checkpoint being encoded, if one is ([`Snapshotting`]).
    pub(super) snapshotting: Option<Snapshotting>,
    /// The list index and the expiry order are built once the replay is done
    /// ([`Tasks::index_ready`]), not updated record by record while the view replays or
    /// restores.
    index_deferred: bool,
}

impl Tasks {
    /// No tasks; counting the records retained tasks need ([`LiveRecords`]) only with
    /// `count_live` (a view that compacts the log).
    pub(super) fn new(count_live: bool) -> Self {
        Self {
            entries: TaskMap::default(),
            owners: Owners::default(),
            index: ListIndex::default(),
            awaiting: None,
            awaiting_input: None,
            watchers: HashMap::default(),
            pending: HashMap::default(),
            listing: None,
            expiring: Expiring::default(),
            live: count_live.then(LiveRecords::default),
            snapshotting: None,
            index_deferred: true,
        }
    }

    /// Build the list index and the expiry order now if they wait for the replay to end;
    /// then keep them up to date.
    pub(super) fn index_ready(&mut self) {
        if !self.index_deferred {
            return;
        }
        let index = ListIndex::build(
            self.entries
                .iter()
                .filter_map(|(slot, entry)| Some((slot, entry.listed()?))),
        );
        self.indexes_built(index);
    }

    /// Take `index` as the list index of every task (built elsewhere), build the expiry order,
    /// and keep both up to date from now on.
    pub(super) fn indexes_built(&mut self, index: ListIndex) {
        self.index = index;
        self.expiring = Expiring::build(
            self.entries
                .iter()
                .filter_map(|(slot, entry)| Some((entry.machine.expires_at_ms()?, slot))),
        );
        self.index_deferred = false;
    }

    /// Whether the list index waits to be built or a task is due to expire at `now_ms`.
    pub(super) fn maintenance_due(&self, now_ms: u64) -> bool {
        self.index_deferred || self.expiring.next_due().is_some_and(|at| at <= now_ms)
    }

    /// Drop every task expired at `now_ms` (its records are no longer needed either); how
    /// many went.
    pub(super) fn expire(&mut self, now_ms: u64) -> usize {
        let mut dropped = 0;
        while let Some(slot) = self.expiring.pop_expired(now_ms) {
            self.preserve(slot);
            let Some(entry) = self.entries.remove(slot) else {
                continue;
            };
            if !self.index_deferred {
                self.index.update(slot, entry.listed().as_ref(), None);
            }
            if let Some(live) = self.live.as_mut() {
                applied::forget(&entry.records, live);
            }
            self.watchers.remove(&slot);
            self.tell_listing(entry.owner);
            dropped += 1;
        }
        dropped
    }

    /// Tell [`listing`](Self::listing)'s receivers, if any, that `owner`'s tasks changed.
    fn tell_listing(&self, owner: OwnerId) {
        if let Some(listing) = self.listing.as_ref()
            && listing.receiver_count() > 0
        {
            let _ = listing.send(self.owners.caller(owner).clone());
        }
    }

    /// Keep the awaiting-claim index from now on, built from the tasks known so far.
    pub(super) fn track_awaiting(&mut self) {
        if self.awaiting.is_some() {
            return;
        }
        let mut awaiting = AwaitingClaim::default();
        for (slot, entry) in self.entries.iter() {
            if let Some(since) = awaits_claim_since(&entry.machine) {
                awaiting.update(slot, None, Some(since));
            }
        }
        self.awaiting = Some(awaiting);
    }

    /// Keep the input-required index from now on, built from the tasks known so far.
    pub(super) fn track_awaiting_input(&mut self) {
        if self.awaiting_input.is_some() {
            return;
        }
        let mut waiting = AwaitingClaim::default();
        for (slot, entry) in self.entries.iter() {
            if let Some(since) = awaits_input(&entry.machine) {
                waiting.update(slot, None, Some(since));
            }
        }
        self.awaiting_input = Some(waiting);
    }

    /// The task's entry if it exists, belongs to `caller` and has not expired at `now_ms`.
    pub(super) fn owned(&self, caller: &Caller, task_id: &str, now_ms: u64) -> Option<&Entry> {
        self.owned_ahead(caller, task_id, now_ms, |_| {})
    }

    /// [`owned`](Self::owned), giving `ahead` where the task's first records are before it
    /// reads the task ([`TaskMap::find_ahead`]).
    pub(super) fn owned_ahead(
        &self,
        caller: &Caller,
        task_id: &str,
        now_ms: u64,
        ahead: impl FnMut(Lead),
    ) -> Option<&Entry> {
        let owner = self.owners.find(caller)?;
        let slot = self.entries.find_ahead(task_id, ahead)?;
        let entry = self.live_in(slot, now_ms)?;
        (entry.owner == owner).then_some(entry)
    }

    /// The task's entry if it exists and has not expired at `now_ms`: an expired task is
    /// answered as one that never existed, whether or not it was dropped yet.
    pub(super) fn live_entry(&self, task_id: &str, now_ms: u64) -> Option<&Entry> {
        Some(self.live_slot(task_id, now_ms)?.1)
    }

    /// [`live_entry`](Self::live_entry) with the task's slot.
    pub(super) fn live_slot(&self, task_id: &str, now_ms: u64) -> Option<(Slot, &Entry)> {
        self.entries
            .get_slot(task_id)
            .filter(|(_, entry)| !entry.machine.is_expired(now_ms))
    }

    /// The entry in `slot` if it has not expired at `now_ms`.
    pub(super) fn live_in(&self, slot: Slot, now_ms: u64) -> Option<&Entry> {
        self.entries
            .entry(slot)
            .filter(|entry| !entry.machine.is_expired(now_ms))
    }

    pub(super) fn apply(&mut self, offset: u64, place: Place, record: &Record) {
        self.apply_with(offset, place, &record.header, |machine| {
            machine.apply(record).map(Some)
        });
    }

    /// [`apply`](Self::apply) with the record's payload parsed already.
    pub(super) fn apply_parsed(
        &mut self,
        offset: u64,
        place: Place,
        record: &Record,
        parsed: Parsed,
    ) {
        self.apply_created(offset, place, record, parsed);
    }

    /// [`apply_parsed`](Self::apply_parsed), giving back the request of a command that created
    /// its task (or a new incarnation of it): nobody hears that change, and a worker's first
    /// turn may be folded from it (`handoff.rs`).
    pub(super) fn apply_created(
        &mut self,
        offset: u64,
        place: Place,
        record: &Record,
        parsed: Parsed,
    ) -> Option<Box<SendMessageRequest>> {
        self.apply_with(offset, place, &record.header, |machine| {
            machine.apply_parsed(record, Some(parsed)).map(Some)
        })
    }

    /// Apply a record of `header`'s task at `offset` of the partition (at `place` in the log):
    /// `decide` runs the task's machine (a fresh one for a new task) and returns the change,
    /// or `None` where the caller has no payload to give (only for a new task's command,
    /// which nobody can be subscribed to yet and which has content).
    pub(super) fn apply_with(
        &mut self,
        offset: u64,
        place: Place,
        header: &RecordHeader,
        decide: impl FnOnce(&mut TaskMachine) -> Result<Option<Change>, Outcome>,
    ) -> Option<Box<SendMessageRequest>> {
        let mut before = None;
        // A renewal that only extends the lease: neither kept nor told (see `is_extension`).
        let mut quiet = false;
        let found = self.entries.find(&header.task_id);
        // The slot this record changes, kept first for a checkpoint being encoded.
        self.preserve(found.unwrap_or_else(|| self.entries.next_slot()));
        let live = self.live.as_mut();
        let keep_index = !self.index_deferred;
        let mut new = found.is_none();
        let (slot, change) = match found {
            Some(slot) => {
                let entry = self.entries.entry_mut(slot)?;
                let lease = entry.machine.claim().map(|c| c.lease_until_ms);
                before = Some(Before::of(entry, keep_index));
                let Ok(change) = decide(&mut entry.machine) else {
                    return None;
                };
                quiet = is_extension(change.as_ref(), lease);
                if matches!(change, None | Some(Change::Created(_))) {
                    // A new incarnation of an expired task (fold rule 14): nothing of the
                    // old one is needed any more.
                    new = true;
                    if let Some(live) = live {
                        applied::forget(&entry.records, live);
                        live.add(offset);
                    }
                    entry.owner = self.owners.intern(&header.principal, &header.tenant);
                    entry.context = Key::new(&header.context_id);
                    entry.records = smallvec::smallvec![record_of(offset, change.as_ref())];
                    self.entries.note_place(slot, place, true);
                } else if !quiet {
                    applied::push(&mut entry.records, record_of(offset, change.as_ref()), live);
                    self.entries.note_place(slot, place, false);
                }
                (slot, change)
            }
            None => {
                let mut machine = TaskMachine::new();
                let Ok(change) = decide(&mut machine) else {
                    return None;
                };
                if let Some(live) = live {
                    live.add(offset);
                }
                let owner = self.owners.intern(&header.principal, &header.tenant);
                let records = smallvec::smallvec![record_of(offset, change.as_ref())];
                let mut places = NO_PLACES;
                applied::note_place(&mut places, &records, place);
                let slot = self.entries.insert(Entry {
                    id: Key::new(&header.task_id),
                    context: Key::new(&header.context_id),
                    owner,
                    places,
                    machine,
                    records,
                });
                (slot, change)
            }
        };
        let entry = self.entries.entry(slot)?;
        if new {
            self.tell_listing(entry.owner);
            if !self.pending.is_empty()
                && let Some(sender) = self.pending.remove(&Key::new(&header.task_id))
            {
                self.watchers.insert(slot, sender);
            }
        }
        let machine = &entry.machine;
        let state = machine.state().unwrap_or(TaskState::Unspecified);
        if keep_index {
            let was = before.as_ref().and_then(|b| b.listed.as_ref());
            self.index.update(slot, was, entry.listed().as_ref());
            self.expiring.update(
                slot,
                before.as_ref().and_then(|b| b.expires_at),
                machine.expires_at_ms(),
            );
        }
        if let Some(awaiting) = self.awaiting.as_mut() {
            let was = before.as_ref().and_then(|b| b.awaiting);
            let now = awaits_claim_since(machine);
            if was != now {
                awaiting.update(slot, was, now);
            }
        }
        if let Some(waiting) = self.awaiting_input.as_mut() {
            let was = before.and_then(|b| b.input);
            let now = awaits_input(machine);
            if was != now {
                waiting.update(slot, was, now);
            }
        }
        if new {
            // A new task's subscribers hold what its creating record made of it.
            return match change {
                Some(Change::Created(request)) => Some(request),
                _ => None,
            };
        }
        let (Some(sender), Some(change)) = (self.watchers.get(&slot), change) else {
            return None;
        };
        // A push record changes nothing a subscriber follows (fold rule 16).
        if quiet || is_first_claim(&change) || matches!(change, Change::Push(_)) {
            return None;
        }
        let event = Arc::new(TaskEvent {
            offset,
            task_id: Arc::from(header.task_id.as_str()),
            context_id: entry.context.to_arc(),
            timestamp_ms: header.timestamp_ms,
            state,
            change,
        });
        // Drop the channel once nobody listens, or once the task is terminal (nothing
        // follows; subscribers still receive what was sent, then `Closed`).
        if sender.send(event).is_err() || state.is_terminal() {
            self.watchers.remove(&slot);
        }
        None
    }
}

/// What an index needs to know of a task before a record changes it.
#[derive(Clone)]
struct Before {
    /// Where it was listed.
    listed: Option<Listed>,
    /// Since when the task has waited for a claim, if it does.
    awaiting: Option<u64>,
    /// Since when the task has waited for input, if it does.
    input: Option<u64>,
    /// When it expires, if it is finished and not kept forever.
    expires_at: Option<u64>,
}

impl Before {
    /// Where `entry` stands; where it is listed only when the index is kept (`listed`).
    fn of(entry: &Entry, listed: bool) -> Self {
        let machine = &entry.machine;
        Self {
            listed: if listed { entry.listed() } else { None },
            awaiting: awaits_claim_since(machine),
            input: awaits_input(machine),
            expires_at: machine.expires_at_ms(),
        }
    }
}

/// Since when the task's turn has waited for a worker's claim, if it does: unclaimed since its
/// status, or claimed under a lease that ends or ended then (a holder gone whose command's
/// copy is gone too, as when a process dies between the appends of a command that carried
/// its worker's claim, is found by the sweep once that lease is over).
fn awaits_claim_since(machine: &TaskMachine) -> Option<u64> {
    if machine.awaits_claim() {
        return Some(machine.status_timestamp_ms());
    }
    match machine.state() {
        Some(TaskState::Submitted | TaskState::Working) => {
            machine.claim().map(|claim| claim.lease_until_ms)
        }
        _ => None,
    }
}

/// Since when the task has been input-required, if it is.
fn awaits_input(machine: &TaskMachine) -> Option<u64> {
    (machine.state() == Some(TaskState::InputRequired)).then(|| machine.status_timestamp_ms())
}

/// Whether `change` is a renewal that extends the holder's lease (from `lease`, when known):
/// the view keeps no record of it and tells nobody. Replaying the records it keeps decides
/// the same: every worker record applies by attempt and holder, never by lease, and a longer
/// lease never lets a claim apply that a shorter one would refuse. A renewal that shortens the
/// lease (a release) is kept: it lets a takeover apply earlier.
fn is_extension(change: Option<&Change>, lease: Option<u64>) -> bool {
    matches!(change, Some(Change::Claimed(claimed))
        if claimed.kind == ClaimKind::Renewal
            && lease.is_some_and(|old| claimed.claim.lease_until_ms >= old))
}

/// Whether `change` is a turn's first claim that changed no state: kept (a replay needs it to
/// accept the holder's records) but not told. Nobody waits for one: a waiting worker waits on
/// a claim that exists (its takeover, release or advance), a client on the states a turn
/// reaches (a first claim that starts a submitted turn is told: it is `working`).
fn is_first_claim(change: &Change) -> bool {
    matches!(change, Change::Claimed(claimed)
        if claimed.kind == ClaimKind::First && !claimed.started)
}

/// An applied record at `offset`; no change given means the task's own command (content).
fn record_of(offset: u64, change: Option<&Change>) -> Applied {
    Applied::new(offset, change.is_none_or(Change::has_content))
}
