//! End to end: durable memory. A librarian conversation writes a note through the mock model
//! and the terminal frontend (`superpi run`); the kernel is killed; a new conversation after
//! the restart finds the note by a word of it (stemmed), on SQLite and on PostgreSQL. The
//! index of notes reaches the system prompt of a harness that takes memory (checked at a fake
//! OpenAI server, which records what it is sent) and not that of one that does not. The
//! person adds notes over RPC (`memory.add`), bounded as the model's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::OpenAiFake;
use superpi_tests::{TestEnv, postgres_server};

/// `superpi run ARGS` to its end: its stdout (the answer).
async fn run(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> String {
    run_in(env, vars, &env.workspace, args).await
}

/// `superpi ARGS` run in `dir` (its workspace), to its end: its stdout.
async fn run_in(env: &TestEnv, vars: &[(&str, &str)], dir: &std::path::Path, args: &[&str]) -> String {
    let mut cmd = env.command(args);
    cmd.envs(vars.iter().copied()).current_dir(dir);
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "superpi {args:?} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

const WRITE: &str = r#"@tool memory_write {"title": "Deploy day", "body": "The team deploys on Tuesdays, never on Fridays.", "tags": ["ops"]}"#;

async fn a_note_survives_a_restart_and_is_found(vars: &[(&str, &str)]) {
    let env = TestEnv::new();
    let written = run(&env, vars, &["run", "--harness", "librarian", WRITE]).await;
    assert!(written.contains("Wrote note #1 (global)."), "{written}");
    // The same note again is not written twice.
    let again = run(&env, vars, &["run", "--harness", "librarian", WRITE]).await;
    assert!(again.contains("Not written: note #1 already says this"), "{again}");

    env.kill_kernel();
    let found =
        run(&env, vars, &["run", "--harness", "superpi-librarian", r#"@tool memory_search {"query": "deploying"}"#])
            .await;
    assert!(
        found.contains("1 notes match") && found.contains("#1 Deploy day: The team deploys on Tuesdays"),
        "{found}"
    );
    let read = run(&env, vars, &["run", "--harness", "assistant", r#"@tool memory_read {"id": 1}"#]).await;
    assert!(read.contains("Note #1: Deploy day"), "{read}");
    // The code harness does not take the memory block: the model is not offered the tool.
    let code = run(&env, vars, &["run", "--mode", "auto", r#"@tool memory_search {"query": "deploy"}"#]).await;
    assert!(!code.contains("Deploy day"), "{code}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_survives_a_kernel_restart_and_is_found_by_search_on_sqlite() {
    a_note_survives_a_restart_and_is_found(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_survives_a_kernel_restart_and_is_found_by_search_on_postgres() {
    let Some(server) = postgres_server::shared() else { return };
    let url = server.new_database();
    a_note_survives_a_restart_and_is_found(&[("SUPERPI_DATABASE_URL", url.as_str())]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_of_notes_joins_the_system_prompt_of_a_harness_with_memory() {
    let env = TestEnv::new();
    let written = run(&env, &[], &["run", "--harness", "librarian", WRITE]).await;
    assert!(written.contains("Wrote note #1 (global)."), "{written}");

    let fake = OpenAiFake::start(vec![Answer::text("Noted."), Answer::text("Hello.")]).await.unwrap();
    let mut vars: Vec<(String, String)> = fake.env();
    vars.push(("OPENAI_API_KEY".into(), "sk-test-key".into()));
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    run(&env, &vars, &["run", "--harness", "librarian", "--model", "gpt-4o-mini", "what do we know?"]).await;
    run(&env, &vars, &["run", "--harness", "planner", "--model", "gpt-4o-mini", "plan"]).await;
    assert_eq!(fake.rejections(), vec![]);
    let requests = fake.requests();
    let system = |i: usize| {
        let body = requests[i].json().unwrap();
        let first = &body["messages"][0];
        assert_eq!(first["role"], "system");
        first["content"].as_str().unwrap().to_string()
    };
    let librarian = system(0);
    assert!(librarian.contains("# Your notes") && librarian.contains("- #1 Deploy day [ops]"), "{librarian}");
    assert!(!librarian.contains("Tuesdays"), "a body entered the index: {librarian}");
    let tools: Vec<String> = requests[0].json().unwrap()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(tools.contains(&"memory_search".to_string()) && !tools.contains(&"bash".to_string()), "{tools:?}");
    assert!(!system(1).contains("# Your notes"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_keep_to_their_workspace_or_are_global_and_a_pinned_one_outranks_a_newer_one() {
    let env = TestEnv::new();
    std::fs::write(
        env.locations.config_dir.join("harnesses.toml"),
        "[harnesses.notes]\ntools = [\"read\"]\ncapabilities = [\"memory\"]\n",
    )
    .unwrap();
    let (here, there) = (env.workspace.clone(), env.root.path().join("elsewhere"));
    std::fs::create_dir_all(&there).unwrap();
    let tool = |call: &str| vec!["run".to_string(), "--harness".into(), "notes".into(), call.to_string()];
    let run_tool = |dir: std::path::PathBuf, call: String| {
        let env = &env;
        async move {
            let args = tool(&call);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_in(env, &[], &dir, &args).await
        }
    };

    let local = run_tool(
        here.clone(),
        r#"@tool memory_write {"title": "Build", "body": "This repository builds with make"}"#.into(),
    )
    .await;
    assert!(local.contains("Wrote note #1 (kept to this workspace)."), "{local}");
    let global = run_tool(
        here.clone(),
        r#"@tool memory_write {"title": "Editor", "body": "Alice edits builds in vim", "scope": "global"}"#.into(),
    )
    .await;
    assert!(global.contains("Wrote note #2 (global)."), "{global}");

    // From another workspace: the global note, not the other workspace's.
    let found = run_tool(there.clone(), r#"@tool memory_search {"query": "builds"}"#.into()).await;
    assert!(found.contains("1 notes match") && found.contains("#2 Editor"), "{found}");
    assert!(!found.contains("#1 Build"), "{found}");

    // A newer, closer note; then the person pins the old one, which outranks it.
    let newer = run_tool(
        here.clone(),
        r#"@tool memory_write {"title": "Builds", "body": "Builds run nightly; builds builds builds"}"#.into(),
    )
    .await;
    assert!(newer.contains("Wrote note #3"), "{newer}");
    let before = run_tool(here.clone(), r#"@tool memory_search {"query": "builds"}"#.into()).await;
    assert!(before.find("#3 Builds").unwrap() < before.find("#1 Build:").unwrap(), "{before}");
    assert_eq!(run_in(&env, &[], &here, &["memory", "pin", "1"]).await, "Pinned note 1.\n");
    let after = run_tool(here.clone(), r#"@tool memory_search {"query": "builds"}"#.into()).await;
    assert!(after.find("#1 Build (pinned):").unwrap() < after.find("#3 Builds").unwrap(), "{after}");

    // A word cut short matches no whole word: the fallback finds it.
    let part = run_tool(there.clone(), r#"@tool memory_search {"query": "vi"}"#.into()).await;
    assert!(part.contains("1 notes hold parts of \"vi\"") && part.contains("#2 Editor"), "{part}");

    let listed: serde_json::Value =
        serde_json::from_str(&run_in(&env, &[], &here, &["memory", "list", "--json"]).await).unwrap();
    let ids: Vec<(i64, bool, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_i64().unwrap(), n["pinned"].as_bool().unwrap(), n["scope"].as_str().unwrap()))
        .collect();
    assert_eq!(ids, [(1, true, "workspace"), (3, false, "workspace"), (2, false, "global")]);
    assert_eq!(run_in(&env, &[], &here, &["memory", "unpin", "1"]).await, "Unpinned note 1.\n");
    assert_eq!(run_in(&env, &[], &here, &["memory", "remove", "3"]).await, "Removed note 3.\n");
    let text = run_in(&env, &[], &here, &["memory", "list"]).await;
    assert!(text.contains("Editor") && !text.contains("Builds") && !text.contains("pinned"), "{text}");
    let mut missing = env.command(&["memory", "remove", "3"]);
    missing.current_dir(&here);
    assert!(!missing.output().unwrap().status.success());
}

/// `memory.add` over `superpi rpc`: a note the person writes, global or kept to a workspace,
/// pinned first in `memory.list` and found by a conversation's search; one the model's
/// `memory_write` would refuse, or with a workspace that is no directory, is invalid params.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_adds_notes_over_rpc_bounded_as_the_models() {
    let env = TestEnv::new();
    let mut rpc = crate::frontend_images::Rpc::start(&env);
    let add = |rpc: &mut crate::frontend_images::Rpc, note: serde_json::Value| rpc.call("memory.add", note);
    let pinned = add(
        &mut rpc,
        serde_json::json!({"title": "Deploy day", "body": "We deploy on Tuesdays.", "tags": ["ops"], "pinned": true}),
    );
    let pinned = pinned["result"]["id"].as_i64().unwrap_or_else(|| panic!("{pinned}"));
    let kept =
        add(&mut rpc, serde_json::json!({"title": "Build", "body": "It builds with make", "workspace": env.workspace}));
    let kept = kept["result"]["id"].as_i64().unwrap_or_else(|| panic!("{kept}"));
    for refused in [
        serde_json::json!({"title": " ", "body": "no title"}),
        serde_json::json!({"title": "Tags", "body": "b", "tags": ["two words"]}),
        serde_json::json!({"title": "Big", "body": "x".repeat(32_001)}),
        serde_json::json!({"title": "Where", "body": "b", "workspace": env.root.path().join("no-such-dir")}),
        serde_json::json!({"title": "Odd", "body": "b", "colour": "red"}),
    ] {
        let answer = add(&mut rpc, refused.clone());
        assert_eq!(answer["error"]["code"], -32602, "{refused}: {answer}");
    }

    let listed = rpc.call("memory.list", serde_json::json!({}));
    let notes = listed["result"]["notes"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let facts: Vec<(i64, &str, &str, bool)> = notes
        .iter()
        .map(|n| {
            (n["id"].as_i64().unwrap(), n["title"].as_str().unwrap(), n["scope"].as_str().unwrap(), n["pinned"] == true)
        })
        .collect();
    assert_eq!(facts, [(pinned, "Deploy day", "global", true), (kept, "Build", "workspace", false)]);
    let workspace = std::fs::canonicalize(&env.workspace).unwrap();
    assert_eq!(notes[1]["workspace"], workspace.to_string_lossy().as_ref());
    assert_eq!(notes[0]["tags"], serde_json::json!(["ops"]));

    let found =
        run(&env, &[], &["run", "--harness", "librarian", r#"@tool memory_search {"query": "deploying"}"#]).await;
    assert!(found.contains("Deploy day"), "{found}");
}
