use super::*;
use axum::http::HeaderValue;
use serde_json::json;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

fn read(body: Value, h: &[(&'static str, &str)]) -> Result<ResponsesRequest, ResponsesError> {
    parse(body.to_string().as_bytes(), &headers(h))
}

fn refused(body: Value) -> ResponsesError {
    read(body, &[]).expect_err("refused")
}

fn msg(role: &str, text: &str) -> TextMessage {
    TextMessage { role: role.into(), text: text.into() }
}

const PNG: &str = "data:image/png;base64,iVBORw0KGgo=";

#[test]
fn a_string_input_is_one_user_message() {
    let req = read(json!({"model": "superpi-code", "input": "hello", "stream": true}), &[]).unwrap();
    assert_eq!(req.chat.model, "superpi-code");
    assert!(req.chat.stream && req.chat.include_usage);
    assert_eq!(req.chat.messages, vec![msg("user", "hello")]);
    assert_eq!((req.chat.last_user, req.chat.session.clone()), (0, Session::New));
    assert_eq!((req.previous, req.instructions), (None, None));
}

#[test]
fn messages_items_instructions_and_images() {
    let req = read(
        json!({
            "model": "code",
            "instructions": "be brief",
            "input": [
                {"role": "developer", "content": "rules"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first"}]},
                {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                 "content": [{"type": "output_text", "text": "noted", "annotations": []}]},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "call_id": "c1", "name": "x", "arguments": "{}"},
                {"role": "user", "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": PNG, "detail": "auto"},
                    {"type": "input_file", "file_data": "x"},
                    {"type": "input_text", "text": "closely"}
                ]}
            ],
            "tools": [{"type": "function", "name": "client_side", "parameters": {}}],
            "tool_choice": "auto", "temperature": 0.2, "store": false, "reasoning": {"effort": "high"},
            "include": ["reasoning.encrypted_content"], "metadata": {"k": "v"}
        }),
        &[],
    )
    .unwrap();
    assert_eq!(
        req.chat.messages,
        vec![
            msg("system", "be brief"),
            msg("developer", "rules"),
            msg("user", "first"),
            msg("assistant", "noted"),
            msg("user", "look\nclosely"),
        ]
    );
    assert_eq!(req.chat.last_user, 4);
    assert_eq!(req.chat.images.len(), 1);
    assert_eq!(req.instructions.as_deref(), Some("be brief"));
    assert_eq!(req.metadata.unwrap()["k"], "v");
    // A created conversation is seeded with the earlier messages, instructions first.
    let prompt = prompt(&read(json!({"model": "m", "instructions": "be brief", "input": "hi"}), &[]).unwrap(), true);
    assert!(prompt.contains("system: be brief") && prompt.ends_with("hi"), "{prompt}");
}

#[test]
fn previous_response_id_names_a_conversation_and_is_checked() {
    assert_eq!(response_id(12, 3), "resp_12_3");
    assert_eq!(conversation_of("resp_12_3"), Some(12));
    for bad in
        ["resp_12", "resp__3", "resp_x_3", "resp_012_3", "resp_+12_3", "resp_12_3_4", "chatcmpl-12-3", "resp_0_1"]
    {
        assert_eq!(conversation_of(bad), None, "{bad}");
    }
    let req = read(
        json!({"model": "m", "previous_response_id": "resp_12_3", "instructions": "again", "input": [
            {"role": "developer", "content": "new rule"}, {"role": "user", "content": "next"}]}),
        &[("x-session-id", "ignored")],
    )
    .unwrap();
    assert_eq!(req.previous, Some(Previous { id: "resp_12_3".into(), conversation_id: 12 }));
    // The conversation holds its instructions already; the session header does not apply.
    assert_eq!(req.chat.messages, vec![msg("developer", "new rule"), msg("user", "next")]);
    assert_eq!(req.chat.session, Session::New);
    // Everything in a continuing request's input is new to the conversation.
    let p = prompt(&req, false);
    assert!(p.contains("developer: new rule") && p.ends_with("next"), "{p}");

    let err = refused(json!({"model": "m", "previous_response_id": "resp_nope", "input": "x"}));
    assert_eq!((err.error.status, err.error.code), (StatusCode::BAD_REQUEST, "previous_response_not_found"));
    assert_eq!(err.param.as_deref(), Some("previous_response_id"));
    assert_eq!(err.body()["error"]["param"], "previous_response_id");
    assert!(err.error.message.contains("resp_nope"));
}

#[test]
fn sessions_and_modes_as_on_the_chat_route() {
    let body = json!({"model": "m", "input": "x"});
    let session = |h: &[(&'static str, &str)], body: Value| read(body, h).unwrap().chat.session;
    assert_eq!(session(&[("x-session-id", "a")], body.clone()), Session::External("a".into()));
    // Codex sends its thread id as `session-id`.
    assert_eq!(session(&[("session-id", "th")], body.clone()), Session::External("th".into()));
    assert_eq!(session(&[], json!({"model": "m", "input": "x", "session_id": "b"})), Session::External("b".into()));
    let req = read(body.clone(), &[("x-superpi-mode", "plan")]).unwrap();
    assert_eq!(req.chat.mode.as_deref(), Some("plan"));
    let req = read(json!({"model": "m", "input": "x", "execution_mode": "auto"}), &[]).unwrap();
    assert_eq!(req.chat.mode.as_deref(), Some("auto"));
    assert_eq!(read(body, &[("x-superpi-mode", "yolo")]).unwrap_err().error.code, "invalid_params");
}

#[test]
fn bad_requests_are_400_naming_the_field() {
    let raw = parse(b"not json", &HeaderMap::new()).unwrap_err();
    assert_eq!((raw.error.status, raw.param.as_deref()), (StatusCode::BAD_REQUEST, None));
    let cases = [
        (json!([1]), None),
        (json!({"input": "x"}), Some("model")),
        (json!({"model": 7, "input": "x"}), Some("model")),
        (json!({"model": "m"}), Some("input")),
        (json!({"model": "m", "input": 5}), Some("input")),
        (json!({"model": "m", "input": "x", "stream": "yes"}), Some("stream")),
        (json!({"model": "m", "input": "x", "instructions": 3}), Some("instructions")),
        (json!({"model": "m", "input": "x", "previous_response_id": 3}), Some("previous_response_id")),
        (json!({"model": "m", "input": "x", "background": true}), Some("background")),
        (json!({"model": "m", "input": "x", "conversation": "conv_1"}), Some("conversation")),
        (json!({"model": "m", "input": [{"role": "assistant", "content": "only me"}]}), Some("input")),
        (json!({"model": "m", "input": [{"role": "user", "content": ""}]}), Some("input[0]")),
        (json!({"model": "m", "input": [{"role": "robot", "content": "x"}]}), Some("input[0].role")),
        (json!({"model": "m", "input": [{"role": "user", "content": 4}]}), Some("input[0].content")),
        (json!({"model": "m", "input": [{"role": "user", "content": [3]}]}), Some("input[0].content[0]")),
        (
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
            Some("input[0].content[0].text"),
        ),
        (json!({"model": "m", "input": [7]}), Some("input[0]")),
        (
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}]}),
            Some("input[0].content[0].image_url"),
        ),
        (
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]}]}),
            Some("input[0].content[0].file_id"),
        ),
    ];
    for (body, param) in cases {
        let err = refused(body.clone());
        assert_eq!((err.error.status, err.error.code), (StatusCode::BAD_REQUEST, "invalid_params"), "{body}");
        assert_eq!(err.param.as_deref(), param, "{body}: {}", err.error.message);
        assert_eq!(err.body()["error"]["type"], "invalid_request_error");
    }
}

#[test]
fn a_tool_output_is_refused_the_client_never_runs_tools() {
    for kind in ["function_call_output", "custom_tool_call_output", "local_shell_call_output"] {
        let err = refused(json!({"model": "m", "input": [
            {"role": "user", "content": "x"},
            {"type": kind, "call_id": "call_1", "output": "42"}]}));
        assert_eq!((err.error.status, err.error.code), (StatusCode::BAD_REQUEST, "invalid_params"));
        assert_eq!(err.param.as_deref(), Some("input[1]"));
        assert!(err.error.message.contains(kind) && err.error.message.contains("never asks"), "{}", err.error.message);
    }
}

#[test]
fn json_object_needs_the_word_json_in_the_input_or_instructions() {
    let format = json!({"format": {"type": "json_object"}});
    let err = refused(json!({"model": "m", "input": "hi", "text": format}));
    assert_eq!(err.param.as_deref(), Some("input"));
    assert!(err.error.message.contains("the word 'json'"), "{}", err.error.message);
    let told = read(json!({"model": "m", "input": "hi", "instructions": "Answer in JSON.", "text": format}), &[]);
    assert_eq!(told.unwrap().chat.output_schema, Some(json!({"type": "object"})));
}
