//! Prompts and resources: harnesses as MCP prompts, the workspace and conversations as MCP
//! resources, transcripts as JSON lines. Pure functions, no I/O.

use rmcp::ErrorData;
use rmcp::model::{
    GetPromptResult, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, ResourceTemplate, Role,
};
use serde_json::{Value, json};
use superpi_proto::ToolDef;
use superpi_proto::method::{HarnessInfo, HistoryResult};

use crate::tools::HARNESS_TASK;

pub const CONTEXT_URI: &str = "superpi://workspace/context";
pub const TOOLS_URI: &str = "superpi://workspace/tools";
pub const TRANSCRIPT_TEMPLATE: &str = "superpi://conversation/{id}/transcript";
const TRANSCRIPT_PREFIX: &str = "superpi://conversation/";
const TRANSCRIPT_SUFFIX: &str = "/transcript";
pub const JSON_LINES: &str = "application/x-ndjson";

/// Prompt names that stand for a harness under another name.
const ALIASES: &[(&str, &str)] = &[("plan_architecture", "superpi-planner")];

fn goal_argument() -> PromptArgument {
    PromptArgument::new("goal").with_description("What the harness should achieve.").with_required(true)
}

/// One prompt per harness, plus the aliases whose harness exists.
pub fn prompts(harnesses: &[HarnessInfo]) -> Vec<Prompt> {
    let mut out: Vec<Prompt> = harnesses
        .iter()
        .map(|h| {
            Prompt::new(h.id.clone(), Some(h.description.clone()), Some(vec![goal_argument()]))
                .with_title(h.name.clone())
        })
        .collect();
    for (alias, target) in ALIASES {
        if let Some(h) = harnesses.iter().find(|h| h.id == *target) {
            out.push(
                Prompt::new(*alias, Some(format!("Alias of {}: {}", h.id, h.description)), Some(vec![goal_argument()]))
                    .with_title(h.name.clone()),
            );
        }
    }
    out
}

/// The harness a prompt name stands for.
pub fn prompt_harness<'a>(name: &str, harnesses: &'a [HarnessInfo]) -> Option<&'a HarnessInfo> {
    let id = ALIASES.iter().find(|(alias, _)| *alias == name).map(|(_, target)| *target).unwrap_or(name);
    harnesses.iter().find(|h| h.id == id)
}

/// `prompts/get`: a user message asking the host's model to hand the goal to the harness.
pub fn get_prompt(
    name: &str,
    arguments: Option<&serde_json::Map<String, Value>>,
    harnesses: &[HarnessInfo],
) -> Result<GetPromptResult, ErrorData> {
    let harness = prompt_harness(name, harnesses)
        .ok_or_else(|| ErrorData::invalid_params(format!("unknown prompt: {name}"), Some(json!({"prompt": name}))))?;
    let goal = arguments
        .and_then(|args| args.get("goal"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|goal| !goal.is_empty())
        .ok_or_else(|| ErrorData::invalid_params(format!("prompt {name} needs the argument `goal`"), None))?;
    let text = format!(
        "Use superpi's {name} harness ({desc}) for this goal: call the `{HARNESS_TASK}` tool with \
         harness \"{id}\" and the goal as its prompt, then report what it answers.\n\nGoal: {goal}",
        name = harness.name,
        desc = harness.description,
        id = harness.id,
    );
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
    result.description = Some(format!("{}: {}", harness.name, harness.description));
    Ok(result)
}

pub fn transcript_uri(conversation_id: i64) -> String {
    format!("{TRANSCRIPT_PREFIX}{conversation_id}{TRANSCRIPT_SUFFIX}")
}

/// The conversation id of a transcript URI.
pub fn parse_transcript_uri(uri: &str) -> Option<i64> {
    let id = uri.strip_prefix(TRANSCRIPT_PREFIX)?.strip_suffix(TRANSCRIPT_SUFFIX)?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

/// `resources/list`: the workspace context, the tool list, and the conversations this
/// connection started (newest last).
pub fn resources(started: &[(i64, String)]) -> Vec<Resource> {
    let mut out = vec![
        Resource::new(CONTEXT_URI, "workspace-context")
            .with_title("Workspace context")
            .with_description("The workspace this server works in, its default harness and top-level entries.")
            .with_mime_type("application/json"),
        Resource::new(TOOLS_URI, "workspace-tools")
            .with_title("Tools")
            .with_description("The tools this server offers, with their effects.")
            .with_mime_type("application/json"),
    ];
    for (id, harness) in started {
        out.push(
            Resource::new(transcript_uri(*id), format!("conversation-{id}"))
                .with_title(format!("Conversation {id} ({harness})"))
                .with_description("The transcript of a harness_task conversation, as JSON lines.")
                .with_mime_type(JSON_LINES),
        );
    }
    out
}

pub fn resource_templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(TRANSCRIPT_TEMPLATE, "conversation-transcript")
            .with_title("Conversation transcript")
            .with_description("A conversation's entries as JSON lines, one entry per line.")
            .with_mime_type(JSON_LINES),
    ]
}

/// The transcript as JSON lines: one line per stored entry, each with `seq`, `kind`,
/// `turn_id`, `role`, `content` and `created_at_ms`.
pub fn transcript_lines(history: &HistoryResult) -> String {
    let mut out = String::new();
    for entry in &history.entries {
        let line = json!({
            "seq": entry.seq,
            "kind": entry.kind.as_str(),
            "turn_id": entry.turn_id,
            "role": entry.message.role.as_str(),
            "content": entry.message.content,
            "created_at_ms": entry.created_at_ms,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

pub fn transcript_contents(uri: &str, history: &HistoryResult) -> ResourceContents {
    ResourceContents::text(transcript_lines(history), uri).with_mime_type(JSON_LINES)
}

/// The tool list resource: each tool's name, description, effects and schemas.
pub fn tools_document(tools: &[ToolDef]) -> Value {
    json!({ "tools": tools })
}

/// The workspace context resource.
pub fn context_document(
    workspace: &str,
    harness: Option<&str>,
    harnesses: &[HarnessInfo],
    listing: Option<&str>,
) -> Value {
    json!({
        "workspace": workspace,
        // None: the kernel's default harness.
        "default_harness": harness,
        "harnesses": harnesses.iter().map(|h| json!({"id": h.id, "name": h.name, "description": h.description})).collect::<Vec<_>>(),
        "entries": listing,
    })
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
