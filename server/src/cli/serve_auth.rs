//! `agentlog serve`'s edge authentication: the `--jwt-*` flags, the card file's `auth` and
//! `extendedCard` sections, and the refusal to serve anonymous callers beyond loopback.
//!
//! The card file may hold, beside the card's own fields:
//!
//! ```json
//! "auth": {"jwt": {"issuers": ["https://idp.example"], "audiences": ["translator"],
//!                  "keys": ["idp.pem"], "jwksUrl": "https://idp.example/jwks.json",
//!                  "algorithms": ["EdDSA", "ES256"], "leeway": "60s", "tenantClaim": "org"},
//!          "scopes": {"send": "tasks:send", "read": "tasks:read", "cancel": "tasks:cancel"}},
//! "extendedCard": {"description": "what authenticated callers see", "skills": [...]}
//! ```
//!
//! Key and secret files are relative to the card file. A flag wins over the file's value.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use agentlog_wire::a2a::AgentCard;
use clap::Args;
use serde::Deserialize;

use super::{CliError, CliResult};
use agentlog::http::auth::{EdgeAuth, JwtAuthenticator, JwtConfig, MethodScopes};

/// The `--jwt-*` flags and `--allow-anonymous`.
#[derive(Debug, Clone, Default, Args)]
pub(super) struct AuthArgs {
    /// Require a bearer JWT from this issuer (`iss`) on every JSON-RPC request; repeat for
    /// several. Turns edge authentication on (with --jwt-audience and keys).
    #[arg(long, value_name = "ISS")]
    jwt_issuer: Vec<String>,

    /// The audience (`aud`) tokens must name; repeatable.
    #[arg(long, value_name = "AUD")]
    jwt_audience: Vec<String>,

    /// A public key tokens may be signed with: PEM (Ed25519, EC P-256, RSA), a JWK or a
    /// JWKS file; repeatable (key rotation).
    #[arg(long, value_name = "FILE")]
    jwt_key: Vec<PathBuf>,

    /// A JWKS URL of the issuer's keys: fetched when first needed, again on an unknown kid
    /// (at most once a minute).
    #[arg(long, value_name = "URL")]
    jwt_jwks_url: Option<String>,

    /// A file with an HS256 shared secret (32 bytes or more); allows HS256.
    #[arg(long, value_name = "FILE")]
    jwt_secret_file: Option<PathBuf>,

    /// The accepted algorithms, comma-separated, of EdDSA, ES256, RS256, HS256 (default
    /// EdDSA,ES256,RS256, plus HS256 with --jwt-secret-file).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    jwt_algorithms: Vec<String>,

    /// Clock skew allowed on exp and nbf (default 60s).
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    jwt_leeway: Option<std::time::Duration>,

    /// The claim naming the caller's tenant (tokens without it are refused).
    #[arg(long, value_name = "CLAIM")]
    jwt_tenant_claim: Option<String>,

    /// Serve without authentication on a non-loopback address: anyone who reaches the port
    /// may send, read and cancel every anonymous task.
    #[arg(long)]
    allow_anonymous: bool,
}

/// What a card file may hold beside the card.
#[derive(Debug, Default)]
pub(super) struct CardFileExtras {
    auth: Option<AuthSection>,
    /// Laid over the public card to make the extended card.
    pub(super) extended_card: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthSection {
    jwt: Option<JwtConfig>,
    #[serde(default)]
    scopes: MethodScopes,
}

/// Take the `auth` and `extendedCard` sections out of a card file's JSON object.
pub(super) fn take_extras(
    overlay: &mut serde_json::Map<String, serde_json::Value>,
    file: &Path,
) -> CliResult<CardFileExtras> {
    let bad = |why: String| CliError::msg(format!("bad --card {}: {why}", file.display()));
    let auth = match overlay.remove("auth") {
        None => None,
        Some(value) => {
            let mut section: AuthSection =
                serde_json::from_value(value).map_err(|e| bad(format!("auth: {e}")))?;
            let base = file.parent().unwrap_or(Path::new("."));
            if let Some(jwt) = &mut section.jwt {
                for key in &mut jwt.keys {
                    *key = base.join(&*key);
                }
                jwt.secret_file = jwt.secret_file.as_ref().map(|f| base.join(f));
            }
            Some(section)
        }
    };
    let extended_card = match overlay.remove("extendedCard") {
        None => None,
        Some(serde_json::Value::Object(fields)) => Some(fields),
        Some(_) => return Err(bad("extendedCard is not a JSON object".to_owned())),
    };
    Ok(CardFileExtras {
        auth,
        extended_card,
    })
}

/// The extended card: the public card with the file's `extendedCard` fields laid over it
/// (its interfaces and security stay the public card's).
pub(super) fn extended_card(
    public: &AgentCard,
    extras: &CardFileExtras,
) -> CliResult<Option<AgentCard>> {
    let Some(fields) = &extras.extended_card else {
        return Ok(None);
    };
    let bad = |why: String| CliError::msg(format!("bad extendedCard: {why}"));
    let mut merged = serde_json::to_value(public).map_err(|e| bad(e.to_string()))?;
    if let Some(object) = merged.as_object_mut() {
        object.extend(fields.clone());
    }
    let mut card: AgentCard =
        agentlog_wire::a2a::from_json("AgentCard", &merged).map_err(|e| bad(e.to_string()))?;
    card.supported_interfaces = public.supported_interfaces.clone();
    card.security_schemes = public.security_schemes.clone();
    card.security_requirements = public.security_requirements.clone();
    card.validate().map_err(|e| bad(e.to_string()))?;
    Ok(Some(card))
}

/// The edge authentication the flags and the card file ask for, if any.
pub(super) fn edge_auth(args: &AuthArgs, extras: &CardFileExtras) -> CliResult<Option<EdgeAuth>> {
    let section = extras.auth.clone();
    let from_flags = !args.jwt_issuer.is_empty()
        || !args.jwt_audience.is_empty()
        || !args.jwt_key.is_empty()
        || args.jwt_jwks_url.is_some()
        || args.jwt_secret_file.is_some();
    let file_jwt = section.as_ref().and_then(|s| s.jwt.clone());
    if !from_flags && file_jwt.is_none() {
        return Ok(None);
    }
    let mut jwt = file_jwt.unwrap_or_else(|| {
        JwtConfig::new("", "")
            .issuers(Vec::new())
            .audiences(Vec::new())
    });
    if !args.jwt_issuer.is_empty() {
        jwt.issuers = args.jwt_issuer.clone();
    }
    if !args.jwt_audience.is_empty() {
        jwt.audiences = args.jwt_audience.clone();
    }
    if !args.jwt_key.is_empty() {
        jwt.keys = args.jwt_key.clone();
    }
    if args.jwt_jwks_url.is_some() {
        jwt.jwks_url = args.jwt_jwks_url.clone();
    }
    if args.jwt_secret_file.is_some() {
        jwt.secret_file = args.jwt_secret_file.clone();
    }
    if !args.jwt_algorithms.is_empty() {
        jwt.algorithms = args.jwt_algorithms.clone();
    }
    if let Some(leeway) = args.jwt_leeway {
        jwt.leeway = leeway;
    }
    if args.jwt_tenant_claim.is_some() {
        jwt.tenant_claim = args.jwt_tenant_claim.clone();
    }
    let authenticator = JwtAuthenticator::new(&jwt)?;
    let scopes = section.map(|s| s.scopes).unwrap_or_default();
    Ok(Some(EdgeAuth::new(authenticator).with_scopes(scopes)))
}

/// Refuse to serve anonymous callers on an address beyond loopback, unless asked to.
pub(super) fn check_anonymous(
    args: &AuthArgs,
    auth: Option<&EdgeAuth>,
    listen: SocketAddr,
) -> CliResult {
    if auth.is_some() || args.allow_anonymous || listen.ip().is_loopback() {
        return Ok(());
    }
    Err(CliError::msg(format!(
        "refusing to serve anonymous callers on {listen}, beyond loopback: anyone who reaches \
         it could read and cancel every task. Configure authentication (--jwt-issuer, \
         --jwt-audience and --jwt-key or --jwt-jwks-url, or an `auth` section in --card), \
         or pass --allow-anonymous"
    )))
}

/// How the banner describes who may call.
pub(super) fn describe(auth: Option<&EdgeAuth>) -> &'static str {
    match auth {
        Some(_) => "callers authenticate with bearer JWTs",
        None => "no authentication: every caller is anonymous",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    fn auth_args(extra: &[&str]) -> AuthArgs {
        #[derive(Parser)]
        struct Probe {
            #[command(flatten)]
            auth: AuthArgs,
        }
        let mut argv = vec!["probe"];
        argv.extend_from_slice(extra);
        Probe::try_parse_from(argv).unwrap().auth
    }

    fn public_key(dir: &Path) -> PathBuf {
        let private = dir.join("issuer.key");
        agentlog::security::SigningKey::generate()
            .unwrap()
            .write_pair(&private)
            .unwrap()
    }

    #[test]
    fn no_flags_and_no_section_is_no_auth_and_refused_beyond_loopback() {
        let args = auth_args(&[]);
        let auth = edge_auth(&args, &CardFileExtras::default()).unwrap();
        assert!(auth.is_none());
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let error = check_anonymous(&args, None, public).unwrap_err();
        assert!(error.to_string().contains("--allow-anonymous"), "{error}");
        check_anonymous(&args, None, "127.0.0.1:8080".parse().unwrap()).unwrap();
        check_anonymous(&args, None, "[::1]:8080".parse().unwrap()).unwrap();
        check_anonymous(&auth_args(&["--allow-anonymous"]), None, public).unwrap();
    }

    #[test]
    fn flags_configure_jwt_auth_and_a_missing_part_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let key = public_key(dir.path());
        let key = key.to_str().unwrap();
        let args = auth_args(&[
            "--jwt-issuer",
            "https://i",
            "--jwt-audience",
            "a",
            "--jwt-key",
            key,
        ]);
        let auth = edge_auth(&args, &CardFileExtras::default())
            .unwrap()
            .unwrap();
        check_anonymous(&args, Some(&auth), "0.0.0.0:1".parse().unwrap()).unwrap();
        let error = edge_auth(
            &auth_args(&["--jwt-issuer", "https://i", "--jwt-key", key]),
            &CardFileExtras::default(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("audience"), "{error}");
    }

    #[test]
    fn the_card_files_auth_section_resolves_paths_beside_it_and_flags_win() {
        let dir = tempfile::tempdir().unwrap();
        public_key(dir.path());
        let file = dir.path().join("card.json");
        let mut overlay: serde_json::Map<String, serde_json::Value> = serde_json::from_value(serde_json::json!({
            "name": "T",
            "auth": {"jwt": {"issuers": ["https://i"], "audience": "a", "keys": ["issuer.key.pub"]},
                     "scopes": {"read": ""}},
            "extendedCard": {"description": "for members"}
        }))
        .unwrap();
        let extras = take_extras(&mut overlay, &file).unwrap();
        assert!(!overlay.contains_key("auth") && !overlay.contains_key("extendedCard"));
        let auth = edge_auth(&auth_args(&[]), &extras).unwrap().unwrap();
        assert_eq!(auth.scopes.read, "", "a scope set to empty needs none");
        assert_eq!(
            auth.scopes.send, "tasks:send",
            "the others keep their defaults"
        );
        // A flag wins over the file: here an audience that leaves the file's keys in place.
        edge_auth(&auth_args(&["--jwt-audience", "b"]), &extras)
            .unwrap()
            .unwrap();
        let public = agentlog::bridge::default_card("t");
        let extended = extended_card(&public, &extras).unwrap().unwrap();
        assert_eq!(extended.description, "for members");
        assert_eq!(extended.supported_interfaces, public.supported_interfaces);
        let mut bad: serde_json::Map<String, serde_json::Value> = serde_json::from_value(
            serde_json::json!({"auth": {"jwt": {"issuers": []}, "extra": 1}}),
        )
        .unwrap();
        assert!(take_extras(&mut bad, &file).is_err());
    }
}
