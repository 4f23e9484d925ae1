//! superpi-openai: the OpenAI-compatible HTTP gateway (`superpi gateway`).
//!
//! Owns the OpenAI Chat Completions surface: `GET /`, `/health`, `/v1/models` and
//! `POST /v1/chat/completions` (JSON or SSE), its wire types ([`wire`]), the request map from a
//! request to kernel calls with OpenAI-shaped errors ([`request`]), and the renderer from one
//! turn's kernel events to `chat.completion.chunk`s ([`render`]). The agent loop runs in the
//! kernel; client-side tools are ignored. `POST /v1/responses` serves the same turns in the
//! OpenAI Responses API's shapes ([`responses`]), and `POST /v1/messages` in Anthropic's
//! (`messages.rs`, rendered by [`messages_render`]), for Codex, Claude Code and the SDKs. It
//! also serves superpi-mcp's MCP server over Streamable HTTP at `/mcp`, behind the same tokens
//! and Origin rule, and webhook triggers' deliveries at `POST /v1/triggers/TOKEN` ([`trigger`]),
//! whose own secret the kernel checks.
//!
//! It must not know the kernel's internals (store, policy, providers' configuration beyond
//! listing models): it speaks the kernel protocol through superpi-client, as one remote
//! frontend per principal, and takes its setup (listen, tokens, principals, origin and bind
//! rules, shutdown) and SSE framing from superpi-http's kit.

mod cors;
mod mcp;
mod mcp_streams;
mod messages;
pub mod messages_render;
pub mod metrics;
pub mod render;
pub mod request;
pub mod responses;
mod server;
pub mod trigger;
mod turn;
pub mod wire;

pub use server::Gateway;
pub use superpi_http::{Error, ORIGINS_VAR, TOKEN_VAR};

/// `superpi gateway [--port N] [--bind ADDR] [--workspace DIR]`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub listen: superpi_http::ListenArgs<4000>,
    /// The port as a bare argument (`superpi gateway 4000`).
    #[arg(value_name = "PORT", conflicts_with = "port")]
    pub port_arg: Option<u16>,
}

/// Runs the gateway until the process is told to stop (SIGINT or SIGTERM); open answers then
/// get superpi-http's grace to finish, and turns still running go on in the kernel.
pub async fn run(args: Args, connect: superpi_client::ConnectOptions) -> Result<(), Error> {
    let mut listen = args.listen;
    listen.port = args.port_arg.unwrap_or(listen.port);
    superpi_http::run("gateway", listen, connect, |frontend| Gateway::new(frontend).router()).await
}
