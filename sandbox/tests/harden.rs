//! harden_kernel_process, in a test process of its own (it changes the whole process).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Env;

#[tokio::test]
async fn the_hardened_kernel_is_not_dumpable_and_still_runs_tools() {
    superpi_sandbox::harden_kernel_process().unwrap();
    assert_eq!(unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) }, 0);
    let mut core = libc::rlimit { rlim_cur: 1, rlim_max: 1 };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut core) }, 0);
    assert_eq!((core.rlim_cur, core.rlim_max), (0, 0));

    let env = Env::new();
    common::assert_confinement_available(&env);
    let out = env.bash("echo still works").await;
    assert!(!out.is_error && out.output == "still works\n", "{out:?}");
    let out = env.run("ls", serde_json::json!({})).await;
    assert!(!out.is_error, "{out:?}");
    // The kernel's environment stays out of reach.
    let out = env.bash(&format!("cat /proc/{}/environ", std::process::id())).await;
    assert!(out.is_error && out.output.contains("Permission denied"), "{out:?}");
}
