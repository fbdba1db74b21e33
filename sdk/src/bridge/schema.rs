//! JSON Schema checks, the one validator both bridges use: an MCP tool's arguments against
//! its `inputSchema`, an A2A skill's input against its schema. Compiled once (at open), with
//! the `jsonschema` crate built without remote `$ref`.

use serde_json::Value;

/// A compiled JSON Schema.
#[derive(Debug, Clone)]
pub(crate) struct Schema(jsonschema::Validator);

/// One way an instance breaks a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// Where in the instance: a JSON pointer (empty for the instance itself).
    pub(crate) pointer: String,
    /// What is wrong there.
    pub(crate) why: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.why)
        } else {
            write!(f, "{}: {}", self.pointer, self.why)
        }
    }
}

impl Schema {
    /// Compile `schema`; the error says why it does not compile.
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::options()
            .build(schema)
            .map(Self)
            .map_err(|e| e.to_string())
    }

    /// Every way `instance` breaks the schema, in the validator's order; none when it holds.
    pub(crate) fn problems(&self, instance: &Value) -> Vec<Problem> {
        self.0
            .iter_errors(instance)
            .map(|e| Problem {
                pointer: e.instance_path().to_string(),
                why: e.to_string(),
            })
            .collect()
    }
}

/// `problems` joined for a message: each with its pointer, `; ` between them.
pub(crate) fn describe(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn problems_name_where_the_instance_fails() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["text"]
        }))
        .unwrap();
        assert!(schema.problems(&json!({"text": "hi"})).is_empty());
        let problems = schema.problems(&json!({"text": 5, "n": "x"}));
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(pointers, ["/n", "/text"]);
        assert!(describe(&problems).starts_with("/n: "), "{problems:?}");
        let missing = schema.problems(&json!({}));
        assert_eq!(missing[0].pointer, "");
        assert_eq!(missing[0].to_string(), missing[0].why);
        assert!(Schema::compile(&json!({"type": 7})).is_err());
    }
}
