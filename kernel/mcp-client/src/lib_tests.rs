use std::collections::BTreeMap;
use std::path::PathBuf;

use superpi_policy::McpServerConfig;

use super::unavailable;
use crate::connection::{NO_ANSWER, ServerKey};

fn key(network: bool) -> ServerKey {
    let config = McpServerConfig::stdio("npx".into(), vec!["-y".into(), "some-server".into()], BTreeMap::new());
    ServerKey { workspace: PathBuf::from("/w"), name: "fs".into(), config, network }
}

#[test]
fn a_program_without_network_that_never_answers_is_told_how_to_get_it() {
    let why = format!("{NO_ANSWER} 30s");
    let text = unavailable(&key(false), &why);
    assert!(text.starts_with("the MCP server `fs` is not available: it did not answer within 30s."), "{text}");
    assert!(text.contains("without network") && text.contains("superpi mcp add fs --network"), "{text}");
    // With the network, or failing otherwise, the reason stands alone.
    assert!(!unavailable(&key(true), &why).contains("network"));
    assert!(!unavailable(&key(false), "exited with status 1").contains("network"));
}
