//! superpi-agui: the AG-UI frontend over SSE (`superpi agui`).
//!
//! Owns the AG-UI surface: `POST /agui/v1/run` (a `RunAgentInput` in, one run of AG-UI
//! events out over SSE), `GET /agui/v1/sessions/{thread}/events` (attach to a conversation:
//! snapshots, then live runs) and `POST /agui/v1/sessions/{thread}/input` (prompt, permission,
//! answer, cancel); the AG-UI wire types ([`wire`]); the renderer from kernel events to AG-UI
//! events, a pure state machine with the 16 ms content merge and JSON Patch state
//! ([`render`]); stored history as AG-UI messages ([`history`]); and the request map from
//! AG-UI bodies to kernel calls with this frontend's error shape ([`request`]).
//!
//! It must not know the kernel's internals (store, policy, providers) nor any other frontend's
//! protocol: it speaks the kernel protocol through superpi-client, as one remote frontend per
//! principal, and takes bearer tokens, the bind rule and SSE framing from superpi-http.

pub mod history;
pub mod origin;
pub mod render;
pub mod request;
mod server;
mod stream;
pub mod wire;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

pub use server::{Agui, TOKEN_VAR};

/// `superpi agui [--port N] [--bind ADDR]`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// TCP port to listen on (0 picks a free one; the address is printed on stdout).
    #[arg(long, default_value_t = 4100)]
    pub port: u16,
    /// Address to listen on. A non-loopback address needs a token (SUPERPI_GATEWAY_TOKEN or
    /// gateway.json in the config dir).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// The workspace of the conversations it opens (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<std::path::PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bind(#[from] superpi_http::BindError),
    #[error(transparent)]
    Config(#[from] superpi_http::ConfigError),
    #[error("cannot listen on {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
    #[error("cannot use the workspace {0}: {1}")]
    Workspace(std::path::PathBuf, std::io::Error),
    #[error("the AG-UI server stopped: {0}")]
    Serve(std::io::Error),
}

/// Runs the AG-UI server until the process is told to stop (SIGINT or SIGTERM).
pub async fn run(args: Args, connect: superpi_client::ConnectOptions) -> Result<(), Error> {
    let env_tokens = std::env::var(TOKEN_VAR).ok();
    let tokens = superpi_http::Tokens::load(env_tokens.as_deref(), &connect.locations.config_dir)?;
    superpi_http::check_bind(args.bind, &tokens, TOKEN_VAR)?;
    let workspace = match args.workspace {
        Some(dir) => Some(dir),
        None => std::env::current_dir().ok(),
    };
    let workspace = match workspace {
        Some(dir) => Some(std::fs::canonicalize(&dir).map_err(|e| Error::Workspace(dir, e))?),
        None => None,
    };
    let addr = SocketAddr::new(args.bind, args.port);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| Error::Listen(addr, e))?;
    let local = listener.local_addr().map_err(|e| Error::Listen(addr, e))?;
    let agui = Agui::new(connect, tokens, workspace.map(|w| w.display().to_string()));
    announce(local);
    agui.serve(listener, shutdown_signal()).await.map_err(Error::Serve)
}

/// One line on stdout saying where the server listens (scripts and tests read it).
#[allow(clippy::print_stdout)]
fn announce(addr: SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "superpi agui listening on http://{addr}");
    let _ = out.flush();
    tracing::info!(%addr, "AG-UI server listening");
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
        return;
    }
    let _ = ctrl_c.await;
}
