//! superpi-backends: other agent programs (Codex, Claude Code, Gemini CLI, OpenCode) as the
//! backends of superpi harnesses. A backend runs a whole turn with its own tools; superpi
//! shows it through every frontend, stores it, and answers its approval requests.
//!
//! Owns: finding each program and its version ([`discover`]), the state each keeps under the
//! data directory and the backend's session id of a conversation ([`sessions`]), one driver
//! that starts a program for a turn through the sandbox crate and talks to it ([`driver`]),
//! OpenCode's kept server, started the same way and spoken to over HTTP
//! ([`opencode_server`]), Gemini CLI's question channel from its hook ([`gemini_ask`]), and
//! per backend a pure translator from its output to
//! [`BackendEvent`]s (tested on recorded streams split at every byte).
//!
//! Must not: start a process other than through superpi-sandbox, know conversations, the
//! store, the kernel's event stamping or any frontend. The kernel decides who is asked and
//! what a turn publishes.

pub mod claude;
pub mod codex;
pub mod discover;
pub mod driver;
pub mod event;
pub mod gemini;
pub mod gemini_ask;
pub mod lines;
pub mod opencode;
pub mod opencode_server;
pub mod sessions;

pub use discover::Found;
pub use driver::{RunningTurn, TurnSpec, effort_refusal, env_keys, image_refusal, install_dirs, start};
pub use event::{Approval, ApprovalRequest, BackendEvent, PromptImage};
pub use opencode::Endpoint;
pub use opencode_server::Servers;
pub use sessions::{SessionRecord, Sessions};
pub use superpi_policy::BackendKind;
