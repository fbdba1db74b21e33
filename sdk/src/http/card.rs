//! The agent card: serialized once, with a strong `ETag`, answered with `304` when the
//! client's copy is current.

use agentlog_wire::a2a::AgentCard;
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::AppState;
use super::errors::JSON;

const CACHE: HeaderValue = HeaderValue::from_static("public, max-age=300");

/// The card's bytes and their entity tag.
#[derive(Debug, Clone)]
pub(super) struct CardBody {
    bytes: Bytes,
    /// `"<32 hex digits>"`: the first 16 bytes of the SHA-256 of `bytes`. Strong: equal tags
    /// mean equal bytes.
    etag: HeaderValue,
}

impl CardBody {
    pub(super) fn new(card: &AgentCard) -> Self {
        let bytes = Bytes::from(serde_json::to_vec(card).unwrap_or_default());
        let digest = Sha256::digest(&bytes);
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let etag = HeaderValue::from_str(&format!("\"{hex}\""))
            .unwrap_or(HeaderValue::from_static("\"card\""));
        Self { bytes, etag }
    }
}

/// `GET` the card (axum answers `HEAD` from the same handler, without the body).
pub(super) async fn card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    serve_card(&state.inner.card, &headers)
}

pub(super) fn serve_card(card: &CardBody, headers: &HeaderMap) -> Response {
    let cached = headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .any(|value| matches_etag(value.as_bytes(), card.etag.as_bytes()));
    let head = [(ETAG, card.etag.clone()), (CACHE_CONTROL, CACHE)];
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

#[cfg(test)]
mod tests {
    use super::matches_etag;

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
