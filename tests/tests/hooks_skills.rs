//! Hooks and skills end to end through `superpi run` and the mock model: a `before_tool` hook
//! refuses a call (built-in or an MCP server's) and the model reads its reason, one that times
//! out refuses the call saying so, an observing hook that fails is a notice; a session_start
//! hook runs once and its context joins the system prompt, a before_tool hook answering
//! `"ask"` puts a call the mode allows to the person (answered over the kernel protocol) and
//! an after_tool hook's context joins the call's result; skills are listed
//! to the model and loaded through the `skill` tool.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::OpenAiFake;
use superpi_tests::{TestEnv, wait};

fn settings(env: &TestEnv, settings: Value) {
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
}

/// `superpi run --mode auto PROMPT`: whether it succeeded, stdout, stderr.
fn run(env: &TestEnv, prompt: &str) -> (bool, String, String) {
    let out = env.command(&["run", "--mode", "auto", prompt]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// A before_tool hook about `bash` and the MCP fixture's tools refuses what deletes (exit 2,
/// its reason on stderr) and lets the rest through; its payload names the call. The model
/// reads the refusal as the call's result, the command does not run, and an after_tool hook
/// sees the result of the call that ran.
#[test]
fn a_before_tool_hook_refuses_a_call_and_the_model_reads_why() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("keep.txt"), "kept").unwrap();
    let guard = r#"payload=$(cat); printf '%s' "$payload" > before.json
case "$payload" in *'rm '*|*delete*) echo "no deleting in this project" >&2; exit 2;; esac"#;
    settings(
        &env,
        json!({
            "mcp_servers": {"fix": {"command": superpi_tests::mcp_fixture_bin()}},
            "hooks": {
                "before_tool": [{"name": "guard", "command": guard, "tools": ["bash", "mcp__fix__*"]}],
                "after_tool": [{"command": "cat > after.json", "tools": ["bash"]}]
            }
        }),
    );
    let (ok, stdout, stderr) = run(&env, r#"@tool bash {"command": "rm keep.txt"}"#);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(
            "bash failed with: blocked: the before_tool hook `guard` refused it: no deleting in this project"
        ),
        "{stdout}\n{stderr}"
    );
    assert_eq!(std::fs::read_to_string(env.workspace.join("keep.txt")).unwrap(), "kept");
    let before: Value =
        serde_json::from_str(&std::fs::read_to_string(env.workspace.join("before.json")).unwrap()).unwrap();
    assert_eq!(before["hook"], "before_tool");
    assert_eq!(before["tool"]["name"], "bash");
    assert_eq!(before["tool"]["arguments"], json!({"command": "rm keep.txt"}));
    assert!(before["conversation_id"].is_i64() && before["turn_id"].is_i64(), "{before}");
    assert_eq!(before["workspace"], env.workspace.canonicalize().unwrap().display().to_string());
    assert!(!env.workspace.join("after.json").exists(), "a refused call has no after_tool");

    let (ok, stdout, stderr) = run(&env, r#"@tool bash {"command": "echo fine"}"#);
    assert!(ok && stdout.contains("bash returned: fine"), "{stdout}\n{stderr}");
    let after: Value =
        serde_json::from_str(&std::fs::read_to_string(env.workspace.join("after.json")).unwrap()).unwrap();
    assert_eq!(after["hook"], "after_tool");
    assert_eq!(after["result"]["is_error"], false);
    assert!(after["result"]["output"].as_str().unwrap().contains("fine"), "{after}");

    // An MCP server's tool passes the same pipeline.
    let (ok, stdout, stderr) = run(&env, r#"@tool mcp__fix__echo {"text": "please delete it"}"#);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("mcp__fix__echo failed with: blocked: the before_tool hook `guard` refused it"),
        "{stdout}"
    );
    let (ok, stdout, _) = run(&env, r#"@tool mcp__fix__echo {"text": "hi"}"#);
    assert!(ok && stdout.contains("mcp__fix__echo returned: echo: hi"), "{stdout}");
}

/// `tool.call` (a call outside a turn) passes the same hooks: refused, with the rule `hook`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_call_passes_the_before_tool_hooks_too() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("keep.txt"), "kept").unwrap();
    let guard = "grep -q 'rm ' && { echo 'not outside a turn either' >&2; exit 2; } || exit 0";
    settings(&env, json!({"hooks": {"before_tool": [{"name": "guard", "command": guard}]}}));
    let client = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let workspace = env.workspace.display().to_string();
    let call = |command: &str| json!({"name": "bash", "arguments": {"command": command}, "workspace": workspace, "mode": "auto"});
    let refused = client.call("tool.call", call("rm keep.txt")).await.unwrap();
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(refused["output"], "blocked: the before_tool hook `guard` refused it: not outside a turn either");
    assert_eq!(refused["details"]["blocked"]["rule"], "hook", "{refused}");
    assert!(env.workspace.join("keep.txt").exists());
    let ran = client.call("tool.call", call("echo fine")).await.unwrap();
    assert_eq!(ran["is_error"], false, "{ran}");
}

/// A before_tool hook that does not finish within its limit is stopped and the call refused,
/// saying so (to the model and as a notice); a before_request hook that fails is a notice and
/// the turn goes on; an after_turn hook is given how the turn ended.
#[test]
fn a_hook_that_times_out_refuses_the_call_and_a_failing_observer_is_a_notice() {
    let env = TestEnv::new();
    settings(
        &env,
        json!({"hooks": {
            "before_tool": [{"name": "slow", "command": "sleep 30", "timeout_secs": 1}],
            "before_request": [{"name": "flaky", "command": "echo cannot log >&2; exit 1"}],
            "after_turn": [{"command": "cat > turn.json.part && mv turn.json.part turn.json"}]
        }}),
    );
    let started = Instant::now();
    let (ok, stdout, stderr) = run(&env, r#"@tool bash {"command": "echo ran > ran.txt"}"#);
    assert!(ok, "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "the hook was stopped at its limit");
    let said =
        "the before_tool hook `slow` failed (it did not finish within 1 s and was stopped), so the call is refused";
    assert!(stdout.contains(&format!("bash failed with: blocked: {said}")), "{stdout}\n{stderr}");
    assert!(stderr.contains(said), "a notice says so: {stderr}");
    assert!(!env.workspace.join("ran.txt").exists());
    assert!(
        stderr.contains("the before_request hook `flaky` failed (it exited 1: cannot log); the turn goes on"),
        "{stderr}"
    );
    // The after_turn hook runs once the turn's end is known, without holding it up.
    let turn = env.workspace.join("turn.json");
    wait::until_blocking("the after_turn hook runs", wait::PATIENCE, || turn.exists());
    let turn: Value = serde_json::from_str(&std::fs::read_to_string(turn).unwrap()).unwrap();
    assert_eq!(turn["hook"], "after_turn");
    assert_eq!(turn["status"], "completed", "{turn}");
    assert!(turn["result"].as_str().unwrap().contains("bash failed with: blocked"), "{turn}");
}

fn skill_files(env: &TestEnv) {
    let release = env.locations.config_dir.join("skills/release");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::write(
        release.join("SKILL.md"),
        "---\nname: release\ndescription: Cut a release of this project\n---\nTag it, then follow checklist.md.\n",
    )
    .unwrap();
    std::fs::write(release.join("checklist.md"), "- changelog written\n").unwrap();
    let project = env.workspace.join(".superpi/skills");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("style.md"), "---\ndescription: The house style\n---\nShort sentences.\n").unwrap();
}

/// Skills of the config directory and the workspace: the model loads one's instructions and a
/// file beside them through the `skill` tool, which also lists them.
#[test]
fn a_skill_is_listed_and_loaded_through_the_skill_tool() {
    let env = TestEnv::new();
    skill_files(&env);
    let (ok, stdout, stderr) = run(&env, r#"@tool skill {}"#);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("skill returned: Skills:\n- release: Cut a release of this project\n- style: The house style"),
        "{stdout}"
    );
    let (ok, stdout, _) = run(&env, r#"@tool skill {"name": "release"}"#);
    assert!(ok && stdout.contains("# Skill: release\n\nTag it, then follow checklist.md."), "{stdout}");
    assert!(stdout.contains("Files of this skill"), "{stdout}");
    let (ok, stdout, _) = run(&env, r#"@tool skill {"name": "release", "file": "checklist.md"}"#);
    assert!(ok && stdout.contains("skill returned: - changelog written"), "{stdout}");
    let (ok, stdout, _) = run(&env, r#"@tool skill {"name": "release", "file": "../../settings.json"}"#);
    assert!(
        ok && stdout.contains("skill failed with: `../../settings.json` is not a path inside the skill"),
        "{stdout}"
    );
}

/// The list of skills reaches the model after the system prompt (a real provider's request,
/// through the OpenAI fake), and the instructions it loads come back as the call's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_told_the_skills_and_loads_one() {
    let env = TestEnv::new();
    skill_files(&env);
    let fake = OpenAiFake::start(vec![Answer::tool_call("skill", json!({"name": "style"})), Answer::text("done")])
        .await
        .unwrap();
    let mut cmd = env.command(&["run", "--model", "gpt-4o-mini", "write the docs"]);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fake.rejections(), vec![]);
    let sent = fake.accepted();
    assert_eq!(sent.len(), 2);
    let system = sent[0]["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains("- release: Cut a release of this project\n- style: The house style"),
        "{}",
        sent[0]["messages"][0]
    );
    assert!(sent[1].to_string().contains("# Skill: style\\n\\nShort sentences."), "{}", sent[1]);
}

/// A workspace's skills are read by the confined tool runner with the conversation's protected
/// paths, at the turn's start and for the `skill` tool: a skill file that is a hard link to the
/// workspace's `.env` or to a file outside the workspace (here in the config dir), or a path
/// `permissions.protected_paths` names, is neither listed to the model nor loaded, though the
/// kernel's own process could read each; the list says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_skill_the_confined_runner_refuses_is_not_read() {
    let env = TestEnv::new();
    skill_files(&env);
    settings(&env, json!({"permissions": {"protected_paths": [".superpi/skills/private*"]}}));
    let skill = |what: &str| format!("---\ndescription: {what}\n---\nsecret-{what}\n");
    let project = env.workspace.join(".superpi/skills");
    std::fs::write(env.workspace.join(".env"), skill("dotenv")).unwrap();
    std::fs::hard_link(env.workspace.join(".env"), project.join("dotenv.md")).unwrap();
    std::fs::write(env.locations.config_dir.join("outside.md"), skill("outside")).unwrap();
    std::fs::hard_link(env.locations.config_dir.join("outside.md"), project.join("outside.md")).unwrap();
    std::fs::write(project.join("private.md"), skill("private")).unwrap();

    let fake = OpenAiFake::start(vec![
        Answer::tool_call("skill", json!({})),
        Answer::tool_call("skill", json!({"name": "outside"})),
        Answer::text("done"),
    ])
    .await
    .unwrap();
    let mut cmd = env.command(&["run", "--model", "gpt-4o-mini", "--mode", "auto", "list the skills"]);
    cmd.envs(fake.env());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sent = fake.accepted();
    assert_eq!(sent.len(), 3);
    let system = sent[0]["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("- release: Cut a release of this project\n- style: The house style"), "{system}");
    let listed = sent[1]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap_or_default();
    assert!(
        listed.starts_with("Skills:\n- release: Cut a release of this project\n- style: The house style\nNot read:"),
        "{listed}"
    );
    for (file, why) in [
        ("dotenv.md", "has 2 names (hard links)"),
        ("outside.md", "has 2 names (hard links)"),
        ("private.md", "is a protected path (protected by permissions.protected_paths `.superpi/skills/private*`)"),
    ] {
        assert!(
            listed.contains(&format!("{}/{file} {why}", project.canonicalize().unwrap().display())),
            "{file}: {listed}"
        );
    }
    let loaded = sent[2]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap_or_default();
    assert!(loaded.starts_with("no skill is named `outside`"), "{loaded}");
    for request in &sent {
        assert!(!request.to_string().contains("secret-"), "a refused skill reached the model: {request}");
    }
}

/// Runs a turn over the kernel protocol, answering each permission question with the next of
/// `answers`: the reasons asked, the tool results, the turn's answer.
async fn asked_turn(
    client: &superpi_client::KernelClient,
    sub: &mut superpi_client::Subscription,
    conv: i64,
    prompt: &str,
    answers: &[&str],
) -> (Vec<String>, Vec<(bool, String)>, String) {
    use superpi_proto::EventBody;
    let turn = client.submit_text(conv, prompt).await.unwrap();
    let (mut answers, mut asked, mut results) = (answers.iter(), Vec::new(), Vec::new());
    loop {
        let ev = tokio::time::timeout(wait::PATIENCE, sub.next()).await.expect("an event in time").unwrap();
        match ev.body {
            EventBody::PermissionRequest { request_id, reason, .. } => {
                asked.push(reason);
                client.respond_permission(&request_id, answers.next().expect("an answer")).await.unwrap();
            }
            EventBody::ToolCompleted { is_error, output, .. } => {
                results.push((is_error, output.as_str().unwrap_or_default().to_string()));
            }
            EventBody::TurnCompleted { result, .. } if ev.turn_id == Some(turn.turn_id) => {
                return (asked, results, result.unwrap_or_default());
            }
            ref body if ev.turn_id == Some(turn.turn_id) && body.is_turn_end() => panic!("the turn failed: {body:?}"),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_start_hook_adds_context_and_an_ask_hook_puts_the_call_to_the_person() {
    let env = TestEnv::new();
    settings(
        &env,
        json!({"hooks": {
            "session_start": [{"name": "brief",
                "command": r#"cat > start.json; echo started >> started.txt; echo '{"context": "The deploy window is Tuesday."}'"#}],
            "before_tool": [{"name": "deploys", "tools": ["bash"],
                "command": r#"echo '{"decision": "ask", "reason": "deploys need a person"}'"#}],
            "after_tool": [{"name": "lint", "tools": ["bash"], "command": r#"echo '{"context": "lint: clean"}'"#}]
        }}),
    );
    let client = superpi_client::KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let params = superpi_proto::method::OpenParams {
        workspace: Some(env.workspace.display().to_string()),
        mode: Some("auto".into()),
        ..Default::default()
    };
    let conv = client.open(params).await.unwrap().conversation_id;
    let watch = superpi_proto::method::WatchParams::live(conv).interactive(true);
    let mut sub = client.watch(watch).await.unwrap();

    // The hook's context ends the system prompt (the mock's `@system` echoes its last part).
    let (_, _, answer) = asked_turn(&client, &mut sub, conv, "@system", &[]).await;
    assert_eq!(answer, "<hook_context hook=\"brief\">\nThe deploy window is Tuesday.\n</hook_context>");
    let start: Value =
        serde_json::from_str(&std::fs::read_to_string(env.workspace.join("start.json")).unwrap()).unwrap();
    assert_eq!((start["hook"].as_str(), start["conversation_id"].as_i64()), (Some("session_start"), Some(conv)));

    // In auto mode bash runs unasked; the hook asks. Allowed, it runs, with the lint's words.
    let touch = |file: &str| format!(r#"@tool bash {{"command": "touch {file}"}}"#);
    let (asked, results, _) = asked_turn(&client, &mut sub, conv, &touch("allowed"), &["allow_once"]).await;
    assert_eq!(asked, ["the before_tool hook `deploys` asks: deploys need a person"]);
    assert!(env.workspace.join("allowed").exists());
    assert!(
        !results[0].0 && results[0].1.ends_with("<hook_context hook=\"lint\">\nlint: clean\n</hook_context>"),
        "{results:?}"
    );
    // Even after allow_always the hook asks again; rejected, the call does not run.
    let (asked, _, _) = asked_turn(&client, &mut sub, conv, &touch("always"), &["allow_always"]).await;
    assert_eq!(asked.len(), 1);
    let (asked, results, _) = asked_turn(&client, &mut sub, conv, &touch("rejected"), &["reject_once"]).await;
    assert_eq!(asked.len(), 1, "allow_always lifted the hook's question");
    assert!(results[0].0 && !env.workspace.join("rejected").exists(), "{results:?}");
    // Four turns, one session start.
    assert_eq!(std::fs::read_to_string(env.workspace.join("started.txt")).unwrap(), "started\n");
}
