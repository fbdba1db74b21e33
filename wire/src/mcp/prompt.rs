//! Prompts and completions: what `prompts/list`, `prompts/get` and `completion/complete`
//! serve, and the substitution of a prompt's arguments into its messages.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::call::ContentBlock;

/// The most values one `completion/complete` answer carries (the spec's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// A prompt as `prompts/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Its unique name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What `prompts/get` takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Icons, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// Free-form metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// An argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Its name: `{name}` in the prompt's messages is replaced by its value.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` must give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptRole {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: PromptRole,
    /// What it says: text, an image, audio, a resource link or an embedded resource.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// The message with `{name}` replaced by `values[name]` in its text, URIs, names and
    /// descriptions (never in base64 data, media types or the block's type). A `{name}`
    /// that `values` does not hold stays as written.
    pub fn substituted(&self, values: &BTreeMap<&str, &str>) -> PromptMessage {
        let Ok(mut content) = serde_json::to_value(&self.content) else {
            return self.clone();
        };
        substitute_strings(&mut content, values);
        PromptMessage {
            role: self.role,
            content: ContentBlock::deserialize(&content).unwrap_or_else(|_| self.content.clone()),
        }
    }
}

/// Members whose strings are never templates.
const VERBATIM: [&str; 5] = ["type", "data", "blob", "mimeType", "_meta"];

fn substitute_strings(value: &mut Value, values: &BTreeMap<&str, &str>) {
    match value {
        Value::String(text) => *text = fill(text, values),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| substitute_strings(item, values)),
        Value::Object(members) => members
            .iter_mut()
            .filter(|(key, _)| !VERBATIM.contains(&key.as_str()))
            .for_each(|(_, member)| substitute_strings(member, values)),
        _ => {}
    }
}

/// `text` with every `{name}` that `values` holds replaced by its value, in one pass (a
/// value is never substituted into again).
pub fn fill(text: &str, values: &BTreeMap<&str, &str>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find('}')
            .and_then(|close| Some((close, values.get(&after[..close])?)))
        {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A `completion/complete` answer's `completion`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The values, at most [`MAX_COMPLETIONS`].
    pub values: Vec<String>,
    /// How many values match in all.
    pub total: usize,
    /// Whether more match than `values` holds.
    pub has_more: bool,
}

impl Completion {
    /// The `candidates` that start with `typed` (ignoring ASCII case), in their order.
    pub fn of<'a>(candidates: impl IntoIterator<Item = &'a str>, typed: &str) -> Completion {
        let typed = typed.to_ascii_lowercase();
        let matching: Vec<&str> = candidates
            .into_iter()
            .filter(|c| {
                c.get(..typed.len())
                    .is_some_and(|head| head.to_ascii_lowercase() == typed)
            })
            .collect();
        Completion {
            total: matching.len(),
            has_more: matching.len() > MAX_COMPLETIONS,
            values: matching
                .into_iter()
                .take(MAX_COMPLETIONS)
                .map(str::to_owned)
                .collect(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_filled_in_once_and_unknown_names_stay() {
        let values = BTreeMap::from([("a", "{b}"), ("b", "two")]);
        assert_eq!(fill("x {a} {b} {c} {", &values), "x {b} two {c} {");
        assert_eq!(fill("", &values), "");
        let message: PromptMessage = serde_json::from_value(json!({
            "role": "user",
            "content": {"type": "resource", "resource": {"uri": "{b}://r", "mimeType": "{b}", "text": "hi {b}"}}
        }))
        .unwrap();
        let filled = serde_json::to_value(message.substituted(&values)).unwrap();
        assert_eq!(
            filled,
            json!({"role": "user", "content": {"type": "resource",
                   "resource": {"uri": "two://r", "mimeType": "{b}", "text": "hi two"}}})
        );
        let image: PromptMessage = serde_json::from_value(json!({
            "role": "assistant", "content": {"type": "image", "data": "e2J9", "mimeType": "image/png"}
        }))
        .unwrap();
        assert_eq!(image.substituted(&values), image);
    }

    #[test]
    fn completions_are_prefix_matches_capped_at_a_hundred() {
        let got = Completion::of(["Paris", "park", "rome"], "PA");
        assert_eq!(
            got,
            Completion {
                values: vec!["Paris".into(), "park".into()],
                total: 2,
                has_more: false
            }
        );
        assert_eq!(Completion::of(["a"], "").values, ["a"]);
        assert_eq!(Completion::of(["é"], "e").total, 0);
        let many: Vec<String> = (0..150).map(|i| format!("v{i}")).collect();
        let got = Completion::of(many.iter().map(String::as_str), "v");
        assert_eq!(
            (got.values.len(), got.total, got.has_more),
            (100, 150, true)
        );
        assert_eq!(serde_json::to_value(&got).unwrap()["hasMore"], json!(true));
    }
}
