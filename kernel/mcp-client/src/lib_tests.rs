use std::collections::BTreeMap;
use std::path::PathBuf;

use superpi_policy::McpServerConfig;

use super::unavailable;
use crate::connection::{NO_ANSWER, ServerKey, Unstarted};
use superpi_sandbox::NetworkRefused;

fn key(network: bool) -> ServerKey {
    let config = McpServerConfig::stdio("npx".into(), vec!["-y".into(), "some-server".into()], BTreeMap::new());
    ServerKey { workspace: PathBuf::from("/w"), name: "fs".into(), config, network }
}

#[test]
fn a_program_without_network_that_never_answers_is_told_how_to_get_it() {
    let why = Unstarted::from(format!("{NO_ANSWER} 30s"));
    let text = unavailable(&key(false), &why);
    assert!(text.starts_with("the MCP server `fs` is not available: it did not answer within 30s."), "{text}");
    assert!(text.contains("without network") && text.contains("superpi mcp add fs --network"), "{text}");
    // With the network, or failing otherwise, the reason stands alone.
    assert!(!unavailable(&key(true), &why).contains("network"));
    assert!(!unavailable(&key(false), &Unstarted::from("exited with status 1".to_string())).contains("network"));
}

#[test]
fn a_server_whose_sockets_were_watched_is_told_what_it_tried() {
    let tried = NetworkRefused { sockets: 3, first_program: Some("npm".into()) };
    let failed = Unstarted { why: "exited with status 1".into(), network: Some(tried), login: false };
    let text = unavailable(&key(false), &failed);
    assert!(text.contains("`npm` tried to open an internet connection (3 times), which the sandbox refused"), "{text}");
    assert!(text.contains("superpi mcp add fs --network"), "{text}");
    // Watched and never tried: no network story, whatever the failure.
    let quiet = Unstarted { why: format!("{NO_ANSWER} 30s"), network: Some(NetworkRefused::default()), login: false };
    assert!(!unavailable(&key(false), &quiet).contains("network"), "{}", unavailable(&key(false), &quiet));
}
