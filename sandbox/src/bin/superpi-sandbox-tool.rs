//! The tool runner as a program of its own, for this crate's tests and benchmark. The
//! `superpi` binary dispatches `superpi __sandbox-tool` to the same function.

fn main() {
    std::process::exit(superpi_sandbox::tool_main());
}
