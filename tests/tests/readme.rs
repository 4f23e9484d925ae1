//! The READMEs are executable documentation (issue 40): every command of every shell block of
//! README.md, frontends/*/README.md and kernel/policy/SETTINGS.md runs as written against the
//! built binary with the mock model, in private directories (a [`TestEnv`] per file), its exit
//! status and the output the README shows checked; the settings examples of SETTINGS.md and
//! README.md are written to the file they document and loaded. How each kind of line runs is
//! the table [`KINDS`]; what the READMEs' placeholders stand for is [`STANDS_FOR`]; a line of
//! no kind fails, saying how to add one, so a README change that breaks a command, or a new
//! command nobody classified, fails CI. Programs a line needs (`curl`, `jq`, ...) must be
//! installed where `CI` is set (.ci/run installs them); elsewhere their lines are skipped,
//! saying so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // a test: spawns and fails loudly

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;

use serde_json::Value;
use superpi_tests::readme::{self, Block};
use superpi_tests::{KillOnDrop, TestEnv, superpi_bin, wait};

/// How a kind of line is run.
#[derive(Clone, Copy, Debug)]
enum Run {
    /// Through bash as written (pipes, `$(...)`, `VAR=value` prefixes), to its end: exit 0.
    ToExit,
    /// As written, with this on stdin; its stdout must hold the second string.
    WithInput(&'static str, &'static str),
    /// A server: started with `--port 0` for a fixed port, checked to answer, kept until its
    /// README's commands are done (or `superpi kernel stop` stops it).
    Serve(Served),
    /// Against the server of its port: one the README started, else the one its port is the
    /// default of ([`DEFAULT_PORTS`]), started for it. `/events` streams are read until their
    /// snapshot and kept open until the block ends.
    Curl,
    /// Not run here, and why; .ci/run must run it (the line itself, or the text given).
    InCi(Option<&'static str>),
    /// Run with a local stand-in for what it needs (the reason says which).
    StandIn(StandIn),
}

#[derive(Clone, Copy, Debug)]
enum Served {
    Http,
    RpcUnix,
    RpcTcp,
    Kernel,
}

#[derive(Clone, Copy, Debug)]
enum StandIn {
    CargoRun,
    NpxServer,
    Postgres,
}

#[derive(Debug)]
struct Kind {
    /// The command, leading `NAME=value` assignments aside; `*` stands for any text.
    pattern: &'static str,
    run: Run,
    why: &'static str,
}

const RPC_REQUEST: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"workspace.metadata\"}\n";
const MCP_INITIALIZE: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"readme\",\"version\":\"1\"}}}\n";
const ACP_INITIALIZE: &str =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n";

/// Every kind of line the READMEs hold, the first match winning. A line `NAME=value` alone
/// sets a variable for the lines after it (`TS=$(date +%s)`), evaluated by bash.
const KINDS: &[Kind] = &[
    Kind {
        pattern: "cargo run --release -- *",
        run: Run::StandIn(StandIn::CargoRun),
        why: "`cargo run -- ARGS` is `superpi ARGS` of a fresh build: the built binary runs ARGS",
    },
    Kind { pattern: "cargo fmt --all --check && *", run: Run::InCi(None), why: "the house rules and the tests" },
    Kind {
        pattern: "cargo build -p superpi-cli && cargo run -p superpi-conformance*",
        run: Run::InCi(Some("cargo run -p superpi-conformance")),
        why: "the official clients against every frontend (minutes; needs the npm clients)",
    },
    Kind {
        pattern: "cargo build -p superpi-cli*",
        run: Run::InCi(Some("cargo build --workspace --bins")),
        why: "the build the tests run on",
    },
    Kind {
        pattern: "tar -xzf superpi-*",
        run: Run::InCi(Some("bash .ci/dist")),
        why: "a release archive (a release build, minutes): .ci/dist builds it with `cargo xtask \
              dist`, unpacks it into a clean prefix and runs superpi, ACP and MCP from there",
    },
    Kind {
        pattern: "npx -y superpi *",
        run: Run::InCi(Some("bash .ci/dist")),
        why: "the npm package is not published: .ci/dist installs the tarballs `cargo xtask dist` \
              packs into an empty prefix offline and drives `superpi acp` through npx",
    },
    Kind {
        pattern: "sudo *",
        run: Run::InCi(Some("bash .ci/dist")),
        why: "a system service (root and a live systemd): .ci/dist checks the unit file with \
              `systemd-analyze verify` against an unpacked archive",
    },
    Kind {
        pattern: "install -Dm644 * ~/.config/systemd/user/*",
        run: Run::InCi(Some("bash .ci/dist")),
        why: "a user service (a live systemd): .ci/dist checks the unit file with \
              `systemd-analyze verify --user` against an unpacked archive",
    },
    Kind {
        pattern: "systemctl --user *",
        run: Run::InCi(Some("bash .ci/dist")),
        why: "a user service (a live systemd): .ci/dist checks the unit file with \
              `systemd-analyze verify --user` against an unpacked archive",
    },
    Kind {
        pattern: "cargo run -p superpi-conformance*",
        run: Run::InCi(Some("cargo run -p superpi-conformance")),
        why: "the official clients against every frontend (minutes; needs the npm clients)",
    },
    Kind {
        pattern: "(cd conformance && npm ci)",
        run: Run::InCi(Some("(cd conformance && npm ci")),
        why: "the pinned clients come from npm (a registry)",
    },
    Kind {
        pattern: "python3 -m venv conformance/.venv && *",
        run: Run::InCi(Some("python3 -m venv conformance/.venv && conformance/.venv/bin/pip install")),
        why: "the pinned Python clients come from PyPI (a registry)",
    },
    Kind {
        pattern: "claude mcp add *",
        run: Run::InCi(Some("--protocol clients")),
        why: "Claude Code (npm, a model account): `superpi-conformance --protocol clients` runs \
              `claude mcp add superpi -- superpi mcp` and `claude mcp list` against superpi",
    },
    Kind {
        pattern: "claude",
        run: Run::InCi(Some("--protocol clients")),
        why: "Claude Code's interactive session with the gateway as its model: the same gateway \
              route `claude -p` takes (below), which frontends/openai/tests/claude_code.rs runs",
    },
    Kind {
        pattern: "claude -p *",
        run: Run::InCi(Some("--protocol clients")),
        why: "Claude Code (npm, a model account) with the gateway as its model: \
              frontends/openai/tests/claude_code.rs runs `claude -p` and `claude -p --continue` \
              through a real gateway, and `--protocol clients` checks the README's settings snippet",
    },
    Kind {
        pattern: "superpi mcp add * -- npx -y @modelcontextprotocol/server-filesystem *",
        run: Run::StandIn(StandIn::NpxServer),
        why: "npx downloads the server: node runs the copy .ci/run installs in $SUPERPI_TEST_NPM, \
              then a turn lists the workspace through it",
    },
    Kind {
        pattern: "export SUPERPI_DATABASE_URL=*",
        run: Run::StandIn(StandIn::Postgres),
        why: "a managed PostgreSQL in the cloud: the tests' own server (tests/src postgres_server) \
              in its place, for a machine of its own",
    },
    Kind {
        pattern: "superpi kernel &",
        run: Run::Serve(Served::Kernel),
        why: "the kernel in the background: checked to answer",
    },
    Kind {
        pattern: "superpi kernel",
        run: Run::Serve(Served::Kernel),
        why: "the kernel in the foreground: the README lists commands, not a script, so the kernel \
              the lines before autostarted is stopped first; `superpi kernel stop` stops this one",
    },
    Kind { pattern: "superpi gateway*", run: Run::Serve(Served::Http), why: "answers GET /health" },
    Kind { pattern: "superpi agui*", run: Run::Serve(Served::Http), why: "answers GET /health" },
    Kind {
        pattern: "superpi rpc --unix *",
        run: Run::Serve(Served::RpcUnix),
        why: "answers workspace.metadata on its socket",
    },
    Kind {
        pattern: "superpi rpc --port *",
        run: Run::Serve(Served::RpcTcp),
        why: "answers workspace.metadata on its port",
    },
    Kind {
        pattern: "superpi rpc --stdio",
        run: Run::WithInput(RPC_REQUEST, "\"workspace\""),
        why: "answers workspace.metadata, exits at the end of its input",
    },
    Kind {
        pattern: "superpi mcp",
        run: Run::WithInput(MCP_INITIALIZE, "\"serverInfo\""),
        why: "answers initialize, exits at the end of its input",
    },
    Kind {
        pattern: "superpi acp",
        run: Run::WithInput(ACP_INITIALIZE, "\"agentCapabilities\""),
        why: "answers initialize, exits at the end of its input",
    },
    Kind { pattern: "superpi chat", run: Run::WithInput("/exit\n", ""), why: "the REPL, left with /exit" },
    Kind {
        pattern: "superpi",
        run: Run::WithInput("a prompt on stdin\n", "a prompt on stdin"),
        why: "not in a terminal: runs the prompt piped on stdin",
    },
    Kind { pattern: "superpi *", run: Run::ToExit, why: "a command that ends" },
    Kind { pattern: "echo * | superpi *", run: Run::ToExit, why: "a prompt piped to a command that ends" },
    Kind { pattern: "printf * | superpi *", run: Run::ToExit, why: "prompts piped to a command that ends" },
    Kind { pattern: "curl *", run: Run::Curl, why: "a request to a server the README runs" },
];

/// The port a server listens on when the README names none, and the command that serves it.
const DEFAULT_PORTS: &[(u16, &str)] = &[(4000, "superpi gateway"), (4100, "superpi agui")];

/// What the READMEs' placeholders stand for here.
#[derive(Clone, Copy)]
enum Stand {
    /// A conversation of the reader's: one whose turn wrote a file, so it has a turn to undo.
    Conversation,
    /// A schedule of the reader's: the first one the block added.
    Schedule,
    /// A directory of the reader's: the test's own.
    Directory,
    /// An open question: one the test opens with a run of `make` in accept-edits (the example
    /// the README shows before it).
    Question,
}

const STANDS_FOR: &[(&str, Stand)] = &[
    ("--conversation 7", Stand::Conversation),
    ("session show 7", Stand::Conversation),
    ("session undo 7", Stand::Conversation),
    ("schedule remove 2", Stand::Schedule),
    ("schedule remove 3", Stand::Schedule),
    ("/run/user/1000", Stand::Directory),
    ("q-3", Stand::Question),
];

/// Shell variables the READMEs use without setting: a webhook delivery's body.
const VARIABLES: &[(&str, &str)] = &[("BODY", "{\"ref\":\"main\"}")];

/// Programs lines call besides superpi: .ci/run installs them; elsewhere their lines skip.
const PROGRAMS: &[&str] = &["curl", "jq", "uuidgen", "openssl", "date"];

/// Pipes after a `superpi` line go to these; any other `| WORD` is the README's notation for
/// alternatives.
const PIPE_PROGRAMS: &[&str] = &["jq"];

/// Blocks whose turns are held at their model request until the block ends (a `before_request`
/// hook waits for a file), so that a steer and a cancel meet a running turn, as the outputs
/// the README shows say they do.
const HOLD_TURNS: &[(&str, &str)] = &[("frontends/agui/README.md", "\"steer\": true")];

/// The settings examples and what loads them: written to the file they document in an
/// environment of their own, then these commands run (exit status, text their output holds).
struct Example {
    file: &'static str,
    heading: &'static str,
    writes: Dest,
    runs: &'static [(&'static [&'static str], i32, &'static str)],
}

#[derive(Clone, Copy, PartialEq)]
enum Dest {
    Settings,
    WorkspaceSettings,
    Harnesses,
    /// The user's permission rules file.
    Permissions,
    /// The error text shown for an invalid file: the complete example with `allow` misspelt.
    InvalidSettings,
}

const EXAMPLES: &[Example] = &[
    Example {
        file: "kernel/policy/SETTINGS.md",
        heading: "A complete example",
        writes: Dest::Settings,
        runs: &[(&["doctor"], 0, "Settings that do not take effect"), (&["run", "hello"], 0, "hello")],
    },
    Example {
        file: "kernel/policy/SETTINGS.md",
        heading: "superpi settings",
        writes: Dest::InvalidSettings,
        runs: &[(&["run", "hello"], 1, "")],
    },
    Example {
        file: "kernel/policy/SETTINGS.md",
        heading: "Workspace files",
        writes: Dest::WorkspaceSettings,
        runs: &[(&["run", "hello"], 0, "hello")],
    },
    Example {
        file: "kernel/policy/SETTINGS.md",
        heading: "Permission rules that last",
        writes: Dest::Permissions,
        runs: &[(&["permissions", "list"], 0, "npm run test:*"), (&["run", "hello"], 0, "hello")],
    },
    Example {
        file: "kernel/policy/SETTINGS.md",
        heading: "`harnesses.toml`",
        writes: Dest::Harnesses,
        runs: &[(&["harnesses"], 0, "Reviews a change"), (&["run", "--harness", "reviewer", "hello"], 0, "hello")],
    },
    Example {
        file: "kernel/policy/SETTINGS.md",
        heading: "Agent backends: `[backends.ID]`",
        writes: Dest::Harnesses,
        runs: &[(&["harnesses"], 0, "/opt/claude/bin/claude")],
    },
    Example {
        file: "README.md",
        heading: "Hooks, rules and skills",
        writes: Dest::Settings,
        runs: &[(&["run", "hello"], 0, "hello")],
    },
];

/// The files whose settings examples (json, toml, text) are all in [`EXAMPLES`].
const SETTINGS_FILES: &[&str] = &["README.md", "kernel/policy/SETTINGS.md"];

/// Running them: tests/tests/readme/run.rs.
mod run;

#[test]
fn every_command_block_of_the_readmes_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let mut files = vec!["README.md".to_string(), "kernel/policy/SETTINGS.md".to_string()];
    let mut frontends: Vec<String> = std::fs::read_dir(root.join("frontends"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("README.md").is_file())
        .map(|e| format!("frontends/{}/README.md", e.file_name().to_string_lossy()))
        .collect();
    frontends.sort();
    assert!(frontends.len() >= 5, "{frontends:?}");
    files.extend(frontends);
    superpi_bin();
    let results: Vec<(String, std::thread::Result<usize>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = files.iter().map(|file| (file.clone(), scope.spawn(|| run::file(&root, file)))).collect();
        handles.into_iter().map(|(file, handle)| (file, handle.join())).collect()
    });
    let mut failures = Vec::new();
    let mut ran = 0;
    for (file, result) in results {
        match result {
            Ok(count) => ran += count,
            Err(panic) => failures.push(format!("{file}: {}", run::panic_text(&panic))),
        }
    }
    assert!(failures.is_empty(), "README commands that do not work as written:\n{}", failures.join("\n\n"));
    assert!(ran >= 50, "only {ran} commands and examples ran");
}

#[test]
fn a_line_of_no_known_kind_fails_saying_how_to_add_it() {
    let err = run::classify("frobnicate --all").unwrap_err();
    assert!(err.contains("KINDS") && err.contains("tests/tests/readme.rs"), "{err}");
    assert!(matches!(run::classify("superpi kernel status"), Ok(k) if matches!(k.run, Run::ToExit)));
    assert!(matches!(run::classify("superpi kernel"), Ok(k) if matches!(k.run, Run::Serve(Served::Kernel))));
    assert!(matches!(
        run::classify("SUPERPI_GATEWAY_TOKEN=a superpi gateway --bind 0.0.0.0"),
        Ok(k) if matches!(k.run, Run::Serve(Served::Http))
    ));
}

#[test]
fn shown_outputs_compare_by_what_they_show() {
    let (status, want) = run::shown_json("202 {\"conversationId\":1,\"queued\":false, ...}   (a remark)");
    assert_eq!(status, Some(202));
    let got = serde_json::json!({"conversationId": 7, "queued": false, "turnId": 3});
    assert_eq!(run::same_shape(&want, &got), Ok(()));
    let got = serde_json::json!({"conversationId": 7, "queued": true});
    assert!(run::same_shape(&want, &got).unwrap_err().contains("queued"));
    assert!(run::same_shape(&want, &serde_json::json!({"queued": false})).is_err(), "a shown key is missing");
    let (_, want) = run::shown_json("{\"usage\": {...}, \"id\": \"chatcmpl-1\"}");
    assert_eq!(run::same_shape(&want, &serde_json::json!({"usage": {"a": 1}, "id": "chatcmpl-9"})), Ok(()));
}

/// Blocks a README test runs, for [`run::file`].
fn shell_blocks(blocks: &[Block]) -> impl Iterator<Item = (usize, &Block)> {
    blocks.iter().enumerate().filter(|(_, b)| b.is_shell())
}

/// The text block right after a shell block: the output of its last command.
fn shown_after(blocks: &[Block], index: usize) -> Option<&Block> {
    blocks.get(index + 1).filter(|b| b.lang == "text" && b.follows_directly)
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}

/// Reads lines from `from` on a thread of its own, so a wait for one can end.
fn lines_of(from: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The first line from `lines` that `pred` takes, within [`wait::PATIENCE`]; the lines before
/// it are in the failure message.
fn line_where(lines: &mpsc::Receiver<String>, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + wait::PATIENCE;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if pred(&line) => return line,
            Ok(line) => seen.push(line),
            Err(_) => panic!("{what}: not within {:?}; it wrote: {seen:?}", wait::PATIENCE),
        }
    }
}

/// Runs `cmd` to its end (within [`wait::PATIENCE`]) with `input` on stdin.
fn finish(mut cmd: Command, input: &str, what: &str) -> Output {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = KillOnDrop(cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}")));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let read = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = from.read_to_end(&mut all);
            all
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let status = wait::until_blocking(&format!("{what} exits"), wait::PATIENCE, || child.try_wait().ok().flatten());
    Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// `GET PATH` over plain HTTP/1.0: the status and the body.
fn http_get(base: &str, path: &str) -> (u16, String) {
    let authority = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(authority).unwrap_or_else(|e| panic!("{base}: {e}"));
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer.split("\r\n\r\n").nth(1).unwrap_or_default().to_string())
}
