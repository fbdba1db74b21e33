//! Structs from JSON objects only.
//!
//! serde's derived `Deserialize` for a struct also takes a sequence and binds its fields by
//! position, so `["t-1"]` would read as `{"id": "t-1"}` and `"configuration": []` as an empty
//! configuration. A2A's JSON has no positional forms, so [`Objects`] wraps a deserializer and
//! refuses a sequence wherever a struct is asked for, at any depth; everything else is
//! forwarded unchanged (the inner deserializer's errors keep their positions).

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};

/// A deserializer that reads structs from objects only (module docs).
pub(crate) struct Objects<D>(pub(crate) D);

macro_rules! forward_deserialize {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(Wrap(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Objects<D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_struct(name, fields, Struct(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// A visitor whose nested values are read through [`Objects`] too.
struct Wrap<V>(V);

/// A struct's visitor: an object is read as [`Wrap`] reads it, a sequence is refused.
struct Struct<V>(V);

macro_rules! forward_visit {
    ($($method:ident: $ty:ty)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.0.$method(v)
        }
    )*};
}

macro_rules! visitor {
    ($name:ident, |$this:ident, $seq:ident| $visit_seq:expr) => {
        impl<'de, V: Visitor<'de>> Visitor<'de> for $name<V> {
            type Value = V::Value;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.expecting(f)
            }

            forward_visit! {
                visit_bool: bool visit_i8: i8 visit_i16: i16 visit_i32: i32 visit_i64: i64
                visit_i128: i128 visit_u8: u8 visit_u16: u16 visit_u32: u32 visit_u64: u64
                visit_u128: u128 visit_f32: f32 visit_f64: f64 visit_char: char
                visit_str: &str visit_borrowed_str: &'de str visit_string: String
                visit_bytes: &[u8] visit_borrowed_bytes: &'de [u8] visit_byte_buf: Vec<u8>
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                self.0.visit_none()
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                self.0.visit_unit()
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                self.0.visit_some(Objects(d))
            }

            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                self.0.visit_newtype_struct(Objects(d))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, $seq: A) -> Result<Self::Value, A::Error> {
                let $this = self;
                $visit_seq
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                self.0.visit_map(Objects(map))
            }

            fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
                self.0.visit_enum(Objects(data))
            }
        }
    };
}

visitor!(Wrap, |this, seq| this.0.visit_seq(Objects(seq)));
visitor!(Struct, |this, seq| {
    drop(seq);
    Err(de::Error::invalid_type(Unexpected::Seq, &this.0))
});

/// A seed whose value is read through [`Objects`].
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(Objects(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Objects<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Objects<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Objects<A> {
    type Error = A::Error;
    type Variant = Objects<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), Self::Error> {
        let (value, variant) = self.0.variant_seed(Seed(seed))?;
        Ok((value, Objects(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Objects<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.struct_variant(fields, Struct(visitor))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        id: String,
        #[serde(default)]
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
        #[serde(default)]
        pair: Option<(u8, u8)>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        #[serde(default)]
        flag: bool,
    }

    fn read(text: &str) -> Result<Outer, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = Outer::deserialize(Objects(&mut de))?;
        de.end()?;
        Ok(value)
    }

    #[test]
    fn objects_are_read_as_serde_reads_them() {
        let text = r#"{"id":"a","inner":{"flag":true},"list":[{},{"flag":true}],"pair":[1,2]}"#;
        assert_eq!(read(text).unwrap(), serde_json::from_str(text).unwrap());
        let value = json!({"id": "a", "list": [{"flag": false}]});
        assert_eq!(
            Outer::deserialize(Objects(&value)).unwrap(),
            serde_json::from_value(value.clone()).unwrap()
        );
    }

    #[test]
    fn sequences_are_refused_where_a_struct_is_asked_for_at_any_depth() {
        // serde alone binds each of these by position.
        for text in [
            r#"["a"]"#,
            r#"{"id":"a","inner":[true]}"#,
            r#"{"id":"a","inner":[]}"#,
            r#"{"id":"a","list":[{"flag":true},[false]]}"#,
        ] {
            assert!(serde_json::from_str::<Outer>(text).is_ok(), "{text}");
            let err = read(text).unwrap_err();
            assert!(err.to_string().contains("invalid type: sequence"), "{err}");
            assert!(err.line() > 0, "the position is kept: {err}");
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert!(Outer::deserialize(Objects(&value)).is_err(), "{text}");
        }
    }
}
