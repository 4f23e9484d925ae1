#![allow(clippy::unwrap_used)]

use serde_json::json;
use superpi_proto::tool::ToolDef;

use super::*;

fn tool(name: &str, description: &str) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: description.into(),
        input_schema: json!({"type": "object"}),
        ..ToolDef::default()
    }
}

#[test]
fn tools_are_deferred_past_the_threshold_unless_their_server_says() {
    let defs: Vec<ToolDef> = (0..DEFER_TOOLS).map(|i| tool(&format!("mcp__a__t{i}"), "x")).collect();
    let candidates = |defer: Option<bool>| defs.iter().map(|def| Candidate { def, defer }).collect::<Vec<_>>();
    assert!(deferred(&candidates(None)).iter().all(|d| !d), "at the threshold nothing is deferred");
    assert!(deferred(&candidates(Some(true))).iter().all(|d| *d), "a server may ask for it");
    let mut more = defs.clone();
    more.push(tool("mcp__b__one", "y"));
    let mut candidates: Vec<Candidate> = more.iter().map(|def| Candidate { def, defer: None }).collect();
    candidates.last_mut().unwrap().defer = Some(false);
    let decided = deferred(&candidates);
    assert!(decided[..DEFER_TOOLS].iter().all(|d| *d) && !decided[DEFER_TOOLS], "{decided:?}");
    // Few tools with large schemas are deferred too.
    let mut big = tool("mcp__c__big", "z");
    big.input_schema = json!({"description": "x".repeat(DEFER_BYTES)});
    assert_eq!(deferred(&[Candidate { def: &big, defer: None }]), vec![true]);
}

#[test]
fn a_search_ranks_names_over_descriptions_and_selects_exact_names() {
    let tools = vec![
        tool("mcp__gh__list_issues", "List the issues of a repository"),
        tool("mcp__gh__create_issue", "Open an issue"),
        tool("mcp__db__query", "Run SQL; results as issue-free rows"),
    ];
    let found = search(&tools, &json!({"query": "create issue"}));
    assert_eq!(found.names, ["mcp__gh__create_issue", "mcp__gh__list_issues", "mcp__db__query"]);
    assert!(found.result.output.contains("input schema: {\"type\":\"object\"}"), "{}", found.result.output);
    assert_eq!(found.result.structured, Some(json!({"tools": found.names})));
    let found = search(&tools, &json!({"query": "issue", "limit": 1}));
    assert_eq!(found.names, ["mcp__gh__list_issues"]);
    let found = search(&tools, &json!({"query": "select:mcp__db__query, nothing"}));
    assert_eq!(found.names, ["mcp__db__query"]);
    let none = search(&tools, &json!({"query": "weather"}));
    assert!(none.names.is_empty() && !none.result.is_error && none.result.output.starts_with("No tool matches"));
    let bad = search(&tools, &json!({"q": "x"}));
    assert!(bad.result.is_error && bad.names.is_empty());
}
