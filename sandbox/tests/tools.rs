//! The built-in tools: normal use, bad arguments (a clear error naming the field), paths
//! outside the workspace (refused by the tool itself).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Env;
use serde_json::{Value, json};
use superpi_sandbox::Effect;

fn env() -> Env {
    let env = Env::new();
    common::assert_confinement_available(&env);
    env
}

fn write(env: &Env, rel: &str, content: &str) {
    let p = env.workspace.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

#[test]
fn the_catalogue_lists_seven_tools_with_schemas_and_effects() {
    let env = env();
    let tools = env.sandbox.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read", "write", "edit", "bash", "grep", "find", "ls"]);
    for t in &tools {
        assert_eq!(t.input_schema["type"], "object", "{}", t.name);
        assert!(t.output_schema.is_some(), "{}", t.name);
        assert!(!t.effects.is_empty(), "{}", t.name);
    }
    let bash = tools.iter().find(|t| t.name == "bash").unwrap();
    assert!(bash.effects.contains(&Effect::Exec));
    assert_eq!(tools[0].effects, [Effect::Read]);
}

#[tokio::test]
async fn read_numbers_lines_and_pages() {
    let env = env();
    let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(&env, "f.txt", &body);
    let out = env.run("read", json!({"path": "f.txt"})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.output.starts_with("     1\tline 1\n"), "{out:?}");
    assert_eq!(out.structured.as_ref().unwrap()["total_lines"], 10);
    std::fs::write(env.workspace.join("nonl.txt"), "a\nb\nc").unwrap();
    let out = env.run("read", json!({"path": "nonl.txt", "limit": 1})).await;
    assert_eq!(out.structured.as_ref().unwrap()["total_lines"], 3, "{out:?}");
    let out = env.run("read", json!({"path": "f.txt", "offset": 4, "limit": 2})).await;
    assert_eq!(out.output.lines().take(2).collect::<Vec<_>>(), ["     4\tline 4", "     5\tline 5"]);
    assert!(out.output.contains("continue with offset=6"), "{out:?}");
    assert_eq!(out.structured.as_ref().unwrap()["truncated"], true);
}

#[tokio::test]
async fn read_refuses_binary_and_bad_arguments() {
    let env = env();
    std::fs::write(env.workspace.join("b.bin"), [0u8, 1, 2, 3, 0, 9]).unwrap();
    let out = env.run("read", json!({"path": "b.bin"})).await;
    assert!(out.is_error && out.output.contains("binary"), "{out:?}");
    let out = env.run("read", json!({})).await;
    assert!(out.is_error && out.output.contains("`path`"), "{out:?}");
    let out = env.run("read", json!({"path": 3})).await;
    assert!(out.is_error && out.output.contains("`path` must be a string"), "{out:?}");
    let out = env.run("read", json!({"path": "x", "offset": 0})).await;
    assert!(out.is_error && out.output.contains("`offset`"), "{out:?}");
    let out = env.run("read", json!({"path": "x", "bogus": 1})).await;
    assert!(out.is_error && out.output.contains("unknown field `bogus`"), "{out:?}");
    let out = env.run("read", json!({"path": "missing.txt"})).await;
    assert!(out.is_error && out.output.contains("no such file"), "{out:?}");
    let out = env.run("read", json!({"path": "/etc/hostname"})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
    let out = env.run("read", Value::String("nope".into())).await;
    assert!(out.is_error && out.output.contains("JSON object"), "{out:?}");
}

/// An image file is read as an image (its format from its bytes, whatever its name), up to
/// 5 MiB; a larger one is refused saying so.
#[tokio::test]
async fn read_returns_an_image_file_as_an_image() {
    let env = env();
    // A 1x1 PNG, named as if it were text: the bytes decide.
    let png: [u8; 70] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
        0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f, 0x0f, 0x00, 0x02, 0x87, 0x01, 0x80,
        0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    std::fs::write(env.workspace.join("pixel.txt"), png).unwrap();
    let out = env.run("read", json!({"path": "pixel.txt"})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.images.len(), 1, "{out:?}");
    assert_eq!(out.images[0].media_type, "image/png");
    assert_eq!(
        out.images[0].data,
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    );
    assert_eq!(out.structured.as_ref().unwrap()["media_type"], "image/png");
    assert!(out.output.contains("image/png, 70 bytes"), "{out:?}");

    let mut gif = b"GIF89a".to_vec();
    gif.resize(6 * 1024 * 1024, 0);
    std::fs::write(env.workspace.join("big.gif"), gif).unwrap();
    let out = env.run("read", json!({"path": "big.gif"})).await;
    assert!(out.is_error && out.output.contains("image/gif") && out.output.contains("5 MiB"), "{out:?}");
    assert!(out.images.is_empty());
}

#[tokio::test]
async fn write_creates_parents_and_replaces_atomically() {
    let env = env();
    let out = env.run("write", json!({"path": "deep/er/new.txt", "content": "hello\n"})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.structured.as_ref().unwrap()["created"], true);
    assert_eq!(std::fs::read_to_string(env.workspace.join("deep/er/new.txt")).unwrap(), "hello\n");
    let out = env.run("write", json!({"path": "deep/er/new.txt", "content": "bye\n"})).await;
    assert_eq!(out.structured.as_ref().unwrap()["created"], false);
    assert_eq!(std::fs::read_to_string(env.workspace.join("deep/er/new.txt")).unwrap(), "bye\n");
    let leftovers: Vec<_> = std::fs::read_dir(env.workspace.join("deep/er")).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temp file left behind");
    let out = env.run("write", json!({"path": "x.txt"})).await;
    assert!(out.is_error && out.output.contains("missing required field `content`"), "{out:?}");
}

#[tokio::test]
async fn edit_replaces_exactly_once_with_a_diff() {
    let env = env();
    write(&env, "e.rs", "fn a() {}\nfn b() {}\nfn a2() {}\n");
    let out = env.run("edit", json!({"path": "e.rs", "old_string": "fn b()", "new_string": "fn bee()"})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("e.rs")).unwrap(), "fn a() {}\nfn bee() {}\nfn a2() {}\n");
    let diff = out.details.as_ref().unwrap()["diff"].as_str().unwrap().to_string();
    assert!(diff.contains("-fn b() {}") && diff.contains("+fn bee() {}"), "{diff}");

    let out = env.run("edit", json!({"path": "e.rs", "old_string": "fn a", "new_string": "fn z"})).await;
    assert!(out.is_error && out.output.contains("matches 2 times"), "{out:?}");
    let out = env.run("edit", json!({"path": "e.rs", "old_string": "nope", "new_string": "x"})).await;
    assert!(out.is_error && out.output.contains("not found"), "{out:?}");
    let out =
        env.run("edit", json!({"path": "e.rs", "old_string": "fn a", "new_string": "fn z", "replace_all": true})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.structured.as_ref().unwrap()["replacements"], 2);
    let out =
        env.run("edit", json!({"path": "e.rs", "old_string": "x", "new_string": "y", "replace_all": "yes"})).await;
    assert!(out.is_error && out.output.contains("`replace_all`"), "{out:?}");
}

#[tokio::test]
async fn grep_honours_gitignore_and_caps_matches() {
    let env = env();
    write(&env, ".gitignore", "ignored/\n");
    write(&env, "src/a.rs", "needle one\nhay\nneedle two\n");
    write(&env, "src/b.txt", "needle three\n");
    write(&env, "ignored/c.rs", "needle hidden\n");
    let out = env.run("grep", json!({"pattern": "needle"})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.output.contains("src/a.rs:1:needle one"), "{out:?}");
    assert!(out.output.contains("src/a.rs:3:needle two"), "{out:?}");
    assert!(!out.output.contains("hidden"), "{out:?}");
    let out = env.run("grep", json!({"pattern": "needle", "glob": "*.rs"})).await;
    assert_eq!(out.structured.as_ref().unwrap()["matches"].as_array().unwrap().len(), 2, "{out:?}");
    let out = env.run("grep", json!({"pattern": "needle", "limit": 1})).await;
    assert_eq!(out.structured.as_ref().unwrap()["truncated"], true, "{out:?}");
    let out = env.run("grep", json!({"pattern": "NEEDLE ONE", "ignore_case": true})).await;
    assert!(out.output.contains("needle one"), "{out:?}");
    let out = env.run("grep", json!({"pattern": "("})).await;
    assert!(out.is_error && out.output.contains("`pattern`"), "{out:?}");
    let out = env.run("grep", json!({"pattern": "(", "literal": true})).await;
    assert!(!out.is_error, "{out:?}");
}

#[tokio::test]
async fn find_globs_and_ls_lists() {
    let env = env();
    write(&env, ".gitignore", "target/\n");
    write(&env, "src/a.rs", "");
    write(&env, "src/deep/b.rs", "");
    write(&env, "target/c.rs", "");
    write(&env, "README.md", "");
    write(&env, ".github/ci.yml", "");
    write(&env, ".git/config", "");
    let out = env.run("find", json!({"pattern": "**/*.rs"})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.structured.as_ref().unwrap()["paths"], json!(["src/a.rs", "src/deep/b.rs"]));
    let out = env.run("find", json!({"pattern": "*.yml"})).await;
    assert_eq!(out.structured.as_ref().unwrap()["paths"], json!([".github/ci.yml"]));
    let out = env.run("find", json!({"pattern": "config"})).await;
    assert_eq!(out.structured.as_ref().unwrap()["paths"], json!([]), "the .git directory is skipped");
    let out = env.run("find", json!({"pattern": "["})).await;
    assert!(out.is_error && out.output.contains("`pattern`"), "{out:?}");
    let out = env.run("ls", json!({})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        out.structured.as_ref().unwrap()["entries"],
        json!([".github/", ".gitignore", "README.md", "src/", "target/"]),
        "listing skips protected paths (.git) like searching does"
    );
    let out = env.run("ls", json!({"path": "src", "limit": 1})).await;
    assert_eq!(out.structured.as_ref().unwrap()["truncated"], true);
    let out = env.run("ls", json!({"path": ".."})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
}

#[tokio::test]
async fn bash_reports_exit_codes_and_bad_arguments() {
    let env = env();
    let out = env.bash("echo out; echo err >&2; exit 3").await;
    assert!(out.is_error);
    assert!(out.output.contains("out\nerr\n") && out.output.contains("[exit code 3]"), "{out:?}");
    assert_eq!(out.structured.as_ref().unwrap()["exit_code"], 3);
    let out = env.run("bash", json!({})).await;
    assert!(out.is_error && out.output.contains("`command`"), "{out:?}");
    let out = env.run("bash", json!({"command": "pwd", "cwd": "sub"})).await;
    assert!(out.is_error && out.output.contains("`cwd`"), "{out:?}");
    std::fs::create_dir(env.workspace.join("sub")).unwrap();
    let out = env.run("bash", json!({"command": "pwd", "cwd": "sub"})).await;
    assert_eq!(out.output.trim(), env.workspace.join("sub").display().to_string());
    let out = env.run("bash", json!({"command": "pwd", "cwd": ".."})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
    let out = env.run("bash", json!({"command": "pwd", "timeout": -1})).await;
    assert!(out.is_error && out.output.contains("`timeout`"), "{out:?}");
    let out = env.run("nope", json!({})).await;
    assert!(out.is_error && out.output.contains("unknown tool"), "{out:?}");
}
