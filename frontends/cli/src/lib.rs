//! superpi-cli: the `superpi` command line and the terminal frontend.
//!
//! Owns argument parsing, the dispatch of every role (`kernel`, `acp`, `mcp`, `rpc`,
//! `gateway`, `agui`) to its crate, and the terminal frontend itself (`run`, `chat`,
//! `session`, `harnesses`, `models`), `superpi mcp list|add|remove`, which edits the
//! user's external MCP servers, and `superpi schedule list|add|remove`: answers on stdout, activity and notices on stderr.
//!
//! It must not hold protocol or kernel logic of its own: each role's crate does the work.

mod args;
mod chat;
mod connection;
mod lines;
mod listing;
mod markdown;
#[cfg(feature = "mcp")]
mod mcp;
mod output;
mod render;
mod schedule;
mod style;
mod terminal;

use std::process::ExitCode;

use clap::Parser;

pub use args::{Cli, Command};

/// Exit codes: 0 ok, 1 the turn (or command) failed, 2 usage error, 3 (`kernel`) another kernel
/// holds the data directory ([`superpi_proto::KERNEL_EXIT_LOCK_HELD`]).
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    init_logging(&cli);
    // Still one thread: the allocator and the runtime are sized for the role before any other.
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if !matches!(cli.command, Some(Command::Kernel(_))) {
        // A frontend allocates little: a few shared arenas, not eight per core.
        superpi_sandbox::memory::limit_arenas(2);
    }
    if serves_one_client(&cli.command) {
        builder.worker_threads(1);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("superpi: cannot start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(args::dispatch(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("superpi: {err:#}");
            ExitCode::from(1)
        }
    }
}

/// Whether the role serves one client (its stdio or the terminal), so one worker thread does:
/// the kernel and the frontends that listen for many clients take one per core.
fn serves_one_client(command: &Option<Command>) -> bool {
    match command {
        Some(Command::Kernel(_)) => false,
        #[cfg(feature = "gateway")]
        Some(Command::Gateway(_)) => false,
        #[cfg(feature = "agui")]
        Some(Command::Agui(_)) => false,
        #[cfg(feature = "rpc")]
        Some(Command::Rpc(args)) => args.stdio,
        _ => true,
    }
}

fn init_logging(cli: &Cli) {
    let default = if matches!(cli.command, Some(Command::Kernel(_))) { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none())
        .with_target(false)
        .try_init();
}
