//! Deferred tools: with many MCP tools attached, their definitions are not sent with every
//! request. Past a threshold ([`DEFER_TOOLS`] tools or [`DEFER_BYTES`] bytes of definitions),
//! the tools of the servers whose settings do not say `"defer": false` are deferred (a server
//! saying `"defer": true` always is), and the model gets [`TOOL_SEARCH`] instead: a query
//! answers the matching deferred tools' names, descriptions and schemas, and those are sent
//! with the conversation's later requests. Pure functions.

use serde::Deserialize;
use serde_json::json;
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};

/// The tool the model searches deferred tools with.
pub const TOOL_SEARCH: &str = "tool_search";

/// More attached MCP tools than this defers those whose server does not say.
pub const DEFER_TOOLS: usize = 30;
/// Definitions (name, description, schemas as JSON) larger than this, in bytes, too.
pub const DEFER_BYTES: usize = 32 * 1024;

/// Matches a search answers when the call names no `limit`, and the most it may ask.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;

/// What a server's settings say of deferral, for one tool.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub def: &'a ToolDef,
    pub defer: Option<bool>,
}

/// Which of `tools` are deferred: none under the threshold but those whose server says
/// `defer: true`; over it, all but those whose server says `defer: false`.
pub fn deferred(tools: &[Candidate<'_>]) -> Vec<bool> {
    let bytes: usize = tools.iter().map(|t| def_bytes(t.def)).sum();
    let over = tools.len() > DEFER_TOOLS || bytes > DEFER_BYTES;
    tools.iter().map(|t| t.defer.unwrap_or(over)).collect()
}

/// The bytes a tool's definition adds to a request (about: vendors wrap it a little).
pub fn def_bytes(def: &ToolDef) -> usize {
    def.name.len()
        + def.description.len()
        + def.input_schema.to_string().len()
        + def.output_schema.as_ref().map_or(0, |s| s.to_string().len())
}

/// The facts of `tool_search`: it reads nothing but the tool list, so every mode lets it run.
/// Its `mcp_server` is `*` (the servers' deferred tools): a harness offers it as it offers
/// the servers' tools (`Harness::offers_live`).
pub fn search_def(deferred: usize) -> ToolDef {
    ToolDef {
        name: TOOL_SEARCH.into(),
        description: format!(
            "Find tools of the connected MCP servers: {deferred} more tools exist than are listed. Search by \
             keywords (matched against their names and descriptions), or `select:NAME,NAME` for exact names. \
             The answer gives each match's name, description and input schema; call them by that name, and \
             they stay available for the rest of the conversation."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords, or select:NAME,NAME"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                          "description": "Most matches to answer (default 5)"}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        effects: vec![Effect::Read],
        ui: ToolUi { kind: ToolKind::Search, title: Some("Search tools".into()), ..ToolUi::default() },
        turn_only: true,
        mcp_server: Some("*".into()),
        ..ToolDef::default()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

/// A search's answer, and the names it found (which join the conversation's requests).
#[derive(Debug, Clone)]
pub struct Found {
    pub result: ToolCallResult,
    pub names: Vec<String>,
}

/// Searches `tools` (the deferred ones) for a call's arguments.
pub fn search(tools: &[ToolDef], arguments: &serde_json::Value) -> Found {
    let args: Args = match serde_json::from_value(arguments.clone()) {
        Ok(args) => args,
        Err(e) => return Found { result: ToolCallResult::error(format!("invalid arguments: {e}")), names: Vec::new() },
    };
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let matches = ranked(tools, &args.query, limit);
    let names: Vec<String> = matches.iter().map(|d| d.name.clone()).collect();
    let output = match matches.is_empty() {
        true => format!("No tool matches `{}`. Try other keywords.", args.query.trim()),
        false => matches
            .iter()
            .map(|d| format!("{}: {}\ninput schema: {}", d.name, d.description, d.input_schema))
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    let structured = json!({"tools": names});
    let result =
        ToolCallResult { output, is_error: false, structured: Some(structured), details: None, images: vec![] };
    Found { result, names }
}

/// The tools `query` names (`select:A,B`), or those its words match best: a word in the
/// name counts twice, one in the description once; ties keep the list's order.
fn ranked<'a>(tools: &'a [ToolDef], query: &str, limit: usize) -> Vec<&'a ToolDef> {
    if let Some(names) = query.trim().strip_prefix("select:") {
        let wanted: Vec<&str> = names.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
        return tools.iter().filter(|t| wanted.contains(&t.name.as_str())).take(limit).collect();
    }
    let words: Vec<String> =
        query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    let mut scored: Vec<(usize, usize, &ToolDef)> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let (name, description) = (tool.name.to_lowercase(), tool.description.to_lowercase());
            let score = words.iter().map(|w| 2 * usize::from(name.contains(w)) + usize::from(description.contains(w)));
            (score.sum(), i, tool)
        })
        .filter(|(score, _, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(limit).map(|(_, _, tool)| tool).collect()
}

#[cfg(test)]
#[path = "deferred_tests.rs"]
mod tests;
