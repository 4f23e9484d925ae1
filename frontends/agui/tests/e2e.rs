//! End-to-end tests of `superpi agui`: the real binary, the real kernel it starts, the mock
//! model, and plain HTTP (and `@ag-ui/client` under Node where the official client's view
//! matters). Build the binary first: `cargo build -p superpi-cli`.
//!
//! Over 500 lines on purpose: one end-to-end test binary per frontend, since each binary links
//! the crate and its dependencies once more (minutes on a 2-core machine).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // a test runs node

use crate::common;

use common::{Server, final_state, http, run_input, text, types, verify};
use serde_json::{Value, json};
use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_proto::method::OpenParams;
use superpi_tests::http::{assert_preflight_admits, preflight};
use superpi_tests::wait;

#[tokio::test]
async fn health_is_open_and_unknown_routes_are_json_404s() {
    let server = Server::start(&[], &[]);
    let http = http();
    for path in ["/", "/health"] {
        let resp = http.get(server.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["status"], "ok");
    }
    let resp = http.get(server.url("/agui/v2/nope")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
}

#[tokio::test]
async fn a_run_streams_reasoning_and_text_and_ends_with_run_finished() {
    let server = Server::start(&[], &[]);
    let http = http();
    let events =
        server.run(&http, &run_input("t1", "r1", "@think first a thought\nhello from the mock")).await.all().await;
    verify(&events);
    let tys = types(&events);
    assert_eq!(tys[..2], ["RUN_STARTED", "STATE_SNAPSHOT"]);
    assert_eq!(events[0], json!({"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}));
    assert_eq!(*tys.last().unwrap(), "RUN_FINISHED");
    let reasoning: String = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "first a thought");
    assert_eq!(text(&events), "hello from the mock");
    let last = events.last().unwrap();
    assert_eq!(last["result"], "hello from the mock");
    assert_eq!(last["outcome"], json!({"type": "success"}));
    let state = final_state(&events);
    assert_eq!(state["status"], "idle");
    assert_eq!(state["harness"], "superpi-code");
    assert!(state["usage"]["totalOutputTokens"].as_u64().unwrap() > 0, "{state}");
}

#[tokio::test]
async fn a_tool_call_streams_start_args_end_and_result() {
    let server = Server::start(&[], &[]);
    std::fs::write(server.env.workspace.join("marker.txt"), "x").unwrap();
    let http = http();
    let events = server.run(&http, &run_input("t1", "r1", "@tool ls {\"path\": \".\"}")).await.all().await;
    verify(&events);
    let tool: Vec<&Value> = events.iter().filter(|e| e["type"].as_str().unwrap().starts_with("TOOL_CALL")).collect();
    let tys: Vec<&str> = tool.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(tys, ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]);
    assert_eq!(tool[0]["toolCallName"], "ls");
    let id = tool[0]["toolCallId"].as_str().unwrap();
    let args: Value = serde_json::from_str(tool[1]["delta"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "."}));
    assert_eq!(tool[3]["toolCallId"], id);
    assert_eq!(tool[3]["role"], "tool");
    assert!(tool[3]["content"].as_str().unwrap().contains("marker.txt"), "{}", tool[3]);
    assert!(text(&events).starts_with("The tools answered."), "{}", text(&events));
}

#[tokio::test]
async fn a_failed_turn_ends_with_run_error() {
    let server = Server::start(&[], &[]);
    let http = http();
    let events = server.run(&http, &run_input("t1", "r1", "@fail the model broke")).await.all().await;
    verify(&events);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR");
    assert!(last["message"].as_str().unwrap().contains("the model broke"), "{last}");
}

#[tokio::test]
async fn bad_runs_get_json_errors() {
    let server = Server::start(&[], &[]);
    let http = http();
    let post = |body: String| {
        let http = http.clone();
        let url = server.url("/agui/v1/run");
        async move {
            let resp = http.post(url).header("content-type", "application/json").body(body).send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = post("{not json".into()).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_request")));
    let (status, body) = post(json!({"threadId": "t", "runId": "r", "messages": []}).to_string()).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_request")));
    let mut input = run_input("t", "r", "hi");
    input["forwardedProps"] = json!({"executionMode": "yolo"});
    let (status, _) = post(input.to_string()).await;
    assert_eq!(status, 400);
    let mut input = run_input("t", "r", "hi");
    input["forwardedProps"] = json!({"harness": "no-such-harness"});
    let (status, body) = post(input.to_string()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("no-such-harness"), "{body}");
}

#[tokio::test]
async fn forwarded_props_choose_the_harness_and_mode() {
    let server = Server::start(&[], &[]);
    let http = http();
    let mut input = run_input("t1", "r1", "hi");
    input["forwardedProps"] = json!({"harness": "superpi-planner", "executionMode": "plan"});
    let events = server.run(&http, &input).await.all().await;
    verify(&events);
    let state = final_state(&events);
    assert_eq!((state["harness"].as_str(), state["mode"].as_str()), (Some("superpi-planner"), Some("plan")));
    // The same thread is the same conversation; the mode can be tightened, never loosened.
    let mut input = run_input("t2", "r1", "hi");
    input["forwardedProps"] = json!({"executionMode": "plan"});
    let first = server.run(&http, &run_input("t2", "r0", "hi")).await.all().await;
    let second = server.run(&http, &input).await.all().await;
    assert_eq!(final_state(&first)["conversationId"], final_state(&second)["conversationId"]);
    assert_eq!(final_state(&second)["mode"], "plan");
    let mut input = run_input("t2", "r2", "hi");
    input["forwardedProps"] = json!({"executionMode": "auto"});
    let third = server.run(&http, &input).await.all().await;
    assert_eq!(final_state(&third)["mode"], "plan");
}

#[tokio::test]
async fn tokens_guard_every_route_but_health_and_keep_threads_apart() {
    let server = Server::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "key-a, key-b")]);
    let http = http();
    assert_eq!(http.get(server.url("/health")).send().await.unwrap().status(), 200);
    let body = run_input("t1", "r1", "secret of a");
    for auth in [None, Some("Bearer wrong"), Some("Basic key-a")] {
        let mut req = http.post(server.url("/agui/v1/run")).json(&body);
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 401, "{auth:?}");
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["code"], "unauthorized");
        assert!(err["error"]["message"].as_str().is_some_and(|m| m.contains("bearer")), "{err}");
    }
    let resp = http.get(server.url("/agui/v1/sessions/t1/events")).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let resp =
        http.post(server.url("/agui/v1/sessions/t1/input")).json(&json!({"type": "cancel"})).send().await.unwrap();
    assert_eq!(resp.status(), 401);

    let resp = http.post(server.url("/agui/v1/run")).bearer_auth("key-a").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let events = common::Sse::new(resp).all().await;
    verify(&events);
    assert_eq!(text(&events), "secret of a");
    // key-b's thread t1 is not key-a's.
    let resp = http.get(server.url("/agui/v1/sessions/t1/events")).bearer_auth("key-b").send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let resp = http.get(server.url("/agui/v1/sessions/t1/events")).bearer_auth("key-a").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut attached = common::Sse::new(resp);
    let snapshot = attached.until("MESSAGES_SNAPSHOT").await;
    let messages = &snapshot.last().unwrap()["messages"];
    assert_eq!(messages[0]["content"], "secret of a");
}

#[tokio::test]
async fn attaching_sends_snapshots_then_later_runs_live() {
    let server = Server::start(&[], &[]);
    let http = http();
    let resp = http.get(server.url("/agui/v1/sessions/unknown/events")).send().await.unwrap();
    assert_eq!(resp.status(), 404);

    server.run(&http, &run_input("t1", "r1", "first question")).await.all().await;
    let mut attached = server.attach(&http, "t1").await;
    let opening = attached.until("RUN_FINISHED").await;
    assert_eq!(types(&opening), ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
    let messages = &opening[2]["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 2, "{messages}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], "first question");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], "first question");

    // A prompt through the input route shows up on the attached stream as a new run.
    let (status, body) = server.input(&http, "t1", json!({"type": "prompt", "prompt": "second question"})).await;
    assert_eq!(status, 202, "{body}");
    let turn = attached.until("RUN_FINISHED").await;
    let mut all = opening.clone();
    all.extend(turn.iter().cloned());
    verify(&all);
    assert_eq!(turn[0]["type"], "RUN_STARTED");
    let user: Vec<&Value> = turn.iter().filter(|e| e["type"] == "TEXT_MESSAGE_START").collect();
    assert_eq!(user[0]["role"], "user");
    assert_eq!(text(&turn), "second questionsecond question");
    assert_eq!(final_state(&all)["status"], "idle");
}

#[tokio::test]
async fn after_a_compaction_the_messages_snapshot_holds_the_summary_and_the_turns_it_kept() {
    let server = Server::start(&[], &[]);
    let http = http();
    for (run, prompt) in [("r1", "first question"), ("r2", "second question"), ("r3", "third question")] {
        server.run(&http, &run_input("t1", run, prompt)).await.all().await;
    }
    let mut attached = server.attach(&http, "t1").await;
    attached.until("RUN_FINISHED").await;
    let kernel = KernelClient::connect(&server.env.connect_options("agui")).await.unwrap();
    let info = kernel.open(OpenParams { external_id: Some("t1".into()), ..Default::default() }).await.unwrap();
    // The mock's window is large: the summary stands for the first turn, the later two are kept.
    let compacted = kernel.compact(info.conversation_id).await.unwrap();
    assert_eq!(compacted["compacted"], true, "{compacted}");
    let contents = |snapshot: &Value| -> Vec<(String, String)> {
        let messages = snapshot["messages"].as_array().unwrap();
        messages.iter().map(|m| (m["role"].as_str().unwrap().into(), m["content"].as_str().unwrap().into())).collect()
    };
    let expected_after_summary = [
        ("user", "second question"),
        ("assistant", "second question"),
        ("user", "third question"),
        ("assistant", "third question"),
    ]
    .map(|(role, text)| (role.to_string(), text.to_string()));
    // The attached stream gets a snapshot of what the model now reads...
    let live = attached.until("MESSAGES_SNAPSHOT").await;
    let live = contents(live.last().unwrap());
    assert_eq!(live[0].0, "system");
    assert_eq!(live[1..], expected_after_summary, "{live:?}");
    // ...and so does a stream attached afterwards.
    let mut later = server.attach(&http, "t1").await;
    let opening = later.until("RUN_FINISHED").await;
    assert_eq!(types(&opening), ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
    assert_eq!(contents(&opening[2]), [vec![live[0].clone()], expected_after_summary.to_vec()].concat());
}

/// The messages `@ag-ui/client`'s HttpAgent holds after attaching to `thread`, as
/// `conformance/agui/attach.mjs` prints them (`role`, `content`). Node and npm are required;
/// the packages are installed from conformance/package-lock.json when missing.
async fn official_client_attached(server: &Server, thread: &str) -> Value {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    let base = server.base.clone();
    let thread = thread.to_string();
    let out = tokio::task::spawn_blocking(move || {
        if !dir.join("node_modules/@ag-ui/client").exists() {
            let status = std::process::Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dir)
                .status()
                .expect("npm is required for this test (Node 20 or later)");
            assert!(status.success(), "npm ci failed in {}", dir.display());
        }
        std::process::Command::new("node")
            .arg("agui/attach.mjs")
            .env("AGUI_BASE", base)
            .env("AGUI_THREAD", thread)
            .current_dir(&dir)
            .output()
            .expect("node is required for this test")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "attach.mjs failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// After `session.clear` (an editor's or the terminal's /clear) the thread shows nothing said
/// before it, not an empty system message: the stream attached then gets an empty snapshot,
/// the official client attached later holds nothing, and after another run only that run.
#[tokio::test]
async fn after_a_clear_the_official_client_holds_only_what_follows_it() {
    let server = Server::start(&[], &[]);
    let http = http();
    server.run(&http, &run_input("t1", "r1", "first question")).await.all().await;
    let mut attached = server.attach(&http, "t1").await;
    attached.until("RUN_FINISHED").await;
    let kernel = KernelClient::connect(&server.env.connect_options("agui")).await.unwrap();
    let info = kernel.open(OpenParams { external_id: Some("t1".into()), ..Default::default() }).await.unwrap();
    let cleared = kernel.clear(info.conversation_id).await.unwrap();
    assert_eq!(cleared["cleared"], true, "{cleared}");
    let live = attached.until("MESSAGES_SNAPSHOT").await;
    assert_eq!(live.last().unwrap()["messages"], json!([]), "{live:?}");
    assert_eq!(official_client_attached(&server, "t1").await, json!([]));

    server.run(&http, &run_input("t1", "r2", "second question")).await.all().await;
    assert_eq!(
        official_client_attached(&server, "t1").await,
        json!([
            {"role": "user", "content": "second question"},
            {"role": "assistant", "content": "second question"},
        ])
    );
}

/// Allows the bash call a stream asked about, once its question came.
async fn allow_the_question(server: &Server, http: &reqwest::Client, stream: &mut common::Sse) {
    let asked = stream.until("CUSTOM").await;
    let question = &asked.last().unwrap()["value"];
    let answer = json!({"type": "permission", "requestId": question["requestId"], "optionId": "allow_once"});
    let (status, body) = server.input(http, "t1", answer).await;
    assert_eq!((status, &body["accepted"]), (200, &json!(true)), "{body}");
}

#[tokio::test]
async fn a_run_started_while_the_threads_turn_runs_steers_it() {
    let server = Server::start(&[], &[]);
    let http = http();
    let waiting = |file: &str| format!(r#"@tool bash {{"command": "while [ ! -e {file} ]; do sleep 0.02; done"}}"#);
    let mut first = server.run(&http, &run_input("t1", "r1", &waiting("go"))).await;
    allow_the_question(&server, &http, &mut first).await;
    // The second run's prompt is in the kernel once its stream has begun.
    let second = server.run(&http, &run_input("t1", "r2", "steered words")).await;
    std::fs::write(server.env.workspace.join("go"), "").unwrap();
    let first = first.until("RUN_FINISHED").await;
    let second = second.all().await;
    // Both runs follow the one turn to its end; the mock answers its latest prompt.
    for run in [&first, &second] {
        let last = run.last().unwrap();
        assert_eq!(last["type"], "RUN_FINISHED", "{run:?}");
        assert_eq!(last["result"], "steered words", "{run:?}");
    }
    assert_eq!(second[0]["runId"], "r2");
    let kernel = KernelClient::connect(&server.env.connect_options("agui")).await.unwrap();
    let info = kernel.open(OpenParams { external_id: Some("t1".into()), ..Default::default() }).await.unwrap();
    let history = kernel.history(info.conversation_id).await.unwrap().entries;
    let users: Vec<Option<i64>> =
        history.iter().filter(|e| e.kind == superpi_proto::EntryKind::User).map(|e| e.turn_id).collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(users[0], users[1], "the second run's prompt joined the first run's turn");

    // The input route steers when asked to.
    let mut attached = server.attach(&http, "t1").await;
    attached.until("RUN_FINISHED").await;
    let (status, body) = server.input(&http, "t1", json!({"type": "prompt", "prompt": waiting("go2")})).await;
    assert_eq!(status, 202, "{body}");
    allow_the_question(&server, &http, &mut attached).await;
    let steer = json!({"type": "prompt", "prompt": "input steered", "steer": true});
    let (status, steered) = server.input(&http, "t1", steer).await;
    assert_eq!((status, &steered["steered"]), (202, &json!(true)), "{steered}");
    assert_eq!(steered["turnId"], body["turnId"], "the running turn answers it");
    std::fs::write(server.env.workspace.join("go2"), "").unwrap();
    let turn = attached.until("RUN_FINISHED").await;
    assert_eq!(turn.last().unwrap()["result"], "input steered");
}

#[tokio::test]
async fn the_input_route_refuses_what_it_cannot_do() {
    let server = Server::start(&[], &[]);
    let http = http();
    let (status, body) = server.input(&http, "nobody", json!({"type": "prompt", "prompt": "hi"})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")));
    let (status, _) = server.input(&http, "nobody", json!({"type": "cancel"})).await;
    assert_eq!(status, 404);
    let (status, _) = server.input(&http, "nobody", json!({"type": "dance"})).await;
    assert_eq!(status, 400);
    let (status, body) = server
        .input(&http, "nobody", json!({"type": "permission", "requestId": "nope", "optionId": "allow_once"}))
        .await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")));
    let (status, body) =
        server.input(&http, "nobody", json!({"type": "answer", "requestId": "nope", "answer": "reject_once"})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")));
}

/// Attaching to, prompting or cancelling an unknown thread is a 404 that leaves nothing behind:
/// the kernel holds no conversation for this principal afterwards.
#[tokio::test]
async fn an_unknown_thread_is_not_found_and_nothing_is_created() {
    let server = Server::start(&[], &[]);
    let http = http();
    let resp = http.get(server.url("/agui/v1/sessions/ghost/events")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("ghost"), "{body}");
    let (status, _) = server.input(&http, "ghost", json!({"type": "prompt", "prompt": "hi"})).await;
    assert_eq!(status, 404);
    let (status, _) = server.input(&http, "ghost", json!({"type": "cancel"})).await;
    assert_eq!(status, 404);

    let kernel = KernelClient::connect(&server.env.connect_options("agui")).await.unwrap();
    assert_eq!(kernel.list().await.unwrap(), Vec::new());
    // A run does create the thread's conversation, which attaching then finds.
    server.run(&http, &run_input("ghost", "r1", "now i exist")).await.all().await;
    assert_eq!(kernel.list().await.unwrap().len(), 1);
    server.attach(&http, "ghost").await.until("RUN_FINISHED").await;
    assert_eq!(kernel.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn cancel_through_the_input_route_finishes_the_run_as_cancelled() {
    let server = Server::start(&[], &[]);
    let http = http();
    let mut run = server.run(&http, &run_input("t1", "r1", "@slow 100\n@deltas 200")).await;
    run.until("TEXT_MESSAGE_CONTENT").await;
    let (status, body) = server.input(&http, "t1", json!({"type": "cancel"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["cancelled"], true);
    let rest = run.all().await;
    let last = rest.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["outcome"], json!({"type": "cancelled"}));
    // Nothing is running any more.
    let (status, body) = server.input(&http, "t1", json!({"type": "cancel"})).await;
    assert_eq!((status, body["cancelled"].as_bool()), (200, Some(false)));
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_turn() {
    let server = Server::start(&[], &[]);
    let http = http();
    let mut run = server.run(&http, &run_input("t1", "r1", "@slow 100\n@deltas 500")).await;
    run.until("TEXT_MESSAGE_CONTENT").await;

    // Watch the conversation from the kernel's side, as the same frontend and principal.
    let kernel = KernelClient::connect(&server.env.connect_options("agui")).await.unwrap();
    let info = kernel.open(OpenParams { external_id: Some("t1".into()), ..Default::default() }).await.unwrap();
    assert!(!info.created);
    drop(run);
    let ended = superpi_tests::first_turn_end(&kernel, info.conversation_id).await;
    assert_eq!(ended, EventBody::TurnCancelled {});
}

#[tokio::test]
async fn a_permission_question_is_answered_through_the_input_route() {
    let server = Server::start(&[], &[]);
    let http = http();
    let mut input = run_input("t1", "r1", "@tool bash {\"command\": \"touch made-by-bash\"}");
    input["forwardedProps"] = json!({"executionMode": "accept-edits"});
    let mut run = server.run(&http, &input).await;
    let before = run.until("CUSTOM").await;
    let question = before.last().unwrap();
    assert_eq!(question["name"], "superpi.permission_request");
    let value = &question["value"];
    assert_eq!(value["toolName"], "bash");
    let options: Vec<&str> =
        value["options"].as_array().unwrap().iter().map(|o| o["optionId"].as_str().unwrap()).collect();
    let four = ["allow_once", "allow_always", "reject_once", "reject_always"];
    assert_eq!(options, [four.as_slice(), &["allow_always_project", "allow_always_user"]].concat());
    assert_eq!(final_state(&before)["pendingPermission"]["requestId"], value["requestId"]);

    // "Always for me": the call runs, and a rule in the user's file answers it from now on.
    let answer = json!({"type": "permission", "requestId": value["requestId"], "optionId": "allow_always_user"});
    let (status, body) = server.input(&http, "t1", answer).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accepted"], true);

    let after = run.all().await;
    let mut all = before.clone();
    all.extend(after.iter().cloned());
    verify(&all);
    let result = after.iter().find(|e| e["type"] == "TOOL_CALL_RESULT").expect("a tool result");
    assert!(!result["content"].as_str().unwrap().contains("denied"), "{result}");
    assert!(server.env.workspace.join("made-by-bash").exists(), "the allowed command ran");
    assert_eq!(final_state(&all)["pendingPermission"], Value::Null);
    assert_eq!(after.last().unwrap()["type"], "RUN_FINISHED");
    let rules = std::fs::read_to_string(server.env.locations.config_dir.join("permissions.json")).unwrap();
    assert!(rules.contains("touch made-by-bash") && !rules.contains("\"workspace\""), "{rules}");
}

#[tokio::test]
async fn deltas_that_come_fast_merge_into_few_content_events() {
    let server = Server::start(&[], &[]);
    let http = http();
    let events = server.run(&http, &run_input("t1", "r1", "@deltas 2000")).await.all().await;
    verify(&events);
    let contents = events.iter().filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT").count();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    // Every character arrives once, in far fewer events than the kernel's 2000 deltas.
    assert_eq!(text(&events), last["result"].as_str().unwrap());
    assert!(contents < 1000, "{contents} content events for 2000 deltas");
    eprintln!("2000 deltas arrived as {contents} TEXT_MESSAGE_CONTENT events");
}

#[tokio::test]
async fn sigterm_ends_open_streams_and_the_server_exits() {
    let mut server = Server::start(&[], &[]);
    let http = http();
    server.run(&http, &run_input("idle", "r0", "hi")).await.all().await;
    let mut attached = server.attach(&http, "idle").await;
    attached.until("RUN_FINISHED").await;
    let mut run = server.run(&http, &run_input("busy", "r1", "@slow 100\n@deltas 500")).await;
    run.until("TEXT_MESSAGE_CONTENT").await;

    // SAFETY: kill(2) on the server process this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    let rest = run.all().await;
    let last = rest.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{rest:#?}");
    assert_eq!(last["code"], "server_stopping");
    assert_eq!(attached.next().await, None, "the attached stream ends too");
    let status = tokio::task::spawn_blocking(move || server.child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn attaching_mid_turn_follows_the_turn_and_resyncs_its_messages() {
    let server = Server::start(&[], &[]);
    let http = http();
    let mut run = server.run(&http, &run_input("t1", "r1", "@slow 20\none two three four five six seven")).await;
    run.until("TEXT_MESSAGE_CONTENT").await;
    let mut attached = server.attach(&http, "t1").await;
    let events = attached.until("RUN_FINISHED").await;
    verify(&events);
    assert_eq!(types(&events)[..3], ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT"]);
    assert_eq!(events[1]["snapshot"]["status"], "running");
    assert_eq!(events[2]["messages"][0]["content"], "@slow 20\none two three four five six seven");
    // The deltas before the attach were not seen: the completed message comes as a snapshot.
    let last_snapshot = events.iter().rev().find(|e| e["type"] == "MESSAGES_SNAPSHOT").unwrap();
    let messages = last_snapshot["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "one two three four five six seven", "{events:#?}");
    let finished = run.all().await;
    assert_eq!(finished.last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test]
async fn browsers_from_other_origins_need_a_token() {
    let server = Server::start(&[], &[]);
    let http = http();
    let body = run_input("t1", "r1", "hi");
    let resp =
        http.post(server.url("/agui/v1/run")).header("origin", "http://evil.example").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "forbidden_origin");
    // A page on this machine may, with CORS.
    let preflight = preflight(&http, &server.url("/agui/v1/run"), "http://localhost:3000", None).await;
    assert_preflight_admits(&preflight, "http://localhost:3000", "authorization");
    let resp = http
        .post(server.url("/agui/v1/run"))
        .header("origin", "http://localhost:3000")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["access-control-allow-origin"], "http://localhost:3000");
    verify(&common::Sse::new(resp).all().await);

    // With tokens, any origin may ask, and the token decides.
    let guarded = Server::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "k")]);
    let resp = http
        .post(guarded.url("/agui/v1/run"))
        .header("origin", "http://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let resp = http
        .post(guarded.url("/agui/v1/run"))
        .header("origin", "https://app.example")
        .bearer_auth("k")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["access-control-allow-origin"], "https://app.example");
}

#[tokio::test]
async fn a_kernel_that_dies_ends_the_run_with_run_error_and_the_next_run_starts_a_new_one() {
    let server = Server::start(&[], &[]);
    let http = http();
    let mut run = server.run(&http, &run_input("t1", "r1", "@slow 100\n@deltas 500")).await;
    run.until("TEXT_MESSAGE_CONTENT").await;
    server.env.kill_kernel();
    let rest = run.all().await;
    let last = rest.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{rest:#?}");
    assert_eq!(last["code"], "kernel_unavailable");
    // The conversation survives in the store; the next run reconnects (autostarting a kernel).
    let events = server.run(&http, &run_input("t1", "r2", "again")).await.all().await;
    verify(&events);
    assert_eq!(text(&events), "again");
    let resp = http.get(server.url("/agui/v1/sessions/t1/events")).send().await.unwrap();
    let mut attached = common::Sse::new(resp);
    let opening = attached.until("MESSAGES_SNAPSHOT").await;
    let contents: Vec<&str> =
        opening.last().unwrap()["messages"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(contents.contains(&"@slow 100\n@deltas 500") && contents.contains(&"again"), "{contents:?}");
}

#[tokio::test]
async fn the_first_run_of_a_thread_carries_the_clients_earlier_messages() {
    let server = Server::start(&[], &[]);
    let http = http();
    let mut input = run_input("t1", "r1", "what is my name?");
    input["messages"] = json!([
        {"id": "1", "role": "user", "content": "my name is Ada"},
        {"id": "2", "role": "assistant", "content": "hello Ada"},
        {"id": "3", "role": "user", "content": "what is my name?"},
    ]);
    let events = server.run(&http, &input).await.all().await;
    // The mock echoes its prompt: the transcript, then the question.
    assert_eq!(
        text(&events),
        "[Earlier messages of this conversation, as the client sent them]\nuser: my name is Ada\n\
         assistant: hello Ada\n[End of earlier messages]\n\nwhat is my name?"
    );
    // Later runs of the thread send only the last user message: the kernel has the rest.
    let messages = input["messages"].as_array_mut().unwrap();
    messages.push(json!({"id": "4", "role": "assistant", "content": "..."}));
    messages.push(json!({"id": "5", "role": "user", "content": "thanks"}));
    input["runId"] = json!("r2");
    let events = server.run(&http, &input).await.all().await;
    assert_eq!(text(&events), "thanks");
}

#[tokio::test]
async fn a_rejected_permission_refuses_the_call() {
    let server = Server::start(&[], &[]);
    let http = http();
    let mut input = run_input("t1", "r1", "@tool bash {\"command\": \"touch not-made\"}");
    input["forwardedProps"] = json!({"executionMode": "accept-edits"});
    let mut run = server.run(&http, &input).await;
    let question = run.until("CUSTOM").await.pop().unwrap();
    assert_eq!(question["name"], "superpi.permission_request");
    let answer = json!({"type": "answer", "requestId": question["value"]["requestId"], "answer": "reject_once"});
    let (status, body) = server.input(&http, "t1", answer).await;
    assert_eq!((status, body["accepted"].as_bool()), (200, Some(true)), "{body}");
    let after = run.all().await;
    let resolved = after.iter().find(|e| e["name"] == "superpi.ui_resolved").expect("ui_resolved");
    assert_eq!(resolved["value"]["outcome"]["option_id"], "reject_once");
    assert!(after.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"), "{after:#?}");
    assert!(!server.env.workspace.join("not-made").exists(), "a rejected command does not run");
    assert_eq!(after.last().unwrap()["type"], "RUN_FINISHED");
}

/// Every kind of malformed request, each on a connection of its own and each followed by a
/// request that must succeed: each gets a 4xx and the server keeps serving, a run included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_malformed_request_is_refused_and_serving_goes_on() {
    use superpi_tests::bad_input::{http_exchange, http_requests};
    let server = Server::start(&[], &[]);
    let addr = server.base.trim_start_matches("http://").trim_end_matches('/').to_string();
    let bad_fields = json!({"threadId": 7, "runId": [], "messages": "hi", "tools": {}});
    let health = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    for path in ["/agui/v1/run", "/agui/v1/sessions/t1/input"] {
        for bad in http_requests(path, 8 << 20, &bad_fields) {
            let (status, body) = http_exchange(&addr, &bad.raw);
            assert!((400..500).contains(&status), "{path}, {}: {status} {body}", bad.name);
            let (status, body) = http_exchange(&addr, health);
            assert_eq!(status, 200, "after {path}, {}: {body}", bad.name);
        }
    }
    let events = server.run(&http(), &run_input("t1", "r1", "still here?")).await.all().await;
    assert_eq!(text(&events), "still here?");
}

/// Attaching to a thread longer than one history page sends every message once and in
/// order, in one `MESSAGES_SNAPSHOT` (which the frontend writes page by page).
#[tokio::test]
async fn attaching_to_a_history_of_several_pages_snapshots_every_message_in_order() {
    let server = Server::start(&[], &[]);
    let turns = 3;
    superpi_tests::pages::multi_page_conversation(&server.env, "agui", Some("long"), turns).await;
    let mut attached = server.attach(&http(), "long").await;
    let opening = attached.until("RUN_FINISHED").await;
    assert_eq!(types(&opening), ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
    let said: Vec<(String, String)> = opening[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "reasoning")
        .map(|m| (m["role"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().to_string()))
        .collect();
    superpi_tests::pages::assert_replayed(&said, turns);
    verify(&opening);
}

/// Runs a bash call in the thread's conversation from a non-interactive watch and says
/// whether the kernel asked about it (it asks only while an interactive watcher is there;
/// the question is refused here so the turn ends either way).
async fn asks_about_bash(kernel: &KernelClient, conversation_id: i64) -> bool {
    let mut sub = superpi_tests::watch(kernel, conversation_id, None).await;
    let turn = kernel.submit_text(conversation_id, "@tool bash {\"command\": \"touch made-by-bash\"}").await.unwrap();
    let mut asked = false;
    loop {
        let event = superpi_tests::next_event(&mut sub, |e| e.turn_id == Some(turn.turn_id)).await;
        if let EventBody::PermissionRequest { request_id, .. } = &event.body {
            asked = true;
            kernel.respond_permission(request_id, "reject_once").await.unwrap();
        }
        if event.body.is_turn_end() {
            return asked;
        }
    }
}

/// An attached client that vanishes mid-stream leaves no interactive watcher in the kernel:
/// a later call that needs a question is refused at once (nobody to ask) rather than asked.
#[tokio::test]
async fn an_attached_client_that_vanishes_mid_stream_leaves_no_interactive_watcher() {
    let server = Server::start(&[], &[]);
    let http = http();
    server.run(&http, &run_input("t1", "r1", "hello")).await.all().await;
    let kernel = KernelClient::connect(&server.env.connect_options("agui")).await.unwrap();
    let info = kernel.open(OpenParams { external_id: Some("t1".into()), ..Default::default() }).await.unwrap();
    kernel.set_mode(info.conversation_id, "accept-edits").await.unwrap();
    let conv = info.conversation_id;

    // While a client is attached, the kernel asks (so the probe can tell).
    let mut attached = server.attach(&http, "t1").await;
    attached.until("RUN_FINISHED").await;
    assert!(asks_about_bash(&kernel, conv).await, "an attached client is an interactive watcher");

    // It goes in the middle of a streaming turn.
    let (status, body) = server.input(&http, "t1", json!({"type": "prompt", "prompt": "@slow 20\n@deltas 200"})).await;
    assert_eq!(status, 202, "{body}");
    attached.until("TEXT_MESSAGE_CONTENT").await;
    drop(attached);
    let turn_id = body["turnId"].as_i64().unwrap();
    let mut sub = superpi_tests::watch(&kernel, conv, Some(0)).await;
    superpi_tests::turn_events(&mut sub, turn_id).await;

    // The frontend notices at its next write, within the turn: from then on nobody is asked.
    // Probes until then are answered; a watcher left behind would be asked forever.
    wait::until("the vanished client's watcher is no longer counted", wait::PATIENCE, async || {
        !asks_about_bash(&kernel, conv).await
    })
    .await;
}

/// A run offering `pick` (a client tool) whose prompt calls it: the run ends naming the call
/// pending; returns its tool call id.
async fn call_the_client_tool(server: &Server, http: &reqwest::Client, thread: &str) -> String {
    let mut input = run_input(thread, "r1", "@tool pick {\"what\": \"colour\"}");
    input["protocolVersion"] = json!("1.0");
    input["tools"] = json!([{"name": "pick", "description": "Ask the person", "parameters": {"type": "object"}}]);
    let events = server.run(http, &input).await.all().await;
    verify(&events);
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{events:#?}");
    end["outcome"]["pendingToolCallIds"][0].as_str().expect("a pending call").to_string()
}

/// The run that brings the client tool's result.
fn with_result(thread: &str, call: &str, result: &str) -> Value {
    let mut input = run_input(thread, "r2", "@tool pick {\"what\": \"colour\"}");
    let messages = input["messages"].as_array_mut().unwrap();
    messages.push(json!({"id": "a", "role": "assistant", "toolCalls": [
        {"id": call, "type": "function", "function": {"name": "pick", "arguments": "{}"}}]}));
    messages.push(json!({"id": "t", "role": "tool", "toolCallId": call, "content": result}));
    input
}

/// A turn waiting on a client tool is cancelled through the input route, and times out when
/// nobody answers: either way the call gets an error result and the turn ends, and a result
/// that comes after finds the turn's end rather than a turn that waits.
#[tokio::test]
async fn a_client_tools_call_waits_for_its_result_and_is_cancellable_and_times_out() {
    let env = superpi_tests::TestEnv::new();
    let settings = json!({"permissions": {"question_timeout_secs": 2}}).to_string();
    std::fs::write(env.locations.config_dir.join("settings.json"), settings).unwrap();
    let server = Server::start_in(env, &[], &[]);
    let http = http();

    // Answered: the next run continues the same turn with the result.
    let call = call_the_client_tool(&server, &http, "answered").await;
    let events = server.run(&http, &with_result("answered", &call, "navy")).await.all().await;
    verify(&events);
    assert_eq!(text(&events), "The tools answered. pick returned: navy");
    assert_eq!(events.last().unwrap()["outcome"], json!({"type": "success"}));

    // Cancelled while it waits.
    let call = call_the_client_tool(&server, &http, "cancelled").await;
    let (status, body) = server.input(&http, "cancelled", json!({"type": "cancel"})).await;
    assert_eq!((status, &body["cancelled"]), (200, &json!(true)), "{body}");
    let events = server.run(&http, &with_result("cancelled", &call, "late")).await.all().await;
    verify(&events);
    assert_eq!(events.last().unwrap()["outcome"], json!({"type": "cancelled"}), "{events:#?}");

    // Not answered within the question timeout: the model reads an error result.
    let call = call_the_client_tool(&server, &http, "timed-out").await;
    let kernel = KernelClient::connect(&server.env.connect_options("agui")).await.unwrap();
    let lookup = OpenParams { external_id: Some("timed-out".into()), create: Some(false), ..Default::default() };
    let conv = kernel.open(lookup.clone()).await.unwrap().conversation_id;
    wait::until("the unanswered call timed out and its turn ended", wait::PATIENCE, async || {
        kernel.open(lookup.clone()).await.unwrap().status == "idle"
    })
    .await;
    let events = server.run(&http, &with_result("timed-out", &call, "late")).await.all().await;
    verify(&events);
    assert_eq!(text(&events), "The tools answered. pick failed with: the client did not answer within 2 s");
    let stored = kernel.history(conv).await.unwrap();
    assert!(!format!("{stored:?}").contains("late"), "a result after the timeout must not be stored");
}

/// The model's question (`ask_question`) ends an AG-UI 1.0 run as an interrupt whose response
/// schema is the questions' form; the next run's `resume` answers it (the answers are the
/// call's result), and a `cancelled` entry declines.
#[tokio::test]
async fn the_models_question_is_an_interrupt_answered_by_resume() {
    let server = Server::start(&[], &[]);
    let http = http();
    let ask = json!({"questions": [{"id": "db", "question": "Which database?", "options": ["sqlite", "postgres"]}]});
    for (thread, status, payload, said) in [
        ("answered", "resolved", json!({"db": "postgres"}), r#"ask_question returned: {"db":"postgres"}"#),
        ("declined", "cancelled", Value::Null, "ask_question returned: The person declined to answer."),
    ] {
        let mut input = run_input(thread, "r1", &format!("@tool ask_question {ask}"));
        input["protocolVersion"] = json!("1.0");
        let events = server.run(&http, &input).await.all().await;
        verify(&events);
        let end = events.last().unwrap();
        assert_eq!(end["outcome"]["type"], "interrupt", "{events:#?}");
        let interrupt = &end["outcome"]["interrupts"][0];
        assert_eq!(
            (interrupt["reason"].clone(), interrupt["message"].clone()),
            (json!("question"), json!("Which database?"))
        );
        assert_eq!(interrupt["responseSchema"]["properties"]["db"]["enum"], json!(["sqlite", "postgres"]));
        let mut resume = run_input(thread, "r2", "");
        resume["protocolVersion"] = json!("1.0");
        resume["resume"] = json!([{"interruptId": interrupt["id"], "status": status, "payload": payload}]);
        let events = server.run(&http, &resume).await.all().await;
        verify(&events);
        assert!(text(&events).contains(said), "{}", text(&events));
        assert_eq!(events.last().unwrap()["outcome"], json!({"type": "success"}));
    }
}
