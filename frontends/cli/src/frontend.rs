//! `superpi-frontend`: the serving roles alone, in a binary without the kernel, the providers
//! or the sandbox's tools, so an idle frontend maps only frontend code. `superpi` hands these
//! roles to it ([`crate::exec`]); it also runs on its own. A kernel it must start is the
//! `superpi` beside it, never itself.

use std::process::ExitCode;

use clap::Parser;

use crate::serve::{Dirs, Serve};
use crate::start;

#[derive(Debug, Parser)]
#[command(name = "superpi", version, about = "superpi's frontends, in a binary of their own.")]
struct FrontendCli {
    #[command(flatten)]
    dirs: Dirs,
    #[command(subcommand)]
    command: Serve,
}

/// Exit codes as `superpi`'s: 0 ok, 1 the role failed, 2 usage error.
pub fn main() -> ExitCode {
    let cli = match start::parse::<FrontendCli>() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    start::init_logging("warn");
    let kernel_exe = std::env::current_exe().ok().map(|exe| exe.with_file_name("superpi"));
    let sizing = start::Sizing { kernel: false, one_client: cli.command.serves_one_client() };
    start::run(sizing, cli.command.run(&cli.dirs.locations(), kernel_exe))
}
