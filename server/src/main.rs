//! The `agentlog` command; everything is in the `cli` module of this crate's library.

/// glibc's malloc took a fifth of a loaded server's CPU, much of it in arena locks
/// (`tests/benches/README.md`, the allocator notes); the library itself sets no allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    agentlog_server::main()
}
