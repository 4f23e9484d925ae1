//! End to end: durable memory. A librarian conversation writes a note through the mock model
//! and the terminal frontend (`superpi run`); the kernel is killed; a new conversation after
//! the restart finds the note by a word of it (stemmed), on SQLite and on PostgreSQL. The
//! index of notes reaches the system prompt of a harness that takes memory (checked at a fake
//! OpenAI server, which records what it is sent) and not that of one that does not.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::OpenAiFake;
use superpi_tests::{TestEnv, postgres_server};

/// `superpi run ARGS` to its end: its stdout (the answer).
async fn run(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> String {
    let mut cmd = env.command(args);
    cmd.envs(vars.iter().copied());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "superpi {args:?} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

const WRITE: &str = r#"@tool memory_write {"title": "Deploy day", "body": "The team deploys on Tuesdays, never on Fridays.", "tags": ["ops"]}"#;

async fn a_note_survives_a_restart_and_is_found(vars: &[(&str, &str)]) {
    let env = TestEnv::new();
    let written = run(&env, vars, &["run", "--harness", "librarian", WRITE]).await;
    assert!(written.contains("Wrote note #1."), "{written}");
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
    assert!(written.contains("Wrote note #1."), "{written}");

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
