//! The settings' `checkpoints` section: whether a turn records a checkpoint of its workspace
//! before its first write (so it can be undone), and whether a turn's changes are committed to
//! the workspace's repository at its end. The user's file only: a cloned repository must not
//! make superpi commit on its branch.

use serde::Deserialize;
use std::path::Path;

use crate::error::ConfigError;

/// The prefix of an auto-commit's message unless the settings name one.
pub const DEFAULT_COMMIT_PREFIX: &str = "superpi: ";

/// Checkpoints and auto-commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointSettings {
    /// A turn that writes records the workspace first (on by default).
    pub enabled: bool,
    /// A turn's changes are committed on the workspace repository's current branch at its end
    /// (off by default).
    pub auto_commit: bool,
    /// What an auto-commit's message starts with (the turn's prompt follows).
    pub commit_prefix: String,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings { enabled: true, auto_commit: false, commit_prefix: DEFAULT_COMMIT_PREFIX.to_string() }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCheckpoints {
    enabled: Option<bool>,
    auto_commit: Option<bool>,
    commit_prefix: Option<String>,
}

/// The `checkpoints` section of the user's file, checked; `path` names the file in errors.
pub(crate) fn checkpoint_settings(raw: RawCheckpoints, path: &Path) -> Result<CheckpointSettings, ConfigError> {
    let defaults = CheckpointSettings::default();
    let mut settings = CheckpointSettings {
        enabled: raw.enabled.unwrap_or(defaults.enabled),
        auto_commit: raw.auto_commit.unwrap_or(defaults.auto_commit),
        commit_prefix: defaults.commit_prefix,
    };
    if let Some(prefix) = raw.commit_prefix {
        if prefix.contains(['\n', '\0']) || prefix.chars().count() > 72 {
            return Err(ConfigError::invalid(
                path,
                "checkpoints.commit_prefix",
                "must be one line of at most 72 characters",
            ));
        }
        settings.commit_prefix = prefix;
    }
    if settings.auto_commit && !settings.enabled {
        return Err(ConfigError::invalid(
            path,
            "checkpoints.auto_commit",
            "commits what a turn changed, which the checkpoints find: it needs `enabled` left true",
        ));
    }
    Ok(settings)
}
