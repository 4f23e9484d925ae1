//! superpi-kernel: the one process that runs conversations.
//!
//! Owns the kernel socket (0700 directory, 0600 socket, peer uid checked, one kernel per data
//! directory), the store (SQLite, WAL, or PostgreSQL shared by several kernels, each running
//! the conversations whose leases it holds), one actor per live conversation with its turn loop,
//! event publication with per-watcher credit windows, permission questions, and the one
//! tool-call pipeline (the user's hooks, policy, questions, path locks, the sandbox), and the
//! skills it lists to a model. Frontends reach it only
//! through the kernel protocol of superpi-proto.
//!
//! It must not know any frontend protocol (ACP, MCP, JSON-RPC, OpenAI, AG-UI), and no built-in
//! tool ever runs inside its process: calls go to superpi-sandbox's confined children (a runner
//! an embedding program registers runs here and confines itself), nor does a user's hook (the
//! sandbox crate starts it, confined).

// Rooms, in the order they build on each other: parts the kernel holds (conversation, watch,
// features, telemetry), the kernel, then what runs on it (live, turn, cluster, tools, server).
mod activity;
mod catalog;
mod cluster;
mod config;
mod conversation;
mod features;
mod freed;
mod kernel;
mod live;
mod mcp_logins;
mod path_locks;
mod running_calls;
mod scheduler;
mod server;
mod spend;
mod sync;
mod telemetry;
mod tools;
mod turn;
mod watch;

pub use config::{KernelConfig, KernelError};
pub use features::rules::{ListedRules, listing as rules_listing};
pub use features::schedule::check_cron;
pub use server::{run, status_of_socket};
