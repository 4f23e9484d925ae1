//! The integration tests of superpi-openai: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod claude_code;
mod cluster;
mod codex;
mod common;
mod e2e;
mod mcp_http;
mod messages;
mod official_clients;
mod responses;
mod structured;
mod telemetry;
