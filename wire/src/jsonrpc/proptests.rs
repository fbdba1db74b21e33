//! Property tests of [`parse_request`]: it faces every request body the router is sent.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use serde_json::{Map, Value};
use strum::IntoEnumIterator;

use super::*;

/// Bounded so the properties run in the ordinary test pass; no regression files are written
/// into the repository.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Bodies that look like JSON often enough to reach past the syntax check.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        r#"[{}\[\]":,0-9a-z\\ .\-+eE]{0,48}"#.prop_map(String::into_bytes),
        // A valid envelope's prefix followed by noise.
        (r#"[{}\[\]":,0-9a-z\\ ]{0,24}"#).prop_map(|tail| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask"{tail}"#).into_bytes()
        }),
    ]
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        Just(Value::String("2.0".into())),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(any::<String>(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An envelope-shaped object: each of the four members absent, well-formed most of the time
/// or any JSON value, plus members the envelope skips.
fn envelope_value() -> impl Strategy<Value = Value> {
    let member = |good: BoxedStrategy<Value>| {
        prop_oneof![
            1 => Just(None),
            1 => Just(Some(Value::Null)),
            4 => good.prop_map(Some),
            2 => json_value().prop_map(Some),
        ]
    };
    let id = prop_oneof![
        any::<String>().prop_map(Value::String),
        any::<i64>().prop_map(Value::from),
        Just(Value::Null),
    ];
    let params = proptest::collection::vec(json_value(), 0..3).prop_flat_map(|list| {
        prop_oneof![
            Just(Value::Array(list.clone())),
            Just(serde_json::json!({ "p": list }))
        ]
    });
    (
        member(Just(Value::String("2.0".into())).boxed()),
        member(id.boxed()),
        member(method_name().prop_map(Value::String).boxed()),
        member(params.boxed()),
        proptest::collection::btree_map("[a-z]{1,6}", json_value(), 0..3),
    )
        .prop_map(|(jsonrpc, id, method, params, extra)| {
            let mut object: Map<String, Value> = extra.into_iter().collect();
            for (name, value) in [
                ("jsonrpc", jsonrpc),
                ("id", id),
                ("method", method),
                ("params", params),
            ] {
                match value {
                    Some(value) => object.insert(name.to_owned(), value),
                    None => object.remove(name),
                };
            }
            Value::Object(object)
        })
}

/// A JSON-RPC id as raw text: a string, a number in any of JSON's spellings, or null.
fn id_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
        "-?(0|[1-9][0-9]{0,25})(\\.[0-9]{1,10})?([eE][+-]?[0-9]{1,3})?",
        Just("null".to_owned()),
    ]
}

/// A method name: any string, and names that need escapes.
fn method_name() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[/\"\\\\Tté\u{1F600}\u{0}-\u{1F}a-z]{0,12}",
        proptest::sample::select(Method::iter().map(Method::as_str).collect::<Vec<_>>())
            .prop_map(str::to_owned),
    ]
}

/// A params object as raw text.
fn params_text() -> impl Strategy<Value = String> {
    proptest::collection::btree_map(any::<String>(), json_value(), 0..3)
        .prop_map(|m| serde_json::to_string(&m).unwrap())
}

/// `s` as a JSON string, each character spelled raw (when JSON allows it), as `\/` (a slash)
/// or as `\uXXXX` (a surrogate pair beyond the BMP) in either case, as `spellings` picks.
fn escaped(s: &str, spellings: &[u8]) -> String {
    let mut out = String::from("\"");
    for (c, spelling) in s.chars().zip(spellings.iter().cycle()) {
        let must_escape = matches!(c, '"' | '\\' | '\u{0}'..='\u{1f}');
        match spelling % 4 {
            0 if !must_escape => out.push(c),
            1 if c == '/' => out.push_str("\\/"),
            2 => {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
            _ => {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// The code the parser must give an envelope-shaped object, and the id it must answer with,
/// derived from the rules in [`parse_request`]'s documentation. `Ok` carries the method.
fn expected(object: &Map<String, Value>) -> Result<String, (i32, String)> {
    let invalid = -32600;
    let id = match object.get("id") {
        None => "null".to_owned(),
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => {
            serde_json::to_string(id).unwrap()
        }
        Some(_) => return Err((invalid, "null".to_owned())),
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err((invalid, id));
    }
    let Some(Value::String(method)) = object.get("method") else {
        return Err((invalid, id));
    };
    if let Some(params) = object.get("params")
        && !matches!(params, Value::Object(_) | Value::Array(_))
    {
        return Err((invalid, id));
    }
    Ok(method.clone())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_body_is_a_request_or_a_parse_or_invalid_request_error(body in jsonish()) {
        match parse_request(&body) {
            Ok(request) => {
                prop_assert!(is_valid_id(request.id), "{}", request.id.get());
                if let Some(params) = request.params {
                    let first = params.get().as_bytes().first().copied();
                    prop_assert!(matches!(first, Some(b'{' | b'[')), "{}", params.get());
                }
            }
            Err(bad) => {
                let code = bad.error.code.code();
                prop_assert!(code == -32700 || code == -32600, "{code}");
                prop_assert!(is_valid_id(&bad.id));
                if std::str::from_utf8(&body).is_err()
                    || serde_json::from_slice::<IgnoredAny>(&body).is_err()
                {
                    prop_assert_eq!(code, -32700);
                } else {
                    prop_assert_eq!(code, -32600);
                }
            }
        }
    }

    #[test]
    fn an_envelope_shaped_object_gets_the_documented_answer(value in envelope_value()) {
        let body = serde_json::to_vec(&value).unwrap();
        let Value::Object(object) = &value else {
            unreachable!("the strategy builds objects");
        };
        match (parse_request(&body), expected(object)) {
            (Ok(request), Ok(method)) => {
                prop_assert_eq!(request.method, method);
                let id = object.get("id").map_or("null".to_owned(), |id| id.to_string());
                prop_assert_eq!(request.id.get(), id);
            }
            (Err(bad), Err((code, id))) => {
                prop_assert_eq!(bad.error.code.code(), code);
                prop_assert_eq!(bad.id.get(), id);
            }
            (got, want) => {
                let got = got.map(|r| r.method.into_owned()).map_err(|e| e.error.code.code());
                prop_assert!(false, "{value}: got {got:?}, want {want:?}");
            }
        }
    }

    #[test]
    fn a_valid_request_echoes_its_id_and_reads_its_method(
        id in id_text(),
        method in method_name(),
        params in params_text(),
        spellings in proptest::collection::vec(any::<u8>(), 1..8),
        order in proptest::sample::select(vec![[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]]),
        space in "[ \t\r\n]{0,2}",
    ) {
        let members = [
            format!(r#""jsonrpc"{space}:{space}"2.0""#),
            format!(r#""id"{space}:{space}{id}"#),
            format!(r#""method"{space}:{space}{}"#, escaped(&method, &spellings)),
            format!(r#""params"{space}:{space}{params}"#),
        ];
        let body = order.map(|i| members[i].as_str()).join(&format!("{space},{space}"));
        let body = format!("{space}{{{space}{body}{space}}}{space}");
        let request = parse_request(body.as_bytes()).unwrap();
        prop_assert_eq!(request.id.get(), id.as_str());
        prop_assert_eq!(&*request.method, method.as_str());
        prop_assert_eq!(request.params.map(RawValue::get), Some(params.as_str()));
        match method.parse::<Method>() {
            Ok(known) => prop_assert_eq!(request.method().unwrap(), known),
            Err(_) => {
                prop_assert_eq!(request.method().unwrap_err().code, ErrorCode::MethodNotFound)
            }
        }
    }

    #[test]
    fn a_method_name_reads_the_same_however_it_is_escaped(
        method in proptest::sample::select(Method::iter().collect::<Vec<_>>()),
        spellings in proptest::collection::vec(any::<u8>(), 1..8),
    ) {
        let sent = escaped(method.as_str(), &spellings);
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":{sent}}}"#);
        let request = parse_request(body.as_bytes()).unwrap();
        prop_assert_eq!(&*request.method, method.as_str());
        prop_assert_eq!(request.method().unwrap(), method);
    }
}
