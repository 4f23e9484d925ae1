//! Prompts and resources: harnesses as MCP prompts, the workspace and conversations as MCP
//! resources, transcripts as JSON lines. Pure functions, no I/O.

use rmcp::ErrorData;
use rmcp::model::{
    GetPromptResult, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, ResourceTemplate, Role,
};
use serde_json::{Value, json};
use superpi_proto::method::HarnessInfo;
use superpi_proto::{Entry, ToolDef};

use crate::tools::HARNESS_TASK;

pub const CONTEXT_URI: &str = "superpi://workspace/context";
pub const TOOLS_URI: &str = "superpi://workspace/tools";
pub const TRANSCRIPT_TEMPLATE: &str = "superpi://conversation/{id}/transcript{?after_seq}";
const TRANSCRIPT_PREFIX: &str = "superpi://conversation/";
const TRANSCRIPT_SUFFIX: &str = "/transcript";
const AFTER_SEQ: &str = "?after_seq=";
/// Where a transcript read that stops before the end says it goes on (in its `_meta`).
pub const NEXT_META: &str = "superpi/next";
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

/// The transcript's part after `after_seq`.
pub fn transcript_after_uri(conversation_id: i64, after_seq: u64) -> String {
    format!("{}{AFTER_SEQ}{after_seq}", transcript_uri(conversation_id))
}

/// The conversation id of a transcript URI, and the seq its lines start after.
pub fn parse_transcript_uri(uri: &str) -> Option<(i64, Option<u64>)> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let rest = uri.strip_prefix(TRANSCRIPT_PREFIX)?;
    let (id, after) = match rest.split_once(AFTER_SEQ) {
        Some((id, after)) if digits(after) => (id, Some(after.parse().ok()?)),
        Some(_) => return None,
        None => (rest, None),
    };
    let id = id.strip_suffix(TRANSCRIPT_SUFFIX)?;
    if !digits(id) {
        return None;
    }
    Some((id.parse().ok()?, after))
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
            .with_description(
                "A conversation's entries as JSON lines, one entry per line, at most about 6 MiB a read: \
                 a read that stops before the end names the rest in its _meta (superpi/next).",
            )
            .with_mime_type(JSON_LINES),
    ]
}

/// One transcript line (without its line break): the entry's `seq`, `kind`, `turn_id`,
/// `role`, `content` and `created_at_ms`.
pub fn transcript_line(entry: &Entry) -> String {
    json!({
        "seq": entry.seq,
        "kind": entry.kind.as_str(),
        "turn_id": entry.turn_id,
        "role": entry.message.role.as_str(),
        "content": entry.message.content,
        "created_at_ms": entry.created_at_ms,
    })
    .to_string()
}

/// A transcript read: its lines, and when it stops before the end, in its `_meta` the URI
/// of the rest (`superpi/next`).
pub fn transcript_contents(uri: &str, lines: String, next: Option<String>) -> ResourceContents {
    let contents = ResourceContents::text(lines, uri).with_mime_type(JSON_LINES);
    match next {
        Some(next) => {
            let mut meta = serde_json::Map::new();
            meta.insert(NEXT_META.to_string(), Value::String(next));
            contents.with_meta(rmcp::model::MetaObject(meta))
        }
        None => contents,
    }
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
