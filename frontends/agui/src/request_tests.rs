use super::*;

#[test]
fn a_run_takes_the_last_user_message_and_the_forwarded_props() {
    let body = json!({
        "threadId": "t1",
        "runId": "r1",
        "messages": [
            {"id": "1", "role": "user", "content": "first"},
            {"id": "2", "role": "assistant", "content": "ok"},
            {"id": "3", "role": "user", "content": [
                {"type": "text", "text": "second"},
                {"type": "image", "source": {"type": "data", "value": "iVBORw0K", "mimeType": "image/png"}},
                {"type": "binary", "mimeType": "image/jpeg", "data": "/9j/"},
                {"type": "image", "source": {"type": "url", "value": "data:image/webp;base64,UklG"}},
            ]},
        ],
        "tools": [],
        "context": [{"description": "user", "value": "Ada"}],
        "state": {},
        "forwardedProps": {"harness": "superpi-planner", "executionMode": "plan"},
    });
    assert_eq!(
        run_plan(body.to_string().as_bytes()),
        Ok(RunPlan {
            thread_id: "t1".into(),
            run_id: "r1".into(),
            harness: Some("superpi-planner".into()),
            mode: Some("plan".into()),
            prompt: "second\n\nContext:\n- user: Ada".into(),
            earlier: vec![("user".into(), "first".into()), ("assistant".into(), "ok".into())],
            images: vec![
                ContentBlock::image("image/png", "iVBORw0K"),
                ContentBlock::image("image/jpeg", "/9j/"),
                ContentBlock::image("image/webp", "UklG"),
            ],
            interrupts: false,
            client_tools: Vec::new(),
            resume: Vec::new(),
            tool_results: Vec::new(),
        })
    );
    let plan = run_plan(body.to_string().as_bytes()).unwrap();
    assert_eq!(plan.prompt_for(false), "second\n\nContext:\n- user: Ada");
    assert_eq!(
        plan.prompt_for(true),
        "[Earlier messages of this conversation, as the client sent them]\n\
         user: first\nassistant: ok\n[End of earlier messages]\n\nsecond\n\nContext:\n- user: Ada"
    );
}

#[test]
fn bad_runs_are_invalid_requests() {
    let cases = [
        ("not json", "not a RunAgentInput"),
        (r#"{"threadId": "t", "runId": "r"}"#, "not a RunAgentInput"),
        (r#"{"threadId": "", "runId": "r", "messages": []}"#, "threadId must not be empty"),
        (r#"{"threadId": "t", "runId": "r", "messages": []}"#, "no user message"),
        (
            r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}], "forwardedProps": {"executionMode": "yolo"}}"#,
            "executionMode must be one of",
        ),
        (
            r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}], "forwardedProps": {"harness": 3}}"#,
            "forwardedProps.harness",
        ),
        (
            r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "value": "https://x/a.png"}}]}]}"#,
            "superpi does not fetch images",
        ),
        (
            r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": [{"type": "binary", "mimeType": "application/pdf", "data": "JVBE"}]}]}"#,
            "only images",
        ),
        (
            r#"{"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": [{"type": "text", "text": " "}]}]}"#,
            "neither text nor an image",
        ),
    ];
    for (body, needle) in cases {
        let err = run_plan(body.as_bytes()).unwrap_err();
        assert_eq!((err.status.as_u16(), err.code), (400, "invalid_request"), "{body}");
        assert!(err.message.contains(needle), "{body}: {}", err.message);
    }
}

#[test]
fn a_run_that_resumes_or_brings_tool_results_continues_and_submits_nothing() {
    let body = json!({
        "threadId": "t1", "runId": "r2", "protocolVersion": "1.0",
        "messages": [
            {"id": "1", "role": "user", "content": "go"},
            {"id": "2", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function",
                "function": {"name": "pick", "arguments": "{}"}}]},
            {"id": "3", "role": "tool", "toolCallId": "c1", "content": "blue"},
            {"id": "4", "role": "tool", "toolCallId": "c2", "content": "", "error": "no screen"},
        ],
        "tools": [{"name": "pick", "description": "Pick a colour", "parameters": {"type": "object"}}],
        "resume": [
            {"interruptId": "perm-ab@3:12", "status": "resolved", "payload": {"optionId": "allow_once"}},
            {"interruptId": "perm-cd@3:15", "status": "cancelled"},
        ],
    });
    let plan = run_plan(body.to_string().as_bytes()).unwrap();
    assert!(plan.interrupts);
    assert_eq!(plan.client_tools.len(), 1);
    assert_eq!(
        plan.resume,
        vec![
            Answer {
                request_id: "perm-ab".into(),
                turn_id: 3,
                seq: 12,
                option_id: "allow_once".into(),
                question: None
            },
            Answer {
                request_id: "perm-cd".into(),
                turn_id: 3,
                seq: 15,
                option_id: "reject_once".into(),
                question: None
            },
        ]
    );
    assert_eq!(
        plan.tool_results,
        vec![
            ToolResult { tool_call_id: "c1".into(), content: "blue".into(), is_error: false },
            ToolResult { tool_call_id: "c2".into(), content: "no screen".into(), is_error: true },
        ]
    );
    for (resume, needle) in [
        (json!([{"interruptId": "nope", "status": "resolved", "payload": {"optionId": "x"}}]), "not an interrupt"),
        (json!([{"interruptId": "p@1:2", "status": "resolved", "payload": {}}]), "needs `optionId`"),
        (json!([{"interruptId": "p@1:2", "status": "maybe"}]), "status must be"),
    ] {
        let body = json!({"threadId": "t", "runId": "r", "messages": [], "resume": resume});
        let err = run_plan(body.to_string().as_bytes()).unwrap_err();
        assert!(err.message.contains(needle), "{}", err.message);
    }
    let twice = json!({"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}],
                       "tools": [{"name": "a", "description": ""}, {"name": "a", "description": ""}]});
    assert!(run_plan(twice.to_string().as_bytes()).unwrap_err().message.contains("named twice"));
    for (version, interrupts) in [("1.0", true), ("2.1.0", true), ("0.0.40", false), ("x", false)] {
        let body = json!({"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}],
                          "protocolVersion": version});
        assert_eq!(run_plan(body.to_string().as_bytes()).unwrap().interrupts, interrupts, "{version}");
    }
}

#[test]
fn input_bodies() {
    assert_eq!(
        input_request(br#"{"type": "permission", "requestId": "q1", "optionId": "allow_once"}"#),
        Ok(InputRequest::Permission { request_id: "q1".into(), option_id: "allow_once".into() })
    );
    assert_eq!(
        input_request(br#"{"type": "answer", "requestId": "q1", "answer": "reject_once"}"#),
        Ok(InputRequest::Answer { request_id: "q1".into(), answer: "reject_once".into() })
    );
    assert_eq!(input_request(br#"{"type": "cancel"}"#), Ok(InputRequest::Cancel {}));
    assert_eq!(
        input_request(br#"{"type": "prompt", "prompt": "hi"}"#),
        Ok(InputRequest::Prompt { prompt: "hi".into(), steer: false })
    );
    assert_eq!(
        input_request(br#"{"type": "prompt", "prompt": "hi", "steer": true}"#),
        Ok(InputRequest::Prompt { prompt: "hi".into(), steer: true })
    );
    for bad in
        [&br#"{"type": "prompt", "prompt": " "}"#[..], br#"{"type": "nope"}"#, b"[]", br#"{"type": "permission"}"#]
    {
        assert_eq!(input_request(bad).unwrap_err().status, 400);
    }
}

#[test]
fn modes_only_tighten() {
    assert!(tightens("plan", "auto"));
    assert!(tightens("accept-edits", "auto"));
    assert!(!tightens("auto", "plan"));
    assert!(!tightens("plan", "plan"));
    assert!(!tightens("weird", "auto"));
}
