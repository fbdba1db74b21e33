//! The `agentlog` program as a child process of the integration suites (the kill -9 tests of
//! `serve` and `agentlog pusher`, `tests/tests/suites/push_kill.rs`): the same `main` as the
//! `agentlog` binary, built in this crate so the suites can run it.

fn main() -> std::process::ExitCode {
    agentlog_server::main()
}
