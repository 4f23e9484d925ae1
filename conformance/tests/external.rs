//! The runner pointed at one other implementation checks that one only: server-everything
//! (pinned in tests/npm, installed by .ci/run in `$SUPERPI_TEST_NPM`) over stdio, with no
//! superpi gateway beside it; and an ACP agent whose session/new fails gets its later checks
//! shown as not run, never a message the runner made up (every message passes the schema).
//!
//! They need the conformance clients (`npm ci` in conformance/) and, for the first, the npm
//! MCP servers; where those are missing they say so and pass, unless `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn conformance_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Whether `what` is there; where it is not, says so (and fails under CI).
fn ready(what: &str, path: &Path, how: &str) -> bool {
    if path.exists() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "{what} is not installed ({}): {how}", path.display());
    eprintln!("SKIPPED: {what} is not installed ({}): {how}", path.display());
    false
}

fn clients() -> bool {
    ready("the conformance clients", &conformance_dir().join("node_modules"), "run `npm ci` in conformance/")
}

fn runner(args: &[&str]) -> Output {
    // No superpi binary is given: a run pointed elsewhere must not need one.
    Command::new(env!("CARGO_BIN_EXE_superpi-conformance"))
        .args(args)
        .args(["--superpi", "/nonexistent/superpi"])
        .output()
        .unwrap()
}

fn table(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The result column of the row `check`.
fn result<'a>(table: &'a str, check: &str) -> &'a str {
    let line = table.lines().find(|l| l.contains(check)).unwrap_or_else(|| panic!("no row {check:?} in\n{table}"));
    line[line.find(check).unwrap() + check.len()..].trim()
}

#[test]
fn server_everything_over_stdio_is_checked_alone() {
    let modules = match std::env::var_os("SUPERPI_TEST_NPM") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/superpi/test-npm"),
    }
    .join("node_modules");
    let server = modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let how = "copy tests/npm/package*.json to $SUPERPI_TEST_NPM and run `npm ci` there, as .ci/run does";
    if !clients() || !ready("server-everything", &server, how) {
        return;
    }
    let command = format!("node '{}' stdio", server.display());
    let out = runner(&["--protocol", "mcp", "--mcp-command", &command]);
    let table = table(&out);
    // server-everything speaks the 2025 revisions only: the v2 client pinned to 2026-07-28
    // fails to connect, as that mode is meant to (THIRD_PARTY.md records the same); auto falls
    // back. That is the one failure of the run.
    let pinned = "sdk-v2 stdio pinned 2026-07-28: negotiates, lists, calls a tool";
    assert!(result(&table, pinned).contains("did not offer pinned protocol version 2026-07-28"), "{table}");
    assert_eq!(result(&table, "sdk-v2 stdio auto: negotiates, lists, calls a tool"), "pass", "{table}");
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        assert_eq!(
            result(&table, &format!("sdk stdio {version}: initialize, ping, list tools/prompts/resources")),
            "pass"
        );
    }
    // No gateway of superpi's was started and checked beside it.
    assert!(result(&table, "sdk http (every check)").starts_with("skip: no Streamable HTTP endpoint"), "{table}");
    assert!(result(&table, "suite (every server scenario)").starts_with("skip:"), "{table}");
    assert!(!table.contains("suite server-initialize"), "{table}");
    // superpi's own MCP client is not logged in to OAuth servers in a run pointed elsewhere.
    assert!(result(&table, "suite client auth/* (superpi mcp login)").starts_with("skip:"), "{table}");
    let ours = "sdk stdio: superpi's tools, prompts, resources, progress, logging, errors";
    assert!(result(&table, ours).starts_with("skip:"), "{table}");
    assert!(table.trim_end().ends_with("1 failed, 0 known"), "{table}");
    assert!(!out.status.success(), "a failed check fails the run: {table}");
}

/// An ACP agent (a few lines of node) that answers initialize and refuses everything else.
const REFUSING_AGENT: &str = r#"
const rl = require("node:readline").createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const answer = m.method === "initialize"
    ? { result: { protocolVersion: 1, agentCapabilities: {}, authMethods: [] } }
    : { error: { code: m.method === "session/new" ? -32000 : -32601, message: `no ${m.method} here` } };
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, ...answer }) + "\n");
});
"#;

#[test]
fn checks_after_a_failed_session_new_are_not_run() {
    if !clients() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.cjs");
    std::fs::write(&agent, REFUSING_AGENT).unwrap();
    let command = format!("node '{}'", agent.display());
    let out = runner(&["--protocol", "acp", "--acp-command", &command]);
    let table = table(&out);
    assert_eq!(out.status.code(), Some(1), "{table}");
    assert_eq!(result(&table, "initialize: protocol version 1 and capabilities"), "pass");
    assert!(result(&table, "session/new").starts_with("FAIL: ") && table.contains("no session/new here"), "{table}");
    let prompt = result(&table, "session/prompt: text turn streams chunks and ends with a stop reason");
    assert_eq!(prompt, "not run: session/new failed above");
    assert_eq!(result(&table, "a request for an unknown method gets -32601"), "pass");
    // The runner sent nothing invalid (no session/prompt without a sessionId).
    let schema = table.lines().find(|l| l.contains("valid against schema/v1/schema.json")).unwrap();
    assert!(schema.trim_end().ends_with("pass"), "{table}");
    assert!(table.trim_end().ends_with("passed, 1 failed, 0 known"), "{table}");
}
