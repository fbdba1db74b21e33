//! The agent card: signed (with [`HttpConfig::signing_keys`](super::HttpConfig)) and
//! serialized once, with a strong `ETag` over the bytes served and a `Last-Modified` (when the
//! router was built: the card cannot change before the process restarts), answered with `304`
//! when the client's copy is current: `If-None-Match` decides when sent, else
//! `If-Modified-Since` (RFC 9110 §13.2.2).

use agentlog_wire::a2a::AgentCard;
use axum::extract::State;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::AppState;
use super::errors::JSON;
use crate::security::{SigningKey, sign_card};

const CACHE: HeaderValue = HeaderValue::from_static("public, max-age=300");

/// The card's bytes and their entity tag.
#[derive(Debug, Clone)]
pub(super) struct CardBody {
    bytes: Bytes,
    /// `"<32 hex digits>"`: the first 16 bytes of the SHA-256 of `bytes`. Strong: equal tags
    /// mean equal bytes.
    etag: HeaderValue,
    /// When the body was built, to the second (HTTP dates have no finer unit).
    built: std::time::SystemTime,
    /// `built` as an HTTP date.
    last_modified: HeaderValue,
}

impl CardBody {
    /// The body of `card` signed by each of `keys` (none: unsigned).
    pub(super) fn new(card: &AgentCard, keys: &[SigningKey]) -> Self {
        let signed = if keys.is_empty() {
            None
        } else {
            match sign_card(card, keys) {
                Ok(signed) => Some(signed),
                Err(error) => {
                    // Only a card nested past JCS's depth limit has no canonical form;
                    // `agentlog serve` signs once before it builds the router, so it
                    // refuses to start instead of getting here.
                    tracing::error!(error = %error.report(), "cannot sign the agent card; serving it unsigned");
                    None
                }
            }
        };
        let card = signed.as_ref().unwrap_or(card);
        let bytes = Bytes::from(serde_json::to_vec(card).unwrap_or_default());
        let digest = Sha256::digest(&bytes);
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let etag = HeaderValue::from_str(&format!("\"{hex}\""))
            .unwrap_or(HeaderValue::from_static("\"card\""));
        let now = std::time::SystemTime::now();
        let seconds = now
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let built = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
        let last_modified = HeaderValue::from_str(&httpdate::fmt_http_date(built))
            .unwrap_or(HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"));
        Self {
            bytes,
            etag,
            built,
            last_modified,
        }
    }
}

/// `GET` the card (axum answers `HEAD` from the same handler, without the body).
pub(super) async fn card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    serve_card(&state.inner.card, &headers)
}

pub(super) fn serve_card(card: &CardBody, headers: &HeaderMap) -> Response {
    let cached = if headers.contains_key(IF_NONE_MATCH) {
        headers
            .get_all(IF_NONE_MATCH)
            .iter()
            .any(|value| matches_etag(value.as_bytes(), card.etag.as_bytes()))
    } else {
        // An unparsable date is ignored, as RFC 9110 says.
        headers
            .get(IF_MODIFIED_SINCE)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| httpdate::parse_http_date(text).ok())
            .is_some_and(|since| card.built <= since)
    };
    let head = [
        (ETAG, card.etag.clone()),
        (LAST_MODIFIED, card.last_modified.clone()),
        (CACHE_CONTROL, CACHE),
    ];
    if cached {
        (StatusCode::NOT_MODIFIED, head).into_response()
    } else {
        (head, [(CONTENT_TYPE, JSON)], card.bytes.clone()).into_response()
    }
}

/// Whether an `If-None-Match` value names `etag`: `*`, or a comma-separated list compared
/// weakly (RFC 9110 §13.1.2: a `W/` prefix is ignored).
fn matches_etag(if_none_match: &[u8], etag: &[u8]) -> bool {
    let Ok(list) = std::str::from_utf8(if_none_match) else {
        return false;
    };
    let etag = std::str::from_utf8(etag).unwrap_or_default();
    list.split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

/// The card with an HTTP+JSON interface beside each JSON-RPC 1.0 one the router serves:
/// same URL (the binding's routes live under the RPC path), listed after it so that a client
/// following the card's order keeps JSON-RPC.
pub(super) fn offer_http_json(card: &mut agentlog_wire::a2a::AgentCard) {
    let interfaces = &mut card.supported_interfaces;
    let mut at = 0;
    while at < interfaces.len() {
        let interface = &interfaces[at];
        at += 1;
        let twin = |i: &agentlog_wire::a2a::AgentInterface| {
            i.protocol_binding == HTTP_JSON
                && i.url == interface.url
                && i.protocol_version == interface.protocol_version
        };
        if interface.protocol_binding.eq_ignore_ascii_case("JSONRPC")
            && interface.protocol_version.starts_with("1.")
            && !interfaces.iter().any(twin)
        {
            let rest = agentlog_wire::a2a::AgentInterface {
                protocol_binding: HTTP_JSON.to_owned(),
                ..interface.clone()
            };
            interfaces.insert(at, rest);
            at += 1;
        }
    }
}

/// The HTTP+JSON binding's name in a card's `protocolBinding`.
const HTTP_JSON: &str = "HTTP+JSON";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode, header};
    use sha2::{Digest, Sha256};
    use tower::ServiceExt;

    use super::offer_http_json;

    use super::matches_etag;
    use crate::bridge::{Bridge, BridgeConfig};
    use crate::http::{HttpConfig, router};
    use crate::security::card_signing::{SignatureCheck, check_card_signatures};
    use crate::security::{SigningKey, verify_card};
    use agentlog_wire::a2a::{AgentCard, AgentInterface};

    /// A bridge whose card lists a 1.0 and a 0.3 interface (`serve --with-v03-interface`).
    async fn dual_version_bridge() -> Bridge {
        let log = crate::log::open("memory://").await.unwrap();
        let mut config = BridgeConfig::new("t");
        let v03 = AgentInterface {
            protocol_version: "0.3".to_owned(),
            ..config.card.supported_interfaces[0].clone()
        };
        config.card.supported_interfaces.push(v03);
        Bridge::open(log, config).await.unwrap()
    }

    #[tokio::test]
    async fn the_interface_url_is_served_in_every_interface_and_the_extra_ones_after() {
        let bridge = dual_version_bridge().await;
        let mut own = bridge.agent_card().clone();
        offer_http_json(&mut own);
        let grpc = AgentInterface {
            url: "127.0.0.1:45679".to_owned(),
            protocol_binding: "GRPC".to_owned(),
            protocol_version: "1.0".to_owned(),
            tenant: None,
        };
        let config = HttpConfig::default()
            .interface_url("http://127.0.0.1:45678/".to_owned())
            .extra_interfaces(vec![grpc.clone()]);
        let app = router(bridge, config);
        let request = Request::get("/.well-known/agent-card.json")
            .body(Body::empty())
            .unwrap();
        let reply = app.oneshot(request).await.unwrap();
        let body = axum::body::to_bytes(reply.into_body(), usize::MAX)
            .await
            .unwrap();
        let card: AgentCard = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            card.supported_interfaces.len(),
            4,
            "1.0 and 0.3, HTTP+JSON 1.0, and the extra one"
        );
        assert_eq!(card.supported_interfaces[3], grpc, "last, its URL kept");
        for (served, own) in card
            .supported_interfaces
            .iter()
            .zip(&own.supported_interfaces)
        {
            assert_eq!(served.url, "http://127.0.0.1:45678/");
            assert_eq!(served.protocol_version, own.protocol_version);
            assert_ne!(served.url, own.url, "the card's own URL was another");
        }
        assert_eq!(card.name, own.name);
    }

    #[tokio::test]
    async fn every_card_path_serves_the_card_signed_by_each_key_under_a_strong_etag() {
        let bridge = dual_version_bridge().await;
        let mut unsigned = bridge.agent_card().clone();
        offer_http_json(&mut unsigned);
        let old = SigningKey::generate().unwrap();
        let new = SigningKey::generate().unwrap();
        let config = HttpConfig {
            rpc_path: "/a2a".to_owned(),
            signing_keys: vec![old.clone(), new.clone()],
            ..HttpConfig::default()
        };
        let app = router(bridge, config);
        let mut served = Vec::new();
        for path in [
            "/.well-known/agent-card.json",
            "/.well-known/agent.json",
            "/a2a/.well-known/agent-card.json",
            "/a2a/.well-known/agent.json",
        ] {
            let request = Request::get(path).body(Body::empty()).unwrap();
            let reply = app.clone().oneshot(request).await.unwrap();
            assert_eq!(reply.status(), StatusCode::OK, "{path}");
            let etag = reply.headers()[header::ETAG].to_str().unwrap().to_owned();
            let body = axum::body::to_bytes(reply.into_body(), usize::MAX)
                .await
                .unwrap();
            // Strong, and over the signed bytes as served.
            let digest = Sha256::digest(&body);
            let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(etag, format!("\"{hex}\""), "{path}");
            served.push((body, etag));
        }
        assert!(
            served.windows(2).all(|w| w[0] == w[1]),
            "one card everywhere"
        );
        let card: AgentCard = serde_json::from_slice(&served[0].0).unwrap();
        assert_eq!(card.signatures.len(), 2);
        assert_eq!(card.supported_interfaces.len(), 3);
        assert_eq!(
            AgentCard {
                signatures: Vec::new(),
                ..card.clone()
            },
            unsigned
        );
        // Rotation: a client trusting either key accepts the card.
        assert_eq!(
            verify_card(&card, &[old.verifying_key()]).unwrap(),
            old.kid()
        );
        assert_eq!(
            verify_card(&card, &[new.verifying_key()]).unwrap(),
            new.kid()
        );
        let checked = check_card_signatures(&card, &[old.verifying_key(), new.verifying_key()]);
        assert!(
            checked
                .unwrap()
                .iter()
                .all(|c| c.check == SignatureCheck::Verified),
            "both signatures verify"
        );

        let request = Request::get("/.well-known/agent-card.json")
            .header(header::IF_NONE_MATCH, &served[0].1)
            .body(Body::empty())
            .unwrap();
        let reply = app.clone().oneshot(request).await.unwrap();
        assert_eq!(reply.status(), StatusCode::NOT_MODIFIED);
    }

    #[tokio::test]
    async fn without_keys_the_card_is_served_unsigned() {
        let bridge = dual_version_bridge().await;
        let mut expected = bridge.agent_card().clone();
        offer_http_json(&mut expected);
        let app = router(bridge, HttpConfig::default());
        let request = Request::get("/.well-known/agent-card.json")
            .body(Body::empty())
            .unwrap();
        let reply = app.oneshot(request).await.unwrap();
        let body = axum::body::to_bytes(reply.into_body(), usize::MAX)
            .await
            .unwrap();
        let card: AgentCard = serde_json::from_slice(&body).unwrap();
        assert!(card.signatures.is_empty());
        assert_eq!(card, expected);
    }

    #[test]
    fn if_none_match_lists_and_weak_tags_match() {
        let etag = br#""abc""#;
        for hit in [&br#""abc""#[..], br#"W/"abc""#, b"*", br#""x", "abc""#] {
            assert!(matches_etag(hit, etag), "{}", String::from_utf8_lossy(hit));
        }
        for miss in [&br#""abcd""#[..], b"abc", b"", br#""x""#] {
            assert!(
                !matches_etag(miss, etag),
                "{}",
                String::from_utf8_lossy(miss)
            );
        }
    }
}
