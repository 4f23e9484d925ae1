//! The vendors' built-in tool search, as the fakes hold requests to it and run it.
//!
//! Anthropic (the tool search tool): a `tool_search_tool_regex_*` or `tool_search_tool_bm25_*`
//! tool, never itself deferred, for tools marked `defer_loading: true`; only Claude 4.5 and
//! later models; the answer's `server_tool_use` and `tool_search_tool_result` blocks come back
//! in the assistant turn, each `tool_reference` naming a tool of the request. Deferred tools
//! without that tool are a client's own search, whose tool results carry the `tool_reference`
//! blocks (what Claude Code sends). OpenAI (the
//! Responses API): a `tool_search` tool for functions marked `defer_loading: true`, gpt-5.4 and
//! later; its `tool_search_call` and `tool_search_output` items come back as input.
//!
//! The documents give the shapes, not the error texts: the wording of these refusals is the
//! fake's. One rule is the fake's as well: a deferred tool may be called (its call in the
//! history) only after a search of the same history loaded it, which is what the vendor's
//! model can do; a history that lost the search's blocks is refused. A search without its
//! result is refused but in the last message, an assistant turn that `pause_turn` paused and
//! the client sends back, unchanged and with nothing after it, for the model to go on.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{Vendor, Violation};

/// The deferred tools of a request and its search tool.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    /// Every tool's name (Anthropic's references must name one).
    pub names: BTreeSet<String>,
    /// The deferred tools: name and description, and the whole definition.
    pub deferred: Vec<(String, String, Value)>,
    /// The search tool's name (Anthropic) or `tool_search` (Responses), when there is one.
    pub search: Option<String>,
}

impl Catalog {
    fn is_deferred(&self, name: &str) -> bool {
        self.deferred.iter().any(|(n, _, _)| n == name)
    }

    /// The deferred tools a query finds: those with a word of it in their name or description
    /// (at most five), as a search would.
    pub fn search(&self, query: &str) -> Vec<&(String, String, Value)> {
        let words: Vec<String> =
            query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
        self.deferred
            .iter()
            .filter(|(name, description, _)| {
                let text = format!("{name} {description}").to_lowercase();
                words.iter().any(|w| text.contains(w.as_str()))
            })
            .take(5)
            .collect()
    }
}

fn deferred(tool: &Value) -> bool {
    tool.get("defer_loading") == Some(&Value::Bool(true))
}

fn name(value: &Value) -> &str {
    value.get("name").and_then(Value::as_str).unwrap_or("")
}

/// Anthropic's search tool types: `tool_search_tool_regex_DATE` or `tool_search_tool_bm25_DATE`,
/// and the name each must carry.
pub fn anthropic_search_name(tool: &Value) -> Option<&'static str> {
    let kind = tool.get("type").and_then(Value::as_str)?;
    let dated = |prefix: &str| {
        kind.strip_prefix(prefix).is_some_and(|date| date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()))
    };
    if dated("tool_search_tool_regex_") {
        Some("tool_search_tool_regex")
    } else if dated("tool_search_tool_bm25_") {
        Some("tool_search_tool_bm25")
    } else {
        None
    }
}

fn anthropic(message: impl Into<String>) -> Violation {
    Violation::new(Vendor::Anthropic, message)
}

/// Anthropic: the search tool and the deferred tools of `tools`.
pub fn anthropic_catalog(model: &str, tools: &[Value]) -> Result<Catalog, Violation> {
    let mut catalog = Catalog::default();
    for (i, tool) in tools.iter().enumerate() {
        catalog.names.insert(name(tool).to_string());
        if let Some(expected) = anthropic_search_name(tool) {
            if name(tool) != expected {
                return Err(anthropic(format!("tools.{i}.name: Input should be '{expected}'")));
            }
            if deferred(tool) {
                return Err(anthropic(format!("tools.{i}: the tool search tool cannot have defer_loading set")));
            }
            if catalog.search.replace(expected.to_string()).is_some() {
                return Err(anthropic("tools: only one tool search tool may be provided"));
            }
        } else if deferred(tool) {
            let description = tool.get("description").and_then(Value::as_str).unwrap_or("");
            catalog.deferred.push((name(tool).to_string(), description.to_string(), tool.clone()));
        }
    }
    // Deferred tools without the server's search tool are a client's own search: one of its
    // tools answers with `tool_reference` blocks (Claude Code sends such requests).
    if catalog.search.is_some() && !crate::tool_search::anthropic_has(model) {
        return Err(anthropic(format!("'{model}' does not support the tool search tool.")));
    }
    Ok(catalog)
}

/// Anthropic: the search's blocks in the history and the calls of deferred tools.
pub fn anthropic_history(messages: &[Value], catalog: &Catalog) -> Result<(), Violation> {
    let mut loaded: BTreeSet<&str> = BTreeSet::new();
    for (i, message) in messages.iter().enumerate() {
        let blocks = message.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let mut searches: Vec<&str> = Vec::new();
        for (j, block) in blocks.iter().enumerate() {
            let at = format!("messages.{i}.content.{j}");
            match block.get("type").and_then(Value::as_str).unwrap_or("") {
                "server_tool_use" => {
                    let called = name(block);
                    if catalog.search.as_deref() != Some(called) {
                        return Err(anthropic(format!(
                            "{at}.server_tool_use.name: '{called}' is not a server tool of this request"
                        )));
                    }
                    if !block.get("input").is_some_and(Value::is_object) {
                        return Err(anthropic(format!(
                            "{at}.server_tool_use.input: Input should be a valid dictionary"
                        )));
                    }
                    searches.push(block.get("id").and_then(Value::as_str).unwrap_or(""));
                }
                "tool_search_tool_result" => {
                    let id = block.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                    if !searches.contains(&id) {
                        return Err(anthropic(format!(
                            "{at}: tool_search_tool_result tool_use_id {id} has no server_tool_use before it"
                        )));
                    }
                    searches.retain(|s| *s != id);
                    let content = block.get("content").unwrap_or(&Value::Null);
                    match content.get("type").and_then(Value::as_str) {
                        Some("tool_search_tool_search_result") => {
                            let references = content.get("tool_references").and_then(Value::as_array);
                            for reference in references.into_iter().flatten() {
                                let tool = reference.get("tool_name").and_then(Value::as_str).unwrap_or("");
                                if reference.get("type").and_then(Value::as_str) != Some("tool_reference")
                                    || !catalog.names.contains(tool)
                                {
                                    return Err(anthropic(format!(
                                        "{at}: Tool reference '{tool}' has no corresponding tool definition"
                                    )));
                                }
                                loaded.insert(tool);
                            }
                        }
                        Some("tool_search_tool_result_error") => {}
                        _ => return Err(anthropic(format!("{at}.tool_search_tool_result.content: Field required"))),
                    }
                }
                // A client's own search: its tool's result holds `tool_reference` blocks.
                "tool_result" => {
                    let content = block.get("content").and_then(Value::as_array).map(Vec::as_slice);
                    for (k, part) in content.unwrap_or_default().iter().enumerate() {
                        if part.get("type").and_then(Value::as_str) != Some("tool_reference") {
                            continue;
                        }
                        let tool = part.get("tool_name").and_then(Value::as_str).unwrap_or("");
                        if !catalog.names.contains(tool) {
                            return Err(anthropic(format!(
                                "{at}.content.{k}: Tool reference '{tool}' has no corresponding tool definition"
                            )));
                        }
                        loaded.insert(tool);
                    }
                }
                "tool_use" => {
                    let tool = name(block);
                    if catalog.is_deferred(tool) && !loaded.contains(tool) {
                        return Err(anthropic(format!(
                            "{at}.tool_use: '{tool}' is deferred and no tool search of this conversation loaded it"
                        )));
                    }
                }
                _ => {}
            }
        }
        // A paused turn sent back to go on may end with a search not run yet.
        let paused = i + 1 == messages.len() && message.get("role").and_then(Value::as_str) == Some("assistant");
        if let Some(id) = searches.first().filter(|_| !paused) {
            return Err(anthropic(format!(
                "messages.{i}: server_tool_use {id} was found without its tool_search_tool_result after it"
            )));
        }
    }
    Ok(())
}

fn responses(message: impl Into<String>, param: &str) -> Violation {
    Violation::new(Vendor::OpenaiResponses, message).param(param)
}

/// Anthropic: the search a paused turn sent back ends with, not run yet (its id and query).
pub fn anthropic_pending(body: &Value) -> Option<(String, String)> {
    let last = body.get("messages")?.as_array()?.last()?;
    let assistant = last.get("role").and_then(Value::as_str) == Some("assistant");
    let blocks = last.get("content")?.as_array().filter(|_| assistant)?;
    let call = blocks.iter().rev().find(|b| b.get("type").and_then(Value::as_str) == Some("server_tool_use"))?;
    let id = call.get("id").and_then(Value::as_str)?;
    let answered = blocks.iter().any(|b| b.get("tool_use_id").and_then(Value::as_str) == Some(id));
    let query = call.pointer("/input/query").and_then(Value::as_str).unwrap_or("");
    (!answered).then(|| (id.to_string(), query.to_string()))
}

/// The Responses API: the `tool_search` tool and the deferred functions of `tools`.
pub fn responses_catalog(model: &str, tools: &[Value]) -> Result<Catalog, Violation> {
    let mut catalog = Catalog::default();
    for (i, tool) in tools.iter().enumerate() {
        match tool.get("type").and_then(Value::as_str) {
            Some("tool_search") if catalog.search.replace("tool_search".into()).is_some() => {
                return Err(responses("Only one tool_search tool may be provided.", &format!("tools[{i}]")));
            }
            Some("function") if deferred(tool) => {
                let description = tool.get("description").and_then(Value::as_str).unwrap_or("");
                catalog.deferred.push((name(tool).to_string(), description.to_string(), tool.clone()));
            }
            _ => {}
        }
        catalog.names.insert(name(tool).to_string());
    }
    if !catalog.deferred.is_empty() && catalog.search.is_none() {
        return Err(responses("Tools with 'defer_loading' require a 'tool_search' tool.", "tools"));
    }
    if catalog.search.is_some() && !crate::tool_search::responses_has(model) {
        return Err(responses(format!("The model '{model}' does not support the 'tool_search' tool."), "tools"));
    }
    Ok(catalog)
}

/// The Responses API: search items in the input, and the calls of deferred functions.
pub fn responses_items(items: &[Value], catalog: &Catalog) -> Result<(), Violation> {
    let mut loaded: BTreeSet<&str> = BTreeSet::new();
    let mut searched = false;
    for (i, item) in items.iter().enumerate() {
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "tool_search_call" => searched = true,
            "tool_search_output" => {
                if !searched {
                    return Err(responses(
                        format!("input[{i}]: a tool_search_output needs its tool_search_call before it."),
                        "input",
                    ));
                }
                for tool in item.get("tools").and_then(Value::as_array).into_iter().flatten() {
                    loaded.insert(name(tool));
                }
            }
            "function_call" => {
                let tool = name(item);
                if catalog.is_deferred(tool) && !loaded.contains(tool) {
                    return Err(responses(
                        format!("input[{i}]: '{tool}' is deferred and no tool_search_output of this input loaded it."),
                        "input",
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A body without the deferred tools no search of its history loaded: what the vendor puts
/// in the model's context, and so what it counts as input.
pub fn in_context(vendor: Vendor, body: &Value) -> Value {
    let mut body = body.clone();
    let history = match vendor {
        Vendor::Anthropic => body.get("messages"),
        Vendor::OpenaiResponses => body.get("input"),
        _ => return body,
    };
    let text = history.map(Value::to_string).unwrap_or_default();
    let key = if vendor == Vendor::Anthropic { "tool_name" } else { "name" };
    if let Some(tools) = body.get_mut("tools").and_then(Value::as_array_mut) {
        tools.retain(|tool| !deferred(tool) || text.contains(&format!("\"{key}\":\"{}\"", name(tool))));
    }
    body
}

/// The deferred tools of a request, for a fake to search.
pub fn catalog_of(vendor: Vendor, body: &Value) -> Option<Catalog> {
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    let tools = body.get("tools").and_then(Value::as_array)?;
    let catalog = match vendor {
        Vendor::Anthropic => anthropic_catalog(model, tools).ok()?,
        Vendor::OpenaiResponses => responses_catalog(model, tools).ok()?,
        _ => return None,
    };
    catalog.search.is_some().then_some(catalog)
}

/// Anthropic's `tool_search_tool_result` content for the tools found.
pub fn anthropic_result(found: &[&(String, String, Value)]) -> Value {
    let references: Vec<Value> =
        found.iter().map(|(name, _, _)| json!({"type": "tool_reference", "tool_name": name})).collect();
    json!({"type": "tool_search_tool_search_result", "tool_references": references})
}

#[cfg(test)]
#[path = "tool_search_tests.rs"]
mod tests;
