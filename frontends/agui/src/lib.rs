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
pub mod render;
pub mod wire;

/// Command-line arguments of the subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    NotReady(&'static str),
}

/// Runs the frontend until its transport closes.
pub async fn run(args: Args, connect: superpi_client::ConnectOptions) -> Result<(), Error> {
    let _ = (args, connect);
    Err(Error::NotReady("this frontend is not built yet"))
}
