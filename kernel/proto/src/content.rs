//! Conversation data: messages, their content blocks, usage and stored entries.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    /// Results of tool calls, sent back to the model.
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        tool_call_id: String,
        name: String,
        /// What the model reads.
        output: String,
        #[serde(default)]
        is_error: bool,
        /// Structured output for programs (MCP structuredContent and the like).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<Value>,
        /// Details for a user interface (a diff, a spill path).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// An image the user gave. A frontend sends its bytes as `data` (base64); the kernel
    /// stores them once in its data dir and keeps only `sha256` in entries and events; a
    /// model request carries `data` again.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        media_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
        /// The stored image's digest (hex), its name in the data dir.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
    /// A block a vendor's own servers produced that the model must be sent again unchanged:
    /// its built-in tool search's call and result (Anthropic's `server_tool_use` and
    /// `tool_search_tool_result`, the Responses API's `tool_search_call` and
    /// `tool_search_output`), or an agent backend's server tool activity (`claude-code`, sent
    /// to no API). `provider` names the wire API (`anthropic`, `openai-responses`); a request
    /// to any other drops it. Nothing else reads `block`.
    Hosted {
        provider: String,
        block: Value,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// A tool's successful result: what the model reads, without structured output or details.
    pub fn tool_result(tool_call_id: impl Into<String>, name: impl Into<String>, output: impl Into<String>) -> Self {
        ContentBlock::ToolResult {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            output: output.into(),
            is_error: false,
            structured: None,
            details: None,
        }
    }

    /// An image given by its bytes (base64), as a frontend sends it.
    pub fn image(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        ContentBlock::Image { media_type: media_type.into(), data: Some(data.into()), sha256: None }
    }

    /// An image given as a base64 `data:` URL (`data:image/png;base64,...`); `None` for any
    /// other URL.
    pub fn image_from_data_url(url: &str) -> Option<Self> {
        let (media_type, data) = url.strip_prefix("data:")?.split_once(',')?;
        Some(ContentBlock::image(media_type.strip_suffix(";base64")?, data))
    }
}

/// The most bytes of one image (a prompt's or a tool's): Anthropic's limit, the lowest of the
/// vendors'.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The image format of `bytes` by their signature, among those every vendor but Gemini (no
/// GIF) takes: PNG, JPEG, GIF or WebP. Never from a name or a declared type.
pub fn image_media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Token counts of one model call (or totals).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Of `input_tokens`, those the vendor read from its prompt cache (0 when it says nothing).
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Of `input_tokens`, those the vendor wrote to its prompt cache (Anthropic's
    /// `cache_creation_input_tokens`, priced apart; 0 when it says nothing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds `other`'s counts to these (a conversation's totals).
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// What a `usage_updated` says things cost, in US dollars: the last model call, the turn so
/// far and the conversation so far. `None` where nothing priced was counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub call: Option<f64>,
    pub turn: Option<f64>,
    pub total: Option<f64>,
}

/// A message of the conversation, as stored and as sent to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Message { role: Role::User, content: vec![ContentBlock::text(text)], usage: None, stop_reason: None }
    }

    /// The concatenated text blocks of the message.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }
}

/// What kind of record an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    User,
    Assistant,
    ToolResult,
    System,
    Compaction,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::User => "user",
            EntryKind::Assistant => "assistant",
            EntryKind::ToolResult => "tool_result",
            EntryKind::System => "system",
            EntryKind::Compaction => "compaction",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "user" => EntryKind::User,
            "assistant" => EntryKind::Assistant,
            "tool_result" => EntryKind::ToolResult,
            "system" => EntryKind::System,
            "compaction" => EntryKind::Compaction,
            _ => return None,
        })
    }
}

/// A committed record of a conversation. `seq` is the conversation's sequence number of
/// the event that announced it, so history and event replay line up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub seq: u64,
    pub kind: EntryKind,
    #[serde(default)]
    pub turn_id: Option<i64>,
    pub message: Message,
    pub created_at_ms: i64,
}
