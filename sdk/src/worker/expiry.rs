//! The expiry of abandoned input: an MCP call answered on its request whose tool asked
//! (`ToolCall::ask`, answered `input_required`: MRTR) waits for a retry that may never come.
//!
//! The bridge that answered holds no state, so the deadline is on the log: the ask's status
//! message records `agentlog.mcp.inputDeadlineMs` (now plus the tool's input timeout,
//! [`Tools::input_timeout`](super::Tools::input_timeout), default [`DEFAULT_INPUT_TIMEOUT`];
//! 0 records none), except for a call that runs as a task (its command says so, or the MRTR
//! retry that made it one: `ToolConfig::input_before_task`), which waits
//! for `tasks/update` as long as its owner likes. Each worker's sweeper looks at the
//! input-required tasks of the partitions it owns, reads each ask's deadline once (at most
//! 64 reads a sweep, so a worker starting beside many waiting tasks keeps serving its queue),
//! and once it has passed appends a cancel request (metadata `{"agentlog.mcp": {"expired": true}}`). Any
//! worker, restarted or not, reads the same deadline from the same record; two sweepers that
//! both cancel (an ownership change between sweeps) write two cancel requests, and the fold's
//! first terminal record wins, so the second changes nothing. A retry after the deadline is
//! refused by the bridge as an expired `requestState` (-32602), cancelled yet or not.
//!
//! With signed records and a trust configured, the workers' key must be allowed
//! `cancel_request` records for the cancel to be applied.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::mcp::input::{MCP_METADATA_KEY, deadline_metadata, deadline_of};
use agentlog_wire::trace::TraceContext;
use agentlog_wire::{Record, RecordBody, RecordHeader, TaskState};
use serde_json::{Map, Value};

use super::attempt::{millis, now_ms};
use super::context::TaskContext;
use super::shared::Shared;
use crate::error::Result;
use crate::view::TaskInfo;

/// How long a tool's ask waits for the client's retry unless
/// [`Tools::input_timeout`](super::Tools::input_timeout) says otherwise: 15 minutes, long
/// enough for a person to answer a form, short enough that abandoned calls do not pile up.
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The metadata of an ask of `task`'s call waiting at most `timeout`: its deadline, or
/// `None` when it gets none (a timeout of 0, or a call that runs as a task).
pub(super) fn ask_metadata(task: &TaskContext, timeout: Duration) -> Option<Map<String, Value>> {
    if timeout.is_zero() || runs_as_task(task) {
        return None;
    }
    Some(deadline_metadata(now_ms().saturating_add(millis(timeout))))
}

/// Whether the call runs as a task: its command asked for one, or (MRTR, then a task) the
/// retry that made it one came (the MCP bridge marks either message `agentlog.mcp.task`).
fn runs_as_task(task: &TaskContext) -> bool {
    task.history().iter().any(|message| {
        message
            .metadata
            .as_ref()
            .and_then(|m| m.get(MCP_METADATA_KEY))
            .and_then(|m| m.get("task"))
            .and_then(Value::as_bool)
            == Some(true)
    })
}

/// How many asks' deadlines one sweep reads from the log at most: the sweep runs in the
/// worker's loop, so a worker that starts beside many waiting tasks learns their deadlines
/// over a few sweeps instead of pausing its queue for all of them.
const READS_PER_SWEEP: usize = 64;

/// One worker's knowledge of the asks waiting in the partitions it owns.
#[derive(Debug, Default)]
pub(super) struct InputExpiry {
    /// Per input-required task and since when it waits (one ask): its deadline, `None` when
    /// it records none or this worker already cancelled it.
    known: HashMap<(Arc<str>, u64), Option<u64>>,
}

impl InputExpiry {
    /// Cancel the tasks of `owned` partitions whose ask's deadline has passed.
    pub(super) async fn sweep(&mut self, shared: &Shared, owned: &[u32]) {
        let now = now_ms();
        let mut seen = HashSet::new();
        let mut reads = 0;
        for &partition in owned {
            for (task_id, since) in shared.view.awaiting_input(partition) {
                let key = (task_id, since);
                seen.insert(key.clone());
                let deadline = match self.known.get(&key) {
                    Some(deadline) => *deadline,
                    None if reads == READS_PER_SWEEP => continue,
                    None => {
                        reads += 1;
                        match deadline(shared, &key.0).await {
                            Ok(deadline) => *self.known.entry(key.clone()).or_insert(deadline),
                            Err(error) => {
                                tracing::warn!(task_id = %key.0, error = %error.report(), "worker: cannot read an ask's deadline; trying again next sweep");
                                continue;
                            }
                        }
                    }
                };
                if deadline.is_none_or(|deadline| deadline > now) {
                    continue;
                }
                match expire(shared, &key.0).await {
                    Ok(()) => {
                        tracing::info!(task_id = %key.0, "worker: cancelled a call whose input did not come before its deadline");
                        self.known.insert(key, None);
                    }
                    Err(error) => {
                        tracing::warn!(task_id = %key.0, error = %error.report(), "worker: cannot cancel an expired ask; trying again next sweep");
                    }
                }
            }
        }
        self.known.retain(|key, _| seen.contains(key));
    }
}

/// The deadline the last ask of `task_id` recorded, if it still waits for input.
async fn deadline(shared: &Shared, task_id: &str) -> Result<Option<u64>> {
    let Some((info, _)) = shared.view.lookup_any(task_id) else {
        return Ok(None);
    };
    if info.state != TaskState::InputRequired {
        return Ok(None);
    }
    let task = shared.view.load(&info).await?;
    Ok(task.status.message.as_ref().and_then(deadline_of))
}

/// Append a cancel request for `task_id` in its owner's name, if it still waits for input.
async fn expire(shared: &Shared, task_id: &str) -> Result<()> {
    let Some((info, owner)) = shared.view.lookup_any(task_id) else {
        return Ok(());
    };
    if info.state != TaskState::InputRequired {
        return Ok(());
    }
    // The cancel ends what the ask's turn left waiting: it carries that turn's trace context
    // (the ask's record's), so the cancellation is notified in the caller's trace.
    let content_type = match ask_trace(shared, &info).await {
        Some(trace) => trace.in_content_type(JSON),
        None => JSON.to_owned(),
    };
    let writer = &shared.writer;
    let record = Record {
        header: RecordHeader {
            task_id: task_id.to_owned(),
            context_id: info.context_id.to_string(),
            message_id: format!("expired-{}", uuid::Uuid::new_v4()),
            source: writer.source.clone(),
            principal: owner.principal,
            tenant: owner.tenant,
            timestamp_ms: now_ms(),
            content_type,
            ..RecordHeader::default()
        },
        body: RecordBody::CancelRequest {
            metadata: format!(r#"{{"{MCP_METADATA_KEY}":{{"expired":true}}}}"#),
        },
    };
    writer.append(&[record]).await?;
    Ok(())
}

/// The media type of a record's JSON payload.
const JSON: &str = "application/json";

/// The trace context of the last record of `info`'s task that carries one (the ask), if any.
async fn ask_trace(shared: &Shared, info: &TaskInfo) -> Option<TraceContext> {
    let records = match shared.view.task_records(info, false).await {
        Ok(records) => records,
        Err(error) => {
            tracing::debug!(task_id = %info.id, error = %error.report(), "worker: cannot read the ask's trace context; the cancel carries none");
            return None;
        }
    };
    records
        .iter()
        .rev()
        .find_map(|(_, record)| TraceContext::from_content_type(&record.header.content_type))
}
