//! W3C trace context (`traceparent`, `tracestate`) as a record carries it.
//!
//! A record keeps the trace context of the call that wrote it in the media-type parameters
//! of its header's `content_type`: `application/json; traceparent=00-…-01;
//! tracestate="vendor=value"`. No reader interprets `content_type`, so a record with a context
//! reads the same to a reader that knows nothing of traces (no format version bump), a record
//! without one has no parameters, and a signature covers the context as it covers the rest of
//! the header. [`TraceContext::parse`] takes the header values as W3C Trace Context level 1
//! defines them and turns away what it does not allow. The rule for readers in other
//! languages is wire/README.md's "Trace context"; `fixtures/trace_context.json` pins it.

/// The HTTP header (and gRPC metadata key) of the parent.
pub const TRACEPARENT: &str = "traceparent";
/// The HTTP header (and gRPC metadata key) of the vendors' state.
pub const TRACESTATE: &str = "tracestate";

/// The longest `tracestate` kept (the length W3C asks every vendor to pass on whole).
pub const MAX_TRACESTATE: usize = 512;
/// The most list members a `tracestate` may have.
const MAX_MEMBERS: usize = 32;
/// `00-<32 hex>-<16 hex>-<2 hex>`.
const PARENT_LEN: usize = 55;

/// A valid W3C trace parent and the state that goes with it (possibly empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceContext {
    traceparent: String,
    tracestate: String,
}

impl TraceContext {
    /// The context of the header values, or `None` if `traceparent` is not a valid parent
    /// (then the state goes too, as W3C says). A parent of a later version keeps its first
    /// 55 characters, the fields version 00 defines. A `tracestate` that is malformed, has
    /// more than 32 members or is longer than [`MAX_TRACESTATE`] is dropped; the parent stays.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let traceparent = parent(traceparent.trim())?;
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| state_ok(s))
            .unwrap_or("");
        Some(Self {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate.to_owned(),
        })
    }

    /// The context a carrier's fields give (HTTP headers, gRPC metadata): `parents` every
    /// `traceparent` field's value (`None` for one that is not text), `states` the text
    /// `tracestate` values in order. Exactly one readable parent is needed (two are none at
    /// all, as W3C says); several states are joined with commas.
    pub fn from_fields<'a>(
        parents: impl IntoIterator<Item = Option<&'a str>>,
        states: impl IntoIterator<Item = &'a str>,
    ) -> Option<Self> {
        let mut parents = parents.into_iter();
        let parent = parents.next()??;
        if parents.next().is_some() {
            return None;
        }
        let states: Vec<&str> = states.into_iter().collect();
        let state = (!states.is_empty()).then(|| states.join(","));
        Self::parse(parent, state.as_deref())
    }

    /// The context among a carrier's `(name, value)` pairs as a transport or a language
    /// binding holds them (HTTP headers, an OpenTelemetry propagator's dict): the
    /// `traceparent` and `tracestate` entries, names in any case, read as
    /// [`from_fields`](Self::from_fields) reads them; every other pair is ignored.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<Self> {
        let (mut parents, mut states) = (Vec::new(), Vec::new());
        for (name, value) in pairs {
            if name.eq_ignore_ascii_case(TRACEPARENT) {
                parents.push(Some(value));
            } else if name.eq_ignore_ascii_case(TRACESTATE) {
                states.push(value);
            }
        }
        Self::from_fields(parents, states)
    }

    /// The `traceparent` value.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` value; empty when there is none.
    pub fn tracestate(&self) -> &str {
        &self.tracestate
    }

    /// The trace id: 32 lowercase hex digits.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The id of the span this context names as the parent: 16 lowercase hex digits.
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// Whether the caller sampled the trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.traceparent[53..55], 16).is_ok_and(|flags| flags & 1 == 1)
    }

    /// The context of a span `span_id` (16 lowercase hex digits, not all zero) of the same
    /// trace: what the work done under this context passes on. `None` for a bad span id.
    pub fn child(&self, span_id: &str) -> Option<Self> {
        if !hex_id(span_id, 16) {
            return None;
        }
        Some(Self {
            traceparent: format!(
                "00-{}-{span_id}-{}",
                self.trace_id(),
                &self.traceparent[53..55]
            ),
            tracestate: self.tracestate.clone(),
        })
    }

    /// `content_type` (its media type; any parameters it had are dropped) with this context
    /// as its parameters.
    pub fn in_content_type(&self, content_type: &str) -> String {
        let media_type = media_type(content_type);
        let mut out = format!("{media_type}; {TRACEPARENT}={}", self.traceparent);
        if !self.tracestate.is_empty() {
            out.push_str("; ");
            out.push_str(TRACESTATE);
            out.push_str("=\"");
            for c in self.tracestate.chars() {
                if matches!(c, '"' | '\\') {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        }
        out
    }

    /// The context a record's `content_type` carries, if it carries a valid one.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let mut traceparent = None;
        let mut tracestate = None;
        for (name, value) in parameters(content_type) {
            if name.eq_ignore_ascii_case(TRACEPARENT) {
                traceparent = Some(value);
            } else if name.eq_ignore_ascii_case(TRACESTATE) {
                tracestate = Some(value);
            }
        }
        Self::parse(&traceparent?, tracestate.as_deref())
    }
}

/// A content type's media type, without its parameters.
pub fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or_default().trim()
}

/// The valid parent in `value`, cut to version 00's fields.
fn parent(value: &str) -> Option<&str> {
    let bytes = value.as_bytes();
    if bytes.len() < PARENT_LEN || !value.is_ascii() {
        return None;
    }
    let version = &value[0..2];
    let fields_ok = hex_lower(version)
        && version != "ff"
        && bytes[2] == b'-'
        && hex_id(&value[3..35], 32)
        && bytes[35] == b'-'
        && hex_id(&value[36..52], 16)
        && bytes[52] == b'-'
        && hex_lower(&value[53..55]);
    // Version 00 is exactly these fields; a later one may add more after a dash.
    let length_ok = if version == "00" {
        bytes.len() == PARENT_LEN
    } else {
        bytes.len() == PARENT_LEN || bytes[PARENT_LEN] == b'-'
    };
    (fields_ok && length_ok).then(|| &value[..PARENT_LEN])
}

/// `len` lowercase hex digits, not all zero.
fn hex_id(text: &str, len: usize) -> bool {
    text.len() == len && hex_lower(text) && text.bytes().any(|b| b != b'0')
}

fn hex_lower(text: &str) -> bool {
    text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `state` is a `tracestate` to keep: at most [`MAX_TRACESTATE`] characters, 1 to 32
/// `key=value` members of printable ASCII (empty members between commas allowed).
fn state_ok(state: &str) -> bool {
    if state.is_empty() || state.len() > MAX_TRACESTATE {
        return false;
    }
    let mut members = 0;
    for member in state.split(',').map(|m| m.trim_matches([' ', '\t'])) {
        if member.is_empty() {
            continue;
        }
        members += 1;
        let Some((key, value)) = member.split_once('=') else {
            return false;
        };
        let key_ok = !key.is_empty()
            && key.len() <= 256
            && key
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/' | b'@'));
        let value_ok = !value.is_empty()
            && value.len() <= 256
            && value
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
            && !value.ends_with(' ');
        if !key_ok || !value_ok {
            return false;
        }
    }
    (1..=MAX_MEMBERS).contains(&members)
}

/// The `name=value` parameters after a media type, in order, names as written, quoted values
/// unquoted (RFC 9110 §5.6.6, §5.6.4).
pub fn parameters(content_type: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some((_, mut rest)) = content_type.split_once(';') else {
        return out;
    };
    loop {
        rest = rest.trim_start_matches([' ', '\t', ';']);
        let Some((name, after)) = rest.split_once('=') else {
            return out;
        };
        let name = name.trim().to_owned();
        let (value, left) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    _ => value.push(c),
                }
            }
            // An unterminated quote: the parameters end here.
            let Some(end) = end else {
                return out;
            };
            (value, &quoted[end..])
        } else {
            let end = after.find(';').unwrap_or(after.len());
            (after[..end].trim().to_owned(), &after[end..])
        };
        out.push((name, value));
        rest = left;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
