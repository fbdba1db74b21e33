//! The demo agent's skills: `echo` (every lifecycle, [`DemoHandler`], also the default for a
//! message naming no skill) and `shout`, a skill with an input schema and a handler of its
//! own (`docs/skills.md`).

use agentlog::worker::{HandlerError, Skills, TaskContext, handler_fn};
use agentlog_wire::a2a::{AgentSkill, Artifact, Part, PartContent};
use serde_json::{Value, json};

use super::DemoHandler;

/// The id of the demo's skill with an input schema.
pub const SHOUT: &str = "shout";

/// `shout` on the card.
pub fn shout_skill() -> AgentSkill {
    AgentSkill {
        id: SHOUT.to_owned(),
        name: "Shout".to_owned(),
        description: "Upper-cases the text of a data part {\"text\": ...} (checked against the \
                      skill's input schema before anything is written) and answers it as the \
                      artifact `shout`. Send it with the message metadata \
                      {\"agentlog.skill\": \"shout\"}."
            .to_owned(),
        tags: vec!["demo".to_owned(), "skills".to_owned()],
        examples: vec![r#"{"text": "hello"}"#.to_owned()],
        input_modes: vec!["application/json".to_owned()],
        output_modes: vec!["text/plain".to_owned()],
        ..AgentSkill::default()
    }
}

/// `shout`'s input schema.
pub fn shout_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string", "minLength": 1}},
           "required": ["text"], "additionalProperties": false})
}

/// The demo worker's handler: `shout` to its handler, everything else to [`DemoHandler`].
pub fn demo_skills() -> Skills {
    Skills::new()
        .skill(SHOUT, handler_fn(shout))
        .default_handler(DemoHandler)
}

async fn shout(task: TaskContext) -> Result<(), HandlerError> {
    // The bridge let the message in only with a data part its schema takes.
    let text = task
        .message()
        .parts
        .iter()
        .find_map(|part| match &part.content {
            PartContent::Data(data) => data.get("text").and_then(Value::as_str),
            _ => None,
        })
        .unwrap_or_default()
        .to_uppercase();
    let artifact = Artifact {
        artifact_id: SHOUT.to_owned(),
        name: Some(SHOUT.to_owned()),
        description: None,
        parts: vec![Part::text(text.clone())],
        metadata: None,
        extensions: Vec::new(),
    };
    task.artifact(artifact, false, true).await?;
    task.complete(Some(&text)).await?;
    Ok(())
}
