//! `cargo xtask dist`: a target's release archive, laid out as an installation prefix.
//!
//! `target/archives/superpi-VERSION-TRIPLE.tar.gz` holds one folder of that name with `bin/`
//! (`superpi`, `superpi-frontend`: the `dist` profile's binaries, stripped), `share/man/man1/`
//! (a page per command, from the clap definitions), the completion scripts of bash, zsh and
//! fish under their usual `share/` folders, `share/doc/superpi/` (README.md, LICENSE,
//! THIRD_PARTY.md), `share/superpi/systemd/{user,system}/` (dist/systemd's unit files) and `SHA256SUMS`
//! of all of them. Beside it: `superpi-VERSION-TRIPLE-debug.tar.gz`, the binaries' debug info
//! (`*.debug`, found by gdb through each binary's .gnu_debuglink), the npm packages (`npm/`) and
//! `SHA256SUMS` of everything there. Unpacked with `--strip-components=1` into a prefix
//! (`/usr/local`, `~/.local`), it is installed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory;
use sha2::{Digest, Sha256};

use crate::{BINARIES, copy, mkdir, npm, output, registry, run, write};

/// The cargo profile the binaries are built with (Cargo.toml).
const PROFILE: &str = "dist";

/// The files of the repository an archive carries, into `share/doc/superpi/`.
const DOCS: [&str; 3] = ["README.md", "LICENSE", "THIRD_PARTY.md"];

pub(crate) struct Options {
    /// The target triple; the host's when not given.
    target: Option<String>,
    /// Package what the last build left instead of building (for a build made by hand).
    no_build: bool,
}

impl Options {
    pub(crate) fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut options = Options { target: None, no_build: false };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--target" => options.target = Some(args.next().ok_or("--target needs a triple")?),
                "--no-build" => options.no_build = true,
                other => return Err(format!("unknown argument {other:?} of dist")),
            }
        }
        Ok(options)
    }
}

pub(crate) fn dist(root: &Path, options: &Options) -> Result<(), String> {
    let target = match &options.target {
        Some(target) => target.clone(),
        None => host_triple()?,
    };
    // The host's build goes where a plain `cargo build --profile dist` puts it (target/dist),
    // another target's under target/TRIPLE/dist.
    let cross = options.target.as_ref().filter(|t| **t != host_triple().unwrap_or_default());
    let version = env!("CARGO_PKG_VERSION");
    let commit = commit(root)?;
    if !options.no_build {
        let started = std::time::Instant::now();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--profile", PROFILE, "--locked", "-p", "superpi-cli", "--bins"]);
        if let Some(target) = cross {
            build.args(["--target", target]);
        }
        run(build.env("SUPERPI_BUILD_COMMIT", &commit).current_dir(root))?;
        eprintln!("xtask: built {target} in {:.0} s", started.elapsed().as_secs_f64());
    }
    let built = match cross {
        Some(target) => root.join("target").join(target).join(PROFILE),
        None => root.join("target").join(PROFILE),
    };
    let out = root.join("target").join("archives");
    let name = format!("superpi-{version}-{target}");
    let stage = out.join(&name);
    let debug = out.join(format!("{name}-debug"));
    for dir in [&stage, &debug] {
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
        }
    }
    let bin = stage.join("bin");
    mkdir(&bin)?;
    mkdir(&debug)?;
    for binary in BINARIES {
        split_debug(&built.join(binary), &bin.join(binary), &debug.join(format!("{binary}.debug")))?;
    }
    man_pages(&stage.join("share/man/man1"))?;
    completions(&stage.join("share"))?;
    let docs = stage.join("share/doc/superpi");
    mkdir(&docs)?;
    for doc in DOCS {
        copy(&root.join(doc), &docs.join(doc))?;
    }
    for scope in ["user", "system"] {
        let units = stage.join("share/superpi/systemd").join(scope);
        mkdir(&units)?;
        let from = root.join("dist/systemd").join(scope);
        for unit in fs::read_dir(&from).map_err(|err| format!("{}: {err}", from.display()))? {
            let unit = unit.map_err(|err| err.to_string())?.path();
            if let Some(file) = unit.file_name() {
                copy(&unit, &units.join(file))?;
            }
        }
    }
    write_sums(&stage, &stage.join("SHA256SUMS"))?;
    let archive = tar(&out, &name)?;
    let debug_archive = tar(&out, &format!("{name}-debug"))?;
    let mut published = vec![archive.clone(), debug_archive];
    published.extend(npm::packages(root, &out.join("npm"), version, &target, &bin)?);
    registry::write_entry(&root.join(registry::DIR), version)?;
    let mut sums = String::new();
    for file in &published {
        sums.push_str(&sum_line(file, file.strip_prefix(&out).unwrap_or(file))?);
    }
    write(&out.join("SHA256SUMS"), &sums)?;
    for binary in BINARIES {
        let size = fs::metadata(bin.join(binary)).map_err(|err| err.to_string())?.len();
        eprintln!("xtask: {binary}: {:.1} MB stripped", size as f64 / 1e6);
    }
    #[allow(clippy::print_stdout)] // the archive's path is the step's output, for scripts
    {
        println!("{}", archive.display());
    }
    Ok(())
}

/// `rustc -vV`'s host triple.
fn host_triple() -> Result<String, String> {
    let info = output(Command::new("rustc").arg("-vV"))?;
    info.lines().find_map(|line| line.strip_prefix("host: ")).map(str::to_owned).ok_or("rustc -vV names no host".into())
}

/// The commit the binaries name (`superpi --version`): HEAD's, `-dirty` when the sources the
/// binaries are built from differ from it.
fn commit(root: &Path) -> Result<String, String> {
    let head = output(Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(root))?;
    let status = output(
        Command::new("git")
            .args([
                "status",
                "--porcelain",
                "--",
                "Cargo.toml",
                "Cargo.lock",
                "kernel",
                "providers",
                "sandbox",
                "frontends",
            ])
            .current_dir(root),
    )?;
    Ok(if status.trim().is_empty() { head.trim().to_owned() } else { format!("{}-dirty", head.trim()) })
}

/// Copies `binary` to `stripped` without its debug info and symbols, which go to `debug`; the
/// stripped copy names the debug file (.gnu_debuglink) so a debugger finds it beside it.
/// `OBJCOPY` names another objcopy (a cross target's, such as aarch64-linux-gnu-objcopy).
fn split_debug(binary: &Path, stripped: &Path, debug: &Path) -> Result<(), String> {
    let objcopy = std::env::var_os("OBJCOPY").unwrap_or_else(|| "objcopy".into());
    run(Command::new(&objcopy).arg("--only-keep-debug").arg(binary).arg(debug))?;
    run(Command::new(&objcopy)
        .arg("--strip-all")
        .arg(format!("--add-gnu-debuglink={}", debug.display()))
        .arg(binary)
        .arg(stripped))
}

/// A man page per command and subcommand (`superpi.1`, `superpi-run.1`, `superpi-session-list.1`, ...).
pub(crate) fn man_pages(dir: &Path) -> Result<(), String> {
    mkdir(dir)?;
    clap_mangen::generate_to(superpi_cli::Cli::command(), dir).map_err(|err| format!("man pages: {err}"))
}

/// The completion scripts, where bash-completion, zsh and fish look under a prefix's `share/`.
fn completions(share: &Path) -> Result<(), String> {
    use clap_complete::Shell;
    for (shell, dir, file) in [
        (Shell::Bash, "bash-completion/completions", "superpi"),
        (Shell::Zsh, "zsh/site-functions", "_superpi"),
        (Shell::Fish, "fish/vendor_completions.d", "superpi.fish"),
    ] {
        let dir = share.join(dir);
        mkdir(&dir)?;
        let mut text = Vec::new();
        clap_complete::generate(shell, &mut superpi_cli::Cli::command(), "superpi", &mut text);
        fs::write(dir.join(file), text).map_err(|err| format!("{}: {err}", dir.display()))?;
    }
    Ok(())
}

/// `sha256sum`'s format for every file under `dir` (sorted, paths relative to it) into `sums`.
fn write_sums(dir: &Path, sums: &Path) -> Result<(), String> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut text = String::new();
    for file in files {
        text.push_str(&sum_line(&file, file.strip_prefix(dir).unwrap_or(&file))?);
    }
    write(sums, &text)
}

fn sum_line(file: &Path, name: &Path) -> Result<String, String> {
    let bytes = fs::read(file).map_err(|err| format!("{}: {err}", file.display()))?;
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{hex}  {}\n", name.display()))
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    for entry in fs::read_dir(dir).map_err(|err| format!("{}: {err}", dir.display()))? {
        let path = entry.map_err(|err| err.to_string())?.path();
        if path.is_dir() { collect(&path, files)? } else { files.push(path) }
    }
    Ok(())
}

/// `out/NAME.tar.gz` of the folder `out/NAME`: sorted, owned by root, dated by the last commit,
/// so two runs over the same files make the same archive.
fn tar(out: &Path, name: &str) -> Result<PathBuf, String> {
    let archive = out.join(format!("{name}.tar.gz"));
    let date = output(Command::new("git").args(["log", "-1", "--format=%ct"]).current_dir(out))?;
    run(Command::new("tar")
        .args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner", &format!("--mtime=@{}", date.trim())])
        .args(["--use-compress-program=gzip -n", "-cf"])
        .arg(&archive)
        .arg("-C")
        .arg(out)
        .arg(name))?;
    Ok(archive)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command the clap definitions hold, as its man page names it: `superpi`,
    /// `superpi-run`, `superpi-session-list`, ...
    fn commands(command: &clap::Command, prefix: &str, names: &mut Vec<String>) {
        let name =
            if prefix.is_empty() { command.get_name().to_owned() } else { format!("{prefix}-{}", command.get_name()) };
        for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help") {
            commands(sub, &name, names);
        }
        names.push(name);
    }

    /// `--help` lists every command, and every command (and subcommand) has its man page, which
    /// lists its own subcommands: the pages are made from the same definitions the binary parses.
    #[test]
    fn help_and_man_pages_list_every_command() {
        let cli = superpi_cli::Cli::command();
        let help = cli.clone().render_long_help().to_string();
        let top: Vec<&str> = cli.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| s.get_name()).collect();
        for name in ["run", "chat", "session", "schedule", "kernel", "doctor", "acp", "mcp", "rpc", "gateway", "agui"] {
            assert!(top.contains(&name), "{name} is a command: {top:?}");
        }
        for name in &top {
            assert!(
                help.lines().any(|line| line.trim_start().starts_with(&format!("{name} "))),
                "--help lists {name}:\n{help}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        man_pages(dir.path()).unwrap();
        let mut names = Vec::new();
        commands(&cli, "", &mut names);
        assert!(names.len() > top.len(), "{names:?}");
        for name in &names {
            let page = fs::read_to_string(dir.path().join(format!("{name}.1")))
                .unwrap_or_else(|err| panic!("{name}.1: {err}"));
            assert!(page.lines().any(|line| line.starts_with(".TH ")), "{name}.1 is a man page:\n{page}");
        }
        let main = fs::read_to_string(dir.path().join("superpi.1")).unwrap();
        for name in &top {
            let listed = [format!("superpi-{name}(1)"), format!("superpi\\-{name}(1)")];
            assert!(listed.iter().any(|entry| main.contains(entry.as_str())), "superpi.1 lists {name}:\n{main}");
        }
    }

    #[test]
    fn sums_are_sha256sum_lines() {
        let dir = tempfile::tempdir().unwrap();
        mkdir(&dir.path().join("bin")).unwrap();
        write(&dir.path().join("bin/a"), "abc").unwrap();
        let sums = dir.path().join("SUMS");
        write_sums(&dir.path().join("bin"), &sums).unwrap();
        let text = fs::read_to_string(&sums).unwrap();
        assert_eq!(text, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  a\n");
    }
}
