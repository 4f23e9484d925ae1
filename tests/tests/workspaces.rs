//! Managed workspaces (`workspace = "scratch"` and `{ shared = "NAME" }` in harnesses.toml),
//! through the real kernel and the mock model: a shared directory two conversations see, a
//! scratch directory per conversation (and per subagent) that its tools cannot leave (policy
//! and sandbox both), that goes with its conversation, outlives a restart and is swept once
//! unused (and is listed before it is loaded); a hand-off
//! keeps it; as an ordinary user, the librarian's scratch directory is that user's, 0700.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_tests::real_machine::{Machine, NOBODY};
use superpi_tests::{TestEnv, turn_events, wait};

const HARNESSES: &str = r#"
[harnesses.drafts]
tools = ["read", "write", "ls", "bash", "subagent"]
workspace = "scratch"
handoff = ["team-writer", "drafts-review"]

[harnesses.drafts-review]
tools = ["read"]
workspace = "scratch"

[harnesses.team-writer]
tools = ["read", "write"]
workspace = { shared = "team" }

[harnesses.team-reader]
tools = ["read"]
workspace = { shared = "team" }
"#;

/// An environment with those harnesses, and a settings file that lets file tools leave the
/// workspace (which a managed workspace's tools must still not do).
fn env() -> TestEnv {
    let env = TestEnv::new();
    std::fs::write(env.locations.config_dir.join("harnesses.toml"), HARNESSES).unwrap();
    let settings = json!({"permissions": {"allow_outside_workspace": true}});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    env
}

/// A conversation of `harness` in auto mode, opened naming the test's repository as its
/// workspace (which a managed workspace ignores): its id and workspace.
async fn open(env: &TestEnv, client: &KernelClient, harness: &str) -> (i64, PathBuf) {
    let info = client
        .open(OpenParams {
            harness: Some(harness.into()),
            mode: Some("auto".into()),
            workspace: Some(env.workspace.display().to_string()),
            ..Default::default()
        })
        .await
        .unwrap();
    (info.conversation_id, PathBuf::from(info.workspace.expect("a managed workspace")))
}

/// One tool call through the mock model: whether it failed, and its output.
async fn call(client: &KernelClient, conv: i64, tool: &str, args: Value) -> (bool, String) {
    let mut sub = client.watch(WatchParams::live(conv)).await.unwrap();
    let turn = client.submit_text(conv, &format!("@tool {tool} {args}")).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolCompleted { is_error, output, .. } => {
                Some((*is_error, output.as_str().map_or_else(|| output.to_string(), str::to_string)))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool result: {events:?}"))
}

fn scratch(env: &TestEnv, conv: i64) -> PathBuf {
    env.locations.workspaces_dir.canonicalize().unwrap().join("scratch").join(conv.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_conversations_of_a_shared_workspace_see_each_others_files() {
    let env = env();
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let (writer, dir) = open(&env, &client, "team-writer").await;
    let (reader, same) = open(&env, &client, "team-reader").await;
    assert_eq!(dir, same, "one directory for both harnesses naming `team`");
    assert_eq!(dir, env.locations.workspaces_dir.canonicalize().unwrap().join("shared/team"));

    let (failed, out) = call(&client, writer, "write", json!({"path": "plan.md", "content": "ship on friday\n"})).await;
    assert!(!failed, "{out}");
    let (failed, out) = call(&client, reader, "read", json!({"path": "plan.md"})).await;
    assert!(!failed && out.contains("ship on friday"), "the other conversation reads it: {out}");
    assert!(!env.workspace.join("plan.md").exists(), "the caller's workspace was ignored");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
}

/// A hand-off keeps the conversation's directory: one to a harness of another workspace is
/// refused (the conversation stays where it was), one to a harness of the same is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_never_moves_a_conversation_to_another_workspace() {
    let env = env();
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let (conv, dir) = open(&env, &client, "drafts").await;
    let (failed, out) = call(&client, conv, "handoff", json!({"harness": "team-writer"})).await;
    assert!(failed && out.contains("workspace"), "refused, saying why: {out}");
    let (failed, out) = call(&client, conv, "write", json!({"path": "note.md", "content": "kept\n"})).await;
    assert!(!failed, "{out}");
    assert!(dir.join("note.md").exists(), "still in its scratch directory");
    let shared = env.locations.workspaces_dir.join("shared/team/note.md");
    assert!(!shared.exists(), "nothing written to the target's directory");

    let (failed, out) = call(&client, conv, "handoff", json!({"harness": "drafts-review"})).await;
    assert!(!failed, "a scratch harness to a scratch harness: {out}");
    let (failed, out) = call(&client, conv, "read", json!({"path": "note.md"})).await;
    assert!(!failed && out.contains("kept"), "the same directory after it: {out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scratch_conversation_stays_in_its_own_directory_which_goes_with_it() {
    let env = env();
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let (first, first_dir) = open(&env, &client, "drafts").await;
    let (second, second_dir) = open(&env, &client, "drafts").await;
    assert_eq!((first_dir.clone(), second_dir.clone()), (scratch(&env, first), scratch(&env, second)));

    let (failed, out) = call(&client, first, "write", json!({"path": "draft.txt", "content": "first's draft"})).await;
    assert!(!failed, "{out}");
    assert_eq!(std::fs::read_to_string(first_dir.join("draft.txt")).unwrap(), "first's draft");

    // The second conversation reaches for it: the policy refuses the file tools...
    let theirs = first_dir.join("draft.txt").display().to_string();
    let (failed, out) = call(&client, second, "read", json!({"path": theirs})).await;
    assert!(failed && out.contains("outside the workspace") && !out.contains("first's draft"), "{out}");
    let (failed, out) = call(&client, second, "write", json!({"path": theirs, "content": "overwritten"})).await;
    assert!(failed && out.contains("outside the workspace"), "{out}");
    // ...and the sandbox confines a command that tries.
    let line = format!("cat {theirs}; echo overwritten > {theirs}; ls {}", first_dir.display());
    let (_, out) = call(&client, second, "bash", json!({ "command": line })).await;
    assert!(!out.contains("first's draft") && out.contains("Permission denied"), "{out}");
    assert_eq!(std::fs::read_to_string(first_dir.join("draft.txt")).unwrap(), "first's draft");

    // Writes outside its directory fail, into the repository as anywhere else.
    let outside = env.workspace.join("escaped.txt").display().to_string();
    let (failed, out) = call(&client, second, "write", json!({"path": outside, "content": "x"})).await;
    assert!(failed, "{out}");
    let (_, _) = call(&client, second, "bash", json!({ "command": format!("echo x > {outside}") })).await;
    assert!(!env.workspace.join("escaped.txt").exists(), "a write left the scratch directory");
    let (failed, out) = call(&client, second, "bash", json!({"command": "echo mine > mine.txt && cat mine.txt"})).await;
    assert!(!failed && out.contains("mine"), "its own directory is its write root: {out}");
    assert!(second_dir.join("mine.txt").exists());

    // Its subagent of a scratch harness works in a directory of its own.
    let task = format!("@tool write {}", json!({"path": "child.txt", "content": "the child's"}));
    let (failed, out) = call(&client, second, "subagent", json!({"task": task, "harness": "drafts"})).await;
    assert!(!failed, "{out}");
    let others: Vec<PathBuf> = std::fs::read_dir(first_dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|dir| *dir != first_dir && *dir != second_dir)
        .collect();
    let [child_dir] = others.as_slice() else { panic!("one more scratch directory: {others:?}") };
    assert_eq!(std::fs::read_to_string(child_dir.join("child.txt")).unwrap(), "the child's");
    assert!(!second_dir.join("child.txt").exists());

    // Deleting the conversation removes its directory, and only its.
    client.delete(first).await.unwrap();
    assert!(!first_dir.exists(), "the scratch directory went with its conversation");
    assert!(second_dir.join("mine.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_kernel_finds_the_same_scratch_dir_and_sweeps_it_once_unused() {
    let env = env();
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let (conv, dir) = open(&env, &client, "drafts").await;
    let (failed, out) = call(&client, conv, "write", json!({"path": "notes.txt", "content": "kept across"})).await;
    assert!(!failed, "{out}");
    drop(client);
    env.kill_kernel();

    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    // Listed before it is loaded again, with the directory its id names.
    let listed = client.list().await.unwrap().into_iter().find(|c| c.conversation_id == conv).expect("listed");
    assert_eq!(listed.workspace.map(PathBuf::from), Some(dir.clone()), "session.list shows its workspace");
    let (failed, out) = call(&client, conv, "read", json!({"path": "notes.txt"})).await;
    assert!(!failed && out.contains("kept across"), "{out}");
    let info = client.open(OpenParams { conversation_id: Some(conv), ..Default::default() }).await.unwrap();
    assert_eq!(info.workspace.map(PathBuf::from), Some(dir.clone()));
    drop(client);
    env.kill_kernel();

    // With no idle time allowed, the next kernel's sweep removes it (its conversation is not
    // in use), and the conversation gets a fresh one when next used.
    let settings = json!({"scratch_ttl_hours": 0});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    wait::until("the sweep removed the unused scratch directory", wait::PATIENCE, async || {
        (!dir.exists()).then_some(())
    })
    .await;
    let (failed, out) = call(&client, conv, "ls", json!({})).await;
    assert!(!failed && !out.contains("notes.txt"), "{out}");
    assert!(dir.exists());
}

/// As an ordinary user on a developer's machine (home, toolchains, keys), the librarian's
/// default scratch directory is made below the home's state directory, that user's and 0700,
/// and its file tools cannot reach the home's keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_an_ordinary_user_the_librarians_scratch_dir_is_private() {
    let m = Machine::new(Some(NOBODY));
    let call = json!({"path": "summary.md", "content": "# Sources\n"});
    let out = m.superpi(&["run", "--harness", "librarian", &format!("@tool write {call}")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let root = m.home.join(".local/state/superpi/workspaces");
    let dirs: Vec<PathBuf> =
        std::fs::read_dir(root.join("scratch")).unwrap().map(|e| e.unwrap().path()).collect::<Vec<_>>();
    let [dir] = dirs.as_slice() else { panic!("one scratch directory: {dirs:?}") };
    assert_eq!(std::fs::read_to_string(dir.join("summary.md")).unwrap(), "# Sources\n");
    assert!(!m.workspace.join("summary.md").exists(), "not in the repository it ran in");
    let uid: u32 = NOBODY.parse().unwrap();
    let owned = |path: &Path, mode: u32| {
        let meta = std::fs::metadata(path).unwrap();
        assert_eq!((meta.uid(), meta.permissions().mode() & 0o777), (uid, mode), "{}", path.display());
    };
    owned(dir, 0o700);
    owned(&root, 0o700);
    owned(&root.join("scratch"), 0o700);

    let key = m.home.join(".ssh/id_ed25519").display().to_string();
    let out = m.superpi(&["run", "--harness", "librarian", &format!("@tool read {}", json!({"path": key}))]).output();
    let text = String::from_utf8_lossy(&out.unwrap().stdout).to_string();
    assert!(!text.contains("SECRET"), "the home's key stays unread: {text}");
}
