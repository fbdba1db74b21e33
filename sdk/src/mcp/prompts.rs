//! Prompts and completions from configuration: `prompts/list`, `prompts/get` (the messages
//! with the arguments substituted) and `completion/complete` (a prompt argument's or a
//! template variable's configured values that start with what the user typed).
//!
//! Without configured prompts the bridge declares no `prompts` capability and the prompt
//! methods are unknown (-32601, as the spec has it for an undeclared capability); likewise
//! `completion/complete` without prompts or configured templates.

use std::collections::BTreeMap;

use agentlog_wire::mcp::Completion;
use agentlog_wire::mcp::resource::{ARTIFACT_URI_TEMPLATE, TASK_URI_TEMPLATE};
use serde_json::{Map, Value, json};

use super::catalog::PromptConfig;
use super::{Cache, McpBridge, cursor};
use crate::error::{Error, ErrorKind, Result};

fn method_not_found(method: &str) -> Error {
    Error::new(
        ErrorKind::MethodNotFound,
        format!("Method not found: {method}"),
    )
    .with_detail("method", method)
}

fn invalid(field: &'static str, message: String) -> Error {
    Error::new(ErrorKind::InvalidParams, message).with_detail("field", field)
}

/// A required string member of the params (or of an object in them).
fn string<'a>(object: Option<&'a Map<String, Value>>, member: &'static str) -> Result<&'a str> {
    object
        .and_then(|o| o.get(member))
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(member, format!("{member} is required (a string)")))
}

impl McpBridge {
    fn prompt(&self, name: &str) -> Result<&PromptConfig> {
        self.inner.catalog.prompts.get(name).ok_or_else(|| {
            Error::new(ErrorKind::InvalidParams, format!("Unknown prompt: {name}"))
                .with_detail("name", name)
        })
    }

    /// `prompts/list`: a page of prompts in name order after `cursor` (the name of the first
    /// prompt of the page), as `tools/list`.
    pub(super) fn list_prompts(
        &self,
        params: Option<&Map<String, Value>>,
        modern: bool,
    ) -> Result<Map<String, Value>> {
        let prompts = &self.inner.catalog.prompts;
        if prompts.is_empty() {
            return Err(method_not_found("prompts/list"));
        }
        let cursor = cursor(params)?.unwrap_or_default();
        if !cursor.is_empty() && !prompts.contains_key(cursor) {
            return Err(invalid("cursor", format!("Invalid cursor: {cursor}")));
        }
        let mut from = prompts.range(cursor.to_owned()..);
        let page: Vec<Value> = from
            .by_ref()
            .take(self.inner.config.page_size.max(1))
            .map(|(_, p)| serde_json::to_value(&p.prompt).unwrap_or(Value::Null))
            .collect();
        let mut result = Map::new();
        result.insert("prompts".into(), Value::Array(page));
        if let Some((next, _)) = from.next() {
            result.insert("nextCursor".into(), json!(next));
        }
        if modern {
            self.cache_hints(&mut result, Cache::Public);
        }
        Ok(result)
    }

    /// Prompt `name` and the values of its arguments in `params` (a missing optional one is
    /// `""`): an unknown prompt, arguments that are not an object of strings, or a required
    /// one missing is -32602.
    pub(super) fn prompt_arguments(
        &self,
        name: &str,
        params: &Map<String, Value>,
    ) -> Result<(&PromptConfig, BTreeMap<String, String>)> {
        let prompt = self.prompt(name)?;
        let given = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(given)) => given.clone(),
            Some(_) => {
                return Err(invalid("arguments", "arguments must be an object".into()));
            }
        };
        let mut values = BTreeMap::new();
        for argument in &prompt.prompt.arguments {
            match given.get(&argument.name) {
                Some(Value::String(value)) => {
                    values.insert(argument.name.clone(), value.clone());
                }
                Some(_) => {
                    return Err(invalid(
                        "arguments",
                        format!("argument {:?} must be a string", argument.name),
                    ));
                }
                None if argument.required == Some(true) => {
                    return Err(Error::new(
                        ErrorKind::InvalidParams,
                        format!("Missing required argument: {}", argument.name),
                    )
                    .with_detail("argument", argument.name.clone()));
                }
                None => {
                    values.insert(argument.name.clone(), String::new());
                }
            }
        }
        Ok((prompt, values))
    }

    /// `prompts/get {name, arguments?}`: the prompt's messages with each `{argument}`
    /// replaced by its value (an optional one not given by nothing). An unknown prompt, an
    /// argument that is not a string, or a required one missing is -32602.
    pub(super) fn get_prompt(
        &self,
        params: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>> {
        if self.inner.catalog.prompts.is_empty() {
            return Err(method_not_found("prompts/get"));
        }
        let empty = Map::new();
        let name = string(params, "name")?;
        let (prompt, given) = self.prompt_arguments(name, params.unwrap_or(&empty))?;
        let values: BTreeMap<&str, &str> = given
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let messages: Vec<Value> = prompt
            .messages
            .iter()
            .map(|m| serde_json::to_value(m.substituted(&values)).unwrap_or(Value::Null))
            .collect();
        let mut result = Map::new();
        if let Some(description) = &prompt.prompt.description {
            result.insert("description".into(), json!(description));
        }
        result.insert("messages".into(), Value::Array(messages));
        Ok(result)
    }

    /// `completion/complete {ref, argument: {name, value}}`: the configured values of a
    /// prompt's argument (`ref/prompt`) or of a template's variable (`ref/resource`, the
    /// template as listed) starting with `value`. An unknown prompt or template is -32602;
    /// a name with no values (the tasks' own templates) completes to nothing.
    pub(super) fn complete(
        &self,
        params: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>> {
        let catalog = &self.inner.catalog;
        if catalog.prompts.is_empty() && catalog.templates.is_empty() {
            return Err(method_not_found("completion/complete"));
        }
        let reference = params.and_then(|p| p.get("ref")).and_then(Value::as_object);
        let argument = params
            .and_then(|p| p.get("argument"))
            .and_then(Value::as_object);
        let name = string(argument, "name")?;
        let typed = string(argument, "value")?;
        let values = match string(reference, "type")? {
            "ref/prompt" => self
                .prompt(string(reference, "name")?)?
                .completions
                .get(name),
            "ref/resource" => {
                let uri = string(reference, "uri")?;
                match catalog.templates.iter().find(|(t, _)| t.as_str() == uri) {
                    Some((_, template)) => template.completions.get(name),
                    None if uri == TASK_URI_TEMPLATE || uri == ARTIFACT_URI_TEMPLATE => None,
                    None => {
                        return Err(Error::new(
                            ErrorKind::InvalidParams,
                            format!("Unknown resource template: {uri}"),
                        )
                        .with_detail("uri", uri));
                    }
                }
            }
            other => {
                return Err(invalid(
                    "ref",
                    format!("ref.type must be ref/prompt or ref/resource, not {other:?}"),
                ));
            }
        };
        let completion = Completion::of(values.into_iter().flatten().map(String::as_str), typed);
        let mut result = Map::new();
        result.insert(
            "completion".into(),
            serde_json::to_value(completion).unwrap_or(Value::Null),
        );
        Ok(result)
    }
}

#[cfg(test)]
mod tests;
