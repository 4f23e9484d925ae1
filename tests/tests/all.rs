//! The integration tests of superpi-tests: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod backend_frontends;
mod backends;
mod checkpoints;
mod context;
mod doctor;
mod durable_memory;
mod first_hour;
mod frontend_binary;
mod frontend_images;
mod fuzz_corpora;
mod history;
mod hooks_skills;
mod house;
mod kernel;
mod keys;
mod lifecycle;
mod mcp_client;
mod mcp_npm;
mod memory;
mod module_cycles;
mod network;
mod permissions;
mod postgres;
mod protected_paths;
mod providers;
mod read_only_calls;
mod real_machines;
mod registry;
mod remote_ceiling;
mod schedules;
mod subagents;
mod terminal;
mod terminal_tty;
mod turn_steps;
mod web;
