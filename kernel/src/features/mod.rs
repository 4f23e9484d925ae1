//! The kernel's features that need no kernel: durable memory's notes and their index, schedules
//! (cron and time zones), skills, repository rules (AGENTS.md), user-defined commands, the
//! workspace snapshots behind checkpoints and the scratch and shared workspaces the kernel makes. Each is a part the kernel holds or a pure reader;
//! the tools that expose them to a model are in `tools/`, their use in a turn in `turn/`.

pub(crate) mod commands;
pub(crate) mod memory;
pub(crate) mod rules;
pub(crate) mod schedule;
pub(crate) mod skills;
pub(crate) mod snapshots;
pub(crate) mod workspaces;
