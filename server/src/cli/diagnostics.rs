//! The command's diagnostics: the library's `tracing` events on stderr.
//!
//! Without a subscriber a warning such as "the embedded log refused an append" or "cannot
//! renew the claim" would go nowhere. `RUST_LOG` selects what is written (an
//! `EnvFilter` directive; default [`DEFAULT_FILTER`]), `--log-format` how: text for people or
//! one JSON object per line for a log collector. Results stay on stdout; only diagnostics go
//! to stderr.

use std::io::IsTerminal;
use std::sync::OnceLock;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

use super::ColorChoice;

/// What is written when `RUST_LOG` is unset or cannot be parsed: warnings from everything,
/// and agentlog's own notable events (a lost command put back on the queue, a group
/// recreated after a server restart).
pub const DEFAULT_FILTER: &str = "warn,agentlog=info";

/// How diagnostics are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum LogFormat {
    // One line per event, for people. (Plain comments: doc comments would make clap print a
    // paragraph per value in every subcommand's --help.)
    Text,
    // One JSON object per event, per line.
    Json,
}

/// The format installed, once [`install`] ran.
static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Whether diagnostics are JSON lines (then the command's own notes are events too).
pub(super) fn json() -> bool {
    FORMAT.get() == Some(&LogFormat::Json)
}

/// Install the process's subscriber. A second call (tests) is a no-op.
pub(super) fn install(format: LogFormat, color: ColorChoice) {
    let _ = FORMAT.set(format);
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|directive| EnvFilter::try_new(directive).ok())
        .unwrap_or_else(|| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => {
            let ansi = match color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            builder.with_ansi(ansi).try_init()
        }
    };
}
