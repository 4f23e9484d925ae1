//! superpi-mcp: the MCP server (`superpi mcp`), built on the official `rmcp` crate.
//!
//! Owns the translation between MCP and the kernel: kernel tools as MCP tools (annotations
//! derived from effects) called through the kernel's `tool.call` (its policy in the remote
//! mode, its sandbox, the host's consent per [`approval`]), `harness_task` as one whole kernel turn (progress notifications,
//! cancellation), harnesses as prompts, the workspace and conversations as resources, and
//! MCP logging. The modules follow the frontend template: [`request`] holds [`SuperpiMcp`],
//! the transport-free handler (MCP requests to kernel calls); [`render`] turns one
//! `harness_task` turn's kernel events into progress and a result; [`server`] is the stdio
//! transport; the wire types are rmcp's, and [`tools`] and [`catalog`] convert kernel tools,
//! harnesses and transcripts into them by hand. The gateway (superpi-openai) serves the same
//! handler over Streamable HTTP at `/mcp`, one [`SuperpiMcp`] per MCP session, or per request
//! for protocol 2026-07-28 (stateless: version and capabilities in each request's `_meta`).
//!
//! It must not know the kernel's internals (only superpi-client and superpi-proto), nor HTTP.
//! Stdout belongs to the protocol: nothing here prints; logs go to `tracing` (stderr).
#![deny(clippy::print_stdout)]

pub mod approval;
pub mod catalog;
pub mod logging;
pub mod questions;
pub mod render;
pub mod request;
pub mod server;
pub mod tools;

use std::path::PathBuf;

pub use approval::Approval;
pub use request::{MODERN_PROTOCOL, McpConfig, NEWEST_PROTOCOL, SuperpiMcp, server_config};
use rmcp::ServiceExt;
use superpi_client::ConnectOptions;

/// Command-line arguments of `superpi mcp`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// The workspace tools and turns run in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The harness for tools and `harness_task` (default: the kernel's default harness).
    #[arg(long, value_name = "ID")]
    pub harness: Option<String>,
    /// Who consents to calls the kernel would ask about: the MCP host, which asks its user
    /// before it calls a tool (`host`); the user through MCP elicitation, when the client
    /// supports it (`elicit`); nobody (`refuse`). Never-askable refusals stay whatever this is.
    #[arg(long, value_enum, default_value_t = Approval::Host)]
    pub approval: Approval,
    /// The mode for tools and `harness_task`, lowered to the remote ceiling (default: the
    /// remote default mode).
    #[arg(long, value_name = "MODE", value_parser = ["plan", "accept-edits", "auto"])]
    pub mode: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Workspace(#[from] superpi_client::workspace::WorkspaceError),
    #[error("MCP session failed to start: {0}")]
    Initialize(String),
    #[error("MCP session ended abnormally: {0}")]
    Session(String),
}

/// The MCP server for one connection, with the current directory as its workspace, the
/// kernel's default harness and the default approval (`host`). Marks the connection remote
/// (the kernel applies the remote mode ceiling) with frontend name `mcp` unless `connect`
/// names another frontend.
pub fn handler(connect: ConnectOptions) -> SuperpiMcp {
    let workspace = superpi_client::workspace::resolve_workspace(None)
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| ".".to_string());
    SuperpiMcp::new(config(connect, workspace, Args::default()))
}

fn config(mut connect: ConnectOptions, workspace: String, args: Args) -> McpConfig {
    connect.remote = true;
    if connect.frontend.is_empty() {
        connect.frontend = "mcp".to_string();
    }
    McpConfig { connect, workspace, harness: args.harness, approval: args.approval, mode: args.mode }
}

/// Runs `superpi mcp` until stdin ends. Connecting to the kernel waits for the first request
/// that needs it, so `initialize` is answered at once.
pub async fn run(args: Args, connect: ConnectOptions) -> Result<(), Error> {
    let workspace = superpi_client::workspace::resolve_workspace(args.workspace.as_deref())?;
    let handler = SuperpiMcp::new(config(connect, workspace.display().to_string(), args));
    tracing::debug!(workspace = %workspace.display(), "serving MCP on stdio");
    let transport = server::stdio().with_eof_token(handler.shutdown_token());
    let running = match handler.clone().serve(transport).await {
        Ok(running) => running,
        // End of input before any request: nothing to serve, a clean exit.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(err) => return Err(Error::Initialize(err.to_string())),
    };
    let reason = running.waiting().await.map_err(|err| Error::Session(err.to_string()));
    tracing::debug!(?reason, "MCP session ended");
    handler.drained().await;
    reason.map(drop)
}
