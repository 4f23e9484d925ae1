//! A change of the machine's mount table drops the namespaces kept for calls (as root). A
//! test binary of its own: the mount it makes would drop the namespaces other tests of the
//! same binary keep, and those compare the namespaces of consecutive calls.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::root_env;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_mount_made_on_the_machine_reaches_the_next_calls() {
    let env = root_env();
    bash(&env, "true").await; // sets up the workspace's namespaces, which are kept
    let mount_point = env.workspace.join("mounted");
    std::fs::create_dir(&mount_point).unwrap();
    let target = std::ffi::CString::new(mount_point.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mount(2) of a tmpfs on the test's own directory, with C strings that outlive it.
    let ret = unsafe { libc::mount(c"none".as_ptr(), target.as_ptr(), c"tmpfs".as_ptr(), 0, std::ptr::null()) };
    assert_eq!(ret, 0, "{}", std::io::Error::last_os_error());
    std::fs::write(mount_point.join("on-tmpfs"), "from the new mount").unwrap();
    // Namespaces copied before the mount do not have it (their propagation is private): each
    // call after it must run in namespaces made since.
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(
            env.sandbox
                .run(env.call("bash", json!({ "command": "cat mounted/on-tmpfs" })), CancellationToken::new(), None)
                .await,
        );
    }
    // SAFETY: umount2 of the mount made above.
    unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    for out in seen {
        assert!(
            !out.is_error && out.output.contains("from the new mount"),
            "the call sees the machine's mounts as they are now: {out:?}"
        );
    }
}

async fn bash(env: &common::Env, command: &str) -> String {
    let out = env.sandbox.run(env.call("bash", json!({ "command": command })), CancellationToken::new(), None).await;
    assert!(!out.is_error, "{out:?}");
    out.output
}
