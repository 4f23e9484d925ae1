//! Artifacts: files a turn's `artifact` tool writes for the person, kept per conversation in
//! the store (with a copy in the writing kernel's data dir), listed by `superpi artifacts`,
//! downloaded through the gateway and AG-UI by their conversation's principal only, from any
//! kernel on a shared database, and shown in ACP as a resource link.
#![allow(clippy::unwrap_used)] // test helpers fail loudly

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

use serde_json::{Value, json};
use superpi_client::principal::principal_for_token;
use superpi_proto::EventBody;
use superpi_tests::real_machine::{Machine, NOBODY};
use superpi_tests::stdio::Stdio2;
use superpi_tests::{TestEnv, open_and_watch, postgres_server, turn_events};

/// Bytes that are not UTF-8, so a download that mangled them would show.
const BINARY: &[u8] = &[0, 1, 2, 0xff, 0xfe, b'\n', 0x80, b'z'];
const BINARY_BASE64: &str = "AAEC//4KgHo=";

async fn get(base: &str, path: &str, token: Option<&str>) -> (u16, Vec<u8>, Option<String>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let mut request = client.get(format!("{base}{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let disposition = response.headers().get("content-disposition").map(|v| v.to_str().unwrap().to_string());
    (status, response.bytes().await.unwrap().to_vec(), disposition)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_is_downloaded_by_its_principal_and_refused_to_another() {
    let env = TestEnv::new();
    let tokens = [("SUPERPI_GATEWAY_TOKEN", "token-a,token-b")];
    let (_gateway, gateway) = env.spawn_http(&["gateway", "--port", "0"], &tokens);
    let (_agui, agui) = env.spawn_http(&["agui", "--port", "0"], &tokens);

    // A turn of token-a's principal writes one, through the mock model.
    let mut options = env.connect_options("test");
    options.principal = principal_for_token("token-a");
    options.remote = true;
    let client = superpi_client::KernelClient::connect(&options).await.unwrap();
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, None, false).await;
    let call = json!({"name": "../../out/data.bin", "content": BINARY_BASE64, "encoding": "base64"});
    let turn = client.submit_text(conv, &format!("@tool artifact {call}")).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    let created: Vec<&EventBody> =
        events.iter().map(|e| &e.body).filter(|b| matches!(b, EventBody::ArtifactCreated { .. })).collect();
    assert!(
        matches!(created.as_slice(), [EventBody::ArtifactCreated { name, bytes: 8, media_type, .. }]
            if name == "data.bin" && media_type == "application/octet-stream"),
        "the name kept only its file name: {events:?}"
    );
    let stored = env.path().join("data/artifacts").join(conv.to_string()).join("data.bin");
    assert_eq!(std::fs::read(&stored).unwrap(), BINARY, "kept in the data dir, outside the workspace");
    assert!(!env.workspace.join("out").exists() && !env.path().join("out").exists(), "no path escaped");

    // Its principal downloads the same bytes from the gateway and from AG-UI.
    let path = format!("/v1/artifacts/{conv}/data.bin");
    for base in [&gateway, &agui] {
        let (status, body, disposition) = get(base, &path, Some("token-a")).await;
        assert_eq!((status, body.as_slice()), (200, BINARY), "{base}");
        assert_eq!(disposition.as_deref(), Some("attachment; filename=\"data.bin\""));
        // Another principal, no token, another name: refused, the first two alike as missing.
        assert_eq!(get(base, &path, Some("token-b")).await.0, 404, "{base}");
        assert_eq!(get(base, &path, None).await.0, 401, "{base}");
        assert_eq!(get(base, &format!("/v1/artifacts/{conv}/..%2Fsuperpi.sqlite"), Some("token-a")).await.0, 404);
    }
    // Nor does the other principal list it.
    let mut other = env.connect_options("test");
    other.principal = principal_for_token("token-b");
    other.remote = true;
    let other = superpi_client::KernelClient::connect(&other).await.unwrap();
    assert!(other.artifact_list(None).await.unwrap().is_empty());
    assert!(other.artifact_list(Some(conv)).await.is_err());
    assert_eq!(client.artifact_list(None).await.unwrap().len(), 1);
}

/// The CLI lists what a `superpi run` turn wrote; through ACP the editor gets a resource link
/// to the file; as an ordinary user on a developer's machine, the files are that user's, 0600
/// in 0700 directories.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_an_ordinary_user_an_artifact_is_listed_linked_in_acp_and_private() {
    let m = Machine::new(Some(NOBODY));
    let call = json!({"name": "report.md", "content": "# Findings\n\nAll good.\n"});
    let out = m.superpi(&["run", &format!("@tool artifact {call}")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let mut acp = Stdio2::spawn(m.superpi(&["acp"]));
    acp.call(0, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}), |_| None).await;
    let session = acp.call(1, "session/new", json!({"cwd": m.workspace, "mcpServers": []}), |_| None).await;
    let call = json!({"name": "table.csv", "content": "a,b\n1,2\n"});
    let prompt = json!({"sessionId": session["sessionId"], "prompt": [
        {"type": "text", "text": format!("@tool artifact {call}")}]});
    let mut updates: Vec<Value> = Vec::new();
    let done = acp.prompt_allowing(2, prompt, |update| updates.push(update.clone())).await;
    assert_eq!(done["stopReason"], json!("end_turn"), "{done}");
    let link = updates
        .iter()
        .find(|u| u["sessionUpdate"] == json!("agent_message_chunk") && u["content"]["type"] == json!("resource_link"))
        .unwrap_or_else(|| panic!("a resource link: {updates:#?}"));
    let data = m.home.join(".local/share/superpi");
    let uri = link["content"]["uri"].as_str().unwrap();
    let file = std::path::PathBuf::from(uri.strip_prefix("file://").unwrap());
    assert!(file.starts_with(data.join("artifacts")) && file.ends_with("table.csv"), "{link}");
    assert_eq!((&link["content"]["mimeType"], &link["content"]["size"]), (&json!("text/csv"), &json!(8)));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a,b\n1,2\n");

    let listed = m.superpi(&["artifacts", "--json"]).output().unwrap();
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let listed: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let mut names: Vec<&str> = listed.iter().map(|a| a["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["report.md", "table.csv"], "{listed:?}");
    let table = m.superpi(&["artifacts"]).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("report.md") && table.contains(&file.display().to_string()), "{table}");

    let uid: u32 = NOBODY.parse().unwrap();
    let owned = |path: &std::path::Path, mode: u32| {
        let meta = std::fs::metadata(path).unwrap();
        assert_eq!((meta.uid(), meta.permissions().mode() & 0o777), (uid, mode), "{}", path.display());
    };
    owned(&file, 0o600);
    owned(file.parent().unwrap(), 0o700);
    owned(&data.join("artifacts"), 0o700);
}

/// Of two kernels on one PostgreSQL database (two machines: two data dirs), the second lists,
/// reads and serves through its gateway an artifact a turn on the first wrote: the bytes are
/// in the database, not only in the first's data dir. Skipped, saying so, without PostgreSQL
/// binaries unless CI is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_kernel_on_the_database_serves_an_artifact_the_first_wrote() {
    let Some(server) = postgres_server::shared() else { return };
    let [(machine_a, _kernel_a, _), (machine_b, _kernel_b, _)] =
        TestEnv::two_on_one_database(&server.new_database()).await;
    let (_gateway, gateway) =
        machine_b.spawn_http(&["gateway", "--port", "0"], &[("SUPERPI_GATEWAY_TOKEN", "token-a")]);
    async fn connect(machine: &TestEnv) -> superpi_client::KernelClient {
        let mut options = machine.connect_options("test");
        options.principal = principal_for_token("token-a");
        options.remote = true;
        superpi_client::KernelClient::connect(&options).await.unwrap()
    }
    let on_a = connect(&machine_a).await;
    let (conv, mut sub) = open_and_watch(&on_a, &machine_a.workspace, None, false).await;
    let call = json!({"name": "data.bin", "content": BINARY_BASE64, "encoding": "base64"});
    let turn = on_a.submit_text(conv, &format!("@tool artifact {call}")).await.unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert!(events.iter().any(|e| matches!(e.body, EventBody::ArtifactCreated { .. })), "{events:?}");

    let on_b = connect(&machine_b).await;
    let listed = on_b.artifact_list(None).await.unwrap();
    assert_eq!(
        listed.iter().map(|a| (a.conversation_id, a.name.as_str(), a.bytes)).collect::<Vec<_>>(),
        [(conv, "data.bin", 8)]
    );
    let read = on_b.artifact_read(conv, "data.bin").await.unwrap();
    assert_eq!(read.data, BINARY_BASE64);
    let (status, body, _) = get(&gateway, &format!("/v1/artifacts/{conv}/data.bin"), Some("token-a")).await;
    assert_eq!((status, body.as_slice()), (200, BINARY), "downloaded through the second kernel");
    assert!(!machine_b.path().join("data/artifacts").join(conv.to_string()).exists(), "B keeps no copy of it");
}
