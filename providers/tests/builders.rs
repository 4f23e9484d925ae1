//! The request builders against the vendors' rules: whatever history a store, a fork or a
//! seeded gateway conversation holds (calls without results, results without calls, blank
//! text, repeated or foreign ids, odd tool names, hostile schemas), the request each builder
//! makes passes the fake's rule checker, and the calls and results it keeps still pair up.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use proptest::prelude::*;
use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Effort, Message, Role};
use superpi_providers::testing::rules::{anthropic, gemini, openai, responses};
use superpi_providers::{ModelRequest, ProvidersConfig, ToolSpec, route};

fn config(thinking: Option<u32>) -> ProvidersConfig {
    let mut config = ProvidersConfig::default();
    config.apply_env(|name| name.ends_with("_API_KEY").then(|| "k".to_string()));
    config.anthropic.thinking_budget = thinking;
    config.gemini.thinking_budget = thinking;
    config
}

/// Builds `request` for `model` and runs the vendor's rules over the body.
fn check(model: &str, request: &ModelRequest, thinking: Option<u32>) -> Result<Value, String> {
    let route = route(model, &config(thinking)).unwrap();
    let wire = (superpi_providers::vendor::wire_for(&route).build_request)(&route, request);
    let body: Value = serde_json::from_slice(&wire.body).unwrap();
    let verdict = match route.kind {
        _ if route.responses => responses::check(&body),
        superpi_providers::ProviderKind::Anthropic => anthropic::check(&body),
        superpi_providers::ProviderKind::Gemini => gemini::check_for(&route.model, &body),
        _ => openai::check(&body),
    };
    verdict.map(|()| body.clone()).map_err(|v| format!("{model}: {v}\n{body:#}"))
}

/// A 1x1 PNG, in base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

const MODELS: [&str; 13] = [
    "gpt-4o",
    "o4-mini",
    "gpt-5-mini",
    // OpenAI's Responses API.
    "gpt-5-codex",
    "codex-mini-latest",
    "o3-pro",
    "claude-sonnet-4-5",
    "claude-3-5-haiku-latest",
    "gemini-3-flash-preview",
    "gemini-2.5-flash",
    "gemini-2.5-pro",
    "gemini-2.5-flash-lite",
    "gemini-3-pro-preview",
];

fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("call_1".to_string()),
        Just("call_2".to_string()),
        Just("call:1".to_string()),
        Just("toolu_01".to_string()),
        Just(String::new()),
        Just("x".repeat(64)),
        Just("ls_resp-g1_1".to_string()),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ls".to_string()),
        Just("bash".to_string()),
        Just("mcp.server/search files".to_string()),
        Just(String::new()),
        Just("9lives".to_string()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), Just("  \n".to_string()), Just("hi".to_string()), Just("two words".to_string())]
}

fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => Just(json!({"path": "."})),
        1 => Just(json!({})),
        1 => Just(Value::Null),
        1 => Just(json!("not an object")),
        1 => Just(json!([1, 2])),
    ]
}

fn block() -> impl Strategy<Value = ContentBlock> {
    prop_oneof![
        3 => text().prop_map(ContentBlock::text),
        1 => (text(), prop_oneof![
                Just(None),
                Just(Some("sig".to_string())),
                Just(Some("gemini:g".to_string())),
                Just(Some(format!("openai:{}", responses::encrypted_reasoning("rs_1")))),
            ], any::<bool>())
            .prop_map(|(thinking, signature, redacted)| ContentBlock::Thinking { thinking, signature, redacted }),
        3 => (id(), name(), arguments()).prop_map(|(id, name, arguments)| ContentBlock::ToolCall { id, name, arguments }),
        1 => Just(ContentBlock::image("image/png", PNG)),
        1 => Just(ContentBlock::Image { media_type: "image/jpeg".into(), data: None, sha256: Some("ab".into()) }),
        3 => (id(), name(), text(), any::<bool>()).prop_map(|(tool_call_id, name, output, is_error)| ContentBlock::ToolResult {
            tool_call_id, name, output, is_error, structured: None, details: None,
        }),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![Just(Role::System), Just(Role::User), Just(Role::Assistant), Just(Role::Tool)];
    (role, prop::collection::vec(block(), 0..4)).prop_map(|(role, content)| Message {
        role,
        content,
        usage: None,
        stop_reason: None,
    })
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "ls".into(),
            description: "List".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            deferred: false,
        },
        ToolSpec {
            name: "mcp.server/search files".into(),
            description: "Search".into(),
            input_schema: json!(true),
            deferred: false,
        },
    ]
}

/// (call ids, output ids) of a Responses API body, in order.
fn responses_pairs(body: &Value) -> (Vec<String>, Vec<String>) {
    let ids = |kind: &str| -> Vec<String> {
        let items = body["input"].as_array().unwrap().iter().filter(|item| item["type"] == kind);
        items.map(|item| item["call_id"].as_str().unwrap().to_string()).collect()
    };
    (ids("function_call"), ids("function_call_output"))
}

/// (call ids, result ids) of an OpenAI body, in order.
fn openai_pairs(body: &Value) -> (Vec<String>, Vec<String>) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for message in body["messages"].as_array().unwrap() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            calls.push(call["id"].as_str().unwrap().to_string());
        }
        if message["role"] == "tool" {
            results.push(message["tool_call_id"].as_str().unwrap().to_string());
        }
    }
    (calls, results)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_history_makes_a_request_every_vendor_accepts(
        history in prop::collection::vec(message(), 0..10),
        system in prop_oneof![Just(None), Just(Some(String::new())), Just(Some("Be brief.".to_string()))],
        thinking in prop_oneof![Just(None), Just(Some(0u32)), Just(Some(500u32)), Just(Some(4000u32)), Just(Some(100_000u32))],
        max_tokens in prop_oneof![Just(None), Just(Some(0u32)), Just(Some(256u32))],
        effort in prop_oneof![Just(None), proptest::sample::select(Effort::ALL.to_vec()).prop_map(Some)],
    ) {
        let request = ModelRequest { model: String::new(), system, messages: history, tools: tools(), max_tokens, effort, output_schema: None };
        for model in MODELS {
            let body = check(model, &request, thinking).map_err(TestCaseError::fail)?;
            if model == "gpt-4o" {
                // Every call is answered, once: nothing was dropped on the way.
                let (calls, results) = openai_pairs(&body);
                prop_assert_eq!(calls, results);
            }
            if model == "gpt-5-codex" {
                let (calls, outputs) = responses_pairs(&body);
                prop_assert_eq!(calls, outputs);
            }
            if model == "claude-sonnet-4-5" {
                // The moving end of the history is always a breakpoint (the rules count them).
                let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
                let cacheable: Vec<&Value> = last["content"].as_array().into_iter().flatten()
                    .filter(|b| b["type"] != "thinking" && b["type"] != "redacted_thinking").collect();
                prop_assert!(cacheable.last().is_none_or(|b| b.get("cache_control").is_some()), "{}", body);
            }
        }
    }
}

/// The paths of the blocks of an Anthropic request that carry `cache_control`.
fn breakpoints(body: &Value) -> Vec<String> {
    let mut marked = Vec::new();
    let mut walk = |at: String, blocks: &Value| {
        for (i, block) in blocks.as_array().into_iter().flatten().enumerate() {
            if block.get("cache_control").is_some() {
                assert_eq!(block["cache_control"], json!({"type": "ephemeral"}));
                marked.push(format!("{at}.{i}"));
            }
        }
    };
    walk("tools".into(), &body["tools"]);
    walk("system".into(), &body["system"]);
    for (i, message) in body["messages"].as_array().into_iter().flatten().enumerate() {
        walk(format!("messages.{i}"), &message["content"]);
    }
    marked
}

#[test]
fn anthropic_caches_the_tools_the_system_prompt_and_the_last_two_user_turns() {
    let thinking =
        ContentBlock::Thinking { thinking: "Look first.".into(), signature: Some("sig".into()), redacted: false };
    let call = |id: &str| ContentBlock::ToolCall { id: id.into(), name: "ls".into(), arguments: json!({}) };
    let message = |role, content| Message { role, content, usage: None, stop_reason: None };
    let mut history = vec![Message::user_text("walk the tree")];
    for step in ["call_1", "call_2"] {
        history.push(message(Role::Assistant, vec![thinking.clone(), call(step)]));
        history.push(message(Role::Tool, vec![ContentBlock::tool_result(step, "ls", "a b")]));
    }
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        messages: history,
        tools: tools(),
        effort: Some(Effort::Low),
        ..Default::default()
    };
    let body = check("claude-sonnet-4-5", &request, None).unwrap();
    assert_eq!(body["system"][0]["text"], "Be brief.");
    // The last tool, the system prompt, the last step's results (written for the next step)
    // and the step's before (where the last request wrote its own).
    assert_eq!(breakpoints(&body), ["tools.1", "system.0", "messages.2.0", "messages.4.0"]);

    // No tools and no system prompt: only the history's two, and a first prompt has one.
    let bare = ModelRequest { system: None, tools: Vec::new(), ..request.clone() };
    assert_eq!(breakpoints(&check("claude-sonnet-4-5", &bare, None).unwrap()), ["messages.2.0", "messages.4.0"]);
    let first = ModelRequest { messages: vec![Message::user_text("hi")], ..request };
    assert_eq!(
        breakpoints(&check("claude-sonnet-4-5", &first, None).unwrap()),
        ["tools.1", "system.0", "messages.0.0"]
    );
}

#[test]
fn a_history_cut_after_a_tool_call_is_completed_for_every_vendor() {
    let history = vec![
        Message::user_text("run it"),
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall { id: "call_9".into(), name: "bash".into(), arguments: json!({}) }],
            usage: None,
            stop_reason: None,
        },
        Message::user_text("still there?"),
    ];
    let request = ModelRequest { messages: history, ..Default::default() };
    for model in MODELS {
        let body = check(model, &request, None).unwrap();
        assert!(body.to_string().contains(superpi_providers::history::INTERRUPTED), "{model}: {body}");
    }
}

#[test]
fn gemini_3_gets_the_documented_dummy_signature_for_a_foreign_call_in_progress() {
    let history = vec![
        Message::user_text("run it"),
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall { id: "toolu_1".into(), name: "bash".into(), arguments: json!({}) }],
            usage: None,
            stop_reason: None,
        },
    ];
    let request = ModelRequest { messages: history, ..Default::default() };
    let body = check("gemini-3-pro-preview", &request, None).unwrap();
    assert_eq!(body["contents"][1]["parts"][0]["thoughtSignature"], superpi_providers::gemini::DUMMY_SIGNATURE);
    let older = check("gemini-2.5-flash", &request, None).unwrap();
    assert!(older["contents"][1]["parts"][0].get("thoughtSignature").is_none());
}

fn image_prompt() -> ModelRequest {
    let prompt = Message {
        role: Role::User,
        content: vec![ContentBlock::text("what is this?"), ContentBlock::image("image/png", PNG)],
        usage: None,
        stop_reason: None,
    };
    ModelRequest { messages: vec![prompt], ..Default::default() }
}

#[test]
fn an_image_reaches_each_vendor_in_its_documented_shape() {
    let request = image_prompt();
    let openai = check("gpt-4o", &request, None).unwrap();
    assert_eq!(
        openai["messages"][0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
        ])
    );
    let anthropic = check("claude-sonnet-4-5", &request, None).unwrap();
    assert_eq!(
        anthropic["messages"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG},
               "cache_control": {"type": "ephemeral"}})
    );
    let gemini = check("gemini-2.5-flash", &request, None).unwrap();
    assert_eq!(gemini["contents"][0]["parts"][1], json!({"inline_data": {"mime_type": "image/png", "data": PNG}}));
    let responses = check("gpt-5-codex", &request, None).unwrap();
    assert_eq!(
        responses["input"][0]["content"],
        json!([
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}"), "detail": "auto"},
        ])
    );
    // A text prompt stays a string for OpenAI (what every compatible server takes).
    let text = check("gpt-4o", &ModelRequest { messages: vec![Message::user_text("hi")], ..Default::default() }, None);
    assert_eq!(text.unwrap()["messages"][0]["content"], "hi");
}

/// The `read` tool's image: after the results, as the user's image part in each vendor's
/// shape (no vendor takes one in every kind of tool result), named by its call.
#[test]
fn an_image_a_tool_returned_reaches_each_vendor_after_the_results() {
    let read = |content: Vec<ContentBlock>, role: Role| Message { role, content, usage: None, stop_reason: None };
    let request = ModelRequest {
        messages: vec![
            Message::user_text("what does chart.png show?"),
            read(
                vec![ContentBlock::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "chart.png"}),
                }],
                Role::Assistant,
            ),
            read(
                vec![
                    ContentBlock::ToolResult {
                        tool_call_id: "call_1".into(),
                        name: "read".into(),
                        output: "chart.png: an image (image/png, 70 bytes)".into(),
                        is_error: false,
                        structured: None,
                        details: None,
                    },
                    ContentBlock::image("image/png", PNG),
                ],
                Role::Tool,
            ),
        ],
        ..Default::default()
    };
    let label = json!({"type": "text", "text": "[the image that read call call_1 returned]"});
    let openai = check("gpt-4o", &request, None).unwrap();
    let messages = openai["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(
        messages[3],
        json!({"role": "user", "content": [label, {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}]})
    );
    let anthropic = check("claude-sonnet-4-5", &request, None).unwrap();
    let turn = &anthropic["messages"][2]["content"];
    assert_eq!(turn[0]["type"], "tool_result", "results first: {turn}");
    assert_eq!(
        turn[2],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG},
               "cache_control": {"type": "ephemeral"}})
    );
    let gemini = check("gemini-2.5-flash", &request, None).unwrap();
    let parts = &gemini["contents"][2]["parts"];
    assert!(parts[0].get("functionResponse").is_some(), "{parts}");
    assert_eq!(parts[2], json!({"inline_data": {"mime_type": "image/png", "data": PNG}}));
}

#[test]
fn an_image_whose_file_is_gone_is_sent_as_a_line_saying_so() {
    let mut request = image_prompt();
    request.messages[0].content[1] =
        ContentBlock::Image { media_type: "image/png".into(), data: None, sha256: Some("00".into()) };
    for model in MODELS {
        let body = check(model, &request, None).unwrap();
        assert!(body.to_string().contains("[an image (image/png) that is no longer stored]"), "{model}: {body}");
    }
}

#[test]
fn the_vendors_rules_refuse_images_as_the_apis_do() {
    let refused = |vendor: &str, body: Value| -> String {
        let verdict = match vendor {
            "openai" => openai::check(&body),
            "anthropic" => anthropic::check(&body),
            _ => gemini::check_for("gemini-2.5-flash", &body),
        };
        verdict.expect_err(&format!("{vendor} accepted {body}")).message
    };
    let url = |url: &str| json!({"type": "image_url", "image_url": {"url": url}});
    let png_url = format!("data:image/png;base64,{PNG}");
    let openai_body = |model: &str, role: &str, part: Value| json!({"model": model, "messages": [{"role": "user", "content": "hi"}, {"role": role, "content": [part]}]});
    assert!(
        refused("openai", openai_body("gpt-4o", "assistant", url(&png_url)))
            .contains("only allowed for messages with role 'user'")
    );
    assert!(
        refused("openai", openai_body("gpt-3.5-turbo", "user", url(&png_url)))
            .contains("only supported by certain models")
    );
    assert!(
        refused("openai", openai_body("gpt-4o", "user", url("data:image/png;base64,!!!")))
            .contains("unsupported image")
    );
    assert!(
        refused("openai", openai_body("gpt-4o", "user", url("data:image/bmp;base64,Qk0=")))
            .contains("unsupported image")
    );
    assert!(openai::check(&openai_body("gpt-4o", "user", url(&png_url))).is_ok());

    let image = |media_type: &str, data: &str| json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}});
    let anthropic_body = |role: &str, block: Value| {
        let mut messages = vec![json!({"role": "user", "content": "hi"})];
        if role == "user" {
            messages.clear();
        }
        messages.push(json!({"role": role, "content": [block]}));
        json!({"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": messages})
    };
    assert!(
        refused("anthropic", anthropic_body("user", image("image/jpeg", PNG)))
            .contains("does not match the provided media type image/jpeg")
    );
    assert!(
        refused("anthropic", anthropic_body("user", image("image/bmp", PNG))).contains("Input should be 'image/jpeg'")
    );
    assert!(
        refused("anthropic", anthropic_body("assistant", image("image/png", PNG)))
            .contains("not allowed in a assistant message")
    );
    assert!(anthropic::check(&anthropic_body("user", image("image/png", PNG))).is_ok());

    let gemini_body = |mime_type: &str, data: &str| json!({"contents": [{"role": "user", "parts": [{"text": "hi"}, {"inline_data": {"mime_type": mime_type, "data": data}}]}]});
    assert_eq!(refused("gemini", gemini_body("image/gif", "R0lGODlh")), "Unsupported MIME type: image/gif");
    assert!(refused("gemini", gemini_body("image/png", "!!")).contains("Base64 decoding failed"));
    assert!(gemini::check_for("gemini-2.5-flash", &gemini_body("image/png", PNG)).is_ok());
}

/// An output schema goes in OpenAI's own structured-output fields (Chat Completions'
/// `response_format`, the Responses API's `text.format`), strict only when the schema keeps the
/// strict rules, and every request passes the vendor's rules; the rules refuse a strict schema
/// that leaves an object open, as OpenAI does.
#[test]
fn an_output_schema_goes_as_the_vendors_structured_output_and_keeps_its_rules() {
    let closed = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}},
        "required": ["b"], "additionalProperties": false}}, "required": ["a"], "additionalProperties": false});
    let open =
        json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}});
    for (schema, strict) in [(closed, true), (open.clone(), false)] {
        let output_schema =
            Some(superpi_providers::OutputSchema { name: "final_answer".into(), schema: schema.clone() });
        let request = ModelRequest { messages: vec![Message::user_text("hi")], output_schema, ..Default::default() };
        let chat = check("gpt-4o", &request, None).unwrap();
        assert_eq!(chat["response_format"]["json_schema"]["strict"], strict);
        assert_eq!(chat["response_format"]["json_schema"]["schema"], schema);
        let responses = check("gpt-5-codex", &request, None).unwrap();
        assert_eq!(
            (&responses["text"]["format"]["strict"], &responses["text"]["format"]["schema"]),
            (&json!(strict), &schema)
        );
    }
    // Closed at the root, open inside.
    let inner_open = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}},
        "required": ["a"], "additionalProperties": false});
    let format =
        json!({"type": "json_schema", "json_schema": {"name": "final_answer", "schema": inner_open, "strict": true}});
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "response_format": format});
    let refused = openai::check(&body).unwrap_err();
    assert!(
        refused.message.contains("In context=('properties', 'a'), 'additionalProperties' is required"),
        "{refused}"
    );
}
