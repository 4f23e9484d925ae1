//! The official OpenAI client (`openai` on npm) and the AI SDK's OpenAI-compatible provider
//! (what OpenCode uses) against the real gateway: conformance/clients.mjs. Node and npm are
//! required; the packages are installed from conformance/package-lock.json when missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods, clippy::print_stdout)] // a test runs node

use crate::common;

use std::path::Path;
use std::process::Command;

use common::Gateway;

#[test]
fn official_clients_accept_the_gateway() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    if !dir.join("node_modules/openai").exists() || !dir.join("node_modules/@ai-sdk/openai-compatible").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .expect("npm is required for this test (Node 20 or later)");
        assert!(status.success(), "npm ci failed in {}", dir.display());
    }
    let gw = Gateway::start(&[], &[]);
    let out = Command::new("node")
        .arg("clients.mjs")
        .env("GATEWAY_URL", &gw.base)
        .current_dir(&dir)
        .output()
        .expect("node is required for this test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "official clients failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("all checks passed"), "{stdout}");
}
