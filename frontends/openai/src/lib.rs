//! superpi-openai: the OpenAI-compatible HTTP gateway (`superpi gateway`).
//!
//! Owns the OpenAI Chat Completions surface: `GET /`, `/health`, `/v1/models` and
//! `POST /v1/chat/completions` (JSON or SSE), its wire types ([`wire`]), the request map from a
//! request to kernel calls with OpenAI-shaped errors ([`request`]), and the renderer from one
//! turn's kernel events to `chat.completion.chunk`s ([`render`]). The agent loop runs in the
//! kernel; client-side tools are ignored. It also serves superpi-mcp's MCP server over
//! Streamable HTTP at `/mcp`, behind the same tokens and Origin rule.
//!
//! It must not know the kernel's internals (store, policy, providers' configuration beyond
//! listing models): it speaks the kernel protocol through superpi-client, as one remote
//! frontend per principal.

mod cors;
mod mcp;
pub mod render;
pub mod request;
mod server;
mod turn;
pub mod wire;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

pub use server::{Gateway, TOKEN_VAR};

/// `superpi gateway [--port N] [--bind ADDR]`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// TCP port to listen on (0 picks a free one; the address is printed on stdout).
    #[arg(long, default_value_t = 4000)]
    pub port: u16,
    /// Address to listen on. A non-loopback address needs a token (SUPERPI_GATEWAY_TOKEN or
    /// gateway.json in the config dir).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// The workspace of the conversations it opens (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<std::path::PathBuf>,
    /// The port as a bare argument (`superpi gateway 4000`).
    #[arg(value_name = "PORT", conflicts_with = "port")]
    pub port_arg: Option<u16>,
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
    #[error("the gateway stopped: {0}")]
    Serve(std::io::Error),
}

/// Runs the gateway until the process is told to stop (SIGINT or SIGTERM).
pub async fn run(args: Args, connect: superpi_client::ConnectOptions) -> Result<(), Error> {
    let env_tokens = std::env::var(TOKEN_VAR).ok();
    let tokens = superpi_http::Tokens::load(env_tokens.as_deref(), &connect.locations.config_dir)?;
    superpi_http::check_bind(args.bind, &tokens, TOKEN_VAR)?;
    let addr = SocketAddr::new(args.bind, args.port_arg.unwrap_or(args.port));
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| Error::Listen(addr, e))?;
    let local = listener.local_addr().map_err(|e| Error::Listen(addr, e))?;
    let workspace = match args.workspace {
        Some(dir) => Some(dir),
        None => std::env::current_dir().ok(),
    };
    let workspace = match workspace {
        Some(dir) => Some(std::fs::canonicalize(&dir).map_err(|e| Error::Workspace(dir, e))?),
        None => None,
    };
    let gateway = Gateway::new(connect, tokens, workspace.map(|w| w.display().to_string()));
    announce(local);
    // On a signal, stop accepting and let open answers finish for a while; turns still running
    // after that go on in the kernel.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let mut graceful = stop_rx.clone();
    let mut deadline = stop_rx;
    let serve = gateway.serve(listener, async move {
        let _ = graceful.wait_for(|stop| *stop).await;
    });
    tokio::select! {
        served = serve => served.map_err(Error::Serve),
        _ = async move {
            let _ = deadline.wait_for(|stop| *stop).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::info!("answers still open after {SHUTDOWN_GRACE:?}; stopping anyway");
            Ok(())
        }
    }
}

/// How long open answers may run on after SIGINT or SIGTERM.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// One line on stdout saying where the gateway listens (scripts and tests read it).
#[allow(clippy::print_stdout)]
fn announce(addr: SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "superpi gateway listening on http://{addr}");
    let _ = out.flush();
    tracing::info!(%addr, "gateway listening");
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = ctrl_c.await;
}
