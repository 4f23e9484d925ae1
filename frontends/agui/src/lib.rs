//! superpi-agui: the AG-UI frontend over SSE (`superpi agui`).
//!
//! Owns the AG-UI surface: `POST /agui/v1/run` (a `RunAgentInput` in, one run of AG-UI
//! events out over SSE), `GET /agui/v1/sessions/{thread}/events` (attach to a conversation:
//! snapshots, then live runs) and `POST /agui/v1/sessions/{thread}/input` (prompt, permission,
//! answer, cancel); the AG-UI wire types ([`wire`]); the renderer from kernel events to AG-UI
//! events, a pure state machine with the 16 ms content merge and JSON Patch state
//! ([`render`]); stored history as AG-UI messages ([`history`]), written page by page as one snapshot; and the request map from
//! AG-UI bodies to kernel calls with this frontend's error shape ([`request`]).
//!
//! It must not know the kernel's internals (store, policy, providers) nor any other frontend's
//! protocol: it speaks the kernel protocol through superpi-client, as one remote frontend per
//! principal, and takes its setup (listen, tokens, principals, origin and bind rules, shutdown)
//! and SSE framing from superpi-http's kit.

pub mod history;
pub mod origin;
pub mod pending;
pub mod render;
pub mod request;
mod server;
mod snapshot;
mod stream;
pub mod wire;

pub use server::Agui;
pub use superpi_http::{Error, TOKEN_VAR};

/// `superpi agui [--port N] [--bind ADDR] [--workspace DIR]`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub listen: superpi_http::ListenArgs<4100>,
}

/// Runs the AG-UI server until the process is told to stop (SIGINT or SIGTERM): SSE streams
/// still open then end with `RUN_ERROR`.
pub async fn run(args: Args, connect: superpi_client::ConnectOptions) -> Result<(), Error> {
    superpi_http::run("agui", args.listen, connect, |frontend| Agui::new(frontend).router()).await
}
