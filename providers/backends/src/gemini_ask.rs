//! The channel of Gemini CLI's questions. Headless Gemini CLI asks nobody itself, so in
//! `accept-edits` superpi's `BeforeTool` hook (`gemini::ASK_HOOK`, in the CLI's settings)
//! asks superpi: the driver makes a directory for the turn's questions in the CLI's home with
//! a FIFO `requests` it reads; the hook (confined with the CLI) writes the call into a new
//! directory `ask.XXXXXXXX` there with a FIFO `answer`, names that directory on `requests`,
//! and waits for one line of answer, which it prints for the CLI.
//!
//! What arrives on `requests` is written by the confined program, so it is not trusted: a
//! question's directory must be a directory (not a link) directly inside the turn's, its
//! request a regular file of bounded size, its answer a FIFO; anything else is skipped (the
//! hook then refuses the call itself) or refused.

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::unix::pipe;

use crate::event::Approval;

/// The largest request read (a call's input).
const MAX_REQUEST: u64 = 1024 * 1024;

/// A turn's questions: its directory and the FIFO the hook names each question on. The
/// directory is removed when this is dropped (the turn ended).
pub struct Asks {
    dir: PathBuf,
    requests: BufReader<pipe::Receiver>,
}

impl std::fmt::Debug for Asks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asks").field("dir", &self.dir).finish()
    }
}

impl Asks {
    /// A new directory of questions under `home/asks`, with its FIFO open for reading (and
    /// writing, so it never reads the end while no hook runs).
    pub fn create(home: &Path) -> Result<Asks, String> {
        let base = home.join("asks");
        let made = std::fs::create_dir_all(&base)
            .and_then(|()| tempfile::Builder::new().prefix("turn.").tempdir_in(&base))
            .map_err(|e| format!("Gemini CLI's question directory in {}: {e}", base.display()))?;
        let dir = made.keep();
        let fifo = dir.join("requests");
        nix::unistd::mkfifo(&fifo, Mode::S_IRUSR | Mode::S_IWUSR)
            .map_err(|e| format!("Gemini CLI's question channel {}: {e}", fifo.display()))?;
        let receiver = pipe::OpenOptions::new()
            .read_write(true)
            .open_receiver(&fifo)
            .map_err(|e| format!("Gemini CLI's question channel {}: {e}", fifo.display()))?;
        Ok(Asks { dir, requests: BufReader::new(receiver) })
    }

    /// The directory the hook is told of (`gemini::ASK_DIR_VAR`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The next question: its directory (where it is answered) and the call asked about.
    /// `None` when the channel failed.
    pub async fn next(&mut self) -> Option<(String, Value)> {
        loop {
            let mut line = String::new();
            match self.requests.read_line(&mut line).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let id = line.trim_end().to_string();
            let Some(ask) = question_dir(&self.dir, &id) else {
                tracing::warn!("Gemini CLI's hook named {id:?}, not a question of this turn; skipped");
                continue;
            };
            match read_request(&ask) {
                Ok(request) => return Some((id, request)),
                Err(err) => {
                    let refusal = Approval::Deny { message: format!("superpi could not read the question: {err}") };
                    if let Err(err) = answer(&self.dir, &id, &refusal) {
                        tracing::warn!("refusing Gemini CLI's unreadable question {id}: {err}");
                    }
                }
            }
        }
    }
}

impl Drop for Asks {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `id` as a question's directory: a directory (not a link) directly inside `dir`, named
/// `ask.*`.
fn question_dir(dir: &Path, id: &str) -> Option<PathBuf> {
    let path = Path::new(id);
    let name = path.file_name()?.to_str()?;
    let ok = path.parent() == Some(dir)
        && name.starts_with("ask.")
        && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir());
    ok.then(|| path.to_path_buf())
}

/// The call a question is about (the hook's input: `{tool_name, tool_input, ...}`).
fn read_request(ask: &Path) -> Result<Value, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(ask.join("request"))
        .map_err(|e| e.to_string())?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err("its request is not a file".into());
    }
    let mut text = String::new();
    file.take(MAX_REQUEST).read_to_string(&mut text).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| format!("its request is not JSON: {e}"))
}

/// Answers question `id` of the turn's `dir` (the hook prints it for the CLI), then removes
/// the question's directory.
pub fn answer(dir: &Path, id: &str, approval: &Approval) -> Result<(), String> {
    let ask = question_dir(dir, id).ok_or_else(|| format!("{id} is not a question of this turn"))?;
    // The hook holds the FIFO open for reading, so opening it never waits.
    let mut fifo = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(ask.join("answer"))
        .map_err(|e| e.to_string())?;
    if !fifo.metadata().is_ok_and(|m| m.file_type().is_fifo()) {
        return Err("its answer is not a FIFO".into());
    }
    let written = fifo.write_all(crate::gemini::hook_answer(approval).as_bytes()).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&ask);
    written
}

#[cfg(test)]
#[path = "gemini_ask_tests.rs"]
mod tests;
