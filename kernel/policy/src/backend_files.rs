//! An agent backend's own configuration in a workspace, gated like a workspace rules file.
//!
//! Gemini CLI reads `WORKSPACE/.gemini/settings.json` (and `.gemini/.env`) over the settings
//! superpi gives it, and has no switch to ignore them: such a file can turn superpi's question
//! hook off, add hooks or MCP servers that run commands, or name a tool discovery command.
//! OpenCode 1.18.33 loads the plugins of the project's `.opencode/` even when told to ignore
//! the project's configuration. A tool call may write these (an edit runs without asking in
//! `accept-edits`), so one turn could grant the next. So a backend turn runs beside such a
//! file only while it is, byte for byte, the one the user accepted (`superpi permissions trust
//! DIR` records its sha256, or a folder's over its tree, in the user's `permissions.json`,
//! `backend_files_sha256`); otherwise the turn ends before the program starts, saying which
//! file and how to accept it. Which files: [`BackendKind::workspace_config`].

use std::path::{Path, PathBuf};

use crate::backend::BackendKind;
use crate::error::ConfigError;
use crate::permission_rules::USER_RULES_FILE;
use crate::permission_rules_file::{self as file, Bytes, RuleSource};

/// Why a backend's turn does not run beside a workspace file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{program} would read {file}, which {what}; such a file can turn off superpi's questions and run commands \
     of its own. {fix}",
    program = kind.title(),
    file = file.display()
)]
pub struct Unaccepted {
    pub kind: BackendKind,
    pub file: PathBuf,
    /// What is wrong with it (a phrase after "which").
    pub what: String,
    /// What to do.
    pub fix: String,
}

/// Every backend's configuration files of `workspace` (canonical), as they are now: each
/// path with its digest ([`digest`]), or `None` when there is none. One superpi would not read
/// (a link, another user's, too big) is an error.
pub(crate) fn digests(workspace: &Path) -> Result<Vec<(PathBuf, Option<String>)>, ConfigError> {
    let mut out = Vec::new();
    for kind in BackendKind::ALL {
        for relative in kind.workspace_config() {
            let path = crate::paths::lexical(&workspace.join(relative));
            match digest(&path) {
                Ok(digest) => out.push((path, digest)),
                Err(why) => return Err(ConfigError::invalid(&path, "", format!("{why}; superpi cannot accept it"))),
            }
        }
    }
    Ok(out)
}

/// The most entries a configuration folder may hold.
const MAX_ENTRIES: usize = 10_000;

/// The sha256 of a file's bytes, or of a folder's tree (each entry's path and, for a file, its
/// digest, in order); `None` when it is missing. A link, another user's file or one too big,
/// or a folder past [`MAX_ENTRIES`], is refused with why.
fn digest(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    if !meta.is_dir() {
        return match file::read_bytes(path, RuleSource::Workspace).map_err(|e| e.to_string())? {
            Bytes::Missing => Ok(None),
            Bytes::Present(bytes) => Ok(Some(file::sha256(&bytes))),
            Bytes::Ignored(why) => Err(why),
        };
    }
    let mut listing = String::new();
    let mut pending = vec![path.to_path_buf()];
    let mut entries = 0;
    while let Some(dir) = pending.pop() {
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .and_then(|read| read.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>())
            .map_err(|e| format!("cannot be read ({e})"))?;
        names.sort();
        for entry in names {
            entries += 1;
            if entries > MAX_ENTRIES {
                return Err(format!("holds more than {MAX_ENTRIES} entries"));
            }
            let shown = entry.strip_prefix(path).unwrap_or(&entry).display().to_string();
            match digest_entry(&entry)? {
                Some(sha) => listing.push_str(&format!("{shown}\0{sha}\n")),
                None => {
                    listing.push_str(&format!("{shown}/\n"));
                    pending.push(entry);
                }
            }
        }
    }
    Ok(Some(file::sha256(listing.as_bytes())))
}

/// A folder's entry: a file's digest, or `None` for a folder (listed, then walked).
fn digest_entry(entry: &Path) -> Result<Option<String>, String> {
    let is_dir = std::fs::symlink_metadata(entry).map_err(|e| format!("cannot be read ({e})"))?.is_dir();
    if is_dir {
        return Ok(None);
    }
    digest(entry)?.map(Some).ok_or_else(|| format!("changed while superpi read it ({})", entry.display()))
}

/// Whether `kind` may run a turn in `workspace`: every configuration file of its there is
/// missing or the one the user accepted. Reads the user's file in `config_dir` each time, so
/// an acceptance takes effect at the next turn.
pub fn check(config_dir: &Path, workspace: &Path, kind: BackendKind) -> Result<(), Unaccepted> {
    let workspace = workspace.canonicalize().unwrap_or_else(|_| crate::paths::lexical(workspace));
    let accept = format!("check it, then accept it as it is with `superpi permissions trust {}`", workspace.display());
    for relative in kind.workspace_config() {
        let path = crate::paths::lexical(&workspace.join(relative));
        let refused = |what: String, fix: String| Unaccepted { kind, file: path.clone(), what, fix };
        let now = match digest(&path) {
            Ok(None) => continue,
            Ok(Some(now)) => now,
            Err(why) => return Err(refused(why, "Make it your own, without links, or remove it.".into())),
        };
        let recorded = match file::read_for_edit(&config_dir.join(USER_RULES_FILE), RuleSource::User) {
            Ok((user, _)) => user.backend_files_sha256.get(&path).cloned(),
            Err(err) => {
                let what = format!("superpi cannot tell whether you accepted (your permissions file: {err})");
                return Err(refused(what, "Fix your permissions.json.".into()));
            }
        };
        match recorded {
            Some(accepted) if accepted == now => {}
            Some(_) => {
                return Err(refused(
                    "changed since you accepted it".into(),
                    format!("If the change is yours, {accept}."),
                ));
            }
            None => {
                return Err(refused(
                    "you have not accepted".into(),
                    format!("If it is yours, {accept}; or remove it."),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "backend_files_tests.rs"]
mod tests;
