//! Legacy `tasks/list {cursor?}`: the caller's tasks on every tool agent, a page at a time.
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

use agentlog_wire::a2a::ListTasksRequest;
use agentlog_wire::timestamp::parse_millis;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::McpBridge;
use super::rpc::Ctx;
use crate::error::{Error, ErrorKind, Result};

fn invalid_cursor() -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        "Invalid cursor: not a tasks/list cursor this server issued",
    )
    .with_detail("field", "cursor")
}

/// The cursor after the task whose status time is `status_ms` and id `task_id`.
fn encode(status_ms: u64, task_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(json!([status_ms, task_id]).to_string())
}

fn decode(cursor: &str) -> Result<(u64, String)> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| invalid_cursor())?;
    serde_json::from_slice(&bytes).map_err(|_| invalid_cursor())
}

impl McpBridge {
    /// `tasks/list` (legacy): a page of the caller's tasks and, unless it is the last, the
    /// `nextCursor`.
    pub(super) async fn list(
        &self,
        ctx: &Ctx<'_>,
        params: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>> {
        let after = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) if cursor.is_empty() => None,
            Some(Value::String(cursor)) => Some(decode(cursor)?),
            Some(_) => {
                return Err(
                    Error::new(ErrorKind::InvalidParams, "cursor must be a string")
                        .with_detail("field", "cursor"),
                );
            }
        };
        let token = after
            .as_ref()
            .map(|(ms, id)| crate::bridge::page_token(*ms, id));
        let page_size = self.inner.config.tasks_page_size.clamp(1, 100);
        // (status time, tie, task), from every agent: the page is the newest `page_size`.
        let mut found = Vec::new();
        let mut more = false;
        for (agent, bridge) in &self.inner.bridges {
            let request = ListTasksRequest {
                page_size: Some(page_size as i32),
                page_token: token.clone(),
                ..ListTasksRequest::default()
            };
            let page = bridge.list_tasks(ctx.caller, request).await?;
            more |= !page.next_page_token.is_empty();
            for task in &page.tasks {
                let ms = task
                    .status
                    .timestamp
                    .as_deref()
                    .and_then(parse_millis)
                    .unwrap_or(0);
                let tie = crate::view::list_tie(&task.id);
                found.push((
                    ms,
                    tie,
                    self.task_of(agent, bridge, task, true),
                    task.id.clone(),
                ));
            }
        }
        found.sort_by_key(|t| std::cmp::Reverse((t.0, t.1)));
        more |= found.len() > page_size;
        found.truncate(page_size);
        let mut result = Map::new();
        if more && let Some((ms, _, _, id)) = found.last() {
            result.insert("nextCursor".into(), json!(encode(*ms, id)));
        }
        result.insert(
            "tasks".into(),
            Value::Array(found.iter().map(|t| Value::Object(t.2.legacy())).collect()),
        );
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
