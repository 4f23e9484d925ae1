//! Who may reach `superpi rpc --unix` and `superpi rpc --port`: each test runs the real server
//! and kernel, makes a tool call through the listener (the model's bash call, answered by the
//! listener's client), and tries the attacks: another user (through setpriv, also with the
//! socket's mode opened up), and the confined tool itself connecting back with network granted
//! and its environment cleared. Each attack must get nothing; this user is served throughout.
//!
//! Build the binary first: `cargo build -p superpi-cli && cargo test -p superpi-rpc`. Runs as
//! root (setpriv switches to uid 65534).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

use common::*;
use serde_json::{Value, json};
use superpi_tests::TestEnv;

/// A JSON-RPC client in Python: connects to a socket path or a loopback port, asks
/// `session.list`, prints `GOT <answer>` (empty when the server closed without one) or
/// `CONNECT-REFUSED <errno>`.
const PROBE: &str = r#"
import socket, sys
target = sys.argv[1]
try:
    if target.isdigit():
        s = socket.create_connection(("127.0.0.1", int(target)), timeout=20)
    else:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(20)
        s.connect(target)
except OSError as e:
    print("CONNECT-REFUSED", e.errno, flush=True)
    sys.exit(0)
got = b""
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"session.list"}\n')
    while not got.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
except OSError as e:
    print("IO", e.errno, flush=True)
print("GOT", got.decode(errors="replace"), flush=True)
"#;

/// The probe run by this test, as `uid` when given.
fn probe_as(uid: Option<u32>, target: &str) -> String {
    let mut cmd = match uid {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.args([format!("--reuid={uid}"), format!("--regid={uid}"), "--clear-groups".into(), "--".into()]);
            c.arg("/usr/bin/python3");
            c
        }
        None => Command::new("/usr/bin/python3"),
    };
    let out = cmd.args(["-c", PROBE, target]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn served(answer: &str) -> bool {
    answer.contains("\"conversations\"")
}

/// The model's bash call, granted network, runs the probe against `target` with a cleared
/// environment in a new session; the listener's client answers the permission question. The
/// probe's output, and the completed call.
async fn tool_probe(env: &TestEnv, c: &mut LineClient, target: &str) -> (String, Value) {
    std::fs::write(env.workspace.join("probe.py"), PROBE).unwrap();
    let id = open(c).await;
    let w = watch(c, id, true).await;
    let command = format!("setsid env -i /usr/bin/python3 probe.py {target} > got.txt 2>&1; echo finished");
    let prompt = format!("@tool bash {}", json!({"command": command, "network": true}));
    c.ok("session.submit", json!({"conversation_id": id, "prompt": prompt})).await;
    let mut completed = None;
    loop {
        let events = c.events_until(w, |e| e["type"] == "permission_request" || turn_end(e)).await;
        completed = completed.or_else(|| events.iter().find(|e| e["type"] == "tool_completed").cloned());
        let last = events.last().unwrap();
        if turn_end(last) {
            break;
        }
        let answer = json!({"request_id": last["request_id"], "option_id": "allow_once"});
        assert_eq!(c.ok("ui.respond", answer).await, json!({"accepted": true}));
    }
    let completed = completed.expect("the tool call completed");
    let got = std::fs::read_to_string(env.workspace.join("got.txt")).unwrap_or_default();
    (got, completed)
}

fn assert_root() {
    // SAFETY: geteuid cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 0, "these tests switch to another uid with setpriv: run them as root");
}

#[tokio::test]
async fn the_unix_listener_serves_its_user_and_refuses_other_users_and_confined_tools() {
    assert_root();
    let env = TestEnv::new();
    // Other users may traverse to the socket: only its mode and the peer check stand between.
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let server = UnixServer::start(&env, &[]).await;
    let meta = std::fs::metadata(&server.socket).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "the socket is this user's only");
    // SAFETY: geteuid cannot fail.
    assert_eq!(meta.uid(), unsafe { libc::geteuid() });
    let socket = server.socket.to_str().unwrap();
    assert!(served(&probe_as(None, socket)), "this user is served");

    let other = probe_as(Some(65534), socket);
    assert!(other.contains("CONNECT-REFUSED 13"), "uid 65534 reached a 0600 socket: {other}");
    // With the mode opened up, the peer check alone refuses them before any request.
    std::fs::set_permissions(&server.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let other = probe_as(Some(65534), socket);
    assert!(other.contains("GOT") && !served(&other), "uid 65534 was served: {other}");

    let mut c = server.client().await;
    let (got, completed) = tool_probe(&env, &mut c, socket).await;
    assert_eq!(completed["is_error"], json!(false), "the tool call through the listener ran: {completed}");
    assert!(completed["output"].as_str().unwrap().contains("finished"), "{completed}");
    assert!(got.contains("GOT") && !served(&got), "a confined tool was served: {got}");
    // The listener goes on serving its user.
    c.ok("session.list", json!({})).await;
    assert!(served(&probe_as(None, socket)));
}

#[tokio::test]
async fn the_tcp_listener_serves_its_user_and_refuses_other_users_and_confined_tools() {
    assert_root();
    let env = TestEnv::new();
    let (_server, address) = spawn_listening(&env, &["rpc", "--port", "0"], &[]).await;
    let addr = address.strip_prefix("tcp:").expect("a tcp address").to_string();
    let port = addr.rsplit(':').next().unwrap().to_string();
    assert!(served(&probe_as(None, &port)), "this user is served");
    let other = probe_as(Some(65534), &port);
    assert!(other.contains("GOT") && !served(&other), "uid 65534 was served: {other}");

    let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (read, write) = stream.into_split();
    let mut c = LineClient::new(read, write);
    let (got, completed) = tool_probe(&env, &mut c, &port).await;
    assert_eq!(completed["is_error"], json!(false), "the tool call through the listener ran: {completed}");
    assert!(completed["output"].as_str().unwrap().contains("finished"), "{completed}");
    assert!(got.contains("GOT") && !served(&got), "a confined tool was served: {got}");
    c.ok("session.list", json!({})).await;
    assert!(served(&probe_as(None, &port)));
}
