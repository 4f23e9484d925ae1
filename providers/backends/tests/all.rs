//! The integration tests of superpi-backends: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod claude;
mod codex;
mod common;
mod gemini;
mod opencode;
