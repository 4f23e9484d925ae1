//! The settings' `hooks` section: the user's commands run at four points of a turn (before a
//! tool call, after one, before a model request, after a turn), each with a time limit, a tool
//! hook only for the tools it names. The user's file only: a workspace file cannot hold it (a
//! cloned repository must not run commands by its settings). What a hook is given and how it
//! refuses a call is the kernel's (`kernel/src/hooks.rs`); this is the configuration.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::error::ConfigError;

/// How long a hook may run when its entry does not say, and at most.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_TIMEOUT_SECS: u64 = 600;

/// Where in a turn a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookPoint {
    /// Before a tool call is decided and run: the hook may refuse it.
    BeforeTool,
    /// After a tool call ran, with its result.
    AfterTool,
    /// Before each model request of a turn.
    BeforeRequest,
    /// After a turn ended (completed, failed or cancelled).
    AfterTurn,
    /// Before the first turn a kernel runs of a conversation (new, or loaded again).
    SessionStart,
}

impl HookPoint {
    pub const ALL: [HookPoint; 5] = [
        HookPoint::BeforeTool,
        HookPoint::AfterTool,
        HookPoint::BeforeRequest,
        HookPoint::AfterTurn,
        HookPoint::SessionStart,
    ];

    /// Its key in the settings and its name in a hook's payload.
    pub fn as_str(self) -> &'static str {
        match self {
            HookPoint::BeforeTool => "before_tool",
            HookPoint::AfterTool => "after_tool",
            HookPoint::BeforeRequest => "before_request",
            HookPoint::AfterTurn => "after_turn",
            HookPoint::SessionStart => "session_start",
        }
    }

    fn about_tools(self) -> bool {
        matches!(self, HookPoint::BeforeTool | HookPoint::AfterTool)
    }
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// Its name in notices and refusals: the entry's `name`, else `POINT[INDEX]`.
    pub name: String,
    /// A shell command line, run with `/bin/sh -c`.
    pub command: String,
    /// The tools it is about (a tool hook): exact names, or a prefix ending in `*`; empty:
    /// every tool.
    pub tools: Vec<String>,
    /// How long it may run.
    pub timeout: Duration,
}

impl Hook {
    /// Whether this hook is about the tool `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.tools.is_empty()
            || self.tools.iter().any(|t| match t.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => t == name,
            })
    }
}

/// The hooks of each point, in the order the file lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookSettings {
    pub before_tool: Vec<Hook>,
    pub after_tool: Vec<Hook>,
    pub before_request: Vec<Hook>,
    pub after_turn: Vec<Hook>,
    pub session_start: Vec<Hook>,
}

impl HookSettings {
    /// The hooks of `point`.
    pub fn at(&self, point: HookPoint) -> &[Hook] {
        match point {
            HookPoint::BeforeTool => &self.before_tool,
            HookPoint::AfterTool => &self.after_tool,
            HookPoint::BeforeRequest => &self.before_request,
            HookPoint::AfterTurn => &self.after_turn,
            HookPoint::SessionStart => &self.session_start,
        }
    }

    /// The hooks of a tool point that are about the tool `name`.
    pub fn for_tool(&self, point: HookPoint, name: &str) -> Vec<Hook> {
        self.at(point).iter().filter(|h| h.matches(name)).cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        HookPoint::ALL.iter().all(|p| self.at(*p).is_empty())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHooks {
    before_tool: Option<Vec<RawHook>>,
    after_tool: Option<Vec<RawHook>>,
    before_request: Option<Vec<RawHook>>,
    after_turn: Option<Vec<RawHook>>,
    session_start: Option<Vec<RawHook>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    name: Option<String>,
    command: String,
    tools: Option<Vec<String>>,
    timeout_secs: Option<u64>,
}

/// The `hooks` section of the user's file; `path` names it in errors.
pub(crate) fn hook_settings(raw: RawHooks, path: &Path) -> Result<HookSettings, ConfigError> {
    let mut hooks = HookSettings::default();
    let lists = [
        (HookPoint::BeforeTool, raw.before_tool),
        (HookPoint::AfterTool, raw.after_tool),
        (HookPoint::BeforeRequest, raw.before_request),
        (HookPoint::AfterTurn, raw.after_turn),
        (HookPoint::SessionStart, raw.session_start),
    ];
    for (point, list) in lists {
        let parsed = list
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, raw)| hook(point, i, raw, path))
            .collect::<Result<Vec<_>, _>>()?;
        match point {
            HookPoint::BeforeTool => hooks.before_tool = parsed,
            HookPoint::AfterTool => hooks.after_tool = parsed,
            HookPoint::BeforeRequest => hooks.before_request = parsed,
            HookPoint::AfterTurn => hooks.after_turn = parsed,
            HookPoint::SessionStart => hooks.session_start = parsed,
        }
    }
    Ok(hooks)
}

fn hook(point: HookPoint, index: usize, raw: RawHook, path: &Path) -> Result<Hook, ConfigError> {
    let key = format!("hooks.{}[{index}]", point.as_str());
    if raw.command.trim().is_empty() {
        return Err(ConfigError::invalid(path, format!("{key}.command"), "the command is empty"));
    }
    let timeout = match raw.timeout_secs {
        None => DEFAULT_HOOK_TIMEOUT,
        Some(secs) if (1..=MAX_TIMEOUT_SECS).contains(&secs) => Duration::from_secs(secs),
        Some(secs) => {
            return Err(ConfigError::invalid(
                path,
                format!("{key}.timeout_secs"),
                format!("{secs} is not between 1 and {MAX_TIMEOUT_SECS}"),
            ));
        }
    };
    let tools = raw.tools.unwrap_or_default();
    if !tools.is_empty() && !point.about_tools() {
        return Err(ConfigError::invalid(
            path,
            format!("{key}.tools"),
            format!("a {} hook is about no tool; `tools` is for before_tool and after_tool", point.as_str()),
        ));
    }
    if let Some(bad) = tools.iter().find(|t| t.is_empty() || t.trim_end_matches('*').contains('*')) {
        return Err(ConfigError::invalid(
            path,
            format!("{key}.tools"),
            format!("`{bad}` is not a tool name or a prefix ending in `*`"),
        ));
    }
    let name = match raw.name {
        Some(name) if !name.trim().is_empty() => name,
        _ => format!("{}[{index}]", point.as_str()),
    };
    Ok(Hook { name, command: raw.command, tools, timeout })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<HookSettings, ConfigError> {
        let raw: RawHooks = serde_json::from_str(json).unwrap();
        hook_settings(raw, Path::new("/c/settings.json"))
    }

    #[test]
    fn hooks_parse_with_names_defaults_and_tool_matching() {
        let hooks = parse(
            r#"{"before_tool": [{"command": "check", "tools": ["bash", "mcp__*"]}],
                "after_turn": [{"name": "notify", "command": "notify-send done", "timeout_secs": 3}]}"#,
        )
        .unwrap();
        let check = &hooks.before_tool[0];
        assert_eq!(
            check,
            &Hook {
                name: "before_tool[0]".into(),
                command: "check".into(),
                tools: vec!["bash".into(), "mcp__*".into()],
                timeout: DEFAULT_HOOK_TIMEOUT,
            }
        );
        assert!(check.matches("bash") && check.matches("mcp__fs__read") && !check.matches("read"));
        assert_eq!(hooks.for_tool(HookPoint::BeforeTool, "write").len(), 0);
        assert_eq!(hooks.after_turn[0].name, "notify");
        assert_eq!(hooks.after_turn[0].timeout, Duration::from_secs(3));
        assert!(hooks.after_tool.is_empty() && !hooks.is_empty());
    }

    #[test]
    fn bad_hooks_name_their_key() {
        let cases = [
            (r#"{"before_tool": [{"command": " "}]}"#, "hooks.before_tool[0].command"),
            (r#"{"after_tool": [{"command": "x", "timeout_secs": 0}]}"#, "hooks.after_tool[0].timeout_secs"),
            (r#"{"after_turn": [{"command": "x", "tools": ["bash"]}]}"#, "hooks.after_turn[0].tools"),
            (
                r#"{"before_tool": [{"command": "x"}, {"command": "y", "tools": ["a*b"]}]}"#,
                "hooks.before_tool[1].tools",
            ),
        ];
        for (json, key) in cases {
            let err = parse(json).unwrap_err().to_string();
            assert!(err.contains(key), "{json}: {err}");
        }
    }

    #[test]
    fn a_workspace_file_cannot_hold_hooks() {
        let file = Path::new("/w/.superpi/settings.json");
        let err = crate::Settings::default().tightened_by_workspace_file(r#"{"hooks": {}}"#, file).unwrap_err();
        assert!(err.to_string().contains("hooks"), "{err}");
    }
}
