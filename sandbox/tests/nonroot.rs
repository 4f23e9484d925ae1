//! The sandbox as an ordinary user runs it: a kernel that is not root (no mount namespace, no
//! cgroup, no capabilities to drop). The test runs the `superpi-sandbox-try` program as
//! nobody with setpriv (util-linux), so it needs root to start, as CI has.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const NOBODY: &str = "65534";

fn chown_nobody(path: &Path) {
    let status = Command::new("chown").args(["-R", &format!("{NOBODY}:{NOBODY}")]).arg(path).status().unwrap();
    assert!(status.success());
}

fn as_nobody(
    bin: &Path,
    ws: &Path,
    data: &Path,
    home: &Path,
    tool: &str,
    args: serde_json::Value,
) -> serde_json::Value {
    let out = Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "--"])
        .arg("env")
        .arg(format!("HOME={}", home.display()))
        .arg("PATH=/usr/local/bin:/usr/bin:/bin")
        .arg(bin.join("superpi-sandbox-try"))
        .arg(ws)
        .arg(data)
        .arg(tool)
        .arg(args.to_string())
        .output()
        .expect("setpriv (util-linux) is needed to run the sandbox as an ordinary user");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_unprivileged_kernel_confines_its_tools() {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (bin, ws, data, home) = (base.join("bin"), base.join("ws"), base.join("home/data"), base.join("home"));
    for d in [&bin, &ws, &data] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "hunter2").unwrap();
    std::fs::write(home.join(".netrc"), "machine x password hunter3").unwrap();
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = Someone\n").unwrap();
    for name in ["superpi-sandbox-try", "superpi-sandbox-tool"] {
        let from = match name {
            "superpi-sandbox-try" => env!("CARGO_BIN_EXE_superpi-sandbox-try"),
            _ => env!("CARGO_BIN_EXE_superpi-sandbox-tool"),
        };
        std::fs::copy(from, bin.join(name)).unwrap();
    }
    chown_nobody(&base);

    let out = as_nobody(
        &bin,
        &ws,
        &data,
        &home,
        "bash",
        serde_json::json!({"command": format!(
            "id -u; grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/self/status; echo made > made.txt; \
             cat {h}/.ssh/id_rsa {h}/.netrc; cat {h}/.gitconfig; echo x > {h}/planted; echo hi > /dev/tcp/127.0.0.1/9; \
             setsid sh -c 'echo $$ > pid; exec sleep 300' > /dev/null 2>&1 < /dev/null & \
             while [ ! -s pid ]; do :; done; echo grandchild $(cat pid)",
            h = home.display()
        )}),
    );
    let text = out["output"].as_str().unwrap();
    assert!(text.starts_with("65534\n"), "{text}");
    assert!(text.contains("NoNewPrivs:\t1") && text.contains("Seccomp:\t2"), "{text}");
    assert!(text.contains("CapEff:\t0000000000000000"), "{text}");
    assert!(!text.contains("hunter2") && !text.contains("hunter3"), "{text}");
    assert!(text.contains("name = Someone"), "the home's configuration is readable: {text}");
    assert!(!home.join("planted").exists());
    assert!(text.contains("Operation not permitted"), "{text}");
    assert_eq!(std::fs::read_to_string(ws.join("made.txt")).unwrap(), "made\n");
    let pid = text.lines().find_map(|l| l.strip_prefix("grandchild ")).unwrap().trim().to_string();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(stat.is_empty() || stat.contains(") Z"), "the grandchild {pid} survived: {stat}");

    let out = as_nobody(&bin, &ws, &data, &home, "read", serde_json::json!({"path": "made.txt"}));
    assert_eq!(out["output"], "     1\tmade\n");
    let out = as_nobody(&bin, &ws, &data, &home, "read", serde_json::json!({"path": home.join(".ssh/id_rsa")}));
    assert_eq!(out["is_error"], true);
}
