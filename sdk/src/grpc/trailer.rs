//! The activated extensions in a trailer: a handler puts them in the response's
//! `a2a-extensions` header ([`EXTENSIONS`]) and [`Trailers`] moves that header to the
//! trailers, where the Go SDK sends them (A2A specifies no place for gRPC). tonic writes a
//! success's trailers itself, so this is done on the HTTP response, around the service.

use std::pin::Pin;
use std::task::{Context, Poll};

use http::{HeaderValue, Request, Response};
use http_body::{Body, Frame};

/// The metadata key of the extensions a request activates, and of the trailer echoing them.
pub const EXTENSIONS: &str = "a2a-extensions";

/// A service whose responses carry their `a2a-extensions` header as a trailer.
#[derive(Debug, Clone)]
pub struct Trailers<S>(pub S);

impl<S, B, ReqBody> tonic::codegen::Service<Request<ReqBody>> for Trailers<S>
where
    S: tonic::codegen::Service<Request<ReqBody>, Response = Response<B>>,
    S::Future: Send + 'static,
{
    type Response = Response<TrailerBody<B>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let future = self.0.call(request);
        Box::pin(async move {
            let response = future.await?;
            let (mut parts, body) = response.into_parts();
            let echo = parts.headers.remove(EXTENSIONS);
            Ok(Response::from_parts(
                parts,
                TrailerBody {
                    inner: Box::pin(body),
                    echo,
                },
            ))
        })
    }
}

/// A response body that adds `a2a-extensions` to its trailers.
pub struct TrailerBody<B> {
    inner: Pin<Box<B>>,
    echo: Option<HeaderValue>,
}

impl<B> std::fmt::Debug for TrailerBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrailerBody")
            .field("echo", &self.echo)
            .finish_non_exhaustive()
    }
}

impl<B: Body> Body for TrailerBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let polled = self.inner.as_mut().poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) if frame.is_trailers() => {
                let echo = self.echo.take();
                Poll::Ready(Some(Ok(match (frame.into_trailers(), echo) {
                    (Ok(mut trailers), Some(echo)) => {
                        trailers.insert(EXTENSIONS, echo);
                        Frame::trailers(trailers)
                    }
                    (Ok(trailers), None) => Frame::trailers(trailers),
                    (Err(frame), _) => frame,
                })))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
