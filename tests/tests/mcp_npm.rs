//! End to end: published MCP servers (@modelcontextprotocol/server-filesystem and
//! server-everything, pinned in tests/npm/package-lock.json) configured as superpi's external
//! servers and called from `superpi run` turns through the mock model, confined by the sandbox.
//!
//! .ci/run installs them outside the repository, in `$SUPERPI_TEST_NPM` (default
//! `~/.cache/superpi/test-npm`). Where they are not installed these tests say so and pass,
//! unless `CI` is set: there they must run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use serde_json::json;
use superpi_tests::TestEnv;

/// A server of the package `package`, run by node from the installed modules.
fn node_server(modules: &std::path::Path, package: &str, args: &[&str]) -> serde_json::Value {
    let script = modules.join("@modelcontextprotocol").join(package).join("dist/index.js");
    let mut argv = vec![script.display().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    json!({"command": "node", "args": argv})
}

fn run(env: &TestEnv, mode: &str, prompt: &str) -> (bool, String, String) {
    let out = env.command(&["run", "--mode", mode, prompt]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn server_filesystem_and_server_everything_round_trip_as_configured_servers() {
    let Some(modules) = superpi_tests::test_npm_modules() else { return };
    let env = TestEnv::new();
    let workspace = env.workspace.canonicalize().unwrap();
    std::fs::write(workspace.join("marker.txt"), "from the workspace").unwrap();
    let settings = json!({
        // The servers' own files (node_modules) are readable inside the sandbox.
        "sandbox": {"extra_read_paths": [modules]},
        "mcp_servers": {
            "fs": node_server(&modules, "server-filesystem", &[&workspace.display().to_string()]),
            "every": node_server(&modules, "server-everything", &["stdio"]),
        },
    });
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();

    let list = format!(r#"@tool mcp__fs__list_directory {{"path":"{}"}}"#, workspace.display());
    let (ok, stdout, stderr) = run(&env, "accept-edits", &list);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("mcp__fs__list_directory returned") && stdout.contains("marker.txt"), "{stdout}\n{stderr}");

    let read = format!(r#"@tool mcp__fs__read_text_file {{"path":"{}"}}"#, workspace.join("marker.txt").display());
    let (ok, stdout, stderr) = run(&env, "accept-edits", &read);
    assert!(ok && stdout.contains("from the workspace"), "{stdout}\n{stderr}");

    // write_file is not read-only: asked in accept-edits (nobody answers: refused), run in auto.
    let write =
        format!(r#"@tool mcp__fs__write_file {{"path":"{}","content":"by fs"}}"#, workspace.join("new.txt").display());
    let (ok, _, stderr) = run(&env, "accept-edits", &write);
    assert!(ok && stderr.contains("blocked"), "{stderr}");
    assert!(!workspace.join("new.txt").exists());
    let (ok, _, stderr) = run(&env, "auto", &write);
    assert!(ok, "{stderr}");
    assert_eq!(std::fs::read_to_string(workspace.join("new.txt")).unwrap(), "by fs");

    // The server refuses paths outside the directories it was given; the sandbox would too.
    let outside = env.path().join("outside.txt");
    let escape = format!(r#"@tool mcp__fs__write_file {{"path":"{}","content":"x"}}"#, outside.display());
    let (ok, _, stderr) = run(&env, "auto", &escape);
    assert!(ok, "{stderr}");
    assert!(!outside.exists(), "{stderr}");

    let (ok, stdout, stderr) = run(&env, "accept-edits", r#"@tool mcp__every__echo {"message":"hello everything"}"#);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("mcp__every__echo returned") && stdout.contains("hello everything"), "{stdout}\n{stderr}");
    let (ok, stdout, stderr) = run(&env, "accept-edits", "@tool mcp__every__get-tiny-image {}");
    assert!(ok && stdout.contains("[image: image/png,"), "an image is described: {stdout}\n{stderr}");
}

/// server-everything's image tool through a model on the OpenAI fake: a model that sees gets
/// the image itself after the result (an `image_url` data URL, checked by the fake's rules)
/// beside its description; a model that does not see reads the description and why, and the
/// call is no error for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_image_reaches_a_model_that_sees_and_is_described_to_one_that_does_not() {
    use superpi_providers::testing::answers::Answer;
    use superpi_providers::testing::fakes::OpenAiFake;
    let Some(modules) = superpi_tests::test_npm_modules() else { return };
    for (model, sees) in [("gpt-4o-mini", true), ("gpt-3.5-turbo", false)] {
        let script = vec![Answer::tool_call("mcp__every__get-tiny-image", json!({})), Answer::text("a tiny image")];
        let fake = OpenAiFake::start(script).await.unwrap();
        let env = TestEnv::new();
        let settings = json!({
            "sandbox": {"extra_read_paths": [modules]},
            "mcp_servers": {"every": node_server(&modules, "server-everything", &["stdio"])},
        });
        std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
        let mut cmd = env.command(&["run", "--mode", "accept-edits", "--model", model, "show me the image"]);
        cmd.envs(fake.env());
        let out = tokio::process::Command::from(cmd).output().await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{model}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "a tiny image", "{model}: {stderr}");
        assert_eq!(fake.rejections(), vec![], "{model}");
        let second = fake.accepted().pop().unwrap();
        let messages = second["messages"].as_array().unwrap();
        let tool = messages.iter().find(|m| m["role"] == "tool").unwrap().to_string();
        assert!(tool.contains("[image: image/png,"), "{model}: described: {tool}");
        let text = second.to_string();
        if sees {
            assert!(text.contains("\"url\":\"data:image/png;base64,"), "{model}: no image part in {text}");
        } else {
            assert!(!text.contains("data:image/png"), "{model}: an image reached a blind model: {text}");
            assert!(tool.contains("(not shown: ") && !tool.contains("The image is not shown"), "{model}: {tool}");
        }
    }
}
