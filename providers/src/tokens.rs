//! Token estimates made before a request is sent, when no provider has counted yet.
//!
//! A count by bytes, on the high side on purpose: English prose runs about four bytes a token,
//! code and JSON about three, other scripts fewer bytes a token but more bytes a character,
//! so three bytes a token rarely under-counts. What reaches the model and is counted: text,
//! thinking, a call's name and arguments, a result's output (not its `details`, which are for
//! user interfaces), the system prompt and the tools' schemas; an image a fixed
//! [`IMAGE_TOKENS`].

use superpi_proto::{ContentBlock, Message};

use crate::stream::{ModelRequest, ToolSpec};

const BYTES_PER_TOKEN: u64 = 3;
/// Role markers and separators every message costs.
const MESSAGE_OVERHEAD: u64 = 4;
/// What a tool's framing costs besides its name, description and schema.
const TOOL_OVERHEAD: u64 = 8;
/// What an image costs, whatever its size: Anthropic counts about 1,600 for the largest it
/// keeps unscaled, OpenAI at most about 1,100, Gemini 258 a tile. Its base64 is not text.
pub const IMAGE_TOKENS: u64 = 1_600;

/// Tokens of a text.
pub fn text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Tokens of one message as the model reads it.
pub fn message(message: &Message) -> u64 {
    MESSAGE_OVERHEAD
        + message
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text: t } => text(t),
                ContentBlock::Thinking { thinking, .. } => text(thinking),
                ContentBlock::ToolCall { id, name, arguments } => {
                    text(id) + text(name) + text(&arguments.to_string()) + MESSAGE_OVERHEAD
                }
                ContentBlock::ToolResult { tool_call_id, output, structured, .. } => {
                    let structured = structured.as_ref().map_or(0, |s| text(&s.to_string()));
                    text(tool_call_id) + text(output) + structured + MESSAGE_OVERHEAD
                }
                ContentBlock::Image { .. } => IMAGE_TOKENS,
                ContentBlock::Hosted { block, .. } => text(&block.to_string()),
                _ => MESSAGE_OVERHEAD,
            })
            .sum::<u64>()
}

/// Tokens of the tools on offer.
/// A deferred tool's schema is not in the context until the vendor's search loads it.
pub fn tools(tools: &[ToolSpec]) -> u64 {
    let schema = |t: &ToolSpec| if t.deferred { 0 } else { text(&t.input_schema.to_string()) };
    tools.iter().map(|t| TOOL_OVERHEAD + text(&t.name) + text(&t.description) + schema(t)).sum()
}

/// Tokens of a whole request: system prompt, messages and tools.
pub fn request(request: &ModelRequest) -> u64 {
    request.system.as_deref().map_or(0, |s| MESSAGE_OVERHEAD + text(s))
        + request.messages.iter().map(message).sum::<u64>()
        + tools(&request.tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use superpi_proto::Role;

    fn msg(role: Role, content: Vec<ContentBlock>) -> Message {
        Message { role, content, usage: None, stop_reason: None }
    }

    #[test]
    fn every_part_the_model_reads_counts() {
        let call = ContentBlock::ToolCall { id: "c1".into(), name: "bash".into(), arguments: json!({"command": "ls"}) };
        let result = ContentBlock::ToolResult {
            tool_call_id: "c1".into(),
            name: "bash".into(),
            output: "a".repeat(300),
            is_error: false,
            structured: None,
            details: Some(json!({"diff": "x".repeat(10_000)})),
        };
        let request = ModelRequest {
            model: "m".into(),
            system: Some("s".repeat(30)),
            messages: vec![msg(Role::User, vec![ContentBlock::text("hello")]), msg(Role::Assistant, vec![call])],
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "d".repeat(60),
                input_schema: json!({}),
                deferred: false,
            }],
            max_tokens: None,
            effort: None,
            output_schema: None,
        };
        let before = super::request(&request);
        // system 4+10, user 4+2, assistant 4+(1+2+6+4), tool 8+2+20+1
        assert_eq!(before, 14 + 6 + 17 + 31);
        let mut with_result = request.clone();
        with_result.messages.push(msg(Role::Tool, vec![result]));
        // The result's output counts (4 + 1 + 100 + 4), its details for user interfaces do not.
        assert_eq!(super::request(&with_result) - before, 109);
    }

    #[test]
    fn multibyte_text_counts_by_bytes() {
        assert_eq!(text("日本語"), 3);
        assert_eq!(text(""), 0);
    }
}
