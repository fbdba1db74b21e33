//! `ListTasks` over bridges that share the agent: every owner's page of its partitions (this
//! bridge's from its own view, the others' asked with the mark and [`super::PARTITIONS`], the same
//! filter and page size), merged in the one `ListTasks` order. Each page starts after the same
//! cursor, which is a position in that order, so the merged page and its token are those of
//! one view holding every partition. An owner that does not answer is replaced by its
//! successor; neither: the whole list is a retryable unavailable, never a short page.

use agentlog_wire::a2a::ListTasksResponse;
use agentlog_wire::jsonrpc::success_body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Forwarder, NoAnswer, To, forwarded_headers, unavailable};
use crate::error::{Error, ErrorKind};
use crate::security::owners::{OwnerMap, Peer};

/// Who is asked for which partitions.
pub(in crate::http) struct FanOut {
    me: u32,
    /// The map's partition count.
    partitions: u32,
    /// The listing, as the forward counts' `verb`.
    verb: &'static str,
    /// This bridge's own partitions.
    local: Vec<u32>,
    /// The other members' shares.
    shares: Vec<Share>,
}

struct Share {
    owner: Peer,
    successor: Peer,
    partitions: Vec<u32>,
}

/// What the peers answered: the pages, and the partitions this bridge lists for an owner
/// that did not answer.
pub(crate) struct Pages {
    pub(in crate::http) stand_in: Vec<u32>,
    bodies: Vec<Bytes>,
}

impl FanOut {
    /// The shares of `map`: every partition with its owner and successor.
    pub(super) fn plan(map: &OwnerMap) -> Self {
        let me = map.me();
        let mut local = Vec::new();
        let mut shares: Vec<Share> = Vec::new();
        for p in 0..map.partitions() {
            let (Some(owner), Some(successor)) = (map.owner(p), map.successor(p)) else {
                continue;
            };
            if owner.index == me {
                local.push(p);
                continue;
            }
            match shares
                .iter_mut()
                .find(|s| s.owner.index == owner.index && s.successor.index == successor.index)
            {
                Some(share) => share.partitions.push(p),
                None => shares.push(Share {
                    owner,
                    successor,
                    partitions: vec![p],
                }),
            }
        }
        Self {
            me,
            partitions: map.partitions(),
            verb: "ListTasks",
            local,
            shares,
        }
    }

    /// This bridge's own partitions.
    pub(in crate::http) fn local(&self) -> &[u32] {
        &self.local
    }

    /// The plan of another listing (`/mcp`'s `tasks/list`, `resources/list`), counted as
    /// `verb`.
    pub(in crate::http) fn of_verb(self, verb: &'static str) -> Self {
        Self { verb, ..self }
    }

    /// The map's partition count (a topic's partitions from it on are nobody's).
    pub(in crate::http) fn partitions(&self) -> u32 {
        self.partitions
    }

    /// Ask every other owner (else its successor) for its page of the JSON-RPC `ListTasks`
    /// (or the listing [`of_verb`](Self::of_verb) names) in `body`, POSTed to `rpc_path` with
    /// the caller's headers. A peer's refusal is the
    /// answer (`Err`), as is nobody answering for a share.
    pub(in crate::http) async fn fetch(
        &self,
        forwarder: &Forwarder,
        caller_headers: &HeaderMap,
        rpc_path: &str,
        body: &[u8],
    ) -> Result<Pages, Response> {
        let mut headers = forwarded_headers(caller_headers);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let verb = self.verb;
        let asked = self.shares.iter().map(|share| {
            let headers = headers.clone();
            async move {
                let partitions = share
                    .partitions
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                let to = To {
                    method: &Method::POST,
                    path: rpc_path,
                    partitions: Some(&partitions),
                };
                let mut why = Vec::new();
                for (peer, outcome) in [(&share.owner, "owner"), (&share.successor, "successor")] {
                    if peer.index == self.me {
                        forwarder.count(verb, "here");
                        return Ok(None);
                    }
                    let timeout = forwarder.config.timeout;
                    let sent = forwarder
                        .send(peer, &to, headers.clone(), body, self.me, timeout)
                        .await;
                    match sent {
                        Ok(answer) => {
                            forwarder.count(verb, outcome);
                            return read(answer).await.map(Some);
                        }
                        Err(NoAnswer(reason)) => {
                            why.push(format!("member {}: {reason}", peer.index));
                        }
                    }
                }
                forwarder.count(verb, "unavailable");
                Err(unavailable(&Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "partitions {partitions} are held by no bridge that answers ({}); retry shortly",
                        why.join("; ")
                    ),
                )))
            }
        });
        let answers = futures::future::join_all(asked).await;
        let mut pages = Pages {
            stand_in: Vec::new(),
            bodies: Vec::with_capacity(answers.len()),
        };
        for (share, answer) in self.shares.iter().zip(answers) {
            match answer? {
                Some(body) => pages.bodies.push(body),
                None => pages.stand_in.extend(&share.partitions),
            }
        }
        Ok(pages)
    }
}

/// A peer's answer read whole: a `200` JSON-RPC body, or the peer's refusal as it came.
async fn read(answer: reqwest::Response) -> Result<Bytes, Response> {
    let status = answer.status();
    let content_type = answer.headers().get(CONTENT_TYPE).cloned();
    let retry_after = answer
        .headers()
        .get(axum::http::header::RETRY_AFTER)
        .cloned();
    let body = match answer.bytes().await {
        Ok(body) => body,
        Err(error) => {
            return Err(unavailable(&Error::new(
                ErrorKind::Unavailable,
                format!("a peer's page of a listing was cut off: {error}"),
            )));
        }
    };
    if status == StatusCode::OK {
        return Ok(body);
    }
    let mut response = Response::new(axum::body::Body::from(body));
    *response.status_mut() = status;
    for (name, value) in [
        (CONTENT_TYPE, content_type),
        (axum::http::header::RETRY_AFTER, retry_after),
    ] {
        if let Some(value) = value {
            response.headers_mut().insert(name, value);
        }
    }
    Err(response)
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    result: Option<ListTasksResponse>,
}

/// The JSON-RPC answer to the `ListTasks` of id `id`: this bridge's page (`local`, the body
/// its bridge answered) merged with the peers' `pages`. An error body among them is the
/// answer.
pub(in crate::http) fn merge(id: &RawValue, local: Vec<u8>, pages: Pages) -> Vec<u8> {
    let mut merged: Vec<ListTasksResponse> = Vec::with_capacity(pages.bodies.len() + 1);
    for body in std::iter::once(local.as_slice()).chain(pages.bodies.iter().map(|b| &b[..])) {
        match serde_json::from_slice::<Reply>(body) {
            Ok(Reply { result: Some(page) }) => merged.push(page),
            // An error (or something else): the answer as it is.
            _ => return body.to_vec(),
        }
    }
    success_body(id, &merge_pages(merged))
}

impl Pages {
    /// The peers' answers, as they came.
    pub(in crate::http) fn into_bodies(self) -> Vec<Bytes> {
        self.bodies
    }

    /// This bridge's page `local` (a typed call's) merged with the peers' pages; a peer's
    /// error is the answer.
    pub(crate) fn merge_into(
        self,
        local: ListTasksResponse,
    ) -> Result<ListTasksResponse, super::relayed::Relayed> {
        let mut merged = Vec::with_capacity(self.bodies.len() + 1);
        merged.push(local);
        for body in &self.bodies {
            match serde_json::from_slice::<Reply>(body) {
                Ok(Reply { result: Some(page) }) => merged.push(page),
                _ => return Err(super::relayed::Relayed::of_body(body)),
            }
        }
        Ok(merge_pages(merged))
    }
}

/// Pages of one `ListTasks` (the same filter, size and cursor) as one view's page: the
/// newest `pageSize` of them all, the totals added, a token when any page had more.
fn merge_pages(merged: Vec<ListTasksResponse>) -> ListTasksResponse {
    let page_size = merged.first().map_or(0, |p| p.page_size);
    let mut total = 0i32;
    let mut more = false;
    let mut tasks = Vec::new();
    for page in merged {
        total = total.saturating_add(page.total_size);
        more |= !page.next_page_token.is_empty();
        tasks.extend(page.tasks);
    }
    let (tasks, cut) =
        crate::bridge::merge_newest(tasks, |task| task, usize::try_from(page_size).unwrap_or(0));
    let next_page_token = match tasks.last() {
        Some(last) if more || cut => {
            let (ms, _) = crate::bridge::list_position(last);
            crate::bridge::page_token(ms, &last.id)
        }
        _ => String::new(),
    };
    ListTasksResponse {
        tasks,
        next_page_token,
        page_size,
        total_size: total,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_asks_each_owner_for_its_partitions_once() {
        let urls = (0..4).map(|i| format!("http://b{i}")).collect();
        let members = crate::security::peers::Members::new(1, 4, urls).unwrap();
        let plan = FanOut::plan(&members.owner_map(16).unwrap());
        assert_eq!(plan.local(), [1, 5, 9, 13]);
        let shares: Vec<(u32, u32, Vec<u32>)> = plan
            .shares
            .iter()
            .map(|s| (s.owner.index, s.successor.index, s.partitions.clone()))
            .collect();
        assert_eq!(
            shares,
            [
                (0, 1, vec![0, 4, 8, 12]),
                (2, 3, vec![2, 6, 10, 14]),
                (3, 0, vec![3, 7, 11, 15])
            ]
        );
    }

    #[test]
    fn an_error_page_is_the_answer() {
        let id = RawValue::from_string("7".into()).unwrap();
        let error = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"x"}}"#.to_vec();
        let pages = Pages {
            stand_in: Vec::new(),
            bodies: Vec::new(),
        };
        assert_eq!(merge(&id, error.clone(), pages), error);
    }
}
