//! Shared support for agentlog's cross-component tests and benchmarks.

/// Run each case `async fn(&dyn Backend, agent: &str)` of a suite against `$subject`, in
/// order, each with an agent name of its own (`<prefix><run>-<case-name>`, `run` random so that
/// suites can share one broker), and say how long each took.
#[macro_export]
macro_rules! run_cases {
    ($subject:expr, $prefix:literal, [$($case:ident),+ $(,)?]) => {{
        let subject = $subject;
        let run = format!("{:06x}", rand::random::<u32>() & 0xff_ffff);
        $(
            let started = std::time::Instant::now();
            $case(
                subject,
                &format!("{}{run}-{}", $prefix, stringify!($case).replace('_', "-")),
            )
            .await;
            eprintln!(
                "[{}] {}: ok in {:?}",
                subject.name(),
                stringify!($case),
                started.elapsed()
            );
        )+
    }};
}
pub mod backends;
pub mod bench;
pub mod bridge_suite;
pub mod conformance;
pub mod crash;
pub mod fault_suite;
pub mod iggy_server;
pub mod mcp_rpc;
pub mod push_receiver;
pub mod push_suite;
pub mod retention_suite;
pub mod streamer;
pub mod turn_suite;
