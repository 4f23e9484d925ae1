//! The `skill` tool: a skill's instructions by name, a file beside them, or the list of skills
//! (`skills.rs` finds them). Registered by the kernel like the plan tool: its runner runs in the
//! kernel's process, which reads the user's skills directory (inside the config directory, out
//! of every confined tool's reach); the workspace's is read for each call by the confined tool
//! runner with the call's protected paths (`skills::Reader`), and the answer comes from what
//! those reads returned, never from a second read by path. A read with no capability block, so
//! the code and planner harnesses offer it; `turn_only`, as the list of skills is given in a
//! turn's system prompt.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use superpi_sandbox::TreeKind;

use crate::features::skills::{Found, Reader, SKILL_TOOL, Skill, parse};
use crate::kernel::KernelSlot;

/// The runner: the config directory, whose `skills` it reads besides the call's workspace's,
/// and the kernel, whose sandbox reads the workspace's.
pub(crate) struct SkillTool {
    pub config_dir: PathBuf,
    pub kernel: KernelSlot,
}

/// The tool's facts.
pub(crate) fn def() -> ToolDef {
    ToolDef {
        name: SKILL_TOOL.into(),
        description: "Load a skill: instructions for a particular task, listed by name in your instructions. \
                      Give `name` for its instructions; add `file` (a path the instructions name, relative to \
                      the skill) for a file that comes with it. Without `name`, lists every skill."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name"},
                "file": {"type": "string", "description": "A file of the skill, relative to its directory"}
            },
            "additionalProperties": false
        }),
        effects: vec![Effect::Read],
        // The list of skills is part of a turn's system prompt: outside a turn (`tool.call`,
        // the MCP server's tools) nobody is told which exist.
        turn_only: true,
        ui: ToolUi { kind: ToolKind::Read, title: Some("Skill {name}".into()), ..ToolUi::default() },
        ..ToolDef::default()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: Option<String>,
    file: Option<String>,
}

impl ToolRunner for SkillTool {
    fn run<'a>(
        &'a self,
        call: &'a ToolCall,
        cancel: CancellationToken,
        _: Option<mpsc::Sender<String>>,
    ) -> RunFuture<'a> {
        Box::pin(async move {
            let args: Args = match serde_json::from_value(call.arguments.clone()) {
                Ok(args) => args,
                Err(err) => return ToolCallResult::error(format!("invalid arguments: {err}")),
            };
            let Some(kernel) = self.kernel.get() else {
                return ToolCallResult::error("the kernel is stopping".to_string());
            };
            let reader = Reader {
                sandbox: &kernel.sandbox,
                config_dir: &self.config_dir,
                workspace: call.workspace.as_deref(),
                protected: call.protected.clone(),
            };
            // `file` is read beside every skill's instructions; an argument the answer refuses
            // (`../x`) is not asked for.
            let file = args.file.as_deref().filter(|f| inside_skill(f).is_ok());
            let found = reader.read(file, &cancel).await;
            match answer(&found, args) {
                Ok(output) => ToolCallResult { is_error: false, ..ToolCallResult::error(output) },
                Err(why) => ToolCallResult::error(why),
            }
        })
    }
}

/// What a call answers, from the skills found.
fn answer(found: &Found, args: Args) -> Result<String, String> {
    let Some(name) = args.name else {
        if args.file.is_some() {
            return Err("`file` needs the skill's `name`".into());
        }
        return Ok(list(found));
    };
    let Some(skill) = found.skills.iter().find(|s| s.name == name) else {
        return Err(format!("no skill is named `{name}`. {}", list(found)));
    };
    match args.file {
        None => instructions(found, skill),
        Some(file) => beside(found, skill, &file),
    }
}

fn list(found: &Found) -> String {
    let mut text = if found.skills.is_empty() {
        "There are no skills.".to_string()
    } else {
        let lines: Vec<String> = found.skills.iter().map(|s| format!("- {}: {}", s.name, s.description)).collect();
        format!("Skills:\n{}", lines.join("\n"))
    };
    if !found.refused.is_empty() {
        text.push_str(&format!("\nNot read:\n- {}", found.refused.join("\n- ")));
    }
    text
}

/// A skill's instructions, and the files that come with it.
fn instructions(found: &Found, skill: &Skill) -> Result<String, String> {
    let text = found.text(skill.tree, &skill.relative)?.ok_or_else(|| format!("{} is gone", skill.file.display()))?;
    let body = parse(text).body;
    let mut text = format!("# Skill: {}\n\n{}", skill.name, body.trim_end());
    let files = files_of(found, skill);
    if !files.is_empty() {
        text.push_str(&format!(
            "\n\nFiles of this skill (load one with `{SKILL_TOOL}`, `name` and `file`): {}",
            files.join(", ")
        ));
    }
    Ok(text)
}

/// The regular files under a skill's directory but its instructions, relative, sorted (at most
/// 200, two directories deep), as the read of its skills directory found them.
fn files_of(found: &Found, skill: &Skill) -> Vec<String> {
    let (Some(at), Some(tree)) = (&skill.at, found.trees.get(skill.tree)) else { return Vec::new() };
    let prefix = format!("{at}/");
    let mut files: Vec<String> = tree
        .entries
        .iter()
        .filter(|e| matches!(e.kind, TreeKind::File { .. }))
        .filter_map(|e| e.path.strip_prefix(&prefix))
        .filter(|relative| *relative != "SKILL.md")
        .map(String::from)
        .collect();
    files.sort();
    files.truncate(200);
    files
}

/// `file` as a path inside a skill's directory: relative, plain names, UTF-8.
fn inside_skill(file: &str) -> Result<String, String> {
    let relative = Path::new(file);
    if relative.as_os_str().is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(format!("`{file}` is not a path inside the skill (relative, without `..`)"));
    }
    let names: Option<Vec<&str>> = relative.components().map(|c| c.as_os_str().to_str()).collect();
    Ok(names.ok_or_else(|| format!("`{file}` is not UTF-8"))?.join("/"))
}

/// A file beside a skill's instructions: a relative path inside its directory, reached through
/// no symlink, a regular file of text.
fn beside(found: &Found, skill: &Skill, file: &str) -> Result<String, String> {
    let Some(at) = &skill.at else {
        return Err(format!("the skill `{}` is a single file; it has no files beside it", skill.name));
    };
    let relative = inside_skill(file)?;
    match found.text(skill.tree, &format!("{at}/{relative}")) {
        Ok(Some(text)) => Ok(text.to_string()),
        Ok(None) => Err(format!("the skill `{}` has no file `{file}`", skill.name)),
        Err(why) => Err(format!("the skill `{}`'s file: {why}", skill.name)),
    }
}

#[cfg(test)]
#[path = "skill_tests.rs"]
mod tests;
