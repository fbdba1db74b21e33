//! `agentlog` as a child process of a test (the `agentlog_child` binary), SIGKILLed when
//! dropped, so a failed assertion leaves nothing running.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// A child process, SIGKILLed when dropped. Dropped by a failing test, it prints the last
/// warnings and errors it logged (not the Iggy client's), which the test's output shows.
pub(crate) struct Killed(pub(crate) Child, Tail);

/// The last lines a child wrote to stderr.
#[derive(Clone, Default)]
pub(crate) struct Tail(Arc<Mutex<VecDeque<String>>>);

/// How many lines of a child's stderr are kept.
const TAIL_LINES: usize = 400;
/// How many of its warnings and errors a failing test prints.
const PRINTED: usize = 40;

impl Tail {
    fn lines(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        if std::thread::panicking() {
            let lines = self.1.lines();
            let worth: Vec<&String> = lines
                .iter()
                .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
                // The Iggy client's own reconnect chatter would crowd out ours.
                .filter(|l| !l.contains(" iggy::"))
                .collect();
            eprintln!(
                "--- agentlog child {}: its last warnings and errors ---",
                self.0.id()
            );
            for line in &worth[worth.len().saturating_sub(PRINTED)..] {
                eprintln!("{line}");
            }
        }
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
        return (Killed(child, Tail::default()), stderr);
    }
    let stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let tail = Tail::default();
    let kept = tail.clone();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let mut lines = kept.lines();
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    });
    (Killed(child, tail), line)
}
