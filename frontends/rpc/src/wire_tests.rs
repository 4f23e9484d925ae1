use serde_json::json;
use superpi_proto::{ErrorObject, Message, Role, Usage};

use super::*;

#[test]
fn params_read_strictly_and_absent_params_read_as_empty() {
    assert_eq!(parse::<ListParams>("session.list", None), Ok(ListParams::default()));
    assert_eq!(parse::<ListParams>("session.list", Some("null")), Ok(ListParams::default()));
    assert_eq!(parse::<NoParams>("harness.list", Some("[]")), Ok(NoParams {}));
    let err = parse::<ListParams>("session.list", Some(r#"{"limit": "ten"}"#)).unwrap_err();
    assert_eq!(err.code, codes::INVALID_PARAMS);
    let err = parse::<OpenParams>("session.open", Some(r#"{"workspace": "/etc"}"#)).unwrap_err();
    assert_eq!(err.code, codes::INVALID_PARAMS, "a caller cannot choose the workspace");
    let err = parse::<WatchParams>("session.watch", Some("{}")).unwrap_err();
    assert_eq!(err.code, codes::INVALID_PARAMS);
    assert!(err.message.contains("conversation_id"), "{}", err.message);
    // By position works too, in the documented field order.
    assert_eq!(parse::<AckParams>("session.ack", Some("[3, 4]")), Ok(AckParams { watch: 3, batch: 4 }));
}

#[test]
fn open_takes_the_servers_workspace() {
    let p: OpenParams = parse("session.open", Some(r#"{"harness": "superpi-planner", "mode": "plan"}"#)).unwrap();
    let k = p.to_kernel(Some("/w"));
    assert_eq!(
        k,
        superpi_proto::method::OpenParams {
            harness: Some("superpi-planner".into()),
            mode: Some("plan".into()),
            workspace: Some("/w".into()),
            ..Default::default()
        }
    );
}

#[test]
fn submit_joins_prompt_and_text_parts_and_needs_text() {
    let p: SubmitParams = parse(
        "session.submit",
        Some(r#"{"conversation_id": 4, "prompt": "a", "content": [{"type": "text", "text": "b"}], "steer": true}"#),
    )
    .unwrap();
    assert_eq!(
        p.to_kernel().unwrap(),
        superpi_proto::method::SubmitParams {
            conversation_id: 4,
            content: vec![ContentBlock::text("a"), ContentBlock::text("b")],
            prompt: None,
            steer: true,
            client_tools: Vec::new(),
            output_schema: None,
        }
    );
    let p: SubmitParams = parse("session.submit", Some(r#"{"conversation_id": 4, "prompt": "  "}"#)).unwrap();
    assert_eq!(p.to_kernel().unwrap_err().code, codes::INVALID_PARAMS);
    let err =
        parse::<SubmitParams>("session.submit", Some(r#"{"conversation_id": 4, "content": [{"type": "image"}]}"#))
            .unwrap_err();
    assert_eq!(err.code, codes::INVALID_PARAMS);
    let image = r#"{"conversation_id": 4, "content": [{"type": "image", "media_type": "image/png", "data": "iVBO"}]}"#;
    let p: SubmitParams = parse("session.submit", Some(image)).unwrap();
    assert_eq!(p.to_kernel().unwrap().content, vec![ContentBlock::image("image/png", "iVBO")]);
}

#[test]
fn results_are_built_field_by_field() {
    let info = ConversationInfo {
        conversation_id: 3,
        harness: "superpi-code".into(),
        model: "mock".into(),
        mode: "accept-edits".into(),
        max_mode: "accept-edits".into(),
        effort: None,
        workspace: Some("/w".into()),
        title: None,
        parent_id: Some(1),
        created_at_ms: 5,
        status: "idle".into(),
        head_seq: 12,
        created: true,
        rules_files: vec!["/w/AGENTS.md".into()],
        cost_usd: None,
    };
    assert_eq!(
        conversation(&info),
        json!({"conversation_id": 3, "harness": "superpi-code", "model": "mock", "mode": "accept-edits",
               "max_mode": "accept-edits", "effort": null, "title": null, "parent_id": 1, "created_at_ms": 5,
               "status": "idle", "head_seq": 12, "created": true, "rules_files": ["/w/AGENTS.md"]})
    );
    let e = Entry {
        seq: 2,
        kind: superpi_proto::EntryKind::Assistant,
        turn_id: Some(1),
        message: Message {
            role: Role::Assistant,
            content: vec![ContentBlock::text("hi")],
            usage: Some(Usage { input_tokens: 3, output_tokens: 1, ..Default::default() }),
            stop_reason: Some("end_turn".into()),
        },
        created_at_ms: 9,
    };
    assert_eq!(
        entry(&e),
        json!({"seq": 2, "kind": "assistant", "turn_id": 1, "role": "assistant",
               "content": [{"type": "text", "text": "hi"}], "created_at_ms": 9,
               "usage": {"input_tokens": 3, "output_tokens": 1}, "stop_reason": "end_turn"})
    );
}

#[test]
fn kernel_errors_keep_their_meaning() {
    let k = |code| ClientError::Kernel(ErrorObject::new(code, "m"));
    assert_eq!(kernel_error(k(superpi_proto::message::codes::NOT_FOUND)).code, codes::NOT_FOUND);
    assert_eq!(kernel_error(k(superpi_proto::message::codes::INVALID_PARAMS)).code, codes::INVALID_PARAMS);
    assert_eq!(kernel_error(k(superpi_proto::message::codes::FORBIDDEN)).code, codes::FORBIDDEN);
    assert_eq!(kernel_error(k(superpi_proto::message::codes::PROVIDER)).code, codes::PROVIDER);
    // A kernel-side method-not-found is our internal matter, not the caller's unknown method.
    assert_eq!(kernel_error(k(superpi_proto::message::codes::METHOD_NOT_FOUND)).code, codes::INTERNAL_ERROR);
    assert_eq!(kernel_error(ClientError::Closed).code, codes::INTERNAL_ERROR);
    assert_eq!(kernel_error(k(superpi_proto::message::codes::NOT_FOUND)).message, "m");
}

#[test]
fn ui_respond_takes_an_option_or_an_outcome() {
    let answer = |params: &str| parse::<RespondParams>("ui.respond", Some(params)).unwrap().answer();
    assert_eq!(
        answer(r#"{"request_id": "q", "option_id": "allow_once"}"#),
        Ok(Answer::Permission("allow_once".into()))
    );
    assert_eq!(answer(r#"["q", "reject_once"]"#), Ok(Answer::Permission("reject_once".into())));
    assert_eq!(answer(r#"{"request_id": "q", "outcome": {"content": "x"}}"#), Ok(Answer::Ui(json!({"content": "x"}))));
    for neither_or_both in
        [r#"{"request_id": "q"}"#, r#"{"request_id": "q", "option_id": "allow_once", "outcome": {}}"#]
    {
        assert_eq!(answer(neither_or_both).unwrap_err().code, codes::INVALID_PARAMS, "{neither_or_both}");
    }
}
