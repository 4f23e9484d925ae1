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

mod activity;
mod backend_seed;
mod backend_turn;
mod checkpoint;
mod cluster;
mod commands;
mod compaction;
mod config;
mod connection;
mod context;
mod conversation;
mod elsewhere;
mod feed;
mod forwarded_jobs;
mod freed;
mod handlers;
mod heads;
mod hooks;
mod images;
mod kernel;
mod live;
mod mcp_client;
mod mcp_connection;
mod mcp_tools;
mod memory;
mod memory_tool;
mod metrics;
mod outbox;
mod own_tool;
mod path_locks;
mod peer;
mod pipeline;
mod plan_tool;
mod provider_env;
mod questions;
mod recovery;
mod relay;
mod remote_watchers;
mod rules;
mod running_calls;
mod schedule;
mod schedule_tool;
mod scheduler;
mod server;
mod skill_tool;
mod skills;
mod snapshots;
pub mod store;
mod subagent_tool;
mod subscription;
mod sync;
mod telemetry;
mod tools;
mod tools_direct;
mod traces;
mod turn;

pub use config::{KernelConfig, KernelError};
pub use server::{run, status_of_socket};
