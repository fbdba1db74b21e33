//! The `x-mcp-header` rule (SEP-2243; 2026-07-28 Streamable HTTP, "Custom Headers from Tool
//! Parameters"): a tool's `inputSchema` may mark a property with `x-mcp-header: Name`, and a
//! modern client then mirrors that argument into an `Mcp-Param-Name` header, so proxies can
//! route on it without reading the body. The bridge processes the body, so it must check that
//! every such header says what the body says: otherwise an intermediary routing on the header
//! and the tool acting on the body would act on two different values.
//!
//! [`mirrored`] reads and checks a schema's annotations once, at [`McpBridge::open`](super::McpBridge::open)
//! (a bad one is a config error: conforming clients drop such a tool from their list);
//! [`check`] compares one call's headers with its arguments.

use serde_json::{Map, Value};

use super::rpc::McpHeaders;
use crate::error::{Error, ErrorKind, Result};

/// The schema keyword.
pub(super) const X_MCP_HEADER: &str = "x-mcp-header";

/// One argument a tool mirrors into an `Mcp-Param-*` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mirrored {
    /// The name part of the header, as the schema spells it.
    name: String,
    /// `name` in ASCII lowercase: header names compare case-insensitively
    /// ([`McpHeaders::params`] keys them so).
    key: String,
    /// The chain of `properties` keys from the schema root to the property.
    path: Vec<String>,
    /// The property's `type`.
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Boolean,
}

/// Keywords whose value is one subschema, a list of them, or a map of them (JSON Schema
/// 2020-12 applicators). Crossing any of them leaves the chain of `properties` keys, so an
/// annotation below is not statically reachable. Instance data (`const`, `enum`, `default`,
/// `examples`) is never entered (it is not schema), nor is `$ref` followed.
const ONE: [&str; 11] = [
    "items",
    "contains",
    "unevaluatedItems",
    "additionalProperties",
    "propertyNames",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
const LIST: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
const MAP: [&str; 4] = [
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// The arguments `schema` mirrors, in path order, or why an annotation breaks the spec's
/// constraints: its value must be a non-empty HTTP token, unique (case-insensitively) within
/// the schema, on a property of type `string`, `integer` or `boolean` (never `number`) that
/// is reached from the root through `properties` keys alone.
pub(super) fn mirrored(schema: &Value) -> std::result::Result<Vec<Mirrored>, String> {
    let mut found: Vec<Mirrored> = Vec::new();
    // An explicit stack: a deep schema cannot overflow the call stack.
    let mut stack: Vec<(Option<Vec<String>>, &Value)> = vec![(Some(Vec::new()), schema)];
    while let Some((path, node)) = stack.pop() {
        let Value::Object(schema) = node else {
            continue;
        };
        if let Some(name) = schema.get(X_MCP_HEADER) {
            found.push(annotation(path.as_deref(), name, schema, &found)?);
        }
        for (keyword, value) in schema {
            match (keyword.as_str(), value) {
                ("properties", Value::Object(properties)) => {
                    for (property, sub) in properties {
                        let path = path.as_ref().map(|p| {
                            let mut p = p.clone();
                            p.push(property.clone());
                            p
                        });
                        stack.push((path, sub));
                    }
                }
                (k, sub) if ONE.contains(&k) => stack.push((None, sub)),
                (k, Value::Array(subs)) if LIST.contains(&k) => {
                    stack.extend(subs.iter().map(|s| (None, s)));
                }
                (k, Value::Object(subs)) if MAP.contains(&k) => {
                    stack.extend(subs.values().map(|s| (None, s)));
                }
                _ => {}
            }
        }
    }
    // One order whatever the walk's (it only shows in messages).
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

fn annotation(
    path: Option<&[String]>,
    name: &Value,
    schema: &Map<String, Value>,
    found: &[Mirrored],
) -> std::result::Result<Mirrored, String> {
    let path = match path {
        Some(path) if !path.is_empty() => path,
        _ => {
            return Err(format!(
                "{X_MCP_HEADER} sits where no argument is reached through `properties` keys alone (the root, or under items, oneOf, $defs, ...)"
            ));
        }
    };
    let at = path.join(".");
    let Some(name) = name.as_str() else {
        return Err(format!("property {at:?}: {X_MCP_HEADER} must be a string"));
    };
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(format!(
            "property {at:?}: {X_MCP_HEADER} {name:?} is not an HTTP header name token (RFC 9110 tchar)"
        ));
    }
    let kind = match schema.get("type").and_then(Value::as_str) {
        Some("string") => Kind::String,
        Some("integer") => Kind::Integer,
        Some("boolean") => Kind::Boolean,
        _ => {
            return Err(format!(
                "property {at:?}: {X_MCP_HEADER} is allowed only on a property whose type is \"string\", \"integer\" or \"boolean\""
            ));
        }
    };
    let key = name.to_ascii_lowercase();
    if let Some(twin) = found.iter().find(|m| m.key == key) {
        return Err(format!(
            "property {at:?}: {X_MCP_HEADER} {name:?} is also property {:?}'s (names compare case-insensitively)",
            twin.path.join(".")
        ));
    }
    Ok(Mirrored {
        name: name.to_owned(),
        key,
        path: path.to_vec(),
        kind,
    })
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Check a modern call's `Mcp-Param-*` headers against its arguments: for each mirrored
/// argument present (and not `null`), its header must be sent and, decoded, equal it (an
/// integer numerically, a boolean as `true`/`false`); an argument absent (or `null`, or not a
/// primitive, which no client can mirror) must come without its header. A header of a
/// mirrored argument that does not decode (invalid characters, bad base64, repeated) fails
/// too. Failures are -32020 naming the header; headers of unmirrored names are ignored.
pub(super) fn check(
    mirrored: &[Mirrored],
    arguments: Option<&Map<String, Value>>,
    headers: &McpHeaders,
) -> Result<()> {
    for m in mirrored {
        let header = format!("Mcp-Param-{}", m.name);
        let mismatch = |why: String| {
            Err(
                Error::new(ErrorKind::HeaderMismatch, format!("Header mismatch: {why}"))
                    .with_detail("header", header.as_str()),
            )
        };
        let sent = match headers.params.get(&m.key) {
            None => None,
            Some(Some(value)) => Some(value.as_str()),
            Some(None) => {
                return mismatch(format!(
                    "{header} has invalid characters, a malformed =?base64?…?= value, or is sent twice"
                ));
            }
        };
        let argument = m.path.join(".");
        let rendered = value_at(arguments, &m.path).and_then(render);
        match (sent, rendered) {
            (None, None) => {}
            (Some(_), None) => {
                return mismatch(format!(
                    "{header} is sent, but the body has no value for argument {argument:?} that it could mirror"
                ));
            }
            (None, Some(_)) => {
                return mismatch(format!(
                    "{header} is required: the body gives argument {argument:?}"
                ));
            }
            (Some(sent), Some((rendered, number))) => {
                let equal = match (m.kind, number) {
                    // The spec's advice: integers compare as numbers (`42.0` is `42`).
                    (Kind::Integer, Some(body)) => sent
                        .parse::<f64>()
                        .is_ok_and(|header| header.is_finite() && header == body),
                    _ => sent == rendered,
                };
                if !equal {
                    return mismatch(format!(
                        "{header} is {sent:?}, the body's argument {argument:?} is {rendered:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The value at `path` of the arguments (`null` counts as absent).
fn value_at<'a>(arguments: Option<&'a Map<String, Value>>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = arguments?.get(first)?;
    for key in rest {
        value = value.as_object()?.get(key)?;
    }
    (!value.is_null()).then_some(value)
}

/// How a client renders `value` into a header (and the number, for a numeric compare); a
/// value that is not a primitive has no rendering.
fn render(value: &Value) -> Option<(String, Option<f64>)> {
    match value {
        Value::String(s) => Some((s.clone(), None)),
        Value::Bool(b) => Some((b.to_string(), None)),
        Value::Number(n) => Some((n.to_string(), n.as_f64())),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> McpHeaders {
        McpHeaders::from_pairs(pairs.iter().copied())
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "options": {"type": "object", "properties": {
                "tenant": {"type": "string", "x-mcp-header": "Tenant"}}},
            "query": {"type": "string"}
        }})
    }

    #[test]
    fn annotations_are_read_along_properties_chains() {
        let found = mirrored(&schema()).unwrap();
        let names: Vec<(&str, String)> = found
            .iter()
            .map(|m| (m.name.as_str(), m.path.join(".")))
            .collect();
        assert_eq!(
            names,
            [
                ("Dry-Run", "dry".to_owned()),
                ("Limit", "limit".to_owned()),
                ("Tenant", "options.tenant".to_owned()),
                ("Region", "region".to_owned()),
            ]
        );
        assert!(
            mirrored(&json!({"type": "object", "properties": {"q": {"type": "string"}}}))
                .unwrap()
                .is_empty()
        );
        // A property *named* x-mcp-header, and instance data, are no annotations.
        assert!(
            mirrored(&json!({"type": "object", "properties": {
                "x-mcp-header": {"type": "string"},
                "mode": {"type": "string", "default": {"x-mcp-header": "M"}, "enum": [{"x-mcp-header": "N"}]}}}))
            .unwrap()
            .is_empty()
        );
    }

    #[test]
    fn annotations_breaking_the_constraints_are_refused() {
        let prop = |p: Value| json!({"type": "object", "properties": {"p": p}});
        for bad in [
            // Not a token, empty, not a string.
            prop(json!({"type": "string", "x-mcp-header": "Two Words"})),
            prop(json!({"type": "string", "x-mcp-header": ""})),
            prop(json!({"type": "string", "x-mcp-header": "Line\r\nBreak"})),
            prop(json!({"type": "string", "x-mcp-header": 7})),
            // Not a primitive of the three types (number is excluded).
            prop(json!({"type": "number", "x-mcp-header": "P"})),
            prop(json!({"type": "object", "x-mcp-header": "P"})),
            prop(json!({"type": ["string", "null"], "x-mcp-header": "P"})),
            prop(json!({"x-mcp-header": "P"})),
            // Not statically reachable.
            json!({"type": "object", "x-mcp-header": "Root"}),
            json!({"type": "object", "properties": {"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}}),
            json!({"type": "object", "oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"type": "object", "$defs": {"a": {"type": "string", "x-mcp-header": "A"}}, "properties": {"a": {"$ref": "#/$defs/a"}}}),
            // Two of one name, whatever the case.
            json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "Region"},
                "b": {"type": "string", "x-mcp-header": "REGION"}}}),
        ] {
            assert!(mirrored(&bad).is_err(), "{bad}");
        }
    }

    fn kind_of(result: Result<()>) -> Option<ErrorKind> {
        result.err().map(|e| e.kind())
    }

    #[test]
    fn headers_must_say_what_the_body_says() {
        let found = mirrored(&schema()).unwrap();
        let ok = |a: Value, h: &[(&str, &str)]| check(&found, Some(&args(a)), &headers(h));
        assert!(ok(json!({"query": "x"}), &[]).is_ok());
        assert!(
            ok(
                json!({"region": "us-west1"}),
                &[("mcp-param-region", "us-west1")]
            )
            .is_ok()
        );
        // Header names are case-insensitive, values are not.
        assert!(
            ok(
                json!({"region": "us-west1"}),
                &[("MCP-PARAM-REGION", "us-west1")]
            )
            .is_ok()
        );
        let mismatch = Some(ErrorKind::HeaderMismatch);
        assert_eq!(
            kind_of(ok(
                json!({"region": "us-west1"}),
                &[("mcp-param-region", "US-WEST1")]
            )),
            mismatch
        );
        // Missing header, header without a value, null value.
        assert_eq!(kind_of(ok(json!({"region": "us-west1"}), &[])), mismatch);
        assert_eq!(
            kind_of(ok(json!({}), &[("mcp-param-region", "us-west1")])),
            mismatch
        );
        assert!(ok(json!({"region": null}), &[]).is_ok());
        assert_eq!(
            kind_of(ok(json!({"region": null}), &[("mcp-param-region", "null")])),
            mismatch
        );
        // Base64 values (non-ASCII, edge spaces) decode before the compare.
        assert!(
            ok(
                json!({"region": "Hello, 世界"}),
                &[("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?=")]
            )
            .is_ok()
        );
        assert!(
            ok(
                json!({"region": " padded "}),
                &[("mcp-param-region", "=?base64?IHBhZGRlZCA=?=")]
            )
            .is_ok()
        );
        // Bad padding, a character outside the alphabet, non-ASCII sent plain, sent twice.
        for bad in ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "Hellö"] {
            assert_eq!(
                kind_of(ok(json!({"region": "Hello"}), &[("mcp-param-region", bad)])),
                mismatch,
                "{bad}"
            );
        }
        assert_eq!(
            kind_of(ok(
                json!({"region": "a"}),
                &[("mcp-param-region", "a"), ("Mcp-Param-Region", "a")]
            )),
            mismatch
        );
        // Without both markers the value is literal.
        assert!(
            ok(
                json!({"region": "=?base64?SGVsbG8="}),
                &[("mcp-param-region", "=?base64?SGVsbG8=")]
            )
            .is_ok()
        );
        // Integers compare as numbers; booleans as true/false.
        assert!(ok(json!({"limit": 42}), &[("mcp-param-limit", "42.0")]).is_ok());
        assert!(ok(json!({"limit": -7}), &[("mcp-param-limit", "-7")]).is_ok());
        assert_eq!(
            kind_of(ok(json!({"limit": 42}), &[("mcp-param-limit", "43")])),
            mismatch
        );
        assert!(ok(json!({"dry": false}), &[("mcp-param-dry-run", "false")]).is_ok());
        assert_eq!(
            kind_of(ok(json!({"dry": true}), &[("mcp-param-dry-run", "True")])),
            mismatch
        );
        // Nested along properties.
        assert!(
            ok(
                json!({"options": {"tenant": "t1"}}),
                &[("mcp-param-tenant", "t1")]
            )
            .is_ok()
        );
        assert_eq!(
            kind_of(ok(json!({"options": {"tenant": "t1"}}), &[])),
            mismatch
        );
        // A value no client can mirror (not a primitive) needs no header; one sent fails.
        assert!(ok(json!({"region": {"a": 1}}), &[]).is_ok());
        assert_eq!(
            kind_of(ok(json!({"region": [1]}), &[("mcp-param-region", "[1]")])),
            mismatch
        );
        // A header of a name no argument mirrors is ignored.
        assert!(ok(json!({}), &[("mcp-param-other", "x")]).is_ok());
        let error = ok(json!({"region": "a"}), &[]).unwrap_err();
        assert_eq!(error.to_mcp()["code"], -32020);
    }
}
