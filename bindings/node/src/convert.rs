//! JS values to the SDK's types and back, through `serde_json::Value`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

use crate::error::invalid;

/// The largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// A value as JS means it: napi turns a JS number into an integer only up to 32 bits and into
/// a float beyond, but JS has one number type, so `1700000000000` is an integer (a
/// timestamp), not `1700000000000.0`. Integral numbers within the safe range become integers.
pub fn from_js(mut value: Value) -> Value {
    integers(&mut value);
    value
}

fn integers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() <= MAX_SAFE
            {
                // In range and integral: the casts are exact.
                *n = if f < 0.0 {
                    Number::from(f as i64)
                } else {
                    Number::from(f as u64)
                };
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integers),
        Value::Object(map) => map.values_mut().for_each(integers),
        _ => {}
    }
}

/// `value` (from JS) as a `T`, or `invalid_params` naming `what` and serde's reason.
pub fn parse<T: DeserializeOwned>(what: &str, value: Value) -> napi::Result<T> {
    serde_json::from_value(from_js(value)).map_err(|e| invalid(format!("invalid {what}: {e}")))
}

/// `value` as a plain JS value.
pub fn to_js<T: Serialize>(value: &T) -> napi::Result<Value> {
    serde_json::to_value(value).map_err(|e| invalid(format!("cannot convert: {e}")))
}
