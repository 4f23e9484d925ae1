//! The kernel's own tools, registered in the sandbox's tool registry at start like any
//! runner an embedding program adds: `update_plan`, `ask_question`, `artifact`, `subagent`, the memory block, the schedule
//! block, `skill` and the hand-over tools (`handoff`, `escalate`). Each runs in the kernel's process and reaches the kernel through a
//! `KernelSlot`; `common` holds what the block tools share.

pub(crate) mod artifact;
pub(crate) mod common;
pub(crate) mod handover;
pub(crate) mod memory;
pub(crate) mod plan;
pub(crate) mod question;
pub(crate) mod schedule;
pub(crate) mod skill;
pub(crate) mod subagent;
