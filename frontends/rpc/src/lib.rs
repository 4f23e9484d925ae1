//! superpi-rpc: the JSON-RPC 2.0 frontend for IDEs and other programs (`superpi rpc`).
//!
//! Owns newline-delimited JSON-RPC 2.0 over a Unix socket, stdio or loopback TCP: the
//! envelope (batches, notifications, every id kind, the standard error codes), the methods
//! (routed by jsonrpsee's `RpcModule`) and their map onto kernel requests, login with
//! tokens, and watches that send kernel events as `session.event` notifications clocked by
//! acks (at most K = 2 batches unacknowledged).
//!
//! The modules follow the frontend template: [`wire`] (this protocol's params and results,
//! converted by hand), [`render`] (kernel events to `session.event` batches), [`request`]
//! (the methods and their kernel calls), [`server`] (one connection over any byte stream; the
//! listeners are in `listen`), with the JSON-RPC [`envelope`], line framing (`superpi_client::lines`),
//! per-connection state ([`conn`]) and login tokens ([`auth`]) beside them.
//!
//! It must not know the kernel's internals: it reaches the kernel only through
//! superpi-client, one kernel connection per RPC connection, as the principal of its login.
//! Ownership of conversations is the kernel's to decide. In `--stdio` mode stdout carries
//! protocol lines only; logs go to stderr.
#![deny(clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;

pub mod auth;
pub mod conn;
pub mod envelope;
mod listen;
pub mod render;
pub mod request;
pub mod server;
pub mod wire;

pub use conn::Shared;

/// The longest request line read by default (1 MiB); a longer one gets an error.
pub const DEFAULT_MAX_LINE: usize = 1 << 20;

/// `superpi rpc --unix PATH | --stdio | --port N`.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["unix", "stdio", "port"])))]
pub struct Args {
    /// Listen on a Unix socket at PATH (created 0600; only this user may connect).
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Serve one client on stdin/stdout.
    #[arg(long)]
    pub stdio: bool,
    /// Listen on 127.0.0.1:N (loopback only; only this user may connect). 0 picks a port.
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// The longest request line, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE)]
    pub max_line_bytes: usize,
    /// The workspace of conversations opened here (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot listen: {0}")]
    Bind(String),
    #[error("I/O error: {0}")]
    Io(String),
    #[error("configuration: {0}")]
    Config(#[from] auth::TokenFileError),
    #[error(transparent)]
    Workspace(#[from] superpi_client::workspace::WorkspaceError),
    #[error("setting up: {0}")]
    Setup(String),
}

/// Builds what every connection shares: tokens, kernel connect options, the workspace.
pub fn shared(args: &Args, connect: superpi_client::ConnectOptions) -> Result<Shared, Error> {
    let env_tokens = std::env::var(auth::TOKENS_VAR).ok();
    let tokens = auth::load(env_tokens.as_deref(), &connect.locations.config_dir)?;
    let workspace = superpi_client::workspace::resolve_workspace(args.workspace.as_deref())?;
    let mut connect = connect;
    connect.frontend = "rpc".to_string();
    connect.remote = true;
    Ok(Shared { tokens, connect, workspace: Some(workspace.display().to_string()) })
}

/// Runs the server until its transport closes (stdio) or it is stopped (SIGINT, SIGTERM).
pub async fn run(args: Args, connect: superpi_client::ConnectOptions) -> Result<(), Error> {
    let shared = Arc::new(shared(&args, connect)?);
    if shared.tokens.is_enabled() {
        tracing::info!(tokens = shared.tokens.len(), "authentication on: clients call auth.login first");
    }
    let max_line = args.max_line_bytes.max(1);
    if args.stdio {
        return listen::serve_stdio(shared, max_line).await;
    }
    if let Some(path) = &args.unix {
        let listener = listen::bind_unix(path)?;
        let _file = listen::SocketFile(path.clone());
        eprintln!("superpi rpc: listening on unix:{}", path.display());
        return until_stopped(listen::serve_unix(listener, shared, max_line)).await;
    }
    if let Some(port) = args.port {
        let listener = listen::bind_tcp(port).await?;
        let addr = listener.local_addr().map_err(|e| Error::Io(e.to_string()))?;
        if !shared.tokens.is_enabled() {
            tracing::info!("no tokens configured: only connections from this user are served");
        }
        eprintln!("superpi rpc: listening on tcp:{addr}");
        return until_stopped(listen::serve_tcp(listener, shared, max_line)).await;
    }
    Err(Error::Setup("choose a transport: --unix PATH, --stdio or --port N".into()))
}

async fn until_stopped(server: impl std::future::Future<Output = Result<(), Error>>) -> Result<(), Error> {
    let stop = superpi_client::shutdown_signal().map_err(|e| Error::Setup(e.to_string()))?;
    tokio::select! {
        result = server => result,
        () = stop => Ok(()),
    }
}
