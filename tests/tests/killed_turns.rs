//! A turn cut by a kernel's death (SIGKILL), taken over by the kernel that runs its
//! conversation next: on SQLite the same machine's kernel starting again, on PostgreSQL another
//! machine's kernel once the dead one's lease runs out. Whatever the turn was doing (streaming
//! an answer, waiting for a person's answer to a question, running a tool), nothing of it runs
//! again: it ends `interrupted`, its open question is withdrawn, each call left open gets a
//! result saying whether it ran (the model reads it and decides), and the conversation goes
//! on. The tool's side effect (a line appended to a file) is counted: never twice. PostgreSQL
//! cases are skipped, saying so, without its binaries unless CI is set.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use superpi_client::KernelClient;
use superpi_proto::method::WatchParams;
use superpi_proto::{ContentBlock, Event, EventBody, Role};
use superpi_tests::postgres_server::{self, TestPostgres};
use superpi_tests::{KillOnDrop, TestEnv, next_event, open_and_watch, turn_events, wait};

/// What the turn was doing when its kernel died.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Doing {
    Streaming,
    Asking,
    RunningATool,
}

/// The file the turn's tool appends a line to, in the workspace.
const SIDE_EFFECT: &str = "ran.txt";

/// The prompt, the mode and whether the watch answers questions, for each case.
fn prompt(doing: Doing) -> (&'static str, &'static str, bool) {
    match doing {
        Doing::Streaming => ("@slow 300\nan answer that is still streaming when the kernel dies", "auto", false),
        // accept-edits asks before a shell command; the interactive watcher is asked.
        Doing::Asking => ("@tool bash {\"command\": \"echo ran >> ran.txt\"}", "accept-edits", true),
        Doing::RunningATool => ("@tool bash {\"command\": \"echo ran >> ran.txt; sleep 30\"}", "auto", false),
    }
}

/// Lines the tool appended so far.
fn side_effects(env: &TestEnv) -> usize {
    std::fs::read_to_string(env.workspace.join(SIDE_EFFECT)).map_or(0, |text| text.lines().count())
}

/// The status the store holds for a turn.
fn turn_status(env: &TestEnv, postgres: Option<(&TestPostgres, &str)>, turn_id: i64) -> String {
    let sql = format!("SELECT status FROM turns WHERE id = {turn_id}");
    match postgres {
        None => {
            let db = rusqlite::Connection::open(env.database_path()).unwrap();
            db.query_row(&sql, [], |r| r.get(0)).unwrap()
        }
        Some((server, url)) => server.query(url, &sql),
    }
}

/// Every tool call of the history has exactly one result, after it.
fn assert_paired(entries: &[superpi_proto::Entry]) {
    let blocks: Vec<&ContentBlock> = entries.iter().flat_map(|e| &e.message.content).collect();
    for (at, block) in blocks.iter().enumerate() {
        if let ContentBlock::ToolCall { id, .. } = block {
            let answers = blocks[at..]
                .iter()
                .filter(|b| matches!(b, ContentBlock::ToolResult { tool_call_id, .. } if tool_call_id == id))
                .count();
            assert_eq!(answers, 1, "call {id} has one result after it: {entries:?}");
        }
    }
}

async fn a_killed_turn_ends_interrupted_and_runs_nothing_again(doing: Doing, postgres: Option<&TestPostgres>) {
    // The machine whose kernel dies, and the kernel that takes over with a client of it.
    let url = postgres.map(TestPostgres::new_database);
    let vars: Vec<(&str, &str)> =
        url.iter().flat_map(|url| [("SUPERPI_DATABASE_URL", url.as_str()), ("SUPERPI_LEASE_MS", "1500")]).collect();
    let dying = TestEnv::new();
    let (_kernel, client): (Option<KillOnDrop>, KernelClient) = match postgres {
        None => (None, KernelClient::connect(&dying.connect_options("test")).await.unwrap()),
        Some(_) => {
            let (kernel, client) = dying.start_kernel(&vars).await;
            (Some(kernel), client)
        }
    };
    let (text, mode, interactive) = prompt(doing);
    let (conv, mut sub) = open_and_watch(&client, &dying.workspace, Some(mode), interactive).await;
    let turn = client.submit_text(conv, text).await.unwrap().turn_id;
    match doing {
        Doing::Streaming => {
            next_event(&mut sub, |e| matches!(e.body, EventBody::TextDelta { .. })).await;
        }
        Doing::Asking => {
            next_event(&mut sub, |e| matches!(e.body, EventBody::PermissionRequest { .. })).await;
        }
        Doing::RunningATool => {
            let ran = async || if side_effects(&dying) == 1 { Ok(()) } else { Err("not yet") };
            wait::until("the tool ran its side effect", wait::PATIENCE, ran).await;
        }
    }
    dying.kill_kernel();
    drop((sub, client));

    // The kernel that takes over: on SQLite the same machine's, autostarted by a client; on
    // PostgreSQL another machine's, which finds the conversation without a live holder.
    let other = TestEnv::new();
    let (_taker, client, taker_env) = match postgres {
        None => (None, KernelClient::connect(&dying.connect_options("test")).await.unwrap(), &dying),
        Some(_) => {
            let (kernel, client) = other.start_kernel(&vars).await;
            (Some(kernel), client, &other)
        }
    };
    let mut replay = client.watch(WatchParams::after(conv, 0)).await.unwrap();
    let events = turn_events(&mut replay, turn).await;
    let name = format!("{doing:?} on {}", if postgres.is_some() { "PostgreSQL" } else { "SQLite" });
    assert!(
        matches!(&events.last().unwrap().body, EventBody::TurnError { error } if error.contains("interrupted")),
        "{name}: {events:?}"
    );
    // The dead kernel last told `running` or `waiting`: the one that took over says `idle`.
    let told = tokio::time::timeout(wait::PATIENCE, replay.next()).await.unwrap().unwrap();
    assert!(matches!(&told.body, EventBody::StateChanged { status } if status == "idle"), "{name}: {told:?}");
    let postgres_db = postgres.zip(url.as_deref());
    assert_eq!(turn_status(taker_env, postgres_db, turn), "interrupted", "{name}");
    let results: Vec<(&str, bool)> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolCompleted { output, is_error, .. } => Some((output.as_str().unwrap(), *is_error)),
            _ => None,
        })
        .collect();
    let withdrawn =
        |e: &&Event| matches!(&e.body, EventBody::UiResolved { outcome, .. } if outcome["outcome"] == "cancelled");
    match doing {
        Doing::Streaming => {
            assert!(results.is_empty(), "{name}: {results:?}");
            let history = client.history(conv).await.unwrap().entries;
            let roles: Vec<Role> = history.iter().map(|e| e.message.role).collect();
            assert_eq!(roles, [Role::User], "{name}: the unfinished answer is not stored");
        }
        Doing::Asking => {
            assert_eq!(events.iter().filter(withdrawn).count(), 1, "{name}: the question is withdrawn");
            assert_eq!(results.len(), 1, "{name}: {results:?}");
            assert!(results[0].1 && results[0].0.starts_with("not run:"), "{name}: {results:?}");
            assert!(results[0].0.contains("waited for a person's answer"), "{name}: {results:?}");
        }
        Doing::RunningATool => {
            assert_eq!(results.len(), 1, "{name}: {results:?}");
            assert!(results[0].1 && results[0].0.contains("may have run"), "{name}: {results:?}");
        }
    }

    // The conversation goes on; the tool never ran again (nor, when it waited, at all).
    let next = client.submit_text(conv, "still here").await.unwrap().turn_id;
    let events = turn_events(&mut replay, next).await;
    assert!(matches!(&events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{name}: {events:?}");
    assert_paired(&client.history(conv).await.unwrap().entries);
    let expected = if doing == Doing::RunningATool { 1 } else { 0 };
    assert_eq!(side_effects(&dying), expected, "{name}: the tool ran once at most, never again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_while_streaming_ends_interrupted_on_sqlite() {
    a_killed_turn_ends_interrupted_and_runs_nothing_again(Doing::Streaming, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_while_asking_withdraws_the_question_and_runs_nothing_on_sqlite() {
    a_killed_turn_ends_interrupted_and_runs_nothing_again(Doing::Asking, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_while_a_tool_runs_never_runs_it_again_on_sqlite() {
    a_killed_turn_ends_interrupted_and_runs_nothing_again(Doing::RunningATool, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_while_streaming_ends_interrupted_on_postgres() {
    let Some(server) = postgres_server::shared() else { return };
    a_killed_turn_ends_interrupted_and_runs_nothing_again(Doing::Streaming, Some(server)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_while_asking_withdraws_the_question_and_runs_nothing_on_postgres() {
    let Some(server) = postgres_server::shared() else { return };
    a_killed_turn_ends_interrupted_and_runs_nothing_again(Doing::Asking, Some(server)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_while_a_tool_runs_never_runs_it_again_on_postgres() {
    let Some(server) = postgres_server::shared() else { return };
    a_killed_turn_ends_interrupted_and_runs_nothing_again(Doing::RunningATool, Some(server)).await;
}
