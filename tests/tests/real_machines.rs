//! A developer's own machine, with default settings: a home directory with rustup's layout
//! (a hard-linked copy of this machine's `~/.cargo` and `~/.rustup`, cached crates in
//! `~/.cargo/registry`), pyenv's python, a `~/.gitconfig`, a repository under the home
//! directory, and a secret in every denied location. Through `superpi run` and the mock model,
//! as root and as an ordinary user (setpriv, as sandbox/tests/nonroot.rs): git, cargo build and
//! test offline, pytest, npm test and go test (a module from the module cache) work; a fetch
//! without network says it was refused the network; every
//! secret read is refused; nothing
//! outside the workspace changes. An MCP server installed under the home starts, with the
//! user's npm settings but not their token; one that dies reading a secret is reported in one
//! line naming the path. Through `superpi mcp` (OpenCode's path) the same git works and the
//! same secrets stay unread; an ACP editor's MCP server installed under the home attaches and
//! answers. (The fixture itself: src/real_machine.rs.)
//!
//! It needs what CI has: root, setpriv, node and npm, git, rustup's cargo in /root/.cargo with
//! `itoa` in its registry, python3 with pytest, Go (.ci/run installs Debian's packages).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use superpi_tests::real_machine::{Machine, NOBODY, SECRETS};
use superpi_tests::stdio::Stdio2;

/// Every path under `dir` but those under `skip`, with its size, mode and mtime.
fn snapshot(dir: &Path, skip: &[&Path], into: &mut BTreeMap<PathBuf, (u64, u32, i64, i64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if skip.iter().any(|s| path.starts_with(s)) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        // A folder above superpi's own (`~/.local/state` above its managed workspaces) may be
        // made or gain that entry on a first run: only what else it holds is compared.
        if !skip.iter().any(|s| s.starts_with(&path)) {
            into.insert(path.clone(), (meta.size(), meta.mode(), meta.mtime(), meta.mtime_nsec()));
        }
        if meta.is_dir() {
            snapshot(&path, skip, into);
        }
    }
}

/// Everything outside the workspace and superpi's own directories (data, config, runtime, managed
/// workspaces), to compare before and after.
fn outside(m: &Machine) -> BTreeMap<PathBuf, (u64, u32, i64, i64)> {
    let (data, run) = (m.home.join(".local/share/superpi"), m.home.with_file_name("run"));
    let workspaces = m.home.join(".local/state/superpi");
    let skip = [m.workspace.as_path(), data.as_path(), run.as_path(), &m.home.join(".config/superpi"), &workspaces];
    let mut into = BTreeMap::new();
    snapshot(m.home.parent().unwrap(), &skip, &mut into);
    into
}

fn assert_unchanged(before: &BTreeMap<PathBuf, (u64, u32, i64, i64)>, after: &BTreeMap<PathBuf, (u64, u32, i64, i64)>) {
    let changed: Vec<_> = after.iter().filter(|(p, v)| before.get(*p) != Some(v)).map(|(p, _)| p).collect();
    let gone: Vec<_> = before.keys().filter(|p| !after.contains_key(*p)).collect();
    assert!(changed.is_empty() && gone.is_empty(), "outside the workspace changed: {changed:?} {gone:?}");
}

fn a_developer_machine_works_with_default_settings(user: Option<&'static str>) {
    let m = Machine::new(user);
    let before = outside(&m);

    m.bash(
        "mkdir -p out; echo change >> src/lib.rs; git status --short > out/status 2>&1; git diff > out/diff 2>&1; \
         git add -A && git commit -qm 'from the agent' > out/commit 2>&1; git log --format='%an <%ae> %s' > out/log 2>&1; \
         git stash list > out/stash 2>&1; git switch -qc feature > out/switch 2>&1 && git branch --show-current >> out/switch; \
         git checkout -q HEAD~1 -- src/lib.rs",
    );
    assert_eq!(m.out("status"), " M src/lib.rs\n");
    assert!(m.out("diff").contains("+change"), "{}", m.out("diff"));
    assert_eq!(
        m.out("log"),
        "Dev Eloper <dev@example.test> from the agent\nDev Eloper <dev@example.test> init\n",
        "{}",
        m.out("commit")
    );
    assert_eq!(m.out("switch"), "feature\n");

    m.bash("cargo build > out/build 2>&1 && cargo test > out/test 2>&1; echo $? >> out/test");
    assert!(m.out("build").contains("Compiling itoa"), "{}", m.out("build"));
    assert!(
        m.out("test").contains("test result: ok. 1 passed") && m.out("test").ends_with("\n0\n"),
        "{}",
        m.out("test")
    );

    m.bash(
        "python3 -m pytest -q -p no:cacheprovider > out/python 2>&1; echo $? >> out/python; \
         npm test > out/npm 2>&1; echo $? >> out/npm; go test ./... > out/go 2>&1; echo $? >> out/go",
    );
    assert!(m.out("python").contains("1 passed") && m.out("python").ends_with("\n0\n"), "{}", m.out("python"));
    assert!(m.out("go").contains("ok  \tdemo") && m.out("go").ends_with("\n0\n"), "{}", m.out("go"));
    assert!(m.out("npm").contains("npm test passed") && m.out("npm").ends_with("\n0\n"), "{}", m.out("npm"));

    // A fetch without network is refused, and the result says so from the refused sockets.
    let fetch = json!({"command": "git fetch -q https://example.com/demo.git"});
    let (_, stdout, stderr) = run(&m, &format!("@tool bash {fetch}"));
    // (The mock model quotes the head of the result.)
    assert!(stdout.contains("`git-remote-http` tried to open an internet connection"), "{stdout}\n{stderr}");

    let cats: Vec<String> = SECRETS.iter().map(|s| format!("cat ~/{s} >> out/secrets 2>&1")).collect();
    m.bash(&format!(
        "{}; ls ~/.ssh ~/.config/gh >> out/secrets 2>&1; \
         echo x > ~/planted; echo x >> ~/.gitconfig; echo x > ~/.cargo/registry/planted; echo x > ../planted; \
         echo x >> ~/.cargo/bin/cargo; true",
        cats.join("; ")
    ));
    let secrets = m.out("secrets");
    assert!(!secrets.contains("SECRET"), "{secrets}");
    assert_eq!(secrets.matches("Permission denied").count(), SECRETS.len() + 2, "{secrets}");

    assert_unchanged(&before, &outside(&m));
}

#[test]
fn a_developer_machine_as_root() {
    a_developer_machine_works_with_default_settings(None);
}

#[test]
fn a_developer_machine_as_an_ordinary_user() {
    a_developer_machine_works_with_default_settings(Some(NOBODY));
}

/// `superpi run` with a prompt: (success, stdout, stderr).
fn run(m: &Machine, prompt: &str) -> (bool, String, String) {
    let out = m.superpi(&["run", "--mode", "auto", prompt]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn an_mcp_server_under_the_home_starts_with_npm_settings_but_no_token_and_a_refusal_is_one_line() {
    let m = Machine::new(Some(NOBODY));
    let server = m.home.join(".local/share/fix-server/bin/mcp_fixture");
    std::fs::create_dir_all(server.parent().unwrap()).unwrap();
    std::fs::copy(superpi_tests::mcp_fixture_bin(), &server).unwrap();
    let npmrc = m.home.join(".npmrc");
    std::fs::write(&npmrc, "registry=https://npm.example.test/\n//npm.example.test/:_authToken=SECRET\n").unwrap();
    // A server that reads a secret at start and dies of it.
    let nosy = m.home.join(".local/bin/nosy-mcp");
    superpi_tests::real_machine::write(&nosy, &format!("#!/bin/sh\ncat {}\nexit 1\n", npmrc.display()));
    std::fs::set_permissions(&nosy, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let settings = serde_json::json!({"mcp_servers": {"fix": {"command": server}, "nosy": {"command": nosy}}});
    superpi_tests::real_machine::write(&m.home.join(".config/superpi/settings.json"), &settings.to_string());

    let copy = m.home.join(".local/share/superpi/mcp/fix/npmrc");
    let read = |path: &Path| run(&m, &format!(r#"@tool mcp__fix__read_file {{"path":"{}"}}"#, path.display()));
    let (ok, stdout, stderr) = read(&copy);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("registry=https://npm.example.test/") && !stdout.contains("SECRET"), "{stdout}\n{stderr}");
    let refusal = format!("cat: {}: Permission denied", npmrc.display());
    let notice = stderr.lines().find(|l| l.contains("`nosy`")).unwrap_or_default();
    assert!(notice.contains(&refusal), "the notice names the refused path in one line: {stderr}");
    let (_, stdout, stderr) = read(&npmrc);
    assert!(!stdout.contains("SECRET") && !stderr.contains("SECRET"), "{stdout}\n{stderr}");
}

/// One `bash` call through `superpi mcp`: its text and whether it is an error.
async fn mcp_bash(mcp: &mut Stdio2, id: u64, command: &str) -> (String, bool) {
    let call = json!({"name": "bash", "arguments": {"command": command}});
    let result = mcp.call(id, "tools/call", call, |_| None).await;
    let text = result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
    (text, result["isError"] == json!(true))
}

#[tokio::test]
async fn through_superpi_mcp_git_works_and_secrets_stay_unread_as_an_ordinary_user() {
    let m = Machine::new(Some(NOBODY));
    let before = outside(&m);
    let mut mcp = Stdio2::spawn(m.superpi(&["mcp"]));
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "opencode", "version": "0"}});
    mcp.call(0, "initialize", init, |_| None).await;
    mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    let (status, failed) = mcp_bash(&mut mcp, 1, "echo change >> src/lib.rs; git status --short").await;
    assert!(!failed && status.contains(" M src/lib.rs"), "{status}");
    let (log, failed) =
        mcp_bash(&mut mcp, 2, "git commit -qam 'from opencode' && git log --format='%an <%ae> %s'").await;
    assert!(!failed, "{log}");
    assert!(log.contains("Dev Eloper <dev@example.test> from opencode\nDev Eloper <dev@example.test> init"), "{log}");

    let cats: Vec<String> = SECRETS.iter().map(|s| format!("cat ~/{s}")).collect();
    // Attributes too: landlock does not govern them; the read-only mounts keep them.
    let attributes = "chmod 777 ~/.gitconfig; touch -d 2001-01-01 ~/.gitconfig";
    let (secrets, failed) =
        mcp_bash(&mut mcp, 3, &format!("{}; echo x > ~/planted; {attributes}", cats.join("; "))).await;
    assert!(failed && !secrets.contains("SECRET"), "{secrets}");
    // The write outside meets the read-only mounts (made in a user namespace for this user)
    // before landlock.
    let refused = secrets.matches("Permission denied").count() + secrets.matches("Read-only file system").count();
    assert_eq!(refused, SECRETS.len() + 3, "{secrets}");
    drop(mcp);
    assert_unchanged(&before, &outside(&m));
}

#[tokio::test]
async fn an_acp_editors_mcp_server_under_the_home_attaches_and_answers_as_an_ordinary_user() {
    let m = Machine::new(Some(NOBODY));
    let server = m.home.join(".local/share/fix-server/bin/mcp_fixture");
    std::fs::create_dir_all(server.parent().unwrap()).unwrap();
    std::fs::copy(superpi_tests::mcp_fixture_bin(), &server).unwrap();
    let mut acp = Stdio2::spawn(m.superpi(&["acp"]));
    acp.call(0, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}), |_| None).await;
    let servers = json!([{"name": "fix", "command": server, "args": [], "env": []}]);
    let session = acp.call(1, "session/new", json!({"cwd": m.workspace, "mcpServers": servers}), |_| None).await;

    let mut updates: Vec<Value> = Vec::new();
    let prompt = json!({"sessionId": session["sessionId"], "prompt": [
        {"type": "text", "text": "@tool mcp__fix__echo {\"text\": \"from the editor's server\"}"}]});
    let done = acp.prompt_allowing(2, prompt, |update| updates.push(update.clone())).await;
    assert_eq!(done["stopReason"], json!("end_turn"), "{done}");
    let answered = updates.iter().any(|u| {
        u["sessionUpdate"] == json!("tool_call_update")
            && u["status"] == json!("completed")
            && u.to_string().contains("echo: from the editor's server")
    });
    assert!(answered, "the server's tool answered: {updates:#?}");
}
