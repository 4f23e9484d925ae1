//! `superpi acp|mcp|rpc|gateway|agui` handed to `superpi-frontend`, the small binary beside
//! this one that holds only the frontends. Why: the kernel, providers and sandbox make this
//! binary large, and a page fault on it maps its page cache's whole folio (megabytes where the
//! disk reads ahead far), so a frontend serving from it kept neighbouring kernel code resident.
//! The hand-over is an `exec` before the runtime and any thread: the same pid, stdio and
//! argv, so hosts see nothing different. Without the sibling (`cargo run` builds only the
//! binary it runs), with a stale one, or with `SUPERPI_FRONTEND_EXEC=0`, the role runs in
//! this process as before.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::serve::{Dirs, Serve};

/// The frontend binary's file name, beside `superpi`.
pub const FRONTEND_BIN: &str = "superpi-frontend";

/// How much older than this binary the sibling may be. Why a guard: `cargo build --bin
/// superpi` (or `cargo run`, or copying one file over an install) relinks only one of the
/// two, and a frontend from an earlier build would then serve older code than the user built.
/// Why times: the two are linked from the same library in one build (or copied together by
/// `cargo install`), so they end moments apart; the small one usually first, and on a loaded
/// machine this binary's link can end well after it, hence minutes rather than seconds. A
/// sibling newer than this binary is a frontend built since, the code the user asked for.
/// A build identity both binaries embed would be exact, but cargo gives a binary none that
/// changes with its dependencies' sources, and asking the sibling for its own costs a spawn.
const STALE_AFTER: Duration = Duration::from_secs(120);

/// Replaces this process with `superpi-frontend` when the command line is one of its roles and
/// the sibling is usable; returns when the role is to run here. Call it first in `main`.
#[allow(clippy::disallowed_methods)] // not a spawn: this process becomes the frontend
pub fn exec_frontend() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("SUPERPI_FRONTEND_EXEC").is_some_and(|v| v == "0") {
        return;
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    if !args.get(1..).is_some_and(serves) {
        return;
    }
    let Some(frontend) = std::env::current_exe().ok().and_then(|exe| usable_sibling(&exe)) else {
        return;
    };
    let mut command = std::process::Command::new(&frontend);
    command.args(&args[1..]);
    if let Some(arg0) = args.first() {
        // Usage and errors name the command the user typed.
        command.arg0(arg0);
    }
    let err = command.exec();
    eprintln!("superpi: cannot run {} ({err}); serving in this process", frontend.display());
}

/// Whether the arguments (after the program) start one of the serving roles: a peek, not a
/// parse; anything else (help, versions, `mcp list|add|remove`, an option it does not know
/// before the subcommand) is left to the full parse in this binary.
pub(crate) fn serves(args: &[OsString]) -> bool {
    let mut rest = args.iter();
    let role = loop {
        let Some(arg) = rest.next() else { return false };
        let text = arg.to_string_lossy();
        if Dirs::NAMES.contains(&text.as_ref()) {
            // The option's value.
            rest.next();
        } else if !Dirs::NAMES.iter().any(|name| text.strip_prefix(name).is_some_and(|v| v.starts_with('='))) {
            break text;
        }
    };
    if !Serve::NAMES.contains(&role.as_ref()) {
        return false;
    }
    let words: &[&str] = if role == "mcp" { &["list", "add", "remove", "help"] } else { &["help"] };
    !rest.any(|arg| {
        let arg = arg.as_os_str();
        ["-h", "--help", "-V", "--version"].iter().chain(words).any(|w| arg == OsStr::new(w))
    })
}

/// `superpi-frontend` beside `exe`, when it is an executable file and not stale.
fn usable_sibling(exe: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let sibling = exe.with_file_name(FRONTEND_BIN);
    let meta = std::fs::metadata(&sibling).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return None;
    }
    let ours = std::fs::metadata(exe).and_then(|m| m.modified()).ok()?;
    let theirs = meta.modified().ok()?;
    match ours.duration_since(theirs) {
        Ok(older) if older > STALE_AFTER => None,
        _ => Some(sibling),
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
