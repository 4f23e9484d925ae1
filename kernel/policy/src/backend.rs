//! Agent backends as data: the other agent programs (Codex, Claude Code, Gemini CLI,
//! OpenCode) that a harness may name instead of a model. How they run is superpi-backends'.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An agent program that runs a turn with its own tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    Codex,
    ClaudeCode,
    GeminiCli,
    Opencode,
}

impl BackendKind {
    pub const ALL: [BackendKind; 4] =
        [BackendKind::ClaudeCode, BackendKind::Codex, BackendKind::Opencode, BackendKind::GeminiCli];

    /// The id: `codex`, `claude-code`, `gemini-cli`, `opencode` (also its built-in harness's).
    pub fn id(self) -> &'static str {
        match self {
            BackendKind::Codex => "codex",
            BackendKind::ClaudeCode => "claude-code",
            BackendKind::GeminiCli => "gemini-cli",
            BackendKind::Opencode => "opencode",
        }
    }

    /// The product's name, for people.
    pub fn title(self) -> &'static str {
        match self {
            BackendKind::Codex => "Codex",
            BackendKind::ClaudeCode => "Claude Code",
            BackendKind::GeminiCli => "Gemini CLI",
            BackendKind::Opencode => "OpenCode",
        }
    }

    /// The program's name as its npm package installs it.
    pub fn program(self) -> &'static str {
        match self {
            BackendKind::Codex => "codex",
            BackendKind::ClaudeCode => "claude",
            BackendKind::GeminiCli => "gemini",
            BackendKind::Opencode => "opencode",
        }
    }
}

impl BackendKind {
    /// The files and folders of a workspace (relative to it) the program reads as its own
    /// configuration and cannot be told to ignore: Gemini CLI's whole `.gemini` folder (settings
    /// with hooks, MCP servers and which hooks are off, `.env`, policies that allow tools,
    /// custom commands that run `!{shell}`, subagents, skills, extensions: 0.61 reads each from
    /// the workspace); OpenCode's project configuration, which 1.18.33 reads (plugins, policies)
    /// despite `OPENCODE_DISABLE_PROJECT_CONFIG`. A tool call may write them, so a turn runs
    /// beside them only while each is the one the user accepted (`backend_files.rs`). Claude
    /// Code is told to ignore its own (`--setting-sources user`); Codex is told its workspace
    /// is untrusted (superpi-backends' `codex::args`), so it ignores `.codex/` config, hooks
    /// and rules.
    pub fn workspace_config(self) -> &'static [&'static str] {
        match self {
            BackendKind::GeminiCli => &[".gemini"],
            BackendKind::Opencode => &["opencode.json", "opencode.jsonc", ".opencode"],
            BackendKind::ClaudeCode | BackendKind::Codex => &[],
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A backend id that is none of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend `{0}` (known: codex, claude-code, gemini-cli, opencode)")]
pub struct UnknownBackend(pub String);

impl FromStr for BackendKind {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BackendKind::ALL.into_iter().find(|k| k.id() == s).ok_or_else(|| UnknownBackend(s.to_string()))
    }
}
