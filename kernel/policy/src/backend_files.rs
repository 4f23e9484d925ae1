//! An agent backend's own configuration in a workspace, gated like a workspace rules file.
//!
//! Gemini CLI reads `WORKSPACE/.gemini/` (settings over superpi's, `.env`, policies, commands
//! that run `!{shell}`, agents, extensions) and has no switch to ignore it: such a file can turn
//! superpi's question hook off, allow tools, add hooks or MCP servers that run commands.
//! OpenCode 1.18.33 loads the plugins of the project's `.opencode/` even when told to ignore
//! the project's configuration. A tool call may write these (an edit runs without asking in
//! `accept-edits`), so one turn could grant the next. So a backend turn runs beside such a
//! file only while it is, byte for byte, the one the user accepted (`superpi permissions trust
//! DIR` records its sha256, or a folder's over its tree, in the user's `permissions.json`,
//! `backend_files_sha256`); otherwise the turn ends before the program starts, saying which
//! file and how to accept it. Which files: [`BackendKind::workspace_config`]. The kernel
//! checks again once the program has started (its first word), so a file rewritten between
//! the check and the program's read ends the turn; a rewrite undone before that second check
//! is not seen (kernel/src/turn/backend.rs).

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

/// Where a backend's configuration file stands with the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// The bytes the user accepted.
    Accepted,
    /// Other bytes than the user accepted.
    Changed,
    /// Present, never accepted.
    NotAccepted,
    /// Accepted once, gone now (no harm: a missing file is read by nobody).
    Gone,
    /// One superpi would not read (a link, another user's, too big), with why.
    Refused(String),
}

impl Standing {
    /// A phrase after "which" (none for [`Standing::Accepted`] and [`Standing::Gone`]).
    fn problem(&self) -> Option<String> {
        match self {
            Standing::Accepted | Standing::Gone => None,
            Standing::Changed => Some("changed since you accepted it".into()),
            Standing::NotAccepted => Some("you have not accepted".into()),
            Standing::Refused(why) => Some(why.clone()),
        }
    }
}

/// One file or folder of a backend's in a workspace, and its standing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surveyed {
    pub kind: BackendKind,
    pub path: PathBuf,
    pub standing: Standing,
}

/// The standing of a file whose digest is `now` ([`digest`]) against the one the user
/// recorded; `None` when it is missing and was never accepted.
fn standing(now: Result<Option<String>, String>, recorded: Option<&String>) -> Option<Standing> {
    Some(match (now, recorded) {
        (Err(why), _) => Standing::Refused(why),
        (Ok(None), None) => return None,
        (Ok(None), Some(_)) => Standing::Gone,
        (Ok(Some(now)), Some(accepted)) if *accepted == now => Standing::Accepted,
        (Ok(Some(_)), Some(_)) => Standing::Changed,
        (Ok(Some(_)), None) => Standing::NotAccepted,
    })
}

/// The user's accepted digests, read anew (an acceptance takes effect at the next turn).
fn accepted(config_dir: &Path) -> Result<std::collections::BTreeMap<PathBuf, String>, ConfigError> {
    file::read_for_edit(&config_dir.join(USER_RULES_FILE), RuleSource::User).map(|(user, _)| user.backend_files_sha256)
}

/// Every backend's configuration files of `workspace` that are there or were accepted, with
/// their standing (`superpi doctor` lists them).
pub fn survey(config_dir: &Path, workspace: &Path) -> Result<Vec<Surveyed>, ConfigError> {
    let workspace = workspace.canonicalize().unwrap_or_else(|_| crate::paths::lexical(workspace));
    let recorded = accepted(config_dir)?;
    let mut out = Vec::new();
    for kind in BackendKind::ALL {
        for relative in kind.workspace_config() {
            let path = crate::paths::lexical(&workspace.join(relative));
            if let Some(standing) = standing(digest(&path), recorded.get(&path)) {
                out.push(Surveyed { kind, path, standing });
            }
        }
    }
    Ok(out)
}

/// Whether `kind` may run a turn in `workspace`: every configuration file of its there is
/// missing or the one the user accepted. Reads the user's file in `config_dir` each time, so
/// an acceptance takes effect at the next turn.
pub fn check(config_dir: &Path, workspace: &Path, kind: BackendKind) -> Result<(), Unaccepted> {
    let workspace = workspace.canonicalize().unwrap_or_else(|_| crate::paths::lexical(workspace));
    let accept = format!("check it, then accept it as it is with `superpi permissions trust {}`", workspace.display());
    let mut recorded = None;
    for relative in kind.workspace_config() {
        let path = crate::paths::lexical(&workspace.join(relative));
        let refused = |what: String, fix: String| Unaccepted { kind, file: path.clone(), what, fix };
        let now = digest(&path);
        if matches!(now, Ok(None)) {
            continue;
        }
        let recorded = match &recorded {
            Some(recorded) => recorded,
            None => match accepted(config_dir) {
                Ok(map) => recorded.insert(map),
                Err(err) => {
                    let what = format!("superpi cannot tell whether you accepted (your permissions file: {err})");
                    return Err(refused(what, "Fix your permissions.json.".into()));
                }
            },
        };
        let Some(standing) = standing(now, recorded.get(&path)) else { continue };
        let fix = match standing {
            Standing::Accepted | Standing::Gone => continue,
            Standing::Changed => format!("If the change is yours, {accept}."),
            Standing::NotAccepted => format!("If it is yours, {accept}; or remove it."),
            Standing::Refused(_) => "Make it your own, without links, or remove it.".into(),
        };
        return Err(refused(standing.problem().unwrap_or_default(), fix));
    }
    Ok(())
}

#[cfg(test)]
#[path = "backend_files_tests.rs"]
mod tests;
