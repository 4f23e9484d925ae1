//! The frontend kit: what `superpi gateway` and `superpi agui` do the same way. Their
//! listen arguments, the `run` preamble (tokens, bind rule, workspace, listener, the announce
//! line), the state every request reads (tokens, the Origin rule, one kernel connection per
//! principal, the stop signal) and the graceful shutdown on SIGINT or SIGTERM.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::HeaderMap;
use axum::http::header::ORIGIN;
use superpi_client::{ClientError, ConnectOptions, KernelClient, PrincipalClients};
use tokio::sync::watch;

use crate::auth::{self, AuthError, Tokens};
use superpi_client::workspace::{WorkspaceError, resolve_workspace};

use crate::{BindError, ORIGINS_VAR, TokenFileError};

/// The variable holding the bearer tokens (comma-separated) of both HTTP frontends.
pub const TOKEN_VAR: &str = "SUPERPI_GATEWAY_TOKEN";

/// How long open answers may run on after SIGINT or SIGTERM before the server stops anyway;
/// turns still running then go on in the kernel.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// `[--port N] [--bind ADDR] [--workspace DIR]`, with `PORT` as the default port.
///
/// The default is given as a string built per instance (`default_value`), not with
/// `default_value_t`: clap's derive caches that one in a `static` inside the generic
/// `augment_args`, and a static is shared by every `PORT`, so `superpi agui` showed and
/// used the gateway's 4000 whenever the gateway's arguments were built first.
#[derive(Debug, Clone, clap::Args)]
pub struct ListenArgs<const PORT: u16> {
    /// TCP port to listen on (0 picks a free one; the address is printed on stdout).
    #[arg(long, default_value = PORT.to_string())]
    pub port: u16,
    /// Address to listen on. A non-loopback address needs a token (SUPERPI_GATEWAY_TOKEN or
    /// gateway.json in the config dir).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// The workspace of the conversations it opens (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// Why an HTTP frontend could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error(transparent)]
    Config(#[from] TokenFileError),
    #[error("cannot listen on {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error("cannot watch for SIGINT and SIGTERM: {0}")]
    Signals(std::io::Error),
    #[error("the {0} server stopped: {1}")]
    Serve(&'static str, std::io::Error),
}

/// What every request of one HTTP frontend reads: cheap to share behind an `Arc`.
pub struct Frontend {
    tokens: Tokens,
    /// Browser origins admitted besides loopback ones when no token is configured.
    origins: Vec<String>,
    workspace: Option<String>,
    clients: PrincipalClients,
    /// Turns true when the server stops, so open streams end and the graceful shutdown does
    /// not wait forever for a client that stays attached.
    stopping: watch::Sender<bool>,
}

impl Frontend {
    pub fn new(connect: ConnectOptions, tokens: Tokens, origins: Vec<String>, workspace: Option<String>) -> Self {
        let (stopping, _) = watch::channel(false);
        Frontend { tokens, origins, workspace, clients: PrincipalClients::new(connect), stopping }
    }

    pub fn tokens_enabled(&self) -> bool {
        self.tokens.is_enabled()
    }

    /// The workspace of the conversations this frontend opens.
    pub fn workspace(&self) -> Option<&str> {
        self.workspace.as_deref()
    }

    /// The options every kernel connection starts from.
    pub fn connect_options(&self) -> &ConnectOptions {
        self.clients.options()
    }

    /// Whether a request with this `Origin` may be served (see [`crate::origin_allowed`]).
    pub fn origin_allowed(&self, origin: Option<&str>) -> bool {
        crate::origin_allowed(origin, self.tokens.is_enabled(), &self.origins)
    }

    /// Whether the request's `Origin` header (if any) may be served; one that is not text is not.
    pub fn request_origin_allowed(&self, headers: &HeaderMap) -> bool {
        match headers.get(ORIGIN) {
            None => true,
            Some(value) => value.to_str().is_ok_and(|origin| self.origin_allowed(Some(origin))),
        }
    }

    /// The principal of a request: its bearer token's, or with no tokens configured the base
    /// options' (`local`).
    pub fn principal(&self, headers: &HeaderMap) -> Result<String, AuthError> {
        Ok(auth::authenticate(&self.tokens, headers)?.unwrap_or_else(|| self.clients.options().principal.clone()))
    }

    /// The kernel connection of a principal, made on first use (once, however many requests
    /// wait for it) and again after a loss.
    pub async fn client(&self, principal: &str) -> Result<KernelClient, ClientError> {
        self.clients.get(principal).await
    }

    /// Turns true when the server begins to stop.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.subscribe()
    }
}

/// Starts an HTTP frontend and serves it until SIGINT or SIGTERM: tokens from
/// [`TOKEN_VAR`] and `gateway.json`, the bind rule, the workspace made absolute, the listener,
/// the routes `routes` builds over the shared [`Frontend`], one line on stdout saying where it
/// listens (`superpi NAME listening on http://ADDR`), then the graceful shutdown.
pub async fn run<const PORT: u16>(
    name: &'static str,
    listen: ListenArgs<PORT>,
    connect: ConnectOptions,
    routes: impl FnOnce(Arc<Frontend>) -> Router,
) -> Result<(), Error> {
    let env_tokens = std::env::var(TOKEN_VAR).ok();
    let tokens = auth::load_tokens(env_tokens.as_deref(), &connect.locations.config_dir)?;
    auth::check_bind(listen.bind, &tokens, TOKEN_VAR)?;
    let workspace = match resolve_workspace(listen.workspace.as_deref()) {
        Ok(dir) => Some(dir),
        // No current directory (it was removed): conversations are opened without one.
        Err(WorkspaceError::CurrentDir(_)) => None,
        Err(err) => return Err(err.into()),
    };
    let stop = superpi_client::shutdown_signal().map_err(Error::Signals)?;
    let addr = SocketAddr::new(listen.bind, listen.port);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| Error::Listen(addr, e))?;
    let local = listener.local_addr().map_err(|e| Error::Listen(addr, e))?;
    let origins = std::env::var(ORIGINS_VAR).map(|v| superpi_client::principal::split_list(&v)).unwrap_or_default();
    let frontend = Arc::new(Frontend::new(connect, tokens, origins, workspace.map(|w| w.display().to_string())));
    let router = routes(frontend.clone());
    announce(name, local);
    serve(listener, router, &frontend, stop).await.map_err(|e| Error::Serve(name, e))
}

/// Serves `router` until `stop` resolves; then tells open streams to end, stops accepting, and
/// lets open answers finish for [`SHUTDOWN_GRACE`] at most. Connections pass the peer check and
/// requests the `Host` rule first (see `guard`).
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    frontend: &Frontend,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let tokens_enabled = frontend.tokens_enabled();
    let bound = listener.local_addr()?.ip();
    let router = router.layer(axum::middleware::from_fn(move |request, next| {
        crate::guard::check_host(tokens_enabled, bound, request, next)
    }));
    let listener = crate::guard::PeerChecked::new(listener, tokens_enabled);
    let stopping = frontend.stopping.clone();
    let mut stopped = frontend.stopping();
    let graceful = async move {
        stop.await;
        tracing::info!("stopping: ending the open streams");
        stopping.send_replace(true);
    };
    tokio::select! {
        served = axum::serve(listener, router).with_graceful_shutdown(graceful) => served,
        _ = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::info!("answers still open after {SHUTDOWN_GRACE:?}; stopping anyway");
            Ok(())
        }
    }
}

/// One line on stdout saying where the server listens (scripts and tests read it).
#[allow(clippy::print_stdout)]
fn announce(name: &str, addr: SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "superpi {name} listening on http://{addr}");
    let _ = out.flush();
    tracing::info!(%addr, "{name} listening");
}
