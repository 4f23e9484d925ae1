//! Permission rules that last beyond a conversation: `CONFIG_DIR/permissions.json` (the
//! user's, every project) and `WORKSPACE/.superpi/permissions.json` (one project's).
//!
//! A rule allows, asks about or denies calls: shell commands by a command pattern (the
//! settings' patterns, whose last word may also end in a glued `*`: `npm run test:*`), file
//! tools by a path glob relative to the workspace, tools that take a `url` by a host
//! (`docs.rs`, `*.github.com`), or a whole tool. The kernel reads the files at each decision
//! ([`PermissionRules::load`]), so an edit takes effect at the next call.
//!
//! What a rule may do depends on its file, as with settings: a workspace file can come from
//! anyone, so its `allow` rules apply only in a folder the user trusts (`trusted_folders` of
//! the user's file); its `ask` and `deny` rules always do. A rule only settles a question the
//! mode would ask (an `allow` turns an `Ask` into an `Allow`); it never lifts a refusal, so it
//! never raises a call past the mode ceiling of its caller.
//!
//! Writing rules (an "always for this project / for me" answer, `superpi permissions remove`)
//! lives in `permission_rules_edit.rs`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use superpi_proto::tool::ToolDef;

use crate::error::ConfigError;
use crate::net::{normalize_host, url_host, valid_host};
use crate::pattern::{CommandPattern, DenyMatch};
use crate::permission_rules_file::{FileNotice, present};
pub use crate::permission_rules_file::{RuleAction, RuleEntry, RuleSource};
use crate::settings::Settings;
use crate::shell;
use crate::verdict::{Decision, Remember, Risk, Rule};

/// The user's rules file in the config dir.
pub const USER_RULES_FILE: &str = "permissions.json";
/// A workspace's rules file, relative to its root.
pub const WORKSPACE_RULES_FILE: &str = ".superpi/permissions.json";

/// How a rule matches, read once.
#[derive(Debug, Clone)]
enum Matcher {
    Command(CommandPattern),
    Path(globset::GlobMatcher),
    Host(String),
    Tool,
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Matcher::Command(a), Matcher::Command(b)) => a == b,
            (Matcher::Path(a), Matcher::Path(b)) => a.glob() == b.glob(),
            (Matcher::Host(a), Matcher::Host(b)) => a == b,
            (Matcher::Tool, Matcher::Tool) => true,
            _ => false,
        }
    }
}

/// A rule read from its file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadedRule {
    /// A short id from the rule's content and file, stable across reads.
    pub id: String,
    #[serde(flatten)]
    pub entry: RuleEntry,
    pub source: RuleSource,
    pub file: PathBuf,
    /// Why the rule does not apply to this workspace, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
    #[serde(skip)]
    matcher: Matcher,
}

/// The rules that apply to one workspace (or to none), from both files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PermissionRules {
    rules: Vec<LoadedRule>,
    trusted: bool,
    notices: Vec<FileNotice>,
}

/// Why a workspace file's `allow` rules do not apply in a trusted folder.
const CHANGED: &str = "an allow rule of a file changed since you trusted it";
const NOT_ACCEPTED: &str = "an allow rule of a file you have not accepted";

impl PermissionRules {
    /// Reads the user's file and, with a workspace, the workspace's. Missing files are empty;
    /// a malformed one is an error naming the file and the key; one superpi does not read (of
    /// another user's, a link, too big: `permission_rules_file.rs`) is a notice. A workspace
    /// file's `allow` rules apply only in a trusted folder and while the file is, byte for
    /// byte, the one the user accepted or the kernel last wrote (`rules_sha256`).
    pub fn load(config_dir: &Path, workspace: Option<&Path>) -> Result<PermissionRules, ConfigError> {
        let mut notices = Vec::new();
        let user_path = config_dir.join(USER_RULES_FILE);
        let user = present(&user_path, RuleSource::User, &mut notices)?.map(|(f, _)| f).unwrap_or_default();
        let trusted = workspace.is_some_and(|ws| trusts(&user.trusted_folders, ws));
        let mut rules = Vec::new();
        for (i, entry) in user.rules.into_iter().enumerate() {
            let scoped_elsewhere =
                entry.workspace.as_deref().is_some_and(|scope| !workspace.is_some_and(|ws| ws.starts_with(scope)));
            let ignored = scoped_elsewhere.then(|| "scoped to another workspace".to_string());
            rules.push(loaded(entry, RuleSource::User, &user_path, i, ignored)?);
        }
        let Some(ws) = workspace else { return Ok(PermissionRules { rules, trusted, notices }) };
        let ws_path = ws.join(WORKSPACE_RULES_FILE);
        let Some((file, sha256)) = present(&ws_path, RuleSource::Workspace, &mut notices)? else {
            return Ok(PermissionRules { rules, trusted, notices });
        };
        let recorded = user.rules_sha256.get(&crate::paths::lexical(ws));
        let why_not = match recorded {
            _ if !trusted => Some("an allow rule of a folder you do not trust"),
            Some(accepted) if *accepted == sha256 => None,
            Some(_) => Some(CHANGED),
            None => Some(NOT_ACCEPTED),
        };
        let allows = file.rules.iter().any(|r| r.action == RuleAction::Allow);
        if trusted && (why_not == Some(CHANGED) || why_not.is_some() && allows) {
            let what = if why_not == Some(CHANGED) {
                "changed since you trusted it, so its allow rules do not apply (its ask and deny rules do)"
            } else {
                "has allow rules you have not accepted, so they do not apply (its ask and deny rules do)"
            };
            let fix = format!(
                "check its rules (`superpi permissions list`), then accept them with `superpi permissions trust {}`",
                ws.display()
            );
            notices.push(FileNotice { file: ws_path.clone(), source: RuleSource::Workspace, what: what.into(), fix });
        }
        for (i, entry) in file.rules.into_iter().enumerate() {
            let ignored = (entry.action == RuleAction::Allow).then_some(why_not).flatten().map(str::to_string);
            rules.push(loaded(entry, RuleSource::Workspace, &ws_path, i, ignored)?);
        }
        Ok(PermissionRules { rules, trusted, notices })
    }

    /// The files not used, or whose allow rules are not, each with its fix.
    pub fn notices(&self) -> &[FileNotice] {
        &self.notices
    }

    /// Every rule read, those that do not apply here included.
    pub fn all(&self) -> &[LoadedRule] {
        &self.rules
    }

    /// Whether the user trusts the workspace's folder (its file's allow rules apply).
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    fn applying(&self, action: RuleAction, tool: &str) -> impl Iterator<Item = &LoadedRule> {
        self.rules.iter().filter(move |r| {
            r.ignored.is_none() && r.entry.action == action && r.entry.tool.as_deref().is_none_or(|t| t == tool)
        })
    }

    /// The command patterns of the rules with `action` that apply to the shell tool `tool`.
    pub(crate) fn commands(&self, action: RuleAction, tool: &str) -> impl Iterator<Item = &CommandPattern> {
        self.applying(action, tool).filter_map(|r| match &r.matcher {
            Matcher::Command(p) => Some(p),
            _ => None,
        })
    }

    /// The first rule with `action` whose path, host or tool condition a call matches (any
    /// of its paths; for `allow`, see [`allows`](Self::allows)).
    pub(crate) fn matching(
        &self,
        action: RuleAction,
        tool: &ToolDef,
        arguments: &Value,
        workspace: Option<&Path>,
    ) -> Option<&LoadedRule> {
        let facts = CallPlaces::of(tool, arguments, workspace);
        self.applying(action, &tool.name).find(|r| match &r.matcher {
            Matcher::Tool => true,
            Matcher::Path(glob) => facts.paths.iter().any(|p| path_matches(glob, p, workspace)),
            Matcher::Host(host) => facts.host.as_deref().is_some_and(|h| host_matches(host, h)),
            Matcher::Command(_) => false,
        })
    }

    /// Whether `allow` rules cover the whole call: a rule for the tool, or every path it names
    /// and its host (at least one of them present) each matched by one.
    pub(crate) fn allows(&self, tool: &ToolDef, arguments: &Value, workspace: Option<&Path>) -> bool {
        let rules: Vec<&LoadedRule> = self.applying(RuleAction::Allow, &tool.name).collect();
        if rules.iter().any(|r| r.matcher == Matcher::Tool && r.entry.tool.is_some()) {
            return true;
        }
        let facts = CallPlaces::of(tool, arguments, workspace);
        if facts.unreadable || (facts.paths.is_empty() && facts.host.is_none()) {
            return false;
        }
        let path_ok =
            |p: &PathBuf| rules.iter().any(|r| matches!(&r.matcher, Matcher::Path(g) if path_matches(g, p, workspace)));
        let host_ok =
            |h: &str| rules.iter().any(|r| matches!(&r.matcher, Matcher::Host(pattern) if host_matches(pattern, h)));
        facts.paths.iter().all(path_ok) && facts.host.as_deref().is_none_or(host_ok)
    }
}

impl PermissionRules {
    /// One decision with the rules around it: a deny rule refuses first; `decide` runs with
    /// `settings` whose command lists the command rules extend (an allow rule then lets a
    /// command through where `permissions.allow` would); an ask rule turns an allow into a
    /// question; allow rules settle a question about a tool's paths, host or whole tool.
    pub(crate) fn around(
        &self,
        tool: &ToolDef,
        arguments: &Value,
        workspace: Option<&Path>,
        settings: &Settings,
        decide: impl FnOnce(&Settings) -> Decision,
    ) -> Decision {
        if self.rules.is_empty() {
            return decide(settings);
        }
        let refused_by =
            |r: &LoadedRule| format!("the permission rule {} (`{}`, {})", r.id, r.entry.pattern(), r.file.display());
        let denied = self
            .matching(RuleAction::Deny, tool, arguments, workspace)
            .or_else(|| self.matching_command(RuleAction::Deny, tool, arguments, false));
        if let Some(r) = denied {
            return Decision::Deny {
                reason: format!("`{}` is refused by {}", tool.name, refused_by(r)),
                rule: Rule::PermissionRule,
            };
        }
        let line = tool.shell.as_deref().map(|arg| arguments.get(arg).and_then(Value::as_str).unwrap_or(""));
        let merged;
        let settings = if line.is_some() {
            let mut more = settings.clone();
            more.permissions.allow.extend(self.commands(RuleAction::Allow, &tool.name).cloned());
            more.permissions.deny.extend(self.commands(RuleAction::Deny, &tool.name).cloned());
            merged = more;
            &merged
        } else {
            settings
        };
        match decide(settings) {
            Decision::Allow { network } => match self.asking(tool, arguments, workspace) {
                Some(r) => Decision::Ask {
                    reason: format!("{} asks before `{}` runs", refused_by(r), line.unwrap_or(&tool.name)),
                    risk: Risk::Medium,
                    network,
                    remember: Self::remember(tool, arguments),
                },
                None => Decision::Allow { network },
            },
            Decision::Ask { network, .. } if line.is_none() && self.allows(tool, arguments, workspace) => {
                Decision::Allow { network }
            }
            other => other,
        }
    }

    /// The ask rule a call matches, if one does: by its path, host or tool, or for a shell
    /// call by any command of its line (as deny patterns match: through wrappers, a word that
    /// may expand into a match, and the rough words of a line that cannot be read).
    pub fn asking(&self, tool: &ToolDef, arguments: &Value, workspace: Option<&Path>) -> Option<&LoadedRule> {
        self.matching(RuleAction::Ask, tool, arguments, workspace)
            .or_else(|| self.matching_command(RuleAction::Ask, tool, arguments, true))
    }

    /// The first command rule with `action` that a command of a shell call's line matches as
    /// a deny pattern (`maybe`: also where a word may expand into a match).
    fn matching_command(
        &self,
        action: RuleAction,
        tool: &ToolDef,
        arguments: &Value,
        maybe: bool,
    ) -> Option<&LoadedRule> {
        let line = arguments.get(tool.shell.as_deref()?).and_then(Value::as_str).unwrap_or("");
        let cmds = shell::commands(line);
        let fragments = shell::rough_fragments(line);
        self.applying(action, &tool.name).find(|r| {
            let Matcher::Command(p) = &r.matcher else { return false };
            match &cmds {
                Ok(cmds) => cmds.iter().any(|c| match p.denies(&c.words) {
                    DenyMatch::Yes => true,
                    DenyMatch::Maybe => maybe,
                    DenyMatch::No => false,
                }),
                Err(_) => p.appears_in(&fragments),
            }
        })
    }

    /// What a lasting answer to a question an ask rule raised remembers: the line's commands,
    /// never the whole shell tool.
    fn remember(tool: &ToolDef, arguments: &Value) -> Remember {
        let Some(line) = tool.shell.as_deref().map(|arg| arguments.get(arg).and_then(Value::as_str).unwrap_or(""))
        else {
            return Remember::Tool(tool.name.clone());
        };
        match shell::commands(line) {
            Ok(cmds) if !cmds.is_empty() => Remember::Commands(cmds.iter().map(|c| c.text()).collect()),
            _ => Remember::Commands(vec![line.to_string()]),
        }
    }
}

/// The places a call reaches that rules look at: its paths (absolute, lexical) and its
/// `url`'s host.
pub(crate) struct CallPlaces {
    pub paths: Vec<PathBuf>,
    pub host: Option<String>,
    /// A path argument that is not a string or cannot be resolved: no allow rule covers it.
    pub unreadable: bool,
}

impl CallPlaces {
    pub(crate) fn of(tool: &ToolDef, arguments: &Value, workspace: Option<&Path>) -> CallPlaces {
        let mut places = CallPlaces { paths: Vec::new(), host: None, unreadable: false };
        for (_, value) in tool.path_values(arguments) {
            match value.and_then(|v| crate::paths::normalize(v, workspace).ok()) {
                Some(path) => places.paths.push(path),
                None => places.unreadable = true,
            }
        }
        if let Some(url) = arguments.get("url") {
            places.host = url.as_str().and_then(url_host);
            places.unreadable |= places.host.is_none();
        }
        places
    }
}

/// A glob starting with `/` against the absolute path; any other against the path relative
/// to the workspace (a path outside it matches none).
fn path_matches(glob: &globset::GlobMatcher, path: &Path, workspace: Option<&Path>) -> bool {
    if glob.glob().glob().starts_with('/') {
        return glob.is_match(path);
    }
    let root = workspace.map(crate::paths::lexical);
    root.and_then(|root| path.strip_prefix(root).ok().map(Path::to_path_buf))
        .is_some_and(|relative| !relative.as_os_str().is_empty() && glob.is_match(relative))
}

/// `host` (normalised) against a rule's host: equal, or with `*.`, a subdomain.
fn host_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(parent) => host.strip_suffix(parent).is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
        None => host == pattern,
    }
}

/// Whether `workspace` is one of `folders` or below one.
pub(crate) fn trusts(folders: &[PathBuf], workspace: &Path) -> bool {
    let workspace = crate::paths::lexical(workspace);
    folders.iter().any(|f| workspace.starts_with(crate::paths::lexical(f)))
}

/// A rule checked and read; `index` names it in errors.
pub(crate) fn loaded(
    entry: RuleEntry,
    source: RuleSource,
    file: &Path,
    index: usize,
    ignored: Option<String>,
) -> Result<LoadedRule, ConfigError> {
    let matcher =
        matcher(&entry, source).map_err(|(key, m)| ConfigError::invalid(file, format!("rules[{index}].{key}"), m))?;
    Ok(LoadedRule { id: rule_id(&entry, source), entry, source, file: file.to_path_buf(), ignored, matcher })
}

/// The id of a rule: 8 hex digits of a hash of its file kind and content.
pub(crate) fn rule_id(entry: &RuleEntry, source: RuleSource) -> String {
    let text = format!("{source:?}{}", serde_json::to_string(entry).unwrap_or_default());
    // FNV-1a: stable across runs and builds, unlike std's hasher.
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{:08x}", hash as u32)
}

fn matcher(entry: &RuleEntry, source: RuleSource) -> Result<Matcher, (&'static str, String)> {
    if entry.tool.as_deref().is_some_and(str::is_empty) {
        return Err(("tool", "a tool name cannot be empty".into()));
    }
    if let Some(ws) = &entry.workspace {
        if source == RuleSource::Workspace {
            return Err(("workspace", "only a rule of your own permissions.json is scoped to a workspace".into()));
        }
        if !ws.is_absolute() {
            return Err(("workspace", "must be an absolute path".into()));
        }
    }
    let given = [entry.command.is_some(), entry.path.is_some(), entry.host.is_some()];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(("command", "a rule names one of `command`, `path`, `host`".into()));
    }
    if let Some(command) = &entry.command {
        return CommandPattern::parse_prefix(command).map(Matcher::Command).map_err(|m| ("command", m));
    }
    if let Some(path) = &entry.path {
        if path.is_empty() || path.split('/').any(|part| part == "..") {
            return Err(("path", format!("`{path}`: a path glob relative to the workspace, without `..`")));
        }
        let glob = superpi_paths::compiled_glob(path, false)
            .map_err(|e| ("path", format!("bad path glob `{path}`: {}", e.kind())))?;
        return Ok(Matcher::Path(glob));
    }
    if let Some(host) = &entry.host {
        let normal = normalize_host(host);
        if !valid_host(normal.strip_prefix("*.").unwrap_or(&normal)) {
            return Err(("host", format!("`{host}` is not a host name (`docs.rs`, `*.github.com`)")));
        }
        return Ok(Matcher::Host(normal));
    }
    if entry.tool.is_none() {
        return Err(("tool", "a rule names a `tool`, or a `command`, `path` or `host`".into()));
    }
    Ok(Matcher::Tool)
}

#[cfg(test)]
#[path = "permission_rules_tests.rs"]
mod tests;
