//! The `agentlog` program end to end, one test binary: a real `serve` (and the other
//! subcommands) as child processes, as a person or a client would run them. `cargo test -p
//! agentlog-server --test end_to_end <module>::` runs one part.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod adversarial;
mod cli;
mod cli_auth;
mod cli_card;
mod cli_grpc;
mod cli_mcp;
mod cli_ops;
mod cli_security;
mod cli_skills;
mod support;
