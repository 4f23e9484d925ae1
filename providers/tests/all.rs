//! The integration tests of superpi-providers: one test binary, a module per file (a new file is
//! declared here; tests/tests/house.rs checks that none is left out).

mod builders;
mod common;
mod effort;
mod fakes;
mod live;
mod parsers;
mod properties;
mod replay;
mod schemas;
mod tool_search;
