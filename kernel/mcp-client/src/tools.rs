//! An external MCP server's tools in superpi's terms: the name `mcp__SERVER__TOOL`, the facts
//! the policy reads (annotations to effects), and a call's result (text joined, structured
//! content kept, images passed on to a model that sees (and described), audio described,
//! resources as text). Pure functions.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolImage, ToolKind, ToolUi};

/// The name a model sees: `mcp__SERVER__TOOL`, kept to `^[a-zA-Z0-9_-]{1,64}$` (every other
/// character becomes `_`, and the end is cut), which every vendor accepts.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(64)
        .collect()
}

/// The facts of one server tool. `readOnlyHint: true` makes it a read; any other tool is
/// decided like a command (asked in `accept-edits`), since nothing says what it does.
pub fn tool_def(server: &str, tool: &Tool) -> ToolDef {
    let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
    let description = tool.description.as_deref().or(tool.title.as_deref()).unwrap_or_default();
    ToolDef {
        name: tool_name(server, &tool.name),
        description: format!("{description} (from the MCP server `{server}`)").trim_start().to_string(),
        input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
        output_schema: tool.output_schema.as_ref().map(|s| serde_json::Value::Object((**s).clone())),
        effects: vec![if read_only { Effect::Read } else { Effect::Exec }],
        workspace: true,
        ui: ToolUi {
            kind: if read_only { ToolKind::Read } else { ToolKind::Execute },
            title: Some(format!("{server}: {}", tool.title.as_deref().unwrap_or(&tool.name))),
            ..ToolUi::default()
        },
        mcp_server: Some(server.to_string()),
        ..ToolDef::default()
    }
}

/// A server's answer as the model reads it: its images follow the result for a model that
/// sees (checked and stored by the turn, `superpi-kernel`'s images); each is described in the text
/// for one that does not.
pub fn call_result(result: CallToolResult) -> ToolCallResult {
    let parts: Vec<String> = result.content.iter().map(describe).collect();
    let images = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(image) => {
                Some(ToolImage { media_type: image.mime_type.clone(), data: image.data.clone(), described: true })
            }
            _ => None,
        })
        .collect();
    let mut output = parts.join("\n");
    if output.is_empty()
        && let Some(structured) = &result.structured_content
    {
        output = structured.to_string();
    }
    ToolCallResult {
        output,
        is_error: result.is_error == Some(true),
        structured: result.structured_content,
        details: None,
        images,
    }
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!("[image: {}, {} bytes]", image.mime_type, base64_len(&image.data))
        }
        ContentBlock::Audio(audio) => {
            format!("[audio: {}, {} bytes]", audio.mime_type, base64_len(&audio.data))
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => format!("[resource {uri}]\n{text}"),
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                format!("[resource {uri}: {}, {} bytes]", mime_type.as_deref().unwrap_or("binary"), base64_len(blob))
            }
            _ => "[a resource of a kind superpi does not read]".to_string(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {} ({})]", link.uri, link.name),
        _ => "[content of a kind superpi does not read]".to_string(),
    }
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
