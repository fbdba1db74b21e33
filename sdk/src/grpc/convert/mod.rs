//! Between the generated proto messages ([`super::proto`]) and `agentlog-wire`'s A2A types:
//! the one place the two meet. Every message and enum the service's RPCs carry goes both
//! ways: wire to proto infallibly (`From`), proto to wire checked (`TryFrom`, an
//! [`ErrorKind::InvalidParams`] naming what is wrong: a request the client got wrong).
//!
//! The proto has no "absent" for its plain strings and scalars: an empty string is an absent
//! optional string (and back), `false` an absent optional flag where the wire type has one.
//! JSON values go through `google.protobuf.Value`, whose numbers are doubles: an integral
//! number within ±2^53 comes back an integer, as ProtoJSON writes it. Timestamps are the
//! wire's ISO 8601 text at millisecond precision (`wire::timestamp`); a text that is not one
//! cannot be carried and is left out.

mod card;
mod requests;
mod task;
#[cfg(test)]
mod tests;

use agentlog_wire::timestamp::{format_millis, parse_millis};
use prost_types::value::Kind;
use serde_json::{Map, Number, Value};

use crate::error::{Error, ErrorKind, Result};

/// A request the client got wrong: `what` is the proto's name for the field or message.
fn invalid(what: &str, why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!("Invalid parameters: {what}: {why}"),
    )
    .with_detail("field", what.to_owned())
}

/// A required message field, present.
fn required<T>(what: &str, value: Option<T>) -> Result<T> {
    value.ok_or_else(|| invalid(what, "required"))
}

/// An optional string as the proto carries it ("" when absent).
fn text(value: Option<String>) -> String {
    value.unwrap_or_default()
}

/// A proto string as an optional one (absent when empty).
fn optional(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

/// A JSON object as a `google.protobuf.Struct`.
fn to_struct(map: Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: map.into_iter().map(|(k, v)| (k, to_value(v))).collect(),
    }
}

fn to_value(value: Value) -> prost_types::Value {
    let kind = match value {
        Value::Null => Kind::NullValue(prost_types::NullValue::NullValue.into()),
        Value::Bool(b) => Kind::BoolValue(b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.into_iter().map(to_value).collect(),
        }),
        Value::Object(map) => Kind::StructValue(to_struct(map)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// A `google.protobuf.Struct` as a JSON object.
fn from_struct(what: &str, value: prost_types::Struct) -> Result<Map<String, Value>> {
    value
        .fields
        .into_iter()
        .map(|(k, v)| Ok((k, from_value(what, v)?)))
        .collect()
}

fn from_value(what: &str, value: prost_types::Value) -> Result<Value> {
    Ok(match value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::NumberValue(n)) => {
            number(n).ok_or_else(|| invalid(what, "a number that is not finite"))?
        }
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::ListValue(list)) => Value::Array(
            list.values
                .into_iter()
                .map(|v| from_value(what, v))
                .collect::<Result<_>>()?,
        ),
        Some(Kind::StructValue(s)) => Value::Object(from_struct(what, s)?),
    })
}

/// Doubles that hold an integer exactly come back integers (as ProtoJSON writes them).
fn number(n: f64) -> Option<Value> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() == 0.0 && n.abs() <= EXACT {
        // In range and integral: the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let integer = n as i64;
        return Some(Value::Number(Number::from(integer)));
    }
    Number::from_f64(n).map(Value::Number)
}

fn metadata_to(map: Option<Map<String, Value>>) -> Option<prost_types::Struct> {
    map.map(to_struct)
}

fn metadata_from(
    what: &str,
    value: Option<prost_types::Struct>,
) -> Result<Option<Map<String, Value>>> {
    value.map(|s| from_struct(what, s)).transpose()
}

/// An ISO 8601 timestamp as a `google.protobuf.Timestamp` (`None` if it is not one).
fn to_timestamp(text: &str) -> Option<prost_types::Timestamp> {
    let ms = parse_millis(text)?;
    Some(prost_types::Timestamp {
        seconds: i64::try_from(ms / 1000).ok()?,
        // Below a billion: fits.
        nanos: i32::try_from((ms % 1000) * 1_000_000).ok()?,
    })
}

/// A `google.protobuf.Timestamp` as ISO 8601 text, to the millisecond.
fn from_timestamp(what: &str, ts: prost_types::Timestamp) -> Result<String> {
    let seconds = u64::try_from(ts.seconds).map_err(|_| invalid(what, "a time before 1970"))?;
    let millis =
        u64::try_from(ts.nanos / 1_000_000).map_err(|_| invalid(what, "negative nanos"))?;
    Ok(format_millis(
        seconds.saturating_mul(1000).saturating_add(millis),
    ))
}
