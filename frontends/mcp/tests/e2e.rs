//! End to end: the real `superpi mcp` process, driven by rmcp's client over its stdio, with a
//! real kernel (autostarted in a private TestEnv) running the mock model and the sandbox.
//!
//! Build the binary first: `cargo build -p superpi-cli && cargo test -p superpi-mcp`.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used, deprecated)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use common::{WAIT, call, call_tool, connect, text};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, ClientRequest, GetPromptRequestParams, LoggingLevel, ProtocolVersion, ReadResourceRequestParams,
    SetLevelRequestParams,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use superpi_tests::{TestEnv, wait};

fn resource_text(read: &rmcp::model::ReadResourceResult) -> String {
    match &read.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    }
}

fn error_code(err: ServiceError) -> i32 {
    match err {
        ServiceError::McpError(e) => e.code.0,
        other => panic!("expected an MCP error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_protocol_version_is_negotiated() {
    let env = TestEnv::new();
    for version in [
        ProtocolVersion::V_2024_11_05,
        ProtocolVersion::V_2025_03_26,
        ProtocolVersion::V_2025_06_18,
        ProtocolVersion::V_2025_11_25,
    ] {
        let session = connect(&env, version.clone()).await;
        let info = session.client.peer_info().expect("server info");
        assert_eq!(info.protocol_version, version);
        assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("superpi"));
        let tools = session.client.list_all_tools().await.expect("tools/list");
        assert!(tools.iter().any(|t| t.name == "read"), "{version}: {tools:?}");
        session.client.cancel().await.expect("close");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_once_on_a_temp_workspace() {
    let env = TestEnv::new();
    let session = connect(&env, ProtocolVersion::V_2025_06_18).await;

    let tools = session.client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(names, vec!["bash", "edit", "find", "grep", "harness_task", "ls", "read", "write"]);
    let hints = |name: &str| {
        let a = tools.iter().find(|t| t.name == name).unwrap().annotations.clone().unwrap();
        (a.read_only_hint, a.destructive_hint, a.open_world_hint)
    };
    assert_eq!(hints("read"), (Some(true), Some(false), Some(false)));
    assert_eq!(hints("write"), (Some(false), Some(true), Some(false)));
    assert_eq!(hints("bash"), (Some(false), Some(true), Some(true)));

    let w = call_tool(&session, "write", json!({"path": "notes.txt", "content": "alpha\nbeta\n"})).await.unwrap();
    assert_eq!(w.is_error, Some(false), "{}", text(&w));
    assert_eq!(std::fs::read_to_string(env.workspace.join("notes.txt")).unwrap(), "alpha\nbeta\n");

    let r = call_tool(&session, "read", json!({"path": "notes.txt"})).await.unwrap();
    assert_eq!(r.is_error, Some(false));
    assert!(text(&r).contains("alpha"), "{}", text(&r));
    assert!(r.structured_content.is_some(), "read returns structured content");

    let e = call_tool(&session, "edit", json!({"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}))
        .await
        .unwrap();
    assert_eq!(e.is_error, Some(false), "{}", text(&e));
    assert_eq!(std::fs::read_to_string(env.workspace.join("notes.txt")).unwrap(), "alpha\ngamma\n");

    let b = call_tool(&session, "bash", json!({"command": "echo from-bash"})).await.unwrap();
    assert_eq!(b.is_error, Some(false), "{}", text(&b));
    assert!(text(&b).contains("from-bash"));

    let g = call_tool(&session, "grep", json!({"pattern": "gamma"})).await.unwrap();
    assert!(text(&g).contains("notes.txt"), "{}", text(&g));

    let f = call_tool(&session, "find", json!({"pattern": "*.txt"})).await.unwrap();
    assert!(text(&f).contains("notes.txt"), "{}", text(&f));

    let l = call_tool(&session, "ls", json!({"path": "."})).await.unwrap();
    assert!(text(&l).contains("notes.txt"), "{}", text(&l));

    // A write outside the workspace is refused and nothing is written.
    let outside = env.path().join("outside.txt");
    let o = call_tool(&session, "write", json!({"path": outside.display().to_string(), "content": "x"})).await.unwrap();
    assert_eq!(o.is_error, Some(true), "{}", text(&o));
    assert!(!outside.exists());

    // An unknown tool and bad params are protocol errors.
    assert_eq!(error_code(call_tool(&session, "no_such_tool", json!({})).await.unwrap_err()), -32602);
    assert_eq!(error_code(call_tool(&session, "read", json!({})).await.unwrap_err()), -32602);

    session.client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harness_task_runs_a_turn_with_progress_logs_prompts_and_resources() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("marker.txt"), "m").unwrap();
    let mut session = connect(&env, ProtocolVersion::V_2025_06_18).await;
    session.client.peer().set_level(SetLevelRequestParams::new(LoggingLevel::Info)).await.expect("setLevel");

    let result = call_tool(&session, "harness_task", json!({"prompt": "@tool ls {\"path\": \".\"}"})).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert!(text(&result).contains("marker.txt"), "{}", text(&result));
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(structured["harness"], "superpi-code");
    let conversation_id = structured["conversation_id"].as_i64().unwrap();

    // Notifications sent before the answer can reach rmcp's handlers after it (each runs on its
    // own task): wait for the ones the test looks for.
    let mut steps = Vec::new();
    while !steps.iter().any(|s| s == "running ls") {
        let next = tokio::time::timeout(WAIT, session.progress.recv()).await;
        let Ok(Some(p)) = next else { panic!("no `running ls` progress: {steps:?}") };
        steps.push(p.message.unwrap_or_default());
    }
    let mut logs = Vec::new();
    while !logs.iter().any(|m| m == "harness_task started") {
        let next = tokio::time::timeout(WAIT, session.logs.recv()).await;
        let Ok(Some(l)) = next else { panic!("no `harness_task started` log: {logs:?}") };
        logs.push(l.data["message"].as_str().unwrap_or_default().to_string());
    }

    // The conversation is a resource of this connection, its transcript JSON lines.
    let resources = session.client.list_all_resources().await.unwrap();
    let uri = format!("superpi://conversation/{conversation_id}/transcript");
    assert!(resources.iter().any(|r| r.uri == uri), "{resources:?}");
    let read = session.client.peer().read_resource(ReadResourceRequestParams::new(uri.clone())).await.unwrap();
    let body = resource_text(&read);
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["kind"], "user");
    assert!(lines.iter().any(|l| l["kind"] == "tool_result"), "{body}");
    let missing = session
        .client
        .peer()
        .read_resource(ReadResourceRequestParams::new("superpi://conversation/999999/transcript"))
        .await;
    assert_eq!(error_code(missing.unwrap_err()), -32002);
    let tools_doc =
        session.client.peer().read_resource(ReadResourceRequestParams::new("superpi://workspace/tools")).await;
    assert!(resource_text(&tools_doc.unwrap()).contains("\"fs_write\""));
    let context =
        session.client.peer().read_resource(ReadResourceRequestParams::new("superpi://workspace/context")).await;
    let context: Value = serde_json::from_str(&resource_text(&context.unwrap())).unwrap();
    assert_eq!(context["workspace"], env.workspace.canonicalize().unwrap().display().to_string());
    assert!(context["entries"].as_str().unwrap_or_default().contains("marker.txt"), "{context}");

    // One prompt per harness, each taking a goal.
    let prompts = session.client.list_all_prompts().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "superpi-code"), "{prompts:?}");
    assert!(prompts.iter().any(|p| p.name == "superpi-planner"));
    let mut get = GetPromptRequestParams::new("superpi-planner");
    get.arguments = json!({"goal": "plan the split"}).as_object().cloned();
    let prompt = session.client.peer().get_prompt(get).await.unwrap();
    assert!(serde_json::to_string(&prompt.messages).unwrap().contains("plan the split"));

    // Another harness by id; an unknown one is bad params.
    let planner =
        call_tool(&session, "harness_task", json!({"prompt": "hello", "harness": "superpi-planner"})).await.unwrap();
    assert_eq!(planner.structured_content.unwrap()["harness"], "superpi-planner");
    let unknown = call_tool(&session, "harness_task", json!({"prompt": "hello", "harness": "nope"})).await;
    assert_eq!(error_code(unknown.unwrap_err()), -32602);

    session.client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_harness_task_cancels_the_turn() {
    let env = TestEnv::new();
    let mut session = connect(&env, ProtocolVersion::V_2025_06_18).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call(
        "harness_task",
        json!({"prompt": "@slow 100\n@deltas 600\nslowly"}),
    )));
    let handle =
        session.client.peer().send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    // Wait until the turn runs.
    loop {
        let p = tokio::time::timeout(WAIT, session.progress.recv()).await.expect("progress in time").unwrap();
        if p.message.as_deref() == Some("turn started") {
            break;
        }
    }
    handle.cancel(Some("test".into())).await.unwrap();

    // The kernel reports the turn cancelled.
    let kernel = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let conversations = kernel.list().await.unwrap();
    assert_eq!(conversations.len(), 1, "{conversations:?}");
    let end = superpi_tests::first_turn_end(&kernel, conversations[0].conversation_id).await;
    assert_eq!(end, superpi_proto::EventBody::TurnCancelled {});
    // The server goes on serving.
    let tools = session.client.list_all_tools().await.unwrap();
    assert!(!tools.is_empty());
    session.client.cancel().await.expect("close");
}

/// notifications/cancelled for a running tools/call kills the confined process in the kernel
/// (`tool.cancel`), not just the wait: a `sleep 30` is gone long before 30 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_tool_call_kills_its_process() {
    let env = TestEnv::new();
    // The allow list takes no redirections or `$$`, so the command is a script the list names.
    std::fs::write(
        env.locations.config_dir.join("settings.json"),
        r#"{"permissions": {"allow": ["echo *", "sh pid-then-sleep.sh"]}}"#,
    )
    .unwrap();
    // `exec` keeps the shell's pid: the file names the sleeping process itself.
    std::fs::write(env.workspace.join("pid-then-sleep.sh"), "echo $$ > sleep.pid\nexec sleep 30\n").unwrap();
    let session = connect(&env, ProtocolVersion::V_2025_06_18).await;
    let request =
        ClientRequest::CallToolRequest(CallToolRequest::new(call("bash", json!({"command": "sh pid-then-sleep.sh"}))));
    let started = std::time::Instant::now();
    let handle =
        session.client.peer().send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    let pid_file = env.workspace.join("sleep.pid");
    let pid = wait::until("the command writes its pid", wait::PATIENCE, async || {
        std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse::<i32>().ok())
    })
    .await;
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    // The pid is written just before the shell execs the sleep: wait for the exec.
    wait::until("pid is the sleep", wait::PATIENCE, async || {
        let cmdline = std::fs::read(proc_dir.join("cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&cmdline).contains("sleep")
    })
    .await;

    handle.cancel(Some("test".into())).await.unwrap();
    wait::until("the sleep is killed and reaped", wait::PATIENCE, async || !proc_dir.exists()).await;
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());

    // The server goes on serving tool calls.
    let b = call_tool(&session, "bash", json!({"command": "echo still-here"})).await.unwrap();
    assert!(text(&b).contains("still-here"), "{}", text(&b));
    session.client.cancel().await.expect("close");
}

/// Raw stdio: a line that is not JSON gets a parse error and the server keeps serving; end
/// of input ends the process cleanly.
#[test]
fn garbage_then_end_of_input() {
    let env = TestEnv::new();
    let mut child = env
        .command(&["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn superpi mcp");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut read = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    writeln!(stdin, "this is not json").unwrap();
    let reply = read();
    assert_eq!(reply["id"], Value::Null);
    assert_eq!(reply["error"]["code"], -32700);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    let reply = read();
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["protocolVersion"], "2025-03-26");
    writeln!(stdin, "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}").unwrap();
    writeln!(stdin, "{{broken").unwrap();
    assert_eq!(read()["error"]["code"], -32700);
    writeln!(stdin, "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}}").unwrap();
    assert_eq!(read()["id"], 2);
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "", "nothing but protocol lines on stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx.recv_timeout(WAIT).expect("superpi mcp exits at end of input").unwrap();
    assert!(status.success(), "{status:?}");
}

/// Every kind of malformed line, each followed by a ping on the same connection: each gets
/// its JSON-RPC error (or none) and the ping still succeeds.
#[test]
fn every_kind_of_malformed_line_is_answered_and_serving_goes_on() {
    use superpi_tests::bad_input::{json_rpc_lines, run_stdio_battery};
    let setup = [
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    run_stdio_battery(
        &TestEnv::new(),
        &["mcp"],
        &setup,
        &json_rpc_lines(superpi_mcp::server::MAX_LINE, "prompts/get", json!({"name": 7})),
        |id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        |answer| assert!(answer.get("result").is_some(), "{answer}"),
    );
}

/// End of input while a harness_task runs: the turn is cancelled in the kernel and the
/// process exits cleanly at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_cancels_a_running_task() {
    let env = TestEnv::new();
    let mut child = env
        .command(&["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn superpi mcp");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let task = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "harness_task", "arguments": {"prompt": "@slow 100\n@deltas 600\nslowly"},
        "_meta": {"progressToken": "t"}}});
    writeln!(stdin, "{init}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n{task}").unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        let mut line = String::new();
        while stdout.read_line(&mut line).unwrap_or(0) > 0 {
            let _ = lines_tx.send(serde_json::from_str(&line).unwrap());
            line.clear();
        }
    });
    loop {
        let message = lines_rx.recv_timeout(WAIT).expect("turn started in time");
        if message["params"]["message"] == "turn started" {
            break;
        }
    }
    drop(stdin);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx.recv_timeout(WAIT).expect("superpi mcp exits at end of input").unwrap();
    assert!(status.success(), "{status:?}");

    let kernel = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let conversation_id = kernel.list().await.unwrap()[0].conversation_id;
    let end = superpi_tests::first_turn_end(&kernel, conversation_id).await;
    assert_eq!(end, superpi_proto::EventBody::TurnCancelled {});
}

/// A second frontend on an agent backend: `harness_task` with the gemini-cli harness runs the
/// real Gemini CLI (from the test cache) for a whole turn against the Gemini fake; its file
/// edit (allowed in accept-edits, the CLI's `auto_edit`) lands in the workspace and the answer
/// is the tool's result. Skipped, saying so, without the CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harness_task_runs_a_gemini_cli_turn() {
    use superpi_backends::BackendKind;
    use superpi_providers::testing::answers::Answer;
    use superpi_providers::testing::fakes::GeminiFake;
    let Some(program) = superpi_backends::discover::test_install(BackendKind::GeminiCli) else {
        eprintln!("SKIPPED: Gemini CLI is not installed in the test cache (.ci/run installs it)");
        return;
    };
    let env = TestEnv::new();
    let harnesses = format!("[backends.gemini-cli]\nprogram = \"{}\"\n", program.display());
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), harnesses).unwrap();
    let fake = GeminiFake::start(vec![
        Answer::tool_call("write_file", json!({"file_path": "from-mcp.txt", "content": "written by gemini"})),
        Answer::text("the file is written"),
    ])
    .await
    .unwrap();
    // The kernel starts with the fake's variables (the model named, so the CLI asks no router).
    let mut start = env.command(&["harnesses"]);
    start.envs(fake.env()).env("GEMINI_MODEL", "gemini-2.5-flash");
    assert!(start.output().unwrap().status.success());

    let setup = common::ClientSetup { args: vec!["--mode", "accept-edits"], ..Default::default() };
    let session = common::connect_with(&env, ProtocolVersion::V_2025_06_18, setup).await;
    let call =
        session.client.peer().call_tool(call("harness_task", json!({"prompt": "write it", "harness": "gemini-cli"})));
    let result = tokio::time::timeout(Duration::from_secs(120), call).await.expect("the turn in time").unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert!(text(&result).contains("the file is written"), "{}", text(&result));
    assert_eq!(result.structured_content.unwrap()["harness"], "gemini-cli");
    assert_eq!(std::fs::read_to_string(env.workspace.join("from-mcp.txt")).unwrap(), "written by gemini");
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    session.client.cancel().await.expect("close");
}

/// A transcript longer than one history page (and than one MCP line) reads whole, in parts
/// that each name the next, every entry once and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_of_several_history_pages_reads_whole_and_in_order() {
    let env = TestEnv::new();
    let turns = 3;
    let conv = superpi_tests::pages::multi_page_conversation(&env, "test", None, turns).await;
    let session = connect(&env, ProtocolVersion::LATEST).await;
    // Read by parts, each within the client's 16 MiB line, each naming the next.
    let mut uri = Some(format!("superpi://conversation/{conv}/transcript"));
    let (mut lines, mut reads) = (Vec::<Value>::new(), 0);
    while let Some(at) = uri {
        let read = session.client.peer().read_resource(ReadResourceRequestParams::new(at)).await.unwrap();
        lines.extend(resource_text(&read).lines().map(|l| serde_json::from_str::<Value>(l).unwrap()));
        let rmcp::model::ResourceContents::TextResourceContents { meta, .. } = &read.contents[0] else { panic!() };
        uri = meta.as_ref().and_then(|m| m.0.get("superpi/next")).map(|next| next.as_str().unwrap().to_string());
        reads += 1;
    }
    assert!(reads > 1, "a transcript of {} MiB comes in parts", (turns * 2 * superpi_tests::pages::PROMPT_BYTES) >> 20);
    // Each line's kind and text (the text blocks of its content).
    let said: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            let blocks = l["content"].as_array().unwrap().iter();
            let text: String = blocks.filter(|b| b["type"] == "text").map(|b| b["text"].as_str().unwrap()).collect();
            (l["kind"].as_str().unwrap().to_string(), text)
        })
        .collect();
    superpi_tests::pages::assert_replayed(&said, turns);
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}
