//! Every cross-component suite of the workspace, one test binary (linking the SDK once):
//! each module is a suite of its own, run per backend where it says so; `cargo test -p
//! agentlog-integration --test suites <module>::` runs one.

mod bindings;
mod bridge;
mod child;
mod faults;
mod grpc;
mod hops;
mod log_conformance;
mod log_crash;
mod log_iggy;
mod log_iggy_tls;
mod mcp;
mod mcp_cancel;
mod mcp_compose;
mod mcp_expiry;
mod mcp_input;
mod mcp_list;
mod mcp_listen;
mod mcp_log;
mod mcp_mrtr;
mod mcp_relay;
mod mcp_reload;
mod mcp_resources;
mod mcp_served;
mod mcp_subscribe;
mod mcp_tasks;
mod members_iggy;
mod partition_shares;
mod partitions;
mod partitions_dynamic;
mod partitions_dynamic_iggy;
mod partitions_iggy;
mod push;
mod push_bindings;
mod push_faults;
mod push_kill;
mod read_your_writes;
mod retention;
mod signed_records;
mod skills;
mod turns;
