//! agentlog for Node: the agentlog SDK through N-API.
//!
//! Conversion only: JS values to the SDK's types and back, the one error mapping
//! ([`error`]), and the async bridge (Promises for Rust futures; one batched queue per
//! worker into JS, [`worker`]). `index.js` adds what N-API cannot express: the
//! `AgentlogError` class and async iterators. The rules: `skills/bindings/SKILL.md`.

// napi registers the exports only outside `cfg(test)`, so in a test build (clippy
// --all-targets) every export looks unused. The tests are JavaScript (test/).
#![cfg_attr(test, allow(dead_code))]

/// Rust's allocations in the addon (V8 keeps its own heap): glibc's malloc under a worker's
/// load spends its time in arena locks (`tests/benches/README.md`, the allocator notes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bridge;
mod completion;
mod context;
mod convert;
mod error;
mod log;
mod mcp;
mod push;
mod serve;
mod telemetry;
mod trace;
mod wire;
mod worker;
