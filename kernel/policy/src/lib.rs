//! superpi-policy: harnesses, permission modes, settings and the decision whether a tool call
//! may run, may be asked for, or is refused.
//!
//! Owns: the harness registry (built-ins plus `harnesses.toml`), [`Mode`] and
//! [`effective_mode`], [`Settings`] (`settings.json` of the config dir and of a workspace),
//! and [`decide`], a pure function of a call's facts. Everything here is data and pure
//! functions; the only I/O is reading the two kinds of configuration file.
//!
//! Must not know: the kernel's event loop, the store, sockets, frontends, or how a tool runs.
//! The kernel asks a person, waits, times out and records session overrides; the sandbox
//! enforces the grants. This crate only says what the rules are.

pub mod conversation;
pub mod decide;
pub mod error;
pub mod harness;
pub mod mode;
pub mod net;
pub mod paths;
pub mod pattern;
pub mod settings;
pub mod shell;
mod shell_parser;
pub mod verdict;

#[cfg(test)]
mod props_tests;

pub use conversation::ConversationPolicy;
pub use decide::{Answer, CallFacts, Decision, Overrides, Remember, Risk, Rule, decide};
pub use error::ConfigError;
pub use harness::{Harness, Harnesses, UnknownHarness, WorkspaceKind};
pub use mode::{Caller, Mode, UnknownMode, effective_mode};
pub use settings::{Network, NetworkPolicy, Permissions, RemoteSettings, SandboxSettings, Settings};
