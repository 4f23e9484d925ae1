//! End-to-end: MCP over Streamable HTTP at `/mcp` of the real gateway process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Gateway, http, sse_events};
use serde_json::{Value, json};

const PROTOCOL: &str = "2025-06-18";

struct Mcp<'a> {
    gw: &'a Gateway,
    token: Option<&'a str>,
}

impl Mcp<'_> {
    async fn post(&self, session: Option<&str>, body: &Value, extra: &[(&str, &str)]) -> reqwest::Response {
        let mut req = http()
            .post(self.gw.url("/mcp?harness=superpi-code"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(id) = session {
            req = req.header("mcp-session-id", id);
            if !extra.iter().any(|(k, _)| *k == "mcp-protocol-version") {
                req = req.header("mcp-protocol-version", PROTOCOL);
            }
        }
        if let Some(token) = self.token {
            req = req.bearer_auth(token);
        }
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        req.send().await.unwrap()
    }

    /// `initialize` then `notifications/initialized`; the session id.
    async fn open(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}});
        let resp = self.post(None, &init, &[]).await;
        assert_eq!(resp.status(), 200);
        let session = resp.headers()["mcp-session-id"].to_str().unwrap().to_string();
        let answer = rpc_answer(resp).await;
        assert_eq!(answer["id"], 1);
        assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&session), &note, &[]).await.status(), 202);
        session
    }
}

/// Every JSON-RPC message of a POST's answer, sent as JSON or as SSE events, in order.
async fn rpc_messages(resp: reqwest::Response) -> Vec<Value> {
    let is_sse =
        resp.headers().get("content-type").is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let text = resp.text().await.unwrap();
    if !is_sse {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    // SSE blocks may carry `id:`/`retry:` lines and priming events with no data.
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let data: Vec<&str> = block.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
        if data.is_empty() || data.iter().all(|d| d.is_empty()) {
            continue;
        }
        out.push(serde_json::from_str(&data.join("\n")).unwrap());
    }
    let _ = sse_events;
    out
}

/// The JSON-RPC answer of a POST.
async fn rpc_answer(resp: reqwest::Response) -> Value {
    let messages = rpc_messages(resp).await;
    let answer = messages.iter().find(|m| m.get("id").is_some());
    answer.cloned().unwrap_or_else(|| panic!("no answer in {messages:?}"))
}

fn tools_list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_session_over_http() {
    let gw = Gateway::start(&[], &[]);
    let mcp = Mcp { gw: &gw, token: None };
    let session = mcp.open().await;

    let answer = rpc_answer(mcp.post(Some(&session), &tools_list(2), &[]).await).await;
    let names: Vec<&str> =
        answer["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for tool in ["read", "ls", "harness_task"] {
        assert!(names.contains(&tool), "{names:?}");
    }

    std::fs::write(gw.env.workspace.join("hello.txt"), "hi from the workspace").unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "hello.txt"}}});
    let answer = rpc_answer(mcp.post(Some(&session), &call, &[]).await).await;
    assert!(answer["result"].to_string().contains("hi from the workspace"), "{answer}");

    // Without a session id or with a bad protocol version: refused.
    assert_eq!(mcp.post(None, &tools_list(4), &[]).await.status(), 400);
    let bad = mcp.post(Some(&session), &tools_list(5), &[("mcp-protocol-version", "1999-01-01")]).await;
    assert_eq!(bad.status(), 400);

    // A foreign browser origin is refused when no token is configured; loopback passes.
    let foreign = mcp.post(Some(&session), &tools_list(6), &[("origin", "https://evil.example")]).await;
    assert_eq!(foreign.status(), 403);
    let local = mcp.post(Some(&session), &tools_list(7), &[("origin", "http://localhost:5173")]).await;
    assert_eq!(local.status(), 200);

    // DELETE ends the session; it is unknown afterwards.
    let del = http()
        .delete(gw.url("/mcp"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap();
    assert!(del.status().is_success(), "{}", del.status());
    assert_eq!(mcp.post(Some(&session), &tools_list(8), &[]).await.status(), 404);
}

/// A 2026-07-28 request: its version and the client's capabilities in its `_meta`.
fn modern(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The 2026-07-28 revision needs no session: `server/discover` and any request carrying its
/// version in `_meta` are answered without `initialize` and without an `Mcp-Session-Id`, lists
/// carry caching hints, and the earlier revisions keep their sessions beside it.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_request_is_answered_without_a_session() {
    let gw = Gateway::start(&[], &[]);
    let mcp = Mcp { gw: &gw, token: None };
    // The standard headers of 2026-07-28 repeat the version, the method and a call's name.
    let v = |method| [("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];

    let resp = mcp.post(None, &modern(1, "server/discover", json!({})), &v("server/discover")).await;
    assert_eq!(resp.status(), 200, "{:?}", resp.text().await);
    assert!(resp.headers().get("mcp-session-id").is_none());
    let found = rpc_answer(resp).await;
    let versions = found["result"]["supportedVersions"].as_array().unwrap_or_else(|| panic!("{found}"));
    for version in ["2026-07-28", "2025-11-25", "2024-11-05"] {
        assert!(versions.contains(&json!(version)), "{found}");
    }

    let resp = mcp.post(None, &modern(2, "tools/list", json!({})), &v("tools/list")).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("mcp-session-id").is_none());
    let listed = rpc_answer(resp).await;
    assert!(listed["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "harness_task"), "{listed}");
    assert_eq!((&listed["result"]["ttlMs"], &listed["result"]["cacheScope"]), (&json!(60000), &json!("private")));
    let list = modern(3, "resources/templates/list", json!({}));
    let templates = rpc_answer(mcp.post(None, &list, &v("resources/templates/list")).await).await;
    assert_eq!(templates["result"]["cacheScope"], "public", "{templates}");

    std::fs::write(gw.env.workspace.join("hello.txt"), "hi, stateless").unwrap();
    let read = modern(4, "tools/call", json!({"name": "read", "arguments": {"path": "hello.txt"}}));
    let headers = [v("tools/call").as_slice(), &[("mcp-name", "read")]].concat();
    let answer = rpc_answer(mcp.post(None, &read, &headers).await).await;
    assert!(answer["result"].to_string().contains("hi, stateless"), "{answer}");

    // Without `_meta`, a request is still of the session revisions: it needs a session, whose
    // lists carry no 2026-07-28 fields.
    assert_eq!(mcp.post(None, &tools_list(5), &[]).await.status(), 400);
    let session = mcp.open().await;
    let listed = rpc_answer(mcp.post(Some(&session), &tools_list(6), &[]).await).await;
    assert!(listed["result"].get("ttlMs").is_none(), "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_sessions_belong_to_their_principal() {
    let gw = Gateway::start(&[], &[("SUPERPI_GATEWAY_TOKEN", "one,two")]);
    let anonymous = Mcp { gw: &gw, token: None };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}});
    let refused = anonymous.post(None, &init, &[]).await;
    assert_eq!(refused.status(), 401);
    let body: Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key");

    let one = Mcp { gw: &gw, token: Some("one") };
    let two = Mcp { gw: &gw, token: Some("two") };
    let session = one.open().await;
    assert_eq!(one.post(Some(&session), &tools_list(2), &[]).await.status(), 200);
    assert_eq!(two.post(Some(&session), &tools_list(3), &[]).await.status(), 404);
    // With a token the token is the guard: any Origin passes.
    let foreign = one.post(Some(&session), &tools_list(4), &[("origin", "https://app.example")]).await;
    assert_eq!(foreign.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn log_lines_ride_their_request_stream_and_get_opens_the_standalone_stream() {
    let gw = Gateway::start(&[], &[]);
    let mcp = Mcp { gw: &gw, token: None };
    let session = mcp.open().await;
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "debug"}});
    assert!(rpc_answer(mcp.post(Some(&session), &level, &[]).await).await.get("result").is_some());

    // The standalone stream opens (a client may hold it for messages about no request).
    let get = http()
        .get(gw.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    assert!(get.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    drop(get);

    // A tool call's log lines come on its own response stream, before its result.
    std::fs::write(gw.env.workspace.join("hello.txt"), "hi").unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "hello.txt"}}});
    let messages = rpc_messages(mcp.post(Some(&session), &call, &[]).await).await;
    let logs: Vec<&Value> = messages.iter().filter(|m| m["method"] == "notifications/message").collect();
    assert!(!logs.is_empty(), "no log line on the request's stream: {messages:?}");
    assert_eq!(logs[0]["params"]["level"], "debug");
    assert_eq!(logs[0]["params"]["data"]["data"]["tool"], "read", "{messages:?}");
    assert_eq!(messages.last().unwrap()["id"], 3, "the result comes last: {messages:?}");

    // Without a session id, GET is refused.
    let get = http().get(gw.url("/mcp")).header("accept", "text/event-stream").send().await.unwrap();
    assert_eq!(get.status(), 400);
}

/// A conversation whose stored events pass 64 MiB reads whole through the gateway's `/mcp`
/// with rmcp's Streamable HTTP client: its transcript resource comes in parts that each name
/// the next (every reply within what an MCP client reads), every entry once and in order, and
/// the gateway never holds the whole history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_of_more_than_64_mib_reads_through_the_gateway() {
    use rmcp::ServiceExt;
    use rmcp::model::{ReadResourceRequestParams, ResourceContents};
    use rmcp::transport::StreamableHttpClientTransport;

    let env = superpi_tests::TestEnv::new();
    let conv = superpi_tests::pages::conversation_over_64_mib(&env, "test").await;
    let stored = superpi_tests::pages::stored_event_bytes(&env, conv) as u64;
    let gw = Gateway::start_in(env, &[], &[]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = ().serve(StreamableHttpClientTransport::from_uri(gw.url("/mcp"))).await.expect("initialize");

    let mut uri = Some(format!("superpi://conversation/{conv}/transcript"));
    let (mut said, mut parts) = (Vec::new(), 0);
    while let Some(at) = uri {
        let read = client.peer().read_resource(ReadResourceRequestParams::new(at)).await.expect("resources/read");
        let ResourceContents::TextResourceContents { text, meta, .. } = &read.contents[0] else {
            panic!("a transcript is text")
        };
        assert!(text.len() < superpi_proto::frame::DEFAULT_MAX_FRAME / 2, "a part of {} bytes", text.len());
        for line in text.lines() {
            let line: Value = serde_json::from_str(line).unwrap();
            let blocks = line["content"].as_array().unwrap().iter();
            let words: String = blocks.filter(|b| b["type"] == "text").map(|b| b["text"].as_str().unwrap()).collect();
            said.push((line["kind"].as_str().unwrap().to_string(), words));
        }
        uri = meta.as_ref().and_then(|m| m.0.get("superpi/next")).map(|next| next.as_str().unwrap().to_string());
        parts += 1;
    }
    superpi_tests::pages::assert_replayed_over_64_mib(&said);
    let peak = superpi_tests::pages::peak_rss(gw.child.0.id()).expect("the gateway's peak RSS");
    eprintln!("{} MiB of events read in {parts} parts; gateway peak RSS {} MiB", stored >> 20, peak >> 20);
    assert!(parts > 10, "{parts} parts");
    assert!(peak < stored, "the gateway held {peak} bytes for {stored} bytes of events");
    client.cancel().await.expect("close");
}

/// Two gateways, each with its kernel on its own machine (data directory), on one PostgreSQL
/// database, as behind a load balancer: a 2026-07-28 client's requests go to either, and either
/// answers. A `harness_task` run through one; its transcript read through the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_of_two_kernels_on_one_database_answers_a_2026_client() {
    let Some(server) = superpi_tests::postgres_server::shared() else { return };
    let url = server.new_database();
    let vars = [("SUPERPI_DATABASE_URL", url.as_str()), ("SUPERPI_LEASE_MS", "1500")];
    let (gw_a, gw_b) = (Gateway::start(&[], &vars), Gateway::start(&[], &vars));
    let (a, b) = (Mcp { gw: &gw_a, token: None }, Mcp { gw: &gw_b, token: None });
    let v = |method| [("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];

    let task = modern(1, "tools/call", json!({"name": "harness_task", "arguments": {"prompt": "done through A"}}));
    let headers = [v("tools/call").as_slice(), &[("mcp-name", "harness_task")]].concat();
    let answer = rpc_answer(a.post(None, &task, &headers).await).await;
    assert_eq!(answer["result"]["structuredContent"]["result"], "done through A", "{answer}");
    let conversation = answer["result"]["structuredContent"]["conversation_id"].as_i64().unwrap();

    let uri = format!("superpi://conversation/{conversation}/transcript");
    let read = modern(2, "resources/read", json!({ "uri": uri }));
    let headers = [v("resources/read").as_slice(), &[("mcp-name", uri.as_str())]].concat();
    let transcript = rpc_answer(b.post(None, &read, &headers).await).await;
    let text = transcript["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{transcript}"));
    assert!(text.contains("done through A"), "{text}");

    // harness_task as a task (the client declares the tasks extension): started through B,
    // polled through A until it ends.
    let mut task =
        modern(3, "tools/call", json!({"name": "harness_task", "arguments": {"prompt": "a task through B"}}));
    task["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let headers = [v("tools/call").as_slice(), &[("mcp-name", "harness_task")]].concat();
    let created = rpc_answer(b.post(None, &task, &headers).await).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_string();
    let headers = [v("tasks/get").as_slice(), &[("mcp-name", id.as_str())]].concat();
    let mut poll = modern(4, "tasks/get", json!({ "taskId": id }));
    poll["params"]["_meta"] = task["params"]["_meta"].clone();
    let done =
        superpi_tests::wait::until("the task polled through A ends", superpi_tests::wait::PATIENCE, async || {
            let state = rpc_answer(a.post(None, &poll, &headers).await).await;
            (state["result"]["status"] == "completed").then_some(state)
        })
        .await;
    assert_eq!(done["result"]["result"]["structuredContent"]["result"], "a task through B", "{done}");
}

/// The next JSON-RPC message of a streaming SSE answer, reading more of it as needed (`buf`
/// keeps what was read past the message).
async fn next_message(resp: &mut reqwest::Response, buf: &mut String) -> Value {
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let data: Vec<&str> = block.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
            if !data.is_empty() && data.iter().any(|d| !d.is_empty()) {
                return serde_json::from_str(&data.join("\n")).unwrap();
            }
        }
        let chunk = tokio::time::timeout(superpi_tests::wait::PATIENCE, resp.chunk()).await.expect("more in time");
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap().expect("the stream is open")));
    }
}

/// `subscriptions/listen` on the stateless `/mcp`: the request's own SSE stream carries the
/// acknowledgment (the accepted filter) and then a transcript's updates, here when the task
/// running in that conversation is cancelled through another request.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_listen_request_streams_a_transcripts_updates() {
    let gw = Gateway::start(&[], &[]);
    let mcp = Mcp { gw: &gw, token: None };
    let v = |method| [("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});

    // The model waits a minute before its first word: the turn runs until it is cancelled.
    let prompt = "@slow 60000\nheld";
    let mut task = modern(1, "tools/call", json!({"name": "harness_task", "arguments": {"prompt": prompt}}));
    task["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = tasks.clone();
    let headers = [v("tools/call").as_slice(), &[("mcp-name", "harness_task")]].concat();
    let created = rpc_answer(mcp.post(None, &task, &headers).await).await;
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_string();
    let conversation = id.split('.').nth(1).unwrap();
    let uri = format!("superpi://conversation/{conversation}/transcript");

    let filter = json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": [uri]}});
    let mut stream = mcp.post(None, &modern(2, "subscriptions/listen", filter), &v("subscriptions/listen")).await;
    assert_eq!(stream.status(), 200);
    assert!(stream.headers().get("mcp-session-id").is_none());
    let mut buf = String::new();
    let ack = next_message(&mut stream, &mut buf).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([uri]), "{ack}");
    assert!(ack["params"]["notifications"].get("toolsListChanged").is_none(), "{ack}");

    let mut cancel = modern(3, "tasks/cancel", json!({ "taskId": id }));
    cancel["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = tasks;
    let headers = [v("tasks/cancel").as_slice(), &[("mcp-name", id.as_str())]].concat();
    let cancelled = rpc_answer(mcp.post(None, &cancel, &headers).await).await;
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    let updated = next_message(&mut stream, &mut buf).await;
    assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
    assert_eq!(updated["params"]["uri"], uri, "{updated}");
    assert_eq!(updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 2, "{updated}");
}
