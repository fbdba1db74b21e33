//! `agentlog` as a child process of a test (the `agentlog_child` binary), SIGKILLed when
//! dropped, so a failed assertion leaves nothing running.

use std::ffi::OsStr;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};

/// A child process, SIGKILLed when dropped.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `agentlog <args>`: the child once it printed its first line, and that line (or the error
/// it printed, if it exited first). Its output is read on after that, so it never blocks on
/// a full pipe.
pub(crate) fn agentlog<S: AsRef<OsStr>>(args: &[S]) -> (Killed, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog_child"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentlog");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("first line");
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    if line.is_empty() {
        let mut stderr = String::new();
        let _ =
            std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr);
        return (Killed(child), stderr);
    }
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (Killed(child), line)
}
