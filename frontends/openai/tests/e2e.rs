//! End-to-end: the real `superpi gateway` process (and the kernel it starts) over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Gateway, chat_body, http, read_stream};
use serde_json::{Value, json};
use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_tests::http::{assert_preflight_admits, preflight};

const LIMIT: Duration = Duration::from_secs(60);

async fn post(gw: &Gateway, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = http().post(gw.url("/v1/chat/completions")).body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    tokio::time::timeout(LIMIT, req.send()).await.expect("answer in time").unwrap()
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")))
}

fn conversation_of(resp: &reqwest::Response) -> i64 {
    resp.headers()["x-superpi-conversation-id"].to_str().unwrap().parse().unwrap()
}

fn assert_error(status: u16, body: &Value, want_status: u16, code: &str) {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(body["error"]["type"].is_string(), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn status_models_and_unknown_routes() {
    let gw = Gateway::start(&[], &[]);
    for path in ["/", "/health"] {
        let (status, body) = json_of(http().get(gw.url(path)).send().await.unwrap()).await;
        assert_eq!((status, &body["status"]), (200, &json!("ok")));
    }
    let (status, body) = json_of(http().get(gw.url("/v1/models")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "list");
    let ids: Vec<&str> = body["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    for harness in ["superpi-code", "superpi-planner", "superpi-assistant"] {
        assert!(ids.contains(&harness), "{ids:?}");
    }
    // With no provider configured, the offline model is the one provider model.
    assert!(ids.contains(&"mock"), "{ids:?}");
    assert!(!ids.contains(&"gpt-4o"), "{ids:?}");
    let code = body["data"].as_array().unwrap().iter().find(|m| m["id"] == "superpi-code").unwrap();
    assert_eq!(code["object"], "model");
    assert_eq!(code["capabilities"]["harness"], true);
    assert!(code["capabilities"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    let (status, body) = json_of(http().get(gw.url("/v1/chat/completions")).send().await.unwrap()).await;
    assert_error(status, &body, 405, "method_not_allowed");
    for path in ["/v1/completions", "/v1/embeddings", "/v1/responses/compact"] {
        let (status, body) = json_of(http().post(gw.url(path)).body("{}").send().await.unwrap()).await;
        assert_error(status, &body, 404, "not_found");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_completion() {
    let gw = Gateway::start(&[], &[]);
    let mut body = chat_body("superpi-code", false, "hello there gateway");
    body["tools"] = json!([{"type": "function", "function": {"name": "client_side", "parameters": {}}}]);
    body["temperature"] = json!(0.1);
    let (status, body) = json_of(post(&gw, &body, &[]).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["model"], "superpi-code");
    let choice = &body["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "hello there gateway");
    assert_eq!(choice["finish_reason"], "stop");
    assert!(choice["message"].get("tool_calls").is_none());
    let usage = &body["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_completion() {
    let gw = Gateway::start(&[], &[]);
    let mut body = chat_body("superpi-code", true, "@think weighing it\none two three four");
    body["stream_options"] = json!({"include_usage": true});
    let resp = post(&gw, &body, &[]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let s = read_stream(&resp.text().await.unwrap());
    assert!(s.done, "ends with [DONE]");
    let id = &s.chunks[0]["id"];
    assert!(s.chunks.iter().all(|c| &c["id"] == id), "one id across the chunks");
    assert_eq!(s.chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(s.chunks.iter().filter(|c| c["choices"][0]["delta"].get("role").is_some()).count(), 1);
    assert_eq!(s.content, "one two three four");
    assert!(s.reasoning.contains("weighing it"), "{:?}", s.reasoning);
    assert_eq!(s.finish_reasons, ["stop"]);
    assert_eq!(s.usage.len(), 1, "usage once");
    let last = s.chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert!(last["usage"]["completion_tokens"].as_u64().is_some());

    // Without include_usage there is no usage chunk.
    let s = read_stream(&post(&gw, &chat_body("superpi-code", true, "plain"), &[]).await.text().await.unwrap());
    assert!(s.usage.is_empty());
    assert_eq!((s.content.as_str(), s.done), ("plain", true));
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_run_on_the_server_and_show_as_reasoning() {
    let gw = Gateway::start(&[], &[]);
    std::fs::write(gw.env.workspace.join("marker.txt"), "x").unwrap();
    let body = chat_body("superpi-code", true, "@tool ls {\"path\": \".\"}");
    let s = read_stream(&post(&gw, &body, &[]).await.text().await.unwrap());
    assert!(s.reasoning.contains("[tool] ls"), "{:?}", s.reasoning);
    assert!(s.content.contains("marker.txt"), "{:?}", s.content);
    assert_eq!(s.finish_reasons, ["stop"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mode_header_only_tightens() {
    let gw = Gateway::start(&[], &[]);
    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let mode_of = |resp: &reqwest::Response| conversation_of(resp);
    let plan = post(&gw, &chat_body("superpi-code", false, "hi"), &[("x-superpi-mode", "plan")]).await;
    let plan_id = mode_of(&plan);
    assert_eq!(client.history(plan_id).await.unwrap().conversation.mode, "plan");
    // A remote caller asking for `auto` stays under the remote ceiling.
    let auto = post(&gw, &chat_body("superpi-code", false, "hi"), &[("x-superpi-mode", "auto")]).await;
    assert_eq!(auto.status(), 200);
    let info = client.history(mode_of(&auto)).await.unwrap().conversation;
    assert_ne!(info.mode, "auto", "the remote ceiling applies: {info:?}");
    // The header tightens a session's existing conversation too.
    let first = post(&gw, &chat_body("superpi-code", false, "hi"), &[("x-session-id", "m")]).await;
    let id = conversation_of(&first);
    let again =
        post(&gw, &chat_body("superpi-code", false, "hi"), &[("x-session-id", "m"), ("x-superpi-mode", "plan")]).await;
    assert_eq!(conversation_of(&again), id);
    assert_eq!(client.history(id).await.unwrap().conversation.mode, "plan");
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_blocks_a_write() {
    let gw = Gateway::start(&[], &[]);
    let body = chat_body("superpi-code", true, "@tool write {\"path\": \"new.txt\", \"content\": \"x\"}");
    let s = read_stream(&post(&gw, &body, &[("x-superpi-mode", "plan")]).await.text().await.unwrap());
    assert_eq!(s.finish_reasons.len(), 1);
    assert!(!gw.env.workspace.join("new.txt").exists(), "plan mode must not write: {:?}", s.reasoning);
    assert!(s.reasoning.contains("[tool] write blocked"), "{:?}", s.reasoning);
}

#[tokio::test(flavor = "multi_thread")]
async fn each_error_in_the_openai_shape() {
    let gw = Gateway::start(&[], &[]);
    let raw = http().post(gw.url("/v1/chat/completions")).body("this is not json").send().await.unwrap();
    let (status, body) = json_of(raw).await;
    assert_error(status, &body, 400, "invalid_params");
    let (status, body) = json_of(post(&gw, &json!({"model": "superpi-code"}), &[]).await).await;
    assert_error(status, &body, 400, "invalid_params");
    let (status, body) =
        json_of(post(&gw, &chat_body("superpi-code", false, "x"), &[("x-superpi-mode", "yolo")]).await).await;
    assert_error(status, &body, 400, "invalid_params");
    let (status, body) = json_of(post(&gw, &chat_body("no-such-model-anywhere", false, "x"), &[]).await).await;
    assert_error(status, &body, 404, "model_not_found");
    let (status, body) = json_of(post(&gw, &chat_body("gpt-4o", false, "x"), &[]).await).await;
    assert_error(status, &body, 503, "provider_not_configured");
    // Without a token, a browser on another site is refused; a local page is not.
    let (status, body) =
        json_of(post(&gw, &chat_body("superpi-code", false, "x"), &[("origin", "https://evil.example")]).await).await;
    assert_error(status, &body, 403, "forbidden_origin");
    let local = post(&gw, &chat_body("superpi-code", false, "x"), &[("origin", "http://localhost:3000")]).await;
    assert_eq!(local.status(), 200);
    assert_eq!(local.headers()["access-control-allow-origin"], "http://localhost:3000");
    // A local page's preflight is answered; a foreign one's is not.
    let url = gw.url("/v1/chat/completions");
    let local = preflight(&http(), &url, "http://localhost:3000", Some("content-type, x-session-id")).await;
    assert_preflight_admits(&local, "http://localhost:3000", "x-session-id");
    let foreign = preflight(&http(), &url, "https://evil.example", None).await;
    assert!(foreign.headers().get("access-control-allow-origin").is_none());

    let huge = json!({"model": "superpi-code", "messages": [{"role": "user", "content": "x".repeat(9 << 20)}]});
    let (status, body) = json_of(post(&gw, &huge, &[]).await).await;
    assert_error(status, &body, 413, "request_too_large");

    // A failed turn, as the OpenAI API reports failures: streamed, an error object then the
    // end (no finish_reason); whole, an HTTP error the clients do not retry.
    let s = read_stream(&post(&gw, &chat_body("superpi-code", true, "@fail boom"), &[]).await.text().await.unwrap());
    assert!(s.finish_reasons.is_empty(), "{:?}", s.finish_reasons);
    let error = s.error.expect("an error object in the stream");
    assert_eq!((&error["code"], &error["type"]), (&json!("turn_failed"), &json!("server_error")), "{error}");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("boom")), "{error}");
    assert!(s.done);
    let resp = post(&gw, &chat_body("superpi-code", false, "@fail boom"), &[]).await;
    assert_eq!(resp.headers()["x-should-retry"], "false");
    conversation_of(&resp);
    let (status, body) = json_of(resp).await;
    assert_error(status, &body, 500, "turn_failed");
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("boom")), "{body}");
}

/// `/ready` answers 200 when the kernel and its store answer, and 503 (with no token, and
/// without the error's text) when the kernel cannot start: here its PostgreSQL store is a port
/// nothing listens on. `/health` is 200 either way: it says the gateway lives, not that it serves.
#[tokio::test(flavor = "multi_thread")]
async fn ready_says_whether_the_kernel_and_its_store_answer() {
    let gw = Gateway::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "alpha")]);
    let (status, body) = json_of(http().get(gw.url("/ready")).send().await.unwrap()).await;
    assert_eq!((status, body), (200, json!({"status": "ready"})));

    let dead = "postgresql://superpi:hunter2@127.0.0.1:1/superpi";
    let gw = Gateway::start(&[], &[("SUPERPI_DATABASE_URL", dead)]);
    let resp = tokio::time::timeout(LIMIT, http().get(gw.url("/ready")).send()).await.unwrap().unwrap();
    let (status, body) = json_of(resp).await;
    assert_eq!((status, &body["status"]), (503, &json!("unavailable")), "{body}");
    let reason = body["reason"].as_str().unwrap();
    assert!(reason.starts_with("the kernel"), "{body}");
    assert!(!body.to_string().contains("hunter2") && !body.to_string().contains("127.0.0.1"), "{body}");
    let (status, _) = json_of(http().get(gw.url("/health")).send().await.unwrap()).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn bearer_tokens_guard_everything_but_status() {
    let gw = Gateway::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "alpha, beta")]);
    let (status, _) = json_of(http().get(gw.url("/health")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    let (status, body) = json_of(http().get(gw.url("/v1/models")).send().await.unwrap()).await;
    assert_error(status, &body, 401, "invalid_api_key");
    assert_eq!(body["error"]["type"], "authentication_error", "{body}");
    let wrong = http().get(gw.url("/v1/models")).bearer_auth("gamma").send().await.unwrap();
    let (status, body) = json_of(wrong).await;
    assert_error(status, &body, 401, "invalid_api_key");
    let (status, body) = json_of(post(&gw, &chat_body("superpi-code", false, "x"), &[]).await).await;
    assert_error(status, &body, 401, "invalid_api_key");
    let ok = http().get(gw.url("/v1/models")).bearer_auth("beta").send().await.unwrap();
    assert_eq!(ok.status(), 200);
    // With tokens the token is the guard, whatever the Origin.
    let cross = http().get(gw.url("/v1/models")).bearer_auth("beta").header("origin", "https://app.example");
    assert_eq!(cross.send().await.unwrap().status(), 200);

    // Session ids are per principal: one id, two tokens, two conversations.
    let body = chat_body("superpi-code", false, "hi");
    let a1 = post(&gw, &body, &[("authorization", "Bearer alpha"), ("x-session-id", "shared")]).await;
    let b1 = post(&gw, &body, &[("authorization", "Bearer beta"), ("x-session-id", "shared")]).await;
    let a2 = post(&gw, &body, &[("authorization", "Bearer alpha"), ("x-session-id", "shared")]).await;
    assert_eq!((a1.status().as_u16(), b1.status().as_u16(), a2.status().as_u16()), (200, 200, 200));
    assert_eq!(conversation_of(&a1), conversation_of(&a2));
    assert_ne!(conversation_of(&a1), conversation_of(&b1));
    // Another principal's conversation id reads as unknown: a new conversation.
    let a_id = conversation_of(&a1).to_string();
    let b2 = post(&gw, &body, &[("authorization", "Bearer beta"), ("x-conversation-id", &a_id)]).await;
    assert_eq!(b2.status(), 200);
    assert_ne!(conversation_of(&b2), conversation_of(&a1));
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_continue_one_conversation() {
    let gw = Gateway::start(&[], &[]);
    let first = json!({"model": "superpi-code", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "my name is Ada"},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "say hi"}
    ]});
    let r1 = post(&gw, &first, &[("x-session-id", "s-1")]).await;
    let c1 = conversation_of(&r1);
    let (_, b1) = json_of(r1).await;
    let echoed = b1["choices"][0]["message"]["content"].as_str().unwrap().to_string();
    assert!(echoed.contains("user: my name is Ada") && echoed.ends_with("say hi"), "seeded: {echoed:?}");

    let mut second = first.clone();
    second["messages"].as_array_mut().unwrap().push(json!({"role": "assistant", "content": echoed}));
    second["messages"].as_array_mut().unwrap().push(json!({"role": "user", "content": "and again"}));
    let r2 = post(&gw, &second, &[("x-session-id", "s-1")]).await;
    assert_eq!(conversation_of(&r2), c1);
    let (_, b2) = json_of(r2).await;
    assert_eq!(b2["choices"][0]["message"]["content"], "and again", "later requests send the last user message");

    // session_id in the body is the same key; x-conversation-id attaches by id.
    let third = json!({"model": "superpi-code", "session_id": "s-1", "messages": [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "third"}]});
    assert_eq!(conversation_of(&post(&gw, &third, &[]).await), c1);
    // Another system prompt under the same session id (OpenCode's title generator beside its
    // agent) is another conversation, seeded on its own.
    let titles = json!({"model": "superpi-code", "messages": [
        {"role": "system", "content": "you write titles"}, {"role": "user", "content": "my name is Ada"}]});
    let t1 = post(&gw, &titles, &[("x-session-id", "s-1")]).await;
    let t_id = conversation_of(&t1);
    assert_ne!(t_id, c1);
    assert_eq!(conversation_of(&post(&gw, &titles, &[("x-session-id", "s-1")]).await), t_id);
    let c1s = c1.to_string();
    assert_eq!(
        conversation_of(&post(&gw, &chat_body("superpi-code", false, "4"), &[("x-conversation-id", &c1s)]).await),
        c1
    );

    // Without a session each request is a new conversation.
    let n1 = conversation_of(&post(&gw, &chat_body("superpi-code", false, "a"), &[]).await);
    let n2 = conversation_of(&post(&gw, &chat_body("superpi-code", false, "b"), &[]).await);
    assert!(n1 != n2 && n1 != c1 && n2 != c1);

    // The kernel holds the session's history: four user messages in one conversation.
    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let history = client.history(c1).await.unwrap();
    let users = history.entries.iter().filter(|e| e.kind == superpi_proto::EntryKind::User).count();
    assert_eq!(users, 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_leaves_cancels_its_turn() {
    let gw = Gateway::start(&[], &[]);
    let body =
        chat_body("superpi-code", true, "@slow 100\none two three four five six seven eight nine ten eleven twelve");
    let mut resp = post(&gw, &body, &[("x-session-id", "leaving")]).await;
    let conversation_id = conversation_of(&resp);
    // Read until some answer text arrived, then hang up.
    let mut seen = String::new();
    while !seen.contains("\"content\":\"one") {
        let chunk = tokio::time::timeout(LIMIT, resp.chunk()).await.unwrap().unwrap().expect("more of the stream");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(resp);

    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let end = superpi_tests::first_turn_end(&client, conversation_id).await;
    assert_eq!(end, EventBody::TurnCancelled {});
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_leaves_a_whole_completion_cancels_its_turn() {
    let gw = Gateway::start(&[], &[]);
    let client = KernelClient::connect(&gw.env.connect_options("test")).await.unwrap();
    let body = chat_body("superpi-code", false, "@slow 1000\none two three four five six seven eight nine ten");
    let request =
        http().post(gw.url("/v1/chat/completions")).header("x-session-id", "impatient").body(body.to_string()).send();
    let waiting = tokio::spawn(request);
    // Wait until the turn runs, then hang up.
    let conversation_id = superpi_tests::wait::until("the turn runs", superpi_tests::wait::PATIENCE, async || {
        client.list().await.unwrap().iter().find(|c| c.status == "running").map(|c| c.conversation_id)
    })
    .await;
    waiting.abort();
    let _ = waiting.await;
    let end = superpi_tests::first_turn_end(&client, conversation_id).await;
    assert_eq!(end, EventBody::TurnCancelled {});
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lost_kernel_ends_the_answer_with_an_error_object_and_the_next_request_starts_one() {
    let gw = Gateway::start(&[], &[]);
    let body = chat_body("superpi-code", true, "@slow 200\none two three four five six seven eight");
    let mut resp = post(&gw, &body, &[]).await;
    let mut text = String::new();
    while !text.contains("\"content\":\"one") {
        let chunk = tokio::time::timeout(LIMIT, resp.chunk()).await.unwrap().unwrap().expect("more of the stream");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    gw.env.kill_kernel();
    while let Some(chunk) = tokio::time::timeout(LIMIT, resp.chunk()).await.unwrap().unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let s = read_stream(&text);
    assert!(s.finish_reasons.is_empty(), "{:?}", s.finish_reasons);
    assert_eq!(s.error.expect("an error object")["code"], "kernel_unavailable");
    assert!(s.done);
    // The next request reconnects (and starts a kernel again).
    let (status, body) = json_of(post(&gw, &chat_body("superpi-code", false, "back again"), &[]).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "back again");
}

/// A workspace the sandbox would refuse is refused at start, naming `--workspace`, before the
/// gateway listens (nothing is announced, no kernel is started).
#[test]
fn a_workspace_holding_superpis_own_directories_is_refused_at_start() {
    let env = superpi_tests::TestEnv::new();
    let own = env.locations.config_dir.display().to_string();
    let (ok, stderr) = env.run_to_exit(&["gateway", "--port", "0", "--workspace", &own], &[]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("holds superpi's own directory"), "{stderr}");
    assert!(stderr.contains("superpi gateway --workspace DIR"), "{stderr}");
    assert_eq!(env.kernel_pid(), None, "a kernel was started");
    // The directory it starts in counts when no --workspace is given: `/` here.
    let mut cmd = env.command(&["gateway", "--port", "0"]);
    let out = cmd.current_dir("/").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("whole filesystem") && stderr.contains("the host started superpi there"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_gateway_cleanly() {
    let mut gw = Gateway::start(&[], &[]);
    let resp = http().get(gw.url("/health")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    // SAFETY: kill(2) on the gateway child this test started.
    unsafe {
        libc::kill(gw.child.id() as i32, libc::SIGTERM);
    }
    let status = tokio::task::spawn_blocking(move || {
        let status = gw.child.wait().unwrap();
        drop(gw);
        status
    })
    .await
    .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_requests_on_one_session_queue_and_keep_their_own_answers() {
    let gw = Gateway::start(&[], &[]);
    // Create the session first so both requests land in one conversation.
    let first = post(&gw, &chat_body("superpi-code", false, "start"), &[("x-session-id", "busy")]).await;
    let id = conversation_of(&first);
    let (body_a, body_b) = (
        chat_body("superpi-code", true, "@slow 20\nalpha beta gamma"),
        chat_body("superpi-code", true, "delta epsilon"),
    );
    let a = post(&gw, &body_a, &[("x-session-id", "busy")]);
    let b = post(&gw, &body_b, &[("x-session-id", "busy")]);
    let (a, b) = tokio::join!(a, b);
    assert_eq!((conversation_of(&a), conversation_of(&b)), (id, id));
    let (a, b) = tokio::join!(a.text(), b.text());
    let (a, b) = (read_stream(&a.unwrap()), read_stream(&b.unwrap()));
    assert_eq!((a.content.as_str(), a.finish_reasons.len(), a.done), ("alpha beta gamma", 1, true));
    assert_eq!((b.content.as_str(), b.finish_reasons.len(), b.done), ("delta epsilon", 1, true));
    assert_ne!(a.chunks[0]["id"], b.chunks[0]["id"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_outlives_the_gateway_process() {
    let mut gw = Gateway::start(&[], &[]);
    let first = post(&gw, &chat_body("superpi-code", false, "before"), &[("x-session-id", "durable")]).await;
    let id = conversation_of(&first);
    gw.restart(&[], &[]);
    let again = post(&gw, &chat_body("superpi-code", false, "after"), &[("x-session-id", "durable")]).await;
    assert_eq!(conversation_of(&again), id);
    // And the kernel's restart too: the mapping is in its store.
    gw.env.kill_kernel();
    let third = post(&gw, &chat_body("superpi-code", false, "later"), &[("x-session-id", "durable")]).await;
    assert_eq!(third.status(), 200);
    assert_eq!(conversation_of(&third), id);
}

/// Every kind of malformed request, each on a connection of its own and each followed by a
/// real chat completion: each gets a 4xx (an OpenAI error object when it reached the API)
/// and the gateway keeps serving.
#[test]
fn every_kind_of_malformed_request_is_refused_and_serving_goes_on() {
    use superpi_tests::bad_input::{http_exchange, http_requests};
    let gw = Gateway::start(&[], &[]);
    let addr = gw.base.trim_start_matches("http://").trim_end_matches('/').to_string();
    let bad_fields = json!({"model": 7, "messages": "hi", "stream": "yes"});
    let good = chat_body("mock", false, "still here?").to_string();
    let good = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{good}",
        good.len()
    );
    for bad in http_requests("/v1/chat/completions", 8 << 20, &bad_fields) {
        let (status, body) = http_exchange(&addr, &bad.raw);
        assert!((400..500).contains(&status), "{}: {status} {body}", bad.name);
        if let Ok(error) = serde_json::from_str::<Value>(&body) {
            assert!(error["error"]["message"].is_string(), "{}: {body}", bad.name);
        }
        let (status, body) = http_exchange(&addr, good.as_bytes());
        assert_eq!(status, 200, "after {}: {body}", bad.name);
        assert!(body.contains("chat.completion"), "after {}: {body}", bad.name);
    }
}
