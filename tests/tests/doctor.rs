//! `superpi doctor` on a developer's machine (the fixture home of src/real_machine.rs), as an
//! ordinary user: the secrets are listed as unreadable, rustup's cargo under `~/.cargo/bin` as
//! reachable, an MCP server installed under the home as able to start, a missing one and a
//! setting that does not take effect each with a fix; `--json` holds the same.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_tests::mcp_fixture_bin;
use superpi_tests::real_machine::{Machine, NOBODY, write};

#[test]
fn doctor_lists_what_a_tool_reaches_and_what_it_cannot_read() {
    let m = Machine::new(Some(NOBODY));
    let server = m.home.join(".local/share/fix-server/bin/mcp_fixture");
    std::fs::create_dir_all(server.parent().unwrap()).unwrap();
    std::fs::copy(mcp_fixture_bin(), &server).unwrap();
    let settings = json!({
        "sandbox": {"extra_read_paths": ["/nonexistent/toolchain"], "deny_read_paths": ["/nonexistent/secret"]},
        "mcp_servers": {"fix": {"command": server}, "gone": {"command": "gone-mcp-server"}},
    });
    write(&m.home.join(".config/superpi/settings.json"), &settings.to_string());

    let out = m.superpi(&["doctor", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<&str> = report.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["backend_files", "confinement", "mcp_servers", "permission_rules", "settings", "toolchains", "unreadable"]
    );
    let confinement = &report["confinement"];
    assert_eq!(confinement["uid"], 65534);
    assert!(confinement["landlock_abi"].as_i64().unwrap() > 0, "{confinement}");
    for key in ["seccomp", "call_cgroup", "pids_cgroup", "mount_namespaces", "disabled"] {
        assert!(confinement[key].is_boolean(), "{key}: {confinement}");
    }
    // As this user, the read-only mounts come from a user namespace (sandbox/ARCHITECTURE.md).
    assert_eq!(confinement["mount_namespaces"], true, "{confinement}");
    assert!(["v1", "v2", "none"].contains(&confinement["cgroup"].as_str().unwrap()), "{confinement}");

    let unreadable: Vec<&str> = report["unreadable"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    for secret in [".ssh", ".aws", ".npmrc", ".git-credentials", ".cargo/credentials.toml", ".bash_history"] {
        let path = m.home.join(secret);
        assert!(unreadable.contains(&path.to_str().unwrap()), "{secret} not in {unreadable:?}");
    }
    let cargo = report["toolchains"].as_array().unwrap().iter().find(|t| t["name"] == "cargo").unwrap();
    assert_eq!(cargo["path"], json!(m.home.join(".cargo/bin/cargo")), "{cargo}");
    assert_eq!(cargo["reachable"], true, "{cargo}");

    let servers = report["mcp_servers"].as_array().unwrap();
    let by_name = |name: &str| servers.iter().find(|s| s["name"] == name).unwrap();
    assert_eq!(by_name("fix")["can_start"], true, "{servers:?}");
    assert_eq!(by_name("gone")["can_start"], false, "{servers:?}");
    assert!(by_name("gone")["problem"]["fix"].as_str().unwrap().contains("full path"), "{servers:?}");
    let settings = report["settings"].to_string();
    assert!(settings.contains("/nonexistent/toolchain does not exist"), "{settings}");
    assert!(settings.contains("/nonexistent/secret is inside no read grant"), "{settings}");

    let out = m.superpi(&["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("\n  {}\n", m.home.join(".ssh").display())), "{text}");
    let cargo_line = text.lines().find(|l| l.trim_start().starts_with("cargo ")).unwrap();
    assert!(cargo_line.ends_with("reachable") && cargo_line.contains(".cargo/bin/cargo"), "{text}");
    assert!(text.contains("cannot start") && text.contains("fix:"), "{text}");
}
