//! A rules file on disk: read as configuration superpi trusts, and written so that nothing a
//! tool call planted can redirect the write.
//!
//! Reading ([`read`]): like git's `safe.directory` and the kernel's `AGENTS.md`, a file owned by
//! another user than the kernel's (or root) is ignored, with a notice; so is a workspace file
//! that is a symbolic link (it is opened without following one), one that is not a regular
//! file, and one past [`MAX_RULES_FILE_BYTES`]. A file read also gives the sha256 of its bytes,
//! which the user's file records for each workspace whose file the user accepted
//! (`rules_sha256`): a workspace file's `allow` rules apply only while its bytes are the ones
//! accepted, so a tool call that writes the file (a script, `python -c`: the shell policy
//! cannot see every write) grants nothing.
//!
//! Writing ([`write`]): through a temporary file created anew (`O_EXCL`, never a planted link)
//! and a rename, inside the directory opened once without following links (a workspace's
//! `.superpi` swapped for a link cannot send the write elsewhere), so a reader sees the old
//! file or the new one, never half of one.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open, openat, renameat};
use nix::sys::stat::{Mode, fstat, mkdirat};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ConfigError;

/// What a rule does to the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    Allow,
    Ask,
    Deny,
}

/// One rule as written in a file. At most one of `command`, `path`, `host`; with none of
/// them it is about the whole `tool`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleEntry {
    pub action: RuleAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The user's file only: the rule applies to this workspace (and below) alone. An
    /// "always for this project" answer in a folder that is not trusted is written so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
}

impl RuleEntry {
    /// What the rule is about, as `superpi permissions remove` takes it: its pattern, host,
    /// or tool.
    pub fn pattern(&self) -> &str {
        self.command.as_deref().or(self.path.as_deref()).or(self.host.as_deref()).or(self.tool.as_deref()).unwrap_or("")
    }
}

/// Which file a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleSource {
    User,
    Workspace,
}

/// A rules file longer than this is ignored.
pub const MAX_RULES_FILE_BYTES: u64 = 1 << 20;

/// A rules file as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RulesFile {
    /// The user's file only: folders whose workspace files may allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trusted_folders: Vec<PathBuf>,
    /// The user's file only: for each workspace, the sha256 of its rules file as the user
    /// accepted it (`superpi permissions trust`) or the kernel last wrote it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rules_sha256: BTreeMap<PathBuf, String>,
    /// The user's file only: the sha256 of each agent backend's configuration file in a
    /// workspace (`WORKSPACE/.gemini/settings.json`, ...) as the user accepted it
    /// (`superpi permissions trust`), by the file's absolute path (`backend_files.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_files_sha256: BTreeMap<PathBuf, String>,
    #[serde(default)]
    pub rules: Vec<RuleEntry>,
}

/// What reading a rules file found.
#[derive(Debug)]
pub(crate) enum Read {
    Missing,
    /// Not used, and why (a sentence about the file).
    Ignored(String),
    Present {
        file: RulesFile,
        sha256: String,
    },
}

/// A rules file that is not used, or whose `allow` rules are not: what and the fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileNotice {
    pub file: PathBuf,
    pub source: RuleSource,
    pub what: String,
    pub fix: String,
}

impl FileNotice {
    /// One line: the file, what is wrong and what to do.
    pub fn message(&self) -> String {
        format!("{} {}: {}", self.file.display(), self.what, self.fix)
    }
}

/// A rules file's content and digest, when it is there and read; an ignored one is a notice.
pub(crate) fn present(
    path: &Path,
    source: RuleSource,
    notices: &mut Vec<FileNotice>,
) -> Result<Option<(RulesFile, String)>, ConfigError> {
    match read(path, source)? {
        Read::Missing => Ok(None),
        Read::Present { file, sha256 } => Ok(Some((file, sha256))),
        Read::Ignored(why) => {
            let fix = "superpi ignores it: make it a file of your own (or remove it)".to_string();
            notices.push(FileNotice { file: path.to_path_buf(), source, what: why, fix });
            Ok(None)
        }
    }
}

/// Whether `uid` is this process's user or root: whose files are configuration.
pub(crate) fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

/// The sha256 of `bytes`, in hex.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// What reading a configuration file's bytes found.
#[derive(Debug)]
pub(crate) enum Bytes {
    Missing,
    /// Not used, and why (a sentence about the file).
    Ignored(String),
    Present(Vec<u8>),
}

/// Reads the bytes of a configuration file superpi trusts only when it is the user's: a
/// workspace's is opened without following a link; the user's may be a link (to a dotfiles
/// repository), and what it leads to is checked. Owned by another user (neither root), not a
/// regular file, or past [`MAX_RULES_FILE_BYTES`]: ignored.
pub(crate) fn read_bytes(path: &Path, source: RuleSource) -> Result<Bytes, ConfigError> {
    let mut flags = OFlag::O_NONBLOCK.bits();
    if source == RuleSource::Workspace {
        flags |= OFlag::O_NOFOLLOW.bits();
    }
    let read_error = |source| ConfigError::Read { path: path.to_path_buf(), source };
    let mut file = match std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Bytes::Missing),
        Err(e) if e.raw_os_error() == Some(Errno::ELOOP as i32) => {
            return Ok(Bytes::Ignored("is a symbolic link, which superpi does not follow".into()));
        }
        Err(e) => return Err(read_error(e)),
    };
    let meta = file.metadata().map_err(read_error)?;
    if !meta.is_file() {
        return Ok(Bytes::Ignored("is not a regular file".into()));
    }
    if !trusted_owner(meta.uid()) {
        return Ok(Bytes::Ignored(format!("is owned by another user (uid {}), neither you nor root", meta.uid())));
    }
    if meta.len() > MAX_RULES_FILE_BYTES {
        return Ok(Bytes::Ignored(format!("is larger than {MAX_RULES_FILE_BYTES} bytes")));
    }
    let mut bytes = Vec::new();
    (&mut file).take(MAX_RULES_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > MAX_RULES_FILE_BYTES {
        return Ok(Bytes::Ignored(format!("is larger than {MAX_RULES_FILE_BYTES} bytes")));
    }
    Ok(Bytes::Present(bytes))
}

/// Reads the rules file at `path` ([`read_bytes`]) and parses it.
pub(crate) fn read(path: &Path, source: RuleSource) -> Result<Read, ConfigError> {
    let bytes = match read_bytes(path, source)? {
        Bytes::Missing => return Ok(Read::Missing),
        Bytes::Ignored(why) => return Ok(Read::Ignored(why)),
        Bytes::Present(bytes) => bytes,
    };
    let sha256 = sha256(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| ConfigError::invalid(path, "", "is not UTF-8 text"))?;
    Ok(Read::Present { file: parse(&text, path, source)?, sha256 })
}

fn parse(text: &str, path: &Path, source: RuleSource) -> Result<RulesFile, ConfigError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let file: RulesFile = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| ConfigError::invalid(path, crate::error::key_path(e.path()), e.inner().to_string()))?;
    de.end().map_err(|e| ConfigError::invalid(path, "", e.to_string()))?;
    if source == RuleSource::Workspace {
        if !file.trusted_folders.is_empty() {
            return Err(ConfigError::invalid(
                path,
                "trusted_folders",
                "only your own permissions.json can trust folders",
            ));
        }
        if !file.rules_sha256.is_empty() {
            return Err(ConfigError::invalid(path, "rules_sha256", "only your own permissions.json accepts files"));
        }
        if !file.backend_files_sha256.is_empty() {
            let key = "backend_files_sha256";
            return Err(ConfigError::invalid(path, key, "only your own permissions.json accepts files"));
        }
    }
    if let Some(i) = file.trusted_folders.iter().position(|f| !f.is_absolute()) {
        return Err(ConfigError::invalid(path, format!("trusted_folders[{i}]"), "must be an absolute path"));
    }
    if let Some(key) = file.rules_sha256.keys().find(|f| !f.is_absolute()) {
        return Err(ConfigError::invalid(path, format!("rules_sha256.{}", key.display()), "must be an absolute path"));
    }
    if let Some(key) = file.backend_files_sha256.keys().find(|f| !f.is_absolute()) {
        let key = format!("backend_files_sha256.{}", key.display());
        return Err(ConfigError::invalid(path, key, "must be an absolute path"));
    }
    Ok(file)
}

/// The file's content, or empty when it is missing; an ignored file is an error (superpi does
/// not write over a file it would not read).
pub(crate) fn read_for_edit(path: &Path, source: RuleSource) -> Result<(RulesFile, Option<String>), ConfigError> {
    match read(path, source)? {
        Read::Missing => Ok((RulesFile::default(), None)),
        Read::Present { file, sha256 } => Ok((file, Some(sha256))),
        Read::Ignored(why) => Err(ConfigError::invalid(path, "", format!("{why}; superpi does not edit it"))),
    }
}

/// Writes `file` to `path` whole; returns the sha256 of the bytes written. A workspace's
/// `.superpi` is made if missing and must be a directory of the user's or root's.
pub(crate) fn write(path: &Path, file: &RulesFile, source: RuleSource) -> Result<String, ConfigError> {
    let write_error = |e: Errno| ConfigError::Write { path: path.to_path_buf(), source: std::io::Error::from(e) };
    let text = serde_json::to_string_pretty(file).map_err(|e| ConfigError::invalid(path, "", e.to_string()))? + "\n";
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(ConfigError::invalid(path, "", "not a file's path"));
    };
    let dir_fd = match source {
        // The workspace root is the conversation's; below it, nothing is followed.
        RuleSource::Workspace => {
            let (Some(root), Some(dot)) = (dir.parent(), dir.file_name()) else {
                return Err(ConfigError::invalid(path, "", "not a file's path"));
            };
            let root = open(root, OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty()).map_err(write_error)?;
            match mkdirat(&root, dot, Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(write_error(e)),
            }
            let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            openat(&root, dot, flags, Mode::empty()).map_err(write_error)?
        }
        RuleSource::User => {
            std::fs::create_dir_all(dir).map_err(|e| ConfigError::Write { path: path.to_path_buf(), source: e })?;
            open(dir, OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty()).map_err(write_error)?
        }
    };
    if !fstat(&dir_fd).is_ok_and(|s| trusted_owner(s.st_uid)) {
        return Err(ConfigError::invalid(
            path,
            "",
            "its directory is owned by another user; superpi does not write there",
        ));
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let temp = format!(".{}.{}.{nanos}.tmp", name.to_string_lossy(), std::process::id());
    let written =
        write_new(&dir_fd, &temp, text.as_bytes()).and_then(|()| renameat(&dir_fd, temp.as_str(), &dir_fd, name));
    if let Err(e) = written {
        let _ = nix::unistd::unlinkat(&dir_fd, temp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
        return Err(write_error(e));
    }
    Ok(sha256(text.as_bytes()))
}

/// Creates `name` beneath `dir` (never an existing file or link) holding `bytes`.
fn write_new(dir: &OwnedFd, name: &str, bytes: &[u8]) -> Result<(), Errno> {
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(dir, name, flags, Mode::from_bits_truncate(0o644))?;
    let mut file = File::from(fd);
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(Errno::EIO as i32)))
}
