//! A definitions-file tool's `skill` member (a leaf: the config reads it, `skills` makes the
//! card's skill of it).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool's `skill` member: `true` (the skill's card fields derived from the tool), or an
/// object of A2A `AgentSkill` fields laid over them (`name`, `description`, `tags`,
/// `examples`, `inputModes`, `outputModes`, `securityRequirements`; the id is the tool's
/// name). `false` is no skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolSkill {
    /// `true`: a skill with the derived fields; `false`: none.
    Declared(bool),
    /// A skill with these fields over the derived ones.
    Fields(Map<String, Value>),
}
