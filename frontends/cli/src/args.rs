//! The command line.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use superpi_client::{KernelClient, Locations};

use crate::connection::connect_options;
use crate::listing::{self, JsonFlag};
use crate::serve::{Dirs, Serve};
use crate::{chat, terminal};

#[derive(Debug, Parser)]
#[command(
    name = "superpi",
    version = crate::exec::VERSION,
    about = "An agent runtime: one durable kernel, every protocol as a thin frontend.",
    long_about = "An agent runtime: one durable kernel, every protocol as a thin frontend.\n\n\
        Without a command: `superpi` in a terminal opens chat, `superpi -p PROMPT` (or a prompt \
        piped on stdin) is `superpi run`.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub dirs: Dirs,
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Run this prompt (as `superpi run PROMPT`).
    #[arg(short = 'p', long = "print", value_name = "PROMPT")]
    pub print: Option<String>,
    #[command(flatten)]
    pub run: terminal::RunFlags,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one prompt and stream the answer (the prompt from stdin when piped and absent).
    Run(terminal::RunArgs),
    /// A line-by-line conversation in the terminal (/exit to leave).
    Chat(terminal::ChatArgs),
    /// Conversations: list, show, undo.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Schedules and webhook triggers: list, add, remove.
    #[command(subcommand)]
    Schedule(crate::schedule::ScheduleCommand),
    /// Permission rules that last ("always for this project / for me"): list, remove.
    #[command(subcommand)]
    Permissions(crate::permissions::PermissionsCommand),
    /// Your durable notes (the memory block's): list, pin, unpin, remove.
    #[command(subcommand)]
    Memory(crate::memory::MemoryCommand),
    /// Files turns wrote for you with the `artifact` tool.
    Artifacts(crate::artifacts::ArtifactsArgs),
    /// List the harnesses.
    Harnesses(JsonFlag),
    /// List the models whose provider the kernel has configured.
    Models(JsonFlag),
    /// The rules files (AGENTS.md, CLAUDE.md, GEMINI.md, .agents/rules/*.md) a conversation in
    /// this directory reads, and when.
    Rules(JsonFlag),
    /// The kernel: run it in the foreground, or `status` / `stop`.
    Kernel(KernelArgs),
    /// What this machine confines, which toolchains and MCP servers a tool can reach, what it
    /// cannot read, and which settings do not take effect, with the fix for each.
    Doctor(JsonFlag),
    // acp, mcp, rpc, gateway, agui: the serving roles, which superpi-frontend parses too.
    #[command(flatten)]
    Serve(Serve),
    /// Print a shell completion script: `superpi completions bash > ~/.local/share/bash-completion/completions/superpi`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List conversations, latest first (the latest 100 unless --all or --limit).
    List(crate::session_list::SessionListArgs),
    /// Show a conversation's history.
    Show {
        id: i64,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Put back the files a turn changed in the conversation's workspace (from the checkpoint
    /// taken before its first write); files it created are removed.
    Undo {
        id: i64,
        /// The turn (default: the latest that changed the workspace and is not undone).
        #[arg(long)]
        turn: Option<i64>,
        #[command(flatten)]
        json: JsonFlag,
    },
}

#[derive(Debug, Args)]
pub struct KernelArgs {
    #[command(subcommand)]
    pub action: Option<KernelAction>,
    /// Started by a frontend: exit after idling (no client, no turn) for --idle-exit seconds.
    #[arg(long)]
    pub autostarted: bool,
    /// The store: a PostgreSQL connection string (`postgresql://USER@HOST/DB?sslmode=require`
    /// or `host=... dbname=...`), a database several kernels can share. Without it: SQLite in
    /// the data directory.
    #[arg(long = "database", value_name = "URL", env = "SUPERPI_DATABASE_URL", hide_env_values = true)]
    pub database: Option<String>,
    /// Seconds of idleness before an autostarted kernel exits.
    #[arg(long, default_value_t = 300, env = "SUPERPI_KERNEL_IDLE_EXIT")]
    pub idle_exit: u64,
}

#[derive(Debug, Subcommand)]
pub enum KernelAction {
    /// Is a kernel running? Prints its status.
    Status(JsonFlag),
    /// Stops the running kernel.
    Stop,
}

/// `superpi` without a command: `-p`, `--input-format stream-json` or a piped stdin run a
/// prompt; a terminal opens chat.
async fn no_command(locations: &Locations, print: Option<String>, run: terminal::RunFlags) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let piped = !std::io::stdin().is_terminal();
    if print.is_some() || piped || run.input_format != crate::output::InputFormat::Text {
        return terminal::run(locations, terminal::RunArgs { prompt: None, print, flags: run }).await;
    }
    chat::chat(locations, terminal::ChatArgs { session: run.session }).await
}

pub async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let locations = cli.dirs.locations();
    let Some(command) = cli.command else {
        return no_command(&locations, cli.print, cli.run).await;
    };
    match command {
        Command::Run(args) => terminal::run(&locations, args).await,
        Command::Chat(args) => chat::chat(&locations, args).await,
        Command::Session(SessionCommand::List(args)) => crate::session_list::session_list(&locations, args).await,
        Command::Session(SessionCommand::Show { id, json }) => listing::session_show(&locations, id, json).await,
        Command::Session(SessionCommand::Undo { id, turn, json }) => {
            listing::session_undo(&locations, id, turn, json).await
        }
        Command::Schedule(command) => crate::schedule::run(&locations, command).await,
        Command::Permissions(command) => crate::permissions::run(&locations, command),
        Command::Memory(command) => crate::memory::run(&locations, command).await,
        Command::Artifacts(args) => crate::artifacts::run(&locations, args).await,
        Command::Harnesses(json) => listing::harnesses(&locations, json).await,
        Command::Models(json) => listing::models(&locations, json).await,
        Command::Rules(json) => listing::rules(json),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "superpi", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Kernel(args) => kernel(&locations, args).await,
        Command::Doctor(json) => crate::doctor::run(&locations, json).await,
        #[cfg(feature = "mcp")]
        Command::Serve(Serve::Mcp(crate::mcp::McpArgs { action: Some(action), .. })) => {
            crate::mcp::run(&locations, action).await
        }
        Command::Serve(serve) => serve.run(&locations, None).await,
    }
}

async fn kernel(locations: &Locations, args: KernelArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        None => {
            let mut config = superpi_kernel::KernelConfig::new(
                locations.data_dir.clone(),
                locations.config_dir.clone(),
                locations.runtime_dir.clone(),
            );
            config.workspaces_dir = locations.workspaces_dir.clone();
            if let Some(buffer) = std::env::var("SUPERPI_EVENT_BUFFER").ok().and_then(|v| v.parse().ok()) {
                config.event_buffer = buffer;
            }
            if let Some(bytes) = std::env::var("SUPERPI_EVENT_BUFFER_BYTES").ok().and_then(|v| v.parse().ok()) {
                config.event_buffer_bytes = bytes;
            }
            if let Some(ms) = std::env::var("SUPERPI_CONVERSATION_IDLE_MS").ok().and_then(|v| v.parse().ok()) {
                config.conversation_idle = Duration::from_millis(ms);
            }
            if let Some(ms) = std::env::var("SUPERPI_LEASE_MS").ok().and_then(|v| v.parse().ok()) {
                config.lease_ttl = Duration::from_millis(ms);
            }
            if let Some(live) = std::env::var("SUPERPI_LIVE_SOFT_LIMIT").ok().and_then(|v| v.parse().ok()) {
                config.live_soft_limit = live;
            }
            let half_life = std::env::var("SUPERPI_MEMORY_HALF_LIFE_DAYS").ok().and_then(|v| v.parse::<f64>().ok());
            if let Some(days) = half_life.filter(|d| d.is_finite() && *d > 0.0) {
                config.memory_half_life = Duration::from_secs_f64(days * 86_400.0);
            }
            if args.autostarted {
                config.idle_exit = Some(Duration::from_secs(args.idle_exit.max(1)));
            }
            config.autostarted = args.autostarted;
            config.database_url = args.database;
            config.provider_env = Some(superpi_client::process_provider_env());
            config.tool_exe = std::env::current_exe().ok();
            match superpi_kernel::run(config).await {
                Ok(()) => Ok(ExitCode::SUCCESS),
                Err(err @ superpi_kernel::KernelError::AlreadyRunning(_)) => {
                    eprintln!("superpi: {err}");
                    Ok(ExitCode::from(superpi_proto::KERNEL_EXIT_LOCK_HELD))
                }
                Err(err) => Err(err.into()),
            }
        }
        Some(action) => {
            let mut opts = connect_options(locations, "cli");
            opts.autostart = false;
            // Status and stop work whatever provider variables the kernel has.
            opts.provider_env = None;
            let client = match KernelClient::connect(&opts).await {
                Ok(client) => client,
                Err(err) => {
                    eprintln!("no kernel is running ({err})");
                    return Ok(ExitCode::from(1));
                }
            };
            match action {
                KernelAction::Status(json) => {
                    let status = client.status().await?;
                    listing::kernel_status(&status, json)?;
                }
                KernelAction::Stop => {
                    client.stop(locations, Duration::from_secs(30)).await?;
                    eprintln!("kernel stopped");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
