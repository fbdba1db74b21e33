//! `agentlog keygen`: an ed25519 key pair for signing agent cards and records.

use std::path::PathBuf;

use clap::Args;

use super::CliResult;
use super::output::Out;
use agentlog::security::SigningKey;

const EXAMPLES: &str = "\
EXAMPLES:
  agentlog keygen --out bridge.key      # writes bridge.key (0600) and bridge.key.pub
  agentlog serve --signing-key bridge.key ...       # the card signed by the key
  agentlog card http://127.0.0.1:8080 --verify bridge.key.pub

The private key is PKCS#8 PEM, readable by its owner only; the public key is SPKI PEM, which
Python's cryptography and JavaScript's jose read as they are. The key id printed is the key's
RFC 7638 JWK thumbprint: signatures name it, and trust files find the key by it.";

/// Write a new ed25519 key pair.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub(super) struct KeygenArgs {
    /// Where the private key goes; the public key is written beside it with `.pub` added.
    /// An existing file is never overwritten.
    #[arg(long, value_name = "FILE", default_value = "agentlog.key")]
    out: PathBuf,
}

/// `agentlog keygen`.
pub(super) fn run(args: KeygenArgs, out: &Out) -> CliResult {
    let key = SigningKey::generate()?;
    let public = key.write_pair(&args.out)?;
    out.field("private key", &args.out.display().to_string());
    out.field("public key", &public.display().to_string());
    out.field("key id", key.kid());
    out.field("jwk", &key.verifying_key().to_jwk().to_string());
    Ok(())
}
