//! The agents `agentlog serve` runs in its own process: the demo agent and its MCP tools,
//! resources and prompts (`--demo`), and the agent the official A2A conformance kit drives
//! (`--conformance`).

pub mod conformance;
pub mod demo;
mod demo_client_requests;
mod demo_input_tools;
pub mod demo_list_changes;
pub mod demo_resources;
pub mod demo_skills;
pub mod demo_tools;
#[cfg(test)]
mod tests;
mod tool_config;

pub use conformance::ConformanceHandler;
pub use demo::DemoHandler;
