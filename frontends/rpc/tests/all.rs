//! The integration tests of superpi-rpc: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod common;
mod peers;
mod questions;
mod stdio;
mod tcp;
mod unix;
