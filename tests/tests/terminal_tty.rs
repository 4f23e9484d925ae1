//! End to end on a real pseudo-terminal: what `superpi` does for a person at a terminal. The
//! answer's markdown is rendered with colours (and left as written under `NO_COLOR`), a
//! spinner shows while the model is waited for, and a bare `superpi` opens chat, whose prompt
//! edits lines (Ctrl-A, Ctrl-F), recalls earlier lines (Up) and keeps them for the next chat;
//! questions (the model's and permission ones) are asked with nothing drawn over them.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use superpi_tests::TestEnv;

/// What the mock renders for `**loud**` on a terminal: bold, the asterisks gone.
const BOLD_LOUD: &str = "\x1b[1mloud";

/// `superpi ARGS` with a pseudo-terminal as its stdin, stdout and stderr.
struct Tty {
    child: Child,
    input: File,
    output: mpsc::Receiver<Vec<u8>>,
    seen: String,
}

impl Tty {
    fn start(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Tty {
        let size = nix::pty::Winsize { ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
        let pty = nix::pty::openpty(&size, None::<&nix::sys::termios::Termios>).unwrap();
        let mut cmd = env.command(args);
        cmd.env("TERM", "xterm-256color").env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE").env_remove("CLICOLOR");
        cmd.envs(vars.iter().copied());
        cmd.stdin(Stdio::from(pty.slave.try_clone().unwrap()))
            .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
            .stderr(Stdio::from(pty.slave));
        let child = cmd.spawn().unwrap();
        let input = File::from(pty.master.try_clone().unwrap());
        let mut master = File::from(pty.master);
        let (tx, output) = mpsc::channel();
        // The reader ends when the terminal is closed on every side (EIO) or the test is over.
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Tty { child, input, output, seen: String::new() }
    }

    fn send(&mut self, keys: &str) {
        self.input.write_all(keys.as_bytes()).unwrap();
    }

    /// Reads until what the terminal showed satisfies `done` (30 s at most).
    fn until(&mut self, what: &str, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => panic!("no {what} on the terminal within 30 s; it showed {:?}", self.seen),
            }
        }
    }

    /// Waits for the program to exit (30 s at most) and reads what it showed last.
    fn exit(mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{status}: {:?}", self.seen);
                break;
            }
            assert!(Instant::now() < deadline, "superpi did not exit: {:?}", self.seen);
            if let Ok(bytes) = self.output.recv_timeout(Duration::from_millis(50)) {
                self.seen.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
        while let Ok(bytes) = self.output.try_recv() {
            self.seen.push_str(&String::from_utf8_lossy(&bytes));
        }
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Tty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn run_on_a_terminal_renders_markdown_in_colour_with_a_spinner_and_no_color_turns_colour_off() {
    let env = TestEnv::new();
    // Each delta waits: the spinner shows while nothing has come yet.
    let prompt = "@slow 150\nsay **loud** and `code`";
    let shown = Tty::start(&env, &["run", prompt], &[]).exit();
    assert!(shown.contains(BOLD_LOUD), "bold rendered: {shown:?}");
    assert!(!shown.contains("**loud**"), "the markers go: {shown:?}");
    assert!(shown.contains("working"), "a spinner while waiting: {shown:?}");

    let plain = Tty::start(&env, &["run", prompt], &[("NO_COLOR", "1")]).exit();
    assert!(plain.contains("say **loud** and `code`"), "left as written: {plain:?}");
    assert!(!plain.contains("\x1b[1m") && !plain.contains("\x1b[3"), "no colour under NO_COLOR: {plain:?}");
}

#[test]
fn a_bare_superpi_on_a_terminal_is_chat_with_line_editing_and_kept_history() {
    let env = TestEnv::new();
    let mut chat = Tty::start(&env, &[], &[]);
    chat.until("the chat banner", |seen| seen.contains("/exit leaves") && seen.contains("> "));
    chat.send("say **loud**\r");
    chat.until("the rendered answer", |seen| seen.contains(BOLD_LOUD));
    // Up recalls the line; Enter sends it again.
    chat.send("\x1b[A\r");
    chat.until("the recalled line's answer", |seen| seen.matches(BOLD_LOUD).count() == 2);
    // Ctrl-A to the start, Ctrl-F past one character, then a letter inserted there.
    chat.send("sy **quiet**\x01\x06a\r");
    chat.until("the edited line's answer", |seen| seen.contains("say \x1b[1mquiet"));
    chat.send("/exit\r");
    chat.exit();
    let history = std::fs::read_to_string(env.locations.data_dir.join("chat_history")).unwrap();
    assert!(history.contains("say **loud**") && history.contains("say **quiet**"), "{history}");

    // The next chat (a new conversation) recalls the lines of the one before: Up twice is the
    // line before `/exit`.
    let mut chat = Tty::start(&env, &["chat"], &[]);
    chat.until("the chat banner", |seen| seen.contains("/exit leaves") && seen.contains("> "));
    chat.send("\x1b[A\x1b[A\r");
    chat.until("the recalled line's answer", |seen| seen.contains("say \x1b[1mquiet"));
    chat.send("/exit\r");
    chat.exit();
}

/// What the mock's prompt for an `ask_question` call of one question with two options is.
fn ask_db() -> String {
    let args = serde_json::json!({"questions": [
        {"id": "db", "question": "Which database?", "options": ["sqlite", "postgres"]}
    ]});
    format!("@tool ask_question {args}")
}

impl Tty {
    /// What the terminal shows over the next `window` (to see that nothing draws there: a
    /// spinner frame comes every 100 ms, so three would have been drawn).
    fn shown_within(&mut self, window: Duration) -> String {
        let from = self.seen.len();
        let deadline = Instant::now() + window;
        while let Ok(bytes) = self.output.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            self.seen.push_str(&String::from_utf8_lossy(&bytes));
        }
        self.seen[from..].to_string()
    }
}

#[test]
fn chat_asks_the_models_question_and_a_permission_with_the_exact_line_and_no_spinner_over_either() {
    let env = TestEnv::new();
    let mut chat = Tty::start(&env, &["chat"], &[]);
    chat.until("the chat banner", |seen| seen.contains("/exit leaves"));
    chat.send(&format!("{}\r", ask_db()));
    chat.until("the question", |seen| seen.contains("answer [1-2]: "));
    let after = chat.shown_within(Duration::from_millis(350));
    assert!(!after.contains("working"), "the spinner drew over the question: {after:?}");
    assert!(
        chat.seen.contains("? Which database? (an empty line declines)\r\n  1) sqlite\r\n  2) postgres"),
        "{:?}",
        chat.seen
    );
    chat.send("2\r");
    chat.until("the answer as the call's result", |seen| seen.contains(r#"ask_question: {"db":"postgres"}"#));

    let line = "echo hi > out.txt; cat out.txt";
    chat.send(&format!("@tool bash {}\r", serde_json::json!({"command": line})));
    chat.until("the permission question", |seen| seen.contains("allow? [y]es once"));
    assert!(
        chat.seen.contains(&format!("\r\n  command: {line}\u{1b}[0m\r\n")),
        "the exact line is shown: {:?}",
        chat.seen
    );
    let after = chat.shown_within(Duration::from_millis(350));
    assert!(!after.contains("working"), "the spinner drew over the permission question: {after:?}");
    chat.send("n\r");
    chat.until("the refusal", |seen| seen.contains("bash refused"));
    chat.send("/exit\r");
    chat.exit();
}

#[test]
fn run_asks_on_a_terminal_and_refuses_the_question_in_a_pipe() {
    let env = TestEnv::new();
    let mut run = Tty::start(&env, &["run", &ask_db()], &[]);
    run.until("the question", |seen| seen.contains("answer [1-2]: "));
    run.send("sqlite\r");
    let shown = run.exit();
    assert!(shown.contains(r#"ask_question: {"db":"sqlite"}"#), "{shown:?}");

    let piped = env.command(&["run", &ask_db()]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(stderr.contains("✗ ask_question: nobody can answer a question here"), "{stderr}");
}

#[test]
fn always_for_me_on_the_terminal_writes_a_rule_that_answers_a_later_run_in_a_pipe() {
    let env = TestEnv::new();
    let prompt = format!("@tool bash {}", serde_json::json!({"command": "touch by-tty"}));
    let mut run = Tty::start(&env, &["run", &prompt], &[]);
    run.until("the permission question", |seen| seen.contains("always in this [p]roject, always for [m]e"));
    run.send("m\r");
    let shown = run.exit();
    assert!(shown.contains("allowed from now on"), "{shown:?}");
    let rules = std::fs::read_to_string(env.locations.config_dir.join("permissions.json")).unwrap();
    assert!(rules.contains("\"touch by-tty\""), "{rules}");
    std::fs::remove_file(env.workspace.join("by-tty")).unwrap();

    // Nobody can answer in a pipe: the rule does.
    let piped = env.command(&["run", &prompt]).stdin(Stdio::null()).output().unwrap();
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    assert!(env.workspace.join("by-tty").exists());
}
