//! Legacy `tasks/list {cursor?}`: the caller's tasks on every tool agent, a page at a time;
//! [`page`] serves `resources/list` too, over the tool agents and the A2A ones.
//!
//! One order over every agent, the A2A `ListTasks` one: newest status first, ties by
//! [`crate::view::list_tie`] of the id. Each page asks every agent's bridge for a page after
//! the cursor (`Bridge::list_tasks`: the view's owner index, O(page + log n), no scan) and
//! merges them. The cursor is a position (the last task's status time and id, which every
//! agent's view takes as its own page token), so a task created between two pages, being newer
//! than every position, never shifts a later page (status times are milliseconds, so one
//! created within the cursor's own millisecond sorts by its id's hash); only a task whose
//! status changes in between moves (to the front, as in A2A `ListTasks`). A cursor holds no caller: every page is listed
//! as the caller, so another caller's cursor shows nothing of theirs.
//!
//! Bridges sharing the agents' partitions list as one (`super::shares`): the bridge a client
//! asks lists its partitions and merges the pages the other members answer for theirs (each
//! the same request over its share, answered raw: the tasks with their agents), so the page
//! and its cursor are those of one bridge holding every partition.

use agentlog_wire::a2a::{ListTasksRequest, Task};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::rpc::Ctx;
use super::{ListShare, McpBridge};
use crate::agent::Caller;
use crate::bridge::Bridge;
use crate::error::{Error, ErrorKind, Result};

/// A cursor this module did not issue.
pub(super) fn invalid_cursor() -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        "Invalid cursor: not a tasks/list cursor this server issued",
    )
    .with_detail("field", "cursor")
}

/// The cursor after the task whose status time is `status_ms` and id `task_id`.
pub(super) fn encode(status_ms: u64, task_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(json!([status_ms, task_id]).to_string())
}

/// The position a cursor from [`encode`] names.
pub(super) fn decode(cursor: &str) -> Result<(u64, String)> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| invalid_cursor())?;
    serde_json::from_slice(&bytes).map_err(|_| invalid_cursor())
}

/// A page of tasks: each with its agent and bridge, newest status first; `next` the position
/// of its last task when more may follow.
pub(super) struct Page<'a> {
    pub(super) tasks: Vec<(&'a str, &'a Bridge, Task)>,
    pub(super) next: Option<(u64, String)>,
}

/// Where a member's raw page of a shared listing is in its answer's result.
const SHARE_KEY: &str = "agentlog/share";

/// A member's page of a task listing over its share of the partitions (module docs): its
/// tasks with their agents, and whether it has more.
#[derive(Debug, Serialize, Deserialize)]
struct SharedPage {
    tasks: Vec<SharedTask>,
    more: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct SharedTask {
    agent: String,
    task: Task,
}

/// Whether a listing is a member's share of another's fan-out, to be answered as its raw page
/// ([`shared_result`]).
pub(super) fn answers_raw(share: Option<&ListShare>) -> bool {
    share.is_some_and(|share| share.pages.is_none())
}

/// The result answering a member's share: `page` raw.
pub(super) fn shared_result(page: &Page<'_>) -> Map<String, Value> {
    let shared = SharedPage {
        tasks: page
            .tasks
            .iter()
            .map(|(agent, _, task)| SharedTask {
                agent: (*agent).to_owned(),
                task: task.clone(),
            })
            .collect(),
        more: page.next.is_some(),
    };
    let mut result = Map::new();
    result.insert(
        SHARE_KEY.into(),
        serde_json::to_value(shared).unwrap_or(Value::Null),
    );
    result
}

/// A member's answer to its share: its page, or (an error answered) a retryable error
/// naming it.
fn shared_page(body: &[u8]) -> Result<SharedPage> {
    #[derive(Deserialize)]
    struct Reply {
        #[serde(default)]
        result: Option<Map<String, Value>>,
        #[serde(default)]
        error: Option<Value>,
    }
    let unreadable = |why: String| {
        Error::new(
            ErrorKind::Unavailable,
            format!("a member's page of the listing: {why}; retry"),
        )
    };
    let reply: Reply = serde_json::from_slice(body).map_err(|e| unreadable(e.to_string()))?;
    if let Some(error) = reply.error {
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(unreadable(format!("it answered an error: {message}")));
    }
    let shared = reply
        .result
        .and_then(|mut result| result.remove(SHARE_KEY))
        .ok_or_else(|| unreadable("no page in its answer".to_owned()))?;
    serde_json::from_value(shared).map_err(|e| unreadable(e.to_string()))
}

/// The page of `caller`'s tasks on `bridges` after position `after` (a status time and a
/// task id): each bridge's `ListTasks` page after that position, merged (see the module
/// docs); with `share`, each bridge's over the partitions the share lists here, merged with
/// the other members' pages it carries. `page_size` is 1 to 100.
pub(super) async fn page<'a>(
    caller: &Caller,
    bridges: impl IntoIterator<Item = (&'a String, &'a Bridge)>,
    after: Option<&(u64, String)>,
    page_size: usize,
    share: Option<&ListShare>,
) -> Result<Page<'a>> {
    let token = after.map(|(ms, id)| crate::bridge::page_token(*ms, id));
    let bridges: Vec<(&'a String, &'a Bridge)> = bridges.into_iter().collect();
    // (agent, bridge, task), from every agent: the page is the newest.
    let mut found = Vec::new();
    let mut more = false;
    for (agent, bridge) in &bridges {
        let request = ListTasksRequest {
            page_size: Some(page_size as i32),
            page_token: token.clone(),
            ..ListTasksRequest::default()
        };
        let listed = match share {
            None => bridge.list_tasks(caller, request).await?,
            Some(share) => {
                let partitions = share.of_topic(bridge.view().partitions());
                bridge
                    .list_tasks_in(caller, request, Some(&partitions))
                    .await?
            }
        };
        more |= !listed.next_page_token.is_empty();
        for task in listed.tasks {
            found.push((agent.as_str(), *bridge, task));
        }
    }
    for body in share.and_then(|s| s.pages.as_ref()).into_iter().flatten() {
        let shared = shared_page(body)?;
        more |= shared.more;
        for SharedTask { agent, task } in shared.tasks {
            // An agent this bridge does not serve (another member's definitions): not
            // listed here either.
            if let Some((agent, bridge)) = bridges.iter().find(|(a, _)| **a == agent) {
                found.push((agent.as_str(), *bridge, task));
            }
        }
    }
    let (found, cut) = crate::bridge::merge_newest(found, |(_, _, task)| task, page_size);
    more |= cut;
    let next = found.last().filter(|_| more).map(|(_, _, task)| {
        let (ms, _) = crate::bridge::list_position(task);
        (ms, task.id.clone())
    });
    Ok(Page { tasks: found, next })
}

impl McpBridge {
    /// `tasks/list` (legacy): a page of the caller's tasks and, unless it is the last, the
    /// `nextCursor`.
    pub(super) async fn list(
        &self,
        ctx: &Ctx<'_>,
        params: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>> {
        let after = match super::cursor(params)? {
            None => None,
            Some(cursor) => Some(decode(cursor)?),
        };
        let page_size = self.inner.config.tasks_page_size.clamp(1, 100);
        let bridges = &self.inner.bridges;
        let page = page(ctx.caller, bridges, after.as_ref(), page_size, ctx.share).await?;
        if answers_raw(ctx.share) {
            return Ok(shared_result(&page));
        }
        let mut result = Map::new();
        if let Some((ms, id)) = &page.next {
            result.insert("nextCursor".into(), json!(encode(*ms, id)));
        }
        let tasks = page
            .tasks
            .iter()
            .map(|(agent, bridge, task)| {
                Value::Object(self.task_of(agent, bridge, task, true).legacy())
            })
            .collect();
        result.insert("tasks".into(), Value::Array(tasks));
        Ok(result)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let cursor = encode(1_700_000_000_000, "t:1");
        assert_eq!(
            decode(&cursor).unwrap(),
            (1_700_000_000_000, "t:1".to_owned())
        );
        for bad in ["!", "bm9wZQ", &URL_SAFE_NO_PAD.encode("[\"x\", 2]")] {
            assert_eq!(
                decode(bad).map_err(|e| e.kind()).err(),
                Some(ErrorKind::InvalidParams)
            );
        }
    }
}
