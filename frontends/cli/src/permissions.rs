//! `superpi permissions list|remove`: the permission rules that apply to the workspace of the
//! current directory, from the user's `permissions.json` and the workspace's
//! `.superpi/permissions.json`, read and edited here without a kernel (a running kernel reads
//! the files again at its next call).

use std::process::ExitCode;

use clap::Subcommand;
use superpi_client::Locations;
use superpi_policy::permission_rules_edit;
use superpi_policy::{LoadedRule, PermissionRules, RuleSource};

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
}

pub fn run(locations: &Locations, command: PermissionsCommand) -> anyhow::Result<ExitCode> {
    let workspace = superpi_client::workspace::resolve_workspace(None)?;
    let config_dir = &locations.config_dir;
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
    }
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
