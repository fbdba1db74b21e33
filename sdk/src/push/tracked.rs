//! Which notifications a record makes: the sender follows, in log order, the tasks that have
//! push configs (fold rule 16), each with its own machine and configs, and turns every
//! record that changes one of them into one `StreamResponse` per config registered before
//! it. A config's first notification is the task as of the record that registered it.
//!
//! A task is followed from the first record of it the sender reads once the view says the
//! task has a config; its machine and configs are then folded from the task's records before
//! that one, read back from the log. A finished task stays followed (until the least recently
//! changed are dropped) with its last notification, which configs registered after the end
//! get without a read-back.
//!
//! Tasks without configs cost a look at a record's kind and task id and one lookup in the
//! view, which need not have caught up with the record ([`Tracker::passes_over`]): a config
//! registered where this assignment reads is a record the sender reads itself (a push config,
//! or a message with one inline: read in full, and the view brought that far), and one
//! registered before it is in the view once the view has applied as far as the assignment's
//! start (or, for a task no more followed, as far as the sender had read when it dropped it).
//!
//! Resuming (`progress`' module doc): when it starts following a task, the sender looks for
//! push progress records of it that the partition's previous owner wrote (between where this
//! assignment started reading and where the partition ended then). The latest one of a
//! config says where that config's notifications resume: the ones of earlier records are
//! made again from the task's records (before anything newer of that config), and those
//! before the resume point are not sent again.

use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::a2a::{StreamResponse, Task, TaskPushNotificationConfig};
use agentlog_wire::fold::{Change, ChangeFold, PushConfigs, TaskFold, TaskMachine};
use agentlog_wire::{Record, RecordBody, RecordKind, TaskState};
use bytes::Bytes;
use foldhash::{HashMap, HashSet};

use crate::error::{Error, ErrorKind, Result};
use crate::log::{Log, TopicRef};
use crate::view::{TaskEvent, TaskView};

mod share;

/// One notification to send: to which config of which task, what, and for which record.
#[derive(Debug, Clone)]
pub(super) struct Notice {
    /// The config, as the task holds it (its credentials included).
    pub(super) config: Arc<TaskPushNotificationConfig>,
    /// The `StreamResponse` JSON.
    pub(super) body: Bytes,
    /// A notice made again for a resumed config: the offset of the earlier record it tells
    /// of, and of the push progress record that resumed it (its anchor). `None`: a notice of
    /// the record read.
    pub(super) resumed: Option<(u64, u64)>,
}

/// A followed task.
struct Tracked {
    machine: TaskMachine,
    configs: PushConfigs,
    /// The config records as shared with the notices (kept alike with `configs`).
    shared: Vec<Arc<TaskPushNotificationConfig>>,
    /// When it was last changed, in the sender's record count (the eviction order).
    touched: u64,
    /// Once the task ended: its last notification (`{"task": …}`, the finished task, which
    /// nothing changes any more), for configs registered after the end; kept when small.
    ended: Option<Bytes>,
    /// Configs resumed past the record read: nothing of a record before the offset is sent
    /// to them again.
    resume_at: Vec<(Box<str>, u64)>,
}

impl Tracked {
    fn new(clock: u64) -> Self {
        Self {
            machine: TaskMachine::new(),
            configs: PushConfigs::new(),
            shared: Vec::new(),
            touched: clock,
            ended: None,
            resume_at: Vec::new(),
        }
    }

    /// Fold `record` at `at` into the machine and configs, with no notices.
    fn fold(&mut self, task_id: &str, at: u64, record: &Record) {
        if let Ok(change) = self.machine.apply(record) {
            self.configs.apply(task_id, at, &change);
        }
    }

    fn share_configs(&mut self) {
        self.shared = self
            .configs
            .configs()
            .iter()
            .map(|r| Arc::new(r.config.clone()))
            .collect();
    }
}

/// The largest finished task kept for late registrations (a larger one is read back).
const KEPT_END_BYTES: usize = 64 * 1024;

/// Where this sender's assignment of a partition started reading, and where the partition
/// ended when the sender first looked (what was written before it took the partition).
#[derive(Debug, Clone, Copy)]
struct Assignment {
    start: u64,
    end: Option<u64>,
}

/// The tasks followed in one partition's order (the consumer owns it).
pub(super) struct Tracker {
    view: TaskView,
    /// The view is the sender's own: it holds only the partitions the group gives it
    /// ([`share`]).
    own_view: bool,
    log: Log,
    events: TopicRef,
    tasks: HashMap<Arc<str>, Tracked>,
    max: usize,
    sync_timeout: Duration,
    clock: u64,
    assignments: HashMap<u32, Assignment>,
    /// The (task, config) pairs resumed in the current assignments.
    resumed: HashSet<(Arc<str>, Box<str>)>,
    /// Per partition: the offset the view must have applied up to for its word on whether a
    /// task not followed has configs (the start of the assignment, moved on where followed
    /// tasks were dropped), and the next offset after what was read.
    view_needed: HashMap<u32, u64>,
    read_next: HashMap<u32, u64>,
}

impl Tracker {
    pub(super) fn new(
        view: TaskView,
        own_view: bool,
        log: Log,
        events: TopicRef,
        max: usize,
        sync_timeout: Duration,
    ) -> Self {
        Self {
            view,
            own_view,
            log,
            events,
            tasks: HashMap::default(),
            max: max.max(1),
            sync_timeout,
            clock: 0,
            assignments: HashMap::default(),
            resumed: HashSet::default(),
            view_needed: HashMap::default(),
            read_next: HashMap::default(),
        }
    }

    /// How many tasks are followed.
    pub(super) fn len(&self) -> usize {
        self.tasks.len()
    }

    /// This sender reads `partition` from `start` on (a new assignment of it).
    pub(super) fn assigned(&mut self, partition: u32, start: u64) {
        self.drop_partition(partition);
        self.assignments
            .insert(partition, Assignment { start, end: None });
        self.view_needed.insert(partition, start);
        self.read_next.insert(partition, start);
    }

    /// Forget the tasks of `partition` (another sender owns it now).
    pub(super) fn drop_partition(&mut self, partition: u32) {
        let view = &self.view;
        self.tasks
            .retain(|task, _| view.partition_of(task) != partition);
        self.resumed
            .retain(|(task, _)| view.partition_of(task) != partition);
        self.assignments.remove(&partition);
        self.view_needed.remove(&partition);
        self.read_next.remove(&partition);
    }

    /// Whether the record `payload` at `offset` of `partition` makes no notification, told
    /// from its kind and task id without decoding it: its task is not followed, the record
    /// registers no config, and the view says the task has none (see the module doc). `false`
    /// when it may make some (or does not read): [`on_record`](Self::on_record) decides.
    pub(super) async fn passes_over(
        &mut self,
        partition: u32,
        offset: u64,
        payload: &[u8],
    ) -> Result<bool> {
        self.was_read(partition, offset);
        let Some((kind, task_id)) = Record::peek(payload) else {
            return Ok(false);
        };
        if self.tasks.contains_key(task_id) {
            return Ok(false);
        }
        match kind {
            // What registers a config is read in full: a push config, or a message that may
            // carry one inline (its field's name in either spelling, unescaped as serde
            // writes it; anything escaped is read in full too).
            // A progress record is read back by the lane that wrote it (`lanes::parked`).
            RecordKind::PushConfig | RecordKind::PushProgress => return Ok(false),
            RecordKind::Command | RecordKind::Continue if may_carry_config(payload) => {
                return Ok(false);
            }
            // Tells nothing to a task not followed (as in `on_record`).
            RecordKind::PushDeadLetter | RecordKind::PushConfigDeleted => return Ok(true),
            _ => {}
        }
        // Without an assignment known, as far as this record (what `on_record` does).
        let needed = self
            .view_needed
            .get(&partition)
            .copied()
            .unwrap_or(offset + 1);
        self.view
            .sync_to(partition, needed, self.sync_timeout)
            .await?;
        Ok(!self.view.has_push_configs(task_id))
    }

    fn was_read(&mut self, partition: u32, offset: u64) {
        let read = self.read_next.entry(partition).or_insert(offset + 1);
        *read = (*read).max(offset + 1);
    }

    /// A task of `partition` is followed no more: until the view has applied what was
    /// read of the partition, it may not know of the task's configs that only this sender did.
    fn unfollowed(&mut self, partition: u32) {
        if let Some(read) = self.read_next.get(&partition).copied() {
            let needed = self.view_needed.entry(partition).or_insert(read);
            *needed = (*needed).max(read);
        }
    }

    /// The notifications the record at `offset` of `partition` makes; a task followed from
    /// this record on first gets those of its resumed configs.
    pub(super) async fn on_record(
        &mut self,
        partition: u32,
        offset: u64,
        record: &Record,
    ) -> Result<Vec<Notice>> {
        let task_id = record.header.task_id.as_str();
        self.was_read(partition, offset);
        self.clock += 1;
        let tells_nothing = matches!(
            record.body,
            RecordBody::PushDeadLetter { .. } | RecordBody::PushConfigDeleted { .. }
        );
        let mut notices = Vec::new();
        if !self.tasks.contains_key(task_id) {
            // A dead letter or a deletion makes no notification: no need to read the task
            // back for it (whoever does later reads it back with the rest).
            if tells_nothing {
                return Ok(Vec::new());
            }
            // Whether the task has a config, as of at least this record.
            self.view
                .sync_to(partition, offset + 1, self.sync_timeout)
                .await?;
            if !self.view.has_push_configs(task_id) {
                return Ok(Vec::new());
            }
            let tracked = self.seed(partition, task_id, offset, &mut notices).await?;
            self.make_room();
            self.tasks.insert(Arc::from(task_id), tracked);
        }
        let Some(mut tracked) = self.tasks.remove(task_id) else {
            return Ok(notices);
        };
        tracked.touched = self.clock;
        let told = tell(
            &self.view,
            self.sync_timeout,
            &mut tracked,
            partition,
            offset,
            record,
        )
        .await;
        if let Ok(told) = told.as_ref() {
            // A resumed config gets nothing of a record before its resume point.
            notices.extend(
                told.iter()
                    .filter(|n| {
                        let id = n.config.id.as_deref().unwrap_or_default();
                        !tracked
                            .resume_at
                            .iter()
                            .any(|(resumed, at)| offset < *at && **resumed == *id)
                    })
                    .cloned(),
            );
            tracked.resume_at.retain(|(_, at)| *at > offset + 1);
        }
        self.tasks.insert(Arc::from(task_id), tracked);
        told?;
        Ok(notices)
    }

    /// A task's machine and configs as of just before `offset`, from its records read back;
    /// the notices of configs a previous owner's push progress records say are behind go to
    /// `resumed`.
    async fn seed(
        &mut self,
        partition: u32,
        task_id: &str,
        offset: u64,
        resumed: &mut Vec<Notice>,
    ) -> Result<Tracked> {
        let mut tracked = Tracked::new(self.clock);
        // Progress records the previous owner wrote are in the log by the time this sender
        // took the partition: bring the view that far, once per assignment.
        let assignment = self.assignment(partition).await?;
        let Some((info, _)) = self.view.lookup_any(task_id) else {
            return Ok(tracked);
        };
        let mut records = self.view.task_records(&info, false).await?;
        records.sort_by_key(|(at, _)| *at);
        // Of each config, the latest progress record written before this assignment.
        let mut behind: Vec<(Box<str>, u64, u64)> = Vec::new();
        if let Some(Assignment {
            start,
            end: Some(end),
        }) = assignment
        {
            for (at, record) in &records {
                if let RecordBody::PushProgress { config_id, next } = &record.body
                    && (start..end).contains(at)
                {
                    behind.retain(|(id, _, _)| **id != **config_id);
                    behind.push((config_id.as_str().into(), *next, *at));
                }
            }
        }
        let task: Arc<str> = Arc::from(task_id);
        behind.retain(|(id, _, _)| self.resumed.insert((task.clone(), id.clone())));
        for (at, record) in records.iter().take_while(|(at, _)| *at < offset) {
            tracked.fold(task_id, *at, record);
        }
        tracked.share_configs();
        for (id, next, _) in &behind {
            if *next > offset {
                tracked.resume_at.push((id.clone(), *next));
            }
        }
        // Made again from the earliest resume point, each for its config from its own.
        let Some(from) = behind.iter().map(|(_, next, _)| *next).min() else {
            return Ok(tracked);
        };
        if from >= offset {
            return Ok(tracked);
        }
        let mut replay = Tracked::new(self.clock);
        for (at, record) in records.iter().take_while(|(at, _)| *at < from) {
            replay.fold(task_id, *at, record);
        }
        replay.share_configs();
        for (at, record) in records
            .iter()
            .skip_while(|(at, _)| *at < from)
            .take_while(|(at, _)| *at < offset)
        {
            for notice in tell(
                &self.view,
                self.sync_timeout,
                &mut replay,
                partition,
                *at,
                record,
            )
            .await?
            {
                let config = notice.config.id.as_deref().unwrap_or_default();
                if let Some((_, _, anchor)) = behind
                    .iter()
                    .find(|(id, next, _)| **id == *config && *at >= *next)
                {
                    resumed.push(Notice {
                        resumed: Some((*at, *anchor)),
                        ..notice
                    });
                }
            }
        }
        Ok(tracked)
    }

    /// The current assignment of `partition`, its end known (read once).
    async fn assignment(&mut self, partition: u32) -> Result<Option<Assignment>> {
        let Some(assignment) = self.assignments.get(&partition).copied() else {
            return Ok(None);
        };
        if assignment.end.is_some() {
            return Ok(Some(assignment));
        }
        let ends = self.log.end_offsets(&self.events).await?;
        let end = ends.get(partition as usize).copied().unwrap_or_default();
        self.view.sync_to(partition, end, self.sync_timeout).await?;
        let known = Assignment {
            end: Some(end),
            ..assignment
        };
        self.assignments.insert(partition, known);
        Ok(Some(known))
    }

    /// Stop following `task_id`: it is read back when it next changes (after an error that
    /// left its state unsure).
    pub(super) fn forget(&mut self, partition: u32, offset: u64, task_id: &str) {
        self.tasks.remove(task_id);
        self.was_read(partition, offset);
        self.unfollowed(partition);
        // What it resumed was not sent on: resumed again when read back.
        self.resumed.retain(|(task, _)| &**task != task_id);
    }

    /// Drop the least recently changed tenth once past the most followed: they are read
    /// back when they next change.
    fn make_room(&mut self) {
        if self.tasks.len() < self.max {
            return;
        }
        let mut ages: Vec<u64> = self.tasks.values().map(|t| t.touched).collect();
        let cut = ages.len() / 10;
        let (_, &mut oldest, _) = ages.select_nth_unstable(cut);
        let view = &self.view;
        let mut dropped = HashSet::default();
        self.tasks.retain(|task, t| {
            let kept = t.touched > oldest;
            if !kept {
                dropped.insert(view.partition_of(task));
            }
            kept
        });
        for partition in dropped {
            self.unfollowed(partition);
        }
    }
}

/// Whether a message record's bytes may hold an inline push config: its field's name in
/// either spelling (`taskPushNotificationConfig`, `task_push_notification_config`), or an
/// escape that could hide it. The needles are ASCII, so a match never spans a byte that is
/// not UTF-8.
fn may_carry_config(payload: &[u8]) -> bool {
    payload.utf8_chunks().any(|chunk| {
        let text = chunk.valid();
        text.contains("otification") || text.contains("\\u")
    })
}

/// Apply the record at `offset` to `tracked` and make its notices.
async fn tell(
    view: &TaskView,
    sync_timeout: Duration,
    tracked: &mut Tracked,
    partition: u32,
    offset: u64,
    record: &Record,
) -> Result<Vec<Notice>> {
    let task_id = record.header.task_id.as_str();
    let Ok(change) = tracked.machine.apply(record) else {
        return Ok(Vec::new());
    };
    let registered = tracked.configs.apply(task_id, offset, &change).is_some();
    // Notices share the configs; a change of them rebuilds the shared list.
    if registered || matches!(change, Change::Push(_) | Change::Created(_)) {
        tracked.share_configs();
    }
    let state = tracked.machine.state().unwrap_or(TaskState::Unspecified);
    // Only push records apply after the end (rules 2, 16): another change that leaves the
    // task finished is its end.
    let ends = state.is_terminal() && !matches!(change, Change::Push(_));
    let answered = tracked.machine.is_answered();
    // The configs told of this record: those registered before it.
    let registered_when = |when: fn(u64, u64) -> bool| -> Vec<Arc<TaskPushNotificationConfig>> {
        tracked
            .configs
            .configs()
            .iter()
            .zip(&tracked.shared)
            .filter(|(r, _)| when(r.since, offset))
            .map(|(_, shared)| shared.clone())
            .collect()
    };
    let told = registered_when(|since, offset| since < offset);
    let new = registered_when(|since, offset| since == offset);
    let notice = |config, body: &Bytes| Notice {
        config,
        body: body.clone(),
        resumed: None,
    };
    let mut notices = Vec::new();
    if !new.is_empty() {
        let body = match (&change, tracked.ended.clone()) {
            (Change::Created(request), _) => {
                let task = ChangeFold::new(&record.header, (**request).clone());
                Some(encode(&StreamResponse::Task(task.into_parts().0))?)
            }
            // Registered after the end: the finished task, as told at the end.
            (_, Some(body)) => Some(body),
            _ => match task_at(view, sync_timeout, partition, task_id, offset).await? {
                Some(task) => Some(encode(&StreamResponse::Task(task))?),
                // A task gone meanwhile (expired) has nothing left to tell.
                None => None,
            },
        };
        if let Some(body) = body {
            if state.is_terminal() {
                keep_end(tracked, &body);
            }
            notices.extend(new.into_iter().map(|config| notice(config, &body)));
        }
    }
    if !told.is_empty() {
        let event = TaskEvent {
            offset,
            task_id: Arc::from(task_id),
            context_id: Arc::from(record.header.context_id.as_str()),
            timestamp_ms: record.header.timestamp_ms,
            state,
            change,
        };
        let response = if ends && !answered {
            // The end of the task: the whole task, as its last notification.
            task_at(view, sync_timeout, partition, task_id, offset)
                .await?
                .map(StreamResponse::Task)
        } else {
            crate::bridge::to_response(&event)
        };
        if let Some(response) = response {
            let body = encode(&response)?;
            if ends && !answered {
                keep_end(tracked, &body);
            }
            notices.extend(told.into_iter().map(|config| notice(config, &body)));
        }
    }
    Ok(notices)
}

/// Keep a finished task's last notification for configs registered after its end.
fn keep_end(tracked: &mut Tracked, body: &Bytes) {
    if body.len() <= KEPT_END_BYTES {
        tracked.ended = Some(body.clone());
    }
}

/// The task as of the record at `offset` (that record included), folded from its records
/// read back; `None` once it is gone (expired).
async fn task_at(
    view: &TaskView,
    sync_timeout: Duration,
    partition: u32,
    task_id: &str,
    offset: u64,
) -> Result<Option<Task>> {
    view.sync_to(partition, offset + 1, sync_timeout).await?;
    let Some((info, _)) = view.lookup_any(task_id) else {
        return Ok(None);
    };
    let mut records = view.task_records(&info, false).await?;
    records.sort_by_key(|(at, _)| *at);
    let mut fold = TaskFold::new();
    for (_, record) in records.iter().take_while(|(at, _)| *at <= offset) {
        fold.apply(record);
    }
    Ok(fold.into_task())
}

fn encode(response: &StreamResponse) -> Result<Bytes> {
    serde_json::to_vec(response)
        .map(Bytes::from)
        .map_err(|e| Error::new(ErrorKind::Internal, "cannot encode a notification").with_source(e))
}
