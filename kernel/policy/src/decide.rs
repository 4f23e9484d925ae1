//! The decision for one tool call: allow (with or without network), ask a person, or deny.
//!
//! [`decide`] is a pure function of [`CallFacts`]. The rules, in the order they apply:
//!
//! 1. A tool in `permissions.deny_tools`, or rejected for the session, is denied.
//! 2. A tool that acts in the workspace needs one; its path arguments must stay inside it
//!    (unless `allow_outside_workspace`), and those whose contents it reads or writes must not
//!    name a protected path.
//! 3. A shell command (the tool's `shell` argument) matching `permissions.deny` (any part of
//!    it) is denied; a part rejected for the session is denied.
//! 4. The network policy: `deny` refuses tools with network effects; `allowlist` refuses them
//!    unless their `url` host is listed. A call that asks for network through the tool's
//!    `network_arg` counts as `net_write` (a shell command's host cannot be checked, so the
//!    allow list refuses it); a shell command that does not ask runs without network unless
//!    `network.shell_default` is `allow`. A shell line of known read-only commands
//!    ([`crate::read_only`]) that does not ask for network is then allowed, without it, in
//!    every mode.
//! 5. The mode, by the tool's effects (the reference table): `plan` lets reads (and network
//!    reads) through and blocks the rest; `accept-edits` lets reads and state writes through,
//!    file edits (tools whose facts say `edits`), allow-listed shell commands and allowed
//!    tools, and asks about the rest; `auto` lets everything through.
//!
//! Everything about the tool comes from its facts ([`ToolDef`]); no rule names a tool.
//!
//! Denials of rules 1–4 and of `plan` are never askable. A decision never loosens as the mode
//! rises (tested over the whole matrix).

use std::path::Path;

use serde_json::Value;
use superpi_proto::tool::{Effect, ToolDef};

use crate::mode::Mode;
use crate::net::url_host;
use crate::net::{NetworkPolicy, ShellNetwork};
use crate::paths::{PathProblem, normalize, protected};
use crate::pattern::DenyMatch;
use crate::read_only;
use crate::settings::Settings;
use crate::shell::{self, SimpleCommand};
pub use crate::verdict::{Answer, Decision, Overrides, Remember, Risk, Rule};

/// Everything a decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    /// The tool's facts: its name, effects, path and shell arguments, whether it edits.
    pub tool: &'a ToolDef,
    pub arguments: &'a Value,
    pub mode: Mode,
    /// The workspace root (absolute); `None` for a conversation without a workspace.
    pub workspace: Option<&'a Path>,
    pub settings: &'a Settings,
    pub overrides: &'a Overrides,
    /// superpi's own directories (config, data, runtime): refused to every path argument.
    pub private_dirs: &'a [std::path::PathBuf],
    /// Directories path arguments may name besides the workspace, each with its rules
    /// (an editor's additional directories).
    pub extra_roots: &'a [std::path::PathBuf],
}

/// The decision for one call. See the module documentation for the rules.
pub fn decide(f: &CallFacts<'_>) -> Decision {
    let p = &f.settings.permissions;
    let deny = |reason: String, rule: Rule| Decision::Deny { reason, rule };
    let name = f.tool.name.as_str();
    let asks_network = f.tool.asks_network(f.arguments);
    let mut effects = f.tool.effects.clone();
    if asks_network && !effects.contains(&Effect::NetWrite) {
        effects.push(Effect::NetWrite);
    }
    let effects = effects.as_slice();

    // 1. Tools refused outright.
    if p.deny_tools.contains(name) {
        return deny(format!("the tool `{name}` is refused by permissions.deny_tools"), Rule::DeniedTool);
    }
    if f.overrides.deny_tools.contains(name) {
        return deny(format!("the tool `{name}` was rejected for this session"), Rule::SessionReject);
    }

    // 2. The workspace and protected paths.
    if let Some(refusal) = check_paths(f) {
        return refusal;
    }

    // 3. Shell commands: the deny list and the session's rejections.
    let shell = f.tool.shell.as_deref().map(|arg| ShellCheck::new(f, arg));
    if let Some(refusal) = shell.as_ref().and_then(|sh| sh.refusal.clone()) {
        return refusal;
    }

    // 4. The network policy.
    let net_effect = effects.iter().any(|e| matches!(e, Effect::NetRead | Effect::NetWrite));
    if net_effect {
        match f.settings.network.policy {
            NetworkPolicy::Allow => {}
            NetworkPolicy::Deny => {
                return deny(format!("network access is refused by the network policy (`{name}`)"), Rule::Network);
            }
            NetworkPolicy::Allowlist if asks_network => {
                return deny(
                    format!("`{name}` asks for network, which network.allow_hosts cannot check (policy `allowlist`)"),
                    Rule::Network,
                );
            }
            NetworkPolicy::Allowlist => match f.arguments.get("url").and_then(Value::as_str).and_then(url_host) {
                Some(host) if f.settings.host_allowed(&host) => {}
                Some(host) => {
                    return deny(format!("the host `{host}` is not in network.allow_hosts"), Rule::Network);
                }
                None => {
                    return deny(
                        format!("the network allow list needs an http(s) `url` argument to check (`{name}`)"),
                        Rule::Network,
                    );
                }
            },
        }
    }
    // A line of known read-only commands is decided like a read tool, without network.
    if !asks_network && shell.as_ref().is_some_and(|sh| sh.read_only) {
        return Decision::Allow { network: false };
    }
    let exec = effects.contains(&Effect::Exec) || shell.is_some();
    let shell_default = f.settings.network.shell_default == ShellNetwork::Allow;
    // A tool that cannot ask for network (no `network_arg`) keeps it by default.
    let offline_unless_asked = f.tool.network_arg.is_some() && !shell_default;
    let network = net_effect || (exec && !offline_unless_asked && f.settings.network.policy == NetworkPolicy::Allow);
    let allow = Decision::Allow { network };

    // 5. The mode.
    let class = Class::of(effects);
    match f.mode {
        Mode::Plan => match class {
            Class::Read => allow,
            Class::NetRead if p.network_in_plan_mode => allow,
            Class::NetRead => deny(
                format!("plan mode does not reach the network here (network_in_plan_mode is off): `{name}`"),
                Rule::Mode,
            ),
            Class::StateWrite | Class::SideEffect => {
                deny(format!("plan mode is read-only: `{name}` would {}", class.what()), Rule::Mode)
            }
        },
        Mode::AcceptEdits => match class {
            Class::Read | Class::NetRead | Class::StateWrite => allow,
            Class::SideEffect => {
                let tool_allowed = p.allow_tools.contains(name) || f.overrides.allow_tools.contains(name);
                if asks_network && !tool_allowed {
                    // The allow list says nothing about network: only an answer for this very
                    // line with network (or for the whole tool) lets it through.
                    let remember = match &shell {
                        Some(sh) => Remember::Commands(vec![sh.network_key.clone()]),
                        None => Remember::Tool(name.to_string()),
                    };
                    let answered =
                        shell.as_ref().is_some_and(|sh| f.overrides.allow_commands.contains(&sh.network_key));
                    if !answered {
                        return Decision::Ask {
                            reason: format!("accept-edits mode asks before `{name}` reaches the network"),
                            risk: Risk::High,
                            network,
                            remember,
                        };
                    }
                }
                if let Some(sh) = &shell {
                    return sh.verdict(tool_allowed, true, network);
                }
                if f.tool.edits || p.allow_tools.contains(name) || f.overrides.allow_tools.contains(name) {
                    return allow;
                }
                Decision::Ask {
                    reason: format!("accept-edits mode asks before `{name}` runs: it would {}", class.what()),
                    risk: risk(effects),
                    network,
                    remember: Remember::Tool(name.to_string()),
                }
            }
        },
        Mode::Auto => match &shell {
            Some(sh) => sh.verdict(true, false, network),
            None => allow,
        },
    }
}

/// The effect classes of the reference table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Only `read`.
    Read,
    /// `net_read`, with or without `read`.
    NetRead,
    /// `state_write`, with or without `read`/`net_read`.
    StateWrite,
    /// `fs_write`, `exec`, `net_write`, or no effects stated.
    SideEffect,
}

impl Class {
    fn of(effects: &[Effect]) -> Class {
        if effects.is_empty() || effects.iter().any(|e| matches!(e, Effect::FsWrite | Effect::Exec | Effect::NetWrite))
        {
            Class::SideEffect
        } else if effects.contains(&Effect::StateWrite) {
            Class::StateWrite
        } else if effects.contains(&Effect::NetRead) {
            Class::NetRead
        } else {
            Class::Read
        }
    }

    fn what(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::NetRead => "read from the network",
            Class::StateWrite => "change the conversation's state",
            Class::SideEffect => "write files, run commands or send to the network",
        }
    }
}

fn risk(effects: &[Effect]) -> Risk {
    if effects.is_empty() || effects.iter().any(|e| matches!(e, Effect::Exec | Effect::NetWrite)) {
        Risk::High
    } else if effects.contains(&Effect::FsWrite) {
        Risk::Medium
    } else {
        Risk::Low
    }
}

/// Rule 2: the workspace boundary and protected paths, for tools that act in the workspace
/// or name paths.
fn check_paths(f: &CallFacts<'_>) -> Option<Decision> {
    if !f.tool.workspace && f.tool.paths.is_empty() {
        return None;
    }
    let Some(root) = f.workspace else {
        return Some(Decision::Deny {
            reason: format!("`{}` needs a workspace and this conversation has none", f.tool.name),
            rule: Rule::Workspace,
        });
    };
    let root = crate::paths::lexical(root);
    for (access, arg) in f.tool.path_values(f.arguments) {
        let Some(arg) = arg else {
            return Some(Decision::Deny {
                reason: format!("`{}` was given a path that is not a string", f.tool.name),
                rule: Rule::Workspace,
            });
        };
        let path = match normalize(arg, Some(&root)) {
            Ok(path) => path,
            Err(problem) => {
                let why = match problem {
                    PathProblem::HomeRelative => "a home-relative path is outside the workspace",
                    PathProblem::NoWorkspace => "a relative path needs a workspace",
                    PathProblem::Malformed => "the path is malformed",
                };
                return Some(Decision::Deny { reason: format!("`{arg}`: {why}"), rule: Rule::Workspace });
            }
        };
        if let Some(dir) = f.private_dirs.iter().find(|dir| path.starts_with(dir)) {
            return Some(Decision::Deny {
                reason: format!("`{arg}` is inside superpi's own directory {}", dir.display()),
                rule: Rule::ProtectedPath,
            });
        }
        // The root the path is inside: the workspace, or one of the extra roots.
        let within = match f.extra_roots.iter().find(|extra| path.starts_with(extra)) {
            Some(extra) if !path.starts_with(&root) => extra.clone(),
            _ => root.clone(),
        };
        if !path.starts_with(&within) && !f.settings.permissions.allow_outside_workspace {
            return Some(Decision::Deny {
                reason: format!("`{arg}` is outside the workspace {}", root.display()),
                rule: Rule::Workspace,
            });
        }
        // Listing names or working in a directory reads no contents: protected paths do not
        // apply (listing bodies skip hidden files anyway), the workspace boundary does.
        let why = if access.touches_contents() {
            protected(&path, Some(&within), &f.settings.permissions.protected_paths)
        } else {
            None
        };
        if let Some(why) = why {
            return Some(Decision::Deny {
                reason: format!("`{arg}` is a protected path ({why})"),
                rule: Rule::ProtectedPath,
            });
        }
    }
    None
}

/// What the deny and allow lists say about a shell call.
struct ShellCheck {
    /// A never-askable refusal (deny list, session rejection).
    refusal: Option<Decision>,
    /// The parts that run without asking in accept-edits only if listed.
    unlisted: Vec<String>,
    /// Parts a deny pattern may match once expanded: asked about in every mode but plan.
    doubtful: Vec<String>,
    /// Why the line could not be read, when it could not.
    unsure: Option<String>,
    /// Every command is a known read-only one and none may expand into a denied one.
    read_only: bool,
    /// What an answer about this line run with network remembers (never a plain command's
    /// key, so allowing a command does not allow it network).
    network_key: String,
}

impl ShellCheck {
    fn new(f: &CallFacts<'_>, arg: &str) -> ShellCheck {
        let p = &f.settings.permissions;
        let line = f.arguments.get(arg).and_then(Value::as_str).unwrap_or("");
        let network_key = format!("network: {line}");
        let mut check = ShellCheck {
            refusal: None,
            unlisted: Vec::new(),
            doubtful: Vec::new(),
            unsure: None,
            read_only: false,
            network_key,
        };
        if f.tool.asks_network(f.arguments) && f.overrides.deny_commands.contains(&check.network_key) {
            check.refusal = Some(Decision::Deny {
                reason: "this command with network was rejected for this session".into(),
                rule: Rule::SessionReject,
            });
            return check;
        }
        let deny = |reason: String, rule: Rule| Some(Decision::Deny { reason, rule });
        let cmds: Vec<SimpleCommand> = match shell::commands(line) {
            Ok(cmds) => cmds,
            Err(why) => {
                let fragments = shell::rough_fragments(line);
                if let Some(pat) = p.deny.iter().find(|pat| pat.appears_in(&fragments)) {
                    check.refusal = deny(
                        format!("the command may run `{}`, which permissions.deny refuses", pat.as_str()),
                        Rule::DenyList,
                    );
                } else if f.overrides.deny_commands.contains(line) {
                    check.refusal = deny("this command was rejected for this session".into(), Rule::SessionReject);
                } else if !f.overrides.allow_commands.contains(line) {
                    if !p.deny.is_empty() {
                        check.doubtful.push(line.to_string());
                    }
                    check.unlisted.push(line.to_string());
                }
                check.unsure = Some(why.0);
                return check;
            }
        };
        for cmd in &cmds {
            let text = cmd.text();
            let mut maybe = false;
            for pat in &p.deny {
                match pat.denies(&cmd.words) {
                    DenyMatch::Yes => {
                        check.refusal =
                            deny(format!("`{text}` is refused by permissions.deny `{}`", pat.as_str()), Rule::DenyList);
                        return check;
                    }
                    DenyMatch::Maybe => maybe = true,
                    DenyMatch::No => {}
                }
            }
            if f.overrides.deny_commands.contains(&text) {
                check.refusal = deny(format!("`{text}` was rejected for this session"), Rule::SessionReject);
                return check;
            }
            if f.overrides.allow_commands.contains(&text) {
                continue;
            }
            if maybe {
                check.doubtful.push(text.clone());
            }
            let listed = cmd.writes_no_file() && p.allow.iter().any(|pat| pat.allows(&cmd.words));
            if !listed && !check.unlisted.contains(&text) {
                check.unlisted.push(text);
            }
        }
        check.read_only = check.doubtful.is_empty() && read_only::line_is_read_only(&cmds);
        check
    }

    /// The verdict once rules 1–4 passed. `tool_allowed`: the whole shell tool is allowed
    /// (auto mode, or allow_tools); `listing`: the allow list decides (accept-edits).
    fn verdict(&self, tool_allowed: bool, listing: bool, network: bool) -> Decision {
        let (reason, keys) = if !self.doubtful.is_empty() {
            let reason = match &self.unsure {
                Some(why) => format!("the command cannot be checked against permissions.deny ({why})"),
                None => format!("`{}` may expand to a command that permissions.deny refuses", self.doubtful.join("; ")),
            };
            (reason, self.doubtful.clone())
        } else if listing && !tool_allowed && !self.unlisted.is_empty() {
            let reason = match &self.unsure {
                Some(why) => format!("the command cannot be checked against the allow list ({why})"),
                None => format!("`{}` is not in the allow list of shell commands", self.unlisted.join("; ")),
            };
            (reason, self.unlisted.clone())
        } else {
            return Decision::Allow { network };
        };
        Decision::Ask { reason, risk: Risk::High, network, remember: Remember::Commands(keys) }
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
