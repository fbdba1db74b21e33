//! Which notifications a record makes: the sender follows, in log order, the tasks that have
//! push configs (fold rule 16), each with its own machine and configs, and turns every
//! record that changes one of them into one `StreamResponse` per config registered before
//! it. A config's first notification is the task as of the record that registered it.
//!
//! A task is followed from the first record of it the sender reads once the view says the
//! task has a config; its machine and configs are then folded from the task's records before
//! that one, read back from the log. Tasks without configs cost one lookup in the view. A
//! finished task stays followed (until the least recently changed are dropped) with its last
//! notification, which configs registered after the end get without a read-back.

use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::a2a::{StreamResponse, Task, TaskPushNotificationConfig};
use agentlog_wire::fold::{Change, ChangeFold, PushConfigs, TaskFold, TaskMachine};
use agentlog_wire::{Record, RecordBody, TaskState};
use bytes::Bytes;
use foldhash::HashMap;

use crate::error::{Error, ErrorKind, Result};
use crate::view::{TaskEvent, TaskView};

/// One notification to send: to which config of which task, what, and for which record.
#[derive(Debug, Clone)]
pub(super) struct Notice {
    /// The config, as the task holds it (its credentials included).
    pub(super) config: Arc<TaskPushNotificationConfig>,
    /// The `StreamResponse` JSON.
    pub(super) body: Bytes,
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
}

/// The largest finished task kept for late registrations (a larger one is read back).
const KEPT_END_BYTES: usize = 64 * 1024;

/// The tasks followed in one partition's order (the consumer owns it).
pub(super) struct Tracker {
    view: TaskView,
    tasks: HashMap<Arc<str>, Tracked>,
    max: usize,
    sync_timeout: Duration,
    clock: u64,
}

impl Tracker {
    pub(super) fn new(view: TaskView, max: usize, sync_timeout: Duration) -> Self {
        Self {
            view,
            tasks: HashMap::default(),
            max: max.max(1),
            sync_timeout,
            clock: 0,
        }
    }

    /// How many tasks are followed.
    pub(super) fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Forget the tasks of `partition` (another sender owns it now).
    pub(super) fn drop_partition(&mut self, partition: u32) {
        let view = &self.view;
        self.tasks
            .retain(|task, _| view.partition_of(task) != partition);
    }

    /// The notifications the record at `offset` of `partition` makes.
    pub(super) async fn on_record(
        &mut self,
        partition: u32,
        offset: u64,
        record: &Record,
    ) -> Result<Vec<Notice>> {
        let task_id = record.header.task_id.as_str();
        self.clock += 1;
        let tells_nothing = matches!(
            record.body,
            RecordBody::PushDeadLetter { .. } | RecordBody::PushConfigDeleted { .. }
        );
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
            let tracked = self.seed(task_id, offset).await?;
            self.make_room();
            self.tasks.insert(Arc::from(task_id), tracked);
        }
        let Some(tracked) = self.tasks.get_mut(task_id) else {
            return Ok(Vec::new());
        };
        tracked.touched = self.clock;
        let Ok(change) = tracked.machine.apply(record) else {
            return Ok(Vec::new());
        };
        let registered = tracked.configs.apply(task_id, offset, &change).is_some();
        // Notices share the configs; a change of them rebuilds the shared list.
        if registered || matches!(change, Change::Push(_) | Change::Created(_)) {
            tracked.shared = tracked
                .configs
                .configs()
                .iter()
                .map(|r| Arc::new(r.config.clone()))
                .collect();
        }
        let state = tracked.machine.state().unwrap_or(TaskState::Unspecified);
        // Only push records apply after the end (rules 2, 16): another change that leaves the
        // task finished is its end.
        let ends = state.is_terminal() && !matches!(change, Change::Push(_));
        let answered = tracked.machine.is_answered();
        // The configs told of this record: those registered before it.
        let told: Vec<_> = tracked
            .configs
            .configs()
            .iter()
            .zip(&tracked.shared)
            .filter(|(r, _)| r.since < offset)
            .map(|(_, shared)| shared.clone())
            .collect();
        let new: Vec<_> = tracked
            .configs
            .configs()
            .iter()
            .zip(&tracked.shared)
            .filter(|(r, _)| r.since == offset)
            .map(|(_, shared)| shared.clone())
            .collect();
        let kept_end = tracked.ended.clone();
        let mut notices = Vec::new();
        if !new.is_empty() {
            let body = match (&change, kept_end) {
                (Change::Created(request), _) => {
                    let task = ChangeFold::new(&record.header, (**request).clone());
                    Some(encode(&StreamResponse::Task(task.into_parts().0))?)
                }
                // Registered after the end: the finished task, as told at the end.
                (_, Some(body)) => Some(body),
                _ => match self.task_at(partition, task_id, offset).await? {
                    Some(task) => Some(encode(&StreamResponse::Task(task))?),
                    // A task gone meanwhile (expired) has nothing left to tell.
                    None => None,
                },
            };
            if let Some(body) = body {
                if state.is_terminal() {
                    self.keep_end(task_id, &body);
                }
                notices.extend(new.into_iter().map(|config| Notice {
                    config,
                    body: body.clone(),
                }));
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
                self.task_at(partition, task_id, offset)
                    .await?
                    .map(StreamResponse::Task)
            } else {
                crate::bridge::to_response(&event)
            };
            if let Some(response) = response {
                let body = encode(&response)?;
                if ends && !answered {
                    self.keep_end(task_id, &body);
                }
                notices.extend(told.into_iter().map(|config| Notice {
                    config,
                    body: body.clone(),
                }));
            }
        }
        Ok(notices)
    }

    /// Keep a finished task's last notification for configs registered after its end.
    fn keep_end(&mut self, task_id: &str, body: &Bytes) {
        if let Some(tracked) = self.tasks.get_mut(task_id)
            && body.len() <= KEPT_END_BYTES
        {
            tracked.ended = Some(body.clone());
        }
    }

    /// A task's machine and configs as of just before `offset`, from its records read back.
    async fn seed(&self, task_id: &str, offset: u64) -> Result<Tracked> {
        let mut tracked = Tracked {
            machine: TaskMachine::new(),
            configs: PushConfigs::new(),
            shared: Vec::new(),
            touched: self.clock,
            ended: None,
        };
        let Some((info, _)) = self.view.lookup_any(task_id) else {
            return Ok(tracked);
        };
        for (at, record) in self.view.task_records(&info, false).await? {
            if at >= offset {
                break;
            }
            if let Ok(change) = tracked.machine.apply(&record) {
                tracked.configs.apply(task_id, at, &change);
            }
        }
        tracked.shared = tracked
            .configs
            .configs()
            .iter()
            .map(|r| Arc::new(r.config.clone()))
            .collect();
        Ok(tracked)
    }

    /// The task as of the record at `offset` (that record included), folded from its records
    /// read back; `None` once it is gone (expired).
    async fn task_at(&self, partition: u32, task_id: &str, offset: u64) -> Result<Option<Task>> {
        self.view
            .sync_to(partition, offset + 1, self.sync_timeout)
            .await?;
        let Some((info, _)) = self.view.lookup_any(task_id) else {
            return Ok(None);
        };
        let records = self.view.task_records(&info, false).await?;
        let mut fold = TaskFold::new();
        for (_, record) in records.iter().take_while(|(at, _)| *at <= offset) {
            fold.apply(record);
        }
        Ok(fold.into_task())
    }

    /// Stop following `task_id`: it is read back when it next changes (after an error that
    /// left its state unsure).
    pub(super) fn forget(&mut self, task_id: &str) {
        self.tasks.remove(task_id);
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
        self.tasks.retain(|_, t| t.touched > oldest);
    }
}

fn encode(response: &StreamResponse) -> Result<Bytes> {
    serde_json::to_vec(response)
        .map(Bytes::from)
        .map_err(|e| Error::new(ErrorKind::Internal, "cannot encode a notification").with_source(e))
}
