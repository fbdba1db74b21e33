//! [`ConformanceHandler`]: the agent the official A2A conformance kit (a2aproject/a2a-tck,
//! branch `1.0-dev`) drives, for `agentlog serve --conformance`; and the card parts it needs
//! ([`declare`], [`extension_scope`]).
//!
//! The kit picks the agent's behaviour by the prefix of each message's `messageId` (its
//! `scenarios/*.feature` files); `tests/conformance/README.md` has how to run it and what it
//! found.

use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::a2a::{
    AgentCard, AgentExtension, AgentSkill, Artifact, Message, Part, PartContent,
};

use agentlog::bridge::extensions::ExtensionScope;
use agentlog::worker::{Handler, HandlerError, TaskContext};

/// The extension the kit expects a required one to be, to check -32008 (its CORE-CAP-004).
pub const REQUIRED_EXTENSION: &str = "urn:a2a:tck:required-extension";

/// The `messageId` prefix of the kit's required-extension probe. The kit activates no
/// extension in any other test, so a card requiring one for every message would fail them
/// all: `serve --conformance` requires it for these messages only
/// ([`ExtensionScope`](agentlog::bridge::extensions::ExtensionScope)).
pub const REQUIRED_EXTENSION_PROBE: &str = "tck-cap-ext";

/// How long the resubscription scenario keeps its task working: twice the kit's 2 s
/// streaming timeout, so a client must resubscribe to see the end.
const RESUBSCRIBE_WAIT: Duration = Duration::from_secs(4);

/// The conformance agent. By the prefix of the message's `messageId` (the longest that
/// matches; a follow-up turn always completes, echoing its text):
///
/// - `tck-complete-task`: completes with the message "Hello from TCK".
/// - `tck-artifact-text`, `-file`, `-file-url`, `-data`: adds one artifact (the text
///   "Generated text content"; the bytes `tck` as `output.txt`, `text/plain`; a link to
///   `https://example.com/output.txt`; the JSON `{"key": "value", "count": 42}`) and
///   completes.
/// - `tck-message-response`: answers with the message "Direct message response" and no task
///   ([`TaskContext::reply`]).
/// - `tck-input-required`: asks for input (the task waits; the kit cancels it, or continues).
/// - `tck-reject-task`: rejects the task with the message "rejected".
/// - `tck-stream-001`, `tck-stream-003`, `tck-stream-ordering-001`,
///   `tck-stream-artifact-text`, `tck-stream-artifact-file`: reports `working`, adds one
///   artifact (the texts "Stream hello from TCK", "Stream task lifecycle", "Ordered output",
///   "Streamed text content", or the file above), completes.
/// - `tck-stream-002`: completes at once.
/// - `tck-stream-artifact-chunked`: reports `working`, streams one artifact in two chunks
///   ("chunk-1 ", then the last chunk "chunk-2"), completes.
/// - `test-resubscribe-message-id`: reports `working`, waits 4 s (twice the kit's streaming
///   timeout; a cancel ends it at once), completes.
/// - anything else: completes with the message "Unhandled messageId prefix: <messageId>".
#[derive(Debug, Clone, Copy, Default)]
pub struct ConformanceHandler;

#[async_trait::async_trait]
impl Handler for ConformanceHandler {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        if task.history().len() > 1 {
            task.complete(Some(&task.text())).await?;
            return Ok(());
        }
        let id = task.message().message_id.clone();
        let has = |prefix: &str| id.starts_with(prefix);
        if has("tck-stream-artifact-chunked") {
            task.working(None).await?;
            artifact(&task, Part::text("chunk-1 "), true, false).await?;
            artifact(&task, Part::text("chunk-2"), true, true).await?;
        } else if has("test-resubscribe-message-id") {
            task.working(None).await?;
            tokio::select! {
                () = task.cancellation().cancelled() => return Ok(()),
                () = tokio::time::sleep(RESUBSCRIBE_WAIT) => {}
            }
        } else if let Some(part) = streamed(&id) {
            task.working(None).await?;
            artifact(&task, part, false, true).await?;
        } else if has("tck-stream-002") {
        } else if has("tck-message-response") {
            task.reply_text("Direct message response").await?;
            return Ok(());
        } else if has("tck-input-required") {
            task.input_required("The TCK asks for input: send a follow-up")
                .await?;
            return Ok(());
        } else if has("tck-reject-task") {
            task.reject("rejected").await?;
            return Ok(());
        } else if has("tck-complete-task") {
            task.complete(Some("Hello from TCK")).await?;
            return Ok(());
        } else if let Some(part) = added(&id) {
            artifact(&task, part, false, true).await?;
        } else {
            let text = format!("Unhandled messageId prefix: {id}");
            task.complete(Some(&text)).await?;
            return Ok(());
        }
        task.complete(None).await?;
        Ok(())
    }
}

/// The artifact part of a streaming scenario that reports `working` and adds one artifact.
fn streamed(id: &str) -> Option<Part> {
    Some(if id.starts_with("tck-stream-artifact-text") {
        Part::text("Streamed text content")
    } else if id.starts_with("tck-stream-artifact-file") {
        file()
    } else if id.starts_with("tck-stream-ordering-001") {
        Part::text("Ordered output")
    } else if id.starts_with("tck-stream-001") {
        Part::text("Stream hello from TCK")
    } else if id.starts_with("tck-stream-003") {
        Part::text("Stream task lifecycle")
    } else {
        return None;
    })
}

/// The artifact part of a scenario that adds one artifact and completes.
fn added(id: &str) -> Option<Part> {
    // `-file-url` before `-file`: the longest prefix wins.
    Some(if id.starts_with("tck-artifact-file-url") {
        Part {
            filename: Some("output.txt".to_owned()),
            media_type: Some("text/plain".to_owned()),
            ..Part::from_content(PartContent::Url(
                "https://example.com/output.txt".to_owned(),
            ))
        }
    } else if id.starts_with("tck-artifact-file") {
        file()
    } else if id.starts_with("tck-artifact-text") {
        Part::text("Generated text content")
    } else if id.starts_with("tck-artifact-data") {
        Part::data(serde_json::json!({"key": "value", "count": 42}))
    } else {
        return None;
    })
}

fn file() -> Part {
    Part {
        filename: Some("output.txt".to_owned()),
        media_type: Some("text/plain".to_owned()),
        ..Part::from_content(PartContent::Raw(b"tck".to_vec()))
    }
}

async fn artifact(
    task: &TaskContext,
    part: Part,
    append: bool,
    last_chunk: bool,
) -> Result<(), HandlerError> {
    let artifact = Artifact {
        artifact_id: "tck".to_owned(),
        name: Some("tck".to_owned()),
        description: None,
        parts: vec![part],
        metadata: None,
        extensions: Vec::new(),
    };
    task.artifact(artifact, append, last_chunk).await?;
    Ok(())
}

/// Declare on `card` what the kit needs: the conformance skill and the required extension,
/// and (with `defaults`, for a card not read from a file) a description for `agent` and the
/// input modes `text/plain` and `application/json` (the kit checks that a part of another
/// type is refused with -32005).
pub fn declare(card: &mut AgentCard, agent: &str, defaults: bool) {
    if defaults {
        card.description = format!(
            "The agentlog conformance agent {agent:?}: answers the A2A conformance kit's scenarios"
        );
        card.default_input_modes = vec!["text/plain".to_owned(), "application/json".to_owned()];
        card.default_output_modes = card.default_input_modes.clone();
    }
    if !card.skills.iter().any(|s| s.id == "tck") {
        card.skills.push(conformance_skill());
    }
    let extension = conformance_extension();
    if !card
        .capabilities
        .extensions
        .iter()
        .any(|e| e.uri == extension.uri)
    {
        card.capabilities.extensions.push(extension);
    }
}

/// The kit's required extension is required of its probe messages only
/// ([`REQUIRED_EXTENSION_PROBE`]).
pub fn extension_scope() -> ExtensionScope {
    ExtensionScope::Matching(Arc::new(|message: &Message| {
        message.message_id.starts_with(REQUIRED_EXTENSION_PROBE)
    }))
}

/// The skill [`ConformanceHandler`] offers, for its card.
pub fn conformance_skill() -> AgentSkill {
    AgentSkill {
        id: "tck".to_owned(),
        name: "A2A conformance".to_owned(),
        description: "Answers the A2A conformance kit's scenarios, chosen by the prefix of \
                      each message's messageId (tck-complete-task, tck-artifact-*, \
                      tck-message-response, tck-input-required, tck-reject-task, tck-stream-*)."
            .to_owned(),
        tags: vec!["tck".to_owned(), "conformance".to_owned()],
        examples: vec!["tck-complete-task".to_owned()],
        ..AgentSkill::default()
    }
}

/// The required extension the card declares ([`REQUIRED_EXTENSION`]).
pub fn conformance_extension() -> AgentExtension {
    AgentExtension {
        uri: REQUIRED_EXTENSION.to_owned(),
        description: Some(format!(
            "Required of the conformance kit's probe messages (messageId prefix \
             {REQUIRED_EXTENSION_PROBE}); activate it with the A2A-Extensions header"
        )),
        required: true,
        params: None,
    }
}

#[cfg(test)]
mod tests;
