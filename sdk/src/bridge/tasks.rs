//! `GetTask`, `CancelTask`, `ListTasks` and `SubscribeToTask`.

use agentlog_wire::a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, SubscribeToTaskRequest,
    Task,
};
use agentlog_wire::timestamp::parse_millis;
use agentlog_wire::{Record, RecordBody};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::send::check_history_length;
use super::stream::{Close, Start, TaskStream, task_stream};
use super::{Bridge, Topics, not_found, trim_history};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};
use crate::view::{ListFilter, PartitionPins, TaskView};

/// `ListTasks` page size when the request gives none, and the largest one allowed (spec).
const DEFAULT_PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 100;

impl Bridge {
    /// `GetTask`: the task folded from the log, as of the request (read-your-writes; a
    /// finished task's answer is fixed, so the view answers it without a sync).
    pub async fn get_task(&self, caller: &Caller, request: GetTaskRequest) -> Result<Task> {
        check_history_length(request.history_length)?;
        require_id(&request.id)?;
        let _pinned = self.sync_unless_settled(&request.id).await?;
        let task = self
            .inner
            .view
            .get(caller, &request.id)
            .await?
            .ok_or_else(|| not_found(&request.id))?;
        Ok(trim_history(task, request.history_length))
    }

    /// `CancelTask`: write a cancel request. It cancels the task at its log position unless a
    /// terminal record came first (then -32002, as for an already terminal task). The worker
    /// running the task sees the cancellation through its view and stops.
    pub async fn cancel_task(&self, caller: &Caller, request: CancelTaskRequest) -> Result<Task> {
        require_id(&request.id)?;
        let task_id = request.id.as_str();
        let _pinned = self.sync_task(task_id).await?;
        let view = &self.inner.view;
        let info = view
            .lookup(caller, task_id)
            .filter(|info| !info.answered)
            .ok_or_else(|| not_found(task_id))?;
        if info.state.is_terminal() {
            return Err(not_cancelable(task_id, &info.state.to_string()));
        }
        let metadata = match &request.metadata {
            Some(m) => serde_json::to_string(m).unwrap_or_default(),
            None => String::new(),
        };
        let record = Record {
            header: self.header(
                caller,
                task_id,
                &info.context_id,
                format!("cancel-{}", uuid::Uuid::new_v4()),
                vec![self.inner.config.id.clone()],
            ),
            body: RecordBody::CancelRequest { metadata },
        };
        let appended = self.commit(&record, Topics::Events).await?;
        view.sync_to(
            appended.partition,
            appended.first_offset + 1,
            self.inner.config.sync_timeout,
        )
        .await?;
        let info = view
            .lookup(caller, task_id)
            .ok_or_else(|| not_found(task_id))?;
        if info.state != agentlog_wire::TaskState::Canceled {
            // A terminal record reached the log before the cancel request.
            return Err(not_cancelable(task_id, &info.state.to_string()));
        }
        view.load(&info).await
    }

    /// `ListTasks`: the caller's tasks, newest status first, filtered and paged.
    pub async fn list_tasks(
        &self,
        caller: &Caller,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse> {
        self.list_tasks_in(caller, request, None).await
    }

    /// [`list_tasks`](Self::list_tasks) over `partitions` only (each held, or held on demand
    /// first), or every partition the view holds.
    pub(crate) async fn list_tasks_in(
        &self,
        caller: &Caller,
        request: ListTasksRequest,
        partitions: Option<&[u32]>,
    ) -> Result<ListTasksResponse> {
        check_history_length(request.history_length)?;
        let page_size = match request.page_size {
            None => DEFAULT_PAGE_SIZE,
            Some(n) if (1..=MAX_PAGE_SIZE as i32).contains(&n) => n as usize,
            Some(n) => {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    format!("pageSize must be between 1 and {MAX_PAGE_SIZE}, got {n}"),
                )
                .with_detail("field", "pageSize"));
            }
        };
        let status_after_ms = match &request.status_timestamp_after {
            None => None,
            Some(ts) => Some(parse_millis(ts).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidParams,
                    format!("statusTimestampAfter is not an ISO 8601 timestamp: {ts:?}"),
                )
                .with_detail("field", "statusTimestampAfter")
            })?),
        };
        let cursor = match request.page_token.as_deref() {
            None | Some("") => None,
            Some(token) => Some(decode_cursor(token)?),
        };
        let filter = ListFilter {
            context_id: request.context_id.clone(),
            state: request.status,
            status_after_ms,
            page_size: page_size + 1,
            cursor,
        };
        let view = &self.inner.view;
        // Pinned from before the sync to after the last task is read: a partition retired
        // meanwhile (moved to another bridge) keeps its tasks for this listing, however long
        // it stalls, and is never left out of a page that looks complete.
        let pins = match partitions {
            None => view.pin_held(),
            Some(partitions) => pin_share(view, partitions).await?,
        };
        pins.sync(self.inner.config.sync_timeout).await?;
        let (mut page, total) = pins.list(caller, &filter)?;
        let next_page_token = if page.len() > page_size {
            page.truncate(page_size);
            page.last()
                .map(|last| encode_cursor(last.status_timestamp_ms, &last.id))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let include_artifacts = request.include_artifacts.unwrap_or(false);
        let mut tasks = Vec::with_capacity(page.len());
        for info in &page {
            let mut task = trim_history(view.load(info).await?, request.history_length);
            if !include_artifacts {
                task.artifacts.clear();
            }
            tasks.push(task);
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token,
            page_size: page_size as i32,
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }

    /// `SubscribeToTask`: the task snapshot, then its events until it is terminal (through
    /// interruptions: a subscriber watches the task, A2A §3.1.6). With `resume_after` (a position from an earlier stream event), no
    /// snapshot: the events after that position, then live ones. A terminal task: -32004.
    pub async fn subscribe_to_task(
        &self,
        caller: &Caller,
        request: SubscribeToTaskRequest,
        resume_after: Option<u64>,
    ) -> Result<TaskStream> {
        require_id(&request.id)?;
        let place = self.inner.limits.stream(caller)?;
        let _pinned = self.sync_task(&request.id).await?;
        let view = &self.inner.view;
        let (info, events) = view
            .subscribe(Some(caller), &request.id)
            .filter(|(info, _)| !info.answered)
            .ok_or_else(|| not_found(&request.id))?;
        if info.state.is_terminal() && resume_after.is_none_or(|p| p >= info.position()) {
            return Err(Error::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "task {} is {}; there is nothing to subscribe to",
                    request.id, info.state
                ),
            )
            .with_detail("taskId", request.id.clone()));
        }
        let stream = task_stream(
            view.clone(),
            info,
            events,
            Start::resuming(resume_after, Start::Snapshot),
            Close::AtTaskEnd,
        );
        Ok(super::limits::holding(stream, place))
    }
}

/// Pins on `partitions` (a member's share of a fan-out): each as the view has it (held, or
/// still retiring), else held on demand first.
async fn pin_share<'a>(view: &'a TaskView, partitions: &[u32]) -> Result<PartitionPins<'a>> {
    let mut wanted = partitions.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut pins = view.pins();
    for p in wanted {
        if pins.add(p) {
            continue;
        }
        view.hold_on_demand(p).await?;
        if !pins.add(p) {
            // Released as soon as held (a placement let the copy go): another holds it.
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!("partition {p} was not held here when the request began; retry"),
            ));
        }
    }
    Ok(pins)
}

fn require_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(
            Error::new(ErrorKind::InvalidParams, "id must not be empty").with_detail("field", "id")
        );
    }
    Ok(())
}

fn not_cancelable(task_id: &str, state: &str) -> Error {
    Error::new(
        ErrorKind::TaskNotCancelable,
        format!("Task cannot be canceled: {task_id} is {state}"),
    )
    .with_detail("taskId", task_id)
}

/// How many fresh ids [`Bridge::mint_message_id`] tries for one whose task lands in a held
/// partition: a view holding 1 of 1000 partitions misses every one with odds of e^-10.
const MINT_TRIES: usize = 10_000;

impl Bridge {
    /// A fresh message id (a v4 UUID) whose new task, of `caller` in its own tenant, lands in
    /// a partition the view holds: a bridge holding a share of the partitions serves the call
    /// it mints an id for itself, with no forward. A view holding none takes the first.
    pub(crate) fn mint_message_id(&self, caller: &Caller) -> String {
        let view = &self.inner.view;
        let fresh = || uuid::Uuid::new_v4().to_string();
        let lands = |id: &str| {
            let task = agentlog_wire::ids::task_id(&caller.tenant, &caller.principal, id);
            view.holds(view.partition_of(&task))
        };
        let first = fresh();
        if lands(&first) || view.held_partitions().is_empty() {
            return first;
        }
        (1..MINT_TRIES)
            .map(|_| fresh())
            .find(|id| lands(id))
            .unwrap_or(first)
    }
}

/// `found` (tasks from several pages of one `ListTasks` order, each reached through
/// `task_of`) merged in that order: newest status first, ties by [`list_tie`] of the id,
/// descending; the first `page_size` kept. Also whether any were left off.
///
/// [`list_tie`]: crate::view::list_tie
pub(crate) fn merge_newest<T>(
    mut found: Vec<T>,
    task_of: impl Fn(&T) -> &Task,
    page_size: usize,
) -> (Vec<T>, bool) {
    found.sort_by_cached_key(|item| std::cmp::Reverse(list_position(task_of(item))));
    let more = found.len() > page_size;
    found.truncate(page_size);
    (found, more)
}

/// Where `task` stands in the `ListTasks` order: its status time (ms) and [`list_tie`] of its id.
///
/// [`list_tie`]: crate::view::list_tie
pub(crate) fn list_position(task: &Task) -> (u64, u32) {
    let ms = task
        .status
        .timestamp
        .as_deref()
        .and_then(parse_millis)
        .unwrap_or(0);
    (ms, crate::view::list_tie(&task.id))
}

/// The page token: `base64url(status_ms ":" task_id)`, opaque to clients. A token for any
/// (status time, id) is a position in every view's `ListTasks` order (the MCP bridge's legacy
/// `tasks/list` pages several agents under one).
pub(crate) fn encode_cursor(status_ms: u64, task_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{status_ms}:{task_id}"))
}

fn decode_cursor(token: &str) -> Result<(u64, String)> {
    let bad = || {
        Error::new(
            ErrorKind::InvalidParams,
            "pageToken is not a token this server issued",
        )
        .with_detail("field", "pageToken")
    };
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (ts, id) = text.split_once(':').ok_or_else(bad)?;
    Ok((ts.parse().map_err(|_| bad())?, id.to_owned()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use agentlog_wire::a2a::SendMessageResponse;

    use super::*;
    use crate::bridge::BridgeConfig;
    use crate::bridge::test_support::send_request;
    use crate::log::layers::{LogMetrics, LogOp, MetricsLayer};

    #[tokio::test]
    async fn a_minted_message_ids_task_lands_in_a_held_partition() {
        let log = crate::log::open("memory://?partitions=16").await.unwrap();
        let config = super::super::BridgeConfig::new("minted").holding(vec![3, 11]);
        let bridge = Bridge::open(log, config).await.unwrap();
        let alice = Caller::principal("alice").in_tenant("acme");
        for _ in 0..50 {
            let id = bridge.mint_message_id(&alice);
            let task = agentlog_wire::ids::task_id("acme", "alice", &id);
            let p = bridge.view().partition_of(&task);
            assert!(p == 3 || p == 11, "{p}");
        }
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let token = encode_cursor(1_700_000_000_000, "t-1");
        assert_eq!(
            decode_cursor(&token).ok(),
            Some((1_700_000_000_000, "t-1".to_owned()))
        );
        for bad in ["!", "bm9jb2xvbg", "eHg6eXk"] {
            assert_eq!(
                decode_cursor(bad).map_err(|e| e.kind()).err(),
                Some(ErrorKind::InvalidParams)
            );
        }
    }

    /// A finished task's answer is fixed: GetTask asks the log for no end, unless the task
    /// expires within the margin the writers' clocks are allowed (a new incarnation may
    /// follow its expiry) or is still running.
    #[tokio::test]
    async fn a_finished_task_is_read_without_a_sync_unless_it_expires_soon() {
        for (retention, settled) in [
            (Duration::ZERO, true),
            (Duration::from_secs(3600), true),
            (Duration::from_secs(30), false),
        ] {
            let metrics = LogMetrics::new();
            let log = crate::log::open("memory://")
                .await
                .unwrap()
                .layer(MetricsLayer::new(metrics.clone()));
            let mut config = BridgeConfig::new("agent");
            config.retention = Some(retention);
            let bridge = Bridge::open(log, config).await.unwrap();
            let caller = Caller::anonymous();
            let sent = bridge
                .send_message(&caller, send_request("m-1", true))
                .await
                .unwrap();
            let SendMessageResponse::Task(task) = sent else {
                panic!("a task")
            };
            let get = || GetTaskRequest {
                tenant: None,
                id: task.id.clone(),
                history_length: None,
            };
            let probes = || metrics.calls(LogOp::EndOffset) + metrics.calls(LogOp::EndOffsets);

            // Submitted: each read syncs.
            let before = probes();
            bridge.get_task(&caller, get()).await.unwrap();
            assert!(probes() > before, "a running task's read syncs");

            let cancel = CancelTaskRequest {
                tenant: None,
                id: task.id.clone(),
                metadata: None,
            };
            let canceled = bridge.cancel_task(&caller, cancel).await.unwrap();
            let before = probes();
            for _ in 0..3 {
                assert_eq!(bridge.get_task(&caller, get()).await.unwrap(), canceled);
            }
            assert_eq!(probes() == before, settled, "retention {retention:?}");
            // Who may see it is still asked.
            let other = Caller::principal("someone else");
            assert!(bridge.get_task(&other, get()).await.is_err());
        }
    }
}
