//! Reading tasks back from the log: a task's content records, read and folded with the state
//! the view holds (`GetTask`, `ListTasks`, snapshots of streams).

use agentlog_wire::Record;
use agentlog_wire::a2a::{Message, Task};
use agentlog_wire::fold::{StatusMark, fold_content, fold_content_after};

use super::polled::{Found, Version};
use super::tasks::applied::{self, content_offsets, content_places};
use super::tasks::task_map::Lead;
use super::{TaskInfo, TaskView};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::log::raw::Place;
use crate::retention::now_ms;

/// How far a finished task's expiry must be for a read of it to skip its sync
/// ([`TaskView::is_settled`]): more than the writers' clocks may disagree by.
const SETTLED_MARGIN_MS: u64 = 60_000;

impl TaskView {
    /// The task if it exists and `caller` may see it, folded from its content records read
    /// back from the log. What `GetTask` needs, and no more: it copies nothing else out of
    /// the view (unlike [`lookup`](Self::lookup) then [`load`](Self::load)), so that it
    /// touches as little memory as it can in a view of many tasks. A task read again
    /// unchanged is given from its kept fold (`polled.rs`).
    pub async fn get(&self, caller: &Caller, task_id: &str) -> Result<Option<Task>> {
        let (partition, part) = self.inner.part_of(task_id);
        // The task's first records start loading while its entry does (`log/place.rs`).
        let prefetch = |lead: Lead| {
            if let Some(prefetcher) = &self.inner.prefetcher {
                for place in lead {
                    prefetcher.prefetch(partition, place);
                }
            }
        };
        let found = {
            let tasks = part.read();
            let found = tasks.owned_ahead(caller, task_id, now_ms(), prefetch);
            // A reply answered in the task's place: there is no task (fold rule 15).
            found
                .filter(|e| !e.machine.is_answered())
                .and_then(|entry| {
                    if applied::spilled(&entry.records).is_some() {
                        return Some(Err(super::info(partition, entry)));
                    }
                    let status = entry.machine.status()?;
                    let places = content_places(&entry.records, &entry.places);
                    Some(Ok((content_offsets(&entry.records), places, status)))
                })
        };
        let (content, places, status) = match found {
            None => return Ok(None),
            // A long task: folded from everything it has.
            Some(Err(info)) => return self.load(&info).await.map(Some),
            Some(Ok(found)) => found,
        };
        let polled = &self.inner.polled;
        // The version to keep the fold under, when it is worth keeping.
        let mut keep_as = None;
        if let Some(&last_content) = content.last() {
            let version = Version {
                last_content,
                contents: content.len(),
                status,
            };
            match polled.find(task_id, version) {
                Found::Kept(task) => return Ok(Some(Task::clone(&task))),
                Found::Fold { keep } => keep_as = keep.then_some(version),
            }
        }
        match self
            .fold_content(task_id, partition, &content, &places, status, None)
            .await
        {
            Err(error) if error.kind() == ErrorKind::TaskNotFound => Ok(None),
            Ok((task, _)) => {
                if let Some(version) = keep_as {
                    polled.keep(task_id, version, &task);
                }
                Ok(Some(task))
            }
            Err(error) => Err(error),
        }
    }

    /// Whether the view shows `task_id` finished (terminal, or answered by a reply), kept
    /// forever or at least a minute before it expires: nothing appended to the
    /// log since can change what a read of it answers (fold rule 2; a new incarnation starts
    /// only at the expiry, by its writer's clock, rule 14), so such a read needs no sync.
    pub fn is_settled(&self, task_id: &str) -> bool {
        let now = now_ms();
        let tasks = self.inner.part_of(task_id).1.read();
        tasks.live_entry(task_id, now).is_some_and(|entry| {
            let machine = &entry.machine;
            machine.is_terminal()
                && machine
                    .expires_at_ms()
                    .is_none_or(|at| at > now.saturating_add(SETTLED_MARGIN_MS))
        })
    }

    /// The reply that answered in the place of the task `info` describes (fold rule 15), as
    /// its sender receives it; `None` if no reply answered it.
    pub async fn answer(&self, info: &TaskInfo) -> Result<Option<Message>> {
        if !info.answered {
            return Ok(None);
        }
        let records = self.task_records(info, false).await?;
        let fold = agentlog_wire::fold::fold(records.iter().map(|(_, record)| record));
        Ok(fold.answer().cloned())
    }

    /// The task `info` describes, folded from its content records read back from the log.
    pub async fn load(&self, info: &TaskInfo) -> Result<Task> {
        self.load_turn(info, None).await.map(|(task, _)| task)
    }

    /// [`load`](Self::load), and the origin (bridge path, trace context) of the command or
    /// continue that brought message `turn` (empty if none did): what a worker gives the
    /// handler of that turn (the hop guard, its trace), read with the task at no extra cost.
    pub async fn load_turn(
        &self,
        info: &TaskInfo,
        turn: Option<&str>,
    ) -> Result<(Task, TurnOrigin)> {
        if applied::spilled(&info.records).is_some() {
            let records = self.task_records(info, false).await?;
            let path = turn_origin(&records, turn);
            let mut fold = agentlog_wire::fold::TaskFold::new();
            for (_, record) in &records {
                fold.apply(record);
            }
            let task = fold.into_task().ok_or_else(|| {
                Error::new(
                    ErrorKind::Corrupt,
                    format!("task {}: its records do not fold to a task", info.id),
                )
            })?;
            return Ok((task, path));
        }
        let content = content_offsets(&info.records);
        // A first turn whose command this process appended: folded from its parse.
        if let [command] = content.as_slice()
            && let Some(kept) = self.take_handed_off(&info.id, *command)
        {
            let path = match turn {
                Some(turn) if kept.header.message_id == turn => TurnOrigin::of(&kept.header),
                _ => TurnOrigin::default(),
            };
            let task = fold_content_after(&kept.header, kept.request, [], info.status());
            return task.map(|task| (task, path)).ok_or_else(|| {
                Error::new(
                    ErrorKind::Internal,
                    format!("task {}: its command does not fold", info.id),
                )
            });
        }
        self.fold_content(&info.id, info.partition, &content, &[], info.status(), turn)
            .await
    }

    async fn fold_content(
        &self,
        task_id: &str,
        partition: u32,
        content: &[u64],
        places: &[Place],
        status: StatusMark,
        turn: Option<&str>,
    ) -> Result<(Task, TurnOrigin)> {
        let records = match self.read_records(partition, content, places).await {
            // The task expired while it was being read, and the log deleted its records:
            // a clean not-found, as a moment later.
            Err(error) if error.kind() == ErrorKind::Corrupt && !self.is_retained(task_id) => {
                return Err(Error::task_not_found(task_id));
            }
            read => read?,
        };
        let path = turn_origin(&records, turn);
        let task = fold_content(records.iter().map(|(_, record)| record), status).ok_or_else(|| {
            Error::new(
                ErrorKind::Corrupt,
                format!("task {task_id}: its content records do not fold (the first must be its command)"),
            )
        })?;
        Ok((task, path))
    }

    /// Whether the view holds `task_id` and it has not expired.
    fn is_retained(&self, task_id: &str) -> bool {
        self.inner
            .part_of(task_id)
            .1
            .read()
            .live_entry(task_id, now_ms())
            .is_some()
    }

    /// Read and decode the records at `offsets` (ascending) of `partition`, at `places` (one
    /// per offset, or none known: see [`Place`]).
    pub async fn read_records(
        &self,
        partition: u32,
        offsets: &[u64],
        places: &[Place],
    ) -> Result<Vec<(u64, Record)>> {
        let topic = &self.inner.topic;
        let stored = self
            .inner
            .log
            .read_at_places(topic, partition, offsets, places)
            .await?;
        if stored.len() != offsets.len() || stored.iter().zip(offsets).any(|(s, o)| s.offset != *o)
        {
            return Err(Error::new(
                ErrorKind::Corrupt,
                format!(
                    "{topic}: expected the records at offsets {offsets:?} of partition {partition}, read {:?}",
                    stored.iter().map(|s| s.offset).collect::<Vec<_>>()
                ),
            ));
        }
        stored
            .into_iter()
            .map(|s| {
                let record = Record::decode(&s.payload).map_err(|e| {
                    Error::new(
                        ErrorKind::Corrupt,
                        format!("record at partition {partition} offset {}", s.offset),
                    )
                    .with_source(e)
                })?;
                Ok((s.offset, record))
            })
            .collect()
    }
}

/// Where a turn's message came from: what its command or continue record says of the call
/// that wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnOrigin {
    /// The bridge path (`bridge_hops`): the hop guard's.
    pub hops: Vec<String>,
    /// The call's W3C trace context, if it came with one.
    pub trace: Option<agentlog_wire::trace::TraceContext>,
}

impl TurnOrigin {
    fn of(header: &agentlog_wire::RecordHeader) -> Self {
        Self {
            hops: header.bridge_hops.clone(),
            trace: agentlog_wire::trace::TraceContext::from_content_type(&header.content_type),
        }
    }
}

/// The origin of the last command or continue among `records` that brought `turn`.
fn turn_origin(records: &[(u64, Record)], turn: Option<&str>) -> TurnOrigin {
    let Some(turn) = turn else {
        return TurnOrigin::default();
    };
    records
        .iter()
        .rev()
        .map(|(_, record)| record)
        .find(|r| {
            r.header.message_id == turn
                && matches!(
                    r.body,
                    agentlog_wire::RecordBody::Command { .. }
                        | agentlog_wire::RecordBody::Continue { .. }
                )
        })
        .map(|r| TurnOrigin::of(&r.header))
        .unwrap_or_default()
}

impl TaskView {
    /// The task's records read back from the log, in order: its listed applied records (only
    /// those with content, if `content_only`), and for a task with more than [`MAX_LISTED`](applied::MAX_LISTED),
    /// every record of the task in its partition from where the listing stops to its last
    /// applied record (applied or not: fold them to know). What anything that reads a task
    /// back goes through.
    pub async fn task_records(
        &self,
        info: &TaskInfo,
        content_only: bool,
    ) -> crate::error::Result<Vec<(u64, agentlog_wire::Record)>> {
        let offsets: Vec<u64> = applied::listed(&info.records)
            .iter()
            .filter(|r| !content_only || r.has_content())
            .map(|r| r.offset())
            .collect();
        let mut records = self.read_records(info.partition, &offsets, &[]).await?;
        if let Some((from, last)) = applied::spilled(&info.records) {
            records.extend(self.scan_task(info.partition, &info.id, from, last).await?);
        }
        Ok(records)
    }

    /// The records of `task_id` in `partition` from `from` to `last` (inclusive).
    async fn scan_task(
        &self,
        partition: u32,
        task_id: &str,
        from: u64,
        last: u64,
    ) -> crate::error::Result<Vec<(u64, agentlog_wire::Record)>> {
        let mut found = Vec::new();
        let mut next = from;
        while next <= last {
            let batch = self
                .inner
                .log
                .read(&self.inner.topic, partition, next, 1024)
                .await?;
            let Some(end) = batch.last().map(|r| r.offset) else {
                break;
            };
            for stored in batch.into_iter().filter(|r| r.offset <= last) {
                // Another task's record, or one that does not decode or that the trust
                // turns away (the fold skipped it too, and counted it): not this task's.
                if let Ok(record) = agentlog_wire::Record::decode(&stored.payload)
                    && record.header.task_id == task_id
                    && self
                        .inner
                        .options
                        .verifier
                        .as_ref()
                        .is_none_or(|v| v.check(&record).is_ok())
                {
                    found.push((stored.offset, record));
                }
            }
            next = end + 1;
        }
        Ok(found)
    }
}
