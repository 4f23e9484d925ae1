//! Errors of the configuration files this crate reads.

use std::fmt;
use std::path::{Path, PathBuf};

/// A configuration file that cannot be used. Every error names the file, and the key when
/// one is at fault, so a person can fix it without guessing.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// The file could not be written (a rules file superpi edits).
    #[error("{}: cannot write: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    /// The file was read but its content is wrong. `key` is the dotted path of the key at
    /// fault (`permissions.allow[2]`), empty when the file as a whole is malformed.
    #[error("{}", InvalidDisplay { path, key, message })]
    Invalid { path: PathBuf, key: String, message: String },
}

impl ConfigError {
    pub(crate) fn invalid(path: &Path, key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError::Invalid { path: path.to_path_buf(), key: key.into(), message: message.into() }
    }

    /// The file at fault.
    pub fn path(&self) -> &Path {
        match self {
            ConfigError::Read { path, .. } | ConfigError::Write { path, .. } | ConfigError::Invalid { path, .. } => {
                path
            }
        }
    }

    /// The key at fault, when one is.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } if !key.is_empty() => Some(key),
            _ => None,
        }
    }
}

struct InvalidDisplay<'a> {
    path: &'a Path,
    key: &'a str,
    message: &'a str,
}

impl fmt::Display for InvalidDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(f, "{}: key `{}`: {}", self.path.display(), self.key, self.message)
        }
    }
}

/// The dotted key path of a serde_path_to_error path ("" for the root).
pub(crate) fn key_path(path: &serde_path_to_error::Path) -> String {
    let text = path.to_string();
    if text == "." { String::new() } else { text }
}

/// 1-based line and column of a byte offset in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
