//! The web tools against local HTTP servers: the forgery policy refuses loopback unless
//! `web.private_hosts` names the host, a redirect to another host is checked again, the size
//! and time limits cut, HTML becomes text, and web_search reads a local fake backend.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use superpi_policy::{SearchBackend, SearchKind, WebSettings};
use superpi_proto::tool::ToolCallResult;
use superpi_sandbox::{ToolCall, ToolRunner};
use tokio_util::sync::CancellationToken;

type Route = Box<dyn Fn(&str, &[String]) -> Vec<u8> + Send + Sync>;
/// Each request's line and its headers.
type Seen = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// An HTTP/1.1 server on 127.0.0.1: each request's line and headers are kept, and `route`
/// answers it (a whole response). `Connection: close` on every answer.
struct Server {
    port: u16,
    seen: Seen,
}

impl Server {
    fn start(route: Route) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                serve(stream, &route, &kept);
            }
        });
        Server { port, seen }
    }

    /// The request lines seen so far ("GET /path HTTP/1.1").
    fn lines(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(line, _)| line.clone()).collect()
    }

    fn headers(&self, n: usize) -> Vec<String> {
        self.seen.lock().unwrap()[n].1.clone()
    }
}

fn serve(mut stream: TcpStream, route: &Route, seen: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        headers.push(header.trim().to_ascii_lowercase());
    }
    let line = line.trim().to_string();
    seen.lock().unwrap().push((line.clone(), headers.clone()));
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let _ = stream.write_all(&route(&path, &headers));
}

fn response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn redirect(location: &str) -> Vec<u8> {
    format!("HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").into_bytes()
}

const PAGE: &str = "<html><head><title>Local page</title><script>var secret = 1;</script></head>\
    <body><h1>Welcome</h1><p>Some <em>words</em> and a <a href=\"/next\">link</a>.</p></body></html>";

/// A server answering `/page` with PAGE, `/big` with 5000 bytes of text, `/pdf` with a PDF,
/// `/to/URL` with a redirect to URL, `/hang` never.
fn site() -> Server {
    Server::start(Box::new(|path, _| match path {
        "/page" => response("200 OK", "text/html; charset=utf-8", PAGE.as_bytes()),
        "/big" => response("200 OK", "text/plain", "0123456789".repeat(500).as_bytes()),
        "/pdf" => response("200 OK", "application/pdf", b"%PDF-1.7\n\0\0binary"),
        "/missing" => response("404 Not Found", "text/html", b"<p>no such page</p>"),
        "/hang" => {
            std::thread::sleep(Duration::from_secs(5));
            Vec::new()
        }
        p if p.starts_with("/to/") => redirect(&p["/to/".len()..]),
        _ => response("200 OK", "text/plain", b"other"),
    }))
}

fn settings(private: &[&str]) -> WebSettings {
    WebSettings { private_hosts: private.iter().map(|h| h.to_string()).collect(), ..WebSettings::default() }
}

fn runner(name: &str, web: WebSettings) -> Arc<dyn ToolRunner> {
    let source: superpi_web::WebSettingsSource = Arc::new(move || Ok(web.clone()));
    superpi_web::tools(source).into_iter().find(|(def, _)| def.name == name).unwrap().1
}

fn call(name: &str, arguments: Value, allowed_hosts: Option<Vec<String>>) -> ToolCall {
    ToolCall {
        conversation_id: 1,
        call_id: "c1".into(),
        name: name.into(),
        arguments,
        workspace: None,
        network: true,
        read_only: false,
        timeout: None,
        protected: Default::default(),
        allowed_hosts,
        extra_roots: Vec::new(),
    }
}

async fn fetch(web: WebSettings, arguments: Value) -> ToolCallResult {
    runner("web_fetch", web).run(&call("web_fetch", arguments, None), CancellationToken::new(), None).await
}

#[tokio::test]
async fn a_local_server_is_refused_by_the_forgery_policy_and_reached_when_configured() {
    let server = site();
    let url = format!("http://127.0.0.1:{}/page", server.port);
    let refused = fetch(settings(&[]), json!({"url": url})).await;
    assert!(refused.is_error, "{refused:?}");
    assert!(refused.output.contains("a loopback address"), "{}", refused.output);
    let by_name = fetch(settings(&[]), json!({"url": format!("http://localhost:{}/page", server.port)})).await;
    assert!(by_name.is_error && by_name.output.contains("local host name"), "{}", by_name.output);
    assert!(server.lines().is_empty(), "nothing reached the server: {:?}", server.lines());

    let allowed = fetch(settings(&["127.0.0.1"]), json!({"url": url})).await;
    assert!(!allowed.is_error, "{}", allowed.output);
    assert!(
        allowed.output.contains("Welcome") && allowed.output.contains("Some *words* and a [link][1]."),
        "{}",
        allowed.output
    );
    assert!(!allowed.output.contains("secret") && !allowed.output.contains("<p>"), "{}", allowed.output);
    let facts = allowed.structured.unwrap();
    assert_eq!(facts["title"], "Local page");
    assert_eq!(facts["status"], 200);
    assert_eq!(facts["links"], json!([format!("http://127.0.0.1:{}/next", server.port)]));
    assert_eq!(allowed.details.unwrap()["address"], format!("127.0.0.1:{}", server.port));
    assert_eq!(server.lines(), ["GET /page HTTP/1.1"]);
    let raw = fetch(settings(&["127.0.0.1"]), json!({"url": url, "format": "raw"})).await;
    assert_eq!(raw.output, PAGE);
}

#[tokio::test]
async fn a_redirect_to_a_refused_host_is_refused_and_never_requested() {
    let server = site();
    let port = server.port;
    // localhost is allowed; the redirect leads to 127.0.0.1, which is not.
    let url = format!("http://localhost:{port}/to/http://127.0.0.1:{port}/page");
    let result = fetch(settings(&["localhost"]), json!({"url": url})).await;
    assert!(result.is_error, "{}", result.output);
    assert!(result.output.contains("`127.0.0.1` is a loopback address"), "{}", result.output);
    assert_eq!(server.lines().len(), 1, "only the first hop was requested: {:?}", server.lines());

    // A redirect within the allowed host is followed and reported.
    let result = fetch(settings(&["localhost"]), json!({"url": format!("http://localhost:{port}/to//page")})).await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(result.details.unwrap()["redirects"], json!([format!("http://localhost:{port}/page")]));
    assert_eq!(result.structured.unwrap()["final_url"], format!("http://localhost:{port}/page"));
}

#[tokio::test]
async fn the_network_allow_list_applies_to_every_hop() {
    let server = site();
    let port = server.port;
    let web = settings(&["localhost", "127.0.0.1"]);
    let only_localhost = Some(vec!["localhost".to_string()]);
    let fetch_listed = |url: String| {
        let runner = runner("web_fetch", web.clone());
        let call = call("web_fetch", json!({"url": url}), only_localhost.clone());
        async move { runner.run(&call, CancellationToken::new(), None).await }
    };
    assert!(!fetch_listed(format!("http://localhost:{port}/page")).await.is_error);
    let hop = fetch_listed(format!("http://localhost:{port}/to/http://127.0.0.1:{port}/page")).await;
    assert!(hop.is_error && hop.output.contains("not in network.allow_hosts"), "{}", hop.output);
    assert_eq!(server.lines().len(), 2, "{:?}", server.lines());
}

#[tokio::test]
async fn too_many_redirects_end_the_fetch() {
    let server = site();
    let port = server.port;
    let mut url = format!("http://127.0.0.1:{port}/page");
    for _ in 0..6 {
        url = format!("http://127.0.0.1:{port}/to/{url}");
    }
    let result = fetch(settings(&["127.0.0.1"]), json!({"url": url})).await;
    assert!(result.is_error && result.output.contains("more than 5 redirects"), "{}", result.output);
}

#[tokio::test]
async fn the_size_limit_cuts_the_body_and_max_chars_pages_the_text() {
    let server = site();
    let url = format!("http://127.0.0.1:{}/big", server.port);
    let web = WebSettings { max_bytes: 1000, ..settings(&["127.0.0.1"]) };
    let cut = fetch(web, json!({"url": url})).await;
    assert!(!cut.is_error, "{}", cut.output);
    let facts = cut.structured.unwrap();
    assert_eq!((facts["bytes"].as_u64(), facts["truncated"].as_bool()), (Some(1000), Some(true)));
    assert!(cut.output.starts_with(&"0123456789".repeat(100)), "{}", cut.output);
    assert!(cut.output.contains("longer than 1000 bytes (web.max_bytes)"), "{}", cut.output);

    let first = fetch(settings(&["127.0.0.1"]), json!({"url": url, "max_chars": 30})).await;
    assert!(
        first.output.starts_with("012345678901234567890123456789\n\n[cut at character 30 of 5000"),
        "{}",
        first.output
    );
    let next = fetch(settings(&["127.0.0.1"]), json!({"url": url, "max_chars": 5, "offset": 4997})).await;
    assert_eq!(next.output, "789");
}

#[tokio::test]
async fn binary_bodies_and_error_statuses_are_errors() {
    let server = site();
    let web = settings(&["127.0.0.1"]);
    let pdf = fetch(web.clone(), json!({"url": format!("http://127.0.0.1:{}/pdf", server.port)})).await;
    assert!(pdf.is_error && pdf.output.contains("application/pdf"), "{}", pdf.output);
    let missing = fetch(web, json!({"url": format!("http://127.0.0.1:{}/missing", server.port)})).await;
    assert!(missing.is_error && missing.output.starts_with("HTTP 404 from"), "{}", missing.output);
    assert!(missing.output.contains("no such page"), "{}", missing.output);
}

#[tokio::test]
async fn time_cancel_and_the_network_grant_bound_a_call() {
    let server = site();
    let url = format!("http://127.0.0.1:{}/hang", server.port);
    let web = WebSettings { timeout: Duration::from_secs(1), ..settings(&["127.0.0.1"]) };
    let late = fetch(web.clone(), json!({"url": url})).await;
    assert!(late.is_error && late.output.contains("timed out after 1 s"), "{}", late.output);

    let cancel = CancellationToken::new();
    cancel.cancel();
    let cancelled =
        runner("web_fetch", web.clone()).run(&call("web_fetch", json!({"url": url}), None), cancel, None).await;
    assert_eq!(cancelled.output, "cancelled");

    let mut offline = call("web_fetch", json!({"url": url}), None);
    offline.network = false;
    let refused = runner("web_fetch", web).run(&offline, CancellationToken::new(), None).await;
    assert!(refused.is_error && refused.output.contains("not granted the network"), "{}", refused.output);
    let bad = fetch(settings(&[]), json!({"url": "https://example.com", "headers": {}})).await;
    assert!(bad.is_error && bad.output.contains("unknown field `headers`"), "{}", bad.output);
}

#[tokio::test]
async fn web_search_asks_the_configured_backend_and_says_when_there_is_none() {
    let backend = Server::start(Box::new(|_, _| {
        let answer = json!({"query": "rust", "results": [
            {"title": "Rust", "url": "https://www.rust-lang.org/", "content": "A language"},
            {"title": "Crates", "url": "https://crates.io/", "content": "Packages"},
            {"title": "Docs", "url": "https://docs.rs/", "content": "Documentation"}
        ]});
        response("200 OK", "application/json", answer.to_string().as_bytes())
    }));
    let search = |web: WebSettings, arguments: Value| async move {
        runner("web_search", web).run(&call("web_search", arguments, None), CancellationToken::new(), None).await
    };
    let none = search(settings(&[]), json!({"query": "rust"})).await;
    assert!(none.is_error && none.output.contains("set `web.search` in settings.json"), "{}", none.output);

    let url = format!("http://127.0.0.1:{}", backend.port);
    let web = WebSettings {
        search: Some(SearchBackend { kind: SearchKind::Searxng, url, api_key_env: None }),
        ..settings(&[])
    };
    let found = search(web, json!({"query": "rust lang", "max_results": 2})).await;
    assert!(!found.is_error, "{}", found.output);
    assert_eq!(
        found.output,
        "1. Rust\n   https://www.rust-lang.org/\n   A language\n2. Crates\n   https://crates.io/\n   Packages"
    );
    assert_eq!(found.structured.unwrap()["results"].as_array().unwrap().len(), 2);
    assert_eq!(backend.lines(), ["GET /search?q=rust+lang&format=json HTTP/1.1"]);
}

#[tokio::test]
async fn the_brave_backend_sends_its_key() {
    let backend = Server::start(Box::new(|_, headers| {
        let answer = if headers.iter().any(|h| h == "x-subscription-token: k-123") {
            json!({"web": {"results": [{"title": "A", "url": "https://a.example/", "description": "first"}]}})
        } else {
            json!({"error": "no key"})
        };
        response("200 OK", "application/json", answer.to_string().as_bytes())
    }));
    let backend_url = format!("http://127.0.0.1:{}/res/v1/web/search", backend.port);
    let brave = SearchBackend { kind: SearchKind::Brave, url: backend_url, api_key_env: Some("BRAVE_KEY".into()) };
    let client = superpi_web::search::client().unwrap();
    let env = |name: &str| (name == "BRAVE_KEY").then(|| "k-123".to_string());
    let hits = superpi_web::search::search(&client, &brave, "a b", 3, env).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(backend.lines(), ["GET /res/v1/web/search?q=a+b&count=3 HTTP/1.1"]);
    assert!(backend.headers(0).contains(&"accept: application/json".to_string()));
    let missing = superpi_web::search::search(&client, &brave, "a", 3, |_| None).await.unwrap_err();
    assert!(missing.contains("`BRAVE_KEY`"), "{missing}");
}
