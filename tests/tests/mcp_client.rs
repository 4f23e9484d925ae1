//! End to end: external MCP servers from the user's settings and a frontend's, as tools of
//! turns (`superpi run`, and kernel clients), managed with `superpi mcp` and listed by `superpi
//! kernel status` (the fixture server of src/bin/mcp_fixture.rs, through the real kernel and
//! sandbox): one server per workspace, shared, stopped when idle, started again after a crash.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_proto::EventBody;
use superpi_proto::method::{McpServerParam, OpenParams, WatchParams};
use superpi_tests::{TestEnv, is_zombie, turn_events, wait};

/// Writes the user's settings with these MCP servers.
fn servers(env: &TestEnv, servers: serde_json::Value) {
    let settings = json!({ "mcp_servers": servers });
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
}

fn fixture() -> String {
    env!("CARGO_BIN_EXE_mcp_fixture").to_string()
}

/// `superpi run PROMPT` in `mode`: (success, stdout, stderr).
fn run(env: &TestEnv, mode: &str, prompt: &str) -> (bool, String, String) {
    let out = env.command(&["run", "--mode", mode, prompt]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn a_read_only_server_tool_round_trips_through_a_run() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__fix__echo {"text":"hi"}"#);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("mcp__fix__echo returned: echo: hi"), "{stdout}\n{stderr}");
}

#[test]
fn a_server_that_does_not_start_is_a_notice_and_the_turn_goes_on() {
    let env = TestEnv::new();
    servers(
        &env,
        json!({
            "gone": {"command": "/nonexistent/mcp-server"},
            "dies": {"command": fixture(), "args": ["--fail"]},
        }),
    );
    let (ok, stdout, stderr) = run(&env, "accept-edits", "just answer");
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "just answer");
    assert!(stderr.contains("`gone`"), "{stderr}");
    assert!(stderr.contains("`dies`") && stderr.contains("refusing to start (--fail)"), "{stderr}");
}

/// A server that fetches at start (as `npx -y` does) and fails without network is told so from
/// the sockets it was refused, not guessed from its words (issues #31 and #40): the notice
/// names the program and how to give it the network; `superpi mcp list` says the same.
#[test]
fn a_server_refused_the_network_at_start_is_told_how_to_get_it() {
    let env = TestEnv::new();
    let fetch = "import socket, sys\ntry:\n    socket.create_connection(('registry.npmjs.org', 443))\nexcept OSError:\n    sys.exit(1)";
    servers(&env, json!({"dl": {"command": "/usr/bin/python3", "args": ["-c", fetch]}}));
    let (ok, _, stderr) = run(&env, "accept-edits", "just answer");
    assert!(ok, "{stderr}");
    assert!(stderr.contains("`dl` is not available"), "{stderr}");
    assert!(stderr.contains("`python3` tried to open an internet connection"), "{stderr}");
    assert!(stderr.contains("superpi mcp add dl --network"), "{stderr}");
}

#[test]
fn a_tool_without_read_only_hint_is_a_command_asked_in_accept_edits_and_confined_in_auto() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let write = r#"@tool mcp__fix__write_file {"path":"note.txt","text":"from mcp"}"#;
    let (ok, _, stderr) = run(&env, "accept-edits", write);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("blocked"), "nobody answered the question, so it failed closed: {stderr}");
    assert!(!env.workspace.join("note.txt").exists());

    let (ok, _, stderr) = run(&env, "auto", write);
    assert!(ok, "{stderr}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("note.txt")).unwrap(), "from mcp");

    // Confined: nothing outside the workspace is writable, and the home's keys are unreadable.
    let outside = env.path().join("outside.txt");
    let escape = format!(r#"@tool mcp__fix__write_file {{"path":"{}","text":"x"}}"#, outside.display());
    let (ok, _, stderr) = run(&env, "auto", &escape);
    assert!(ok, "{stderr}");
    assert!(!outside.exists(), "the server wrote outside the workspace: {stderr}");
    assert!(stderr.contains("cannot write"), "{stderr}");
    std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
    std::fs::write(env.home.join(".ssh/id_rsa"), "SECRET KEY").unwrap();
    let steal = format!(r#"@tool mcp__fix__read_file {{"path":"{}"}}"#, env.home.join(".ssh/id_rsa").display());
    let (ok, stdout, stderr) = run(&env, "auto", &steal);
    assert!(ok, "{stderr}");
    assert!(!stdout.contains("SECRET KEY") && !stderr.contains("SECRET KEY"), "{stdout}\n{stderr}");
    assert!(stderr.contains("cannot read"), "{stderr}");
}

#[test]
fn servers_are_managed_with_superpi_mcp_and_listed_by_kernel_status() {
    let env = TestEnv::new();
    let cli = |args: &[&str]| {
        let out = env.command(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, _, stderr) = cli(&["mcp", "add", "fix", "--env", "FIXTURE_MODE=plain", "--", &fixture(), "--ignored-arg"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "add", "fix", "--", "/bin/true"]);
    assert!(!ok && stderr.contains("already"), "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "add", "bad__name", "--", "/bin/true"]);
    assert!(!ok && stderr.contains("mcp_servers.bad__name"), "an invalid entry is refused: {stderr}");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.locations.config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        settings["mcp_servers"]["fix"],
        json!({"command": fixture(), "args": ["--ignored-arg"], "env": {"FIXTURE_MODE": "plain"}})
    );

    let (ok, stdout, _) = cli(&["mcp", "list"]);
    assert!(ok && stdout.contains("fix: ") && stdout.contains("no kernel is running"), "{stdout}");
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__fix__echo {"text":"managed"}"#);
    assert!(ok && stdout.contains("echo: managed"), "{stdout}\n{stderr}");

    let (ok, stdout, stderr) = cli(&["kernel", "status", "--json"]);
    assert!(ok, "{stderr}");
    let status: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let servers = status["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{status}");
    assert_eq!(servers[0]["name"], "fix");
    assert_eq!(servers[0]["state"], "running");
    assert_eq!(servers[0]["workspace"], env.workspace.canonicalize().unwrap().display().to_string());
    assert!(servers[0]["pid"].as_i64().unwrap() > 0);
    assert_eq!(servers[0]["tools"][0], "mcp__fix__echo", "{status}");
    let (ok, stdout, _) = cli(&["mcp", "list"]);
    assert!(ok && stdout.contains("running in ") && stdout.contains("mcp__fix__echo"), "{stdout}");
    let (ok, stdout, _) = cli(&["mcp", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(ok, "{stdout}");
    assert_eq!(listed[0]["name"], "fix");
    assert_eq!(listed[0]["running"][0]["state"], "running", "{listed}");

    let (ok, _, stderr) = cli(&["mcp", "remove", "fix"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "remove", "fix"]);
    assert!(!ok && stderr.contains("no MCP server `fix`"), "{stderr}");
    let (ok, stdout, _) = cli(&["mcp", "list"]);
    assert!(ok && stdout.contains("no MCP servers"), "{stdout}");

    // The transport and deferral flags write the entry's `sse` and `defer`.
    let (ok, _, stderr) = cli(&["mcp", "add", "docs", "--url", "https://mcp.example.test/mcp", "--sse", "--defer"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "add", "direct", "--no-defer", "--", "/bin/true"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "add", "local", "--sse", "--", "/bin/true"]);
    assert!(!ok && stderr.contains("need a `url`"), "--sse is for a URL: {stderr}");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.locations.config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        settings["mcp_servers"]["docs"],
        json!({"url": "https://mcp.example.test/mcp", "sse": true, "defer": true})
    );
    assert_eq!(settings["mcp_servers"]["direct"], json!({"command": "/bin/true", "defer": false}));
}

#[test]
fn a_disabled_server_is_not_started_and_variables_come_from_the_kernels_environment() {
    let env = TestEnv::new();
    let cli = |args: &[&str]| {
        let out = env.command(args).env("SUPERPI_TEST_SECRET", "s3cret").output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The secret is the kernel's (started by this first run), not the settings file's.
    servers(
        &env,
        json!({"fix": {"command": fixture(), "env": {"FIXTURE_TOKEN": "Bearer ${SUPERPI_TEST_SECRET}, $$5"}}}),
    );
    let (ok, stdout, stderr) =
        cli(&["run", "--mode", "accept-edits", r#"@tool mcp__fix__env {"name":"FIXTURE_TOKEN"}"#]);
    assert!(ok && stdout.contains("env: Bearer s3cret, $5"), "{stdout}\n{stderr}");

    let (ok, _, stderr) = cli(&["mcp", "disable", "fix"]);
    assert!(ok && stderr.contains("disabled"), "{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "disable", "nope"]);
    assert!(!ok && stderr.contains("no MCP server `nope`"), "{stderr}");
    let (ok, stdout, _) = cli(&["mcp", "list"]);
    assert!(ok && stdout.contains("disabled (`superpi mcp enable fix`"), "{stdout}");
    let (_, stdout, _) = cli(&["mcp", "list", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()[0]["disabled"], true, "{stdout}");
    // Its tools are gone from the next turn, and its process with the kernel's idle stop.
    let (_, stdout, stderr) = cli(&["run", "--mode", "accept-edits", r#"@tool mcp__fix__echo {"text":"off"}"#]);
    assert!(!stdout.contains("echo: off"), "{stdout}\n{stderr}");
    let (ok, _, stderr) = cli(&["mcp", "enable", "fix"]);
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = cli(&["run", "--mode", "accept-edits", r#"@tool mcp__fix__echo {"text":"on"}"#]);
    assert!(ok && stdout.contains("echo: on"), "{stdout}\n{stderr}");

    // A variable the kernel does not have: the server is not started, and the notice names it.
    servers(&env, json!({"fix": {"command": fixture(), "env": {"FIXTURE_TOKEN": "${SUPERPI_TEST_NOT_SET}"}}}));
    let (_, stdout, stderr) = cli(&["run", "--mode", "accept-edits", r#"@tool mcp__fix__echo {"text":"x"}"#]);
    assert!(stderr.contains("`${SUPERPI_TEST_NOT_SET}` is not set in the kernel's environment"), "{stdout}\n{stderr}");
    // A malformed one is a settings error.
    servers(&env, json!({"fix": {"command": fixture(), "env": {"FIXTURE_TOKEN": "${UNCLOSED"}}}));
    let (ok, _, stderr) = cli(&["mcp", "list"]);
    assert!(!ok && stderr.contains("mcp_servers.fix.env"), "{stderr}");
}

/// `superpi kernel status`'s MCP servers.
fn status_servers(env: &TestEnv) -> Vec<Value> {
    let out = env.command(&["kernel", "status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    status["mcp_servers"].as_array().cloned().unwrap_or_default()
}

/// Polls `kernel status` until `done` holds of its servers (30 s at most).
fn wait_for_servers(env: &TestEnv, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    wait::until_blocking(what, wait::PATIENCE, || {
        let servers = status_servers(env);
        if done(&servers) { Ok(servers) } else { Err(format!("{servers:?}")) }
    })
}

#[test]
fn a_server_that_crashes_mid_call_fails_that_call_and_the_next_call_starts_it_again() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let prompt = "@tool mcp__fix__crash {}\n@tool mcp__fix__echo {\"text\":\"back\"}";
    let (ok, stdout, stderr) = run(&env, "accept-edits", prompt);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("went away during the call") && stderr.contains("crashing as asked"), "{stderr}");
    assert!(stderr.contains("had stopped and is started again"), "{stderr}");
    assert!(stdout.contains("mcp__fix__echo returned: echo: back"), "{stdout}\n{stderr}");
    let servers = status_servers(&env);
    assert_eq!(servers.len(), 1, "{servers:?}");
    assert_eq!(servers[0]["state"], "running");
}

#[test]
fn a_server_stops_after_idling_and_starts_again_at_its_next_use() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture(), "idle_stop_secs": 1}}));
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__fix__echo {"text":"one"}"#);
    assert!(ok && stdout.contains("echo: one"), "{stdout}\n{stderr}");
    let first = status_servers(&env);
    assert_eq!(first.len(), 1, "{first:?}");
    let pid = first[0]["pid"].as_i64().unwrap() as i32;
    wait_for_servers(&env, "the idle server was not stopped", |s| s.is_empty());
    wait::until_blocking(&format!("the stopped server's process {pid} ends"), wait::PATIENCE, || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid)
    });
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__fix__echo {"text":"two"}"#);
    assert!(ok && stdout.contains("echo: two"), "{stdout}\n{stderr}");
    assert!(!stderr.contains("had stopped"), "an idle stop is no news: {stderr}");
}

#[test]
fn a_changed_tool_list_is_listed_again() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let (ok, stdout, stderr) = run(&env, "accept-edits", "@tool mcp__fix__grow {}");
    assert!(ok && stdout.contains("grown"), "{stdout}\n{stderr}");
    wait_for_servers(&env, "the new tool was not listed", |s| {
        s.iter().any(|s| s["tools"].as_array().is_some_and(|t| t.iter().any(|t| t == "mcp__fix__extra")))
    });
    let (ok, stdout, stderr) = run(&env, "accept-edits", "@tool mcp__fix__extra {}");
    assert!(ok && stdout.contains("extra here"), "{stdout}\n{stderr}");
}

/// Opens a conversation in `workspace` with these servers attached, runs `prompt` as a turn,
/// and returns the turn's events.
async fn turn_in(
    client: &superpi_client::KernelClient,
    workspace: &std::path::Path,
    attach: Vec<McpServerParam>,
    prompt: &str,
) -> (i64, Vec<superpi_proto::Event>) {
    let open = OpenParams {
        workspace: Some(workspace.display().to_string()),
        model: Some("mock".into()),
        mode: Some("accept-edits".into()),
        mcp_servers: attach,
        ..Default::default()
    };
    let conversation_id = client.open(open).await.unwrap().conversation_id;
    let watch = WatchParams::live(conversation_id);
    let mut sub = client.watch(watch).await.unwrap();
    let submitted = client.submit_text(conversation_id, prompt).await.unwrap();
    (conversation_id, turn_events(&mut sub, submitted.turn_id).await)
}

fn tool_output(events: &[superpi_proto::Event], tool: &str) -> (bool, String) {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolCompleted { name, is_error, output, .. } if name == tool => {
                Some((*is_error, output.to_string()))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result of {tool}: {events:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_of_a_workspace_share_one_server_and_call_only_what_they_attached() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let other = env.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let client = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let echo = r#"@tool mcp__fix__echo {"text":"shared"}"#;
    let (a, events) = turn_in(&client, &env.workspace, vec![], echo).await;
    assert_eq!(tool_output(&events, "mcp__fix__echo"), (false, json!("echo: shared").to_string()));
    let (b, _) = turn_in(&client, &env.workspace, vec![], echo).await;
    let (c, _) = turn_in(&client, &other, vec![], echo).await;
    let status = client.status().await.unwrap().mcp_servers;
    assert_eq!(status.len(), 2, "one server per workspace: {status:?}");
    let here = status.iter().find(|s| s.workspace == env.workspace.canonicalize().unwrap().display().to_string());
    let here = here.unwrap_or_else(|| panic!("{status:?}"));
    assert_eq!(here.conversations, vec![a, b]);
    let there = status.iter().find(|s| s.conversations == vec![c]).unwrap_or_else(|| panic!("{status:?}"));
    assert_ne!(here.pid, there.pid);

    // A server an editor attached to one conversation is that conversation's alone.
    let editor = McpServerParam { name: "ed".into(), command: fixture(), ..Default::default() };
    let ed_echo = r#"@tool mcp__ed__echo {"text":"mine"}"#;
    let (_, events) = turn_in(&client, &env.workspace, vec![editor], ed_echo).await;
    assert_eq!(tool_output(&events, "mcp__ed__echo"), (false, json!("echo: mine").to_string()));
    let (_, events) = turn_in(&client, &env.workspace, vec![], ed_echo).await;
    let (is_error, output) = tool_output(&events, "mcp__ed__echo");
    assert!(is_error && output.contains("unknown tool"), "{output}");
}

#[test]
fn a_server_gets_the_network_only_when_its_settings_and_the_policy_say_so_and_keeps_a_state_dir() {
    let env = TestEnv::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let settings = |network: Value| {
        let settings = json!({
            "network": network,
            "mcp_servers": {"off": {"command": fixture()}, "on": {"command": fixture(), "network": true}},
        });
        std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    };
    let connect = |server: &str| {
        let prompt = format!(r#"@tool mcp__{server}__connect {{"port":{port}}}"#);
        let (ok, stdout, stderr) = run(&env, "accept-edits", &prompt);
        assert!(ok, "{stderr}");
        stdout
    };
    settings(json!({"policy": "allow"}));
    assert!(connect("off").contains("no network"), "without `network: true` it is offline by default");
    assert!(connect("on").contains("connected"), "`network: true` with the policy `allow`");
    settings(json!({"policy": "deny"}));
    assert!(connect("on").contains("no network"), "the policy `deny` wins over the server's wish");
    settings(json!({"policy": "allow", "shell_default": "allow"}));
    assert!(connect("off").contains("connected"), "like a shell command when it says nothing");

    // Its own state directory is its HOME, writable, and kept between starts.
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__on__remember {"text":"first"}"#);
    assert!(ok && stdout.contains("first"), "{stdout}\n{stderr}");
    env.kill_kernel();
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__on__remember {"text":"second"}"#);
    assert!(ok && stdout.contains("first\nsecond"), "{stdout}\n{stderr}");
    let kept = std::fs::read_to_string(env.locations.data_dir.join("mcp/on/memory.txt")).unwrap();
    assert_eq!(kept, "first\nsecond\n");
}

#[test]
fn a_huge_result_spills_to_disk_and_the_model_gets_its_head_and_tail() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__fix__big {"bytes":300000}"#);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("BEGIN0123"), "{stdout}");
    let spill = env.locations.data_dir.join("spill");
    let files: Vec<_> = walk(&spill);
    assert_eq!(files.len(), 1, "one spill file: {files:?}");
    let whole = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(whole.len(), 300_000 + "BEGINEND".len());
    assert!(whole.starts_with("BEGIN") && whole.ends_with("END"));
    let out = env.command(&["session", "show", "1"]).output().unwrap();
    let history = String::from_utf8_lossy(&out.stdout);
    assert!(history.contains("output truncated") && history.contains(&files[0].display().to_string()), "{history}");
    assert!(history.len() < 120_000, "the model got a bounded text: {} bytes", history.len());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { found.extend(walk(&path)) } else { found.push(path) }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_round_trip_through_the_kernels_tool_call_on_the_workspaces_server() {
    let env = TestEnv::new();
    servers(&env, json!({"fix": {"command": fixture()}}));
    let client = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let (conversation, _) = turn_in(&client, &env.workspace, vec![], r#"@tool mcp__fix__echo {"text":"turn"}"#).await;
    let workspace = env.workspace.display().to_string();
    let call = |name: &str, arguments: Value, mode: &str| {
        let params = json!({"name": name, "arguments": arguments, "workspace": workspace, "mode": mode});
        let client = &client;
        async move { client.call("tool.call", params).await }
    };
    let result = call("mcp__fix__echo", json!({"text": "direct"}), "accept-edits").await.unwrap();
    assert_eq!(result["output"], "echo: direct");
    assert_eq!(result["structured"], json!({"text": "direct"}));
    assert_eq!(result["is_error"], false);

    // Decided by the policy like a turn's call: nobody can be asked, so an askable one fails closed.
    let write = json!({"path": "direct.txt", "text": "from tool.call"});
    let blocked = call("mcp__fix__write_file", write.clone(), "accept-edits").await.unwrap();
    assert!(blocked["is_error"] == true && blocked["output"].as_str().unwrap().starts_with("blocked"), "{blocked}");
    assert!(!env.workspace.join("direct.txt").exists());
    let written = call("mcp__fix__write_file", write, "auto").await.unwrap();
    assert_eq!(written["output"], "written", "{written}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("direct.txt")).unwrap(), "from tool.call");

    let unknown = call("mcp__fix__nope", json!({}), "auto").await.unwrap_err().to_string();
    assert!(unknown.contains("unknown tool"), "{unknown}");
    let status = client.status().await.unwrap().mcp_servers;
    assert_eq!(status.len(), 1, "the turn's server served the calls too: {status:?}");
    assert_eq!(status[0].conversations, vec![conversation]);
}

#[test]
fn a_streamable_http_server_is_reached_at_its_url_with_the_bearer_token_of_a_variable() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("marker.txt"), "here").unwrap();
    let token = "the-gateway-token";
    // The kernel reads the token from its environment: start it from a command that has it.
    let out = env.command(&["run", "hello"]).env("GW_TOKEN", token).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // superpi's own gateway serves MCP over Streamable HTTP at /mcp, behind its token.
    let (_gateway, base) = env.spawn_http(&["gateway", "--port", "0"], &[("SUPERPI_GATEWAY_TOKEN", token)]);
    let (ok, stderr) = env.run_to_exit(
        &[
            "mcp",
            "add",
            "gw",
            "--url",
            &format!("{base}/mcp"),
            "--header",
            "X-Client: superpi-test",
            "--bearer-token-env",
            "GW_TOKEN",
        ],
        &[],
    );
    assert!(ok, "{stderr}");
    let (ok, stderr) = env.run_to_exit(&["mcp", "add", "anon", "--url", &format!("{base}/mcp")], &[]);
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__gw__ls {"path":"."}"#);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("mcp__gw__ls returned") && stdout.contains("marker.txt"), "{stdout}\n{stderr}");
    assert!(stderr.contains("`anon` is not available") && stderr.contains("401"), "no token, no tools: {stderr}");
    let servers = status_servers(&env);
    let gw = servers.iter().find(|s| s["name"] == "gw").unwrap_or_else(|| panic!("{servers:?}"));
    assert_eq!(gw["state"], "running");
    assert!(gw["pid"].is_null(), "no process of its own: {gw}");

    // The network policy decides whether the kernel reaches it at all.
    let settings_path = env.locations.config_dir.join("settings.json");
    let mut settings: Value = serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    settings["network"] = json!({"policy": "allowlist", "allow_hosts": ["example.com"]});
    std::fs::write(&settings_path, settings.to_string()).unwrap();
    let (ok, _, stderr) = run(&env, "accept-edits", "just answer");
    assert!(ok, "{stderr}");
    assert!(stderr.contains("`gw` is not reached") && stderr.contains("allow_hosts"), "{stderr}");
}
