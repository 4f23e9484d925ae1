//! An OAuth-protected MCP server and its authorization server in one local HTTP listener
//! (tests/tests/mcp_oauth.rs): `/mcp` answers MCP (JSON, `initialize` era; `server/discover`
//! is not known) only with a live bearer token minted for it, else a 401 whose
//! `WWW-Authenticate` names its protected resource metadata; `/as` is the authorization
//! server (RFC 8414 metadata at `/.well-known/oauth-authorization-server/as`), with dynamic
//! client registration, an authorization endpoint that answers at once (the test plays the
//! browser) and a token endpoint. It enforces what a client must do: the PKCE verifier
//! matching the S256 challenge, the redirect URI exactly as registered, `resource` naming
//! `/mcp`, refresh tokens of the same client; it sends `iss` (RFC 9207) with the code, and
//! refuses expired tokens. What it saw is in [`OAuthFake::seen`].
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fixture fails loudly

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::Digest;

/// How the fake behaves.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// The access tokens' lifetime.
    pub expires_in: u64,
    /// Advertise `client_id_metadata_document_supported`.
    pub cimd: bool,
    /// Send this as `iss` with the code instead of the issuer (a mix-up attack).
    pub wrong_iss: Option<String>,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions { expires_in: 3600, cimd: false, wrong_iss: None }
    }
}

pub struct OAuthFake {
    pub base: String,
    state: Arc<Mutex<State>>,
}

struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
}

struct Access {
    client_id: String,
    scope: String,
    until: Instant,
}

#[derive(Default)]
struct State {
    options: OAuthOptions,
    clients: HashMap<String, Vec<String>>,
    codes: HashMap<String, Grant>,
    access: HashMap<String, Access>,
    /// A refresh token's client and scope.
    refresh: HashMap<String, (String, String)>,
    seen: Vec<String>,
    next: u64,
}

impl OAuthFake {
    pub fn start(options: OAuthOptions) -> OAuthFake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State { options, ..State::default() }));
        let (shared, at) = (state.clone(), base.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (state, base) = (shared.clone(), at.clone());
                std::thread::spawn(move || serve(stream, &base, &state));
            }
        });
        OAuthFake { base, state }
    }

    /// The MCP server's URL.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// What it saw, in order: `register`, `authorize`, `token authorization_code`, `token
    /// refresh_token`, `mcp 401`, `mcp METHOD`, and each refusal as `refused WHY`.
    pub fn seen(&self) -> Vec<String> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Every access token issued so far expires now (the refresh tokens stay good).
    pub fn expire_access_tokens(&self) {
        let now = Instant::now();
        for access in self.state.lock().unwrap().access.values_mut() {
            access.until = now;
        }
    }
}

struct Request {
    method: String,
    path: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Request { method, path: path.to_string(), query: form(query.as_bytes()), headers, body })
}

/// An `application/x-www-form-urlencoded` body or query.
fn form(text: &[u8]) -> HashMap<String, String> {
    url_pairs(&String::from_utf8_lossy(text))
}

fn url_pairs(text: &str) -> HashMap<String, String> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// base64url without padding, for the S256 challenge.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

struct Answer {
    status: &'static str,
    headers: Vec<(String, String)>,
    body: String,
}

fn json_answer(status: &'static str, body: Value) -> Answer {
    Answer { status, headers: vec![("content-type".into(), "application/json".into())], body: body.to_string() }
}

fn serve(mut stream: TcpStream, base: &str, state: &Mutex<State>) {
    let Some(request) = read_request(&stream) else { return };
    let answer = route(&request, base, state);
    let mut text =
        format!("HTTP/1.1 {}\r\nconnection: close\r\ncontent-length: {}\r\n", answer.status, answer.body.len());
    for (name, value) in &answer.headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(&answer.body);
    let _ = stream.write_all(text.as_bytes());
}

fn route(request: &Request, base: &str, state: &Mutex<State>) -> Answer {
    let mut state = state.lock().unwrap();
    let issuer = format!("{base}/as");
    let resource = format!("{base}/mcp");
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => json_answer(
            "200 OK",
            json!({"resource": resource, "authorization_servers": [issuer], "scopes_supported": ["tools"],
                   "bearer_methods_supported": ["header"]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server/as") => json_answer(
            "200 OK",
            json!({"issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
                   "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
                   "response_types_supported": ["code"], "grant_types_supported": ["authorization_code", "refresh_token"],
                   "code_challenge_methods_supported": ["S256"], "token_endpoint_auth_methods_supported": ["none"],
                   "scopes_supported": ["tools"], "authorization_response_iss_parameter_supported": true,
                   "client_id_metadata_document_supported": state.options.cimd}),
        ),
        ("POST", "/as/register") => register(&mut state, request),
        ("GET", "/as/authorize") => authorize(&mut state, request, &issuer, &resource),
        ("POST", "/as/token") => token(&mut state, request, &resource),
        (_, "/mcp") => mcp(&mut state, request, base),
        _ => Answer { status: "404 Not Found", headers: vec![], body: String::new() },
    }
}

fn refuse(state: &mut State, why: &str) -> Answer {
    state.seen.push(format!("refused {why}"));
    json_answer("400 Bad Request", json!({"error": "invalid_request", "error_description": why}))
}

fn register(state: &mut State, request: &Request) -> Answer {
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return refuse(state, "registration not JSON");
    };
    let uris: Vec<String> = body["redirect_uris"]
        .as_array()
        .map(|a| a.iter().filter_map(|u| u.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    if uris.is_empty() || !uris.iter().all(|u| u.starts_with("http://127.0.0.1:")) {
        return refuse(state, "redirect_uris must be loopback");
    }
    state.next += 1;
    let client_id = format!("client-{}", state.next);
    state.clients.insert(client_id.clone(), uris.clone());
    state.seen.push("register".into());
    json_answer(
        "201 Created",
        json!({"client_id": client_id, "redirect_uris": uris, "token_endpoint_auth_method": "none",
               "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}),
    )
}

fn authorize(state: &mut State, request: &Request, issuer: &str, resource: &str) -> Answer {
    let q = |k: &str| request.query.get(k).cloned().unwrap_or_default();
    let (client_id, redirect_uri) = (q("client_id"), q("redirect_uri"));
    let registered = match state.clients.get(&client_id) {
        Some(uris) => uris.contains(&redirect_uri),
        // A Client ID Metadata Document's URL: its document would list the redirect.
        None => {
            state.options.cimd && client_id.starts_with("https://") && redirect_uri.starts_with("http://127.0.0.1:")
        }
    };
    if !registered {
        return refuse(state, "unknown client or redirect_uri not registered");
    }
    if q("response_type") != "code" || q("code_challenge_method") != "S256" || q("code_challenge").len() < 43 {
        return refuse(state, "PKCE S256 and response_type=code are required");
    }
    if q("resource") != resource {
        return refuse(state, "resource must name the MCP server");
    }
    state.next += 1;
    let code = format!("code-{}", state.next);
    let grant =
        Grant { client_id, redirect_uri: redirect_uri.clone(), challenge: q("code_challenge"), scope: q("scope") };
    state.codes.insert(code.clone(), grant);
    state.seen.push(format!("authorize {}", q("client_id")));
    state.seen.push(format!("scope {}", q("scope")));
    let iss = state.options.wrong_iss.clone().unwrap_or_else(|| issuer.to_string());
    let location = format!("{redirect_uri}?code={code}&state={}&iss={}", encode(&q("state")), encode(&iss));
    Answer { status: "302 Found", headers: vec![("location".into(), location)], body: String::new() }
}

fn token(state: &mut State, request: &Request, resource: &str) -> Answer {
    let f = form(&request.body);
    let p = |k: &str| f.get(k).cloned().unwrap_or_default();
    if p("resource") != resource {
        return refuse(state, "resource must name the MCP server");
    }
    let client_id = p("client_id");
    let scope = match p("grant_type").as_str() {
        "authorization_code" => {
            let Some(grant) = state.codes.remove(&p("code")) else { return refuse(state, "unknown code") };
            if grant.client_id != client_id || grant.redirect_uri != p("redirect_uri") {
                return refuse(state, "client_id or redirect_uri differ from the authorization request");
            }
            let verified = base64url(&sha2::Sha256::digest(p("code_verifier").as_bytes()));
            if verified != grant.challenge {
                return refuse(state, "the PKCE verifier does not match the challenge");
            }
            grant.scope
        }
        "refresh_token" => match state.refresh.remove(&p("refresh_token")) {
            Some((owner, scope)) if owner == client_id => scope,
            _ => return refuse(state, "unknown refresh token"),
        },
        other => return refuse(state, &format!("grant_type {other}")),
    };
    state.seen.push(format!("token {}", p("grant_type")));
    state.next += 1;
    let (access, refresh) = (format!("at-{}", state.next), format!("rt-{}", state.next));
    let until = Instant::now() + Duration::from_secs(state.options.expires_in);
    state.access.insert(access.clone(), Access { client_id: client_id.clone(), scope: scope.clone(), until });
    state.refresh.insert(refresh.clone(), (client_id, scope.clone()));
    json_answer(
        "200 OK",
        json!({"access_token": access, "token_type": "Bearer", "expires_in": state.options.expires_in,
               "refresh_token": refresh, "scope": scope}),
    )
}

/// A refusal whose `WWW-Authenticate` names the protected resource metadata, and `params`.
fn challenged(status: &'static str, base: &str, params: &str) -> Answer {
    let challenge = format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\", {params}");
    Answer { status, headers: vec![("www-authenticate".into(), challenge)], body: String::new() }
}

fn mcp(state: &mut State, request: &Request, base: &str) -> Answer {
    let token = request.headers.get("authorization").and_then(|a| a.strip_prefix("Bearer ")).unwrap_or("");
    let live =
        state.access.get(token).filter(|a| a.until > Instant::now()).map(|a| (a.client_id.clone(), a.scope.clone()));
    let Some((client_id, scope)) = live else {
        let error = if token.is_empty() { String::new() } else { ", error=\"invalid_token\"".to_string() };
        state.seen.push(format!("mcp 401{}", if token.is_empty() { "" } else { " invalid_token" }));
        return challenged("401 Unauthorized", base, &format!("scope=\"tools\"{error}"));
    };
    if request.method != "POST" {
        return Answer { status: "405 Method Not Allowed", headers: vec![], body: String::new() };
    }
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        return json_answer("400 Bad Request", json!({"error": "not JSON"}));
    };
    let method = message["method"].as_str().unwrap_or("").to_string();
    state.seen.push(format!("mcp {method}"));
    let id = message["id"].clone();
    if id.is_null() {
        return Answer { status: "202 Accepted", headers: vec![], body: String::new() };
    }
    let result = match method.as_str() {
        "initialize" => {
            json!({"protocolVersion": message["params"]["protocolVersion"].as_str().unwrap_or("2025-11-25"),
                                "capabilities": {"tools": {}}, "serverInfo": {"name": "protected", "version": "1.0.0"}})
        }
        "tools/list" => {
            let tool = |name: &str| {
                json!({"name": name, "description": "Says whom the token was issued to.",
                "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": true}})
            };
            json!({"tools": [tool("whoami"), tool("admin")]})
        }
        // `admin` needs the scope `admin`: without it, a 403 asking for it (step-up).
        "tools/call" if message["params"]["name"] == "admin" && !scope.split(' ').any(|s| s == "admin") => {
            state.seen.push("mcp 403 insufficient_scope".into());
            return challenged("403 Forbidden", base, "error=\"insufficient_scope\", scope=\"tools admin\"");
        }
        "tools/call" => json!({"content": [{"type": "text", "text": format!("token of {client_id} for {scope}")}]}),
        "ping" => json!({}),
        _ => {
            return json_answer(
                "200 OK",
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}),
            );
        }
    };
    json_answer("200 OK", json!({"jsonrpc": "2.0", "id": id, "result": result}))
}
