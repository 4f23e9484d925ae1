//! OAuth 2.1 for HTTP MCP servers, as the MCP authorization spec (2025-11-25, 2026-07-28)
//! has it, through rmcp's `auth` (its `AuthorizationManager`): the server's 401 challenge
//! (`resource_metadata`) or its well-known path gives the protected resource metadata, that
//! the authorization server (RFC 8414, OIDC fallbacks); the client id is the settings'
//! preregistered one, else a Client ID Metadata Document's URL where the authorization
//! server supports them, else one from dynamic client registration; PKCE S256 (a server
//! that does not advertise it is refused), the `resource` parameter on every request, the
//! response's `iss` checked (RFC 9207), and refresh before expiry or on a refused token.
//!
//! [`Login`] is the browser step (`superpi mcp login NAME`): its URL is opened by the
//! person, and [`Login::finish`] takes the redirect on a loopback port. The tokens go to
//! `DATA_DIR/mcp-oauth/NAME.json` (0600, see `store.rs`), never to the settings nor a log;
//! [`authorized_client`] sends them for the kernel's connections.

mod redirect;
mod store;

use std::path::Path;
use std::time::Duration;

use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession};
use superpi_policy::McpOAuth;

pub use self::redirect::Redirect;
use self::store::FileStore;
pub use self::store::token_path;

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("{0}")]
    Auth(#[from] AuthError),
    #[error("the server publishes no OAuth metadata (no protected resource or authorization server metadata)")]
    NoMetadata,
    #[error("the authorization server does not advertise PKCE with S256, which MCP requires")]
    NoPkce,
    #[error("the redirect: {0}")]
    Redirect(String),
    #[error("the tokens' file: {0}")]
    Store(#[from] std::io::Error),
}

/// A login begun: the URL the person opens, and the redirect that finishes it.
pub struct Login {
    session: AuthorizationSession,
    redirect: Redirect,
    /// The file of the scope a refusal asked for, answered by this login.
    wanted: std::path::PathBuf,
}

impl Login {
    /// Discovers the authorization server of the MCP server at `url`, gets a client id and
    /// prepares the authorization request (PKCE, `state`, `resource`), redirected to
    /// `redirect`. Nothing is stored until [`Login::finish`].
    pub async fn begin(
        data_dir: &Path,
        name: &str,
        url: &str,
        settings: &McpOAuth,
        redirect: Redirect,
    ) -> Result<Login, OAuthError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let challenge = challenge(url).await;
        let mut manager = AuthorizationManager::new(url).await?;
        let resolution = manager.resolve_metadata_from_challenge(challenge.as_deref()).await?;
        if !resolution.source.is_discovered() {
            return Err(OAuthError::NoMetadata);
        }
        // 2025-11-25 and later: no advertised S256, no flow (rmcp would try it anyway).
        let methods = resolution.metadata.code_challenge_methods_supported.clone().unwrap_or_default();
        if !methods.iter().any(|m| m == "S256") {
            return Err(OAuthError::NoPkce);
        }
        manager.set_metadata(resolution.metadata);
        manager.set_credential_store(FileStore { path: token_path(data_dir, name), url: url.to_string() });
        let mut request =
            AuthorizationRequest::new(redirect.uri()).with_client_name("superpi").with_initial_scope_selection();
        // The settings' scopes, else the scope a refusal asked for, else the server's choice.
        let wanted = std::fs::read_to_string(wanted_path(data_dir, name)).unwrap_or_default();
        let wanted: Vec<String> = wanted.split_whitespace().map(str::to_string).collect();
        match (&settings.scopes, wanted) {
            (scopes, _) if !scopes.is_empty() => request = request.with_scopes(scopes.clone()),
            (_, wanted) if !wanted.is_empty() => request = request.with_scopes(wanted),
            _ => {}
        }
        if let Some(client_id) = &settings.client_id {
            request = request.with_preregistered_client(client_id.clone());
        }
        if let Some(document) = &settings.client_metadata_url {
            request = request.with_client_metadata_url(document.clone());
        }
        let session = AuthorizationSession::new(manager, request).await.map_err(|(_, err)| err)?;
        Ok(Login { session, redirect, wanted: wanted_path(data_dir, name) })
    }

    /// The authorization URL for the person's browser.
    pub fn url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// Waits (within `patience`) for the browser at the redirect, checks the response
    /// (`state`, `iss`), exchanges the code and stores the tokens.
    pub async fn finish(self, patience: Duration) -> Result<(), OAuthError> {
        let back = self.redirect.wait(patience).await?;
        if let Some(refused) = refusal(&back) {
            return Err(OAuthError::Auth(AuthError::AuthorizationFailed(refused)));
        }
        self.session.handle_callback_url(&back).await?;
        let _ = std::fs::remove_file(&self.wanted);
        Ok(())
    }
}

/// What an authorization response that carries an `error` says.
fn refusal(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let error = pairs.iter().find(|(k, _)| k == "error")?.1.clone();
    let description = pairs.iter().find(|(k, _)| k == "error_description").map(|(_, v)| format!(": {v}"));
    Some(format!("the authorization server refused: {error}{}", description.unwrap_or_default()))
}

/// Notes `scope` (a 403 `insufficient_scope` asked for it) for `name`'s next login.
pub(crate) fn want_scope(data_dir: &Path, name: &str, scope: &str) -> Result<(), std::io::Error> {
    std::fs::write(wanted_path(data_dir, name), scope)
}

/// The scope a server last asked for, beside its tokens (not a secret).
fn wanted_path(data_dir: &Path, name: &str) -> std::path::PathBuf {
    token_path(data_dir, name).with_extension("scope")
}

/// Removes `name`'s tokens (and a scope noted for its next login); whether there were any.
pub fn logout(data_dir: &Path, name: &str) -> Result<bool, OAuthError> {
    let _ = std::fs::remove_file(wanted_path(data_dir, name));
    match std::fs::remove_file(token_path(data_dir, name)) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// Whether `name` holds tokens for `url`.
pub fn logged_in(data_dir: &Path, name: &str, url: &str) -> bool {
    let store = FileStore { path: token_path(data_dir, name), url: url.to_string() };
    matches!(store.read(), Ok(Some(c)) if c.token_response.is_some())
}

/// An HTTP client that sends `name`'s stored token to `url` (refreshed when it is about to
/// expire or the server refuses it), or `None` when there is no login for that URL.
pub(crate) async fn authorized_client(
    data_dir: &Path,
    name: &str,
    url: &str,
) -> Result<Option<AuthClient<reqwest::Client>>, OAuthError> {
    if !logged_in(data_dir, name, url) {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(FileStore { path: token_path(data_dir, name), url: url.to_string() });
    if !manager.initialize_from_store().await? {
        return Ok(None);
    }
    Ok(Some(AuthClient::new(reqwest::Client::new(), manager)))
}

/// The `WWW-Authenticate` of the server's 401 to a first request without a token.
async fn challenge(url: &str) -> Option<String> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "superpi", "version": env!("CARGO_PKG_VERSION")}}});
    let response = reqwest::Client::new()
        .post(url)
        .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .ok()?;
    let header = response.headers().get(reqwest::header::WWW_AUTHENTICATE)?;
    (response.status() == reqwest::StatusCode::UNAUTHORIZED).then(|| header.to_str().ok().map(str::to_string))?
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refused {
    Unauthorized,
    Scope(Option<String>),
}

impl Refused {
    /// What the `WWW-Authenticate` of a 401 or 403 from the server at `url` asks.
    pub fn of(challenge: &str, url: &str) -> Refused {
        let Ok(base) = url::Url::parse(url) else { return Refused::Unauthorized };
        let params = rmcp::transport::auth::WWWAuthenticateParams::parse(challenge, &base);
        match params.is_insufficient_scope() {
            true => Refused::Scope(params.scope),
            false => Refused::Unauthorized,
        }
    }

    /// What the person is told to do (after "the MCP server `NAME` is not available: ").
    pub fn advice(&self, name: &str) -> String {
        match self {
            Refused::Unauthorized => format!("it asks for a login (OAuth): run `superpi mcp login {name}`"),
            Refused::Scope(scope) => format!(
                "it asks for more access ({}): run `superpi mcp login {name}` again",
                scope.as_deref().map_or("a wider scope".to_string(), |s| format!("scope `{s}`"))
            ),
        }
    }
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
mod tests;
