//! End to end: permission rules that last ("always for this project / for me"), through a real
//! kernel with the mock model, and `superpi permissions list|remove|trust|untrust`; a rules file
//! a tool call writes, or another user owns, grants nothing (as root and as an ordinary user,
//! on the fixture home of src/real_machine.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly and run the CLI

use std::time::Duration;

use serde_json::{Value, json};
use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{Event, EventBody};
use superpi_tests::TestEnv;
use superpi_tests::real_machine::{Machine, NOBODY};

/// A new conversation in the test workspace, in accept-edits, watched interactively.
async fn conversation(env: &TestEnv) -> (KernelClient, i64, Subscription) {
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let open = OpenParams {
        workspace: Some(env.workspace.display().to_string()),
        mode: Some("accept-edits".into()),
        ..Default::default()
    };
    let info = client.open(open).await.unwrap();
    let sub = client.watch(WatchParams::live(info.conversation_id).interactive(true)).await.unwrap();
    (client, info.conversation_id, sub)
}

/// Runs `@tool bash` with `line`, answering its questions with `answers` (then none). The
/// turn's events, and the options of each question.
async fn bash(env: &TestEnv, line: &str, answers: &[&str]) -> (Vec<Event>, Vec<Vec<String>>) {
    let (client, conv, mut sub) = conversation(env).await;
    let prompt = format!("@tool bash {}", json!({ "command": line }));
    let turn = client.submit_text(conv, &prompt).await.unwrap();
    let mut answers = answers.iter();
    let (mut events, mut asked) = (Vec::new(), Vec::new());
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), sub.next()).await.expect("event in time").unwrap();
        if let EventBody::PermissionRequest { request_id, options, .. } = &ev.body {
            asked.push(options.iter().map(|o| o.option_id.clone()).collect());
            if let Some(answer) = answers.next() {
                client.respond_permission(request_id, answer).await.unwrap();
            }
        }
        let end = ev.turn_id == Some(turn.turn_id) && ev.body.is_turn_end();
        events.push(ev);
        if end {
            return (events, asked);
        }
    }
}

fn cli(env: &TestEnv, args: &[&str]) -> (bool, String) {
    let out = env.command(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.success(), format!("{}{stderr}", String::from_utf8_lossy(&out.stdout)))
}

fn listed(env: &TestEnv) -> Vec<Value> {
    let out = env.command(&["permissions", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

const TOUCH: &str = "touch made-by-bash";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_rule_outlives_its_conversation_and_the_kernel_until_removed() {
    let env = TestEnv::new();
    let (events, asked) = bash(&env, TOUCH, &["allow_always_project"]).await;
    assert_eq!(
        asked,
        [["allow_once", "allow_always", "reject_once", "reject_always", "allow_always_project", "allow_always_user"]]
    );
    let notice = events.iter().find_map(|e| match &e.body {
        EventBody::Notice { message, .. } if message.contains("allowed from now on") => Some(message.clone()),
        _ => None,
    });
    assert!(notice.unwrap().contains("`touch made-by-bash`"));
    assert!(env.workspace.join("made-by-bash").exists());

    // A new conversation is not asked.
    std::fs::remove_file(env.workspace.join("made-by-bash")).unwrap();
    let (_, asked) = bash(&env, TOUCH, &[]).await;
    assert!(asked.is_empty(), "{asked:?}");
    assert!(env.workspace.join("made-by-bash").exists());

    // Nor after the kernel stopped.
    let (ok, out) = cli(&env, &["kernel", "stop"]);
    assert!(ok, "{out}");
    let (_, asked) = bash(&env, TOUCH, &[]).await;
    assert!(asked.is_empty(), "after a restart: {asked:?}");

    // Listed: the folder is not trusted, so the rule is the user's, scoped to the workspace.
    let rules = listed(&env);
    assert_eq!(rules.len(), 1, "{rules:?}");
    let rule = &rules[0];
    assert_eq!((rule["action"].as_str(), rule["command"].as_str()), (Some("allow"), Some(TOUCH)));
    assert_eq!((rule["tool"].as_str(), rule["source"].as_str()), (Some("bash"), Some("user")));
    let workspace = env.workspace.canonicalize().unwrap();
    assert_eq!(rule["workspace"].as_str(), workspace.to_str());
    let (ok, table) = cli(&env, &["permissions", "list"]);
    assert!(ok && table.contains(rule["id"].as_str().unwrap()) && table.contains(TOUCH), "{table}");

    // Removed by its id: asked again, at the next call, without a restart.
    let (ok, out) = cli(&env, &["permissions", "remove", rule["id"].as_str().unwrap()]);
    assert!(ok && out.contains("removed"), "{out}");
    assert!(listed(&env).is_empty());
    let (_, asked) = bash(&env, TOUCH, &["reject_once"]).await;
    assert_eq!(asked.len(), 1, "asked again once the rule is gone");
    let (ok, out) = cli(&env, &["permissions", "remove", "no-such-rule"]);
    assert!(!ok && out.contains("no permission rule"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_file_grants_only_in_a_trusted_folder() {
    let env = TestEnv::new();
    let rules = json!({"rules": [{"action": "allow", "tool": "bash", "command": "touch *"}]});
    std::fs::create_dir_all(env.workspace.join(".superpi")).unwrap();
    std::fs::write(env.workspace.join(".superpi/permissions.json"), rules.to_string()).unwrap();
    let (events, asked) = bash(&env, TOUCH, &["reject_once"]).await;
    assert_eq!(asked.len(), 1, "an untrusted folder's allow rule does not answer");
    assert!(events.iter().any(|e| e.type_name() == "tool_blocked"));
    assert!(!env.workspace.join("made-by-bash").exists());
    let applies = listed(&env)[0]["ignored"].as_str().map(str::to_string);
    assert_eq!(applies.as_deref(), Some("an allow rule of a folder you do not trust"));

    // Trusted, its file accepted: the same kernel reads it at the next question.
    let (ok, out) = cli(&env, &["permissions", "trust"]);
    assert!(ok && out.contains("with 1 allow rules"), "{out}");
    let (_, asked) = bash(&env, TOUCH, &[]).await;
    assert!(asked.is_empty(), "{asked:?}");
    assert!(env.workspace.join("made-by-bash").exists());
    // The agent cannot write the file that grants it.
    let write = json!({"path": ".superpi/permissions.json", "content": "{}"});
    let (client, conv, mut sub) = conversation(&env).await;
    let turn = client.submit_text(conv, &format!("@tool write {write}")).await.unwrap();
    let blocked = loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), sub.next()).await.expect("event in time").unwrap();
        if let EventBody::ToolBlocked { .. } = &ev.body {
            break true;
        }
        if ev.turn_id == Some(turn.turn_id) && ev.body.is_turn_end() {
            break false;
        }
    };
    assert!(blocked, "writing the rules file is refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_rule_does_not_answer_a_longer_different_command() {
    let env = TestEnv::new();
    let rules = json!({"rules": [{"action": "allow", "tool": "bash", "command": "touch test:*"}]});
    std::fs::write(env.locations.config_dir.join("permissions.json"), rules.to_string()).unwrap();
    let (_, asked) = bash(&env, "touch test:unit", &[]).await;
    assert!(asked.is_empty(), "the prefix rule answers `touch test:unit`: {asked:?}");
    assert!(env.workspace.join("test:unit").exists());
    let (events, asked) = bash(&env, "touch test:unit; rm -rf x", &["reject_once"]).await;
    assert_eq!(asked.len(), 1, "`rm -rf x` is not covered");
    assert!(events.iter().any(|e| e.type_name() == "tool_blocked"));
    let (_, asked) = bash(&env, "touch test:e2e && mkdir x", &["reject_once"]).await;
    assert_eq!(asked[0].len(), 6, "the question about `mkdir x` offers lasting answers");
    let (_, asked) = bash(&env, "mkdir $DIR", &["reject_once"]).await;
    assert_eq!(asked[0].len(), 4, "a word that expands has no exact rule: no lasting answers");
}

/// A script that writes an allow rule for `touch *` into the workspace's rules file: the shell
/// policy sees `sh grant.sh`, not the file it writes.
fn plant_grant_script(workspace: &std::path::Path) {
    let grant = json!({"rules": [{"action": "allow", "tool": "bash", "command": "touch *"}]});
    let script = format!("mkdir -p .superpi && printf '%s' '{grant}' > .superpi/permissions.json\n");
    std::fs::write(workspace.join("grant.sh"), script).unwrap();
}

fn notices(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Notice { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_file_a_shell_call_writes_grants_nothing_until_the_user_trusts_it() {
    let env = TestEnv::new();
    let (ok, out) = cli(&env, &["permissions", "trust"]);
    assert!(ok && out.contains("trusted") && out.contains("has no rules file"), "{out}");
    plant_grant_script(&env.workspace);
    let (_, asked) = bash(&env, "sh grant.sh", &["allow_once"]).await;
    assert_eq!(asked.len(), 1);
    assert!(env.workspace.join(".superpi/permissions.json").exists(), "the tool call wrote the grant");

    // A new conversation is still asked, and told why the file's allow rule does not apply.
    let (events, asked) = bash(&env, TOUCH, &["reject_once"]).await;
    assert_eq!(asked.len(), 1, "the planted allow rule does not answer");
    assert!(!env.workspace.join("made-by-bash").exists());
    let told = notices(&events);
    assert!(told.iter().any(|m| m.contains("changed since you trusted it")), "{told:?}");
    let rules = listed(&env);
    assert_eq!(rules[0]["ignored"], "an allow rule of a file changed since you trusted it", "{rules:?}");
    let (ok, table) = cli(&env, &["permissions", "list"]);
    assert!(ok && table.contains("changed since you trusted it"), "{table}");
    assert!(table.contains("superpi permissions trust"), "says how to accept it: {table}");
    let (ok, doctor) = cli(&env, &["doctor", "--json"]);
    assert!(ok, "{doctor}");
    let doctor: Value = serde_json::from_str(&doctor).unwrap();
    let found = doctor["permission_rules"].to_string();
    assert!(found.contains(".superpi/permissions.json changed since you trusted it"), "{found}");

    // Once the person accepts it, it answers.
    let (ok, out) = cli(&env, &["permissions", "trust"]);
    assert!(ok && out.contains("with 1 allow rules") && out.contains("touch *"), "{out}");
    let (_, asked) = bash(&env, TOUCH, &[]).await;
    assert!(asked.is_empty(), "{asked:?}");
    assert!(env.workspace.join("made-by-bash").exists());
    let (ok, out) = cli(&env, &["permissions", "untrust"]);
    assert!(ok && out.contains("no longer trusted"), "{out}");
    let (_, asked) = bash(&env, TOUCH, &["reject_once"]).await;
    assert_eq!(asked.len(), 1, "untrusted, asked again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_rule_the_kernel_writes_in_a_trusted_folder_holds_across_a_restart() {
    let env = TestEnv::new();
    let (ok, out) = cli(&env, &["permissions", "trust"]);
    assert!(ok, "{out}");
    let (events, _) = bash(&env, TOUCH, &["allow_always_project"]).await;
    let told = notices(&events);
    assert!(told.iter().any(|m| m.contains(".superpi/permissions.json")), "the workspace's file: {told:?}");
    let (ok, out) = cli(&env, &["kernel", "stop"]);
    assert!(ok, "{out}");
    std::fs::remove_file(env.workspace.join("made-by-bash")).unwrap();
    let (events, asked) = bash(&env, TOUCH, &[]).await;
    assert!(asked.is_empty(), "after a restart: {asked:?}");
    assert!(env.workspace.join("made-by-bash").exists());
    assert!(notices(&events).is_empty(), "no false change: {:?}", notices(&events));
    let rules = listed(&env);
    assert_eq!((rules.len(), rules[0]["source"].as_str()), (1, Some("workspace")), "{rules:?}");
    assert!(rules[0]["ignored"].is_null(), "{rules:?}");
    let (ok, table) = cli(&env, &["permissions", "list"]);
    assert!(ok && !table.contains("changed"), "{table}");
}

/// On a developer's machine, as root or an ordinary user: a grant planted by a tool call in
/// `auto` does not answer a later run in `accept-edits` until trusted, and a rules file of
/// another user's is ignored, saying so in `permissions list` and `doctor`.
fn planted_and_foreign_rules_files_grant_nothing(user: Option<&'static str>) {
    let m = Machine::new(user);
    let ok = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{text}");
        text
    };
    let touch = || {
        let call = json!({ "command": "touch made" });
        // In a pipe nobody can answer: an asked call is refused, an allowed one runs.
        let _ = m.superpi(&["run", "--mode", "accept-edits", &format!("@tool bash {call}")]).output().unwrap();
        std::fs::remove_file(m.workspace.join("made")).is_ok()
    };
    ok(&mut m.superpi(&["permissions", "trust"]));
    plant_grant_script(&m.workspace);
    m.bash("sh grant.sh");
    let rules_file = m.workspace.join(".superpi/permissions.json");
    assert!(rules_file.exists(), "the tool call wrote the grant");
    assert!(!touch(), "the planted grant does not answer");
    let listed = ok(&mut m.superpi(&["permissions", "list"]));
    assert!(listed.contains("changed since you trusted it"), "{listed}");
    ok(&mut m.superpi(&["permissions", "trust"]));
    assert!(touch(), "accepted, it answers");

    // Another user's file: ignored, whoever runs superpi (uid 1 is neither root nor nobody).
    std::os::unix::fs::chown(&rules_file, Some(1), None).unwrap();
    assert!(!touch(), "another user's rules file grants nothing");
    let listed = ok(&mut m.superpi(&["permissions", "list"]));
    assert!(listed.contains("is owned by another user (uid 1)"), "{listed}");
    let doctor = ok(&mut m.superpi(&["doctor"]));
    assert!(doctor.contains(&format!("{} is owned by another user", rules_file.display())), "{doctor}");
}

#[test]
fn planted_and_foreign_rules_files_grant_nothing_as_root() {
    planted_and_foreign_rules_files_grant_nothing(None);
}

#[test]
fn planted_and_foreign_rules_files_grant_nothing_as_an_ordinary_user() {
    planted_and_foreign_rules_files_grant_nothing(Some(NOBODY));
}
