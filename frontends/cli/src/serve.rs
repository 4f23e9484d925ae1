//! The serving roles (`acp`, `mcp` without an action, `rpc`, `gateway`, `agui`) and the global
//! options, shared by both binaries: `superpi` dispatches to them, and `superpi-frontend`
//! parses and runs only these. Nothing here may reach the kernel's crates, so the frontend
//! binary's linker leaves them out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use superpi_client::{ConnectOptions, Locations};

/// Where superpi keeps its data, configuration and kernel socket (every command takes them).
#[derive(Debug, Args)]
pub struct Dirs {
    /// Data directory (SQLite file, spill files) [env: SUPERPI_DATA_DIR]
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// Configuration directory [env: SUPERPI_CONFIG_DIR]
    #[arg(long, global = true)]
    pub config_dir: Option<PathBuf>,
    /// Runtime directory holding the kernel socket [env: SUPERPI_RUNTIME_DIR]
    #[arg(long, global = true)]
    pub runtime_dir: Option<PathBuf>,
}

impl Dirs {
    /// The options' names, each of which takes a value (the argument peek of [`crate::exec`]).
    pub(crate) const NAMES: [&str; 3] = ["--data-dir", "--config-dir", "--runtime-dir"];

    pub fn locations(&self) -> Locations {
        let mut l = Locations::from_env();
        if let Some(d) = &self.data_dir {
            l.data_dir = d.clone();
            if std::env::var_os("SUPERPI_RUNTIME_DIR").is_none() && std::env::var_os("XDG_RUNTIME_DIR").is_none() {
                l.runtime_dir = d.join("run");
            }
        }
        if let Some(d) = &self.config_dir {
            l.config_dir = d.clone();
        }
        if let Some(d) = &self.runtime_dir {
            l.runtime_dir = d.clone();
        }
        l
    }
}

/// A frontend serving its protocol until its host or clients leave.
#[derive(Debug, Subcommand)]
pub enum Serve {
    /// The ACP agent for editors, over stdio.
    #[cfg(feature = "acp")]
    Acp(superpi_acp::Args),
    /// The MCP server over stdio; `list`, `add`, `remove`: the external MCP servers superpi uses.
    #[cfg(feature = "mcp")]
    Mcp(crate::mcp::McpArgs),
    /// JSON-RPC 2.0 for IDEs.
    #[cfg(feature = "rpc")]
    Rpc(superpi_rpc::Args),
    /// The OpenAI-compatible HTTP gateway.
    #[cfg(feature = "gateway")]
    Gateway(superpi_openai::Args),
    /// The AG-UI frontend over SSE.
    #[cfg(feature = "agui")]
    Agui(superpi_agui::Args),
}

impl Serve {
    /// The subcommands' names (the argument peek of [`crate::exec`]).
    pub(crate) const NAMES: [&str; 5] = ["acp", "mcp", "rpc", "gateway", "agui"];

    /// Whether the role serves one client (its stdio), so one worker thread does: the
    /// frontends that listen for many clients take one per core.
    pub fn serves_one_client(&self) -> bool {
        match self {
            #[cfg(feature = "gateway")]
            Serve::Gateway(_) => false,
            #[cfg(feature = "agui")]
            Serve::Agui(_) => false,
            #[cfg(feature = "rpc")]
            Serve::Rpc(args) => args.stdio,
            #[allow(unreachable_patterns)] // built without acp and mcp
            _ => true,
        }
    }

    /// Serves until the host or the clients leave. `kernel_exe`: the program an autostarted
    /// kernel runs as (default: this executable).
    #[cfg_attr(
        not(any(feature = "acp", feature = "mcp", feature = "rpc", feature = "gateway", feature = "agui")),
        allow(unreachable_code, unused_variables)
    )]
    pub async fn run(self, locations: &Locations, kernel_exe: Option<PathBuf>) -> anyhow::Result<ExitCode> {
        let connect = |frontend: &str| {
            let mut opts = ConnectOptions::new(locations.clone(), frontend);
            opts.kernel_exe = kernel_exe.clone();
            opts
        };
        match self {
            #[cfg(feature = "acp")]
            Serve::Acp(args) => superpi_acp::run(args, connect("acp")).await?,
            #[cfg(feature = "mcp")]
            Serve::Mcp(args) => {
                // `superpi` edits the settings itself; this binary leaves that code out.
                if args.action.is_some() {
                    anyhow::bail!(
                        "`superpi mcp list|add|remove|enable|disable|login|logout` are run by `superpi`, not `superpi-frontend`"
                    );
                }
                require_workspace("mcp", args.serve.workspace.as_deref(), locations)?;
                superpi_mcp::run(args.serve, connect("mcp")).await?;
            }
            #[cfg(feature = "rpc")]
            Serve::Rpc(args) => superpi_rpc::run(args, connect("rpc")).await?,
            #[cfg(feature = "gateway")]
            Serve::Gateway(args) => {
                require_workspace("gateway", args.listen.workspace.as_deref(), locations)?;
                superpi_openai::run(args, connect("gateway")).await?;
            }
            #[cfg(feature = "agui")]
            Serve::Agui(args) => {
                require_workspace("agui", args.listen.workspace.as_deref(), locations)?;
                superpi_agui::run(args, connect("agui")).await?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// A host that starts superpi outside a project (in `/`, the home directory, or above the data
/// directory) gets an error naming `--workspace` at once, not tools that all fail later.
#[cfg_attr(not(any(feature = "mcp", feature = "gateway", feature = "agui")), allow(dead_code))]
fn require_workspace(role: &str, given: Option<&Path>, locations: &Locations) -> anyhow::Result<()> {
    let dir = match given {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    if let Err(why) = superpi_client::workspace::check_workspace(&dir, locations) {
        let started = if given.is_some() { "" } else { " (the host started superpi there)" };
        anyhow::bail!(
            "{why}{started}. Name the project with `superpi {role} --workspace DIR`; in a host's \
             configuration: \"args\": [\"{role}\", \"--workspace\", \"/path/to/project\"]"
        );
    }
    Ok(())
}
