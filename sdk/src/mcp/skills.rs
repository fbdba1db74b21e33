//! A definition that is a tool and a skill: a definitions-file entry with `skill` is served
//! as an MCP tool and listed on the A2A agent's card as a skill of the same name, whose
//! input schema is the tool's `inputSchema`. Its calls go to the A2A agent's topics, so the
//! agent's workers answer both with one handler (`worker::Skills::tools`).

use agentlog_wire::a2a::AgentSkill;
use serde_json::{Map, Value, json};

use super::config::{McpConfig, ToolConfig};
use super::tool_skill::ToolSkill;
use crate::error::{Error, ErrorKind, Result};

/// The skills `config`'s tools declare, for the card of A2A agent `agent`, each with its
/// input schema (the tool's `inputSchema`). Each such tool's calls are put on `agent`'s
/// topics (its `agent` set to it); one that names another agent is a config error, as is a
/// skill object that names another id or does not make a valid skill.
pub fn tool_skills(config: &mut McpConfig, agent: &str) -> Result<Vec<(AgentSkill, Value)>> {
    let mut skills = Vec::new();
    for tool in &mut config.tools {
        let fields = match &tool.skill {
            None | Some(ToolSkill::Declared(false)) => continue,
            Some(ToolSkill::Declared(true)) => Map::new(),
            Some(ToolSkill::Fields(fields)) => fields.clone(),
        };
        let name = tool.tool.name.clone();
        match &tool.agent {
            Some(other) if other != agent => {
                return Err(config_error(format!(
                    "tool {name:?} is a skill of agent {agent:?}, so its calls go to that agent's topics: leave out its \"agent\" ({other:?}) or name {agent:?}"
                )));
            }
            _ => tool.agent = Some(agent.to_owned()),
        }
        skills.push((skill_of(tool, fields)?, tool.tool.input_schema.clone()));
    }
    Ok(skills)
}

/// The card skill of `tool`: its name as the id, its title or name, its description, and
/// the modes of its A2A side (a data part in; text and JSON out), with `fields` over them.
fn skill_of(tool: &ToolConfig, mut fields: Map<String, Value>) -> Result<AgentSkill> {
    let name = &tool.tool.name;
    if let Some(id) = fields.remove("id")
        && id != json!(name)
    {
        return Err(config_error(format!(
            "tool {name:?}: its skill's id is the tool's name; leave out \"id\" ({id})"
        )));
    }
    let title = tool.tool.title.clone().unwrap_or_else(|| name.clone());
    let description = tool
        .tool
        .description
        .clone()
        .unwrap_or_else(|| title.clone());
    let mut skill = json!({
        "id": name,
        "name": title,
        "description": description,
        "tags": ["mcp-tool"],
        "inputModes": ["application/json"],
        "outputModes": ["text/plain", "application/json"],
    });
    if let Some(object) = skill.as_object_mut() {
        object.extend(fields);
    }
    agentlog_wire::a2a::from_json::<AgentSkill>("AgentSkill", &skill)
        .map_err(|e| config_error(format!("tool {name:?}: its skill: {e}")))
}

fn config_error(why: String) -> Error {
    Error::new(ErrorKind::Config, why)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config(tools: Value) -> McpConfig {
        McpConfig::from_json(json!({"tools": tools}), None).unwrap()
    }

    #[test]
    fn a_tool_with_skill_is_a_skill_of_the_a2a_agent() {
        let mut both = config(json!([
            {"name": "upper", "title": "Upper", "description": "Upper-cases",
             "inputSchema": {"type": "object", "required": ["text"]}, "skill": true},
            {"name": "lower", "inputSchema": {"type": "object"},
             "skill": {"tags": ["text"], "examples": ["{\"text\": \"A\"}"]}},
            {"name": "plain", "inputSchema": {"type": "object"}, "skill": false},
            {"name": "other", "inputSchema": {"type": "object"}}
        ]));
        let skills = tool_skills(&mut both, "words").unwrap();
        assert_eq!(skills.len(), 2);
        let (upper, schema) = &skills[0];
        assert_eq!(
            (
                upper.id.as_str(),
                upper.name.as_str(),
                upper.description.as_str()
            ),
            ("upper", "Upper", "Upper-cases")
        );
        assert_eq!(upper.input_modes, ["application/json"]);
        assert_eq!(upper.output_modes, ["text/plain", "application/json"]);
        assert_eq!(schema["required"], json!(["text"]));
        assert_eq!(skills[1].0.tags, ["text"]);
        assert_eq!(skills[1].0.description, "lower");
        let agents: Vec<String> = both.tools.iter().map(ToolConfig::agent).collect();
        assert_eq!(agents, ["words", "words", "mcp.plain", "mcp.other"]);
    }

    #[test]
    fn a_skill_tool_on_another_agent_or_with_another_id_is_refused() {
        let mut elsewhere = config(json!([{"name": "upper", "inputSchema": {"type": "object"},
            "agent": "mcp.upper", "skill": true}]));
        let error = tool_skills(&mut elsewhere, "words").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.message().contains("\"agent\""), "{error}");
        let mut same = config(json!([{"name": "upper", "inputSchema": {"type": "object"},
            "agent": "words", "skill": {"id": "upper"}}]));
        assert_eq!(tool_skills(&mut same, "words").unwrap().len(), 1);
        let mut renamed = config(json!([{"name": "upper", "inputSchema": {"type": "object"},
            "skill": {"id": "shout"}}]));
        assert!(tool_skills(&mut renamed, "words").is_err());
        let bad = McpConfig::from_json(
            json!({"tools": [{"name": "x", "inputSchema": {"type": "object"}, "skill": 3}]}),
            None,
        );
        assert!(bad.is_err());
    }
}
