//! The integration tests of superpi-http: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod kit;
mod peers;
