//! The console's JSON reads and its cancel: each the A2A call it stands for, through
//! [`Bridge::handle`], with the request's caller.

use agentlog_wire::a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Part, PartContent, Task,
};
use agentlog_wire::jsonrpc::Operation;
use agentlog_wire::timestamp::parse_millis;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::{Agent, Console, json, json_error, query};
use crate::agent::Caller;
use crate::bridge::{Answer, Call, RpcReply, RpcRequest};
use crate::error::{Error, ErrorKind, Result};

/// The states the counts are given for, in the order the page shows them.
const STATES: [&str; 8] = [
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_AUTH_REQUIRED",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

/// The widest message summary in the list.
const SUMMARY_CHARS: usize = 120;

/// `GET api/agents`.
pub(super) async fn agents(console: &Console, parts: &Parts) -> Response {
    if let Err(refusal) = console.caller(parts, Operation::ListTasks).await {
        return refusal;
    }
    let agents: Vec<Value> = console
        .agents
        .iter()
        .map(|a| json!({"name": a.name, "binding": a.binding.as_str()}))
        .collect();
    json(
        StatusCode::OK,
        &json!({"agents": agents, "auth": console.auth.is_some()}),
    )
}

/// `GET api/tasks`: `ListTasks` on each chosen agent, merged newest status first. The page
/// token holds each agent's own cursor (the last task taken from it; "" once it has no more).
pub(super) async fn list(console: &Console, parts: &Parts) -> Response {
    let caller = match console.caller(parts, Operation::ListTasks).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    match list_tasks(console, parts, &caller).await {
        Ok(value) => json(StatusCode::OK, &value),
        Err(error) => json_error(&error),
    }
}

async fn list_tasks(console: &Console, parts: &Parts, caller: &Caller) -> Result<Value> {
    let agents = chosen(console, parts)?;
    let page_size = match query(parts, "pageSize") {
        None => 50,
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| invalid("pageSize must be between 1 and 100", "pageSize"))?,
    };
    let cursors = match query(parts, "pageToken") {
        None => Map::new(),
        Some(token) => URL_SAFE_NO_PAD
            .decode(token.as_bytes())
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Map<String, Value>>(&bytes).ok())
            .ok_or_else(|| invalid("pageToken is not one this console gave", "pageToken"))?,
    };
    let mut candidates: Vec<(u64, usize, Task)> = Vec::new();
    // Per agent: the page's own next token and how many tasks it gave.
    let mut pages: Vec<Option<(String, usize)>> = Vec::with_capacity(agents.len());
    for (index, agent) in agents.iter().enumerate() {
        let cursor = cursors.get(&agent.name).and_then(Value::as_str);
        if cursor == Some("") {
            pages.push(None);
            continue;
        }
        let mut request = filters(parts)?;
        request.page_size = i32::try_from(page_size).ok();
        request.page_token = cursor.map(str::to_owned);
        request.history_length = Some(1);
        let Answer::Tasks(page) = call(agent, caller, Call::ListTasks(request)).await? else {
            return Err(unexpected());
        };
        pages.push(Some((page.next_page_token, page.tasks.len())));
        candidates.extend(
            page.tasks
                .into_iter()
                .map(|task| (status_ms(&task), index, task)),
        );
    }
    // Newest status first across agents (each agent's page is in that order already).
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    candidates.truncate(page_size);
    let mut next = Map::new();
    for (index, agent) in agents.iter().enumerate() {
        let taken: Vec<&(u64, usize, Task)> =
            candidates.iter().filter(|(_, i, _)| *i == index).collect();
        let resume = match &pages[index] {
            None => Some(String::new()),
            // All it gave was taken: on from its own next token ("" when it has no more).
            Some((token, fetched)) if taken.len() == *fetched => Some(token.clone()),
            // Cut: right after the last task taken from it, or where it stood.
            Some(_) => match taken.last() {
                Some((ms, _, task)) => Some(crate::bridge::page_token(*ms, &task.id)),
                None => cursors
                    .get(&agent.name)
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            },
        };
        if let Some(resume) = resume {
            next.insert(agent.name.clone(), Value::from(resume));
        }
    }
    let exhausted = next.len() == agents.len() && next.values().all(|v| v.as_str() == Some(""));
    let token = if exhausted {
        String::new()
    } else {
        URL_SAFE_NO_PAD.encode(Value::Object(next).to_string())
    };
    let tasks: Vec<Value> = candidates
        .iter()
        .map(|(_, index, task)| row(agents[*index], task))
        .collect();
    Ok(json!({"tasks": tasks, "nextPageToken": token}))
}

/// `GET api/counts`: the caller's tasks per state over the chosen agents.
pub(super) async fn counts(console: &Console, parts: &Parts) -> Response {
    let caller = match console.caller(parts, Operation::ListTasks).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let counted = async {
        let agents = chosen(console, parts)?;
        let mut counts = Map::new();
        for state in STATES {
            let mut total = 0i64;
            for agent in &agents {
                let mut request: ListTasksRequest =
                    serde_json::from_value(json!({"status": state, "pageSize": 1}))
                        .map_err(|e| invalid(&e.to_string(), "state"))?;
                request.tenant = query(parts, "tenant");
                let Answer::Tasks(page) = call(agent, &caller, Call::ListTasks(request)).await?
                else {
                    return Err(unexpected());
                };
                total += i64::from(page.total_size);
            }
            counts.insert(state.to_owned(), Value::from(total));
        }
        Ok::<_, Error>(json!({"counts": counts}))
    };
    match counted.await {
        Ok(value) => json(StatusCode::OK, &value),
        Err(error) => json_error(&error),
    }
}

/// `GET api/tasks/{agent}/{id}`: `GetTask`.
pub(super) async fn task(console: &Console, parts: &Parts, agent: &str, id: &str) -> Response {
    let caller = match console.caller(parts, Operation::GetTask).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let agent = match console.agent(agent) {
        Ok(agent) => agent,
        Err(refusal) => return refusal,
    };
    let request = GetTaskRequest {
        tenant: query(parts, "tenant"),
        id: decoded(id),
        history_length: None,
    };
    match call(agent, &caller, Call::GetTask(request)).await {
        Ok(Answer::Task(task)) => task_body(agent, &task),
        Ok(_) => json_error(&unexpected()),
        Err(error) => json_error(&error),
    }
}

/// `POST api/tasks/{agent}/{id}/cancel`: `CancelTask`.
pub(super) async fn cancel(console: &Console, parts: &Parts, agent: &str, id: &str) -> Response {
    let caller = match console.caller(parts, Operation::CancelTask).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let agent = match console.agent(agent) {
        Ok(agent) => agent,
        Err(refusal) => return refusal,
    };
    let request = CancelTaskRequest {
        tenant: query(parts, "tenant"),
        id: decoded(id),
        metadata: None,
    };
    match call(agent, &caller, Call::CancelTask(request)).await {
        Ok(Answer::Task(task)) => task_body(agent, &task),
        Ok(_) => json_error(&unexpected()),
        Err(error) => json_error(&error),
    }
}

fn task_body(agent: &Agent, task: &Task) -> Response {
    let value = serde_json::to_value(task).unwrap_or(Value::Null);
    json(
        StatusCode::OK,
        &json!({"agent": agent.name, "binding": agent.binding.as_str(), "task": value}),
    )
}

/// One typed call through the bridge's one entry.
async fn call(agent: &Agent, caller: &Caller, call: Call) -> Result<Answer> {
    match agent
        .bridge
        .handle(RpcRequest::call(call, caller.clone()))
        .await
    {
        RpcReply::Answer(answer) => answer,
        _ => Err(unexpected()),
    }
}

/// The agents the request chooses: `agent`, else those of `binding`, else all.
fn chosen<'a>(console: &'a Console, parts: &Parts) -> Result<Vec<&'a Agent>> {
    if let Some(name) = query(parts, "agent") {
        let agent = console.agents.iter().find(|a| a.name == name);
        return agent
            .map(|a| vec![a])
            .ok_or_else(|| invalid(&format!("this console serves no agent {name:?}"), "agent"));
    }
    let binding = query(parts, "binding");
    if let Some(binding) = &binding
        && !matches!(binding.as_str(), "a2a" | "mcp")
    {
        return Err(invalid("binding is a2a or mcp", "binding"));
    }
    Ok(console
        .agents
        .iter()
        .filter(|a| binding.as_deref().is_none_or(|b| b == a.binding.as_str()))
        .collect())
}

/// The `ListTasks` filters of the query, parsed by the wire types as the RPC would be.
fn filters(parts: &Parts) -> Result<ListTasksRequest> {
    let mut fields = Map::new();
    for (key, field) in [
        ("state", "status"),
        ("context", "contextId"),
        ("since", "statusTimestampAfter"),
        ("tenant", "tenant"),
    ] {
        if let Some(value) = query(parts, key) {
            fields.insert(field.to_owned(), Value::from(value));
        }
    }
    serde_json::from_value(Value::Object(fields)).map_err(|e| {
        Error::new(
            ErrorKind::InvalidParams,
            format!("a filter does not parse: {e}"),
        )
        .with_detail("field", "state")
    })
}

/// A list row: what the page shows of a task.
fn row(agent: &Agent, task: &Task) -> Value {
    let summary = task
        .history
        .last()
        .map(|m| summary(&m.parts))
        .unwrap_or_default();
    json!({
        "agent": agent.name,
        "binding": agent.binding.as_str(),
        "id": task.id,
        "contextId": task.context_id,
        "state": task.status.state,
        "timestamp": task.status.timestamp,
        "summary": summary,
    })
}

/// Parts as one line of at most [`SUMMARY_CHARS`] characters.
pub(super) fn summary(parts: &[Part]) -> String {
    let text: Vec<String> = parts
        .iter()
        .map(|part| match &part.content {
            PartContent::Text(text) => text.clone(),
            PartContent::Raw(bytes) => format!("[file, {} bytes]", bytes.len()),
            PartContent::Url(url) => format!("[url {url}]"),
            PartContent::Data(data) => data_text(part.media_type.as_deref(), data),
        })
        .collect();
    let line = text
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match line.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// A data part in words: an MCP call as `tool(arguments)`, its result as its text blocks,
/// anything else as its JSON.
fn data_text(media_type: Option<&str>, data: &Value) -> String {
    use agentlog_wire::mcp::call::{CALL_MEDIA_TYPE, RESULT_MEDIA_TYPE};
    match media_type {
        Some(CALL_MEDIA_TYPE) => {
            let name = data.get("name").and_then(Value::as_str).unwrap_or("?");
            let arguments = data.get("arguments").cloned().unwrap_or(Value::Null);
            format!("tools/call {name}({arguments})")
        }
        Some(RESULT_MEDIA_TYPE) => {
            let texts: Vec<&str> = data
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect();
            let error = data.get("isError").and_then(Value::as_bool) == Some(true);
            format!(
                "{}{}",
                if error { "tool error: " } else { "" },
                texts.join(" ")
            )
        }
        _ => format!("[data {data}]"),
    }
}

fn status_ms(task: &Task) -> u64 {
    task.status
        .timestamp
        .as_deref()
        .and_then(parse_millis)
        .unwrap_or_default()
}

fn decoded(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

fn invalid(message: &str, field: &str) -> Error {
    Error::new(ErrorKind::InvalidParams, message.to_owned()).with_detail("field", field)
}

fn unexpected() -> Error {
    Error::new(ErrorKind::Internal, "the bridge answered another operation")
}
