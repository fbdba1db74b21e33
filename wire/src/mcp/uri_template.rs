//! URI templates as MCP resource templates use them (RFC 6570, level 1: `{name}` expands to
//! the value percent-encoded), matched back against a URI to recover the values.

/// A parsed URI template: literal text and `{name}` variables, never two variables side by
/// side (the match between them would be ambiguous).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Variable(String),
}

/// Characters a matched value stops at: they delimit the path, the query and the fragment.
const DELIMITERS: [char; 3] = ['/', '?', '#'];

impl UriTemplate {
    /// Parse `text`. Variables are level 1 (`{name}`, the name of `A-Za-z0-9_.`); an
    /// operator (`{+x}`, `{?x}`, ...), an unclosed brace, an empty name or two variables
    /// side by side are refused with what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    pieces.push(Piece::Literal(rest.to_owned()));
                    break;
                }
                Some(at) if rest[at..].starts_with('}') => {
                    return Err(format!("{text:?}: a '}}' closes no variable"));
                }
                Some(at) => {
                    if at > 0 {
                        pieces.push(Piece::Literal(rest[..at].to_owned()));
                    }
                    let after = &rest[at + 1..];
                    let end = after
                        .find('}')
                        .ok_or_else(|| format!("{text:?}: a '{{' is never closed"))?;
                    let name = &after[..end];
                    if name.is_empty()
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    {
                        return Err(format!(
                            "{text:?}: {{{name}}} is not a variable of A-Za-z0-9_. (operators are not served)"
                        ));
                    }
                    if matches!(pieces.last(), Some(Piece::Variable(_))) {
                        return Err(format!(
                            "{text:?}: two variables side by side cannot be told apart"
                        ));
                    }
                    pieces.push(Piece::Variable(name.to_owned()));
                    rest = &after[end + 1..];
                }
            }
        }
        Ok(Self {
            text: text.to_owned(),
            pieces,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The variables' names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Variable(name) => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }

    /// The URI for `value` of each variable (a missing one expands to nothing), each value
    /// percent-encoded but for RFC 3986's unreserved characters.
    pub fn expand<'a>(&self, value: impl Fn(&str) -> Option<&'a str>) -> String {
        let mut out = String::with_capacity(self.text.len());
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => out.push_str(text),
                Piece::Variable(name) => out.push_str(&encode(value(name).unwrap_or_default())),
            }
        }
        out
    }

    /// The variables' values if `uri` is an expansion of this template: each at least one
    /// character, none across a `/`, `?` or `#`, percent-decoded (a value that does not decode
    /// to UTF-8 is no match).
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut found = Vec::new();
        match_from(&self.pieces, uri, &mut found).then_some(found)
    }
}

fn match_from(pieces: &[Piece], uri: &str, found: &mut Vec<(String, String)>) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return uri.is_empty();
    };
    match first {
        Piece::Literal(text) => uri
            .strip_prefix(text.as_str())
            .is_some_and(|after| match_from(rest, after, found)),
        Piece::Variable(name) => {
            let limit = uri.find(DELIMITERS).unwrap_or(uri.len());
            // The shortest value that lets the rest match: a literal after the variable
            // ends it at its first occurrence.
            let ends = uri[..limit].char_indices().skip(1).map(|(at, _)| at);
            for end in ends.chain([limit]).filter(|&end| end > 0) {
                let Some(value) = decode(&uri[..end]) else {
                    continue;
                };
                found.push((name.clone(), value));
                if match_from(rest, &uri[end..], found) {
                    return true;
                }
                found.pop();
            }
            false
        }
    }
}

/// `value` percent-encoded but for RFC 3986's unreserved characters (`A-Za-z0-9-._~`).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `value` percent-decoded; `None` when a `%` is not followed by two hex digits or the bytes
/// are not UTF-8.
pub fn decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_template_expands_and_matches_back() {
        let t = UriTemplate::parse("agentlog://tasks/{taskId}/artifacts/{artifactId}").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["taskId", "artifactId"]);
        let uri = t.expand(|name| match name {
            "taskId" => Some("mcp.demo:ab12"),
            _ => Some("a b/ü"),
        });
        assert_eq!(
            uri,
            "agentlog://tasks/mcp.demo%3Aab12/artifacts/a%20b%2F%C3%BC"
        );
        assert_eq!(
            t.matches(&uri).unwrap(),
            values(&[("taskId", "mcp.demo:ab12"), ("artifactId", "a b/ü")])
        );
        // Raw characters a client did not encode match too; a '/' never is part of a value.
        assert_eq!(
            t.matches("agentlog://tasks/mcp.demo:ab12/artifacts/echo")
                .unwrap(),
            values(&[("taskId", "mcp.demo:ab12"), ("artifactId", "echo")])
        );
        for miss in [
            "agentlog://tasks/x",
            "agentlog://tasks//artifacts/e",
            "agentlog://tasks/x/artifacts/",
            "agentlog://tasks/x/y/artifacts/e",
            "agentlog://tasks/x/artifacts/e?q",
            "agentlog://tasks/%FF/artifacts/e",
            "agentlog://tasks/%4/artifacts/e",
        ] {
            assert_eq!(t.matches(miss), None, "{miss}");
        }
        let data = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(
            data.matches("test://template/123/data").unwrap(),
            values(&[("id", "123")])
        );
        let dashed = UriTemplate::parse("x://{a}-{b}").unwrap();
        assert_eq!(
            dashed.matches("x://1-2-3").unwrap(),
            values(&[("a", "1"), ("b", "2-3")])
        );
        let plain = UriTemplate::parse("docs://readme").unwrap();
        assert_eq!(plain.matches("docs://readme").unwrap(), values(&[]));
        assert_eq!(plain.variables().count(), 0);
    }

    #[test]
    fn bad_templates_are_refused() {
        for bad in [
            "x://{",
            "x://}",
            "x://{}",
            "x://{+path}",
            "x://{a}{b}",
            "x://{a b}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percent_encoding_round_trips() {
        for text in ["", "plain-._~", "a:b/c d", "ünï%"] {
            assert_eq!(decode(&encode(text)).unwrap(), text);
        }
        assert_eq!(decode("%zz"), None);
    }
}
