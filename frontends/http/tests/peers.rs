//! Who may reach `superpi gateway` and `superpi agui`: each test runs the real processes and
//! tries the attack (another user, a confined tool granted network, a page whose DNS name was
//! rebound to 127.0.0.1), which must fail, beside the same request from this user, which works.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers run curl and setpriv

use std::io::{Read, Write};
use std::process::Command;

use serde_json::json;
use superpi_tests::TestEnv;

const FRONTENDS: [&str; 2] = ["gateway", "agui"];

fn port(base: &str) -> u16 {
    base.rsplit(':').next().unwrap().parse().unwrap()
}

/// `GET /health` with this `Host`; the status code, or `None` when the server closed the
/// connection without an answer.
fn health(base: &str, host: &str) -> Option<u16> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port(base))).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    write!(stream, "GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.get(9..12).and_then(|code| code.parse().ok())
}

/// `curl` of `/health` run as `uid` (through setpriv): the status it printed (`000`: no answer).
fn curl_as(uid: Option<u32>, base: &str) -> String {
    let url = format!("{base}/health");
    let curl = ["curl", "-s", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", url.as_str()];
    let mut cmd = match uid {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.args([format!("--reuid={uid}"), format!("--regid={uid}"), "--clear-groups".into(), "--".into()]);
            c.args(curl);
            c
        }
        None => {
            let mut c = Command::new(curl[0]);
            c.args(&curl[1..]);
            c
        }
    };
    let out = cmd.output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn another_user_is_refused_before_any_request_is_served() {
    // SAFETY: geteuid cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 0, "this test switches to another uid with setpriv: run it as root");
    for name in FRONTENDS {
        let env = TestEnv::new();
        let (_running, base) = env.spawn_http(&[name, "--port", "0"], &[]);
        assert_eq!(curl_as(None, &base), "200", "{name}: this user is served");
        assert_eq!(curl_as(Some(65534), &base), "000", "{name}: uid 65534 was served");
        // With a token the token is the guard: another user may connect (and must present it).
        let env = TestEnv::new();
        let (_running, base) = env.spawn_http(&[name, "--port", "0"], &[("SUPERPI_GATEWAY_TOKEN", "k")]);
        assert_eq!(curl_as(Some(65534), &base), "200", "{name}: with tokens another user may connect");
    }
}

#[test]
fn a_confined_tool_granted_network_cannot_use_them() {
    for name in FRONTENDS {
        let env = TestEnv::new();
        let (_running, base) = env.spawn_http(&[name, "--port", "0"], &[]);
        assert_eq!(health(&base, "localhost"), Some(200), "{name}");
        // The model's bash call asks for network (allowed in auto) and speaks HTTP to the frontend.
        let command = format!(
            r"trap '' PIPE; exec 3<>/dev/tcp/127.0.0.1/{} && printf 'GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3 ; cat <&3 > got.txt; echo done > finished",
            port(&base)
        );
        let prompt = format!("@tool bash {}", json!({"command": command, "network": true}));
        let out = env.command(&["run", "--mode", "auto", &prompt]).stdin(std::process::Stdio::null()).output().unwrap();
        let finished = env.workspace.join("finished");
        assert!(finished.exists(), "{name}: the tool did not run: {}", String::from_utf8_lossy(&out.stderr));
        let got = std::fs::read_to_string(env.workspace.join("got.txt")).unwrap_or_default();
        assert!(!got.contains("HTTP/1.1"), "{name}: a confined tool was served: {got}");
    }
}

#[test]
fn a_dns_rebinding_host_is_refused_without_a_token() {
    for name in FRONTENDS {
        let env = TestEnv::new();
        let (_running, base) = env.spawn_http(&[name, "--port", "0"], &[]);
        let p = port(&base);
        for host in ["localhost".to_string(), format!("127.0.0.1:{p}"), format!("[::1]:{p}")] {
            assert_eq!(health(&base, &host), Some(200), "{name}: {host}");
        }
        for host in [format!("evil.example:{p}"), "localhost.evil.example".into(), format!("10.1.2.3:{p}")] {
            assert_eq!(health(&base, &host), Some(421), "{name}: {host} was served");
        }
        let env = TestEnv::new();
        let (_running, base) = env.spawn_http(&[name, "--port", "0"], &[("SUPERPI_GATEWAY_TOKEN", "k")]);
        assert_eq!(health(&base, "evil.example"), Some(200), "{name}: with tokens the token is the guard");
    }
}
