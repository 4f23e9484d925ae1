//! Writing permission rules: the rules an "always for this project" or "always for me" answer
//! leaves ([`suggest`]: derived from the call the question was about, never wider than it),
//! adding them to a rules file ([`append`]) and taking rules out ([`remove`]).
//!
//! Files are rewritten whole through a temporary file and a rename, so a reader sees the old
//! rules or the new ones, never half a file.

use std::path::{Path, PathBuf};

use serde_json::Value;
use superpi_proto::tool::ToolDef;

use crate::error::ConfigError;
use crate::permission_rules::{
    CallPlaces, LoadedRule, PermissionRules, RuleAction, RuleEntry, RuleSource, RulesFile, USER_RULES_FILE,
    WORKSPACE_RULES_FILE, read_file, rule_id,
};
use crate::shell::{self, SimpleCommand};
use crate::verdict::{Decision, Remember, Scope};

/// The allow rules that would answer this question again, or `None` when the call cannot be
/// said as rules no wider than itself: a shell line becomes one exact rule per simple command
/// it was asked about (all of them literal words without a file redirection, or none); a
/// tool's call a rule per path it names (relative to the workspace), or for the host of its
/// `url`, or for the whole tool when it names neither. A shell call asked about for its
/// network has no rule (its hosts cannot be known).
pub fn suggest(
    tool: &ToolDef,
    arguments: &Value,
    decision: &Decision,
    workspace: Option<&Path>,
) -> Option<Vec<RuleEntry>> {
    let Decision::Ask { remember, .. } = decision else { return None };
    let rule = |command: Option<String>, path: Option<String>, host: Option<String>| RuleEntry {
        action: RuleAction::Allow,
        tool: Some(tool.name.clone()),
        command,
        path,
        host,
        workspace: None,
    };
    match (remember, tool.shell.as_deref()) {
        (Remember::Commands(keys), Some(arg)) => {
            let line = arguments.get(arg).and_then(Value::as_str)?;
            let cmds = shell::commands(line).ok()?;
            let mut rules: Vec<RuleEntry> = Vec::new();
            for key in keys {
                let cmd = cmds.iter().find(|c| &c.text() == key)?;
                let pattern = exact_pattern(cmd)?;
                if !rules.iter().any(|r| r.command.as_deref() == Some(&pattern)) {
                    rules.push(rule(Some(pattern), None, None));
                }
            }
            (!rules.is_empty()).then_some(rules)
        }
        (Remember::Tool(name), None) if *name == tool.name => {
            let places = CallPlaces::of(tool, arguments, workspace);
            if places.unreadable {
                return None;
            }
            let mut rules = Vec::new();
            for path in &places.paths {
                let relative = path.strip_prefix(workspace?).ok()?.to_str()?;
                if relative.is_empty() || relative.contains(['*', '?', '[', ']', '{', '}', '\\']) {
                    return None;
                }
                rules.push(rule(None, Some(relative.to_string()), None));
            }
            if let Some(host) = places.host {
                rules.push(rule(None, None, Some(host)));
            }
            if rules.is_empty() {
                rules.push(rule(None, None, None));
            }
            Some(rules)
        }
        _ => None,
    }
}

/// The exact pattern of one simple command: its words, quoted where the shell would read
/// them otherwise; `None` unless every word is literal and nothing is written to a file.
fn exact_pattern(cmd: &SimpleCommand) -> Option<String> {
    if cmd.words.is_empty() || !cmd.writes_no_file() {
        return None;
    }
    if cmd.words.iter().any(|w| !w.literal) {
        return None;
    }
    let pattern = cmd.words.iter().map(|w| quote(&w.text)).collect::<Vec<_>>().join(" ");
    // Read back, it must name this command and nothing more.
    let read = crate::pattern::CommandPattern::parse_prefix(&pattern).ok()?;
    (read.is_exact() && read.allows(&cmd.words)).then_some(pattern)
}

fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+:,./-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Adds `rules` (allow rules from [`suggest`]) to the file `scope` names; a rule already there
/// is not added twice. Returns the file written.
pub fn append(
    config_dir: &Path,
    workspace: Option<&Path>,
    scope: Scope,
    mut rules: Vec<RuleEntry>,
) -> Result<PathBuf, ConfigError> {
    let user_file = config_dir.join(USER_RULES_FILE);
    let (path, source) = match (scope, workspace) {
        (Scope::Project, Some(ws)) if PermissionRules::load(config_dir, Some(ws))?.trusted() => {
            (ws.join(WORKSPACE_RULES_FILE), RuleSource::Workspace)
        }
        (Scope::Project, Some(ws)) => {
            for rule in &mut rules {
                rule.workspace = Some(crate::paths::lexical(ws));
            }
            (user_file, RuleSource::User)
        }
        (Scope::Project, None) => {
            return Err(ConfigError::invalid(
                &user_file,
                "",
                "a conversation without a workspace has no project rules",
            ));
        }
        (Scope::User, _) => (user_file, RuleSource::User),
    };
    let mut file = read_file(&path, source)?;
    for rule in rules {
        if !file.rules.contains(&rule) {
            file.rules.push(rule);
        }
    }
    write_file(&path, &file)?;
    Ok(path)
}

/// Takes out every rule of the user's and the workspace's file whose id or pattern (command,
/// path, host, or tool of a whole-tool rule) is `key`. Returns the rules removed (none: no
/// file changed).
pub fn remove(config_dir: &Path, workspace: Option<&Path>, key: &str) -> Result<Vec<LoadedRule>, ConfigError> {
    let loaded = PermissionRules::load(config_dir, workspace)?;
    let removed: Vec<LoadedRule> =
        loaded.all().iter().filter(|r| r.id == key || r.entry.pattern() == key).cloned().collect();
    let mut files: Vec<(&Path, RuleSource)> = removed.iter().map(|r| (r.file.as_path(), r.source)).collect();
    files.dedup();
    for (path, source) in files {
        let mut file = read_file(path, source)?;
        file.rules.retain(|entry| !removed.iter().any(|r| r.file == path && r.id == rule_id(entry, source)));
        write_file(path, &file)?;
    }
    Ok(removed)
}

fn write_file(path: &Path, file: &RulesFile) -> Result<(), ConfigError> {
    let write_error = |source| ConfigError::Write { path: path.to_path_buf(), source };
    let text = serde_json::to_string_pretty(file).map_err(|e| ConfigError::invalid(path, "", e.to_string()))? + "\n";
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    let temp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&temp, text).map_err(write_error)?;
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        write_error(e)
    })
}
