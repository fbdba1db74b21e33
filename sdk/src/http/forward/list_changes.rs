//! The caller's `resources/list` changes other members hear, for a modern listen asking
//! `resourcesListChanged` and a legacy session's stream served here: a marked listen asking
//! the same of every other member, sent with the caller's headers (the peer checks its
//! credentials again), each `notifications/resources/list_changed` it sends one item.
//!
//! The peers' listens last as long as the client's stream: one that ends or cannot be opened
//! (a peer restarting, a connection cut) is opened again after a delay doubling from
//! [`REOPEN_FIRST`] to [`REOPEN_MAX`] (back to the first once a listen lasted that long), and
//! when the members' map changes, a new member is listened to and a member gone is not. A
//! change a peer makes while its listen is down is not heard (list changes are hints: the
//! client lists again on the next one).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde::Deserialize;
use tokio::sync::mpsc;

use super::{Forwarder, To, forwarded_headers};
use crate::security::owners::Peer;

/// The notification a listing's change is, and the listen id the peers' listens carry.
const LIST_CHANGED: &str = "notifications/resources/list_changed";
const PEER_LISTEN_ID: &str = "agentlog-list-changes";

/// How long a peer's listen that ended (or was refused) waits before it is opened again, at
/// first; each time it ends again soon, twice as long, up to [`REOPEN_MAX`].
const REOPEN_FIRST: Duration = Duration::from_millis(100);
const REOPEN_MAX: Duration = Duration::from_secs(5);

/// Whether `body` is a modern `subscriptions/listen` asking `resourcesListChanged`: its id.
fn listens_to_list_changes(body: &[u8]) -> Option<serde_json::Value> {
    #[derive(Deserialize)]
    struct Listen {
        method: Option<String>,
        id: Option<serde_json::Value>,
        params: Option<serde_json::Value>,
    }
    let listen: Listen = serde_json::from_slice(body).ok()?;
    let asked = listen
        .params?
        .pointer("/notifications/resourcesListChanged")?
        .as_bool()?;
    (listen.method.as_deref() == Some("subscriptions/listen") && asked).then_some(listen.id?)
}

/// The marked listen every peer is asked: where, with which headers and body.
struct PeerListen {
    path: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl PeerListen {
    /// The listen for the list changes of the caller of `parts`, on the MCP route `path`.
    fn of(parts: &Parts, path: &str) -> Self {
        let mut headers = forwarded_headers(&parts.headers);
        for (name, value) in [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", agentlog_wire::mcp::MODERN_VERSION),
            ("mcp-method", "subscriptions/listen"),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }
        headers.remove("last-event-id");
        let body = serde_json::json!({"jsonrpc": "2.0", "id": PEER_LISTEN_ID,
            "method": "subscriptions/listen", "params": {
                "notifications": {"resourcesListChanged": true},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": agentlog_wire::mcp::MODERN_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {}}}});
        Self {
            path: path.to_owned(),
            headers,
            body: serde_json::to_vec(&body).unwrap_or_default(),
        }
    }
}

impl Forwarder {
    /// The caller's `resources/list` changes other members hear (the module docs), one item
    /// each, for the headers of `parts` on the MCP route `path`: listened to until the stream
    /// is dropped.
    pub(in crate::http) fn list_changes_elsewhere(
        &self,
        parts: &Parts,
        path: &str,
    ) -> BoxStream<'static, ()> {
        let listen = Arc::new(PeerListen::of(parts, path));
        let (tx, rx) = mpsc::channel::<()>(16);
        tokio::spawn(self.clone().listen_to_members(listen, tx));
        futures::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|()| ((), rx)) },
        )
        .boxed()
    }

    /// Listen to every other member of the map in force, as it changes, until `heard`'s
    /// receiver is gone.
    async fn listen_to_members(self, listen: Arc<PeerListen>, heard: mpsc::Sender<()>) {
        let mut maps = self.config.owners.subscribe();
        let mut peers: Vec<(Arc<str>, tokio::task::JoinHandle<()>)> = Vec::new();
        loop {
            let wanted: Vec<Peer> = {
                let map = maps.borrow_and_update();
                (0..map.members())
                    .filter(|i| *i != map.me())
                    .filter_map(|i| map.member(i))
                    // A slot no member holds has no URL.
                    .filter(|peer| !peer.url.is_empty())
                    .collect()
            };
            peers.retain(|(url, listening)| {
                let keep = wanted.iter().any(|peer| peer.url == *url);
                if !keep {
                    listening.abort();
                }
                keep
            });
            for peer in wanted {
                if peers.iter().any(|(url, _)| *url == peer.url) {
                    continue;
                }
                let url = Arc::clone(&peer.url);
                let listening = self
                    .clone()
                    .listen_to(peer, Arc::clone(&listen), heard.clone());
                peers.push((url, tokio::spawn(listening)));
            }
            tokio::select! {
                () = heard.closed() => break,
                changed = maps.changed() => if changed.is_err() { break },
            }
        }
        for (_, listening) in peers {
            listening.abort();
        }
    }

    /// Listen to `peer` until `heard`'s receiver is gone, opening its listen again (with
    /// backoff) whenever it ends or is refused.
    async fn listen_to(self, peer: Peer, listen: Arc<PeerListen>, heard: mpsc::Sender<()>) {
        let mut delay = REOPEN_FIRST;
        loop {
            let began = Instant::now();
            let me = self.config.owners.current().me();
            let to = To {
                method: &Method::POST,
                path: &listen.path,
                partitions: None,
            };
            let headers = listen.headers.clone();
            // The head comes once the peer listens: its acknowledgement.
            let sent = self.send(&peer, &to, headers, &listen.body, me, self.config.timeout);
            let answer = tokio::select! {
                () = heard.closed() => return,
                sent = sent => sent.ok().filter(|answer| answer.status() == StatusCode::OK),
            };
            let outcome = if answer.is_some() {
                "listened"
            } else {
                "unavailable"
            };
            self.count("subscriptions/listen", outcome);
            if let Some(answer) = answer
                && !relay(answer, &heard).await
            {
                return;
            }
            if began.elapsed() >= REOPEN_MAX {
                delay = REOPEN_FIRST;
            }
            tokio::select! {
                () = heard.closed() => return,
                () = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(REOPEN_MAX);
        }
    }

    /// `messages`, the answer to an unmarked modern listen asking `resourcesListChanged`
    /// (`parts`, `raw`) served here, with the list changes other members hear
    /// ([`list_changes_elsewhere`](Self::list_changes_elsewhere)) among them, tagged with the
    /// listen's id; ending when `messages` ends. Anything else: `messages` as they are.
    pub(in crate::http) fn with_list_changes_elsewhere(
        &self,
        parts: &Parts,
        raw: &[u8],
        messages: crate::mcp::McpStream,
    ) -> crate::mcp::McpStream {
        let Some(id) = listens_to_list_changes(raw).filter(|_| !self.marked(parts, raw)) else {
            return messages;
        };
        let elsewhere = self.list_changes_elsewhere(parts, parts.uri.path());
        let tagged = elsewhere.map(move |()| {
            let message = serde_json::json!({"jsonrpc": "2.0", "method": LIST_CHANGED,
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
            serde_json::to_vec(&message).unwrap_or_default()
        });
        until_ends(messages, tagged)
    }
}

/// Send one item to `heard` for each list change in a peer's listen stream `answer`, until
/// it ends (`true`) or `heard`'s receiver is gone (`false`).
async fn relay(answer: reqwest::Response, heard: &mpsc::Sender<()>) -> bool {
    let mut frames = answer.bytes_stream();
    let mut text = String::new();
    loop {
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            if is_list_change(&frame) && heard.send(()).await.is_err() {
                return false;
            }
        }
        let chunk = tokio::select! {
            () = heard.closed() => return false,
            chunk = frames.next() => chunk,
        };
        match chunk {
            Some(Ok(chunk)) => text.push_str(&String::from_utf8_lossy(&chunk)),
            Some(Err(_)) | None => return true,
        }
    }
}

/// Whether an SSE frame carries a `notifications/resources/list_changed`.
fn is_list_change(frame: &str) -> bool {
    frame
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .any(|data| {
            serde_json::from_str::<serde_json::Value>(data.trim())
                .is_ok_and(|m| m["method"] == LIST_CHANGED)
        })
}

/// `messages` with `extra` among them, ending when `messages` ends.
pub(in crate::http) fn until_ends(
    messages: crate::mcp::McpStream,
    extra: impl futures::Stream<Item = Vec<u8>> + Send + 'static,
) -> crate::mcp::McpStream {
    let local = messages
        .map(Some)
        .chain(futures::stream::once(async { None }));
    let merged = futures::stream::select(local, extra.map(Some));
    Box::pin(
        merged
            .take_while(|m| std::future::ready(m.is_some()))
            .filter_map(std::future::ready),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_for_list_changes_is_told_apart_and_its_extra_frames_end_with_it() {
        let asks = br#"{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"resourcesListChanged":true}}}"#;
        assert_eq!(listens_to_list_changes(asks), Some(serde_json::json!("l")));
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"notifications":{"resourcesListChanged":true}}}"#,
        ] {
            assert_eq!(listens_to_list_changes(other), None);
        }
        let local: crate::mcp::McpStream = Box::pin(futures::stream::iter([b"a".to_vec()]));
        let extra = futures::stream::iter([b"x".to_vec()]).chain(futures::stream::pending());
        let merged = futures::executor::block_on(until_ends(local, extra).collect::<Vec<_>>());
        assert!(
            merged.contains(&b"a".to_vec()) && merged.len() <= 2,
            "{merged:?}"
        );
    }

    /// A peer at a loopback URL whose listens each send one list change, then end: its URL
    /// and how many listens it was asked.
    async fn peer() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&asked);
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::post(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                async {
                    let frame = format!("data: {{\"method\":\"{LIST_CHANGED}\"}}\n\n");
                    ([("content-type", "text/event-stream")], frame)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(crate::http::serve(listener, app, std::future::pending()));
        (url, asked)
    }

    #[tokio::test]
    async fn a_peers_listen_that_ends_is_opened_again_and_a_new_member_is_listened_to() {
        use crate::security::owners::{OwnerMap, Owners};
        use std::sync::atomic::Ordering;
        let ((b, asked_b), (c, asked_c)) = (peer().await, peer().await);
        let map = |urls: Vec<String>| {
            let n = u32::try_from(urls.len()).unwrap();
            let owners: Vec<u32> = (0..4).map(|p| p % n).collect();
            let successors = owners.iter().map(|o| (o + 1) % n).collect();
            OwnerMap::new(0, urls, owners, successors).unwrap()
        };
        let owners = Owners::new(map(vec!["http://a".into(), b.clone()]));
        let key = crate::security::peers::PeerKey::new(&[1; 32]).unwrap();
        let forwarder = Forwarder::new(super::super::Forwarding::new(owners.clone(), key));
        let (parts, ()) = axum::http::Request::post("/mcp")
            .body(())
            .unwrap()
            .into_parts();
        let mut heard = forwarder.list_changes_elsewhere(&parts, "/mcp");
        let soon = Duration::from_secs(10);
        // b's listens each end after one change: each is opened again.
        for _ in 0..3 {
            tokio::time::timeout(soon, heard.next())
                .await
                .unwrap()
                .unwrap();
        }
        assert!(asked_b.load(Ordering::SeqCst) >= 3);
        assert_eq!(asked_c.load(Ordering::SeqCst), 0);
        // c joins the map: it is listened to as well.
        owners.set(map(vec!["http://a".into(), b, c]));
        tokio::time::timeout(soon, async {
            while asked_c.load(Ordering::SeqCst) == 0 {
                heard.next().await.unwrap();
            }
        })
        .await
        .unwrap();
        // The stream dropped, nobody is asked again.
        drop(heard);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (now_b, now_c) = (
            asked_b.load(Ordering::SeqCst),
            asked_c.load(Ordering::SeqCst),
        );
        tokio::time::sleep(REOPEN_FIRST * 20).await;
        assert_eq!(
            (
                asked_b.load(Ordering::SeqCst),
                asked_c.load(Ordering::SeqCst)
            ),
            (now_b, now_c)
        );
    }

    #[test]
    fn a_frame_is_a_list_change_when_its_data_says_so() {
        let change = "id: 3\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\",\"params\":{}}\n\n";
        assert!(is_list_change(change));
        let ack = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\"}\n\n";
        assert!(!is_list_change(ack));
        assert!(!is_list_change(": keep-alive\n\n"));
    }
}
