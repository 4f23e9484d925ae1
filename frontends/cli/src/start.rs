//! How a process of either binary starts a role: its log on stderr, then its runtime, sized
//! for the role before any other thread exists.

use std::future::Future;
use std::process::ExitCode;

/// Logs to stderr (stdout is a stdio frontend's protocol), at `default` unless `RUST_LOG`
/// says otherwise. rmcp's OAuth module logs authorization codes and token responses at
/// debug: it is held to `info` whatever `RUST_LOG` says, so no secret reaches a log.
pub(crate) fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let filter = match SECRETS_QUIET.parse() {
        Ok(quiet) => filter.add_directive(quiet),
        Err(_) => filter,
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none())
        .with_target(false)
        .try_init();
}

/// The directive (the same target as any `RUST_LOG` names, so it replaces theirs) that keeps
/// rmcp's OAuth debug lines (the code, the token response) out of every log.
const SECRETS_QUIET: &str = "rmcp::transport::auth=info";

/// How big a role's process is.
pub(crate) struct Sizing {
    /// The kernel allocates for every conversation; the other roles allocate little and get a
    /// few shared arenas, not eight per core.
    pub kernel: bool,
    /// A role serving one client (its stdio or the terminal) runs on one worker thread; the
    /// kernel and the frontends that listen for many clients take one per core.
    pub one_client: bool,
}

/// A usage error found after parsing (a value only a check beyond clap's can refuse, such as a
/// cron expression): [`run`] ends the process with 2 for it, as clap does for its own.
#[derive(Debug)]
pub(crate) struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Builds the runtime for `sizing` (call it while the process has one thread) and runs `main`
/// on it: its error is printed and ends the process with 1 ([`Usage`]: 2).
pub(crate) fn run(sizing: Sizing, main: impl Future<Output = anyhow::Result<ExitCode>>) -> ExitCode {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if !sizing.kernel {
        superpi_sandbox::memory::limit_arenas(2);
    }
    if sizing.one_client {
        builder.worker_threads(1);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("superpi: cannot start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(main) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("superpi: {err:#}");
            ExitCode::from(if err.is::<Usage>() { 2 } else { 1 })
        }
    }
}

/// Parses the command line as `P`: a usage error is printed and ends the process with 2, a
/// `--help` or `--version` with 0.
pub(crate) fn parse<P: clap::Parser>() -> Result<P, ExitCode> {
    P::try_parse().map_err(|err| {
        let _ = err.print();
        if err.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS }
    })
}
