//! The integration tests of superpi-agui: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod cluster;
mod common;
mod e2e;
