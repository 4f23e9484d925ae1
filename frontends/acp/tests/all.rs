//! The integration tests of superpi-acp: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod common;
mod e2e;
mod official_sdk;
