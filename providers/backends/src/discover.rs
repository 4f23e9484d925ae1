//! Which backends this machine has: each program found where the harness file says or on
//! PATH, and its version (`PROGRAM --version`, run once, on first need).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use superpi_policy::BackendKind;
use superpi_proto::method::BackendStatus;
use tokio::sync::OnceCell;

/// How long `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(15);

/// One backend as found at start.
#[derive(Debug)]
pub struct Found {
    pub kind: BackendKind,
    /// Its program, or why there is none.
    pub program: Result<PathBuf, String>,
    version: OnceCell<Result<String, String>>,
}

impl Found {
    /// Looks for `kind`'s program: `configured` when the harness file names one, else its
    /// name in `path_var`.
    pub fn find(kind: BackendKind, configured: Option<&Path>, path_var: Option<&OsStr>) -> Found {
        let program = match configured {
            Some(path) if executable(path) => Ok(path.to_path_buf()),
            Some(path) => Err(format!(
                "`{}`, which harnesses.toml names for {kind}, is not an executable file",
                path.display()
            )),
            None => path_var
                .map(std::env::split_paths)
                .into_iter()
                .flatten()
                .map(|dir| dir.join(kind.program()))
                .find(|p| executable(p))
                .ok_or_else(|| {
                    format!(
                        "`{}` was not found on PATH (install {}, or name it in harnesses.toml: [backends.{kind}] program = \"...\")",
                        kind.program(),
                        install_hint(kind)
                    )
                }),
        };
        Found { kind, program, version: OnceCell::new() }
    }

    /// Its status for `harness.list`: program and version, or why it cannot be used.
    pub async fn status(&self) -> BackendStatus {
        let mut status = BackendStatus {
            id: self.kind.id().to_string(),
            program: None,
            version: None,
            installed: false,
            usable: false,
            unavailable: None,
        };
        match &self.program {
            Ok(program) => {
                status.program = Some(program.display().to_string());
                status.installed = true;
                match self.version(program).await {
                    Ok(version) => {
                        status.version = Some(version.clone());
                        status.usable = true;
                    }
                    Err(why) => status.unavailable = Some(why.clone()),
                }
            }
            Err(why) => status.unavailable = Some(why.clone()),
        }
        status
    }

    async fn version(&self, program: &Path) -> &Result<String, String> {
        self.version
            .get_or_init(|| async {
                let argv = vec![program.display().to_string(), "--version".to_string()];
                let out = superpi_sandbox::run_host_command(argv, VERSION_TIMEOUT).await?;
                let line = out.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
                if line.is_empty() {
                    Err(format!("`{} --version` printed nothing", program.display()))
                } else {
                    Ok(line)
                }
            })
            .await
    }
}

/// How to install a backend's program (the npm packages the tests pin).
pub fn install_hint(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::ClaudeCode => "npm `@anthropic-ai/claude-code`",
        BackendKind::Codex => "npm `@openai/codex`",
        BackendKind::GeminiCli => "npm `@google/gemini-cli`",
        BackendKind::Opencode => "npm `opencode-ai`",
    }
}

fn executable(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `.ci/run` installs a backend's pinned npm package for the tests, outside the
/// repository: `$XDG_CACHE_HOME/superpi-backends/ID` (default `~/.cache`), the program in its
/// `node_modules/.bin`. The program, when it is installed there.
pub fn test_install(kind: BackendKind) -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let program = cache.join("superpi-backends").join(kind.id()).join("node_modules/.bin").join(kind.program());
    executable(&program).then_some(program)
}
