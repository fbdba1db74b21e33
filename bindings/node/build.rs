//! Link flags for a Node addon (undefined N-API symbols resolve at load time).
fn main() {
    napi_build::setup();
}
