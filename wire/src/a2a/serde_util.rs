//! Small serde helpers shared by the A2A types.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// `skip_serializing_if` for proto bools: omitted when `false`.
pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

/// `deserialize_with` for a JSON-valued field whose presence matters: `null` is `Some(Null)`.
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// `deserialize_with` for an optional `int32`: a JSON number, or a decimal string as ProtoJSON allows.
pub(crate) fn opt_i32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i32>, D::Error> {
    deserializer.deserialize_option(OptI32)
}

/// Visitor behind [`opt_i32`].
struct OptI32;

impl<'de> Visitor<'de> for OptI32 {
    type Value = Option<i32>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a 32-bit integer")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        i32::try_from(v)
            .map(Some)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        i32::try_from(v)
            .map(Some)
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // ProtoJSON writers may emit `10.0` for an int32; accept exact integers only.
        if v.fract() == 0.0 && v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX) {
            #[allow(clippy::cast_possible_truncation)]
            Ok(Some(v as i32))
        } else {
            Err(E::invalid_value(de::Unexpected::Float(v), &self))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        v.trim()
            .parse()
            .map(Some)
            .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
    }
}

/// Reads a `T` through its reading shape `R` and checks it with `T::try_from`.
///
/// Unlike `#[serde(try_from)]`, the check runs inside the object's own `visit_map`, so a
/// positioned reader (serde_json) reports the error at this object, not at its container — and
/// [`crate::a2a::from_json`] can name the element (`parts[1]`) instead of only the array.
pub(crate) fn via_repr<'de, D, R, T>(
    deserializer: D,
    expecting: &'static str,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    R: Deserialize<'de>,
    T: TryFrom<R>,
    T::Error: fmt::Display,
{
    deserializer.deserialize_map(ReprVisitor {
        expecting,
        marker: PhantomData::<fn() -> (R, T)>,
    })
}

/// Visitor behind [`via_repr`].
struct ReprVisitor<M> {
    expecting: &'static str,
    marker: PhantomData<M>,
}

impl<'de, R, T> Visitor<'de> for ReprVisitor<fn() -> (R, T)>
where
    R: Deserialize<'de>,
    T: TryFrom<R>,
    T::Error: fmt::Display,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        let repr = R::deserialize(MapAccessDeserializer::new(map))?;
        T::try_from(repr).map_err(de::Error::custom)
    }
}
