//! superpi-acp: the ACP frontend for editors (`superpi acp`).
//!
//! Owns the Agent Client Protocol side of superpi: an ACP agent over stdio built on the
//! official `agent-client-protocol` crate (whose schema is this frontend's wire types), the
//! transport and dispatch loop ([`server`], with one task per request in `handlers`), the
//! renderer from kernel events to ACP session updates ([`render`]), the replay of a stored
//! conversation ([`replay`]), and the request map from ACP requests to kernel calls with ACP's
//! own errors ([`request`]).
//!
//! An ACP session id is the kernel conversation id with a prefix (`conv-17`): a fresh
//! process can load any session an editor kept, and conversations started elsewhere can be
//! loaded too; no session table is needed. Each open session keeps one interactive watch on
//! its conversation (so the kernel asks this agent its permission questions), and prompts
//! wait on it for their turn's end. The agent connects as a remote caller (the remote mode
//! ceiling applies) with the local principal. When the editor can read files and the
//! `--editor-buffers` mode allows, the watch also answers the kernel's file-read questions
//! from the editor's buffers ([`buffers`]).
//!
//! It must not know the kernel's internals (it speaks only the kernel protocol, through
//! superpi-client) nor any other frontend's protocol. Stdout carries ACP messages only.
#![deny(clippy::print_stdout)]

mod agent;
pub mod auth;
pub mod buffers;
mod handlers;
pub mod questions;
pub mod render;
pub mod replay;
pub mod request;
pub mod server;
pub mod session;
pub mod tools;
pub mod wire;

/// Command-line arguments of `superpi acp`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Context window (tokens) reported to the editor in usage updates when the kernel does not
    /// say the model's (an older kernel).
    #[arg(long, default_value_t = 200_000, env = "SUPERPI_ACP_CONTEXT_WINDOW")]
    pub context_window: u64,
    /// MCP servers the editor passes in session/new, load and resume: `attach` their stdio
    /// servers to the session (the kernel starts them confined), `ignore` them with a warning,
    /// or `refuse` the session (naming them).
    #[arg(long, value_enum, default_value = "attach", env = "SUPERPI_ACP_EDITOR_MCP_SERVERS")]
    pub editor_mcp_servers: request::EditorMcp,
    /// When a `read` tool call takes the file's text from the editor (`fs/read_text_file`,
    /// if the editor offers it): `unsaved_only` when its buffer differs from the disk,
    /// `always`, or `never`. Writes always go through superpi's confined tools.
    #[arg(long, value_enum, default_value = "unsaved_only", env = "SUPERPI_ACP_EDITOR_BUFFERS")]
    pub editor_buffers: buffers::EditorBuffers,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("ACP connection failed: {0:?}")]
    Acp(agent_client_protocol::Error),
}

/// Serves ACP over stdin and stdout until the editor closes stdin. The kernel is reached
/// only when a session needs it (session/new, load, list, ...), never for `initialize`.
pub async fn run(args: Args, connect: superpi_client::ConnectOptions) -> Result<(), Error> {
    let agent = server::Server::new(
        connect,
        server::AgentOptions {
            context_window: args.context_window,
            editor_mcp: args.editor_mcp_servers,
            editor_buffers: args.editor_buffers,
        },
    );
    tracing::debug!("serving ACP on stdio");
    let transport = server::line_transport(tokio::io::stdin(), tokio::io::stdout(), server::MAX_LINE);
    match server::serve(agent, transport).await {
        Ok(()) => Ok(()),
        // The editor went away while the agent was writing (it closed our stdout with our
        // stdin): that is the end of the session, not a failure. The conversation stays in
        // the kernel.
        Err(err) if editor_gone(&err) => {
            tracing::debug!("the editor closed the connection: {err:?}");
            Ok(())
        }
        Err(err) => Err(Error::Acp(err)),
    }
}

/// A write to stdout failed because the editor closed it (EPIPE), as the SDK reports it
/// (an internal error whose data is the I/O error's text).
fn editor_gone(err: &agent_client_protocol::Error) -> bool {
    let data = err.data.as_ref().map(|d| d.to_string()).unwrap_or_default();
    agent_client_protocol::is_incoming_transport_closed(err)
        || data.contains("os error 32")
        || data.to_ascii_lowercase().contains("broken pipe")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn editor_buffers_default_to_unsaved_only_and_take_the_flag() {
        let parse = |argv: &[&str]| Cli::try_parse_from(argv).map(|c| c.args.editor_buffers);
        assert_eq!(parse(&["acp"]).unwrap(), buffers::EditorBuffers::UnsavedOnly);
        assert_eq!(parse(&["acp", "--editor-buffers", "never"]).unwrap(), buffers::EditorBuffers::Never);
        assert_eq!(parse(&["acp", "--editor-buffers", "always"]).unwrap(), buffers::EditorBuffers::Always);
        assert!(parse(&["acp", "--editor-buffers", "sometimes"]).is_err());
    }
}
