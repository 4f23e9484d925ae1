//! `superpi permissions list|remove|trust|untrust`: the permission rules that apply to the
//! workspace of the current directory, from the user's `permissions.json` and the workspace's
//! `.superpi/permissions.json`, and the folders whose files may allow; read and edited here
//! without a kernel (a running kernel reads the files again at its next call).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use superpi_client::Locations;
use superpi_policy::permission_rules_edit;
use superpi_policy::{LoadedRule, PermissionRules, RuleAction, RuleSource};

use crate::listing::{JsonFlag, out, print_json, print_table};

#[derive(Debug, Subcommand)]
pub enum PermissionsCommand {
    /// List the rules, with the file each comes from and whether it applies here.
    List(JsonFlag),
    /// Remove a rule by its id, or every rule whose pattern (command, path, host, or tool of
    /// a whole-tool rule) is PATTERN.
    Remove {
        #[arg(value_name = "ID|PATTERN")]
        key: String,
    },
    /// Trust a folder (default: the current directory): its `.superpi/permissions.json` may
    /// allow, and agent backends run beside their own configuration there
    /// (`.gemini/`, `.opencode/`, ...), each as it is now; a later change of a file is not trusted
    /// until you run this again.
    Trust {
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Stop trusting a folder (default: the current directory) and the folders below it.
    Untrust {
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

pub fn run(locations: &Locations, command: PermissionsCommand) -> anyhow::Result<ExitCode> {
    let config_dir = &locations.config_dir;
    let workspace = match command {
        PermissionsCommand::Trust { dir } => return trust(config_dir, &folder(dir)?),
        PermissionsCommand::Untrust { dir } => return untrust(config_dir, &folder(dir)?),
        _ => superpi_client::workspace::resolve_workspace(None)?,
    };
    match command {
        PermissionsCommand::List(flag) => {
            let rules = PermissionRules::load(config_dir, Some(&workspace))?;
            if flag.json {
                print_json(&rules.all())?;
            } else if rules.is_empty() {
                out(&format!(
                    "no permission rules for {} (see `permissions.json` in SETTINGS.md)\n",
                    workspace.display()
                ));
            } else {
                let rows: Vec<Vec<String>> = rules.all().iter().map(row).collect();
                print_table(&["ID", "ACTION", "TOOL", "RULE", "FROM", "APPLIES"], &rows);
            }
            for notice in rules.notices() {
                eprintln!("superpi: {}", notice.message());
            }
            Ok(ExitCode::SUCCESS)
        }
        PermissionsCommand::Remove { key } => {
            let removed = permission_rules_edit::remove(config_dir, Some(&workspace), &key)?;
            if removed.is_empty() {
                eprintln!("superpi: no permission rule has the id or pattern `{key}` (see `superpi permissions list`)");
                return Ok(ExitCode::FAILURE);
            }
            for rule in &removed {
                out(&format!("removed {} `{}` from {}\n", rule.id, rule.entry.pattern(), rule.file.display()));
            }
            Ok(ExitCode::SUCCESS)
        }
        PermissionsCommand::Trust { .. } | PermissionsCommand::Untrust { .. } => Ok(ExitCode::FAILURE),
    }
}

/// `DIR`, or the current directory, canonical.
fn folder(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    dir.canonicalize().map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))
}

fn trust(config_dir: &Path, folder: &Path) -> anyhow::Result<ExitCode> {
    let done = permission_rules_edit::trust(config_dir, folder)?;
    if done.newly {
        out(&format!("trusted {}\n", done.folder.display()));
    } else {
        out(&format!("{} is trusted (within {})\n", folder.display(), done.folder.display()));
    }
    let file = folder.join(superpi_policy::permission_rules::WORKSPACE_RULES_FILE);
    match done.accepted {
        None => {
            out(&format!("{} has no rules file; \"always in this project\" answers will make one\n", folder.display()))
        }
        Some(rules) => {
            let allows: Vec<String> = rules
                .iter()
                .filter(|r| r.action == RuleAction::Allow)
                .map(|r| format!("  {} {}\n", r.tool.as_deref().unwrap_or("any tool"), r.pattern()))
                .collect();
            out(&format!(
                "accepted {} as it is now, with {} allow rules:\n{}",
                file.display(),
                allows.len(),
                allows.concat()
            ));
        }
    }
    for file in &done.backend_files {
        out(&format!("accepted {} as it is now (an agent backend's configuration)\n", file.display()));
    }
    Ok(ExitCode::SUCCESS)
}

fn untrust(config_dir: &Path, folder: &Path) -> anyhow::Result<ExitCode> {
    let done = permission_rules_edit::untrust(config_dir, folder)?;
    if done.folders.is_empty() && done.files == 0 {
        eprintln!(
            "superpi: {} is not a trusted folder (see `trusted_folders` in your permissions.json)",
            folder.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    for f in &done.folders {
        out(&format!("no longer trusted: {}\n", f.display()));
    }
    if done.files > 0 {
        out(&format!("files no longer accepted: {}\n", done.files));
    }
    if let Some(holder) = done.still_within {
        out(&format!(
            "{} is still within the trusted folder {}; its rules file's allow rules apply again only after `superpi permissions trust`\n",
            folder.display(),
            holder.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

fn row(rule: &LoadedRule) -> Vec<String> {
    let action = serde_json::to_value(rule.entry.action).ok().and_then(|v| v.as_str().map(str::to_string));
    let what = match (&rule.entry.command, &rule.entry.path, &rule.entry.host) {
        (Some(c), _, _) => format!("command {c}"),
        (_, Some(p), _) => format!("path {p}"),
        (_, _, Some(h)) => format!("host {h}"),
        _ => "the whole tool".to_string(),
    };
    let from = match (rule.source, &rule.entry.workspace) {
        (RuleSource::User, Some(ws)) => format!("user (for {})", ws.display()),
        (RuleSource::User, None) => "user".to_string(),
        (RuleSource::Workspace, _) => "workspace".to_string(),
    };
    let applies = rule.ignored.as_ref().map_or("yes".to_string(), |why| format!("no: {why}"));
    vec![
        rule.id.clone(),
        action.unwrap_or_default(),
        rule.entry.tool.clone().unwrap_or_else(|| "any".into()),
        what,
        from,
        applies,
    ]
}
