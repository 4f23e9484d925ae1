//! superpi-client: how a frontend reaches the kernel.
//!
//! Owns the locations every `superpi` subcommand shares ([`Locations`]), connecting to the
//! kernel's socket or starting the kernel detached when none runs ([`KernelClient::connect`]),
//! the `hello` handshake (with the digests of the frontend's provider variables, replacing an
//! autostarted kernel that lacks them: [`provider_env_digests`]), typed requests multiplexed by
//! id, a conversation's history read page by page ([`HistoryPages`]), event subscriptions
//! with their acks and lag recovery handled ([`Subscription`]), and the rule that names a
//! principal from a token ([`principal`]). That rule lives here rather than in superpi-http
//! because every frontend that takes tokens already depends on this crate: the RPC server
//! gets it for two small hashing crates instead of an HTTP stack.
//! Beside that, the kit every frontend is built from below its protocol: the kernel
//! connection made at first use and again after a loss ([`LazyKernel`]), the workspace
//! ([`workspace`]: given or current, canonical, checked by the sandbox's rule), the shutdown
//! signals of a listener ([`shutdown_signal`]), tokens from a variable and a file by one rule
//! ([`tokens`]), a bounded line reader for the line-based ones ([`lines`]), the
//! poison-tolerant lock of their shared state ([`sync::lock`]), and the peer check of every
//! frontend listener ([`peer`]: this user only, unless tokens guard it, and never one of a
//! kernel's confined tools, recognised by superpi-paths without linking the sandbox).
//!
//! It must not know any frontend protocol (ACP, MCP, JSON-RPC, HTTP) nor the kernel's
//! internals: it speaks only the kernel protocol of superpi-proto.

mod autostart;
mod connection;
mod history;
mod lazy;
pub mod lines;
mod locations;
mod methods;
pub mod peer;
mod pool;
pub mod principal;
mod provider_env;
mod routing;
mod shutdown;
mod sock_diag;
mod subscription;
pub mod sync;
pub mod tokens;
pub mod workspace;

pub use connection::{ConnectOptions, KernelClient};
pub use history::HistoryPages;
pub use lazy::{Connection, LazyKernel};
pub use pool::PrincipalClients;
pub use provider_env::{process_provider_env, provider_env_digests};
pub use shutdown::shutdown_signal;
pub use subscription::Subscription;
pub use superpi_proto::Locations;

use superpi_proto::ErrorObject;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("kernel socket error: {0}")]
    Io(#[from] std::io::Error),
    #[error("kernel refused: {0}")]
    Kernel(ErrorObject),
    #[error("the kernel connection is closed")]
    Closed,
    #[error("kernel protocol error: {0}")]
    Protocol(String),
    #[error("could not reach a kernel: {0}")]
    NoKernel(String),
}

impl ClientError {
    /// The kernel's error code, when the kernel answered with an error.
    pub fn code(&self) -> Option<i32> {
        match self {
            ClientError::Kernel(e) => Some(e.code),
            _ => None,
        }
    }
}
