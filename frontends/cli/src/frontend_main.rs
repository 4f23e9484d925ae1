//! The `superpi-frontend` binary: `superpi acp|mcp|rpc|gateway|agui` without the kernel's code.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Before any thread, as in `superpi`: large blocks go back to the system when freed.
    superpi_sandbox::memory::map_large_allocations();
    superpi_cli::frontend::main()
}
