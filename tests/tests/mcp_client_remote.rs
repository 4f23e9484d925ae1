//! End to end, the MCP client with many tools and with servers over HTTP: deferred tools
//! found through `tool_search` and called in the same turn (requests checked on the OpenAI
//! fake, and their sizes with 5 servers of 20 tools printed), and a server that speaks only
//! the older HTTP+SSE transport (the fixture's `--sse`) reached through the fallback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::OpenAiFake;
use superpi_tests::{TestEnv, mcp_sse_fixture};

fn fixture() -> String {
    superpi_tests::mcp_fixture_bin().display().to_string()
}

/// The names of the tools a recorded chat request offered.
fn offered(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap_or_default().to_string()).collect()
}

/// `superpi run PROMPT` on the fake's model, with these MCP servers.
async fn run_on(fake: &superpi_providers::testing::fakes::FakeServer, env: &TestEnv, servers: Value) -> String {
    let settings = json!({"mcp_servers": servers});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    let mut cmd = env.command(&["run", "--mode", "accept-edits", "--model", "gpt-4o-mini", "look it up"]);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// A server whose settings say `defer: true`: the first request offers `tool_search` and not
/// the server's tools; the search's answer names `mcp__fix__echo` with its schema; the next
/// request of the same turn offers it, and the model's call of it is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_tool_is_found_with_tool_search_then_offered_and_called() {
    let script = vec![
        Answer::tool_call("tool_search", json!({"query": "says the text back"})),
        Answer::tool_call("mcp__fix__echo", json!({"text": "found"})),
        Answer::text("done"),
    ];
    let fake = OpenAiFake::start(script).await.unwrap();
    let env = TestEnv::new();
    let stdout = run_on(&fake, &env, json!({"fix": {"command": fixture(), "defer": true}})).await;
    assert_eq!(stdout.trim(), "done");
    assert_eq!(fake.rejections(), vec![]);
    let requests = fake.accepted();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let first = offered(&requests[0]);
    assert!(first.contains(&"tool_search".to_string()), "{first:?}");
    assert!(!first.iter().any(|t| t.starts_with("mcp__fix__")), "deferred: {first:?}");
    let second = offered(&requests[1]);
    assert!(second.contains(&"mcp__fix__echo".to_string()), "found, so offered: {second:?}");
    assert!(!second.contains(&"mcp__fix__crash".to_string()), "only what was found: {second:?}");
    let text = requests[1].to_string();
    assert!(text.contains("mcp__fix__echo: Says the text back.") && text.contains("input schema"), "{text}");
    assert!(requests[2].to_string().contains("echo: found"), "{}", requests[2]);
}

/// Five servers of 20 tools (and the fixture's eleven each: 155) pass the threshold, so their tools
/// are deferred unless a server says `defer: false`. Prints the first request's bytes both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_servers_tools_are_deferred_past_the_threshold_and_the_request_shrinks() {
    let servers = |defer: Option<bool>| {
        let mut servers = serde_json::Map::new();
        for n in 0..5 {
            let mut server = json!({"command": fixture(), "args": ["--tools", "20"]});
            if let Some(defer) = defer {
                server["defer"] = json!(defer);
            }
            servers.insert(format!("s{n}"), server);
        }
        Value::Object(servers)
    };
    let mut sizes = Vec::new();
    for defer in [Some(false), None] {
        let fake = OpenAiFake::start(vec![Answer::text("ok")]).await.unwrap();
        let env = TestEnv::new();
        run_on(&fake, &env, servers(defer)).await;
        let request = fake.requests().into_iter().next().unwrap();
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let tools = offered(&body);
        let mcp = tools.iter().filter(|t| t.starts_with("mcp__")).count();
        match defer {
            Some(false) => assert_eq!((mcp, tools.contains(&"tool_search".to_string())), (5 * 31, false)),
            _ => assert_eq!((mcp, tools.contains(&"tool_search".to_string())), (0, true), "{tools:?}"),
        }
        sizes.push(request.body.len());
    }
    eprintln!("first request with 5 servers x 31 tools: {} bytes all sent, {} bytes deferred", sizes[0], sizes[1]);
    assert!(sizes[1] * 4 < sizes[0], "{sizes:?}");
}

/// A server that speaks only HTTP+SSE: the Streamable HTTP POST is refused (405), so the
/// client opens the SSE stream and posts to its endpoint, with the settings' headers.
#[test]
fn a_server_of_the_older_sse_transport_is_reached_through_the_fallback() {
    let (_server, url) = mcp_sse_fixture();
    let env = TestEnv::new();
    let settings = json!({"mcp_servers": {"old": {"url": url, "headers": {"X-Team": "blue"}}}});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    let out = env
        .command(&["run", "--mode", "accept-edits", r#"@tool mcp__old__echo {"text":"over sse"}"#])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("mcp__old__echo returned: echo: over sse"), "{stdout}\n{stderr}");
    let out = env
        .command(&["run", "--mode", "accept-edits", r#"@tool mcp__old__header {"name":"x-team"}"#])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("header: blue"), "{stdout}");
}

/// A server's question during a call reaches the person as a `question` ui_request, and the
/// answers go back by field: at 2026-07-28 as an `input_required` round, from a 2025 server
/// (`--legacy`: the client falls back to `initialize`) as `elicitation/create`. Where nobody
/// can answer (`superpi run` in a pipe), the server is told `decline` and the call goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_is_put_to_the_person_and_declined_where_nobody_answers() {
    use superpi_proto::EventBody;
    use superpi_proto::method::{OpenParams, WatchParams};
    for (args, how) in [(vec![], "input_required"), (vec!["--legacy"], "elicitation")] {
        let env = TestEnv::new();
        let settings = json!({"mcp_servers": {"fix": {"command": fixture(), "args": args}}});
        std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
        let client = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
        let open = OpenParams {
            workspace: Some(env.workspace.display().to_string()),
            model: Some("mock".into()),
            mode: Some("accept-edits".into()),
            ..Default::default()
        };
        let conversation = client.open(open).await.unwrap().conversation_id;
        let mut sub = client.watch(WatchParams::live(conversation).interactive(true)).await.unwrap();
        let turn = client.submit_text(conversation, "@tool mcp__fix__ask {}").await.unwrap().turn_id;
        let mut output = None;
        loop {
            let event = tokio::time::timeout(superpi_tests::wait::PATIENCE, sub.next()).await.unwrap().unwrap();
            match &event.body {
                EventBody::UiRequest { request_id, request } => {
                    assert_eq!(request["kind"], "question", "{request:?}");
                    assert!(request["title"].as_str().unwrap().contains("`fix` asks: Where to deploy?"), "{request:?}");
                    let mut answers = serde_json::Map::new();
                    for question in request["questions"].as_array().unwrap() {
                        let answer = match question["schema"]["type"].as_str() {
                            Some("integer") => json!(3),
                            _ => question["options"][0]["label"].clone(),
                        };
                        answers.insert(question["id"].as_str().unwrap().to_string(), answer);
                    }
                    let outcome = json!({"action": "accept", "answers": answers});
                    client.call("ui.respond", json!({"request_id": request_id, "outcome": outcome})).await.unwrap();
                }
                EventBody::ToolCompleted { output: o, .. } => output = o.as_str().map(str::to_string),
                _ => {}
            }
            if event.turn_id == Some(turn) && event.body.is_turn_end() {
                break;
            }
        }
        let output = output.unwrap();
        assert!(
            output.contains(&format!(r#"{how}: {{"action":"accept","content":{{"region":"eu","replicas":3}}}}"#)),
            "{output}"
        );

        let out = env
            .command(&["run", "--mode", "accept-edits", "@tool mcp__fix__ask {}"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!(r#"{how}: {{"action":"decline"}}"#)),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
