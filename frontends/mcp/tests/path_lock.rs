//! End to end: concurrent `tools/call` edits of one file through the real `superpi mcp`
//! process are serialized by the kernel's per-path lock, so no edit is lost.
//!
//! Each edit reads the whole file, replaces its own marker and writes the file back; without
//! the lock, edits that read the file before another one wrote it write back a file without
//! that other edit. The file is large enough that every edit takes a while.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use superpi_tests::{TestEnv, superpi_bin};

const EDITS: usize = 16;
const FILLER: usize = 256 * 1024;
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_edits_of_one_file_are_serialized() {
    let env = TestEnv::new();
    let filler = "x".repeat(FILLER);
    let original: String = (0..EDITS).map(|i| format!("<<mark {i}>>\n{filler}\n")).collect();
    let file = env.workspace.join("big.txt");
    std::fs::write(&file, &original).unwrap();

    let mut cmd = tokio::process::Command::new(superpi_bin());
    cmd.arg("mcp").current_dir(&env.workspace);
    env.apply_env(cmd.as_std_mut());
    let client = tokio::time::timeout(WAIT, ().serve(TokioChildProcess::new(cmd).unwrap()))
        .await
        .expect("initialize in time")
        .expect("initialize");

    let mut edits = tokio::task::JoinSet::new();
    for i in 0..EDITS {
        let peer = client.peer().clone();
        edits.spawn(async move {
            let mut params = CallToolRequestParams::new("edit");
            params.arguments = json!({"path": "big.txt", "old_string": format!("<<mark {i}>>"), "new_string": format!("<<done {i}>>")})
                .as_object()
                .cloned();
            tokio::time::timeout(WAIT, peer.call_tool(params)).await.expect("tools/call in time").expect("tools/call")
        });
    }
    while let Some(result) = edits.join_next().await {
        let result = result.unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    let after = std::fs::read_to_string(&file).unwrap();
    let lost: Vec<usize> = (0..EDITS).filter(|i| !after.contains(&format!("<<done {i}>>"))).collect();
    assert!(lost.is_empty(), "edits lost to a concurrent edit of the same file: {lost:?}");
    assert_eq!(after.len(), original.len(), "nothing but the markers changed");
    client.cancel().await.expect("close");
}
