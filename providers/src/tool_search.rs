//! The vendors' built-in tool search: which models have it, and the tool that turns it on.
//!
//! With it, a request sends every deferred tool ([`crate::ToolSpec::deferred`]) with the
//! vendor's `defer_loading: true` beside the vendor's search tool; the vendor's servers search
//! them, and the blocks of that search (Anthropic's `server_tool_use` and
//! `tool_search_tool_result`, whose `tool_reference`s load the tools found; the Responses API's
//! `tool_search_call` and `tool_search_output`) come back in the answer. They are kept as
//! [`superpi_proto::ContentBlock::Hosted`] and sent back unchanged with the history, so the
//! tools found stay loaded. The kernel asks [`crate::Provider::tool_search`] and, where it says
//! no (another vendor, an older model, `builtin_tool_search = false`), uses its own
//! `tool_search` tool instead.
//!
//! A history can call a deferred tool that none of its searches loaded: a compaction summarised
//! the search away and kept the call, or the call came through superpi's own search or
//! another vendor's. Such a tool goes without deferral ([`called_unloaded`]), or the API
//! refuses the call. A reference to a tool no longer offered (its MCP server removed) is left
//! out of the search's result ([`without_dangling`]), which the API would refuse as well; a
//! request without the search tool (a model without it, later in a cascade) sends none of the
//! search's blocks.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use superpi_proto::ContentBlock;

use crate::stream::ModelRequest;
use crate::wire::plain_name;

/// Anthropic's BM25 search (natural-language queries, like superpi's own): its tool type and
/// the name its calls carry.
pub const ANTHROPIC_TYPE: &str = "tool_search_tool_bm25_20251119";
pub const ANTHROPIC_NAME: &str = "tool_search_tool_bm25";
/// The provider tag of the hosted blocks each API produces.
pub const ANTHROPIC: &str = "anthropic";
pub const RESPONSES: &str = "openai-responses";

/// Anthropic's search tool.
pub fn anthropic_tool() -> Value {
    json!({"type": ANTHROPIC_TYPE, "name": ANTHROPIC_NAME})
}

/// The Responses API's search tool (run by OpenAI's servers).
pub fn responses_tool() -> Value {
    json!({"type": "tool_search"})
}

/// `(major, minor)` of a Claude model id: `claude-FAMILY-MAJOR[-MINOR][-DATE]`, or the older
/// `claude-MAJOR[-MINOR]-FAMILY`.
fn claude_version(id: &str) -> Option<(u32, u32)> {
    let rest = id.strip_prefix("claude-")?;
    let mut parts = rest.split('-').peekable();
    if parts.peek()?.parse::<u32>().is_err() {
        parts.next();
    }
    let major: u32 = parts.next()?.parse().ok()?;
    // A date (8 digits) is no minor version.
    let minor = parts.next().filter(|p| p.len() < 8).and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// Anthropic documents tool search for Claude Opus, Sonnet and Haiku 4.5 and every later model.
pub fn anthropic_has(model: &str) -> bool {
    let id = model.rsplit('/').next().unwrap_or(model);
    claude_version(id).is_some_and(|version| version >= (4, 5))
}

/// OpenAI documents `tool_search` for gpt-5.4 and later models.
pub fn responses_has(model: &str) -> bool {
    let id = model.rsplit('/').next().unwrap_or(model);
    let Some(version) = id.strip_prefix("gpt-") else { return false };
    let version = version.split('-').next().unwrap_or("");
    let mut numbers = version.split('.').map(|n| n.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next()) {
        (Some(major), None) => major > 5,
        (Some(major), Some(Some(minor))) => (major, minor) >= (5, 4),
        _ => false,
    }
}

/// The names (as sent) of the tools the hosted search blocks of `provider` in a history
/// loaded: Anthropic's `tool_reference`s, the tools of the Responses API's `tool_search_output`.
fn loaded(request: &ModelRequest, provider: &str) -> BTreeSet<String> {
    let (list, key) =
        if provider == ANTHROPIC { ("/content/tool_references", "tool_name") } else { ("/tools", "name") };
    let hosted = request.messages.iter().flat_map(|m| &m.content).filter_map(|b| match b {
        ContentBlock::Hosted { provider: p, block } if p == provider => Some(block),
        _ => None,
    });
    let found = hosted.filter_map(|block| block.pointer(list).and_then(Value::as_array)).flatten();
    found.filter_map(|tool| tool.get(key).and_then(Value::as_str)).map(str::to_string).collect()
}

/// The deferred tools of `request` (by name) its history calls though no search of
/// `provider` in it loaded them: sent without deferral, they are loaded whatever the history
/// lost.
pub fn called_unloaded(request: &ModelRequest, provider: &str) -> BTreeSet<String> {
    let loaded = loaded(request, provider);
    let called: BTreeSet<&str> = (request.messages.iter().flat_map(|m| &m.content))
        .filter_map(|b| match b {
            ContentBlock::ToolCall { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let unloaded = |name: &str| called.contains(name) && !loaded.contains(plain_name(name).as_ref());
    request.tools.iter().filter(|t| t.deferred && unloaded(&t.name)).map(|t| t.name.clone()).collect()
}

/// An Anthropic search block as sent: without each `tool_reference` to a tool `offered` (the
/// request's tools, as sent) does not hold. The API refuses a reference to a tool it was not
/// given, and a tool that left (its server removed or turned off) cannot be loaded anyway.
pub fn without_dangling(block: &Value, offered: &BTreeSet<String>) -> Value {
    let mut block = block.clone();
    if let Some(references) = block.pointer_mut("/content/tool_references").and_then(Value::as_array_mut) {
        references.retain(|r| r.get("tool_name").and_then(Value::as_str).is_some_and(|n| offered.contains(n)));
    }
    block
}

/// For a row that has no built-in search.
pub fn none(_model: &str) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_with_the_search_are_those_documented() {
        for model in ["claude-sonnet-4-5", "claude-opus-4-5-20251101", "claude-haiku-4-5", "anthropic/claude-opus-4-6"]
        {
            assert!(anthropic_has(model), "{model}");
        }
        for model in ["claude-sonnet-4-20250514", "claude-opus-4-1", "claude-3-5-haiku", "claude-sonnet-4-0"] {
            assert!(!anthropic_has(model), "{model}");
        }
        assert!(anthropic_has("claude-sonnet-5"));
        for model in ["gpt-5.4", "gpt-5.5-mini", "gpt-6", "openai/gpt-5.4"] {
            assert!(responses_has(model), "{model}");
        }
        for model in ["gpt-5", "gpt-5.1-codex", "gpt-4.1", "o3", "gpt-5-mini"] {
            assert!(!responses_has(model), "{model}");
        }
    }
}
