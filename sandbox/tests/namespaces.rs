//! The private namespaces calls run in, as root: the calls of one workspace share theirs (made
//! once, kept), other workspaces get their own, and nothing kept outlives what it was made
//! from: a workspace made again, or a change of the machine's mount table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use std::path::Path;

use common::{Env, root_env};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn bash_in(env: &Env, workspace: &Path, command: &str) -> String {
    let mut call = env.call("bash", json!({ "command": command }));
    call.workspace = Some(workspace.to_path_buf());
    let out = env.sandbox.run(call, CancellationToken::new(), None).await;
    assert!(!out.is_error, "{out:?}");
    out.output
}

const NAMESPACES: &str = "readlink /proc/self/ns/mnt /proc/self/ns/ipc";

/// Whether the machine's mount table changed since `table` (/proc/self/mountinfo) was opened.
fn mount_table_changed(table: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    let mut poll = libc::pollfd { fd: table.as_raw_fd(), events: libc::POLLPRI, revents: 0 };
    // SAFETY: poll(2) of one descriptor the caller holds open, without waiting.
    unsafe { libc::poll(&mut poll, 1, 0) > 0 && poll.revents & (libc::POLLPRI | libc::POLLERR) != 0 }
}

#[tokio::test]
async fn calls_of_a_workspace_share_its_namespaces_and_another_workspace_has_its_own() {
    let env = root_env();
    let other = env.workspace.parent().unwrap().join("other-workspace");
    std::fs::create_dir_all(&other).unwrap();
    // A change of the machine's mount table between the two calls (a login session's tmpfs,
    // another program's mount) rightly drops what was kept: such a pair is tried again.
    let (mut first, mut second) = (String::new(), String::new());
    for _ in 0..5 {
        let table = std::fs::File::open("/proc/self/mountinfo").unwrap();
        // The sandbox polls its own view of the table at each call: a change made before ours
        // was opened (another test's) is still news to it, and the call that hears it keeps
        // nothing. A call first hears it, so the pair below sees only what `table` sees.
        bash_in(&env, &env.workspace, "true").await;
        first = bash_in(&env, &env.workspace, NAMESPACES).await;
        second = bash_in(&env, &env.workspace, NAMESPACES).await;
        if !mount_table_changed(&table) {
            break;
        }
    }
    let elsewhere = bash_in(&env, &other, NAMESPACES).await;
    let host = format!(
        "{}\n{}\n",
        std::fs::read_link("/proc/self/ns/mnt").unwrap().display(),
        std::fs::read_link("/proc/self/ns/ipc").unwrap().display()
    );
    assert_eq!(first, second, "the second call of the workspace enters the namespaces the first set up");
    assert_ne!(first, elsewhere, "another workspace has namespaces of its own");
    for (a, b) in first.lines().zip(host.lines()) {
        assert_ne!(a, b, "calls are not in the machine's namespaces");
    }
    // What each set up stays right: the workspace writable, everything else read-only.
    let out = bash_in(&env, &other, "echo there > f && cat f && (touch /usr/pwned 2>&1 || true)").await;
    assert!(out.contains("there") && out.contains("Read-only file system"), "{out}");
    let out = bash_in(&env, &env.workspace, "echo here > f && cat f && (touch /usr/pwned 2>&1 || true)").await;
    assert!(out.contains("here") && out.contains("Read-only file system"), "{out}");
    assert!(!Path::new("/usr/pwned").exists());
}

#[tokio::test]
async fn a_workspace_made_again_is_bound_from_the_new_directory() {
    let env = root_env();
    bash_in(&env, &env.workspace, "echo old > f").await;
    std::fs::remove_dir_all(&env.workspace).unwrap();
    std::fs::create_dir(&env.workspace).unwrap();
    let out = bash_in(&env, &env.workspace, "ls; echo new > g && echo WROTE").await;
    assert!(out.contains("WROTE") && !out.contains('f'), "{out}");
    assert_eq!(std::fs::read_to_string(env.workspace.join("g")).unwrap(), "new\n");
}
