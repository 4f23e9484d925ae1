//! End to end: the terminal frontend for scripts (`superpi run --output-format`,
//! `--input-format stream-json`, `-p`), listings with `--json`, and shell completions.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::io::Write;
use std::process::{Output, Stdio};

use serde_json::Value;
use superpi_proto::{Event, EventBody};
use superpi_tests::TestEnv;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn with_stdin(env: &TestEnv, args: &[&str], input: &str) -> Output {
    let mut child =
        env.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn stream_json_of_a_tool_using_turn_is_one_kernel_event_per_line() {
    let env = TestEnv::new();
    std::fs::write(env.workspace.join("hello.txt"), "hi").unwrap();
    let out = env.command(&["run", "--output-format", "stream-json", r#"@tool ls {"path": "."}"#]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let events: Vec<Event> = text
        .lines()
        .map(|line| Event::from_json(line).unwrap_or_else(|e| panic!("not a kernel event: {line}: {e}")))
        .collect();
    assert!(events.iter().all(|e| !matches!(e.body, EventBody::Unknown(_))), "{text}");
    let turn = events[0].turn_id.expect("the turn's events");
    assert!(events.iter().all(|e| e.turn_id == Some(turn)), "only this turn's events: {text}");
    let types: Vec<&str> = events.iter().map(Event::type_name).collect();
    let at = |t: &str| types.iter().position(|x| *x == t).unwrap_or_else(|| panic!("no {t} in {types:?}"));
    assert!(at("turn_started") < at("tool_started") && at("tool_started") < at("tool_completed"), "{types:?}");
    assert_eq!(types.last(), Some(&"turn_completed"), "{types:?}");
    let completed = events.iter().find_map(|e| match &e.body {
        EventBody::ToolCompleted { name, is_error, output, .. } => Some((name.clone(), *is_error, output.clone())),
        _ => None,
    });
    let (name, is_error, output) = completed.unwrap();
    assert_eq!((name.as_str(), is_error), ("ls", false), "{output}");
    assert!(output.to_string().contains("hello.txt"), "{output}");
    // Sequence numbers rise: the lines are in the kernel's order.
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).filter(|s| *s > 0).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[test]
fn json_output_is_one_result_and_p_is_run() {
    let env = TestEnv::new();
    let out = env.command(&["-p", "hello as json", "--output-format", "json"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let result: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(
        (&result["type"], &result["status"], &result["result"]),
        (&"result".into(), &"completed".into(), &"hello as json".into())
    );
    assert_eq!(result["is_error"], false);
    assert!(result["usage"]["output_tokens"].as_u64().unwrap() > 0, "{result}");

    let out = env.command(&["run", "--output-format", "json", "@fail the model broke"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["status"], "failed");
    assert!(result["error"].as_str().unwrap().contains("the model broke"), "{result}");
}

/// `--effort` sets a new conversation's thinking effort, and a continued one's; the mock thinks
/// the level its requests carry, so the stream shows what reached the model.
#[test]
fn effort_reaches_the_model_and_stays_with_the_conversation() {
    let env = TestEnv::new();
    let thought = |args: &[&str]| -> String {
        let out = env.command(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        stdout(&out)
            .lines()
            .filter_map(|line| match Event::from_json(line).unwrap().body {
                EventBody::ThinkingDelta { delta, .. } => Some(delta),
                _ => None,
            })
            .collect()
    };
    assert_eq!(thought(&["run", "--effort", "low", "--output-format", "stream-json", "one"]), "[effort low]");
    assert_eq!(thought(&["run", "-c", "--output-format", "stream-json", "two"]), "[effort low]", "kept");
    assert_eq!(thought(&["run", "-c", "--effort", "high", "--output-format", "stream-json", "three"]), "[effort high]");
    let listed = env.command(&["session", "list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["effort"], "high");
    let models: Value = serde_json::from_slice(&env.command(&["models", "--json"]).output().unwrap().stdout).unwrap();
    let mock = models.as_array().unwrap().iter().find(|m| m["id"] == "mock").unwrap().clone();
    assert_eq!(mock["efforts"], serde_json::json!(["off", "low", "medium", "high"]));

    let out = env.command(&["run", "--effort", "max", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an unknown level is a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("off, low, medium, high"));
}

/// Where stdout is not a terminal (a pipe, a file), the answer's markdown goes out as the
/// model wrote it: no styles, no bullets in place of its markers.
#[test]
fn markdown_is_left_as_written_where_stdout_is_not_a_terminal() {
    let env = TestEnv::new();
    let answer = "# Title\n- **one**\n- `two`\n```\ncode\n```";
    for colour in [None, Some("1")] {
        let mut cmd = env.command(&["run", answer]);
        if let Some(force) = colour {
            cmd.env("CLICOLOR_FORCE", force);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout(&out).trim_end(), answer, "CLICOLOR_FORCE={colour:?}");
    }
}

#[test]
fn stream_json_input_answers_each_line_in_one_conversation() {
    let env = TestEnv::new();
    let input = "{\"prompt\": \"first\"}\nnot json\n\n{\"prompt\": \"second\"}\n";
    let out = with_stdin(&env, &["--input-format", "stream-json", "--output-format", "json"], input);
    assert_eq!(out.status.code(), Some(1), "an invalid line fails the run: {}", String::from_utf8_lossy(&out.stderr));
    let results: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!((&results[0]["status"], &results[0]["result"]), (&"completed".into(), &"first".into()));
    assert_eq!(results[1]["status"], "invalid_input");
    assert_eq!((&results[2]["status"], &results[2]["result"]), (&"completed".into(), &"second".into()));
    assert_eq!(results[0]["conversation_id"], results[2]["conversation_id"]);
    assert_ne!(results[0]["turn_id"], results[2]["turn_id"]);

    let out =
        with_stdin(&env, &["run", "--input-format", "stream-json", "--output-format", "json"], "{\"prompt\": \"x\"}\n");
    assert!(out.status.success());
    let out = env.command(&["run", "--input-format", "stream-json", "a prompt argument"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "prompts come from stdin only");
}

#[test]
fn listings_are_text_by_default_and_json_when_asked() {
    let env = TestEnv::new();
    assert!(env.command(&["run", "a title"]).output().unwrap().status.success());
    let out = env.command(&["session", "list"]).env("NO_COLOR", "1").output().unwrap();
    let text = stdout(&out);
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("ID  HARNESS"), "{text}");
    assert!(lines.next().unwrap().contains("a title"), "{text}");
    assert!(!text.contains('\u{1b}'), "no colour codes into a pipe: {text:?}");

    let json = |args: &[&str]| -> Value {
        let out = env.command(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&out)))
    };
    assert_eq!(json(&["session", "list", "--json"])[0]["title"], "a title");
    let id = json(&["session", "list", "--json"])[0]["conversation_id"].as_i64().unwrap().to_string();
    assert_eq!(json(&["session", "show", &id, "--json"])["entries"].as_array().unwrap().len(), 2);
    assert!(json(&["harnesses", "--json"]).as_array().unwrap().iter().any(|h| h["id"] == "superpi-code"));
    assert!(json(&["models", "--json"]).as_array().unwrap().iter().any(|m| m["id"] == "mock"));
    assert_eq!(json(&["kernel", "status", "--json"])["pid"].as_i64().unwrap() as i32, env.kernel_pid().unwrap());
    let out = env.command(&["kernel", "status"]).output().unwrap();
    assert!(stdout(&out).starts_with("pid "), "{}", stdout(&out));
}

#[test]
fn completions_for_each_shell() {
    let env = TestEnv::new();
    for (shell, marker) in [("bash", "complete -F"), ("zsh", "#compdef superpi"), ("fish", "complete -c superpi")] {
        let out = env.command(&["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}: {script:.200}");
        assert!(script.contains("output-format"), "{shell} completes run's flags");
    }
    let out = env.command(&["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn chat_reads_lines_until_exit_and_keeps_one_conversation() {
    let env = TestEnv::new();
    let out = with_stdin(&env, &["chat"], "first line\nsecond line\n/exit\nnever sent\n");
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout(&out), "first line\nsecond line\n");
    let out = env.command(&["session", "list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
}

#[test]
fn an_mcp_host_starting_superpi_outside_a_project_gets_an_error_naming_workspace() {
    let env = TestEnv::new();
    for dir in [env.home.clone(), std::path::PathBuf::from("/")] {
        let out = env.command(&["mcp"]).current_dir(&dir).stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", dir.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--workspace") && stderr.contains("refuses"), "{stderr}");
        assert!(out.stdout.is_empty(), "stdout belongs to the protocol");
    }
    // Named with --workspace, the same start serves (end of input: a clean exit).
    let ws = env.workspace.display().to_string();
    let out = env.command(&["mcp", "--workspace", &ws]).current_dir(&env.home).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Lines of a child's pipe, read on a thread of their own.
fn lines_of(pipe: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(pipe)).map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads lines until one contains `needle` (30 s at most).
fn until_line(lines: &std::sync::mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = lines.recv_timeout(left).unwrap_or_else(|e| panic!("no line with {needle:?}: {e}"));
        if line.contains(needle) {
            return line;
        }
    }
}

#[test]
fn chat_steer_joins_the_running_turn_and_other_lines_wait_for_it() {
    let env = TestEnv::new();
    let mut child = env
        .command(&["chat", "--mode", "auto"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stderr = lines_of(child.stderr.take().unwrap());
    let answers = lines_of(child.stdout.take().unwrap());
    // A turn whose command waits until the test creates `go`.
    writeln!(stdin, r#"@tool bash {{"command": "while [ ! -e go ]; do sleep 0.02; done; echo released"}}"#).unwrap();
    until_line(&stderr, "→ bash");
    // A plain line typed now waits for the turn; `/steer` joins it.
    writeln!(stdin, "after the turn").unwrap();
    writeln!(stdin, "/steer steered words").unwrap();
    until_line(&stderr, "joins the running turn");
    std::fs::write(env.workspace.join("go"), "").unwrap();
    // The mock answers the latest prompt of the turn: the steering one.
    until_line(&answers, "steered words");
    until_line(&answers, "after the turn");
    writeln!(stdin, "/exit").unwrap();
    assert!(child.wait().unwrap().success());

    let out = env.command(&["session", "list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = list[0]["conversation_id"].to_string();
    let out = env.command(&["session", "show", &id, "--json"]).output().unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    let turns: Vec<&Value> =
        shown["entries"].as_array().unwrap().iter().filter(|e| e["kind"] == "user").map(|e| &e["turn_id"]).collect();
    assert_eq!(turns.len(), 3, "{shown}");
    assert_eq!(turns[0], turns[1], "the steering prompt joined the first turn");
    assert_ne!(turns[1], turns[2], "the plain line ran as the next turn");
}
