//! Tools: the kernel's tool definitions as MCP tools, tool results as MCP results, kernel
//! errors as MCP errors. Pure functions, no I/O.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, ErrorCode, JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{Value, json};
use superpi_client::ClientError;
use superpi_proto::message::codes;
use superpi_proto::method::SubmitParams;
use superpi_proto::{Effect, ToolDef};

/// The name of the tool that runs a whole agent turn.
pub const HARNESS_TASK: &str = "harness_task";

/// What the kernel's `tool.call` answers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct KernelToolResult {
    #[serde(default)]
    pub output: Value,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default)]
    pub structured: Option<Value>,
    #[serde(default)]
    pub details: Option<Value>,
    /// Images beside the output (the `read` tool's image files), by their bytes.
    #[serde(default)]
    pub images: Vec<KernelImage>,
}

/// An image of a `tool.call` answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct KernelImage {
    pub media_type: String,
    /// Standard base64, as MCP's image content carries it.
    pub data: String,
}

/// A `tool.call` answer that refused a call a person could allow (the kernel's
/// `details.blocked.rule` is `unanswered`): the reason it gives, and the risk.
pub fn askable_refusal(answer: &Value) -> Option<(String, Option<String>)> {
    let blocked = answer.get("details")?.get("blocked")?;
    if answer.get("is_error") != Some(&Value::Bool(true)) || blocked.get("rule")? != "unanswered" {
        return None;
    }
    let output = answer.get("output").and_then(Value::as_str).unwrap_or_default();
    let reason = output.strip_prefix("blocked: ").unwrap_or(output).to_string();
    Some((reason, blocked.get("risk").and_then(Value::as_str).map(str::to_string)))
}

/// Says in a refused call's answer that the user declined it when asked.
pub fn mark_declined(answer: &mut Value) {
    if let Some(Value::String(output)) = answer.get_mut("output") {
        output.push_str(" (the user declined when asked)");
    }
}

/// The tool that lists a directory's names, by its facts (it only reads, is shown as a read,
/// and takes the directory as a listing path argument), with that argument.
pub fn listing_tool(tools: &[ToolDef]) -> Option<(String, String)> {
    tools.iter().find_map(|t| {
        let only_reads = !t.effects.is_empty() && t.effects.iter().all(|e| *e == superpi_proto::tool::Effect::Read);
        let listed = t.paths.iter().find(|p| p.access == superpi_proto::tool::PathAccess::List)?;
        (only_reads && t.ui.kind == superpi_proto::tool::ToolKind::Read).then(|| (t.name.clone(), listed.arg.clone()))
    })
}

/// The MCP annotations of a tool, derived from its effects only.
pub fn annotations(def: &ToolDef) -> ToolAnnotations {
    let read_only = def.is_read_only();
    // Repeating a read, a write of the same content or the same edit changes nothing more;
    // running a command, writing to the network or to state may.
    let idempotent = def.effects.iter().all(|e| matches!(e, Effect::Read | Effect::NetRead | Effect::FsWrite));
    ToolAnnotations::with_title(title(&def.name))
        .read_only(read_only)
        .destructive(!read_only && def.is_destructive())
        .idempotent(idempotent)
        .open_world(def.is_open_world())
}

fn title(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect::<String>().replace('_', " "),
        None => String::new(),
    }
}

fn schema_object(schema: &Value) -> JsonObject {
    match schema {
        Value::Object(map) => map.clone(),
        // A tool without a usable schema still takes an object of arguments.
        _ => json!({"type": "object"}).as_object().cloned().unwrap_or_default(),
    }
}

/// A kernel tool as an MCP tool.
pub fn tool_from_def(def: &ToolDef) -> Tool {
    let mut tool = Tool::new(def.name.clone(), def.description.clone(), Arc::new(schema_object(&def.input_schema)))
        .with_annotations(annotations(def));
    // MCP requires an output schema to describe an object.
    if let Some(Value::Object(schema)) = &def.output_schema
        && schema.get("type").and_then(Value::as_str) == Some("object")
    {
        tool = tool.with_raw_output_schema(Arc::new(schema.clone()));
    }
    tool
}

/// The `harness_task` tool: one agent turn through the kernel.
pub fn harness_task_tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "What the agent should do."},
            "harness": {
                "type": "string",
                "description": "The harness to run (an id from prompts/list); the server's default when absent."
            },
            "outputSchema": {
                "type": "object",
                "description": "A JSON Schema (`\"type\": \"object\"`) the answer must meet: checked, retried once, \
                                 then the call fails naming the errors; structuredContent.structured_output holds \
                                 the accepted object."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    });
    let output = json!({
        "type": "object",
        "properties": {
            "harness": {"type": "string"},
            "conversation_id": {"type": "integer"},
            "turn_id": {"type": "integer"},
            "stop_reason": {"type": "string"},
            "result": {"type": "string"},
            "structured_output": {"type": "object"}
        },
        "required": ["harness", "conversation_id"]
    });
    Tool::new(
        HARNESS_TASK,
        "Run a whole superpi agent turn: the harness works on the prompt with its own tools in the \
         workspace and returns its answer. Sends progress notifications when asked; cancelling the \
         request cancels the turn.",
        Arc::new(schema_object(&input)),
    )
    .with_raw_output_schema(Arc::new(schema_object(&output)))
    .with_annotations(
        ToolAnnotations::with_title("Harness task")
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(true),
    )
}

/// Arguments of `harness_task`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessTaskArgs {
    pub prompt: String,
    #[serde(default)]
    pub harness: Option<String>,
    /// The answer's JSON Schema, the kernel's `output_schema` (it checks the schema itself).
    #[serde(default, rename = "outputSchema")]
    pub output_schema: Option<JsonObject>,
}

impl HarnessTaskArgs {
    pub fn parse(arguments: Option<&JsonObject>) -> Result<Self, ErrorData> {
        let value = Value::Object(arguments.cloned().unwrap_or_default());
        let args: HarnessTaskArgs = serde_json::from_value(value)
            .map_err(|err| ErrorData::invalid_params(format!("invalid arguments for {HARNESS_TASK}: {err}"), None))?;
        if args.prompt.trim().is_empty() {
            return Err(ErrorData::invalid_params(format!("{HARNESS_TASK} needs a non-empty prompt"), None));
        }
        Ok(args)
    }

    /// The `session.submit` of the task's prompt (and output schema) to its conversation.
    pub fn submission(&self, conversation_id: i64) -> SubmitParams {
        SubmitParams {
            conversation_id,
            prompt: Some(self.prompt.clone()),
            output_schema: self.output_schema.clone().map(Value::Object),
            ..Default::default()
        }
    }
}

/// Text for the model or person reading a tool result.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A kernel tool result as an MCP result: the output as text content, then its images as image
/// content, the structured channel as structuredContent (objects only, as MCP requires),
/// failures as `isError` results.
pub fn call_result(result: KernelToolResult) -> CallToolResult {
    let images = result.images.into_iter().map(|image| ContentBlock::image(image.data, image.media_type));
    let content = std::iter::once(ContentBlock::text(output_text(&result.output))).chain(images).collect();
    let mut out = if result.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    if let Some(structured @ Value::Object(_)) = result.structured {
        out.structured_content = Some(structured);
    }
    out
}

/// A failed kernel request as an MCP protocol error.
pub fn kernel_error(tool: &str, err: &ClientError) -> ErrorData {
    match err {
        ClientError::Kernel(e) if e.code == codes::METHOD_NOT_FOUND => {
            ErrorData::invalid_params(format!("unknown tool: {tool}"), Some(json!({"tool": tool})))
        }
        ClientError::Kernel(e) if e.code == codes::INVALID_PARAMS => {
            ErrorData::invalid_params(e.message.clone(), e.data.clone())
        }
        ClientError::Kernel(e) if e.code == codes::NOT_FOUND => {
            ErrorData::new(ErrorCode::RESOURCE_NOT_FOUND, e.message.clone(), e.data.clone())
        }
        ClientError::Kernel(e) => ErrorData::internal_error(e.message.clone(), Some(json!({"kernel_code": e.code}))),
        other => ErrorData::internal_error(format!("kernel unavailable: {other}"), None),
    }
}

/// A kernel refusal that the caller should read as a failed tool (policy, provider), rather
/// than as a protocol error.
pub fn is_tool_level_refusal(err: &ClientError) -> bool {
    matches!(err, ClientError::Kernel(e) if e.code == codes::FORBIDDEN || e.code == codes::PROVIDER)
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
