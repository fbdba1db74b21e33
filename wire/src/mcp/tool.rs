//! A tool definition, as `tools/list` serves it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool: what `tools/list` says about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Unique name: 1 to 128 characters of `A-Za-z0-9_.-` ([`validate_tool_name`]).
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// A JSON Schema (2020-12 unless it says otherwise) whose root is `type: "object"`: what
    /// `arguments` must be.
    pub input_schema: Value,
    /// A JSON Schema the result's `structuredContent` matches, root `type: "object"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Hints about the tool's behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Legacy era: whether a call may run as a task (`execution.taskSupport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,
    /// Free-form metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A tool's behaviour hints (all optional; clients must not trust them from an untrusted server).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool changes nothing (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments does nothing more (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It reaches an open world of outside entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Check a tool name: 1 to 128 characters, each of `A-Za-z0-9_.-`.
pub fn validate_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err(format!(
            "a tool name has 1 to 128 characters, {name:?} has {}",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(format!(
            "tool name {name:?} has {c:?}; only A-Z, a-z, 0-9, '_', '.' and '-' are allowed"
        ));
    }
    Ok(())
}

impl Tool {
    /// A tool with its name and input schema, and nothing else set: fill in the optional
    /// fields with struct update syntax (`Tool { description: ..., ..Tool::new(..) }`).
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            icons: None,
            input_schema,
            output_schema: None,
            annotations: None,
            execution: None,
            meta: None,
        }
    }

    /// Check what serde cannot: the name, and that each schema's root is an object schema
    /// (`type: "object"`).
    pub fn validate(&self) -> Result<(), String> {
        validate_tool_name(&self.name)?;
        object_root(&self.input_schema, "inputSchema")?;
        if let Some(schema) = &self.output_schema {
            object_root(schema, "outputSchema")?;
        }
        Ok(())
    }
}

fn object_root(schema: &Value, what: &str) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        _ => Err(format!(
            "a tool's {what} must be a JSON Schema with type \"object\""
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_spec() {
        for good in ["a", "get_weather", "x.y-z_1", &"a".repeat(128)] {
            assert!(validate_tool_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "é", "a/b", &"a".repeat(129)] {
            assert!(validate_tool_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tool_round_trips_in_the_spec_shape() {
        let json = json!({
            "name": "add",
            "title": "Add",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
            "annotations": {"readOnlyHint": true},
            "_meta": {"k": 1}
        });
        let tool: Tool = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(
            tool.annotations.as_ref().unwrap().read_only_hint,
            Some(true)
        );
        assert_eq!(serde_json::to_value(&tool).unwrap(), json);
        tool.validate().unwrap();
        let mut bad = tool.clone();
        bad.input_schema = json!({"type": "string"});
        assert!(bad.validate().is_err());
        bad.input_schema = json!({"type": "object"});
        bad.output_schema = Some(json!(true));
        assert!(bad.validate().is_err());
    }
}
