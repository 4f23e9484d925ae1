//! The `superpi` binary: parses the command line and dispatches to the role's library (the
//! serving roles to `superpi-frontend` beside it, when there is one).

use std::process::ExitCode;

fn main() -> ExitCode {
    // The sandbox re-executes this binary as its tool runner: answer before anything else
    // (no runtime, no logging set-up) so a confined call costs as little as possible.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == superpi_sandbox::TOOL_SUBCOMMAND) {
        let code = superpi_sandbox::tool_main();
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // A serving role becomes `superpi-frontend` (the same process, by exec) when it sits
    // beside this binary: a frontend then maps none of the kernel's code.
    superpi_cli::exec_frontend();
    // Before any thread: large blocks (a history page, a frame) go back when freed, so a
    // process's memory follows what it holds rather than its peak.
    superpi_sandbox::memory::map_large_allocations();
    superpi_cli::main()
}
