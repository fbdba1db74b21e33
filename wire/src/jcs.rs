//! RFC 8785 JSON Canonicalization Scheme (JCS): the one byte form of a JSON value, the
//! payload a signed agent card's signatures cover.
//!
//! - Object members are sorted by their names' UTF-16 code units (not by UTF-8 bytes or code
//!   points: the two disagree for names with characters above U+FFFF).
//! - No whitespace.
//! - Strings escape `"`, `\` and the C0 controls only (`\b \t \n \f \r` short, the rest
//!   `\u00xx` lowercase); everything else, U+007F and non-ASCII included, is literal UTF-8.
//! - Every number is an IEEE 754 double written the way ECMAScript's `Number.prototype.toString`
//!   writes it (`1.0` → `1`, `1e21` → `1e+21`, `0.0000001` → `1e-7`, `-0` → `0`). An integer
//!   beyond ±2^53 is rounded to the nearest double first, as JavaScript's `JSON.parse` does:
//!   what both official A2A SDKs sign, since a card's numbers pass through a protobuf
//!   `Struct`, whose numbers are doubles.
//! - Nesting deeper than [`MAX_DEPTH`] is refused, as the Python SDK refuses it.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use crate::WireError;

/// The deepest nesting of arrays and objects accepted, the outermost container at depth 1
/// (the bound of the Python SDK's canonicalizer; serde_json's parser has the same).
pub const MAX_DEPTH: usize = 128;

/// The canonical form of `value`. Fails only on nesting deeper than [`MAX_DEPTH`].
pub fn canonicalize(value: &Value) -> Result<String, WireError> {
    let mut out = String::new();
    write_value(value, &mut out, 1)?;
    Ok(out)
}

/// `a` and `b` in the order RFC 8785 §3.2.3 sorts member names: by UTF-16 code unit.
pub fn compare_names(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn too_deep() -> WireError {
    WireError::InvalidJson {
        what: "canonical JSON",
        reason: format!("nesting exceeds the maximum depth of {MAX_DEPTH}"),
    }
}

fn write_value(value: &Value, out: &mut String, depth: usize) -> Result<(), WireError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => out.push_str(&number_text(number)),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            if depth > MAX_DEPTH {
                return Err(too_deep());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(members) => {
            if depth > MAX_DEPTH {
                return Err(too_deep());
            }
            write_object(members, out, depth)?;
        }
    }
    Ok(())
}

fn write_object(
    members: &Map<String, Value>,
    out: &mut String,
    depth: usize,
) -> Result<(), WireError> {
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    sorted.sort_by(|(a, _), (b, _)| compare_names(a, b));
    out.push('{');
    for (i, (name, value)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(name, out);
        out.push(':');
        write_value(value, out, depth + 1)?;
    }
    out.push('}');
    Ok(())
}

/// A JSON string literal per RFC 8785 §3.2.2.2 (the escapes of ECMAScript's `JSON.stringify`
/// for well-formed text, which is all a Rust `str` can hold).
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The largest integer every double below it can hold exactly: 2^53.
const EXACT_INTEGERS: u64 = 1 << 53;

fn number_text(number: &Number) -> String {
    if let Some(n) = number.as_u64()
        && n <= EXACT_INTEGERS
    {
        return n.to_string();
    }
    if let Some(n) = number.as_i64()
        && n.unsigned_abs() <= EXACT_INTEGERS
    {
        return n.to_string();
    }
    // Without serde_json's `arbitrary_precision` (never enabled here) every number is an
    // i64, a u64 or a finite f64, so `as_f64` always answers; the rounding of a large
    // integer is the one the doc comment describes.
    es6_number(number.as_f64().unwrap_or_default())
}

/// `value` as ECMAScript's `Number.prototype.toString` writes it (ECMA-262 §7.1.12.1), for a
/// finite double (JSON has no NaN or infinity).
pub fn es6_number(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        // -0 is written "0"; a non-finite value cannot come from JSON.
        return "0".to_owned();
    }
    if value < 0.0 {
        return format!("-{}", es6_number(-value));
    }
    // Rust's `{:e}` writes the shortest digits that read back as the same double (as
    // ECMAScript picks them): `d[.ddd]e<exp>`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    // ECMA-262's k (digit count) and n (the decimal point's position after the first digit).
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let n = exponent + 1;
    if k <= n && n <= 21 {
        // An integer, written out with trailing zeros.
        format!(
            "{digits}{}",
            "0".repeat(usize::try_from(n - k).unwrap_or(0))
        )
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n).unwrap_or(0));
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat(usize::try_from(-n).unwrap_or(0)))
    } else {
        let sign = if n - 1 < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        format!("{first}{dot}{rest}e{sign}{}", (n - 1).abs())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jcs(value: &Value) -> String {
        canonicalize(value).unwrap()
    }

    #[test]
    fn members_sort_by_utf16_code_units_not_bytes() {
        // U+1F600 is the surrogate pair D83D DE00 in UTF-16, below U+FFFD; in UTF-8 (F0 ...)
        // and as a code point it sorts after it.
        let value = json!({"\u{fffd}": 1, "\u{1f600}": 2, "b": 3, "a": 4, "": 5, "aa": 6, "A": 7});
        assert_eq!(
            jcs(&value),
            "{\"\":5,\"A\":7,\"a\":4,\"aa\":6,\"b\":3,\"\u{1f600}\":2,\"\u{fffd}\":1}"
        );
        assert_eq!(compare_names("\u{1f600}", "\u{fffd}"), Ordering::Less);
        assert_eq!("\u{1f600}".cmp("\u{fffd}"), Ordering::Greater);
    }

    #[test]
    fn rfc8785_section_3_2_3_sorting_example() {
        // The RFC's own example: names "\u20ac", "\r", "\ufb33", "1", "\ud83d\ude00",
        // "\u0080", "\u00f6" sort as "\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00",
        // "\ufb33".
        let value: Value = serde_json::from_str(
            r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#,
        )
        .unwrap();
        assert_eq!(
            jcs(&value),
            concat!(
                "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",",
                "\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",",
                "\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
            )
        );
    }

    #[test]
    fn strings_escape_only_quote_backslash_and_c0() {
        let value = json!("q\"b\\ \u{8}\t\n\u{c}\r \u{0}\u{1f} \u{7f} é € \u{2028} / \u{1f600}");
        assert_eq!(
            jcs(&value),
            "\"q\\\"b\\\\ \\b\\t\\n\\f\\r \\u0000\\u001f \u{7f} é € \u{2028} / \u{1f600}\""
        );
    }

    #[test]
    fn numbers_are_written_as_ecmascript_writes_doubles() {
        for (input, expected) in [
            ("0", "0"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("1", "1"),
            ("1.0", "1"),
            ("-1.5", "-1.5"),
            ("100", "100"),
            ("1e2", "100"),
            ("0.1", "0.1"),
            ("1e-6", "0.000001"),
            ("1e-7", "1e-7"),
            ("1.5e-7", "1.5e-7"),
            ("123456789012345678901", "123456789012345680000"),
            ("1e20", "100000000000000000000"),
            ("1e21", "1e+21"),
            ("1.2345e25", "1.2345e+25"),
            ("9007199254740992", "9007199254740992"),
            ("9007199254740993", "9007199254740992"),
            ("-9007199254740993", "-9007199254740992"),
            ("18446744073709551615", "18446744073709552000"),
            ("5e-324", "5e-324"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("0.000001234", "0.000001234"),
            ("333333333.33333329", "333333333.3333333"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.000021", "0.000021"),
        ] {
            let value: Value = serde_json::from_str(input).unwrap();
            assert_eq!(jcs(&value), expected, "{input}");
        }
    }

    #[test]
    fn no_whitespace_and_arrays_keep_their_order() {
        let value: Value = serde_json::from_str(
            "{ \"b\" : [ 3 , 1 , { \"z\" : null , \"y\" : true } ] , \"a\" : false }",
        )
        .unwrap();
        assert_eq!(jcs(&value), r#"{"a":false,"b":[3,1,{"y":true,"z":null}]}"#);
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let mut deep = json!(1);
        for _ in 0..MAX_DEPTH {
            deep = json!([deep]);
        }
        assert!(canonicalize(&deep).is_ok());
        let deeper = json!({ "x": deep });
        let err = canonicalize(&deeper).unwrap_err();
        assert_eq!(err.kind(), "invalid_json");
    }
}
