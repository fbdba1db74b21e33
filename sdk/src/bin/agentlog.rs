//! The `agentlog` command; everything is in [`agentlog::cli`].

fn main() -> std::process::ExitCode {
    agentlog::cli::main()
}
