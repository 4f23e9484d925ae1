//! The `skill` tool: a skill's instructions by name, a file beside them, or the list of skills
//! (`skills.rs` finds them). Registered by the kernel like the plan tool: its runner runs in the
//! kernel's process and reads only the skills directories (the user's is inside the config
//! directory, out of every confined tool's reach), each file a regular one inside its skill's
//! directory. A read with no capability block, so the code and planner harnesses offer it;
//! `turn_only`, as the list of skills is given in a turn's system prompt.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::features::skills::{SKILL_TOOL, Skill, discover, parse, read_regular, roots};

/// The runner: the config directory, whose `skills` it reads besides the call's workspace's.
pub(crate) struct SkillTool {
    pub config_dir: PathBuf,
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
    fn run<'a>(&'a self, call: &'a ToolCall, _: CancellationToken, _: Option<mpsc::Sender<String>>) -> RunFuture<'a> {
        Box::pin(async move {
            let args: Args = match serde_json::from_value(call.arguments.clone()) {
                Ok(args) => args,
                Err(err) => return ToolCallResult::error(format!("invalid arguments: {err}")),
            };
            let skills = discover(&roots(&self.config_dir, call.workspace.as_deref()));
            match answer(&skills, args) {
                Ok(output) => ToolCallResult { is_error: false, ..ToolCallResult::error(output) },
                Err(why) => ToolCallResult::error(why),
            }
        })
    }
}

/// What a call answers, from the skills found.
fn answer(skills: &[Skill], args: Args) -> Result<String, String> {
    let Some(name) = args.name else {
        if args.file.is_some() {
            return Err("`file` needs the skill's `name`".into());
        }
        return Ok(list(skills));
    };
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        return Err(format!("no skill is named `{name}`. {}", list(skills)));
    };
    match args.file {
        None => instructions(skill),
        Some(file) => beside(skill, &file),
    }
}

fn list(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return "There are no skills.".into();
    }
    let lines: Vec<String> = skills.iter().map(|s| format!("- {}: {}", s.name, s.description)).collect();
    format!("Skills:\n{}", lines.join("\n"))
}

/// A skill's instructions, and the files that come with it.
fn instructions(skill: &Skill) -> Result<String, String> {
    let body = parse(&read_regular(&skill.file)?).body;
    let mut text = format!("# Skill: {}\n\n{}", skill.name, body.trim_end());
    let files = skill.dir.as_deref().map(files_of).unwrap_or_default();
    if !files.is_empty() {
        text.push_str(&format!(
            "\n\nFiles of this skill (load one with `{SKILL_TOOL}`, `name` and `file`): {}",
            files.join(", ")
        ));
    }
    Ok(text)
}

/// The regular files under a skill's directory but its instructions, relative, sorted (at most
/// 200, two levels deep).
fn files_of(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut walk = vec![(dir.to_path_buf(), 0)];
    while let Some((at, depth)) = walk.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            if kind.is_dir() && depth < 2 {
                walk.push((path, depth + 1));
            } else if kind.is_file()
                && let Ok(relative) = path.strip_prefix(dir)
                && relative != Path::new("SKILL.md")
            {
                files.push(relative.display().to_string());
            }
        }
    }
    files.sort();
    files.truncate(200);
    files
}

/// A file beside a skill's instructions: a relative path inside its directory, reached through
/// no symlink, a regular file of text.
fn beside(skill: &Skill, file: &str) -> Result<String, String> {
    let Some(dir) = &skill.dir else {
        return Err(format!("the skill `{}` is a single file; it has no files beside it", skill.name));
    };
    let relative = Path::new(file);
    if relative.as_os_str().is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(format!("`{file}` is not a path inside the skill (relative, without `..`)"));
    }
    let path = dir.join(relative);
    let inside = match (path.canonicalize(), dir.canonicalize()) {
        (Ok(path), Ok(dir)) => path.starts_with(dir),
        _ => return Err(format!("the skill `{}` has no file `{file}`", skill.name)),
    };
    if !inside {
        return Err(format!("`{file}` leads outside the skill `{}`", skill.name));
    }
    read_regular(&path).map_err(|why| format!("the skill `{}`'s file: {why}", skill.name))
}

#[cfg(test)]
#[path = "skill_tests.rs"]
mod tests;
