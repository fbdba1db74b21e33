//! The JSON-RPC request an HTTP+JSON request is: the route's method, and as params the body
//! (`message:send`, a push config) or what the path and the query say. The bridge answers
//! it as it answers JSON-RPC, so the two bindings cannot differ.

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::route::Route;
use crate::error::{Error, ErrorKind, Result};

/// The id every JSON-RPC request made here carries (the reply's envelope is dropped again).
pub(super) const ID: &str = "0";

/// The JSON-RPC body for `route` under `tenant`, with the request's `query` and `body`.
pub(super) fn rpc_body(
    route: &Route,
    tenant: Option<&str>,
    query: Option<&str>,
    body: &[u8],
) -> Result<Vec<u8>> {
    let query = Query::parse(query);
    let mut params = match route {
        Route::Send | Route::Stream => {
            let object = object_body(body)?;
            // The usual request: its body is the params as sent, copied once.
            if tenant.is_none() {
                return Ok(envelope(route.method(), body));
            }
            object
        }
        Route::ListTasks => {
            let mut params = Map::new();
            query.string(&mut params, "contextId");
            query.string(&mut params, "status");
            query.string(&mut params, "pageToken");
            query.string(&mut params, "statusTimestampAfter");
            query.integer(&mut params, "pageSize")?;
            query.integer(&mut params, "historyLength")?;
            query.boolean(&mut params, "includeArtifacts")?;
            params
        }
        Route::GetTask(id) => {
            let mut params = with("id", id);
            query.integer(&mut params, "historyLength")?;
            params
        }
        Route::Cancel(id) => {
            // Clients send `{"id": …}`, `{}` or nothing; only `metadata` is read.
            let mut params = with("id", id);
            if !body.iter().all(u8::is_ascii_whitespace)
                && let Some(metadata) = object_body(body)?.remove("metadata")
            {
                params.insert("metadata".into(), metadata);
            }
            params
        }
        Route::Subscribe(id) => with("id", id),
        Route::CreatePushConfig(task) => {
            let mut params = object_body(body)?;
            params.insert("taskId".into(), json!(task));
            params
        }
        Route::ListPushConfigs(task) => {
            let mut params = with("taskId", task);
            query.integer(&mut params, "pageSize")?;
            query.string(&mut params, "pageToken");
            params
        }
        Route::GetPushConfig(task, id) | Route::DeletePushConfig(task, id) => {
            let mut params = with("taskId", task);
            params.insert("id".into(), json!(id));
            params
        }
        Route::ExtendedCard => Map::new(),
    };
    if let Some(tenant) = tenant {
        match params.get("tenant") {
            Some(named) if named.as_str().is_some_and(|n| !n.is_empty() && n != tenant) => {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    format!("the body names tenant {named}, the path {tenant:?}"),
                )
                .with_detail("field", "tenant"));
            }
            _ => {
                params.insert("tenant".into(), json!(tenant));
            }
        }
    }
    let params = serde_json::to_vec(&params)
        .map_err(|e| Error::new(ErrorKind::Internal, "cannot encode the request").with_source(e))?;
    Ok(envelope(route.method(), &params))
}

/// `{"jsonrpc":"2.0","id":0,"method":…,"params":…}` around `params`, one JSON value.
fn envelope(method: &str, params: &[u8]) -> Vec<u8> {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{ID},"method":"{method}","params":"#);
    let mut out = Vec::with_capacity(head.len() + params.len() + 1);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(params);
    out.push(b'}');
    out
}

/// The body as one JSON object, or why it is not one (read whole: nothing may follow it, so
/// a body cannot add members to the envelope it is put in).
fn object_body(body: &[u8]) -> Result<Map<String, Value>> {
    let refused = |what: String| {
        Error::new(
            ErrorKind::InvalidParams,
            format!("the body must be a JSON object: {what}"),
        )
        .with_detail("field", "body")
    };
    let raw: &RawValue = serde_json::from_slice(body).map_err(|e| {
        Error::new(ErrorKind::Parse, format!("the body is not JSON: {e}"))
            .with_detail("field", "body")
    })?;
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(refused(format!(
            "got {}",
            agentlog_wire::a2a::json_type(&other)
        ))),
        Err(e) => Err(refused(e.to_string())),
    }
}

fn with(key: &str, value: &str) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(key.into(), json!(value));
    map
}

/// A request's query parameters (camelCase names; the last of a repeated key wins).
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(query: Option<&str>) -> Self {
        Self(
            url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn string(&self, params: &mut Map<String, Value>, name: &str) {
        if let Some(value) = self.get(name).filter(|v| !v.is_empty()) {
            params.insert(name.into(), json!(value));
        }
    }

    fn integer(&self, params: &mut Map<String, Value>, name: &str) -> Result<()> {
        if let Some(value) = self.get(name).filter(|v| !v.is_empty()) {
            let number: i64 = value
                .trim()
                .parse()
                .map_err(|_| bad(name, value, "an integer"))?;
            params.insert(name.into(), json!(number));
        }
        Ok(())
    }

    fn boolean(&self, params: &mut Map<String, Value>, name: &str) -> Result<()> {
        if let Some(value) = self.get(name).filter(|v| !v.is_empty()) {
            let flag = match value {
                "true" => true,
                "false" => false,
                _ => return Err(bad(name, value, "true or false")),
            };
            params.insert(name.into(), json!(flag));
        }
        Ok(())
    }
}

fn bad(name: &str, value: &str, expected: &str) -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!("query parameter {name} must be {expected}, got {value:?}"),
    )
    .with_detail("field", name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn params(route: Route, tenant: Option<&str>, query: &str, body: &str) -> Value {
        let query = (!query.is_empty()).then_some(query);
        let bytes = rpc_body(&route, tenant, query, body.as_bytes()).unwrap();
        let request: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(request["method"], route.method());
        request["params"].clone()
    }

    #[test]
    fn paths_and_queries_become_the_methods_params() {
        let message = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
        assert_eq!(
            params(Route::Send, None, "", message),
            serde_json::from_str::<Value>(message).unwrap()
        );
        let tenanted = params(Route::Send, Some("acme"), "", message);
        assert_eq!(tenanted["tenant"], "acme");
        assert_eq!(tenanted["message"]["messageId"], "m");
        assert_eq!(
            params(Route::GetTask("t".into()), None, "historyLength=2", ""),
            json!({"id": "t", "historyLength": 2})
        );
        assert_eq!(
            params(
                Route::ListTasks,
                Some("acme"),
                "contextId=c&status=TASK_STATE_WORKING&pageSize=5&pageToken=p&includeArtifacts=true&statusTimestampAfter=2026-01-01T00:00:00Z&unknown=1",
                ""
            ),
            json!({"tenant": "acme", "contextId": "c", "status": "TASK_STATE_WORKING", "pageSize": 5, "pageToken": "p", "includeArtifacts": true, "statusTimestampAfter": "2026-01-01T00:00:00Z"})
        );
        assert_eq!(
            params(Route::Cancel("t".into()), None, "", ""),
            json!({"id": "t"})
        );
        assert_eq!(
            params(
                Route::Cancel("t".into()),
                None,
                "",
                r#"{"id":"t","metadata":{"a":1}}"#
            ),
            json!({"id": "t", "metadata": {"a": 1}})
        );
        assert_eq!(
            params(
                Route::CreatePushConfig("t".into()),
                None,
                "",
                r#"{"url":"https://x/hook"}"#
            ),
            json!({"taskId": "t", "url": "https://x/hook"})
        );
        assert_eq!(
            params(
                Route::DeletePushConfig("t".into(), "c".into()),
                None,
                "",
                ""
            ),
            json!({"taskId": "t", "id": "c"})
        );
    }

    #[test]
    fn bad_bodies_and_queries_are_refused_with_the_field() {
        let kind = |route: Route, tenant: Option<&str>, query: Option<&str>, body: &str| {
            rpc_body(&route, tenant, query, body.as_bytes())
                .unwrap_err()
                .kind()
        };
        assert_eq!(kind(Route::Send, None, None, "nope"), ErrorKind::Parse);
        assert_eq!(
            kind(Route::Send, None, None, "[1]"),
            ErrorKind::InvalidParams
        );
        // Nothing may follow the object: it could not smuggle members into the envelope.
        assert_eq!(
            kind(Route::Send, None, None, r#"{}, "method": "CancelTask""#),
            ErrorKind::Parse
        );
        assert_eq!(
            kind(Route::ListTasks, None, Some("pageSize=ten"), ""),
            ErrorKind::InvalidParams
        );
        assert_eq!(
            kind(Route::ListTasks, None, Some("includeArtifacts=yes"), ""),
            ErrorKind::InvalidParams
        );
        assert_eq!(
            kind(
                Route::Send,
                Some("acme"),
                None,
                r#"{"tenant":"globex","message":{}}"#
            ),
            ErrorKind::InvalidParams
        );
    }
}
