//! End to end: the real `superpi` binary, a real kernel process, its socket and SQLite file.
//!
//! Over 500 lines on purpose: one end-to-end test binary for the kernel's socket, since each
//! binary links the crate and its dependencies once more (minutes on a 2-core machine).
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use superpi_client::KernelClient;
use superpi_proto::message::{ClientHello, codes};
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{ClientMessage, EventBody, KernelMessage, frame};
use superpi_tests::{TestEnv, open_and_watch, postgres_server, turn_events, wait};
use tokio::net::UnixStream;
use tokio_util::codec::Framed;

async fn client(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.expect("connect")
}

async fn open(client: &KernelClient, env: &TestEnv) -> i64 {
    client
        .open(OpenParams { workspace: Some(env.workspace.display().to_string()), ..Default::default() })
        .await
        .expect("open")
        .conversation_id
}

#[test]
fn run_answers_and_the_sqlite_file_holds_the_conversation() {
    let env = TestEnv::new();
    let out = env.command(&["run", "hello kernel"]).output().expect("run");
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello kernel");
    assert!(String::from_utf8_lossy(&out.stderr).contains("mock"), "says it uses the mock model");

    let db = rusqlite::Connection::open(env.database_path()).expect("db");
    let texts: Vec<(String, String)> = db
        .prepare("SELECT kind, message FROM entries ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(texts.len(), 2);
    assert_eq!(texts[0].0, "user");
    assert!(texts[0].1.contains("hello kernel"));
    assert_eq!(texts[1].0, "assistant");
    let status: String = db.query_row("SELECT status FROM turns", [], |r| r.get(0)).unwrap();
    assert_eq!(status, "completed");
}

#[test]
fn a_failed_turn_exits_1_and_bad_usage_exits_2() {
    let env = TestEnv::new();
    let out = env.command(&["run", "@fail the model broke"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the model broke"));
    let out = env.command(&["run", "--no-such-flag"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_prompt_comes_from_stdin_when_piped() {
    let env = TestEnv::new();
    let mut child = env.command(&["run"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"piped prompt").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "piped prompt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_with_two_tool_calls_stores_calls_and_results_in_order() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let client = client(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let turn = client
        .submit_text(conv, "@tool read {\"path\": \"notes.txt\"}\n@tool bash {\"command\": \"echo second\"}")
        .await
        .unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let kinds: Vec<&str> = events.iter().filter(|e| !e.body.is_transient()).map(|e| e.type_name()).collect();
    assert_eq!(
        kinds,
        [
            "message_completed",
            "turn_started",
            "state_changed",
            "message_completed",
            "usage_updated",
            "tool_started",
            "tool_completed",
            "tool_started",
            "tool_completed",
            "message_completed",
            "usage_updated",
            "turn_completed"
        ]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seq increases: {seqs:?}");

    let history = client.history(conv).await.unwrap();
    let kinds: Vec<&str> = history.entries.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool_result", "tool_result", "assistant"]);
    let results: Vec<String> = history.entries[2..4]
        .iter()
        .map(|e| match &e.message.content[0] {
            superpi_proto::ContentBlock::ToolResult { name, output, is_error, .. } => {
                assert!(!is_error, "{name}: {output}");
                format!("{name}:{output}")
            }
            other => panic!("not a tool result: {other:?}"),
        })
        .collect();
    assert!(results[0].starts_with("read:") && results[0].contains("alpha"), "{results:?}");
    assert_eq!(results[1].trim(), "bash:second");
    let answer = history.entries[4].message.text();
    assert!(answer.contains("alpha") && answer.contains("second"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_watchers_see_the_same_events_in_the_same_order_and_catch_up_replays_the_store() {
    let env = TestEnv::new();
    let a = client(&env).await;
    let b = client(&env).await;
    let conv = open(&a, &env).await;
    let watch = WatchParams::live(conv).window(8);
    let mut sub_a = a.watch(watch.clone()).await.unwrap();
    let mut sub_b = b.watch(watch).await.unwrap();
    let turn = a.submit_text(conv, "@think pondering\none two three four five six seven eight nine ten").await.unwrap();
    let ev_a = turn_events(&mut sub_a, turn.turn_id).await;
    let ev_b = turn_events(&mut sub_b, turn.turn_id).await;
    assert!(ev_a.len() > 10);
    assert_eq!(ev_a, ev_b);

    // A late watcher from seq 0 gets every stored event (no deltas), in the same order.
    let mut late = b.watch(WatchParams::after(conv, 0)).await.unwrap();
    let replayed = turn_events(&mut late, turn.turn_id).await;
    let stored: Vec<_> = ev_a.into_iter().filter(|e| !e.body.is_transient()).collect();
    assert_eq!(replayed, stored);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_a_slow_turn_promptly_and_a_queued_prompt_runs_after() {
    let env = TestEnv::new();
    let client = client(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, None, false).await;
    let slow = client.submit_text(conv, "@slow 200\nthis answer takes a long time to stream out").await.unwrap();
    let queued = client.submit_text(conv, "after").await.unwrap();
    assert!(queued.queued);
    // Wait for the first delta, then cancel.
    loop {
        let ev = sub.next().await.unwrap();
        if matches!(ev.body, EventBody::TextDelta { .. }) {
            break;
        }
    }
    let started = std::time::Instant::now();
    assert_eq!(client.cancel(conv).await.unwrap()["cancelled"], true);
    let events = turn_events(&mut sub, slow.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCancelled {}));
    assert!(started.elapsed() < Duration::from_secs(2), "cancel took {:?}", started.elapsed());
    let events = turn_events(&mut sub, queued.turn_id).await;
    assert!(matches!(&events.last().unwrap().body, EventBody::TurnCompleted { result: Some(r), .. } if r == "after"));
}

/// The store a crash test's kernels keep their conversations in.
enum Engine {
    /// The data directory's file, its kernels autostarted by the clients.
    Sqlite,
    /// A database on the test process's PostgreSQL server, its kernels started by hand with
    /// `superpi kernel --database URL` (with a short lease, so a restarted kernel takes the
    /// conversation over soon).
    Postgres(&'static postgres_server::TestPostgres, String),
}

impl Engine {
    async fn kernel(&self, env: &TestEnv) -> (Option<superpi_tests::KillOnDrop>, KernelClient) {
        match self {
            Engine::Sqlite => (None, client(env).await),
            Engine::Postgres(_, url) => {
                let kernel = env
                    .command(&["kernel", "--database", url])
                    .env("SUPERPI_LEASE_MS", "1500")
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("spawn superpi kernel --database");
                (Some(superpi_tests::KillOnDrop(kernel)), env.wait_for_kernel().await)
            }
        }
    }

    /// The status the store holds for a turn.
    fn turn_status(&self, env: &TestEnv, turn_id: i64) -> String {
        let sql = format!("SELECT status FROM turns WHERE id = {turn_id}");
        match self {
            Engine::Sqlite => {
                let db = rusqlite::Connection::open(env.database_path()).unwrap();
                let check: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
                assert_eq!(check, "ok");
                db.query_row(&sql, [], |r| r.get(0)).unwrap()
            }
            Engine::Postgres(server, url) => server.query(url, &sql),
        }
    }
}

/// The crash test, on each engine: kill -9 during a turn, start the kernel again on the same
/// machine, and every committed entry is there, the turn is marked interrupted (the watchers
/// are told), and the conversation goes on.
async fn a_kernel_killed_mid_turn_keeps_every_committed_entry_and_marks_the_turn_interrupted(engine: Engine) {
    let env = TestEnv::new();
    let (_kernel, client) = engine.kernel(&env).await;
    let conv = open(&client, &env).await;
    let first = client.submit_text(conv, "first answer").await.unwrap();
    let mut sub = client.watch(WatchParams::after(conv, 0)).await.unwrap();
    turn_events(&mut sub, first.turn_id).await;
    let slow = client.submit_text(conv, "@slow 300\nnever finished in this life").await.unwrap();
    loop {
        let ev = sub.next().await.unwrap();
        if ev.turn_id == Some(slow.turn_id) && matches!(ev.body, EventBody::TextDelta { .. }) {
            break;
        }
    }
    let before = env.kernel_pid().unwrap();
    env.kill_kernel();
    drop(sub);
    drop(client);

    // A new kernel on the same machine (on SQLite autostarted by a new client) recovers.
    let (_kernel, client) = engine.kernel(&env).await;
    assert_ne!(env.kernel_pid().unwrap(), before);
    let history = client.history(conv).await.unwrap();
    let kinds: Vec<&str> = history.entries.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["user", "assistant", "user"], "every committed entry survives");
    assert_eq!(history.entries[1].message.text(), "first answer");

    let mut replay = client.watch(WatchParams::after(conv, 0)).await.unwrap();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), replay.next()).await.unwrap().unwrap();
        if let EventBody::Notice { message, .. } = &ev.body {
            assert!(message.contains("interrupted"));
            assert_eq!(ev.turn_id, Some(slow.turn_id));
            break;
        }
    }
    assert_eq!(engine.turn_status(&env, slow.turn_id), "interrupted");
    // The conversation goes on, run by the new kernel (which `superpi kernel status` says).
    let next = client.submit_text(conv, "still here").await.unwrap();
    let events = turn_events(&mut replay, next.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }));
    let out = env.command(&["kernel", "status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(status["owned_conversations"].as_array().unwrap().contains(&conv.into()), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_killed_mid_turn_keeps_every_committed_entry_and_marks_the_turn_interrupted_on_sqlite() {
    a_kernel_killed_mid_turn_keeps_every_committed_entry_and_marks_the_turn_interrupted(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_killed_mid_turn_keeps_every_committed_entry_and_marks_the_turn_interrupted_on_postgres() {
    let Some(server) = postgres_server::shared() else { return };
    let engine = Engine::Postgres(server, server.new_database());
    a_kernel_killed_mid_turn_keeps_every_committed_entry_and_marks_the_turn_interrupted(engine).await;
}

fn hello() -> ClientMessage {
    ClientMessage::Hello(ClientHello {
        protocol: 1,
        frontend: "raw".into(),
        version: "0".into(),
        principal: "local".into(),
        remote: false,
        provider_env: None,
    })
}

async fn raw_connection(env: &TestEnv) -> Framed<UnixStream, tokio_util::codec::LengthDelimitedCodec> {
    let stream = UnixStream::connect(env.locations.socket_path()).await.unwrap();
    let mut framed = Framed::new(stream, frame::codec(usize::MAX >> 1));
    framed.send(Bytes::from(frame::encode(&hello()))).await.unwrap();
    let reply = framed.next().await.unwrap().unwrap();
    assert!(matches!(frame::decode::<KernelMessage>(&reply).unwrap(), KernelMessage::Hello(_)));
    framed
}

fn error_code(body: &[u8]) -> i32 {
    match frame::decode::<KernelMessage>(body).unwrap() {
        KernelMessage::Response(r) => r.error.expect("an error").code,
        other => panic!("expected an error response, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_frames_get_error_frames_and_the_kernel_keeps_serving() {
    let env = TestEnv::new();
    let good = client(&env).await;

    // Not JSON: an error frame, and the same connection still works.
    let mut raw = raw_connection(&env).await;
    raw.send(Bytes::from_static(b"this is not json")).await.unwrap();
    assert_eq!(error_code(&raw.next().await.unwrap().unwrap()), codes::PARSE_ERROR);
    raw.send(Bytes::from_static(b"{\"type\":\"request\",\"id\":5,\"method\":\"nope.nope\"}")).await.unwrap();
    assert_eq!(error_code(&raw.next().await.unwrap().unwrap()), codes::METHOD_NOT_FOUND);
    raw.send(Bytes::from_static(b"{\"type\":\"request\",\"id\":6,\"method\":\"session.submit\",\"params\":{\"x\":1}}"))
        .await
        .unwrap();
    assert_eq!(error_code(&raw.next().await.unwrap().unwrap()), codes::INVALID_PARAMS);
    raw.send(Bytes::from_static(b"{\"type\":\"bogus\"}")).await.unwrap();
    assert_eq!(error_code(&raw.next().await.unwrap().unwrap()), codes::INVALID_REQUEST);

    // Over the limit: an error frame, its bytes are skipped, and the connection goes on.
    let mut raw = raw_connection(&env).await;
    let big = vec![b' '; superpi_proto::frame::DEFAULT_MAX_FRAME + 1];
    raw.send(Bytes::from(big)).await.unwrap();
    assert_eq!(error_code(&raw.next().await.unwrap().unwrap()), codes::FRAME_TOO_LARGE);
    raw.send(Bytes::from_static(b"{\"type\":\"request\",\"id\":7,\"method\":\"session.list\",\"params\":{}}"))
        .await
        .unwrap();
    match frame::decode::<KernelMessage>(&raw.next().await.unwrap().unwrap()).unwrap() {
        KernelMessage::Response(r) => assert!(r.id == Some(7) && r.error.is_none(), "{r:?}"),
        other => panic!("expected the list's answer, got {other:?}"),
    }
    // An oversized request is refused with its id, so its caller's wait ends.
    let pad = " ".repeat(superpi_proto::frame::DEFAULT_MAX_FRAME);
    let big = format!("{{\"type\":\"request\",\"id\":8,\"method\":\"session.list\",\"params\":{{\"pad\":\"{pad}\"}}}}");
    raw.send(Bytes::from(big)).await.unwrap();
    match frame::decode::<KernelMessage>(&raw.next().await.unwrap().unwrap()).unwrap() {
        KernelMessage::Response(r) => {
            assert_eq!(r.id, Some(8), "{r:?}");
            assert_eq!(r.error.map(|e| e.code), Some(codes::FRAME_TOO_LARGE));
        }
        other => panic!("expected the refusal, got {other:?}"),
    }

    // A first message that is not hello is refused.
    let stream = UnixStream::connect(env.locations.socket_path()).await.unwrap();
    let mut framed = Framed::new(stream, frame::codec(1 << 20));
    framed.send(Bytes::from_static(b"{\"type\":\"request\",\"id\":1,\"method\":\"session.list\"}")).await.unwrap();
    assert_eq!(error_code(&framed.next().await.unwrap().unwrap()), codes::INVALID_REQUEST);

    // Other clients were never disturbed.
    let conv = open(&good, &env).await;
    assert!(good.list().await.unwrap().iter().any(|c| c.conversation_id == conv));
}

/// Malformed frames of every kind, each followed by a probe request on the same connection:
/// each gets its error frame (or none, for an ack of nothing) and the probe still succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_malformed_frame_is_answered_and_the_connection_goes_on() {
    use superpi_tests::bad_input::{Answer, depth_bomb};
    let env = TestEnv::new();
    let _kernel = client(&env).await;
    let mut raw = raw_connection(&env).await;
    const PARSE: i64 = codes::PARSE_ERROR as i64;
    const INVALID: i64 = codes::INVALID_REQUEST as i64;
    const PARAMS: i64 = codes::INVALID_PARAMS as i64;
    const METHOD: i64 = codes::METHOD_NOT_FOUND as i64;
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(br#"{"type":"request","id":1,"method":"session.list"}"#);
    let battery: Vec<(&str, Vec<u8>, Answer)> = vec![
        ("invalid UTF-8", b"{\"type\":\"request\",\"id\":1,\"method\":\"\xff\xfe\"}".to_vec(), Answer::Error(&[PARSE])),
        ("a truncated object", br#"{"type":"request","id":1,"#.to_vec(), Answer::Error(&[PARSE])),
        ("a non-object", b"42".to_vec(), Answer::Error(&[INVALID])),
        ("an unknown message type", br#"{"type":"bogus"}"#.to_vec(), Answer::Error(&[INVALID])),
        ("a second hello", frame::encode(&hello()), Answer::Error(&[INVALID])),
        (
            "params of the wrong types",
            br#"{"type":"request","id":6,"method":"session.submit","params":{"conversation_id":"x"}}"#.to_vec(),
            Answer::Error(&[PARAMS]),
        ),
        ("an unknown method", br#"{"type":"request","id":7,"method":"nope.nope"}"#.to_vec(), Answer::Error(&[METHOD])),
        (
            "an id of a bad type",
            br#"{"type":"request","id":"abc","method":"session.list"}"#.to_vec(),
            Answer::Error(&[INVALID]),
        ),
        ("a negative id", br#"{"type":"request","id":-1,"method":"session.list"}"#.to_vec(), Answer::Error(&[INVALID])),
        ("an empty frame", Vec::new(), Answer::Error(&[PARSE])),
        ("a byte order mark", bom, Answer::Error(&[PARSE])),
        ("a depth bomb", depth_bomb(100_000), Answer::Error(&[PARSE, INVALID])),
        ("NUL bytes", b"\0\0\0\0".to_vec(), Answer::Error(&[PARSE])),
        ("an ack of no subscription", br#"{"type":"ack","subscription":999,"count":1}"#.to_vec(), Answer::Nothing),
    ];
    for (i, (name, body, answer)) in battery.into_iter().enumerate() {
        let probe_id = 1000 + i as u64;
        raw.send(Bytes::from(body)).await.unwrap();
        let probe = format!(r#"{{"type":"request","id":{probe_id},"method":"session.list"}}"#);
        raw.send(Bytes::from(probe)).await.unwrap();
        // Requests run concurrently: a bad request's error may come after the probe's answer.
        let wanted = usize::from(answer != Answer::Nothing);
        let (mut errors, mut probed) = (Vec::new(), false);
        while !probed || errors.len() < wanted {
            let reply = tokio::time::timeout(Duration::from_secs(30), raw.next())
                .await
                .unwrap_or_else(|_| panic!("{name}: no answer"))
                .unwrap_or_else(|| panic!("{name}: the kernel closed the connection"))
                .unwrap();
            let KernelMessage::Response(response) = frame::decode::<KernelMessage>(&reply).unwrap() else { continue };
            if response.id == Some(probe_id) {
                assert!(response.error.is_none(), "{name}: the probe failed: {response:?}");
                probed = true;
                continue;
            }
            errors.push(response.error.map(|e| e.code as i64));
        }
        match answer {
            Answer::Nothing => assert!(errors.is_empty(), "{name}: {errors:?}"),
            Answer::Error(codes) => {
                assert_eq!(errors.len(), 1, "{name}: {errors:?}");
                assert!(errors[0].is_some_and(|c| codes.contains(&c)), "{name}: {errors:?}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_conversation_is_not_found() {
    let env = TestEnv::new();
    let alice = client(&env).await;
    let conv = open(&alice, &env).await;
    let mut opts = env.connect_options("test");
    opts.principal = "mallory".into();
    let mallory = KernelClient::connect(&opts).await.unwrap();
    let missing = mallory.history(999_999).await.unwrap_err();
    let foreign = mallory.history(conv).await.unwrap_err();
    assert_eq!(missing.code(), Some(codes::NOT_FOUND));
    assert_eq!(foreign.code(), Some(codes::NOT_FOUND));
    assert!(mallory.list().await.unwrap().is_empty());
    assert!(mallory.submit_text(conv, "hi").await.is_err());
}

#[test]
fn the_socket_is_private_and_a_client_of_another_uid_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let out = env.command(&["run", "start me"]).output().unwrap();
    assert!(out.status.success());
    let socket = env.locations.socket_path();
    assert_eq!(std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&env.locations.runtime_dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(nix::unistd::geteuid().is_root(), "this test runs as root (as CI does) to drop to another uid");

    // A child that drops to uid 65534 and connects: the kernel closes without a hello.
    // The socket file is 0600, so let the child reach it through an inherited descriptor
    // opened after the drop would fail; instead relax the modes for the test only.
    std::fs::set_permissions(&env.locations.runtime_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = format!(
        "import socket,struct,json,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect({:?})\nb=json.dumps({{'type':'hello','protocol':1,'frontend':'x','version':'0'}}).encode()\ntry:\n  s.sendall(struct.pack('>I',len(b))+b)\n  d=s.recv(4)\nexcept (BrokenPipeError, ConnectionResetError):\n  d=b''\nprint('REFUSED' if d==b'' else 'ANSWERED')",
        socket.display().to_string()
    );
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", &script])
        .output()
        .expect("setpriv");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "REFUSED",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Our own uid is still served.
    let out = env.command(&["session", "list"]).output().unwrap();
    assert!(out.status.success());
}

#[test]
fn a_second_kernel_on_the_same_data_dir_refuses_to_start() {
    let env = TestEnv::new();
    assert!(env.command(&["run", "one"]).output().unwrap().status.success());
    let out = env.command(&["kernel"]).output().unwrap();
    // Its own status, which an autostarting frontend reads as a lost race.
    assert_eq!(out.status.code(), Some(i32::from(superpi_proto::KERNEL_EXIT_LOCK_HELD)));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already runs"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn kernel_status_and_stop() {
    let env = TestEnv::new();
    let out = env.command(&["kernel", "status"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "no kernel yet");
    assert!(env.command(&["run", "one"]).output().unwrap().status.success());
    let out = env.command(&["kernel", "status", "--json"]).output().unwrap();
    assert!(out.status.success());
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["pid"].as_i64().unwrap() as i32, env.kernel_pid().unwrap());
    let out = env.command(&["kernel", "stop"]).output().unwrap();
    assert!(out.status.success());
    assert!(!env.locations.socket_path().exists(), "socket removed on stop");
    // A stale socket left by a killed kernel is cleaned up by the next one.
    assert!(env.command(&["run", "two"]).output().unwrap().status.success());
    env.kill_kernel();
    assert!(env.locations.socket_path().exists());
    let out = env.command(&["run", "three"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_autostarted_kernel_exits_after_idling() {
    let env = TestEnv::new();
    let out = env.command(&["run", "hello"]).env("SUPERPI_KERNEL_IDLE_EXIT", "1").output().unwrap();
    assert!(out.status.success());
    let pid = env.kernel_pid().unwrap();
    wait::until_blocking(&format!("the idle kernel {pid} exits"), wait::PATIENCE, || superpi_tests::is_zombie(pid));
    assert!(!env.locations.socket_path().exists(), "it removed its socket");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_only_open_set_model_and_model_list() {
    let env = TestEnv::new();
    let client = client(&env).await;
    let miss = client
        .open(OpenParams { external_id: Some("nobody".into()), create: Some(false), ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(miss.code(), Some(codes::NOT_FOUND));
    assert!(client.list().await.unwrap().is_empty(), "a lookup creates nothing");
    let made = client
        .open(OpenParams {
            external_id: Some("s1".into()),
            workspace: Some(env.workspace.display().to_string()),
            ..Default::default()
        })
        .await
        .unwrap();
    let found = client
        .open(OpenParams { external_id: Some("s1".into()), create: Some(false), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(found.conversation_id, made.conversation_id);

    let err = client
        .call("session.set_model", serde_json::json!({"conversation_id": made.conversation_id, "model": "claude-x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(codes::PROVIDER));
    let ok = client
        .call("session.set_model", serde_json::json!({"conversation_id": made.conversation_id, "model": "mock"}))
        .await
        .unwrap();
    assert_eq!(ok["model"], "mock");
    let models = client.call("model.list", serde_json::Value::Null).await.unwrap();
    assert!(models["models"].as_array().unwrap().iter().any(|m| m["id"] == "mock"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_tool_call_runs_confined_and_can_be_cancelled() {
    let env = TestEnv::new();
    let client = client(&env).await;
    std::fs::write(env.workspace.join("a.txt"), "hello file").unwrap();
    let ws = env.workspace.display().to_string();
    let read = client
        .call("tool.call", serde_json::json!({"name": "read", "arguments": {"path": "a.txt"}, "workspace": ws}))
        .await
        .unwrap();
    assert_eq!(read["is_error"], false);
    assert!(read["output"].as_str().unwrap().contains("hello file"));
    let unknown = client.call("tool.call", serde_json::json!({"name": "nope", "workspace": ws})).await.unwrap_err();
    assert_eq!(unknown.code(), Some(codes::METHOD_NOT_FOUND));
    let bad = client
        .call("tool.call", serde_json::json!({"name": "read", "arguments": {"path": 5}, "workspace": ws}))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Some(codes::INVALID_PARAMS));

    let slow = {
        let client = client.clone();
        let ws = ws.clone();
        tokio::spawn(async move {
            client
                .call(
                    "tool.call",
                    serde_json::json!({"name": "bash", "arguments": {"command": "sleep 30"}, "workspace": ws, "mode": "auto", "call_id": "c-slow"}),
                )
                .await
        })
    };
    let started = std::time::Instant::now();
    wait::until("the call shows up and is cancelled", wait::PATIENCE, async || {
        client.call("tool.cancel", serde_json::json!({"call_id": "c-slow"})).await.unwrap()["cancelled"] == true
    })
    .await;
    let result = tokio::time::timeout(Duration::from_secs(10), slow).await.unwrap().unwrap().unwrap();
    assert_eq!(result["is_error"], true);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_bad_settings_file_is_a_clear_error_naming_the_file_and_key() {
    let env = TestEnv::new();
    std::fs::write(env.locations.config_dir.join("settings.json"), r#"{"permissions": {"alow": []}}"#).unwrap();
    let out = env.command(&["run", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("settings.json") && stderr.contains("alow"), "{stderr}");
}

#[test]
fn chat_answers_line_by_line_until_exit() {
    let env = TestEnv::new();
    let mut child = env
        .command(&["chat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"first line\nsecond line\n/exit\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().collect::<Vec<_>>(), ["first line", "second line"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_process_that_reaches_the_kernel_socket_is_refused() {
    let env = TestEnv::new();
    // Network granted (the call asks, auto allows), so the sandbox lets the connect through:
    // the kernel's own check refuses.
    let client = client(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    let script = format!(
        "import socket,struct,json\ns=socket.socket(socket.AF_UNIX)\ntry:\n  s.connect({:?})\n  print('CONNECTED')\n  b=json.dumps({{'type':'hello','protocol':1,'frontend':'x','version':'0'}}).encode()\n  s.sendall(struct.pack('>I',len(b))+b)\n  d=s.recv(4)\nexcept OSError as e:\n  print(e)\n  d=b''\nprint('REFUSED' if d==b'' else 'ANSWERED')",
        env.locations.socket_path().display().to_string()
    );
    std::fs::write(env.workspace.join("probe.py"), script).unwrap();
    let turn = client
        .submit_text(conv, "@tool bash {\"command\": \"/usr/bin/python3 probe.py\", \"network\": true}")
        .await
        .unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let output = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolCompleted { output, .. } => Some(output.as_str().unwrap_or("").to_string()),
            _ => None,
        })
        .unwrap();
    assert!(output.contains("REFUSED"), "{output}");
    assert!(!output.contains("ANSWERED"));
    assert!(output.contains("CONNECTED"), "the connect itself went through: {output}");
}

/// A `read` asks a watcher that reads files (an editor) for its buffer, and uses the answer;
/// `use_disk` reads the file from disk as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_watcher_supplies_unsaved_buffers_to_read() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("note.txt"), "on disk\n").unwrap();
    let client = client(&env).await;
    let conv = open(&client, &env).await;
    let mut sub = client.watch(WatchParams::live(conv).reads_files(true)).await.unwrap();
    for (answer, expected) in [
        (serde_json::json!({"content": "UNSAVED EDITOR TEXT\n"}), "UNSAVED EDITOR TEXT"),
        (serde_json::json!({"use_disk": true}), "on disk"),
    ] {
        let turn = client.submit_text(conv, "@tool read {\"path\": \"note.txt\"}").await.unwrap();
        let mut output = None;
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(20), sub.next()).await.unwrap().unwrap();
            match &ev.body {
                EventBody::UiRequest { request_id, request } => {
                    assert_eq!(request["kind"], "read_text_file");
                    assert_eq!(
                        request["path"],
                        env.workspace.canonicalize().unwrap().join("note.txt").display().to_string()
                    );
                    let r = client
                        .call("ui.respond", serde_json::json!({"request_id": request_id, "outcome": answer}))
                        .await
                        .unwrap();
                    assert_eq!(r["accepted"], true);
                }
                EventBody::ToolCompleted { output: o, is_error, .. } => {
                    assert!(!is_error, "{o}");
                    output = o.as_str().map(str::to_string);
                }
                _ => {}
            }
            if ev.turn_id == Some(turn.turn_id) && ev.body.is_turn_end() {
                break;
            }
        }
        let output = output.unwrap();
        assert!(output.contains(expected) && output.contains("     1\t"), "{output}");
    }
    let stale = client.call("ui.respond", serde_json::json!({"request_id": "nope", "outcome": {}})).await.unwrap_err();
    assert_eq!(stale.code(), Some(codes::NOT_FOUND));
}
