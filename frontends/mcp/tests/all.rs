//! The integration tests of superpi-mcp: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod approval;
mod common;
mod e2e;
mod listen;
mod modern;
mod path_lock;
mod questions;
mod structured;
