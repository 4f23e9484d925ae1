use super::*;
use serde_json::json;

use crate::request::Session;
use superpi_proto::ContentBlock;

/// A one-pixel PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

fn read_json(body: Value, h: &[(&'static str, &str)]) -> Result<Read, Error> {
    read(body.to_string().as_bytes(), &headers(h), false)
}

/// The request map's reading of a Messages request.
fn chat_request(body: Value, h: &[(&'static str, &str)]) -> ChatRequest {
    let read = read_json(body, h).unwrap();
    request::parse_chat(read.chat.to_string().as_bytes(), &headers(h)).unwrap()
}

/// What Claude Code 2.1 sends, in short: system blocks, a user message of two text blocks, a
/// mid-conversation `system` turn after it, its own tools, adaptive thinking it does not show.
fn claude_code_body(system_turn: Value) -> Value {
    json!({
        "model": "claude-opus-5-5",
        "max_tokens": 128000,
        "stream": true,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.534;"},
            {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>be nice</system-reminder>"},
                {"type": "text", "text": "say hello"}
            ]},
            {"role": "system", "content": system_turn}
        ],
        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
        "metadata": {"user_id": "{\"session_id\":\"s\"}"},
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": []},
        "output_config": {"effort": "medium"}
    })
}

#[test]
fn a_claude_code_request_reads_as_a_chat_request_in_its_session() {
    let session = [("x-claude-code-session-id", "43aeabec-5ad1")];
    let read = read_json(claude_code_body(json!([{"type": "text", "text": "# Environment"}])), &session).unwrap();
    assert!(!read.thinking, "display omitted: no thinking blocks");
    assert_eq!(
        read.chat,
        json!({
            "model": "claude-opus-5-5",
            "stream": true,
            "session_id": "43aeabec-5ad1",
            "messages": [
                {"role": "system", "content": "x-anthropic-billing-header: cc_version=2.1.332.534;\nYou are a Claude agent."},
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>be nice</system-reminder>"},
                    {"type": "text", "text": "say hello"}
                ]},
                {"role": "system-note", "content": [{"type": "text", "text": "# Environment"}]}
            ]
        })
    );
    let req = chat_request(claude_code_body(json!("# Environment")), &session);
    assert_eq!(req.session, Session::External("43aeabec-5ad1".into()));
    assert_eq!(req.messages[req.last_user].text, "<system-reminder>be nice</system-reminder>\nsay hello");
    // The system turn's shape changes from one request to the next (Claude Code sent it as
    // blocks, then as a string): it is not part of the session key, the system prompt is.
    let other = chat_request(claude_code_body(json!("# Environment, later")), &session);
    assert_eq!(request::session_key("s", &req.messages), request::session_key("s", &other.messages));
    let mut changed = claude_code_body(json!("# Environment"));
    changed["system"] = json!("another agent");
    let changed = chat_request(changed, &session);
    assert_ne!(request::session_key("s", &req.messages), request::session_key("s", &changed.messages));
    // A session named by the request itself wins over Claude Code's header.
    let named = chat_request(claude_code_body(json!("x")), &[session[0], ("x-session-id", "mine")]);
    assert_eq!(named.session, Session::External("mine".into()));
}

#[test]
fn thinking_blocks_are_sent_only_when_asked_for_with_their_text() {
    let body = |thinking: Value| json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "thinking": thinking});
    for (thinking, want) in [
        (json!({"type": "enabled", "budget_tokens": 2048}), true),
        (json!({"type": "adaptive"}), true),
        (json!({"type": "adaptive", "display": "summarized"}), true),
        (json!({"type": "adaptive", "display": "omitted"}), false),
        (json!({"type": "disabled"}), false),
        (Value::Null, false),
    ] {
        assert_eq!(read_json(body(thinking.clone()), &[]).unwrap().thinking, want, "{thinking}");
    }
}

#[test]
fn tool_blocks_of_a_history_are_text_and_thinking_is_dropped() {
    let body = json!({
        "model": "superpi-code", "max_tokens": 1024,
        "messages": [
            {"role": "user", "content": "list the files"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "xx"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a.txt"}]},
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": "denied"},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}},
                {"type": "search_result", "source": "x", "title": "t", "content": []},
                {"type": "text", "text": "and now?"}
            ]}
        ]
    });
    let req = chat_request(body, &[]);
    assert_eq!(req.session, Session::New);
    assert_eq!(req.messages[1].text, "Looking.\n[tool_use Bash toolu_1] {\"command\":\"ls\"}");
    assert_eq!(
        req.messages[req.last_user].text,
        "[tool_result toolu_1] a.txt\n[tool_result toolu_2, error] denied\nnotes\nand now?"
    );
    // A new conversation is seeded with the transcript, as for a chat completion.
    let prompt = request::prompt(&req, true);
    assert!(prompt.contains("assistant: Looking.\n[tool_use Bash toolu_1]"), "{prompt}");
}

#[test]
fn the_last_user_messages_images_go_with_it() {
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}});
    let body = json!({"model": "superpi-code", "max_tokens": 16, "messages": [
        {"role": "user", "content": [image.clone(), {"type": "text", "text": "what is this?"}]}
    ]});
    let req = chat_request(body, &[]);
    assert_eq!(req.images, vec![ContentBlock::image("image/png", PNG)]);
    assert_eq!(req.messages[0].text, "what is this?");
    // An image by URL or from the Files API is refused: superpi fetches nothing.
    for source in [json!({"type": "url", "url": "https://example.com/a.png"}), json!({"type": "file", "file_id": "f"})]
    {
        let body = json!({"model": "m", "max_tokens": 16, "messages": [
            {"role": "user", "content": [{"type": "image", "source": source}, {"type": "text", "text": "x"}]}
        ]});
        let err = read_json(body, &[]).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(
            err.message.starts_with("messages.0.content.0.source:") && err.message.contains("base64"),
            "{}",
            err.message
        );
    }
}

#[test]
fn max_tokens_is_required_and_checked_as_the_api_does() {
    let body = |max: Option<Value>| {
        let mut b = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
        if let Some(max) = max {
            b["max_tokens"] = max;
        }
        b
    };
    let message = |max| read_json(body(max), &[]).unwrap_err().message;
    assert_eq!(message(None), "max_tokens: Field required");
    assert_eq!(message(Some(json!(0))), "max_tokens: Input should be greater than or equal to 1");
    assert_eq!(message(Some(json!(-5))), "max_tokens: Input should be greater than or equal to 1");
    assert_eq!(message(Some(json!("1024"))), "max_tokens: Input should be a valid integer");
    assert_eq!(message(Some(json!(1.5))), "max_tokens: Input should be a valid integer");
    assert_eq!(message(Some(Value::Null)), "max_tokens: Input should be a valid integer");
    for ok in [json!(1), json!(64000), json!(2.0)] {
        assert!(read_json(body(Some(ok.clone())), &[]).is_ok(), "{ok}");
    }
    // count_tokens takes no max_tokens.
    assert!(read(body(None).to_string().as_bytes(), &HeaderMap::new(), true).is_ok());
}

#[test]
fn wrong_types_are_refused_naming_the_field() {
    let good = json!({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]});
    let with = |path: &str, value: Value| {
        let mut b = good.clone();
        *b.pointer_mut(path).unwrap() = value;
        b
    };
    let cases = [
        (with("/model", json!(7)), "model: Input should be a valid string"),
        (with("/model", json!(" ")), "model: String should have at least 1 character"),
        (with("/messages", json!("hi")), "messages: Input should be a valid list"),
        (with("/messages", json!([])), "messages: at least one message is required"),
        (with("/messages/0/role", json!("tool")), "messages.0.role: Input should be 'user' or 'assistant'"),
        (with("/messages/0/content", json!(5)), "messages.0.content: Input should be a valid string or a list"),
        (with("/messages/0/content", json!([{"text": "x"}])), "messages.0.content.0.type: Field required"),
        (with("/messages/0/content", json!(["x"])), "messages.0.content.0: Input should be a valid dictionary"),
        (
            with("/messages/0/content", json!([{"type": "text", "text": 5}])),
            "messages.0.content.0.text: Input should be a valid string",
        ),
    ];
    for (body, want) in cases {
        let err = read_json(body.clone(), &[]).unwrap_err();
        assert!(err.message.starts_with(want), "{body}: {}", err.message);
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }
    let mut extra = good.clone();
    for (field, value, want) in [
        ("stream", json!("yes"), "stream: Input should be a valid boolean"),
        ("system", json!(5), "system: Input should be a valid string"),
        ("system", json!([{"type": "image"}]), "system.0.type: Input should be 'text'"),
        ("metadata", json!({"user_id": 5}), "metadata.user_id: Input should be a valid string"),
        ("metadata", json!("u"), "metadata: Input should be a valid dictionary"),
        ("thinking", json!("yes"), "thinking: Input should be a valid dictionary"),
    ] {
        extra[field] = value;
        let err = read_json(extra.clone(), &[]).unwrap_err();
        assert!(err.message.starts_with(want), "{field}: {}", err.message);
        extra = good.clone();
    }
    let mut no_model = good.clone();
    no_model.as_object_mut().unwrap().remove("model");
    assert_eq!(read_json(no_model, &[]).unwrap_err().message, "model: Field required");
    let mut no_messages = good.clone();
    no_messages.as_object_mut().unwrap().remove("messages");
    assert_eq!(read_json(no_messages, &[]).unwrap_err().message, "messages: Field required");
    assert!(read(b"not json", &HeaderMap::new(), false).unwrap_err().message.contains("not valid JSON"));
    assert!(read(b"[1]", &HeaderMap::new(), false).unwrap_err().message.contains("JSON object"));
    // Client tools, sampling and other fields are not read.
    let mut ignored = good.clone();
    ignored["tools"] = json!("not even a list");
    ignored["temperature"] = json!("hot");
    ignored["metadata"] = json!({"user_id": null});
    assert!(read_json(ignored, &[]).is_ok());
}

#[test]
fn count_tokens_estimates_by_the_providers_rule() {
    let body = json!({
        "model": "m",
        "system": "abcdef",
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "abcdefghi"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
        ]}],
        "tools": [{"name": "abc", "description": "abcd", "input_schema": {"type": "object"}}]
    });
    let read = read(body.to_string().as_bytes(), &HeaderMap::new(), true).unwrap();
    // system: 4 + 2; user: 4 + 3 + 1600; tool: 8 + 1 + 2 + ceil(17 / 3) = 6.
    assert_eq!(estimate(&read), 6 + 1607 + 17);
}

#[test]
fn errors_are_in_anthropics_shape_with_its_types() {
    for (status, kind) in [
        (StatusCode::BAD_REQUEST, "invalid_request_error"),
        (StatusCode::UNAUTHORIZED, "authentication_error"),
        (StatusCode::FORBIDDEN, "permission_error"),
        (StatusCode::NOT_FOUND, "not_found_error"),
        (StatusCode::PAYLOAD_TOO_LARGE, "request_too_large"),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error"),
        (StatusCode::INTERNAL_SERVER_ERROR, "api_error"),
        (StatusCode::SERVICE_UNAVAILABLE, "api_error"),
    ] {
        let err = Error::new(status, "whatever", "why");
        assert_eq!(err.body(), json!({"type": "error", "error": {"type": kind, "message": "why"}}));
    }
    let converted = from_openai(wire::provider_not_configured("no key"));
    assert_eq!((converted.status, converted.code), (StatusCode::SERVICE_UNAVAILABLE, "provider_not_configured"));
}

#[test]
fn x_api_key_stands_for_a_bearer_token() {
    let h = api_key_as_bearer(&headers(&[("x-api-key", " k1 "), ("authorization", "Bearer wrong")])).unwrap();
    assert_eq!(h["authorization"], "Bearer k1");
    assert!(api_key_as_bearer(&headers(&[("x-api-key", " ")])).is_none());
    assert!(api_key_as_bearer(&HeaderMap::new()).is_none());
}

#[test]
fn the_model_list_in_anthropics_shape() {
    let entry = |id: &str, name: Option<&str>| wire::ModelEntry {
        id: id.into(),
        object: "model",
        created: 0,
        owned_by: "superpi".into(),
        name: name.map(String::from),
        description: None,
        capabilities: None,
    };
    let list = wire::ModelList {
        object: "list",
        data: vec![entry("superpi-code", Some("superpi code")), entry("mock", None)],
    };
    let v = model_list(list);
    assert_eq!(
        (&v["has_more"], &v["first_id"], &v["last_id"]),
        (&json!(false), &json!("superpi-code"), &json!("mock"))
    );
    assert_eq!(v["data"][0]["type"], "model");
    assert_eq!(v["data"][0]["display_name"], "superpi code");
    assert_eq!(v["data"][1]["display_name"], "mock");
    assert_eq!(v["data"][1]["created_at"], "1970-01-01T00:00:00Z");
    assert_eq!(v["data"][1]["object"], "model", "the OpenAI fields stay");
}

#[test]
fn output_config_format_is_the_output_schema() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let body = |extra: Value| {
        let mut body = json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "count"}]});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    };
    // Effort alone (Claude Code's) asks for no schema.
    assert_eq!(chat_request(body(json!({"output_config": {"effort": "low"}})), &[]).output_schema, None);
    let format = json!({"type": "json_schema", "schema": schema});
    let read = chat_request(body(json!({"output_config": {"effort": "low", "format": format}})), &[]);
    assert_eq!(read.output_schema, Some(schema.clone()));
    // The older top-level spelling.
    assert_eq!(chat_request(body(json!({"output_format": format})), &[]).output_schema, Some(schema));

    for (extra, named) in [
        (json!({"output_config": {"format": {"type": "xml"}}}), "output_config.format.type"),
        (json!({"output_config": {"format": {"type": "json_schema"}}}), "output_config.format.schema"),
        (json!({"output_config": {"format": {"type": "json_schema", "schema": {"type": "array"}}}}), "object schema"),
        (json!({"output_config": "json"}), "output_config: Input should be a valid dictionary"),
    ] {
        let err = read_json(body(extra), &[]).unwrap_err();
        assert!(err.message.contains(named), "{named}: {}", err.message);
    }
}
