//! End to end through the Unix socket: the real `superpi rpc --unix`, the real kernel it
//! autostarts, the mock model, and a raw line client.
//!
//! Build the binary first: `cargo build -p superpi-cli && cargo test -p superpi-rpc`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use superpi_tests::{TestEnv, wait};

fn text_of_deltas(events: &[Value]) -> String {
    events.iter().filter(|e| e["type"] == "text_delta").map(|e| e["delta"].as_str().unwrap()).collect()
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

#[tokio::test]
async fn open_submit_and_watch_with_acks() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let conv = c.ok("session.open", json!({"title": "first"})).await;
    assert_eq!(conv["created"], json!(true));
    assert_eq!(conv["harness"], json!("superpi-code"));
    assert_eq!(conv["mode"], json!("accept-edits"), "an RPC caller gets the remote mode");
    let id = conv["conversation_id"].as_i64().unwrap();
    let w = watch(&mut c, id, false).await;
    let submitted = c.ok("session.submit", json!({"conversation_id": id, "prompt": "@deltas 300"})).await;
    assert!(submitted["turn_id"].as_i64().unwrap() > 0);

    let events = c.events_until(w, is_type("turn_completed")).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(&types[..2], &["message_completed", "turn_started"]);
    assert_eq!(types.iter().filter(|t| **t == "text_delta").count(), 300);
    // Every event of the turn, in order, none lost on the way.
    let s = seqs(&events);
    assert!(s.windows(2).all(|w| w[1] == w[0] + 1), "seqs are contiguous: {s:?}");
    let answer = events.iter().find(|e| e["type"] == "message_completed" && e["role"] == "assistant").unwrap();
    assert_eq!(answer["content"][0]["text"].as_str().unwrap(), text_of_deltas(&events));

    // The stored history agrees; a new watch from seq 0 replays the stored events.
    let history = c.ok("session.history", json!({"conversation_id": id})).await;
    let kinds: Vec<&str> = history["entries"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["user", "assistant"]);
    let r = c.ok("session.watch", json!({"conversation_id": id, "from_seq": 0})).await;
    let replay = c.events_until(r["watch"].as_u64().unwrap(), is_type("turn_completed")).await;
    assert!(replay.iter().all(|e| e["type"] != "text_delta"), "deltas are not stored");
    assert_eq!(replay.last().unwrap()["seq"], events.last().unwrap()["seq"]);

    // External ids map to one conversation; a lookup-only open of an unknown one is not found.
    let by_key = c.ok("session.open", json!({"external_id": "ide-tab-1"})).await;
    let again = c.ok("session.open", json!({"external_id": "ide-tab-1"})).await;
    assert_eq!(again["conversation_id"], by_key["conversation_id"]);
    assert_eq!(again["created"], json!(false));
    let missing = c.err("session.open", json!({"external_id": "ide-tab-2", "create": false})).await;
    assert_eq!(missing["code"], json!(-32004));

    let list = c.ok("session.list", json!({})).await;
    assert!(list["conversations"].as_array().unwrap().iter().any(|c| c["conversation_id"] == json!(id)));
    let fork = c.ok("session.fork", json!({"conversation_id": id})).await;
    assert_eq!(fork["parent_id"], json!(id));
    // One prompt and its answer: the answer can be summarised, the mock writes the summary.
    let compact = c.ok("session.compact", json!({"conversation_id": id})).await;
    assert_eq!(compact["compacted"], json!(true), "{compact}");
    assert_eq!(compact["context_window"], json!(200_000));
    let history = c.ok("session.history", json!({"conversation_id": id})).await;
    let kinds: Vec<Value> = history["entries"].as_array().unwrap().iter().map(|e| e["kind"].clone()).collect();
    assert_eq!(kinds, vec![json!("user"), json!("assistant"), json!("compaction")]);
    // The first page names the last compaction: its entry's seq and what it kept (the answer).
    assert_eq!(history["last_compaction"]["type"], json!("compaction_completed"), "{history}");
    assert_eq!(history["last_compaction"]["seq"], history["entries"][2]["seq"]);
    assert_eq!(history["last_compaction"]["head_entry_id"], history["entries"][1]["seq"]);
    assert!(history.get("last_plan").is_none(), "{history}");
    let mode = c.ok("session.set_mode", json!({"conversation_id": id, "mode": "plan"})).await;
    assert_eq!(mode["mode"], json!("plan"));
    let meta = c.ok("workspace.metadata", json!({})).await;
    assert_eq!(meta["principal"], json!("local"));
    assert_eq!(meta["auth"], json!(false));
    assert_eq!(meta["workspace"], json!(env.workspace.canonicalize().unwrap().display().to_string()));
    let harnesses = c.ok("harness.list", json!({})).await;
    assert!(harnesses["harnesses"].as_array().unwrap().iter().any(|h| h["id"] == "superpi-planner"));
    assert_eq!(c.ok("auth.login", json!({"token": "anything"})).await, json!({"principal": "local", "auth": false}));
    c.ok("session.unwatch", json!({"watch": w})).await;
    assert_eq!(c.err("session.ack", json!({"watch": w, "batch": 1})).await["code"], json!(-32004));
}

/// The thinking effort: given at open, changed and cleared by `session.set_effort`, sent with
/// the turn's request (the mock thinks the level it was sent), refused for a model without one.
#[tokio::test]
async fn the_thinking_effort_is_set_per_conversation_and_reaches_the_model() {
    let env = TestEnv::new();
    let plain = "[[providers.models]]\nname = \"plain\"\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    std::fs::write(env.locations.config_dir.join("providers.toml"), plain).unwrap();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let conv = c.ok("session.open", json!({"model": "mock", "effort": "low"})).await;
    assert_eq!(conv["effort"], json!("low"));
    let id = conv["conversation_id"].as_i64().unwrap();
    let w = watch(&mut c, id, false).await;
    c.ok("session.submit", json!({"conversation_id": id, "prompt": "hello"})).await;
    let events = c.events_until(w, is_type("turn_completed")).await;
    let thought: String =
        events.iter().filter(|e| e["type"] == "thinking_delta").map(|e| e["delta"].as_str().unwrap()).collect();
    assert_eq!(thought, "[effort low]", "{events:?}");

    let set = c.ok("session.set_effort", json!({"conversation_id": id, "effort": "high"})).await;
    assert_eq!(set, json!({"effort": "high"}));
    let listed = c.ok("session.list", json!({})).await;
    let row = listed["conversations"].as_array().unwrap().iter().find(|c| c["conversation_id"] == id).unwrap().clone();
    assert_eq!(row["effort"], json!("high"));
    assert_eq!(
        c.ok("session.set_effort", json!({"conversation_id": id, "effort": null})).await,
        json!({"effort": null})
    );
    assert_eq!(
        c.err("session.set_effort", json!({"conversation_id": id, "effort": "max"})).await["code"],
        json!(-32602)
    );

    let plain = c.ok("session.open", json!({"model": "plain"})).await;
    let refused =
        c.err("session.set_effort", json!({"conversation_id": plain["conversation_id"], "effort": "low"})).await;
    assert_eq!(refused["code"], json!(-32602));
    assert!(refused["message"].as_str().unwrap().contains("no thinking effort"), "{refused}");
    let refused = c.err("session.open", json!({"model": "plain", "effort": "high"})).await;
    assert_eq!(refused["code"], json!(-32602), "{refused}");
}

#[tokio::test]
async fn an_unacked_watch_holds_k_batches_and_loses_nothing() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut slow = server.client().await;
    let mut fast = server.client().await;
    let id = open(&mut slow).await;
    let ws = watch(&mut slow, id, false).await;
    let wf = watch(&mut fast, id, false).await;
    fast.ok("session.submit", json!({"conversation_id": id, "prompt": "@deltas 500"})).await;
    let all = fast.events_until(wf, is_type("turn_completed")).await;

    // The slow client acked nothing: at most K batches reached it, whatever the kernel made.
    // (LineClient checks the bound on every batch it reads.)
    slow.ok("session.list", json!({})).await;
    let mut got = Vec::new();
    let mut batches = 0;
    while let Some(n) = slow.try_backlog() {
        assert_eq!(n["params"]["watch"], json!(ws));
        batches += 1;
        got.extend(n["params"]["events"].as_array().unwrap().iter().cloned());
    }
    assert!(batches <= K, "{batches} batches without an ack");
    // One ack of the last batch frees both slots: the rest comes batched, nothing dropped.
    if batches > 0 {
        slow.ack_quietly(ws, batches).await;
    }
    if got.last().is_none_or(|e| e["type"] != "turn_completed") {
        got.extend(slow.events_until(ws, is_type("turn_completed")).await);
    }
    assert_eq!(seqs(&got), seqs(&all));
    assert_eq!(got, all);
}

#[tokio::test]
async fn a_permission_question_is_answered_with_ui_respond() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = open(&mut c).await;
    let w = watch(&mut c, id, true).await;
    c.ok("session.submit", json!({"conversation_id": id, "prompt": "@tool bash {\"command\": \"touch made-by-rpc\"}"}))
        .await;
    let events = c.events_until(w, |e| e["type"] == "permission_request" || turn_end(e)).await;
    let question = events.last().unwrap();
    assert_eq!(question["type"], json!("permission_request"), "{events:?}");
    assert_eq!(question["tool_name"], json!("bash"));
    let options: Vec<&str> =
        question["options"].as_array().unwrap().iter().map(|o| o["option_id"].as_str().unwrap()).collect();
    let lasting = ["allow_always_project", "allow_always_user"];
    assert_eq!(options, [["allow_once", "allow_always", "reject_once", "reject_always"].as_slice(), &lasting].concat());
    let request_id = question["request_id"].clone();
    let r = c.ok("ui.respond", json!({"request_id": request_id, "option_id": "allow_once"})).await;
    assert_eq!(r, json!({"accepted": true}));
    let rest = c.events_until(w, turn_end).await;
    let resolved = rest.iter().find(|e| e["type"] == "ui_resolved").expect("ui_resolved");
    assert_eq!(resolved["outcome"]["option_id"], json!("allow_once"));
    let done = rest.iter().find(|e| e["type"] == "tool_completed").expect("tool_completed");
    assert_eq!(done["name"], json!("bash"));
    assert!(rest.iter().all(|e| e["type"] != "tool_blocked"), "{rest:?}");
    // The question is gone once answered.
    assert_eq!(
        c.err("ui.respond", json!({"request_id": request_id, "option_id": "allow_once"})).await["code"],
        json!(-32004)
    );

    // Nobody interactive watching: the same call fails closed, nobody is asked.
    let id2 = open(&mut c).await;
    let w2 = watch(&mut c, id2, false).await;
    c.ok(
        "session.submit",
        json!({"conversation_id": id2, "prompt": "@tool bash {\"command\": \"touch made-by-rpc\"}"}),
    )
    .await;
    let events = c.events_until(w2, turn_end).await;
    assert!(events.iter().all(|e| e["type"] != "permission_request"));
    assert!(events.iter().any(|e| e["type"] == "tool_blocked"), "{events:?}");
}

#[tokio::test]
async fn cancel_stops_a_running_turn() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = open(&mut c).await;
    let w = watch(&mut c, id, false).await;
    c.ok("session.submit", json!({"conversation_id": id, "prompt": "@slow 50\n@deltas 400"})).await;
    c.events_until(w, is_type("text_delta")).await;
    assert_eq!(c.ok("session.cancel", json!({"conversation_id": id})).await, json!({"cancelled": true}));
    let events = c.events_until(w, turn_end).await;
    assert_eq!(events.last().unwrap()["type"], json!("turn_cancelled"));
    assert_eq!(c.ok("session.cancel", json!({"conversation_id": id})).await, json!({"cancelled": false}));
}

/// `session.clear` sent while a turn runs waits for the turn (a `notice` says so) and then
/// clears: its `context_cleared` comes after the turn's end, and the next turn's request
/// holds nothing said before.
#[tokio::test]
async fn a_clear_sent_while_a_turn_runs_happens_after_it() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = open(&mut c).await;
    let w = watch(&mut c, id, true).await;
    // The turn waits on a question until the test answers it.
    c.ok("session.submit", json!({"conversation_id": id, "prompt": "@tool bash {\"command\": \"touch asked\"}"})).await;
    let events = c.events_until(w, |e| e["type"] == "permission_request" || turn_end(e)).await;
    let question = events.last().unwrap().clone();
    assert_eq!(question["type"], json!("permission_request"), "{events:?}");

    // Another connection clears meanwhile: its answer waits for the turn.
    let mut other = server.client().await;
    let clearing = tokio::spawn(async move { other.ok("session.clear", json!({"conversation_id": id})).await });
    let notice = c.events_until(w, is_type("notice")).await.pop().unwrap();
    assert!(notice["message"].as_str().unwrap().contains("clear requested"), "{notice}");
    assert!(!clearing.is_finished(), "the clear answered while the turn ran");
    c.ok("ui.respond", json!({"request_id": question["request_id"], "option_id": "allow_once"})).await;
    // Read to the clear at once: one batch may hold both.
    let mut rest = c.events_until(w, is_type("context_cleared")).await;
    let cleared = rest.pop().unwrap();
    let end = rest.iter().find(|e| turn_end(e)).expect("the turn's end before the clear").clone();
    assert_eq!(end["type"], json!("turn_completed"), "{end}");
    assert!(cleared["seq"].as_u64() > end["seq"].as_u64(), "{cleared} before {end}");
    let answer = tokio::time::timeout(Duration::from_secs(30), clearing).await.unwrap().unwrap();
    assert_eq!(answer, json!({"cleared": true, "seq": cleared["seq"]}));

    // The history keeps every entry, the clear's between the two turns.
    c.ok("session.submit", json!({"conversation_id": id, "prompt": "afresh"})).await;
    let events = c.events_until(w, turn_end).await;
    assert_eq!(events.last().unwrap()["type"], json!("turn_completed"), "{events:?}");
    let history = c.ok("session.history", json!({"conversation_id": id})).await;
    let kinds: Vec<&str> = history["entries"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool_result", "assistant", "compaction", "user", "assistant"]);
}

/// `session.undo` is refused while a turn runs (the turn's end records what it changed), then
/// removes the file the turn's command created; a second undo has nothing left.
#[tokio::test]
async fn undo_waits_for_the_turn_and_puts_its_files_back() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = open(&mut c).await;
    let w = watch(&mut c, id, true).await;
    c.ok(
        "session.submit",
        json!({"conversation_id": id, "prompt": "@tool bash {\"command\": \"echo made > made.txt\"}"}),
    )
    .await;
    let events = c.events_until(w, |e| e["type"] == "permission_request" || turn_end(e)).await;
    let question = events.last().unwrap().clone();
    assert_eq!(question["type"], json!("permission_request"), "{events:?}");
    let running = c.err("session.undo", json!({"conversation_id": id})).await;
    assert_eq!(
        (running["code"].clone(), running["data"]["reason"].clone()),
        (json!(-32602), json!("running")),
        "{running}"
    );

    c.ok("ui.respond", json!({"request_id": question["request_id"], "option_id": "allow_once"})).await;
    let events = c.events_until(w, turn_end).await;
    assert_eq!(events.last().unwrap()["type"], json!("turn_completed"), "{events:?}");
    assert!(env.workspace.join("made.txt").exists());
    let done = c.ok("session.undo", json!({"conversation_id": id})).await;
    assert_eq!(done, json!({"turn_id": events.last().unwrap()["turn_id"], "restored": [], "removed": ["made.txt"]}));
    assert!(!env.workspace.join("made.txt").exists());
    let notice = c.events_until(w, is_type("notice")).await.pop().unwrap();
    assert!(notice["message"].as_str().unwrap().ends_with("undone; removed made.txt"), "{notice}");
    let nothing = c.err("session.undo", json!({"conversation_id": id})).await;
    assert_eq!(nothing["data"]["reason"], json!("nothing"), "{nothing}");
}

#[tokio::test]
async fn every_json_rpc_error_case_and_the_server_keeps_serving() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let code = |v: &Value| v["error"]["code"].as_i64().unwrap();

    let r = c.raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"").await;
    assert_eq!((code(&r), r["id"].clone()), (-32700, Value::Null));
    let r = c.raw(r#"{"jsonrpc":"2.0","id":2,"method":7}"#).await;
    assert_eq!((code(&r), r["id"].clone()), (-32600, json!(2)));
    let r = c.raw(r#"{"id":3,"method":"session.list"}"#).await;
    assert_eq!((code(&r), r["id"].clone()), (-32600, json!(3)));
    let r = c.raw(r#"{"jsonrpc":"2.0","id":"four","method":"session.explode"}"#).await;
    assert_eq!((code(&r), r["id"].clone()), (-32601, json!("four")));
    let r = c.raw(r#"{"jsonrpc":"2.0","id":-5,"method":"session.open","params":{"workspace":"/"}}"#).await;
    assert_eq!((code(&r), r["id"].clone()), (-32602, json!(-5)));
    let r = c.raw(r#"{"jsonrpc":"2.0","id":6.5,"method":"session.submit","params":{"conversation_id":"x"}}"#).await;
    assert_eq!((code(&r), r["id"].clone()), (-32602, json!(6.5)));
    let r = c.raw(r#"{"jsonrpc":"2.0","id":null,"method":"session.history","params":{"conversation_id":4242}}"#).await;
    assert_eq!((code(&r), r["id"].clone()), (-32004, Value::Null));
    let r = c.raw("[]").await;
    assert_eq!(code(&r), -32600);

    // A line over the limit (1 MiB by default) gets an error; the next line is served.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"session.submit","params":{{"prompt":"{}"}}}}"#,
        "x".repeat(2 << 20)
    );
    let r = c.raw(&huge).await;
    assert_eq!((code(&r), r["id"].clone()), (-32600, Value::Null));

    // Notifications get no answer; the next line's answer is the first thing back.
    c.send_raw(br#"{"jsonrpc":"2.0","method":"session.list"}"#).await;
    c.send_raw(br#"{"jsonrpc":"2.0","method":"no.such.method"}"#).await;
    let r = c.raw(r#"{"jsonrpc":"2.0","id":"after","method":"session.list"}"#).await;
    assert_eq!(r["id"], json!("after"));
    assert!(r["result"]["conversations"].is_array());

    // A batch: one array of answers, none for its notification.
    let r = c
        .raw(
            &json!([
                {"jsonrpc": "2.0", "id": 1, "method": "session.open", "params": {}},
                {"jsonrpc": "2.0", "method": "session.list"},
                {"jsonrpc": "2.0", "id": 2, "method": "nope"},
                42,
            ])
            .to_string(),
        )
        .await;
    let answers = r.as_array().expect("a batch answer");
    assert_eq!(answers.len(), 3);
    let one = answers.iter().find(|a| a["id"] == json!(1)).unwrap();
    assert_eq!(one["result"]["created"], json!(true));
    assert_eq!(code(answers.iter().find(|a| a["id"] == json!(2)).unwrap()), -32601);
    assert_eq!(code(answers.iter().find(|a| a["id"].is_null()).unwrap()), -32600);
    c.ok("session.list", json!({})).await;
}

#[tokio::test]
async fn with_tokens_login_comes_first_and_conversations_stay_with_their_principal() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[("SUPERPI_TOKENS", "token-a,token-b")]).await;
    let mut a = server.client().await;
    assert_eq!(a.err("session.list", json!({})).await["code"], json!(-32001));
    assert_eq!(a.err("session.open", json!({})).await["code"], json!(-32001));
    assert_eq!(a.err("auth.login", json!({"token": "token-c"})).await["code"], json!(-32001));
    let login = a.ok("auth.login", json!({"token": "token-a"})).await;
    assert_eq!(login["auth"], json!(true));
    let mine = open(&mut a).await;

    let mut b = server.client().await;
    b.ok("auth.login", json!({"token": "token-b"})).await;
    let missing = 987_654;
    let calls = [
        ("session.history", json!({"conversation_id": mine}), json!({"conversation_id": missing})),
        ("session.watch", json!({"conversation_id": mine}), json!({"conversation_id": missing})),
        (
            "session.submit",
            json!({"conversation_id": mine, "prompt": "hi"}),
            json!({"conversation_id": missing, "prompt": "hi"}),
        ),
        ("session.cancel", json!({"conversation_id": mine}), json!({"conversation_id": missing})),
        ("session.fork", json!({"conversation_id": mine}), json!({"conversation_id": missing})),
        (
            "session.set_mode",
            json!({"conversation_id": mine, "mode": "plan"}),
            json!({"conversation_id": missing, "mode": "plan"}),
        ),
        ("session.open", json!({"conversation_id": mine}), json!({"conversation_id": missing})),
    ];
    for (method, theirs, absent) in calls {
        let e1 = b.err(method, theirs).await;
        let e2 = b.err(method, absent).await;
        assert_eq!(e1["code"], json!(-32004), "{method}: {e1}");
        // Exactly the answer for a conversation that does not exist.
        let normalise = |e: &Value, id: i64| e["message"].as_str().unwrap().replace(&id.to_string(), "N");
        assert_eq!(normalise(&e1, mine), normalise(&e2, missing), "{method}");
        assert_eq!(e1.get("data"), e2.get("data"));
    }
    let listed = b.ok("session.list", json!({})).await;
    assert!(listed["conversations"].as_array().unwrap().iter().all(|c| c["conversation_id"] != json!(mine)));
    // The owner still reaches it.
    a.ok("session.history", json!({"conversation_id": mine})).await;
    let meta = a.ok("workspace.metadata", json!({})).await;
    assert_eq!(meta["auth"], json!(true));
    assert_eq!(meta["principal"], login["principal"]);
}

#[tokio::test]
async fn a_client_gone_mid_watch_costs_the_kernel_nothing() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = open(&mut c).await;
    let w = watch(&mut c, id, true).await;
    c.ok("session.submit", json!({"conversation_id": id, "prompt": "@slow 20\n@deltas 200"})).await;
    c.events_until(w, is_type("text_delta")).await;
    drop(c);

    // The kernel sees only its own client once the RPC connection is gone, and the turn
    // goes on to its end without anyone watching.
    let kernel = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    wait::until("the kernel counts only its own client", wait::PATIENCE, async || {
        let clients = kernel.status().await.unwrap().clients;
        if clients == 1 { Ok(()) } else { Err(format!("{clients} clients")) }
    })
    .await;
    let mut sub = kernel.watch(superpi_proto::method::WatchParams::after(id, 0)).await.unwrap();
    loop {
        let event = tokio::time::timeout(READ_TIMEOUT, sub.next()).await.unwrap().expect("an event");
        if event.body.is_turn_end() {
            assert_eq!(event.type_name(), "turn_completed");
            break;
        }
    }
}

#[tokio::test]
async fn tokens_from_the_config_file_name_their_principals() {
    let env = TestEnv::new();
    let file = env.locations.config_dir.join("rpc.json");
    std::fs::write(&file, r#"{"tokens": {"alice": "key-for-alice"}}"#).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    assert_eq!(c.err("harness.list", json!({})).await["code"], json!(-32001));
    let login = c.ok("auth.login", json!({"token": "key-for-alice"})).await;
    assert_eq!(login, json!({"principal": "alice", "auth": true}));
    assert_eq!(c.ok("workspace.metadata", json!({})).await["principal"], json!("alice"));
}

/// A client that watches with `reads_files` answers the kernel's file reads (`ui_request`s of
/// kind `read_text_file`) with `ui.respond` and an `outcome`: the `read` uses its text. Giving
/// both `option_id` and `outcome` is invalid.
#[tokio::test]
async fn ui_respond_answers_the_read_requests_of_a_reads_files_watch() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("note.txt"), "on disk\n").unwrap();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let id = c.ok("session.open", json!({})).await["conversation_id"].as_i64().unwrap();
    let w = c.ok("session.watch", json!({"conversation_id": id, "reads_files": true})).await["watch"].as_u64().unwrap();
    c.ok("session.submit", json!({"conversation_id": id, "prompt": "@tool read {\"path\": \"note.txt\"}"})).await;
    let events = c.events_until(w, is_type("ui_request")).await;
    let request = events.last().unwrap();
    assert_eq!(request["kind"], "read_text_file", "{request}");
    let request_id = request["request_id"].as_str().unwrap().to_string();
    let both = json!({"request_id": request_id, "option_id": "allow_once", "outcome": {}});
    assert_eq!(c.err("ui.respond", both).await["code"], json!(-32602));
    let answer = json!({"request_id": request_id, "outcome": {"content": "UNSAVED EDITOR TEXT\n"}});
    assert_eq!(c.ok("ui.respond", answer).await, json!({"accepted": true}));
    let events = c.events_until(w, turn_end).await;
    let read = events.iter().find(|e| e["type"] == "tool_completed").unwrap();
    assert!(read["output"].as_str().unwrap().contains("UNSAVED EDITOR TEXT"), "{read}");
    // The answered question is gone.
    let stale = json!({"request_id": request_id, "outcome": {"content": "late"}});
    assert_eq!(c.err("ui.respond", stale).await["code"], json!(-32004));
}

/// A conversation whose stored events pass 64 MiB reads whole through `session.history`, a
/// page per request following `after_seq` (each answer one line well within the kernel's
/// frame), every entry once and in order, and the server never holds the whole history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_of_more_than_64_mib_reads_page_by_page() {
    let env = TestEnv::new();
    let conv = superpi_tests::pages::conversation_over_64_mib(&env, "test").await;
    let stored = superpi_tests::pages::stored_event_bytes(&env, conv) as u64;
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let (mut said, mut after, mut pages) = (Vec::new(), None::<u64>, 0);
    loop {
        let mut params = json!({"conversation_id": conv});
        if let Some(after) = after {
            params["after_seq"] = json!(after);
        }
        let page = c.ok("session.history", params).await;
        let line = page.to_string().len();
        assert!(line < superpi_proto::frame::DEFAULT_MAX_FRAME, "an answer of {line} bytes");
        for entry in page["entries"].as_array().unwrap() {
            let seq = entry["seq"].as_u64().unwrap();
            assert!(after.is_none_or(|after| seq > after), "seq {seq} after {after:?}");
            after = Some(seq);
            let blocks = entry["content"].as_array().unwrap().iter();
            let text: String = blocks.filter(|b| b["type"] == "text").map(|b| b["text"].as_str().unwrap()).collect();
            said.push((entry["kind"].as_str().unwrap().to_string(), text));
        }
        pages += 1;
        if page["more"] != json!(true) {
            break;
        }
    }
    superpi_tests::pages::assert_replayed_over_64_mib(&said);
    let peak = superpi_tests::pages::peak_rss(server.child.id().unwrap()).expect("the server's peak RSS");
    eprintln!("{} MiB of events read in {pages} pages; superpi rpc peak RSS {} MiB", stored >> 20, peak >> 20);
    assert!(pages > 5, "{pages} pages");
    assert!(peak < stored, "superpi rpc held {peak} bytes for {stored} bytes of events");
}

#[tokio::test]
async fn schedules_are_added_listed_and_removed() {
    let env = TestEnv::new();
    let server = UnixServer::start(&env, &[]).await;
    let mut c = server.client().await;
    let added = c
        .ok(
            "schedule.add",
            json!({"prompt": "Morning digest.", "cron": "0 7 * * *", "timezone": "Europe/Paris", "name": "digest"}),
        )
        .await;
    let id = added["schedule"]["id"].as_i64().unwrap();
    assert_eq!((added["schedule"]["kind"].as_str(), added["token"].is_null()), (Some("cron"), true), "{added}");
    assert!(added["schedule"]["next_at_ms"].as_i64().unwrap() > superpi_proto::event::now_ms());
    let trigger =
        c.ok("schedule.add", json!({"prompt": "An event.", "webhook": true, "mode": "fresh", "max_failures": 2})).await;
    let t = &trigger["schedule"];
    assert_eq!(
        (t["mode"].as_str(), t["max_failures"].as_u64(), t["catch_up"].as_bool()),
        (Some("fresh"), Some(2), Some(true))
    );
    assert!(t["paused_at_ms"].is_null(), "{t}");
    let not_paused = c.err("schedule.resume", json!({"id": t["id"]})).await;
    assert_eq!(not_paused["code"], json!(-32004), "{not_paused}");
    let bad_mode = c.err("schedule.add", json!({"prompt": "x", "webhook": true, "mode": "sideways"})).await;
    assert_eq!(bad_mode["code"], json!(-32602), "{bad_mode}");
    assert_eq!(trigger["token"].as_str().map(str::len), Some(32), "{trigger}");
    let bad = c.err("schedule.add", json!({"prompt": "x", "cron": "0 7 * *"})).await;
    assert_eq!(bad["code"], json!(-32602), "{bad}");
    assert!(bad["message"].as_str().unwrap().contains("five fields"), "{bad}");

    let listed = c.ok("schedule.list", json!({})).await;
    let schedules = listed["schedules"].as_array().unwrap();
    assert_eq!(schedules.len(), 2);
    assert_eq!(
        (schedules[0]["timezone"].as_str(), schedules[0]["run_count"].as_u64()),
        (Some("Europe/Paris"), Some(0))
    );
    assert!(
        schedules[1]["secret"].is_null() && !schedules[1].to_string().contains(trigger["secret"].as_str().unwrap())
    );

    assert_eq!(c.ok("schedule.remove", json!({"id": id})).await, json!({"removed": true}));
    let gone = c.err("schedule.remove", json!({"id": id})).await;
    assert_eq!(gone["code"], json!(-32004), "{gone}");
    assert_eq!(c.ok("schedule.list", json!({})).await["schedules"].as_array().unwrap().len(), 1);
}
