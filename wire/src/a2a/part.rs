//! [`Part`]: one piece of message or artifact content — text, raw bytes, a URL or JSON data.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::oneof::exactly_one;
use super::{present, via_repr};

/// Decoder settings: padding optional, as ProtoJSON readers accept.
const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
/// Standard alphabet, padded or not.
const STANDARD_IN: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
/// URL-safe alphabet, padded or not.
const URL_SAFE_IN: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// Base64 text for bytes: standard alphabet, padded (what ProtoJSON writers emit).
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Bytes for base64 text in the standard or URL-safe alphabet, padded or not.
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let engine = if text.contains(['-', '_']) {
        &URL_SAFE_IN
    } else {
        &STANDARD_IN
    };
    engine
        .decode(text)
        .map_err(|err| format!("invalid base64: {err}"))
}

/// One piece of content: exactly one of text, raw bytes, a URL or JSON data, plus optional
/// metadata, file name and media type (allowed on every kind).
///
/// JSON is flat: `{"text":"hi"}`, `{"raw":"aGk=","filename":"a.png","mediaType":"image/png"}`,
/// `{"url":"https://…"}`, `{"data":{"k":1}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(into = "PartRepr")]
pub struct Part {
    /// The content itself (the proto `oneof`).
    pub content: PartContent,
    /// Free-form metadata.
    pub metadata: Option<Map<String, Value>>,
    /// A file name for the content, e.g. `a.png`.
    pub filename: Option<String>,
    /// The media type, e.g. `image/png`.
    pub media_type: Option<String>,
}

/// The content of a [`Part`].
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// `text`: plain text.
    Text(String),
    /// `raw`: bytes, base64 in JSON.
    Raw(Vec<u8>),
    /// `url`: a reference to the content.
    Url(String),
    /// `data`: any JSON value.
    Data(Value),
}

impl Part {
    /// A text part without metadata.
    pub fn text(text: impl Into<String>) -> Self {
        Self::from_content(PartContent::Text(text.into()))
    }

    /// A JSON data part without metadata.
    pub fn data(data: Value) -> Self {
        Self::from_content(PartContent::Data(data))
    }

    /// A part holding `content` and nothing else.
    pub fn from_content(content: PartContent) -> Self {
        Self {
            content,
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// The flat JSON shape of a [`Part`]; the `oneof` is checked on the way in.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartRepr {
    /// `text` member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
    /// `raw` member, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) raw: Option<String>,
    /// `url` member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
    /// `data` member; `null` counts as present.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) data: Option<Value>,
    /// Part metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Map<String, Value>>,
    /// File name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) filename: Option<String>,
    /// Media type.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "media_type")]
    pub(crate) media_type: Option<String>,
}

/// Reads the flat shape and checks the `oneof`.
impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        via_repr::<D, PartRepr, Part>(deserializer, "a part object")
    }
}

impl TryFrom<PartRepr> for Part {
    type Error = String;

    fn try_from(repr: PartRepr) -> Result<Self, String> {
        exactly_one(
            "a part",
            &[
                ("text", repr.text.is_some()),
                ("raw", repr.raw.is_some()),
                ("url", repr.url.is_some()),
                ("data", repr.data.is_some()),
            ],
        )?;
        let content = if let Some(text) = repr.text {
            PartContent::Text(text)
        } else if let Some(raw) = repr.raw {
            PartContent::Raw(decode_base64(&raw).map_err(|err| format!("`raw`: {err}"))?)
        } else if let Some(url) = repr.url {
            PartContent::Url(url)
        } else {
            PartContent::Data(repr.data.unwrap_or_default())
        };
        Ok(Self {
            content,
            metadata: repr.metadata,
            filename: repr.filename,
            media_type: repr.media_type,
        })
    }
}

impl From<Part> for PartRepr {
    fn from(part: Part) -> Self {
        let mut repr = PartRepr {
            metadata: part.metadata,
            filename: part.filename,
            media_type: part.media_type,
            ..PartRepr::default()
        };
        match part.content {
            PartContent::Text(text) => repr.text = Some(text),
            PartContent::Raw(raw) => repr.raw = Some(encode_base64(&raw)),
            PartContent::Url(url) => repr.url = Some(url),
            PartContent::Data(data) => repr.data = Some(data),
        }
        repr
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(json: &str) -> Part {
        let part: Part = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&part).unwrap(), json);
        part
    }

    #[test]
    fn every_kind_round_trips_flat() {
        assert_eq!(round_trip(r#"{"text":"hi"}"#), Part::text("hi"));
        let raw = round_trip(r#"{"raw":"iVBORw==","filename":"a.png","mediaType":"image/png"}"#);
        assert_eq!(raw.content, PartContent::Raw(vec![0x89, b'P', b'N', b'G']));
        assert_eq!(raw.filename.as_deref(), Some("a.png"));
        let url = round_trip(r#"{"url":"https://x/doc.pdf","mediaType":"application/pdf"}"#);
        assert_eq!(url.content, PartContent::Url("https://x/doc.pdf".into()));
        let data =
            round_trip(r#"{"data":{"k":1},"metadata":{"m":true},"mediaType":"application/json"}"#);
        assert_eq!(data.content, PartContent::Data(json!({"k": 1})));
        assert_eq!(round_trip(r#"{"data":null}"#), Part::data(Value::Null));
        assert_eq!(
            round_trip(r#"{"data":[1,"a"]}"#),
            Part::data(json!([1, "a"]))
        );
        assert_eq!(round_trip(r#"{"text":""}"#).as_text(), Some(""));
        assert_eq!(Part::data(json!(1)).as_text(), None);
    }

    #[test]
    fn snake_case_and_unknown_fields_are_accepted() {
        let part: Part =
            serde_json::from_str(r#"{"kind":"text","text":"hi","media_type":"text/plain","x":1}"#)
                .unwrap();
        assert_eq!(
            serde_json::to_string(&part).unwrap(),
            r#"{"text":"hi","mediaType":"text/plain"}"#
        );
    }

    #[test]
    fn raw_accepts_every_base64_flavour_and_writes_standard_padded() {
        for input in ["+/8=", "+/8", "-_8=", "-_8"] {
            let part: Part = serde_json::from_value(json!({ "raw": input })).unwrap();
            assert_eq!(part.content, PartContent::Raw(vec![0xfb, 0xff]), "{input}");
            assert_eq!(serde_json::to_string(&part).unwrap(), r#"{"raw":"+/8="}"#);
        }
        let err = serde_json::from_value::<Part>(json!({"raw": "!!"})).unwrap_err();
        assert!(
            err.to_string().starts_with("`raw`: invalid base64"),
            "{err}"
        );
    }

    #[test]
    fn zero_or_two_members_are_rejected() {
        let none = serde_json::from_value::<Part>(json!({"filename": "a"})).unwrap_err();
        assert_eq!(
            none.to_string(),
            "a part needs exactly one of `text`, `raw`, `url`, `data`, found none"
        );
        let two = serde_json::from_value::<Part>(json!({"text": "a", "url": "b"})).unwrap_err();
        assert_eq!(
            two.to_string(),
            "a part needs exactly one of `text`, `raw`, `url`, `data`, found `text` and `url`"
        );
        let null_text = serde_json::from_value::<Part>(json!({"text": null})).unwrap_err();
        assert!(null_text.to_string().ends_with("found none"));
    }
}
