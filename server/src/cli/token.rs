//! `agentlog token`: mint a bearer JWT with an ed25519 key, for trying out (and testing) a
//! `serve` that requires authentication. Production tokens come from your identity provider.

use std::path::PathBuf;

use clap::Args;

use super::output::Out;
use super::{CliError, CliResult};
use agentlog::security::SigningKey;

const EXAMPLES: &str = "\
EXAMPLES:
  agentlog keygen --out issuer.key
  agentlog serve --demo --jwt-issuer https://issuer.example --jwt-audience demo \\
      --jwt-key issuer.key.pub
  TOKEN=$(agentlog token --key issuer.key --issuer https://issuer.example --audience demo \\
      --subject alice)
  agentlog send --token \"$TOKEN\" http://127.0.0.1:8080 hello

The token is signed with EdDSA (the key's id as kid) and printed alone on stdout.";

/// Print a bearer JWT signed with an ed25519 key (for development and tests).
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub(super) struct TokenArgs {
    /// The private key (`agentlog keygen`).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,

    /// The token's issuer (`iss`).
    #[arg(long, value_name = "ISS")]
    issuer: String,

    /// The token's audience (`aud`).
    #[arg(long, value_name = "AUD")]
    audience: String,

    /// Who the token is for (`sub`).
    #[arg(long, value_name = "SUB")]
    subject: String,

    /// The scopes granted, space-separated in the `scope` claim (default: sending, reading
    /// and canceling).
    #[arg(
        long,
        value_name = "SCOPE",
        default_value = "tasks:send tasks:read tasks:cancel"
    )]
    scope: String,

    /// A claim to set, `NAME=VALUE` (a string), e.g. a tenant; repeatable.
    #[arg(long, value_name = "NAME=VALUE")]
    claim: Vec<String>,

    /// How long the token is valid.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = super::parse_duration)]
    ttl: std::time::Duration,
}

/// `agentlog token`.
pub(super) fn run(args: TokenArgs, out: &Out) -> CliResult {
    let key = SigningKey::load(&args.key)?;
    let pem = std::fs::read(&args.key)
        .map_err(|e| CliError::msg(format!("cannot read {}: {e}", args.key.display())))?;
    let encoding = jsonwebtoken::EncodingKey::from_ed_pem(&pem)
        .map_err(|e| CliError::msg(format!("{}: {e}", args.key.display())))?;
    let now = agentlog::retention::now_ms() / 1000;
    let mut claims = serde_json::json!({
        "iss": args.issuer,
        "aud": args.audience,
        "sub": args.subject,
        "iat": now,
        "exp": now + args.ttl.as_secs(),
    });
    if !args.scope.is_empty() {
        claims["scope"] = serde_json::Value::String(args.scope.clone());
    }
    for claim in &args.claim {
        let Some((name, value)) = claim.split_once('=') else {
            return Err(CliError::msg(format!(
                "--claim {claim:?} is not NAME=VALUE"
            )));
        };
        claims[name] = serde_json::Value::String(value.to_owned());
    }
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(key.kid().to_owned());
    let token = jsonwebtoken::encode(&header, &claims, &encoding)
        .map_err(|e| CliError::msg(format!("cannot sign the token: {e}")))?;
    out.line(&token);
    Ok(())
}
