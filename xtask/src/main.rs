//! The project's release steps, run with `cargo xtask STEP` (an alias in .cargo/config.toml).
//! Not part of superpi: it only drives cargo and the scripts beside the crates.
//!
//! `cargo xtask hot-layout` writes frontends/cli/frontend-hot.ld again (docs/frontend-hot-layout.md):
//! it builds the release binaries, runs `frontends/cli/hot_code.py` (valgrind's callgrind over each
//! serving role), links `superpi-frontend` with the new list and prints `frontend_idle`'s
//! figures, whose last line says how much of the list the binary holds. Run it after a toolchain
//! or dependency update, or when `frontend_idle` reports the list has decayed, and commit the file.
//!
//! `cargo xtask dist [--target TRIPLE]` builds the release archive of a target (`dist.rs`), its
//! npm packages (`npm.rs`) and the ACP registry entry (`registry.rs`) into target/archives/
//! (docs/distribution.md).
#![allow(clippy::disallowed_methods)] // a build tool: it runs cargo and python

mod dist;
mod npm;
mod registry;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask hot-layout | dist [--target TRIPLE] [--no-build]";

fn main() -> ExitCode {
    let step = std::env::args().nth(1);
    let result = match step.as_deref() {
        Some("hot-layout") => hot_layout(&root()),
        Some("dist") => {
            dist::Options::parse(std::env::args().skip(2)).and_then(|options| dist::dist(&root(), &options))
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: this crate's parent folder.
fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map_or(manifest.clone(), Path::to_path_buf)
}

fn hot_layout(root: &Path) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let build = || {
        let mut command = Command::new(&cargo);
        command.args(["build", "--release", "-p", "superpi-cli", "-p", "superpi-tests"]);
        command.args(["--bin", "superpi", "--bin", "superpi-frontend", "--bin", "frontend_idle"]);
        command
    };
    run(build().current_dir(root))?;
    let target = root.join("target").join("release");
    run(Command::new("python3").arg(root.join("frontends/cli/hot_code.py")).arg(&target).current_dir(root))?;
    // build.rs watches frontend-hot.ld: this links superpi-frontend with the new list.
    run(build().current_dir(root))?;
    run(Command::new(target.join("frontend_idle")).current_dir(root))
}

/// The binaries a release holds.
const BINARIES: [&str; 2] = ["superpi", "superpi-frontend"];

/// The file steps of the release, each failing with the path it was about.
fn mkdir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to).map(|_| ()).map_err(|err| format!("{} -> {}: {err}", from.display(), to.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|err| format!("{}: {err}", path.display()))
}

/// Runs `command`, failing unless it succeeds.
fn run(command: &mut Command) -> Result<(), String> {
    let status = command.status().map_err(|err| format!("{command:?}: {err}"))?;
    if status.success() { Ok(()) } else { Err(format!("{command:?}: {status}")) }
}

/// What `command` prints on stdout, failing unless it succeeds.
fn output(command: &mut Command) -> Result<String, String> {
    let out = command.output().map_err(|err| format!("{command:?}: {err}"))?;
    if !out.status.success() {
        return Err(format!("{command:?}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
