//! A task stream read one event at a time by a caller that cannot hold it: the Python and
//! Node bindings hand each `next` to another task, so the stream lives behind a lock, is
//! opened by the first read (an error opening it is that read's), and stays ended after its
//! last event, its end or its first error.

use std::future::Future;

use futures::StreamExt as _;
use futures::future::BoxFuture;
use tokio::sync::Mutex;

use super::{StreamEvent, TaskStream};
use crate::error::Result;

/// Where a [`PulledStream`] stands.
enum State {
    /// Not opened yet: the first read opens it.
    Opening(BoxFuture<'static, Result<TaskStream>>),
    Open(TaskStream),
    Ended,
}

/// A task stream opened on its first [`next`](Self::next), shared by reference.
pub struct PulledStream {
    state: Mutex<State>,
}

impl std::fmt::Debug for PulledStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PulledStream").finish_non_exhaustive()
    }
}

impl PulledStream {
    /// A stream that `open` opens on the first read.
    pub fn new(open: impl Future<Output = Result<TaskStream>> + Send + 'static) -> Self {
        Self {
            state: Mutex::new(State::Opening(Box::pin(open))),
        }
    }

    /// The next event, opening the stream first if needed; `None` once it has ended. After
    /// an error (the open's or the stream's) or the last event, every read is `None`.
    pub async fn next(&self) -> Result<Option<StreamEvent>> {
        let mut state = self.state.lock().await;
        loop {
            match &mut *state {
                State::Opening(open) => match open.await {
                    Ok(stream) => *state = State::Open(stream),
                    Err(error) => {
                        *state = State::Ended;
                        return Err(error);
                    }
                },
                State::Open(stream) => {
                    let item = stream.next().await;
                    if !matches!(&item, Some(Ok(event)) if !event.last) {
                        // Dropped at once: its place under the bridge's limits is given back.
                        *state = State::Ended;
                    }
                    return item.transpose();
                }
                State::Ended => return Ok(None),
            }
        }
    }

    /// Stop the stream: it is dropped (its place under the bridge's limits given back), and
    /// every later read is `None`.
    pub async fn close(&self) {
        *self.state.lock().await = State::Ended;
    }
}

#[cfg(test)]
mod tests {
    use agentlog_wire::a2a::StreamResponse;

    use super::*;
    use crate::error::{Error, ErrorKind};

    fn event(position: u64, last: bool) -> Result<StreamEvent> {
        let message = agentlog_wire::a2a::Message::new_text(
            agentlog_wire::a2a::Role::Agent,
            format!("m{position}"),
            "hi",
        );
        Ok(StreamEvent {
            position,
            response: StreamResponse::Message(message),
            last,
        })
    }

    fn of(items: Vec<Result<StreamEvent>>) -> PulledStream {
        PulledStream::new(async move { Ok(Box::pin(futures::stream::iter(items)) as TaskStream) })
    }

    async fn positions(stream: &PulledStream) -> Vec<Result<u64>> {
        let mut seen = Vec::new();
        for _ in 0..5 {
            match stream.next().await {
                Ok(Some(event)) => seen.push(Ok(event.position)),
                Ok(None) => break,
                Err(error) => seen.push(Err(error)),
            }
        }
        seen
    }

    #[tokio::test]
    async fn it_ends_after_the_last_event_even_if_the_stream_goes_on() {
        let stream = of(vec![event(1, false), event(2, true), event(3, false)]);
        let seen: Vec<u64> = positions(&stream).await.into_iter().flatten().collect();
        assert_eq!(seen, [1, 2]);
    }

    #[tokio::test]
    async fn it_ends_after_its_first_error() {
        let failed = Err(Error::new(ErrorKind::Unavailable, "gone"));
        let stream = of(vec![event(1, false), failed, event(3, false)]);
        let seen = positions(&stream).await;
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(matches!(&seen[1], Err(e) if e.kind() == ErrorKind::Unavailable));
    }

    #[tokio::test]
    async fn an_open_that_fails_is_the_first_reads_error_then_it_has_ended() {
        let stream = PulledStream::new(async { Err(Error::new(ErrorKind::TaskNotFound, "no")) });
        assert!(matches!(stream.next().await, Err(e) if e.kind() == ErrorKind::TaskNotFound));
        assert!(matches!(stream.next().await, Ok(None)));
    }

    #[tokio::test]
    async fn a_closed_stream_reads_nothing_more() {
        let stream = of(vec![event(1, false), event(2, false)]);
        assert!(matches!(stream.next().await, Ok(Some(_))));
        stream.close().await;
        assert!(matches!(stream.next().await, Ok(None)));
    }
}
