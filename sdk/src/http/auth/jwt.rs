//! Bearer JWTs (`jsonwebtoken`): the shipped [`Authenticator`].

use std::path::PathBuf;
use std::time::Duration;

use agentlog_wire::a2a::SecurityScheme;
use axum::http::HeaderMap;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::key_set::KeySet;
use super::{Authenticator, Identity, Refusal, bearer_token};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};

/// The algorithms accepted unless configured otherwise; HS256 joins them when a shared
/// secret is given (and only then).
pub const DEFAULT_ALGORITHMS: [&str; 3] = ["EdDSA", "ES256", "RS256"];

/// The algorithms that may be allowed at all.
const ALLOWED: [(&str, Algorithm); 4] = [
    ("EdDSA", Algorithm::EdDSA),
    ("ES256", Algorithm::ES256),
    ("RS256", Algorithm::RS256),
    ("HS256", Algorithm::HS256),
];

/// How JWTs are checked: the `auth.jwt` section of the card file, or `serve --jwt-*` flags.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct JwtConfig {
    /// The issuers trusted (`iss`, exactly). At least one.
    pub issuers: Vec<String>,
    /// The audiences this agent answers to (`aud` must name one). At least one: a token
    /// for another service must not work here.
    #[serde(alias = "audience", deserialize_with = "one_or_many")]
    pub audiences: Vec<String>,
    /// The accepted algorithms, of EdDSA, ES256, RS256 and HS256. Default EdDSA, ES256,
    /// RS256, plus HS256 when `secret_file` is given; HS256 without a secret is refused.
    #[serde(default)]
    pub algorithms: Vec<String>,
    /// Public key files: PEM (Ed25519, EC P-256, RSA), a JWK or a JWKS.
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// A JWKS URL, fetched when first needed and again on an unknown `kid`.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// The least time between two JWKS fetches. Default 60 s.
    #[serde(default = "default_refetch", deserialize_with = "duration")]
    pub jwks_refetch_interval: Duration,
    /// A file holding the HS256 shared secret (its bytes, trailing newline dropped).
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// Clock skew allowed on `exp` and `nbf`. Default 60 s.
    #[serde(default = "default_leeway", deserialize_with = "duration")]
    pub leeway: Duration,
    /// The claim naming the caller's tenant; when set, tokens without it are refused.
    /// Default none: every caller is in the default tenant.
    #[serde(default)]
    pub tenant_claim: Option<String>,
}

setters!(JwtConfig {
    issuers: Vec<String>,
    audiences: Vec<String>,
    algorithms: Vec<String>,
    keys: Vec<PathBuf>,
    jwks_refetch_interval: Duration,
    leeway: Duration,
} optional {
    jwks_url: String,
    secret_file: PathBuf,
    tenant_claim: String,
});

fn default_refetch() -> Duration {
    Duration::from_secs(60)
}

fn default_leeway() -> Duration {
    Duration::from_secs(60)
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    crate::retention::parse_duration(&text).map_err(serde::de::Error::custom)
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

impl JwtConfig {
    /// A config for `issuer` and `audience` with the defaults; add keys.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuers: vec![issuer.into()],
            audiences: vec![audience.into()],
            algorithms: Vec::new(),
            keys: Vec::new(),
            jwks_url: None,
            jwks_refetch_interval: default_refetch(),
            secret_file: None,
            leeway: default_leeway(),
            tenant_claim: None,
        }
    }
}

/// Checks bearer JWTs. The principal is `<iss>#<sub>` (so two issuers' subjects never
/// meet), the tenant the configured claim, the scopes the `scope` claim (space-separated,
/// RFC 9068) or `scp` (a list or a string).
#[derive(Debug)]
pub struct JwtAuthenticator {
    keys: KeySet,
    algorithms: Vec<Algorithm>,
    names: Vec<&'static str>,
    issuers: Vec<String>,
    audiences: Vec<String>,
    leeway: Duration,
    tenant_claim: Option<String>,
}

impl JwtAuthenticator {
    /// Read the keys and check the configuration.
    pub fn new(config: &JwtConfig) -> Result<Self> {
        let bad = |why: String| Error::new(ErrorKind::Config, format!("JWT auth: {why}"));
        if config.issuers.is_empty() || config.issuers.iter().any(String::is_empty) {
            return Err(bad("name the trusted issuers (iss)".to_owned()));
        }
        if let Some(issuer) = config.issuers.iter().find(|i| i.contains('#')) {
            // `#` separates issuer and subject in principals.
            return Err(bad(format!("issuer {issuer:?} contains `#`")));
        }
        if config.audiences.is_empty() || config.audiences.iter().any(String::is_empty) {
            return Err(bad("name this agent's audience (aud)".to_owned()));
        }
        let secret = match &config.secret_file {
            None => None,
            Some(path) => {
                let bytes = std::fs::read(path)
                    .map_err(|e| bad(format!("reading {}: {e}", path.display())))?;
                let secret = bytes.trim_ascii_end().to_vec();
                if secret.len() < 32 {
                    return Err(bad(format!(
                        "the HS256 secret in {} is shorter than 32 bytes",
                        path.display()
                    )));
                }
                Some(secret)
            }
        };
        let wanted: Vec<&str> = if config.algorithms.is_empty() {
            let mut names = DEFAULT_ALGORITHMS.to_vec();
            if secret.is_some() {
                names.push("HS256");
            }
            names
        } else {
            config.algorithms.iter().map(String::as_str).collect()
        };
        let mut algorithms = Vec::new();
        let mut names = Vec::new();
        for name in wanted {
            let Some((name, algorithm)) = ALLOWED.iter().find(|(n, _)| *n == name) else {
                return Err(bad(format!(
                    "algorithm {name:?} is not one of EdDSA, ES256, RS256, HS256"
                )));
            };
            if *algorithm == Algorithm::HS256 && secret.is_none() {
                return Err(bad("HS256 needs a shared secret (secretFile)".to_owned()));
            }
            algorithms.push(*algorithm);
            names.push(*name);
        }
        let keys = KeySet::new(
            &config.keys,
            secret,
            config.jwks_url.as_deref(),
            config.jwks_refetch_interval,
        )?;
        Ok(Self {
            keys,
            algorithms,
            names,
            issuers: config.issuers.clone(),
            audiences: config.audiences.clone(),
            leeway: config.leeway,
            tenant_claim: config.tenant_claim.clone(),
        })
    }

    /// Check `token` and say who it is for.
    pub async fn verify(&self, token: &str) -> Result<Identity, Refusal> {
        let invalid = |why: &str| Refusal::Invalid(why.to_owned());
        let (algorithm, kid) = self.header_of(token)?;
        let candidates = self
            .keys
            .candidates(kid.as_deref(), algorithm.family())
            .await?;
        if candidates.is_empty() {
            return Err(invalid(
                "the token's key id (kid) names a key of another algorithm",
            ));
        }
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&self.issuers);
        validation.set_audience(&self.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway.as_secs();
        let mut last = invalid("the token's signature does not verify");
        for candidate in candidates {
            match jsonwebtoken::decode::<Map<String, Value>>(token, &candidate.key, &validation) {
                Ok(data) => return self.identity(data.claims),
                Err(error) => {
                    last = refusal_of(&error);
                    // Only a signature that does not verify may verify under another key.
                    if !matches!(
                        error.kind(),
                        jsonwebtoken::errors::ErrorKind::InvalidSignature
                    ) {
                        return Err(last);
                    }
                }
            }
        }
        Err(last)
    }

    /// The token's `alg` and `kid`, read before anything else so that `none` and every
    /// algorithm not allowed get a clear answer (and no key is ever tried with them).
    fn header_of(&self, token: &str) -> Result<(Algorithm, Option<String>), Refusal> {
        let malformed = || Refusal::Invalid("the token is not a JWS compact JWT".to_owned());
        let mut segments = token.split('.');
        let (Some(header), Some(_), Some(_), None) = (
            segments.next(),
            segments.next(),
            segments.next(),
            segments.next(),
        ) else {
            return Err(malformed());
        };
        let header = URL_SAFE_NO_PAD.decode(header).map_err(|_| malformed())?;
        let header: Map<String, Value> =
            serde_json::from_slice(&header).map_err(|_| malformed())?;
        let alg = header.get("alg").and_then(Value::as_str).unwrap_or("");
        let algorithm = ALLOWED
            .iter()
            .find(|(name, algorithm)| *name == alg && self.algorithms.contains(algorithm))
            .map(|(_, algorithm)| *algorithm)
            .ok_or_else(|| {
                Refusal::Invalid(format!(
                    "the token's algorithm {alg:?} is not accepted here (accepted: {})",
                    self.names.join(", ")
                ))
            })?;
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.clone()),
            Some(_) => {
                return Err(Refusal::Invalid(
                    "the token's kid is not a string".to_owned(),
                ));
            }
        };
        Ok((algorithm, kid))
    }

    fn identity(&self, claims: Map<String, Value>) -> Result<Identity, Refusal> {
        let text = |name: &str| claims.get(name).and_then(Value::as_str);
        let (Some(issuer), Some(subject)) = (text("iss"), text("sub")) else {
            return Err(Refusal::Invalid(
                "the token's iss and sub must be strings".to_owned(),
            ));
        };
        if subject.is_empty() {
            return Err(Refusal::Invalid("the token's sub is empty".to_owned()));
        }
        let tenant = match &self.tenant_claim {
            None => String::new(),
            Some(claim) => match text(claim) {
                Some(tenant) if !tenant.is_empty() => tenant.to_owned(),
                _ => {
                    return Err(Refusal::Invalid(format!(
                        "the token has no {claim:?} claim naming its tenant"
                    )));
                }
            },
        };
        let scopes = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(scope)), _) | (None, Some(Value::String(scope))) => {
                scope.split_whitespace().map(str::to_owned).collect()
            }
            (None, Some(Value::Array(list))) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Ok(Identity {
            caller: Caller::principal(format!("{issuer}#{subject}")).in_tenant(tenant),
            scopes,
        })
    }
}

/// What a client is told about a token `jsonwebtoken` refused.
fn refusal_of(error: &jsonwebtoken::errors::Error) -> Refusal {
    use jsonwebtoken::errors::ErrorKind as K;
    let why = match error.kind() {
        K::ExpiredSignature => "the token has expired (exp)".to_owned(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        K::InvalidAudience => "the token is not for this agent (aud)".to_owned(),
        K::InvalidIssuer => "the token's issuer is not trusted here (iss)".to_owned(),
        K::InvalidSignature => "the token's signature does not verify".to_owned(),
        K::MissingRequiredClaim(claim) => format!("the token has no {claim:?} claim"),
        K::InvalidClaimFormat(claim) => format!("the token's {claim:?} claim is malformed"),
        K::InvalidAlgorithm => "the token's algorithm does not match its key".to_owned(),
        _ => "the token is malformed".to_owned(),
    };
    Refusal::Invalid(why)
}

#[async_trait::async_trait]
impl Authenticator for JwtAuthenticator {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Identity, Refusal> {
        match bearer_token(headers)? {
            None => Err(Refusal::Missing),
            Some(token) => self.verify(token).await,
        }
    }

    fn security_scheme(&self) -> (String, SecurityScheme) {
        (
            "bearer".to_owned(),
            SecurityScheme::HttpAuthSecurityScheme {
                description: Some(format!(
                    "A JWT from {} for audience {}",
                    self.issuers.join(" or "),
                    self.audiences.join(" or ")
                )),
                scheme: "Bearer".to_owned(),
                bearer_format: Some("JWT".to_owned()),
            },
        )
    }

    fn authorization_servers(&self) -> Vec<String> {
        self.issuers.clone()
    }
}

#[cfg(test)]
mod proptests;
