//! `agentlog card`: print an agent's card and check its signatures.

use std::path::PathBuf;

use agentlog_wire::a2a::AgentCard;
use clap::Args;

use super::client::{FetchedCard, fetch_card};
use super::output::Out;
use super::{CliError, CliResult};
use agentlog::security::card_signing::{SignatureCheck, check_card_signatures};
use agentlog::security::{VerifyingKey, verify_card};

const EXAMPLES: &str = "\
EXAMPLES:
  agentlog card http://127.0.0.1:8080
      the card: name, endpoints, skills, and the keys it is signed by
  agentlog card http://127.0.0.1:8080 --verify card.key.pub
      exit 0 when a signature is by that key and matches the card, else 1
  agentlog card http://127.0.0.1:8080 --verify old.key.pub --verify new.key.pub
      trust either key (while the agent's keys rotate)
  agentlog card --json http://127.0.0.1:8080 | jq .signatures

URL is found as `send` finds it: the card is read from URL/.well-known/agent-card.json (or
from URL itself when it ends in /agent-card.json).

KEYFILE is a public key: SPKI PEM (the .pub file `agentlog keygen` writes) or a JWK. A
signature names its key by id (kid): a PEM key's id is its RFC 7638 thumbprint, a JWK's is
the `kid` it holds (else its thumbprint). A signature covers the card's A2A 1.0 fields, not
the legacy 0.3 ones, checked as the official Python and JS SDKs check it (A2A §8.4).";

/// Print an agent's card; with --verify, check that it is signed by a trusted key.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub(super) struct CardArgs {
    /// The agent's URL, or its card's.
    url: String,

    /// A public key to check the card's signatures against (SPKI PEM or JWK); repeat it to
    /// trust several. At least one signature must be by one of them and match the card,
    /// or the command fails (exit 1).
    #[arg(long = "verify", value_name = "KEYFILE")]
    verify: Vec<PathBuf>,

    /// Print the card's JSON instead (all of it, legacy fields too; pretty-printed).
    #[arg(long)]
    json: bool,
}

/// `agentlog card`.
pub(super) async fn run(args: CardArgs, out: &Out) -> CliResult {
    // The keys first: a bad key file fails before anything is fetched.
    let trusted = args
        .verify
        .iter()
        .map(|path| {
            VerifyingKey::load(path)
                .map_err(|e| CliError::msg(format!("bad --verify: {}", e.message())))
        })
        .collect::<CliResult<Vec<_>>>()?;
    let fetched = fetch_card(&args.url).await?;
    if args.json {
        out.line(
            &serde_json::to_string_pretty(&fetched.json)
                .unwrap_or_else(|_| fetched.json.to_string()),
        );
    } else {
        print_card(out, &fetched, &trusted);
    }
    if trusted.is_empty() {
        return Ok(());
    }
    let kid = verify_card(&fetched.card, &trusted).map_err(|e| {
        CliError::msg(format!(
            "the card at {} does not verify: {}",
            fetched.url,
            e.message()
        ))
    })?;
    if args.json {
        // stdout holds the JSON alone, for a pipe.
        super::output::note(&format!("agentlog: the card is signed by key {kid}"));
    } else {
        out.field("verified", &format!("signed by key {kid}"));
    }
    Ok(())
}

fn print_card(out: &Out, fetched: &FetchedCard, trusted: &[VerifyingKey]) {
    let card = &fetched.card;
    out.field("card", fetched.url.as_str());
    out.field("name", &out.bold(&card.name));
    out.field("about", &card.description);
    out.field("version", &card.version);
    if let Some(provider) = &card.provider {
        out.field(
            "provider",
            &format!("{} ({})", provider.organization, provider.url),
        );
    }
    for interface in &card.supported_interfaces {
        let tenant = interface
            .tenant
            .as_deref()
            .map(|t| format!(" (tenant {t})"))
            .unwrap_or_default();
        out.field(
            "endpoint",
            &format!(
                "{} {} {}{tenant}",
                interface.protocol_binding, interface.protocol_version, interface.url
            ),
        );
    }
    out.field("features", &features(card));
    for skill in &card.skills {
        out.field("skill", &format!("{}: {}", out.cyan(&skill.id), skill.name));
    }
    print_signatures(out, card, trusted);
}

/// The optional protocol features the card declares.
fn features(card: &AgentCard) -> String {
    let capabilities = &card.capabilities;
    let mut on: Vec<&str> = Vec::new();
    for (flag, name) in [
        (capabilities.streaming, "streaming"),
        (capabilities.push_notifications, "push notifications"),
        (capabilities.extended_agent_card, "extended card"),
    ] {
        if flag == Some(true) {
            on.push(name);
        }
    }
    let extensions: Vec<&str> = capabilities
        .extensions
        .iter()
        .map(|e| e.uri.as_str())
        .collect();
    if !extensions.is_empty() {
        on.push("extensions");
    }
    let mut text = if on.is_empty() {
        "none".to_owned()
    } else {
        on.join(", ")
    };
    if !extensions.is_empty() {
        text.push_str(&format!(" ({})", extensions.join(", ")));
    }
    text
}

/// One `signed` line per signature: its key id and algorithm, and with --verify what
/// checking it found.
fn print_signatures(out: &Out, card: &AgentCard, trusted: &[VerifyingKey]) {
    if card.signatures.is_empty() {
        out.field("signed", "no (the card carries no signatures)");
        return;
    }
    // Only a card nested past JCS's depth limit has no payload; verify_card reports it.
    let checked = check_card_signatures(card, trusted).unwrap_or_default();
    for signature in checked {
        let who = match (&signature.kid, &signature.alg) {
            (Some(kid), Some(alg)) => format!("by key {kid} ({alg})"),
            _ => "unreadable".to_owned(),
        };
        let finding = match (&signature.check, trusted.is_empty()) {
            (SignatureCheck::Malformed(why), _) => format!(": {why}"),
            (_, true) => String::new(),
            (SignatureCheck::Verified, false) => ": verifies".to_owned(),
            (SignatureCheck::UnknownKey, false) => ": not a trusted key".to_owned(),
            (SignatureCheck::BadSignature, false) => {
                ": DOES NOT MATCH the card (changed after signing)".to_owned()
            }
            (SignatureCheck::UnsupportedAlgorithm, false) => {
                ": an algorithm this command does not check".to_owned()
            }
        };
        out.field("signed", &format!("{who}{finding}"));
    }
}
