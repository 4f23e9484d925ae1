//! superpi-rpc: The JSON-RPC 2.0 frontend for IDEs (`superpi rpc`).
//!
//! Placeholder entry point; the crate's owner replaces this file.

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
