//! The `agentlog` program over the `agentlog` library: the command ([`main`]) and the agents
//! it serves itself ([`agents`]: the demo and the conformance kit's), which the workspace's
//! tests and benchmarks use too.

pub mod agents;
mod cli;

pub use cli::main;
