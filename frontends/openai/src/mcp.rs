//! MCP over Streamable HTTP at `/mcp`: the MCP server of superpi-mcp behind rmcp's session
//! service, with the gateway's tokens and Origin check (done before this module is reached),
//! sessions owned by the principal that opened them, `?harness=` on `initialize`, notifications
//! about a request on that request's stream ([`crate::mcp_streams`]) and anything else on the
//! session's standalone stream (`GET /mcp`). A 2026-07-28 request (its version in its `_meta`,
//! or `server/discover`) needs no session: rmcp serves it statelessly with a fresh handler, so
//! any gateway behind a load balancer answers it; only the earlier revisions keep sessions here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use superpi_client::ConnectOptions;
use superpi_client::sync::lock;
use superpi_mcp::{Approval, McpConfig, SuperpiMcp};

use crate::mcp_streams::RequestStreams;

const SESSION_HEADER: &str = "mcp-session-id";

/// An MCP session closes after this long without a request.
const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Open MCP sessions at most; an `initialize` beyond them is refused with 503.
const MAX_SESSIONS: usize = 1000;

/// Largest MCP request body read.
const MAX_BODY: usize = 16 << 20;

type Service = StreamableHttpService<SuperpiMcp, RequestStreams>;

/// Which rmcp service serves a session: the principal, and the harness named on `initialize`.
type Key = (String, Option<String>);

/// The MCP endpoint's state: one rmcp service per (principal, harness), and which principal
/// owns each session id.
pub struct McpHttp {
    connect: ConnectOptions,
    workspace: String,
    tokens_enabled: bool,
    services: Mutex<HashMap<Key, (Service, Arc<LocalSessionManager>)>>,
    sessions: Mutex<HashMap<String, Key>>,
}

impl McpHttp {
    pub fn new(connect: ConnectOptions, workspace: String, tokens_enabled: bool) -> Self {
        McpHttp {
            connect,
            workspace,
            tokens_enabled,
            services: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn service(&self, key: &Key) -> Service {
        let mut services = lock(&self.services);
        if let Some((service, _)) = services.get(key) {
            return service.clone();
        }
        let mut connect = self.connect.clone();
        connect.principal = key.0.clone();
        connect.remote = true;
        connect.frontend = "gateway-mcp".to_string();
        // An HTTP client holds a token, not necessarily a person's consent: askable calls
        // are refused, as before `superpi mcp` took its host's consent.
        let config = McpConfig {
            connect,
            workspace: self.workspace.clone(),
            harness: key.1.clone(),
            approval: Approval::Refuse,
            mode: None,
        };
        let mut http = StreamableHttpServerConfig::default().with_sse_keep_alive(None);
        // Our own Origin check runs first; rmcp's Host check guards a loopback listener
        // against DNS rebinding, and a token guards any other.
        if self.tokens_enabled {
            http = http.disable_allowed_hosts();
        }
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(SESSION_IDLE);
        let manager = Arc::new(manager);
        let streams = Arc::new(RequestStreams::new(manager.clone()));
        let service = StreamableHttpService::new(move || Ok(SuperpiMcp::new(config.clone())), streams, http);
        services.insert(key.clone(), (service.clone(), manager));
        service
    }

    /// Forgets the session ids whose sessions rmcp has closed (idle past [`SESSION_IDLE`]).
    async fn prune(&self) {
        let known: Vec<(String, Key)> =
            lock(&self.sessions).iter().map(|(id, key)| (id.clone(), key.clone())).collect();
        let mut gone = Vec::new();
        for (id, key) in known {
            let manager = lock(&self.services).get(&key).map(|(_, m)| m.clone());
            let alive = match manager {
                Some(manager) => manager.sessions.read().await.contains_key(id.as_str()),
                None => false,
            };
            if !alive {
                gone.push(id);
            }
        }
        let mut sessions = lock(&self.sessions);
        for id in gone {
            sessions.remove(&id);
        }
    }

    /// Serves one request of an authenticated principal.
    pub async fn handle(&self, principal: String, harness: Option<String>, request: Request<Body>) -> Response {
        let session = session_id(request.headers());
        let request = if session.is_none() && request.method() == Method::POST {
            // Only `initialize` opens a session; a 2026-07-28 request needs none; anything
            // else needs one.
            let (parts, body) = request.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
                return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
            };
            let stateless = is_stateless(&bytes);
            if !stateless && !is_initialize(&bytes) {
                return (StatusCode::BAD_REQUEST, "Bad Request: Mcp-Session-Id is required").into_response();
            }
            if !stateless && lock(&self.sessions).len() >= MAX_SESSIONS {
                self.prune().await;
                if lock(&self.sessions).len() >= MAX_SESSIONS {
                    return (StatusCode::SERVICE_UNAVAILABLE, "too many open MCP sessions").into_response();
                }
            }
            Request::from_parts(parts, Body::from(bytes))
        } else {
            request
        };
        let key = match &session {
            Some(id) => match lock(&self.sessions).get(id) {
                Some(owner) if owner.0 == principal => owner.clone(),
                // Another principal's session reads as an unknown one.
                Some(_) => return (StatusCode::NOT_FOUND, "unknown MCP session").into_response(),
                None => (principal, None),
            },
            None => (principal, harness),
        };
        let is_delete = request.method() == Method::DELETE;
        let service = self.service(&key);
        let response = service.handle(request).await;
        let status = response.status();
        match &session {
            None => {
                if let Some(id) = session_id(response.headers()) {
                    lock(&self.sessions).insert(id, key);
                }
            }
            Some(id) if (is_delete && status.is_success()) || status == StatusCode::NOT_FOUND => {
                lock(&self.sessions).remove(id);
            }
            Some(_) => {}
        }
        response.map(Body::new)
    }
}

/// Whether a POST body is one JSON-RPC `initialize` request.
fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|v| {
        v.get("method").and_then(serde_json::Value::as_str) == Some("initialize") && v.get("id").is_some()
    })
}

/// Whether a POST body is a message of the stateless revision (2026-07-28 on): `server/discover`,
/// or one naming its protocol version in `_meta`. rmcp routes it the same way.
fn is_stateless(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|v| {
        let method = v.get("method").and_then(serde_json::Value::as_str);
        let version =
            v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion").and_then(serde_json::Value::as_str);
        method == Some("server/discover") || version.is_some_and(|v| v >= superpi_mcp::MODERN_PROTOCOL.as_str())
    })
}

fn session_id(headers: &HeaderMap) -> Option<String> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_initialize_opens_a_session() {
        assert!(is_initialize(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#));
        assert!(!is_initialize(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#));
        assert!(!is_initialize(br#"{"jsonrpc":"2.0","method":"initialize"}"#));
        assert!(!is_initialize(b"not json"));
    }

    #[test]
    fn a_2026_request_needs_no_session() {
        assert!(is_stateless(br#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#));
        let listed = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":
            {"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        assert!(is_stateless(listed.as_bytes()));
        let old = listed.replace("2026-07-28", "2025-11-25");
        assert!(!is_stateless(old.as_bytes()));
        assert!(!is_stateless(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#));
        assert!(!is_initialize(br#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#));
    }
}
