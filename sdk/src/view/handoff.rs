//! New commands, kept parsed for a worker that decides with the same view: the turn a new
//! command starts is its task's first, and that turn's history is the command alone, so the
//! handler gets it without the command being read back from the log, decoded and parsed
//! again. Kept as this process's bridge appends them ([`TaskView::hand_off`]), and as the
//! view's follower applies those others wrote (it parsed them to apply them): a worker in a
//! process of its own loads its first turns without a read of the log.
//!
//! Kept only once a worker asked ([`TaskView::hand_off_commands`]): a bridge whose workers run
//! elsewhere pays nothing. An entry is used only while the task's content records are exactly
//! that command (the first turn, before anything else with content), so it gives the task the
//! log gives; it is taken by the first load, and dropped once [`KEPT`] newer commands came
//! (the turn ran elsewhere, or was never loaded); a command over [`KEPT_PARAMS_MAX`] is not
//! kept: a load without it reads the log, as always.
//!
//! While such a command is on its way to the log, the worker may already hold its copy (a
//! backend may make the copy visible first): [`TaskView::own_command_landed`] waits for the
//! bridge to apply it, instead of asking the log's end for a record this process is writing.
//!
//! Such a worker may also take the first turn in the command's own append
//! ([`TaskView::take_first_turns`]): the bridge writes the worker's claim right after the
//! command, in the same batch, so the turn starts without a claim round trip of its own.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use agentlog_wire::a2a::SendMessageRequest;
use agentlog_wire::{Record, RecordBody, RecordHeader};
use bytes::Bytes;
use foldhash::{HashMap, HashSet};
use tokio::sync::Notify;

use super::TaskView;

/// How many commands are kept at most: far more than a worker has turns starting at once.
const KEPT: usize = 1024;
/// The largest command kept (its params' bytes): a bigger one is read back from the log, which
/// costs little beside its size, and what is kept stays within 16 MiB (a view following
/// partitions other workers run keeps commands nobody here loads, until newer ones push them
/// out).
const KEPT_PARAMS_MAX: usize = 16 * 1024;

/// A command record and its params as parsed from exactly the record's text.
pub(super) struct HandedOff {
    pub(super) offset: u64,
    pub(super) header: RecordHeader,
    pub(super) request: SendMessageRequest,
}

#[derive(Default)]
pub(super) struct Handoff {
    enabled: AtomicBool,
    kept: Mutex<Kept>,
    /// Tasks whose new command this process is appending, and a wake-up when one lands.
    appending: Mutex<HashSet<String>>,
    landed: Notify,
    /// The worker that claims first turns in their command's append, if one asked.
    local_worker: RwLock<Option<Arc<dyn LocalWorker>>>,
}

/// A worker in this process that takes a new task's first turn in its command's append.
pub(crate) trait LocalWorker: Send + Sync {
    /// A claim on the first turn of the task the command with `header` creates, a handler
    /// slot kept for it; `None` when the worker would not take that turn now (no free slot,
    /// stopping, gone).
    fn reserve(&self, header: &RecordHeader) -> Option<Box<dyn ReservedTurn>>;
}

/// A claim a [`LocalWorker`] made ready, to append right after its command in one batch.
/// Dropped once the append is done (or failed, perhaps part-way): the worker then takes the
/// turn, or releases the claim if the log never shows it.
pub(crate) trait ReservedTurn: Send {
    /// The claim record, and its bytes as the worker writes them (signed if it signs).
    fn claim(&self) -> (&Record, &Bytes);
}

#[derive(Default)]
struct Kept {
    by_task: HashMap<String, HandedOff>,
    /// (task id, offset) in the order kept, for dropping the oldest; a taken entry's stays
    /// here until its turn comes.
    order: VecDeque<(String, u64)>,
}

impl Handoff {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        // Plain data: a panic elsewhere while holding it leaves nothing half-done that
        // matters (an entry is only a shortcut).
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a worker asked for new commands to be kept.
    pub(super) fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Whether a worker asked for `record` (a command) to be kept, and it is small enough.
    pub(super) fn wants(&self, record: &Record) -> bool {
        self.enabled()
            && matches!(&record.body, RecordBody::Command { params, .. } if params.len() <= KEPT_PARAMS_MAX)
    }

    /// Keep the command `record` at `offset` of its task's partition, `request` parsed from
    /// exactly its params, for its first turn's load (the caller asked [`wants`](Self::wants)
    /// first). The oldest entry goes once [`KEPT`] are kept.
    pub(super) fn keep(&self, offset: u64, record: &Record, request: SendMessageRequest) {
        let header = record.header.clone();
        let task_id = header.task_id.clone();
        let entry = HandedOff {
            offset,
            header,
            request,
        };
        let mut kept = self.kept();
        if kept.order.len() >= KEPT
            && let Some((oldest, at)) = kept.order.pop_front()
            && kept.by_task.get(&oldest).is_some_and(|e| e.offset == at)
        {
            kept.by_task.remove(&oldest);
        }
        kept.order.push_back((task_id.clone(), offset));
        kept.by_task.insert(task_id, entry);
    }
}

impl TaskView {
    /// Keep the new commands this process appends ([`hand_off`](Self::hand_off)) for the
    /// first turn of their tasks: what a worker deciding with this view asks for.
    pub fn hand_off_commands(&self) {
        self.inner.handoff.enabled.store(true, Ordering::Relaxed);
    }

    /// Let `worker` claim the first turns of the new commands this process's bridge appends,
    /// in the same append ([`reserve_first_turn`](Self::reserve_first_turn)); the latest
    /// worker to ask takes them (one stopped before it declines them).
    pub(crate) fn take_first_turns(&self, worker: Arc<dyn LocalWorker>) {
        *self
            .inner
            .handoff
            .local_worker
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(worker);
    }

    /// A claim for the first turn of the task the command with `header` creates, from the
    /// worker of this process if it takes it now.
    pub(crate) fn reserve_first_turn(
        &self,
        header: &RecordHeader,
    ) -> Option<Box<dyn ReservedTurn>> {
        let worker = self.inner.handoff.local_worker.read();
        worker
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()?
            .reserve(header)
    }

    /// Whether new commands are kept for a worker ([`hand_off`](Self::hand_off) keeps
    /// nothing otherwise): a caller may skip building what it would hand off.
    pub(crate) fn hands_off(&self) -> bool {
        self.inner.handoff.enabled()
    }

    /// Keep the command `record` that this process appended at `offset` of its task's
    /// partition, with `request` parsed from exactly its params, for the first turn's load
    /// ([`load_turn`](Self::load_turn)); nothing unless a worker asked
    /// ([`hand_off_commands`](Self::hand_off_commands)), or for a command over 16 KiB. Right
    /// after the append, so that the first turn finds it: a load that comes first reads the log.
    ///
    /// The caller vouches for the parse (as for [`apply_own_command`](Self::apply_own_command)):
    /// the task is folded from it as from the record.
    pub(crate) fn hand_off(&self, offset: u64, record: &Record, request: &SendMessageRequest) {
        let handoff = &self.inner.handoff;
        if handoff.wants(record) {
            handoff.keep(offset, record, request.clone());
        }
    }

    /// Mark `task_id`'s new command as on its way to the log until the guard drops (once the
    /// bridge has applied it, or given up); nothing unless a worker asked
    /// ([`hand_off_commands`](Self::hand_off_commands)).
    pub(crate) fn appending_command(&self, task_id: &str) -> Option<Appending> {
        let handoff = &self.inner.handoff;
        if !handoff.enabled() {
            return None;
        }
        let mut appending = handoff.appending.lock().unwrap_or_else(|e| e.into_inner());
        appending.insert(task_id.to_owned()).then(|| Appending {
            view: self.clone(),
            task_id: task_id.to_owned(),
        })
    }

    /// Wait (at most `timeout`) until no command of `task_id` is on its way from this
    /// process's bridge: then the view shows it, if it landed.
    pub async fn own_command_landed(&self, task_id: &str, timeout: Duration) {
        let handoff = &self.inner.handoff;
        if !handoff.enabled() {
            return;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let landed = handoff.landed.notified();
            tokio::pin!(landed);
            landed.as_mut().enable();
            let on_its_way = handoff
                .appending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(task_id);
            if !on_its_way || tokio::time::timeout_at(deadline, landed).await.is_err() {
                return;
            }
        }
    }

    /// Take the command kept for `task_id` if it is the record at `offset`.
    pub(super) fn take_handed_off(&self, task_id: &str, offset: u64) -> Option<HandedOff> {
        let handoff = &self.inner.handoff;
        if !handoff.enabled() {
            return None;
        }
        let mut kept = handoff.kept();
        if kept.by_task.get(task_id)?.offset != offset {
            return None;
        }
        kept.by_task.remove(task_id)
    }
}

/// A new command on its way to the log ([`TaskView::appending_command`]).
pub(crate) struct Appending {
    view: TaskView,
    task_id: String,
}

impl Drop for Appending {
    fn drop(&mut self) {
        let handoff = &self.view.inner.handoff;
        handoff
            .appending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.task_id);
        handoff.landed.notify_waiters();
    }
}
