//! The kit's rules hold the same for both HTTP frontends: each test runs the real
//! `superpi gateway` and `superpi agui` processes. (Each frontend's own error shapes are
//! tested in its crate.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};

use superpi_client::principal::principal_for_token;
use superpi_tests::TestEnv;

/// Each frontend with a route that needs a token when tokens are configured.
const FRONTENDS: [(&str, &str); 2] = [("gateway", "/v1/models"), ("agui", "/agui/v1/sessions/t1/events")];

/// The status code of `GET path` on the loopback address of a server announced at `base`.
fn status(base: &str, path: &str, token: Option<&str>) -> u16 {
    send(base, "GET", path, token, "")
}

/// Sends one request (a JSON body when not empty) and reads its status code.
fn send(base: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> u16 {
    let port = base.rsplit(':').next().unwrap();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let length = body.len();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Content-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n{body}"
    )
    .unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    let line = String::from_utf8_lossy(&head);
    line[9..12].parse().unwrap_or_else(|_| panic!("not an HTTP status line: {line:?}"))
}

#[test]
fn a_non_loopback_bind_needs_a_token() {
    for (name, _) in FRONTENDS {
        let env = TestEnv::new();
        let (ok, err) = env.run_to_exit(&[name, "--bind", "0.0.0.0", "--port", "0"], &[]);
        assert!(!ok, "{name} listened on 0.0.0.0 without a token");
        assert!(err.contains("SUPERPI_GATEWAY_TOKEN") && err.contains("gateway.json"), "{name}: {err}");
        let (_running, base) =
            env.spawn_http(&[name, "--bind", "0.0.0.0", "--port", "0"], &[("SUPERPI_GATEWAY_TOKEN", "k")]);
        assert!(base.starts_with("http://0.0.0.0:"), "{name}: {base}");
        assert_eq!(status(&base, "/health", None), 200, "{name}");
    }
}

#[test]
fn tokens_from_gateway_json_guard_the_routes_and_satisfy_the_bind_rule() {
    for (name, guarded) in FRONTENDS {
        let env = TestEnv::new();
        let config = env.locations.config_dir.join("gateway.json");
        std::fs::write(&config, r#"{"tokens": ["from-file"], "tokenz": []}"#).unwrap();
        let (_, err) = env.run_to_exit(&[name, "--port", "0"], &[]);
        assert!(err.contains(&format!("chmod 600 {}", config.display())), "{name}: a readable gateway.json: {err}");
        std::fs::set_permissions(&config, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let (ok, err) = env.run_to_exit(&[name, "--port", "0"], &[]);
        assert!(!ok, "{name}: a gateway.json with an unknown key must stop the server");
        assert!(err.contains("gateway.json") && err.contains("tokenz"), "{name}: {err}");

        std::fs::write(&config, r#"{"tokens": ["from-file"]}"#).unwrap();
        // No SUPERPI_GATEWAY_TOKEN: the file's token alone allows a non-loopback bind.
        let (_running, base) = env.spawn_http(&[name, "--bind", "0.0.0.0", "--port", "0"], &[]);
        assert_eq!(status(&base, "/health", None), 200, "{name}: health needs no token");
        assert_eq!(status(&base, guarded, None), 401, "{name}: {guarded} without a token");
        assert_eq!(status(&base, guarded, Some("wrong")), 401, "{name}: {guarded} with a wrong token");
        assert_ne!(status(&base, guarded, Some("from-file")), 401, "{name}: {guarded} with the file's token");
    }
}

/// A token names the same principal in every frontend (superpi-client's `principal_for_token`,
/// which `superpi rpc` uses for its listed tokens too): what a token opens through either HTTP
/// frontend belongs to that principal in the kernel, and to no one else.
#[tokio::test(flavor = "multi_thread")]
async fn a_tokens_conversations_belong_to_the_principal_it_names() {
    let runs = [
        (
            "gateway",
            "/v1/chat/completions",
            r#"{"model": "superpi-code", "messages": [{"role": "user", "content": "hi"}]}"#,
        ),
        (
            "agui",
            "/agui/v1/run",
            r#"{"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}], "tools": [], "context": [], "state": {}, "forwardedProps": {}}"#,
        ),
    ];
    for (name, path, body) in runs {
        let env = TestEnv::new();
        let (_running, base) = env.spawn_http(&[name, "--port", "0"], &[("SUPERPI_GATEWAY_TOKEN", "the-token")]);
        assert_eq!(send(&base, "POST", path, Some("the-token"), body), 200, "{name}");
        let as_principal = |principal: &str| {
            let mut options = env.connect_options("test");
            options.principal = principal.to_string();
            options.remote = true;
            options
        };
        let owner =
            superpi_client::KernelClient::connect(&as_principal(&principal_for_token("the-token"))).await.unwrap();
        assert_eq!(owner.list().await.unwrap().len(), 1, "{name}: the token's principal owns the conversation");
        let other = superpi_client::KernelClient::connect(&as_principal("local")).await.unwrap();
        assert!(other.list().await.unwrap().is_empty(), "{name}: no one else sees it");
    }
}
