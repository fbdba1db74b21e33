//! What an MCP bridge serves besides tools, from configuration: static resources, resource
//! templates and prompts (a tools file's `resources`, `resourceTemplates` and `prompts`),
//! checked once into a [`Catalog`] when the bridge opens.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use agentlog_wire::mcp::resource::TASKS_URI_PREFIX;
use agentlog_wire::mcp::{Prompt, PromptMessage, Resource, ResourceTemplate, UriTemplate};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::{Error, ErrorKind, Result};

/// What a configured resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// Text (a template's `{name}` variables are replaced by the read URI's values).
    Text(String),
    /// Bytes, served as base64.
    Blob(Vec<u8>),
}

/// A static resource: what `resources/list` shows and what `resources/read` answers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResourceConfig {
    /// The listing (`uri`, `name`, `title`, `description`, `mimeType`, ...).
    pub resource: Resource,
    /// The contents.
    pub body: ResourceBody,
}

setters!(ResourceConfig {
    resource: Resource,
    body: ResourceBody,
});

impl ResourceConfig {
    /// A resource serving `body`.
    pub fn new(resource: Resource, body: ResourceBody) -> Self {
        Self { resource, body }
    }
}

/// A resource template served from configuration: every URI it matches reads as `body`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResourceTemplateConfig {
    /// The listing (`uriTemplate`, `name`, ...).
    pub template: ResourceTemplate,
    /// The contents of every match (text with the URI's values substituted).
    pub body: ResourceBody,
    /// The values `completion/complete` offers for each variable.
    pub completions: BTreeMap<String, Vec<String>>,
    /// The agent whose worker answers `resources/read` of a match (`Tools::resource`),
    /// instead of `body`: the request is a call on its topics (`super::served`).
    pub agent: Option<String>,
    /// The agent whose worker completes the variables with no configured `completions`
    /// (`Tools::resource_completion`).
    pub completion_agent: Option<String>,
}

setters!(ResourceTemplateConfig {
    template: ResourceTemplate,
    body: ResourceBody,
    completions: BTreeMap<String, Vec<String>>,
} optional {
    agent: String,
    completion_agent: String,
});

impl ResourceTemplateConfig {
    /// A template serving `body`, with no completions.
    pub fn new(template: ResourceTemplate, body: ResourceBody) -> Self {
        Self {
            template,
            body,
            completions: BTreeMap::new(),
            agent: None,
            completion_agent: None,
        }
    }
}

/// A prompt served from configuration.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptConfig {
    /// The listing (`name`, `title`, `description`, `arguments`).
    pub prompt: Prompt,
    /// The messages `prompts/get` answers, `{argument}` replaced by its value.
    pub messages: Vec<PromptMessage>,
    /// The values `completion/complete` offers for each argument.
    pub completions: BTreeMap<String, Vec<String>>,
    /// The agent whose worker answers `prompts/get` (`Tools::prompt`), instead of `messages`:
    /// the request is a call on its topics, as a tool call is (`super::served`).
    pub agent: Option<String>,
    /// The agent whose worker completes the arguments with no configured `values`
    /// (`Tools::prompt_completion`).
    pub completion_agent: Option<String>,
}

setters!(PromptConfig {
    prompt: Prompt,
    messages: Vec<PromptMessage>,
    completions: BTreeMap<String, Vec<String>>,
} optional {
    agent: String,
    completion_agent: String,
});

impl PromptConfig {
    /// A prompt answering `messages`, with no completions.
    pub fn new(prompt: Prompt, messages: Vec<PromptMessage>) -> Self {
        Self {
            prompt,
            messages,
            completions: BTreeMap::new(),
            agent: None,
            completion_agent: None,
        }
    }
}

/// The `agent` of a definition a worker answers (none: configuration answers it).
fn agent_of(object: &mut Map<String, Value>, what: &str) -> Result<Option<String>> {
    agent_member(object, "agent", what)
}

/// The agent named by member `key` (`agent`, `completionAgent`) of a definition.
fn agent_member(object: &mut Map<String, Value>, key: &str, what: &str) -> Result<Option<String>> {
    match object.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(agent)) => Ok(Some(agent)),
        Some(other) => Err(config_error(format!(
            "{what}'s {key} must be a string, not {other}"
        ))),
    }
}

fn config_error(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Config, what.to_string())
}

/// The static resources of a tools file's `resources` array: each a `Resource` plus one of
/// `text`, `blob` (base64) or `file` (a path, relative to `base`).
pub(super) fn resources_from_json(list: Value, base: Option<&Path>) -> Result<Vec<ResourceConfig>> {
    objects(list, "resources")?
        .into_iter()
        .map(|mut object| {
            let body = body_of(&mut object, base, "resource")?;
            let mut resource: Resource = parse(object, "resource")?;
            if resource.size.is_none() {
                resource.size = Some(body.len());
            }
            Ok(ResourceConfig::new(resource, body))
        })
        .collect()
}

/// The templates of a tools file's `resourceTemplates` array: each a `ResourceTemplate`
/// plus its body (as a resource's) and `completions` (`{variable: [values]}`).
pub(super) fn templates_from_json(
    list: Value,
    base: Option<&Path>,
) -> Result<Vec<ResourceTemplateConfig>> {
    objects(list, "resourceTemplates")?
        .into_iter()
        .map(|mut object| {
            let agent = agent_of(&mut object, "a resource template")?;
            let body = match agent {
                // A worker answers every read: no body.
                Some(_) => ResourceBody::Text(String::new()),
                None => body_of(&mut object, base, "resource template")?,
            };
            let completions = take_completions(&mut object, "completions")?;
            let completer = agent_member(&mut object, "completionAgent", "a resource template")?;
            let template = parse(object, "resource template")?;
            let mut config = ResourceTemplateConfig::new(template, body).completions(completions);
            config.agent = agent;
            config.completion_agent = completer;
            Ok(config)
        })
        .collect()
}

/// The prompts of a tools file's `prompts` array: each a `Prompt` (an argument may list its
/// `values` for completion) plus `messages` (an image's or audio's `data`, or an embedded
/// resource's `blob`, may be a `file` instead).
pub(super) fn prompts_from_json(list: Value, base: Option<&Path>) -> Result<Vec<PromptConfig>> {
    objects(list, "prompts")?
        .into_iter()
        .map(|mut object| {
            let mut completions = BTreeMap::new();
            if let Some(Value::Array(arguments)) = object.get_mut("arguments") {
                for argument in arguments.iter_mut().filter_map(Value::as_object_mut) {
                    let values = take_values(argument.remove("values"), "an argument's values")?;
                    if let (Some(values), Some(name)) =
                        (values, argument.get("name").and_then(Value::as_str))
                    {
                        completions.insert(name.to_owned(), values);
                    }
                }
            }
            let agent = agent_of(&mut object, "a prompt")?;
            let completer = agent_member(&mut object, "completionAgent", "a prompt")?;
            let default = if agent.is_some() {
                json!([])
            } else {
                Value::Null
            };
            let mut messages = object.remove("messages").unwrap_or(default);
            if let Value::Array(list) = &mut messages {
                for content in list.iter_mut().filter_map(|m| m.get_mut("content")) {
                    inline_files(content, base)?;
                }
            }
            let messages: Vec<PromptMessage> = parse_value(messages, "prompt messages")?;
            let prompt = parse(object, "prompt")?;
            let mut config = PromptConfig::new(prompt, messages).completions(completions);
            config.agent = agent;
            config.completion_agent = completer;
            Ok(config)
        })
        .collect()
}

impl ResourceBody {
    fn len(&self) -> u64 {
        let len = match self {
            ResourceBody::Text(text) => text.len(),
            ResourceBody::Blob(bytes) => bytes.len(),
        };
        u64::try_from(len).unwrap_or(u64::MAX)
    }
}

fn objects(list: Value, what: &str) -> Result<Vec<Map<String, Value>>> {
    match list {
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Object(object) => Ok(object),
                other => Err(config_error(format!("{what}: {other} is not an object"))),
            })
            .collect(),
        other => Err(config_error(format!(
            "{what} must be an array, not {other}"
        ))),
    }
}

fn parse<T: serde::de::DeserializeOwned>(object: Map<String, Value>, what: &str) -> Result<T> {
    parse_value(Value::Object(object), what)
}

fn parse_value<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T> {
    T::deserialize(value).map_err(|e| config_error(format!("bad {what}: {e}")).with_source(e))
}

/// The body of a resource or template object: its `text`, `blob` or `file` (exactly one). A
/// file is text when the object's `mimeType` is textual (`text/*`, JSON, XML), else bytes.
fn body_of(
    object: &mut Map<String, Value>,
    base: Option<&Path>,
    what: &str,
) -> Result<ResourceBody> {
    let named = object
        .get("uri")
        .or_else(|| object.get("uriTemplate"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let text = object.remove("text");
    let blob = object.remove("blob");
    let file = object.remove("file");
    match (text, blob, file) {
        (Some(Value::String(text)), None, None) => Ok(ResourceBody::Text(text)),
        (None, Some(Value::String(blob)), None) => STANDARD
            .decode(blob.trim())
            .map(ResourceBody::Blob)
            .map_err(|e| config_error(format!("{what} {named:?}: blob is not base64: {e}"))),
        (None, None, Some(Value::String(path))) => {
            let bytes = read_file(&path, base, &format!("{what} {named:?}"))?;
            let textual = object
                .get("mimeType")
                .and_then(Value::as_str)
                .is_some_and(is_textual);
            if !textual {
                return Ok(ResourceBody::Blob(bytes));
            }
            String::from_utf8(bytes)
                .map(ResourceBody::Text)
                .map_err(|_| {
                    config_error(format!("{what} {named:?}: file {path:?} is not UTF-8 text"))
                })
        }
        _ => Err(config_error(format!(
            "{what} {named:?} needs exactly one of text, blob (base64) or file (a path), each a string"
        ))),
    }
}

fn is_textual(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default().trim();
    essence.starts_with("text/")
        || essence.ends_with("/json")
        || essence.ends_with("+json")
        || essence.ends_with("/xml")
        || essence.ends_with("+xml")
}

fn read_file(path: &str, base: Option<&Path>, what: &str) -> Result<Vec<u8>> {
    let path = match base {
        Some(base) => base.join(path),
        None => Path::new(path).to_path_buf(),
    };
    std::fs::read(&path).map_err(|e| {
        config_error(format!("{what}: cannot read {}: {e}", path.display())).with_source(e)
    })
}

/// A prompt content block's `file` read into its `data` (an image or audio) or its embedded
/// resource's `blob`.
fn inline_files(content: &mut Value, base: Option<&Path>) -> Result<()> {
    let target = match content.get("type").and_then(Value::as_str) {
        Some("image" | "audio") => content.as_object_mut().map(|c| (c, "data")),
        Some("resource") => content
            .get_mut("resource")
            .and_then(Value::as_object_mut)
            .map(|r| (r, "blob")),
        _ => None,
    };
    if let Some((object, member)) = target
        && let Some(file) = object.remove("file")
    {
        let path = file
            .as_str()
            .ok_or_else(|| config_error("a prompt content's file must be a path"))?;
        let bytes = read_file(path, base, "prompt content")?;
        object.insert(member.into(), Value::String(STANDARD.encode(bytes)));
    }
    Ok(())
}

fn take_completions(
    object: &mut Map<String, Value>,
    member: &str,
) -> Result<BTreeMap<String, Vec<String>>> {
    match object.remove(member) {
        None => Ok(BTreeMap::new()),
        Some(value) => BTreeMap::<String, Vec<String>>::deserialize(value).map_err(|e| {
            config_error(format!("{member} must map names to arrays of strings: {e}"))
        }),
    }
}

fn take_values(value: Option<Value>, what: &str) -> Result<Option<Vec<String>>> {
    value
        .map(|v| {
            Vec::<String>::deserialize(v)
                .map_err(|e| config_error(format!("{what} must be an array of strings: {e}")))
        })
        .transpose()
}

/// The configured resources, templates and prompts, checked and indexed.
#[derive(Debug, Default)]
pub(super) struct Catalog {
    pub(super) resources: Vec<ResourceConfig>,
    by_uri: HashMap<String, usize>,
    pub(super) templates: Vec<(UriTemplate, ResourceTemplateConfig)>,
    /// By name: `prompts/list` order and its cursor.
    pub(super) prompts: BTreeMap<String, PromptConfig>,
}

impl Catalog {
    /// Check the definitions: URIs, templates and names unique; nothing under the tasks'
    /// `agentlog://tasks/`; templates parse; completions name variables and arguments.
    pub(super) fn new(
        resources: &[ResourceConfig],
        templates: &[ResourceTemplateConfig],
        prompts: &[PromptConfig],
    ) -> Result<Self> {
        let mut catalog = Catalog::default();
        let reserved = |uri: &str| uri.starts_with(TASKS_URI_PREFIX);
        for resource in resources {
            let uri = &resource.resource.uri;
            if uri.is_empty() || reserved(uri) {
                return Err(config_error(format!(
                    "resource {uri:?}: a URI is required, and {TASKS_URI_PREFIX} names tasks"
                )));
            }
            let at = catalog.resources.len();
            if catalog.by_uri.insert(uri.clone(), at).is_some() {
                return Err(config_error(format!("resource {uri:?} is defined twice")));
            }
            catalog.resources.push(resource.clone());
        }
        for template in templates {
            let text = &template.template.uri_template;
            let parsed = UriTemplate::parse(text)
                .map_err(|e| config_error(format!("resource template {e}")))?;
            if reserved(text) || catalog.templates.iter().any(|(t, _)| t.as_str() == text) {
                return Err(config_error(format!(
                    "resource template {text:?} is defined twice or under {TASKS_URI_PREFIX}"
                )));
            }
            if let Some(name) = template
                .completions
                .keys()
                .find(|name| !parsed.variables().any(|v| v == name.as_str()))
            {
                return Err(config_error(format!(
                    "resource template {text:?} completes {name:?}, which is none of its variables"
                )));
            }
            catalog.templates.push((parsed, template.clone()));
        }
        for prompt in prompts {
            let name = &prompt.prompt.name;
            let arguments = &prompt.prompt.arguments;
            let unique = arguments
                .iter()
                .enumerate()
                .all(|(i, a)| !arguments[..i].iter().any(|b| b.name == a.name));
            let unknown = prompt
                .completions
                .keys()
                .find(|k| !arguments.iter().any(|a| &a.name == *k));
            if name.is_empty() || !unique || unknown.is_some() {
                return Err(config_error(format!(
                    "prompt {name:?}: a name is required, argument names are unique, and completions name arguments"
                )));
            }
            if catalog
                .prompts
                .insert(name.clone(), prompt.clone())
                .is_some()
            {
                return Err(config_error(format!("prompt {name:?} is defined twice")));
            }
        }
        Ok(catalog)
    }

    /// The static resource `uri`.
    pub(super) fn resource(&self, uri: &str) -> Option<&ResourceConfig> {
        self.by_uri.get(uri).and_then(|&at| self.resources.get(at))
    }

    /// The first template `uri` matches, with the URI's values.
    pub(super) fn matching(
        &self,
        uri: &str,
    ) -> Option<(&ResourceTemplateConfig, Vec<(String, String)>)> {
        self.templates
            .iter()
            .find_map(|(parsed, config)| Some((config, parsed.matches(uri)?)))
    }
}

#[cfg(test)]
mod tests;
