//! Finding a call's processes without a cgroup, and recognising tool processes.
//!
//! Every call's environment carries a tag (`SUPERPI_SANDBOX_CALL=KERNELPID-N`). Where no pids
//! cgroup is available, the end of a call sweeps /proc for processes that still carry its tag
//! (a grandchild that called setsid and left the process group, for instance). A process that
//! also scrubs its environment escapes this sweep: only the cgroup closes that hole.

use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) const TAG_VAR: &str = "SUPERPI_SANDBOX_CALL";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A fresh tag for one call.
pub(crate) fn new_tag() -> String {
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

fn environ_has(pid: i32, needle: &[u8]) -> bool {
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(env) => env.split(|b| *b == 0).any(|entry| entry.starts_with(needle)),
        Err(_) => false,
    }
}

fn pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(Result::ok).filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())).collect()
}

/// Kills every process that carries `tag`, until two passes in a row find none (a process
/// caught in the middle of an exec shows an empty environment for an instant), bounded.
pub(crate) fn sweep(tag: &str) {
    let needle = format!("{TAG_VAR}={tag}");
    let me = std::process::id() as i32;
    let mut quiet = 0;
    for _ in 0..50 {
        let found: Vec<i32> = pids().into_iter().filter(|p| *p != me && environ_has(*p, needle.as_bytes())).collect();
        if found.is_empty() {
            quiet += 1;
            if quiet == 2 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        }
        quiet = 0;
        for pid in found {
            // SAFETY: kill(2) on a process carrying this call's tag.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` is one of this kernel's tool processes: a descendant of this process, a
/// member of one of its call cgroups, or a carrier of one of its call tags.
pub fn is_tool_process(pid: u32) -> bool {
    let me = std::process::id() as i32;
    let Ok(pid) = i32::try_from(pid) else { return false };
    if pid == me {
        return false;
    }
    let mut cur = pid;
    for _ in 0..256 {
        match parent_of(cur) {
            Some(p) if p == me => return true,
            Some(p) if p > 1 => cur = p,
            _ => break,
        }
    }
    let cgroup_mark = format!("/superpi-{me}-");
    if std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| c.contains(&cgroup_mark)) {
        return true;
    }
    environ_has(pid, format!("{TAG_VAR}={me}-").as_bytes())
}
