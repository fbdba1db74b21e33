//! API keys in a header: the example of a host's own [`Authenticator`].

use std::collections::HashMap;

use agentlog_wire::a2a::SecurityScheme;
use axum::http::{HeaderMap, HeaderName};
use sha2::{Digest as _, Sha256};

use super::{Authenticator, Identity, Refusal};

/// API keys sent in a header (default `X-API-Key`). Only the keys' SHA-256 digests are kept,
/// so neither a memory dump nor a `Debug` print shows a key.
#[derive(Debug, Clone)]
pub struct ApiKeys {
    header: HeaderName,
    by_digest: HashMap<[u8; 32], Identity>,
}

impl ApiKeys {
    /// No keys yet, read from `header`.
    pub fn new(header: HeaderName) -> Self {
        Self {
            header,
            by_digest: HashMap::new(),
        }
    }

    /// The same with `key` standing for `identity`.
    pub fn with_key(mut self, key: &str, identity: Identity) -> Self {
        self.by_digest.insert(digest(key), identity);
        self
    }
}

impl Default for ApiKeys {
    fn default() -> Self {
        Self::new(HeaderName::from_static("x-api-key"))
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

#[async_trait::async_trait]
impl Authenticator for ApiKeys {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Identity, Refusal> {
        let mut values = headers.get_all(&self.header).iter();
        let Some(value) = values.next() else {
            return Err(Refusal::Missing);
        };
        if values.next().is_some() {
            return Err(Refusal::Malformed(format!(
                "more than one {} header",
                self.header
            )));
        }
        // Looked up by digest: comparing digests leaks nothing about the keys themselves.
        self.by_digest
            .get(&digest(&String::from_utf8_lossy(value.as_bytes())))
            .cloned()
            .ok_or_else(|| Refusal::Invalid("the API key is not known here".to_owned()))
    }

    fn security_scheme(&self) -> (String, SecurityScheme) {
        (
            "apiKey".to_owned(),
            SecurityScheme::ApiKeySecurityScheme {
                description: None,
                location: "header".to_owned(),
                name: self.header.as_str().to_owned(),
            },
        )
    }

    fn challenge_scheme(&self) -> &'static str {
        "ApiKey"
    }
}
