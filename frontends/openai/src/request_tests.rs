use super::*;
use axum::http::HeaderValue;
use serde_json::json;
use superpi_proto::ErrorObject;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

fn parse(body: Value, h: &[(&'static str, &str)]) -> Result<ChatRequest, ApiError> {
    parse_chat(body.to_string().as_bytes(), &headers(h))
}

fn msg(role: &str, text: &str) -> TextMessage {
    TextMessage { role: role.into(), text: text.into() }
}

fn harness(id: &str) -> HarnessInfo {
    HarnessInfo {
        id: id.into(),
        name: id.into(),
        description: String::new(),
        default_mode: "accept-edits".into(),
        max_mode: "auto".into(),
        tools: vec![],
        workspace: "repo".into(),
        backend: None,
        no_effort: false,
        capabilities: Vec::new(),
    }
}

#[test]
fn a_plain_request_is_read_whole() {
    let req = parse(
        json!({
            "model": "superpi-code",
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "tools": [{"type": "function", "function": {"name": "client_tool"}}],
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}}]},
                {"role": "assistant", "content": null},
                {"role": "user", "content": "list files"}
            ]
        }),
        &[],
    )
    .unwrap();
    assert_eq!(
        req,
        ChatRequest {
            model: "superpi-code".into(),
            stream: true,
            include_usage: true,
            session: Session::New,
            mode: None,
            messages: vec![
                msg("system", "be brief"),
                msg("user", "hi"),
                msg("assistant", ""),
                msg("user", "list files")
            ],
            last_user: 3,
            images: vec![],
            output_schema: None,
        }
    );
}

#[test]
fn sessions_modes_and_their_precedence() {
    let body = json!({"model": "m", "session_id": "from-body", "messages": [{"role": "user", "content": "x"}]});
    assert_eq!(parse(body.clone(), &[]).unwrap().session, Session::External("from-body".into()));
    assert_eq!(parse(body.clone(), &[("x-session-id", "hdr")]).unwrap().session, Session::External("hdr".into()));
    assert_eq!(
        parse(body.clone(), &[("x-session-id", "hdr"), ("x-conversation-id", "42")]).unwrap().session,
        Session::Conversation(42)
    );
    assert_eq!(
        parse(body.clone(), &[("x-conversation-id", "abc")]).unwrap_err(),
        ApiError::invalid("x-conversation-id must be an integer")
    );
    assert_eq!(parse(body.clone(), &[("x-superpi-mode", "plan")]).unwrap().mode.as_deref(), Some("plan"));
    assert_eq!(parse(body.clone(), &[("x-super-pi-mode", "auto")]).unwrap().mode.as_deref(), Some("auto"));
    let mut with_field = body.clone();
    with_field["execution_mode"] = json!("accept-edits");
    assert_eq!(parse(with_field, &[]).unwrap().mode.as_deref(), Some("accept-edits"));
    assert_eq!(
        parse(body, &[("x-superpi-mode", "yolo")]).unwrap_err(),
        ApiError::invalid("unknown mode `yolo`: use plan, accept-edits or auto")
    );
}

#[test]
fn bad_bodies_are_invalid_params() {
    let not_json = parse_chat(b"model=x", &HeaderMap::new()).unwrap_err();
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);
    assert_eq!(not_json.code, "invalid_params");
    assert!(not_json.message.starts_with("the request body is not valid JSON"));
    let cases = [
        (json!([1]), "the request body must be a JSON object"),
        (json!({"messages": []}), "`model` is required"),
        (json!({"model": "", "messages": []}), "`model` must be a non-empty string"),
        (json!({"model": "m"}), "`messages` must be an array"),
        (json!({"model": "m", "messages": [], "stream": "yes"}), "`stream` must be a boolean"),
        (json!({"model": "m", "messages": [{"content": "x"}]}), "messages[0].role must be a string"),
        (
            json!({"model": "m", "messages": [{"role": "system", "content": "x"}]}),
            "`messages` must contain a user message",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": " "}]}),
            "the last user message has neither text nor an image",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": 5}]}),
            "messages[0]: `content` must be a string, an array of parts or null",
        ),
        (
            json!({"model": "m", "session_id": 3, "messages": [{"role": "user", "content": "x"}]}),
            "`session_id` must be a non-empty string",
        ),
    ];
    for (body, message) in cases {
        assert_eq!(parse(body, &[]).unwrap_err(), ApiError::invalid(message));
    }
}

#[test]
fn the_error_shape_is_openais() {
    assert_eq!(
        wire::model_not_found("gpt-9").body(),
        json!({"error": {
            "message": "The model `gpt-9` does not exist: use a harness id or a configured provider's model (GET /v1/models)",
            "type": "invalid_request_error", "code": "model_not_found", "param": null
        }})
    );
    assert_eq!(ApiError::unauthorized("no").body()["error"]["type"], "authentication_error");
    assert_eq!(wire::provider_not_configured("no key").status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(wire::provider_not_configured("no key").body()["error"]["type"], "server_error");
}

#[test]
fn models_resolve_to_a_harness_or_a_provider_model() {
    let hs = [harness("superpi-code"), harness("superpi-planner")];
    assert_eq!(resolve_model("superpi-planner", &hs), Target::Harness("superpi-planner".into()));
    assert_eq!(resolve_model("super-pi-code", &hs), Target::Harness("superpi-code".into()));
    assert_eq!(resolve_model("planner", &hs), Target::Harness("superpi-planner".into()));
    assert_eq!(resolve_model("gpt-4o", &hs), Target::Model("gpt-4o".into()));
    assert_eq!(resolve_model("superpi-nope", &hs), Target::Model("superpi-nope".into()));
}

#[test]
fn open_params_carry_target_session_and_mode() {
    let mut req = parse(
        json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
        &[("x-session-id", "s1"), ("x-superpi-mode", "plan")],
    )
    .unwrap();
    assert_eq!(
        open_params(&req, &Target::Harness("superpi-code".into())),
        OpenParams {
            external_id: Some("s1".into()),
            harness: Some("superpi-code".into()),
            mode: Some("plan".into()),
            ..Default::default()
        }
    );
    req.session = Session::Conversation(7);
    req.mode = None;
    assert_eq!(
        open_params(&req, &Target::Model("gpt-4o".into())),
        OpenParams { conversation_id: Some(7), model: Some("gpt-4o".into()), ..Default::default() }
    );
}

#[test]
fn a_session_key_tells_system_prompts_apart() {
    let agent = [msg("system", "you are the agent"), msg("user", "hi")];
    let agent_later =
        [msg("system", "you are the agent"), msg("user", "hi"), msg("assistant", "hello"), msg("user", "more")];
    let titles = [msg("system", "you write titles"), msg("user", "hi")];
    let plain = [msg("user", "hi")];
    assert_eq!(session_key("s", &agent), session_key("s", &agent_later));
    assert_ne!(session_key("s", &agent), session_key("s", &titles));
    assert_eq!(session_key("s", &plain), "s");
    assert!(session_key("s", &agent).starts_with("s#"));
    // Stable across builds: a durable key.
    assert_eq!(
        session_key("s", &[msg("system", "x")]),
        format!("s#{:016x}", {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in [b'x', 0] {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            h
        })
    );
}

#[test]
fn a_new_conversation_is_seeded_with_the_earlier_messages() {
    let req = parse(
        json!({"model": "m", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "my name is Ada"},
            {"role": "assistant", "content": "hello Ada"},
            {"role": "user", "content": "what is my name?"},
            {"role": "assistant", "content": "(a prefilled answer is ignored)"}
        ]}),
        &[],
    )
    .unwrap();
    assert_eq!(
        prompt(&req, true),
        "[Earlier messages of this conversation, as the client sent them]\n\
         system: be brief\nuser: my name is Ada\nassistant: hello Ada\n\
         [End of earlier messages]\n\nwhat is my name?"
    );
    assert_eq!(prompt(&req, false), "what is my name?");
    let single = parse(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}), &[]).unwrap();
    assert_eq!(prompt(&single, true), "hi");
}

#[test]
fn kernel_refusals_map_to_openai_errors() {
    let k = |code, msg: &str, data: Option<Value>| ClientError::Kernel(ErrorObject { code, message: msg.into(), data });
    assert_eq!(kernel_error(&k(codes::PROVIDER, "unknown model `x`", None), "x"), wire::model_not_found("x"));
    assert_eq!(
        kernel_error(&k(codes::PROVIDER, "provider openai is not configured", None), "gpt-4o"),
        wire::provider_not_configured("provider openai is not configured")
    );
    assert_eq!(
        kernel_error(&k(codes::PROVIDER, "nope", Some(json!({"reason": "provider_not_configured"}))), "m").code,
        "provider_not_configured"
    );
    assert_eq!(kernel_error(&k(codes::INVALID_PARAMS, "bad mode", None), "m"), ApiError::invalid("bad mode"));
    assert_eq!(kernel_error(&k(codes::FORBIDDEN, "above ceiling", None), "m").status, StatusCode::FORBIDDEN);
    let closed = kernel_error(&ClientError::Closed, "m");
    assert_eq!((closed.status, closed.code), (StatusCode::SERVICE_UNAVAILABLE, "kernel_unavailable"));
}

#[test]
fn the_last_user_messages_data_url_images_go_with_its_text() {
    let body = |content: Value| {
        serde_json::to_vec(&json!({"model": "m", "messages": [{"role": "user", "content": content}]})).unwrap()
    };
    let req = parse_chat(
        &body(json!([
            {"type": "text", "text": "what is it?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K", "detail": "high"}},
        ])),
        &HeaderMap::new(),
    )
    .unwrap();
    assert_eq!(req.messages[0].text, "what is it?");
    assert_eq!(req.images, vec![superpi_proto::ContentBlock::image("image/png", "iVBORw0K")]);
    let only_image = parse_chat(
        &body(json!([{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}])),
        &HeaderMap::new(),
    )
    .unwrap();
    assert_eq!(only_image.images.len(), 1);
    let remote = parse_chat(
        &body(json!([{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}])),
        &HeaderMap::new(),
    )
    .unwrap_err();
    assert_eq!(remote.status, StatusCode::BAD_REQUEST);
    assert!(remote.message.contains("superpi does not fetch images"), "{}", remote.message);
}

#[test]
fn response_format_becomes_the_output_schema() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let with = |format: Value| {
        let body =
            json!({"model": "m", "messages": [{"role": "user", "content": "hi, in JSON"}], "response_format": format});
        parse(body, &[])
    };
    let named = json!({"type": "json_schema", "json_schema": {"name": "count", "schema": schema, "strict": true}});
    assert_eq!(with(named).unwrap().output_schema, Some(schema.clone()));
    assert_eq!(with(json!({"type": "json_object"})).unwrap().output_schema, Some(json!({"type": "object"})));
    assert_eq!(with(json!({"type": "text"})).unwrap().output_schema, None);
    // `json_object` needs the word in some message, as OpenAI says.
    let silent = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_object"}});
    let err = parse(silent, &[]).unwrap_err();
    assert!(err.message.contains("must contain the word 'json'"), "{}", err.message);
    assert_eq!(with(Value::Null).unwrap().output_schema, None);
    let strict = json!({"type": "json_schema", "json_schema": {"name": "n", "schema": schema, "strict": "yes"}});
    let err = with(strict).unwrap_err();
    assert_eq!(err.status, StatusCode::BAD_REQUEST);
    assert!(err.message.contains("'response_format.json_schema.strict'"), "{}", err.message);

    // The Responses API's `text.format` holds the fields itself.
    let flat = json!({"type": "json_schema", "name": "count", "schema": schema});
    assert_eq!(output_format(&flat, "text.format", false), Ok(Some(schema)));
    let long = json!({"type": "json_schema", "name": "x".repeat(65)});
    assert_eq!(output_format(&long, "text.format", false).unwrap_err().0, "text.format.name");
}
