//! The integration tests of superpi-sandbox: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod common;
mod escape;
mod escape_network;
mod escape_paths;
mod escape_processes;
mod namespaces;
mod nonroot;
mod output;
mod planted_git;
mod servers;
mod tools;
mod tree;
mod works;
