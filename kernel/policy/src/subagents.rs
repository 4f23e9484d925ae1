//! The settings' `subagents` section: how deep subagents may go, how many of one call's
//! children run at once, and how long a child may take. The user's file only: a repository's
//! settings must not let its agent fan out wider or run longer.

use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

use crate::error::ConfigError;

/// The deepest `max_depth` may be set: each level multiplies the work a prompt can start.
const MAX_DEPTH_LIMIT: u32 = 5;
/// The most children of one call that `max_parallel` may let run at once.
const MAX_PARALLEL_LIMIT: usize = 16;
/// The longest `timeout_secs` may be: a day.
const MAX_TIMEOUT_SECS: u64 = 24 * 3600;

/// Limits of the `subagent` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentSettings {
    /// How many subagent levels a person's conversation may start (2: a subagent may start
    /// subagents of its own, theirs may not).
    pub max_depth: u32,
    /// How many of one call's children run at once; the rest wait for a free place.
    pub max_parallel: usize,
    /// How long a child may run before it is cancelled as timed out, unless the call asks for
    /// less (or more, up to a day).
    pub timeout: Duration,
}

impl Default for SubagentSettings {
    fn default() -> Self {
        SubagentSettings { max_depth: 2, max_parallel: 4, timeout: Duration::from_secs(120) }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSubagents {
    max_depth: Option<u32>,
    max_parallel: Option<usize>,
    timeout_secs: Option<u64>,
}

/// The `subagents` section of the user's file, checked; `path` names the file in errors.
pub(crate) fn subagent_settings(raw: RawSubagents, path: &Path) -> Result<SubagentSettings, ConfigError> {
    let defaults = SubagentSettings::default();
    let max_depth = raw.max_depth.unwrap_or(defaults.max_depth);
    if !(1..=MAX_DEPTH_LIMIT).contains(&max_depth) {
        return Err(ConfigError::invalid(path, "subagents.max_depth", format!("must be 1 to {MAX_DEPTH_LIMIT}")));
    }
    let max_parallel = raw.max_parallel.unwrap_or(defaults.max_parallel);
    if !(1..=MAX_PARALLEL_LIMIT).contains(&max_parallel) {
        return Err(ConfigError::invalid(path, "subagents.max_parallel", format!("must be 1 to {MAX_PARALLEL_LIMIT}")));
    }
    let timeout = match raw.timeout_secs {
        None => defaults.timeout,
        Some(secs @ 1..=MAX_TIMEOUT_SECS) => Duration::from_secs(secs),
        Some(_) => {
            return Err(ConfigError::invalid(
                path,
                "subagents.timeout_secs",
                format!("must be 1 to {MAX_TIMEOUT_SECS} seconds"),
            ));
        }
    };
    Ok(SubagentSettings { max_depth, max_parallel, timeout })
}

/// The longest timeout a call may ask for.
pub fn max_timeout() -> Duration {
    Duration::from_secs(MAX_TIMEOUT_SECS)
}
