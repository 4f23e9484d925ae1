//! End to end: the web block through the terminal frontend (`superpi run`), the mock model,
//! the kernel's pipeline and a local HTTP server. The request-forgery policy refuses the
//! server until `web.private_hosts` names it, a redirect to a host it does not name is
//! refused, the network policy decides first, `web_search` reads a local fake SearXNG, and
//! only the harnesses that take the web block offer the tools.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use superpi_tests::TestEnv;

/// A local HTTP server: `/page` is HTML, `/to/URL` redirects to URL, `/search` answers as
/// SearXNG's JSON format does. Keeps each request line.
fn server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(request) = superpi_tests::http::read_request(&stream) else { continue };
            let path = request.path().to_string();
            kept.lock().unwrap().push(request.line);
            let (head, body) = if let Some(to) = path.strip_prefix("/to/") {
                (format!("302 Found\r\nlocation: {to}"), String::new())
            } else if path.starts_with("/search?") {
                let answer = json!({"results": [
                    {"title": "Superpi docs", "url": "https://superpi.example/docs", "content": "How it works"}
                ]});
                ("200 OK\r\ncontent-type: application/json".to_string(), answer.to_string())
            } else {
                let page = "<html><head><title>Intranet</title></head><body><h1>Quarterly notes</h1>\
                            <p>The <b>kernel</b> ships.</p></body></html>";
                ("200 OK\r\ncontent-type: text/html".to_string(), page.to_string())
            };
            let answer =
                format!("HTTP/1.1 {head}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (port, seen)
}

/// `superpi run --harness HARNESS` with the mock model calling `tool` with `args` once;
/// the stored `tool_completed` event of that call.
fn run_tool(env: &TestEnv, harness: &str, tool: &str, args: Value) -> Value {
    let prompt = format!("@tool {tool} {args}");
    let out = env.command(&["run", "--harness", harness, &prompt]).stdin(std::process::Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let wire: String = db
        .query_row(
            "SELECT wire FROM events WHERE type = 'tool_completed' ORDER BY conversation_id DESC, seq DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("no tool_completed: {e}; stderr: {stderr}"));
    serde_json::from_str(&wire).unwrap()
}

fn settings(env: &TestEnv, settings: Value) {
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
}

#[test]
fn a_local_server_is_refused_until_private_hosts_names_it() {
    let env = TestEnv::new();
    let (port, seen) = server();
    let url = format!("http://127.0.0.1:{port}/page");
    let refused = run_tool(&env, "superpi-assistant", "web_fetch", json!({"url": url}));
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(refused["output"].as_str().unwrap().contains("is a loopback address"), "{refused}");
    assert!(seen.lock().unwrap().is_empty(), "the server was never reached");

    // The settings are read at each call: no restart.
    settings(&env, json!({"web": {"private_hosts": ["127.0.0.1"]}}));
    let fetched = run_tool(&env, "superpi-assistant", "web_fetch", json!({"url": url}));
    assert_eq!(fetched["is_error"], false, "{fetched}");
    let output = fetched["output"].as_str().unwrap();
    assert!(output.contains("# Quarterly notes") && output.contains("The **kernel** ships."), "{output}");
    assert_eq!(fetched["structured"]["title"], "Intranet");
    assert_eq!(*seen.lock().unwrap(), ["GET /page HTTP/1.1"]);
}

#[test]
fn a_redirect_from_an_allowed_host_to_loopback_is_refused() {
    let env = TestEnv::new();
    let (port, seen) = server();
    settings(&env, json!({"web": {"private_hosts": ["localhost"]}}));
    let url = format!("http://localhost:{port}/to/http://127.0.0.1:{port}/page");
    let result = run_tool(&env, "superpi-assistant", "web_fetch", json!({"url": url}));
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result["output"].as_str().unwrap().contains("`127.0.0.1` is a loopback address"), "{result}");
    assert_eq!(seen.lock().unwrap().len(), 1, "only the first hop was requested");
}

#[test]
fn the_network_policy_decides_before_the_fetch() {
    let env = TestEnv::new();
    let (port, seen) = server();
    settings(&env, json!({"network": {"policy": "deny"}, "web": {"private_hosts": ["127.0.0.1"]}}));
    let url = format!("http://127.0.0.1:{port}/page");
    let denied = run_tool(&env, "superpi-assistant", "web_fetch", json!({"url": url}));
    assert_eq!(denied["is_error"], true, "{denied}");
    assert!(denied["output"].as_str().unwrap().contains("refused by the network policy"), "{denied}");

    // The network policy is read when the kernel starts (a conversation without a workspace).
    let env = TestEnv::new();
    settings(
        &env,
        json!({"network": {"policy": "allowlist", "allow_hosts": ["localhost"]},
               "web": {"private_hosts": ["127.0.0.1", "localhost"]}}),
    );
    let unlisted = run_tool(&env, "superpi-assistant", "web_fetch", json!({"url": url}));
    assert!(unlisted["output"].as_str().unwrap().contains("not in network.allow_hosts"), "{unlisted}");
    let hop = format!("http://localhost:{port}/to/http://127.0.0.1:{port}/page");
    let redirected = run_tool(&env, "superpi-assistant", "web_fetch", json!({"url": hop}));
    assert!(redirected["output"].as_str().unwrap().contains("not in network.allow_hosts"), "{redirected}");
    assert_eq!(*seen.lock().unwrap(), [format!("GET /to/http://127.0.0.1:{port}/page HTTP/1.1")]);
}

#[test]
fn web_search_reads_the_configured_backend() {
    let env = TestEnv::new();
    let none = run_tool(&env, "superpi-assistant", "web_search", json!({"query": "superpi"}));
    assert_eq!(none["is_error"], true, "{none}");
    assert!(none["output"].as_str().unwrap().contains("no search backend"), "{none}");

    let (port, seen) = server();
    settings(&env, json!({"web": {"search": {"backend": "searxng", "url": format!("http://127.0.0.1:{port}")}}}));
    let found = run_tool(&env, "superpi-assistant", "web_search", json!({"query": "superpi kernel"}));
    assert_eq!(found["is_error"], false, "{found}");
    assert_eq!(found["output"], "1. Superpi docs\n   https://superpi.example/docs\n   How it works");
    assert_eq!(*seen.lock().unwrap(), ["GET /search?q=superpi+kernel&format=json HTTP/1.1"]);
}

#[test]
fn only_harnesses_with_the_web_block_offer_it() {
    let env = TestEnv::new();
    let out = env.command(&["harnesses", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = |id: &str| -> Vec<String> {
        let harness = listing.as_array().unwrap().iter().find(|h| h["id"] == id).unwrap();
        serde_json::from_value(harness["tools"].clone()).unwrap()
    };
    // The assistant takes the web and memory blocks, the librarian those and scheduling.
    let web = ["web_fetch".to_string(), "web_search".to_string()];
    assert_eq!(
        tools("superpi-assistant").iter().filter(|t| t.starts_with("web_")).collect::<Vec<_>>(),
        web.iter().collect::<Vec<_>>()
    );
    assert!(tools("superpi-assistant").iter().all(|t| t.starts_with("web_") || t.starts_with("memory_")));
    assert!(web.iter().all(|t| tools("superpi-librarian").contains(t)));
    for id in ["superpi-code", "superpi-planner"] {
        assert!(!tools(id).iter().any(|t| t.starts_with("web_")), "{id}: {:?}", tools(id));
    }
    let result = run_tool(&env, "superpi-code", "web_fetch", json!({"url": "https://example.com/"}));
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result["output"].as_str().unwrap().contains("web_fetch"), "{result}");
}
