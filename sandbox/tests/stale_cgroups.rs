//! Call cgroups a kernel killed outright leaves behind (as root, with the call cgroups on): the
//! next sandbox removes those of kernels that are gone, and a name still taken (the pid came
//! again) is skipped rather than failing the call. A test binary of its own: it needs this
//! process's count of cgroup names to start at zero.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use std::path::PathBuf;

/// The directory call cgroups are made in: this process's pids cgroup.
fn pids_cgroup() -> PathBuf {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mount = mountinfo
        .lines()
        .filter_map(|l| l.split_once(" - "))
        .find(|(_, right)| {
            right.starts_with("cgroup ") && right.split(' ').nth(2).unwrap_or("").split(',').any(|o| o == "pids")
        })
        .map(|(left, _)| PathBuf::from(left.split(' ').nth(4).unwrap()));
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    match mount {
        Some(mount) => {
            let line = own.lines().find(|l| l.split(':').nth(1).unwrap_or("").split(',').any(|c| c == "pids")).unwrap();
            mount.join(line.splitn(3, ':').nth(2).unwrap().trim_start_matches('/'))
        }
        None => {
            let line = own.lines().find(|l| l.starts_with("0::")).unwrap();
            PathBuf::from("/sys/fs/cgroup").join(line.trim_start_matches("0::/"))
        }
    }
}

#[tokio::test]
async fn cgroups_left_by_a_killed_kernel_neither_stay_nor_block_calls() {
    let base = pids_cgroup();
    // A kernel that is gone: a child that has exited and been reaped.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = base.join(format!("superpi-{dead}-0"));
    std::fs::create_dir(&stale).unwrap();
    // Names this process would make, taken as if an earlier process with its pid left them.
    let taken: Vec<PathBuf> = (0..50).map(|n| base.join(format!("superpi-{}-{n}", std::process::id()))).collect();
    for dir in &taken {
        std::fs::create_dir(dir).unwrap();
    }
    let env = common::root_env();
    let out = env.bash("echo ran").await;
    for dir in &taken {
        let _ = std::fs::remove_dir(dir);
    }
    assert!(!out.is_error && out.output.contains("ran"), "{out:?}");
    assert!(!stale.exists(), "the cgroup of a kernel that is gone is removed");
}
