//! Tool schemas every vendor accepts: the built-in tools' and the kind MCP servers publish,
//! translated by each request builder, pass the fakes' rules (Gemini's OpenAPI subset above all).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::{Value, json};
use superpi_proto::Message;
use superpi_providers::testing::rules::{anthropic, gemini, openai};
use superpi_providers::{ModelRequest, ProviderKind, ProvidersConfig, ToolSpec, route};

fn bodies(tools: Vec<ToolSpec>) -> Vec<(&'static str, Value)> {
    let mut config = ProvidersConfig::default();
    config.apply_env(|name| name.ends_with("_API_KEY").then(|| "k".to_string()));
    let request = ModelRequest { messages: vec![Message::user_text("hi")], tools, ..Default::default() };
    ["gpt-4o", "claude-sonnet-4-5", "gemini-2.5-flash"]
        .into_iter()
        .map(|model| {
            let route = route(model, &config).unwrap();
            let wire = match route.kind {
                ProviderKind::Anthropic => superpi_providers::anthropic::build_request(&route, &request),
                ProviderKind::Gemini => superpi_providers::gemini::build_request(&route, &request),
                _ => superpi_providers::openai::build_request(&route, &request),
            };
            (model, serde_json::from_slice(&wire.body).unwrap())
        })
        .collect()
}

fn assert_accepted(tools: Vec<ToolSpec>) {
    for (model, body) in bodies(tools) {
        let verdict = match model {
            "gpt-4o" => openai::check(&body),
            "claude-sonnet-4-5" => anthropic::check(&body),
            _ => gemini::check(&body),
        };
        assert_eq!(verdict, Ok(()), "{model}: {body:#}");
    }
}

#[test]
fn every_built_in_tool_passes_each_vendors_rules() {
    let sandbox =
        superpi_sandbox::Sandbox::new(superpi_sandbox::SandboxConfig::new(std::env::temp_dir())).expect("sandbox");
    let tools: Vec<ToolSpec> = sandbox
        .tools()
        .into_iter()
        .map(|tool| ToolSpec {
            name: tool.name,
            description: tool.description,
            input_schema: tool.input_schema,
            deferred: false,
        })
        .collect();
    assert!(tools.iter().any(|t| t.name == "bash"), "the catalogue has its tools");
    // Sent as is, Gemini refuses them (bash's `exclusiveMinimum`): the translation is what passes.
    let raw = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations":
        tools.iter().map(|t| json!({"name": t.name, "description": t.description, "parameters": t.input_schema})).collect::<Vec<_>>()}]});
    assert!(gemini::check(&raw).is_err());
    assert_accepted(tools);
}

/// Schemas of the kind MCP servers publish (zod-to-json-schema, pydantic, hand-written).
fn hostile() -> Vec<Value> {
    let huge_enum: Vec<Value> = (0..2000).map(|i| json!(format!("value-{i}"))).collect();
    let mut deep = json!({"type": "string"});
    for _ in 0..55 {
        deep = json!({"type": "object", "properties": {"next": deep}});
    }
    vec![
        // pydantic: $defs, $ref with siblings, anyOf with null, titles, defaults.
        json!({"$defs": {"Mode": {"enum": ["fast", "slow"], "title": "Mode", "type": "string"},
                          "Opts": {"properties": {"mode": {"$ref": "#/$defs/Mode"}, "depth": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}},
                                   "required": ["mode"], "title": "Opts", "type": "object"}},
               "properties": {"opts": {"$ref": "#/$defs/Opts", "description": "options"}, "query": {"title": "Query", "type": "string"}},
               "required": ["query", "opts"], "title": "search_args", "type": "object"}),
        // zod-to-json-schema: $schema, additionalProperties, exclusive bounds, formats, const, oneOf.
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": false,
               "properties": {"url": {"type": "string", "format": "uri"}, "email": {"type": "string", "format": "email"},
                              "n": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.5},
                              "kind": {"const": "fetch"},
                              "body": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"json": {}}}]},
                              "headers": {"type": "object", "additionalProperties": {"type": "string"}}},
               "required": ["url"]}),
        // Recursive refs (a tree), through `definitions`.
        json!({"type": "object", "properties": {"root": {"$ref": "#/definitions/node"}},
               "definitions": {"node": {"type": "object", "properties": {"name": {"type": "string"},
                   "children": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}}}),
        // Booleans as schemas, patternProperties, type lists, tuple items, number and mixed enums.
        json!({"type": "object", "properties": {"anything": true, "nothing": false,
               "env": {"type": "object", "patternProperties": {"^[A-Z_]+$": {"type": "string"}}},
               "limit": {"type": ["integer", "null"], "minimum": 1},
               "id": {"type": ["string", "integer"]},
               "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
               "tuple": {"type": "array", "prefixItems": [{"type": "number"}]},
               "level": {"type": "integer", "enum": [1, 2, 3]},
               "mixed": {"enum": ["a", 1, null, true]},
               "list": {"type": "array"},
               "open": {"type": "array", "items": true},
               "null_only": {"type": "null"},
               "huge": {"type": "string", "enum": huge_enum}},
               "required": ["anything", "nothing", "ghost"]}),
        // allOf, not, if/then/else, draft-04 boolean exclusiveMinimum, a dangling $ref.
        json!({"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
                                           {"properties": {"b": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}}}],
               "not": {"required": ["c"]}, "if": {"properties": {"a": {"const": "x"}}}, "then": {"required": ["b"]},
               "properties": {"d": {"$ref": "#/$defs/missing"}, "e": {"$ref": "https://example.com/schema.json"}}}),
        // No type at the root, 55 levels deep (past the translation's depth cut), a root that is not an object.
        json!({"properties": {"deep": deep}}),
        json!({"type": "string"}),
        json!(true),
        json!({}),
    ]
}

#[test]
fn hostile_schemas_pass_each_vendors_rules() {
    for (i, schema) in hostile().into_iter().enumerate() {
        let tool = ToolSpec {
            name: format!("mcp_tool_{i}"),
            description: "An MCP tool".into(),
            input_schema: schema,
            deferred: false,
        };
        assert_accepted(vec![tool]);
    }
}
