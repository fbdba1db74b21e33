//! Reading a request's body within its limit and deadline, and refusing a request without
//! losing its connection.
//!
//! hyper reuses a keep-alive connection only once the request's body has been read to its
//! end; a response sent with the body unread makes hyper close the connection right after
//! it, without a `Connection: close` that would tell the client. So a refusal sent before
//! the body is read ([`refuse_unread`]) reads the body first (within the same limit and
//! deadline as any body), and says `Connection: close` when it cannot; so do the refusals
//! that stop reading a body (`413`, `408`).

use std::time::Duration;

use agentlog_wire::ErrorCode;
use axum::body::{Body, Bytes};
use axum::http::header::{CONNECTION, CONTENT_LENGTH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use futures::StreamExt;

use super::errors::rpc_refusal;

/// The body, read within `limit` bytes and `timeout` (counted from now): else the `413` or
/// `408` refusal, which closes the connection.
#[allow(clippy::result_large_err)] // the error is the response to send
pub(super) async fn read_body_within(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, Response> {
    match tokio::time::timeout(timeout, read_body(headers, body, limit)).await {
        Ok(read) => read,
        Err(_) => Err(closing(rpc_refusal(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::InvalidRequest,
            format!("the request body did not arrive within {timeout:?}"),
        ))),
    }
}

/// `refusal`, sent once the request's unread `body` has been read to its end (and dropped),
/// so that the connection stays usable; with `Connection: close` when the body is larger
/// than `limit` or slower than `timeout`.
pub(super) async fn refuse_unread(
    headers: &HeaderMap,
    body: Body,
    refusal: Response,
    limit: usize,
    timeout: Duration,
) -> Response {
    match read_body_within(headers, body, limit, timeout).await {
        Ok(_) => refusal,
        Err(_) => closing(refusal),
    }
}

/// `response` with `Connection: close`.
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The body, or the `413` refusal (closing the connection) when it is larger than `limit`.
#[allow(clippy::result_large_err)] // the error is the response to send
pub(super) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, Response> {
    let too_large = || {
        closing(rpc_refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::InvalidRequest,
            format!("request body exceeds {limit} bytes"),
        ))
    };
    // Refuse before reading a byte when the announced length is too large.
    let announced = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut chunks = body.into_data_stream();
    // Most bodies arrive in one chunk: keep it without copying. `read` counts every byte
    // once, whether it sits in `first` or has been copied into `rest`.
    let mut first = Bytes::new();
    let mut rest: Vec<u8> = Vec::new();
    let mut read = 0usize;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| {
            closing(rpc_refusal(
                StatusCode::BAD_REQUEST,
                ErrorCode::InvalidRequest,
                format!("cannot read the request body: {e}"),
            ))
        })?;
        read += chunk.len();
        if read > limit {
            return Err(too_large());
        }
        if first.is_empty() && rest.is_empty() {
            first = chunk;
        } else {
            if rest.is_empty() {
                rest.reserve(announced.map_or(0, |n| n as usize).max(read));
                rest.extend_from_slice(&first);
            }
            rest.extend_from_slice(&chunk);
        }
    }
    Ok(if rest.is_empty() {
        first
    } else {
        Bytes::from(rest)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A body of `len` bytes arriving in chunks of `chunk` bytes, with no `Content-Length`.
    fn chunked(len: usize, chunk: usize) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> = (0..len)
            .step_by(chunk)
            .map(|start| Ok(Bytes::from(vec![b'x'; chunk.min(len - start)])))
            .collect();
        Body::from_stream(futures::stream::iter(chunks))
    }

    #[tokio::test]
    async fn a_body_up_to_the_limit_is_read_whole_and_one_byte_over_is_refused() {
        const LIMIT: usize = 1024 * 1024;
        for chunk in [LIMIT, 4096, 1000, 7] {
            for len in [LIMIT - 4096, LIMIT - 1, LIMIT] {
                let body = read_body(&HeaderMap::new(), chunked(len, chunk), LIMIT)
                    .await
                    .unwrap_or_else(|_| panic!("{len} bytes in chunks of {chunk} refused"));
                assert_eq!(body.len(), len);
            }
            let over = read_body(&HeaderMap::new(), chunked(LIMIT + 1, chunk), LIMIT).await;
            assert_eq!(over.unwrap_err().status(), StatusCode::PAYLOAD_TOO_LARGE);
        }
        let mut announced = HeaderMap::new();
        announced.insert(CONTENT_LENGTH, HeaderValue::from(LIMIT));
        let body = read_body(&announced, chunked(LIMIT, 4096), LIMIT).await;
        assert_eq!(body.unwrap().len(), LIMIT);
        announced.insert(CONTENT_LENGTH, HeaderValue::from(LIMIT + 1));
        let over = read_body(&announced, chunked(LIMIT + 1, 4096), LIMIT).await;
        let over = over.unwrap_err();
        assert_eq!(over.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(over.headers()[CONNECTION], "close");
    }

    #[tokio::test]
    async fn a_refusal_reads_the_body_first_or_closes_the_connection() {
        let refusal = || {
            rpc_refusal(
                StatusCode::FORBIDDEN,
                ErrorCode::InvalidRequest,
                "no".into(),
            )
        };
        let (second, none) = (Duration::from_secs(1), HeaderMap::new());
        let read = refuse_unread(&none, chunked(5000, 100), refusal(), 10_000, second);
        assert!(read.await.headers().get(CONNECTION).is_none());
        let large = refuse_unread(&none, chunked(5000, 100), refusal(), 1000, second);
        let large = large.await;
        assert_eq!(large.status(), StatusCode::FORBIDDEN);
        assert_eq!(large.headers()[CONNECTION], "close");
        let (_sender, never) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let slow = Body::from_stream(never);
        let slow = refuse_unread(&none, slow, refusal(), 1000, Duration::from_millis(10));
        assert_eq!(slow.await.headers()[CONNECTION], "close");
    }
}
