use std::path::PathBuf;

use super::{BackendFile, Confinement, Finding, Report, Server, Toolchain, render, table};

fn report() -> Report {
    let fix = |what: &str, fix: &str| Finding { what: what.into(), fix: fix.into() };
    Report {
        confinement: Confinement {
            uid: 1000,
            landlock_abi: 4,
            seccomp: true,
            cgroup: "v2".into(),
            call_cgroup: false,
            pids_cgroup: false,
            mount_namespaces: false,
            disabled: false,
            missing: vec![fix("no cgroup for calls", "delegate one")],
        },
        toolchains: vec![
            Toolchain {
                name: "cargo".into(),
                path: Some("/home/dev/.cargo/bin/cargo".into()),
                reachable: true,
                fix: None,
            },
            Toolchain { name: "go".into(), path: None, reachable: false, fix: None },
            Toolchain {
                name: "node".into(),
                path: Some("/srv/node/bin/node".into()),
                reachable: false,
                fix: Some("add /srv/node/bin to `sandbox.extra_read_paths`".into()),
            },
        ],
        mcp_servers: vec![Server {
            name: "gone".into(),
            command: "gone-server".into(),
            can_start: false,
            problem: Some(fix("`gone-server` is not an executable file on the kernel's PATH", "install it")),
        }],
        unreadable: vec![PathBuf::from("/home/dev/.ssh"), PathBuf::from("/home/dev/.npmrc")],
        settings: vec![fix("sandbox.extra_read_paths: /nope does not exist", "create it")],
        permission_rules: vec![fix(
            "/w/.superpi/permissions.json is owned by another user (uid 1001), neither you nor root",
            "superpi ignores it: make it a file of your own (or remove it)",
        )],
        backend_files: vec![
            BackendFile {
                backend: "opencode".into(),
                path: "/w/.opencode".into(),
                standing: "accepted".into(),
                fix: None,
            },
            BackendFile {
                backend: "gemini-cli".into(),
                path: "/w/.gemini".into(),
                standing: "changed".into(),
                fix: Some("trust it".into()),
            },
        ],
    }
}

#[test]
fn the_report_is_aligned_text_with_a_fix_for_each_problem() {
    let text = render(&report());
    let expected = "\
Confinement
  user              uid 1000
  landlock          ABI 4
  seccomp           yes
  cgroup            v2, not delegated
  mount namespaces  no
  confinement       on
  ! no cgroup for calls
    fix: delegate one

Toolchains a tool can reach
  cargo  /home/dev/.cargo/bin/cargo  reachable
  go     -                           not found
  node   /srv/node/bin/node          NOT readable: add /srv/node/bin to `sandbox.extra_read_paths`

MCP servers
  gone  gone-server  cannot start: `gone-server` is not an executable file on the kernel's PATH; fix: install it

Unreadable to tools
  /home/dev/.ssh
  /home/dev/.npmrc

Settings that do not take effect
  ! sandbox.extra_read_paths: /nope does not exist
    fix: create it

Permission rules files
  ! /w/.superpi/permissions.json is owned by another user (uid 1001), neither you nor root
    fix: superpi ignores it: make it a file of your own (or remove it)
  opencode file    /w/.opencode  accepted
  gemini-cli file  /w/.gemini    changed; fix: trust it
";
    assert_eq!(text, expected);
}

#[test]
fn empty_sections_say_so() {
    let mut report = report();
    report.mcp_servers.clear();
    report.unreadable.clear();
    report.settings.clear();
    report.permission_rules.clear();
    report.backend_files.clear();
    let text = render(&report);
    assert!(text.contains("MCP servers\n  none in settings.json\n"), "{text}");
    assert!(text.contains("Unreadable to tools\n  nothing denied exists\n"), "{text}");
    assert!(text.contains("Settings that do not take effect\n  none\n"), "{text}");
    assert!(text.ends_with("Permission rules files\n  nothing wrong\n"), "{text}");
    assert_eq!(table(Vec::<Vec<String>>::new()), "");
}
