//! superpi-acp: the ACP frontend for editors (`superpi acp`).
//!
//! Owns the Agent Client Protocol side of superpi: an ACP agent over stdio built on the
//! official `agent-client-protocol` crate, the renderer from kernel events to ACP session
//! updates ([`render`]), the replay of a stored conversation ([`replay`]), and the request
//! map from ACP requests to kernel calls with ACP's own errors ([`map`]).
//!
//! It must not know the kernel's internals (it speaks only the kernel protocol, through
//! superpi-client) nor any other frontend's protocol. Stdout carries ACP messages only.
#![deny(clippy::print_stdout)]

pub mod map;
pub mod render;
pub mod replay;
pub mod tools;

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
