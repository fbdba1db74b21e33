//! Terminal output: colour and a spinner only when stdout is a terminal, plain text otherwise,
//! and how tasks, messages and parts are printed.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{Artifact, Message, Part, PartContent, Role, Task};

use super::ColorChoice;

/// Width of the label column (`task     …`).
const LABEL: usize = 9;

/// Where and how the command prints. Writes to stdout ignore errors: a closed pipe
/// (`agentlog list … | head -1`) is not a failure of the command.
#[derive(Debug, Clone, Copy)]
pub(super) struct Out {
    colour: bool,
    terminal: bool,
}

impl Out {
    /// Colour per `choice`; a spinner only when both stdout and stderr are terminals.
    pub(super) fn new(choice: ColorChoice) -> Self {
        let terminal = std::io::stdout().is_terminal();
        let colour = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                terminal
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::env::var("TERM").map_or(true, |t| t != "dumb")
            }
        };
        Self {
            colour,
            terminal: terminal && std::io::stderr().is_terminal(),
        }
    }

    /// Print one line (or several) on stdout.
    pub(super) fn line(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}");
        let _ = stdout.flush();
    }

    /// Print without a newline on stdout, flushed.
    pub(super) fn raw(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = write!(stdout, "{text}");
        let _ = stdout.flush();
    }

    /// A hint for people, on stderr, only when a person is likely watching.
    pub(super) fn hint(&self, text: &str) {
        if self.terminal {
            note(&self.dim(&format!("hint: {text}")));
        }
    }

    /// `label` padded to the label column, then `value`; continuation lines of a multi-line
    /// value are indented under it.
    pub(super) fn field(&self, label: &str, value: &str) {
        let pad = " ".repeat(LABEL.saturating_sub(label.chars().count() + 1));
        let indent = " ".repeat(LABEL);
        let value = value.replace('\n', &format!("\n{indent}"));
        self.line(&format!("{} {pad}{value}", self.dim(label)));
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Faint.
    pub(super) fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    /// Bold.
    pub(super) fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Cyan.
    pub(super) fn cyan(&self, text: &str) -> String {
        self.paint("36", text)
    }

    /// A task state by its short (0.3) name, coloured by what it means.
    pub(super) fn state(&self, state: TaskState) -> String {
        let code = match state {
            TaskState::Completed => "32",
            TaskState::Failed | TaskState::Rejected => "31",
            TaskState::Canceled => "35",
            TaskState::InputRequired | TaskState::AuthRequired => "33",
            TaskState::Submitted | TaskState::Working | TaskState::Unspecified => "34",
        };
        self.paint(&format!("1;{code}"), state.as_v03_str())
    }

    /// A spinner on stderr with `message`, when a person is watching; else nothing.
    pub(super) fn spinner(&self, message: &str) -> Spinner {
        if !self.terminal {
            return Spinner { task: None };
        }
        let message = message.to_owned();
        let task = tokio::spawn(async move {
            const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
            let mut ticks = tokio::time::interval(Duration::from_millis(80));
            for frame in FRAMES.iter().cycle() {
                ticks.tick().await;
                let mut stderr = std::io::stderr().lock();
                let _ = write!(stderr, "\r\x1b[2K{frame} {message}");
                let _ = stderr.flush();
            }
        });
        Spinner { task: Some(task) }
    }

    /// A task: id, context, state, status message, artifacts, and (with `history`) its
    /// messages.
    pub(super) fn task(&self, task: &Task, history: bool) {
        self.field("task", &self.bold(&task.id));
        if !task.context_id.is_empty() {
            self.field("context", &task.context_id);
        }
        self.field("state", &self.state(task.status.state));
        if let Some(message) = &task.status.message {
            self.field("message", &parts_text(&message.parts));
        }
        for artifact in &task.artifacts {
            self.field("artifact", &self.artifact_line(artifact));
        }
        if history {
            for message in &task.history {
                self.field("history", &self.message_line(message));
            }
        }
    }

    /// `name: text` for an artifact.
    pub(super) fn artifact_line(&self, artifact: &Artifact) -> String {
        format!(
            "{}: {}",
            self.cyan(artifact_name(artifact)),
            parts_text(&artifact.parts)
        )
    }

    /// `role: text` for a message.
    pub(super) fn message_line(&self, message: &Message) -> String {
        let role = match message.role {
            Role::User => "user",
            Role::Agent => "agent",
            Role::Unspecified => "?",
        };
        format!("{}: {}", self.cyan(role), parts_text(&message.parts))
    }
}

/// One line on stderr. Unlike `eprintln!`, a closed stderr is ignored rather than a panic.
/// Under `--log-format json` it is an `info` event like the other diagnostics, so stderr stays
/// one JSON object per line.
pub(super) fn note(text: &str) {
    if super::diagnostics::json() {
        tracing::info!(target: "agentlog::cli", "{text}");
        return;
    }
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{text}");
}

/// A running spinner; stopping or dropping it clears its line.
#[derive(Debug)]
pub(super) struct Spinner {
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
        }
    }
}

/// An artifact's name, or its id when it has none.
pub(super) fn artifact_name(artifact: &Artifact) -> &str {
    artifact
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(&artifact.artifact_id)
}

/// The text of some parts: text parts as they are, other parts as a short `[…]` note.
pub(super) fn parts_text(parts: &[Part]) -> String {
    parts.iter().map(part_text).collect::<Vec<_>>().concat()
}

fn part_text(part: &Part) -> String {
    let what = |kind: &str, detail: String| {
        let mut note = format!("[{kind}");
        for extra in [part.filename.as_deref(), part.media_type.as_deref()]
            .into_iter()
            .flatten()
        {
            note.push(' ');
            note.push_str(extra);
        }
        if !detail.is_empty() {
            note.push(' ');
            note.push_str(&detail);
        }
        note.push(']');
        note
    };
    match &part.content {
        PartContent::Text(text) => text.clone(),
        PartContent::Raw(bytes) => what("file", format!("{} bytes", bytes.len())),
        PartContent::Url(url) => what("url", url.clone()),
        PartContent::Data(data) => what("data", data.to_string()),
    }
}

/// `text` on one line, at most `max` characters (an ellipsis marks a cut).
pub(super) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_read_as_text_with_notes_for_the_rest() {
        let parts: Vec<Part> = serde_json::from_value(json!([
            {"text": "hi "},
            {"url": "https://x/a.pdf", "mediaType": "application/pdf"},
            {"data": {"k": 1}},
            {"raw": "aGk=", "filename": "a.txt"}
        ]))
        .unwrap();
        assert_eq!(
            parts_text(&parts),
            "hi [url application/pdf https://x/a.pdf][data {\"k\":1}][file a.txt 2 bytes]"
        );
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("héllo", 5), "héllo");
    }

    #[test]
    fn plain_output_has_no_escape_codes() {
        let out = Out {
            colour: false,
            terminal: false,
        };
        assert_eq!(out.state(TaskState::InputRequired), "input-required");
        let coloured = Out {
            colour: true,
            terminal: false,
        };
        assert_eq!(coloured.bold("x"), "\x1b[1mx\x1b[0m");
    }
}
