//! End to end: a shell command reaches the network only when its call asks for it and the
//! mode allows it (the real binary, the mock model, a TCP listener on 127.0.0.1).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::io::{ErrorKind, Read};
use std::net::TcpListener;

use serde_json::json;
use superpi_tests::TestEnv;

/// `superpi run --mode MODE` with the mock model running `echo hi > /dev/tcp/…` once, with
/// `network` as given, and no answer on stdin (a question is rejected). Returns the bash
/// call's result (is_error, output), or `None` when it never ran, and what the listener got.
fn connect(mode: &str, network: Option<bool>) -> (Option<(bool, String)>, Option<String>) {
    let env = TestEnv::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut args = json!({"command": format!("echo hi > /dev/tcp/127.0.0.1/{port}")});
    if let Some(network) = network {
        args["network"] = json!(network);
    }
    let prompt = format!("@tool bash {args}");
    let out = env.command(&["run", "--mode", mode, &prompt]).stdin(std::process::Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let result = db
        .query_row("SELECT wire FROM events WHERE type = 'tool_completed'", [], |r| r.get::<_, String>(0))
        .ok()
        .map(|wire| {
            let e: serde_json::Value = serde_json::from_str(&wire).unwrap();
            (e["is_error"].as_bool().unwrap(), e["output"].as_str().unwrap_or("").to_string())
        });
    // The run has ended: a connection it made is already queued on the listener.
    listener.set_nonblocking(true).unwrap();
    let received = match listener.accept() {
        Ok((mut stream, _)) => {
            stream.set_nonblocking(false).unwrap();
            let mut got = String::new();
            stream.read_to_string(&mut got).unwrap();
            Some(got)
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => None,
        Err(e) => panic!("accept: {e}; stderr: {stderr}"),
    };
    (result, received)
}

#[test]
fn a_shell_command_has_no_network_unless_it_asks() {
    // Auto runs the command without asking (accept-edits asks about a redirection).
    for network in [None, Some(false)] {
        let (result, received) = connect("auto", network);
        assert_eq!(received, None, "{network:?}");
        let (is_error, output) = result.expect("the command ran");
        assert!(is_error, "{network:?}: {output}");
        assert!(output.contains("run it again with \"network\": true"), "{network:?}: {output}");
    }
}

#[test]
fn asking_for_network_connects_in_auto() {
    let (result, received) = connect("auto", Some(true));
    let (is_error, output) = result.expect("the command ran");
    assert!(!is_error, "{output}");
    assert_eq!(received.as_deref(), Some("hi\n"));
}

#[test]
fn asking_for_network_is_refused_in_plan_and_unanswered_in_accept_edits() {
    for mode in ["plan", "accept-edits"] {
        let (result, received) = connect(mode, Some(true));
        assert_eq!(received, None, "{mode}");
        if let Some((is_error, output)) = result {
            assert!(is_error, "{mode}: {output}");
        }
    }
}
