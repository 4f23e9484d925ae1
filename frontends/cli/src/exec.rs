//! `superpi acp|mcp|rpc|gateway|agui` handed to `superpi-frontend`, the small binary beside
//! this one that holds only the frontends. Why: the kernel, providers and sandbox make this
//! binary large, and a page fault on it maps its page cache's whole folio (megabytes where the
//! disk reads ahead far), so a frontend serving from it kept neighbouring kernel code resident.
//! The hand-over is an `exec` before the runtime and any thread: the same pid, stdio and
//! argv, so hosts see nothing different. Without the sibling (`cargo run` builds only the
//! binary it runs), with one of another build, or with `SUPERPI_FRONTEND_EXEC=0`, the role
//! runs in this process as before.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::serve::{Dirs, Serve};

/// The frontend binary's file name, beside `superpi`.
pub const FRONTEND_BIN: &str = "superpi-frontend";

include!(concat!(env!("OUT_DIR"), "/build_id.rs"));

/// This build's identity, carried by both binaries in a section of its own, so that `superpi`
/// reads its sibling's from the file without running it. Why an identity rather than file
/// times: `cargo build --bin superpi` (or `cargo run`, or copying one file over an install)
/// relinks only one of the two, and a frontend of an earlier build would then serve older code
/// than the user built; times said so only roughly (a loaded machine links the two minutes
/// apart; a copy keeps no time), the identity says whether both come from the same sources.
#[used]
#[unsafe(link_section = ".superpi_build_id")]
static CARRIED_BUILD_ID: [u8; 16] = BUILD_ID;

/// The name of the ELF section holding [`CARRIED_BUILD_ID`].
const BUILD_ID_SECTION: &[u8] = b".superpi_build_id";

/// Why the last serving role stays in this process, logged once logging is set up.
static STAYS_HERE: OnceLock<String> = OnceLock::new();

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
    let frontend = match std::env::current_exe() {
        Ok(exe) => usable_sibling(&exe, std::hint::black_box(&CARRIED_BUILD_ID)),
        Err(err) => Err(format!("this binary's path is unknown ({err})")),
    };
    let frontend = match frontend {
        Ok(frontend) => frontend,
        Err(why) => {
            let _ = STAYS_HERE.set(why);
            return;
        }
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
/// parse; anything else (help, versions, `mcp list|add|remove|enable|disable`, an option it does not know
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
    let words: &[&str] = if role == "mcp" {
        &["list", "add", "remove", "enable", "disable", "login", "logout", "help"]
    } else {
        &["help"]
    };
    !rest.any(|arg| {
        let arg = arg.as_os_str();
        ["-h", "--help", "-V", "--version"].iter().chain(words).any(|w| arg == OsStr::new(w))
    })
}

/// Logs (at debug) why a serving role runs in this process rather than in `superpi-frontend`.
pub(crate) fn log_why_here() {
    if let Some(why) = STAYS_HERE.get() {
        tracing::debug!("serving in this process: {why}");
    }
}

/// `superpi-frontend` beside `exe`, when it is an executable file carrying build identity
/// `ours`; otherwise why not.
fn usable_sibling(exe: &Path, ours: &[u8; 16]) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let sibling = exe.with_file_name(FRONTEND_BIN);
    let meta = std::fs::metadata(&sibling).map_err(|err| format!("no {} ({err})", sibling.display()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(format!("{} is not an executable file", sibling.display()));
    }
    match build_id_of(&sibling) {
        Some(theirs) if theirs == *ours => Ok(sibling),
        Some(theirs) => Err(format!(
            "{} is of another build ({}, this one {})",
            sibling.display(),
            String::from_utf8_lossy(&theirs),
            String::from_utf8_lossy(ours)
        )),
        None => Err(format!("{} carries no build identity", sibling.display())),
    }
}

/// The build identity an ELF file carries: its [`BUILD_ID_SECTION`] section, read from the
/// section headers (an ELF of this machine's class and byte order; anything else has none).
pub(crate) fn build_id_of(path: &Path) -> Option<[u8; 16]> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).ok()?;
    let read = |at: u64, len: usize| -> Option<Vec<u8>> {
        let mut buf = vec![0; len];
        file.read_exact_at(&mut buf, at).ok()?;
        Some(buf)
    };
    let u16_at = |b: &[u8], at: usize| Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |b: &[u8], at: usize| Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |b: &[u8], at: usize| Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?));
    let header = read(0, 64)?;
    let native = if cfg!(target_endian = "little") { 1 } else { 2 };
    // ELF magic, 64-bit, this machine's byte order.
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != native {
        return None;
    }
    let (table, entry, count, names) =
        (u64_at(&header, 0x28)?, u16_at(&header, 0x3a)?, u16_at(&header, 0x3c)?, u16_at(&header, 0x3e)?);
    if entry != 64 || count == 0 || names >= count {
        return None;
    }
    let sections = read(table, usize::from(count) * 64)?;
    // Each section's (name offset, file offset, size).
    let section = |i: usize| {
        let h = sections.get(i * 64..(i + 1) * 64)?;
        Some((u32_at(h, 0)?, u64_at(h, 0x18)?, u64_at(h, 0x20)?))
    };
    let (_, names_at, names_len) = section(usize::from(names))?;
    let names = read(names_at, usize::try_from(names_len).ok()?)?;
    (0..usize::from(count)).find_map(|i| {
        let (name, at, len) = section(i)?;
        let name = names.get(usize::try_from(name).ok()?..)?;
        let named = name.strip_prefix(BUILD_ID_SECTION)?.first() == Some(&0);
        (named && len == 16).then(|| read(at, 16)?.try_into().ok()).flatten()
    })
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
