//! The reply on the request of a `tools/call` that started: JSON, or an event stream of its
//! progress and log messages, then the answer, when one comes before the answer.

use serde_json::{Map, Value};

use super::McpBridge;
use super::answer::Answer;
use super::rpc::{Ctx, McpReply, error_body, error_reply, success};
use super::running::{CallEvent, Started};
use crate::error::{Error, ErrorKind};

impl McpBridge {
    /// Reply to the call `started`: at once (answered, or a task), or once its answer came;
    /// on an event stream when the client takes one and asked for progress, or when a log
    /// message comes before the answer.
    pub(super) async fn reply(&self, ctx: &Ctx<'_>, started: Started) -> McpReply {
        let modern = ctx.era.is_modern();
        let served = ctx.method != "tools/call";
        let method = ctx.method.to_owned();
        let mut running = match started {
            Started::Answered(answer) => return self.reply_result(ctx, answer),
            Started::Running(running) => running,
            Started::Task(task) if modern => {
                let result = self.modern_result(task.modern(), "task");
                return McpReply::Json {
                    status: 200,
                    body: success(ctx.id, &result),
                };
            }
            Started::Task(task) => {
                let mut result = Map::new();
                result.insert("task".into(), Value::Object(task.legacy()));
                return McpReply::Json {
                    status: 200,
                    body: success(ctx.id, &result),
                };
            }
        };
        // A call taking only log messages answers JSON unless one comes before the answer
        // (most tools log nothing, and a legacy call takes every level).
        let mut first = None;
        if running.progress_token.is_none() && running.log_level.is_some() && ctx.accepts_stream {
            match running.next().await {
                Some(CallEvent::Notification(n)) => first = Some(n),
                Some(CallEvent::Done(answer)) => return self.reply_result(ctx, answer),
                None => return no_answer(ctx),
            }
        }
        if (running.progress_token.is_some() || first.is_some()) && ctx.accepts_stream {
            let this = self.clone();
            let id = ctx.id.to_owned();
            let first = first.map(|n| serde_json::to_vec(&n).unwrap_or_default());
            let stream = futures::stream::unfold(Some(running), move |state| {
                let (this, id, method) = (this.clone(), id.clone(), method.clone());
                async move {
                    let mut running = state?;
                    match running.next().await? {
                        CallEvent::Notification(n) => {
                            Some((serde_json::to_vec(&n).unwrap_or_default(), Some(running)))
                        }
                        CallEvent::Done(Ok(result)) if !served => {
                            Some((this.result_body(&id, modern, result), None))
                        }
                        CallEvent::Done(Ok(result)) => {
                            match super::served::unwrap(result, &method, modern) {
                                Ok(result) => Some((this.result_body(&id, modern, result), None)),
                                Err(error) => Some((error_body(&id, &error.to_mcp()), None)),
                            }
                        }
                        CallEvent::Done(Err(error)) => {
                            Some((error_body(&id, &error.to_mcp()), None))
                        }
                    }
                }
            });
            return McpReply::Stream(Box::pin(futures::StreamExt::chain(
                futures::stream::iter(first),
                stream,
            )));
        }
        loop {
            match running.next().await {
                Some(CallEvent::Notification(_)) => {}
                Some(CallEvent::Done(answer)) => return self.reply_result(ctx, answer),
                None => return no_answer(ctx),
            }
        }
    }

    fn reply_result(&self, ctx: &Ctx<'_>, answer: Answer) -> McpReply {
        let modern = ctx.era.is_modern();
        // A worker's answer to a request other than a tool call carries its result inside.
        let answer = match answer {
            Ok(result) if ctx.method != "tools/call" => {
                super::served::unwrap(result, ctx.method, modern)
            }
            answer => answer,
        };
        match answer {
            Ok(result) => McpReply::Json {
                status: 200,
                body: self.result_body(ctx.id, modern, result),
            },
            Err(error) => error_reply(ctx.id, &error, modern),
        }
    }

    fn result_body(
        &self,
        id: &serde_json::value::RawValue,
        modern: bool,
        result: Map<String, Value>,
    ) -> Vec<u8> {
        if modern {
            success(id, &self.modern_result(result, "complete"))
        } else {
            success(id, &result)
        }
    }
}

/// The reply to a call whose events ended before its answer.
fn no_answer(ctx: &Ctx<'_>) -> McpReply {
    let error = Error::new(ErrorKind::Internal, "the call ended without an answer");
    error_reply(ctx.id, &error, ctx.era.is_modern())
}
