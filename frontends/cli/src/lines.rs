//! The chat prompt: line editing and history (rustyline) on a thread of its own, one line at
//! a time when the conversation asks for the next. Without a terminal, rustyline reads plain
//! lines.

use std::path::PathBuf;

use rustyline::error::ReadlineError;
use tokio::sync::mpsc;

/// What the person typed.
pub enum Line {
    Text(String),
    /// Ctrl-C at the prompt: nothing to send.
    Interrupted,
    /// Ctrl-D or the end of stdin.
    End,
}

/// Reads one line each time one is asked for ([`LineReader::next`], or [`LineReader::ask`]
/// then [`LineReader::recv`]); history is kept in `history`.
pub struct LineReader {
    ask: std::sync::mpsc::Sender<()>,
    lines: mpsc::Receiver<Line>,
    /// A line was asked for and has not been received.
    asked: bool,
}

impl LineReader {
    pub fn start(history: Option<PathBuf>) -> anyhow::Result<LineReader> {
        let mut editor = rustyline::DefaultEditor::new()?;
        if let Some(path) = &history {
            // A first run has no history file yet.
            let _ = editor.load_history(path);
        }
        let (ask, asked) = std::sync::mpsc::channel::<()>();
        let (tx, lines) = mpsc::channel(1);
        std::thread::Builder::new().name("chat-prompt".into()).spawn(move || {
            while asked.recv().is_ok() {
                let line = match editor.readline("> ") {
                    Ok(text) => {
                        if !text.trim().is_empty() {
                            let _ = editor.add_history_entry(text.as_str());
                            // Kept at once: `/exit` ends the process without waiting for this
                            // thread, and a crash would lose the lines otherwise.
                            if let Some(path) = &history
                                && let Err(err) = editor.append_history(path)
                            {
                                tracing::debug!("chat history not saved to {}: {err}", path.display());
                            }
                        }
                        Line::Text(text)
                    }
                    Err(ReadlineError::Interrupted) => Line::Interrupted,
                    Err(ReadlineError::Eof) => Line::End,
                    Err(err) => {
                        tracing::warn!("reading the prompt: {err}");
                        Line::End
                    }
                };
                let end = matches!(line, Line::End);
                if tx.blocking_send(line).is_err() || end {
                    break;
                }
            }
        })?;
        Ok(LineReader { ask, lines, asked: false })
    }

    /// The next line (the prompt shows now, after the previous turn's output).
    pub async fn next(&mut self) -> Line {
        self.ask();
        self.recv().await
    }

    /// Asks for the next line (the prompt shows now), unless one was asked for already.
    pub fn ask(&mut self) {
        if !self.asked {
            // A reader thread that ended answers `End` through `recv`.
            let _ = self.ask.send(());
            self.asked = true;
        }
    }

    /// The line asked for. Cancel-safe: dropped before a line came, the line stays asked for.
    pub async fn recv(&mut self) -> Line {
        let line = self.lines.recv().await.unwrap_or(Line::End);
        self.asked = false;
        line
    }
}
