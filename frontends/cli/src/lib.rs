//! superpi-cli: the `superpi` command line and the terminal frontend, and `superpi-frontend`.
//!
//! Owns argument parsing, the dispatch of every role (`kernel`, `acp`, `mcp`, `rpc`,
//! `gateway`, `agui`) to its crate, and the terminal frontend itself (`run`, `chat`,
//! `session`, `harnesses`, `models`), `superpi mcp list|add|remove|enable|disable`, which edits the
//! user's external MCP servers, `superpi doctor`, and `superpi schedule list|add|remove`, `superpi memory list|pin|unpin|remove`: answers on stdout, activity and notices on stderr.
//!
//! Two binaries: `superpi` holds every role; `superpi-frontend` ([`frontend`]) only the serving
//! frontends, and `superpi` execs it for them ([`exec_frontend`]), so an idle frontend maps no
//! kernel code. What both run lives in `serve` and `start`; those must not reach the kernel's,
//! the providers' or the backends' crates, or the frontend binary links them again.
//!
//! It must not hold protocol or kernel logic of its own: each role's crate does the work.

mod args;
mod artifacts;
mod chat;
mod connection;
mod doctor;
mod exec;
pub mod frontend;
mod lines;
mod listing;
mod markdown;
#[cfg(feature = "mcp")]
mod mcp;
mod memory;
mod output;
mod permissions;
mod question;
mod render;
mod schedule;
mod serve;
mod session_list;
mod start;
mod style;
mod terminal;

use std::process::ExitCode;

pub use args::{Cli, Command};
pub use exec::{FRONTEND_BIN, exec_frontend};
pub use serve::{Dirs, Serve};

/// Exit codes: 0 ok, 1 the turn (or command) failed, 2 usage error, 3 (`kernel`) another kernel
/// holds the data directory ([`superpi_proto::KERNEL_EXIT_LOCK_HELD`]).
pub fn main() -> ExitCode {
    let cli = match start::parse::<Cli>() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let kernel = matches!(cli.command, Some(Command::Kernel(_)));
    start::init_logging(if kernel { "info" } else { "warn" });
    exec::log_why_here();
    let sizing = start::Sizing { kernel, one_client: serves_one_client(&cli.command) };
    start::run(sizing, args::dispatch(cli))
}

/// Whether the role serves one client (its stdio or the terminal); the kernel serves many, and
/// the frontends say for themselves.
fn serves_one_client(command: &Option<Command>) -> bool {
    match command {
        Some(Command::Kernel(_)) => false,
        Some(Command::Serve(serve)) => serve.serves_one_client(),
        _ => true,
    }
}
