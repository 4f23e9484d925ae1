//! Finding a call's processes without a cgroup, and recognising tool processes.
//!
//! Every call's environment carries a tag (`SUPERPI_SANDBOX_CALL=KERNELPID-N`). Where no pids
//! cgroup is available, the end of a call sweeps /proc for processes that still carry its tag
//! (a grandchild that called setsid and left the process group, for instance). A process that
//! also scrubs its environment escapes this sweep: only the cgroup closes that hole.
//!
//! Recognising a confined tool (for the peer checks of the kernel's socket and the frontends'
//! listeners) does not depend on the tag alone: every confined process also carries a mark it
//! cannot remove ([`LOCKS_MARK`]), whatever it does to its environment or its process tree.

use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) const TAG_VAR: &str = "SUPERPI_SANDBOX_CALL";

/// The hard (and soft) RLIMIT_LOCKS of every call: the mark of a confined tool. Linux has not
/// enforced this limit since 2.4.25, so it costs a tool nothing; every other process has it
/// unlimited. A process lowers a hard limit freely but raises it only with CAP_SYS_RESOURCE,
/// which a confined tool never has (its capabilities and bounding set are empty, no_new_privs
/// keeps set-ID programs from giving any back, and prlimit on another process is refused by
/// seccomp), and the limit survives fork, exec, setsid, a double fork and a cleared
/// environment. A process outside superpi could carry the mark only by choosing to, and then it
/// is refused as a tool: it gains nothing.
pub(crate) const LOCKS_MARK: u64 = 1 << 40;

/// Whether `pid` carries the mark of a confined tool: a finite hard limit on file locks and
/// no_new_privs (which a tool cannot clear either; requiring both keeps a process that only
/// lowered its lock limit from being taken for a tool).
fn carries_mark(pid: i32) -> bool {
    let finite_locks = std::fs::read_to_string(format!("/proc/{pid}/limits")).is_ok_and(|limits| {
        limits
            .lines()
            .find(|l| l.starts_with("Max file locks"))
            .and_then(|l| l.split_whitespace().nth(4))
            .is_some_and(|hard| hard != "unlimited")
    });
    finite_locks
        && std::fs::read_to_string(format!("/proc/{pid}/status"))
            .is_ok_and(|status| status.lines().any(|l| l.split_whitespace().eq(["NoNewPrivs:", "1"])))
}

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

/// Clock ticks since boot, the unit of a process's start time in /proc/PID/stat.
pub(crate) fn now_ticks() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime fills a stack value.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    // SAFETY: sysconf cannot fail for _SC_CLK_TCK.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ts.tv_sec as u64 * hz + ts.tv_nsec as u64 * hz / 1_000_000_000
}

fn start_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields after the command: state is field 3; starttime is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Kills every process that started since `since` (clock ticks since boot) and carries
/// `tag`, pass after pass until one finds nothing certain to do, bounded. A process caught in
/// the middle of an exec shows an empty environment for an instant: it makes another pass.
pub(crate) fn sweep(tag: &str, since: u64) {
    let needle = format!("{TAG_VAR}={tag}");
    let me = std::process::id() as i32;
    for _ in 0..50 {
        let mut found = Vec::new();
        let mut uncertain = false;
        for pid in pids() {
            if pid == me || start_ticks(pid).is_none_or(|t| t + 1 < since) {
                continue;
            }
            match std::fs::read(format!("/proc/{pid}/environ")) {
                Ok(env) if env.split(|b| *b == 0).any(|e| e.starts_with(needle.as_bytes())) => found.push(pid),
                Ok(env) if env.is_empty() => uncertain |= !is_zombie(pid),
                _ => {}
            }
        }
        if found.is_empty() && !uncertain {
            return;
        }
        for pid in found {
            kill_and_wait(pid);
        }
        std::thread::yield_now();
    }
}

/// SIGKILL through a pidfd (no pid reuse race), then waits (bounded) until the process has
/// exited: a kill is asynchronous, and the call is not over while its processes are dying.
fn kill_and_wait(pid: i32) {
    // SAFETY: pidfd_open, pidfd_send_signal, poll and close on a descriptor we own.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if fd < 0 {
            libc::kill(pid, libc::SIGKILL);
            return;
        }
        libc::syscall(libc::SYS_pidfd_send_signal, fd, libc::SIGKILL, std::ptr::null::<u8>(), 0);
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        libc::poll(&mut pfd, 1, 2000);
        libc::close(fd);
    }
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rfind(')').map(|i| s[i + 1..].trim_start().starts_with(['Z', 'X'])))
        .unwrap_or(true)
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` is a confined tool process of any superpi kernel on this machine: it carries
/// the mark ([`LOCKS_MARK`]), it sits in a call's cgroup, or it or one of its ancestors
/// carries a call tag. What a frontend asks of the peer of its listener (the kernel asks
/// [`is_tool_process`] of its own socket's peers). A process that scrubbed its environment and
/// left its tool's process tree is still found by its mark, with or without a cgroup.
pub fn is_confined_tool(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    if carries_mark(pid) || in_call_cgroup(pid) {
        return true;
    }
    let needle = format!("{TAG_VAR}=");
    let mut cur = pid;
    for _ in 0..256 {
        if environ_has(cur, needle.as_bytes()) {
            return true;
        }
        match parent_of(cur) {
            Some(p) if p > 1 => cur = p,
            _ => return false,
        }
    }
    false
}

/// Every confined tool process of any superpi kernel on this machine, as
/// [`is_confined_tool`] recognises them, in one pass over /proc (four small reads a process).
pub fn confined_tools() -> Vec<u32> {
    let needle = format!("{TAG_VAR}=");
    let mut parents = std::collections::HashMap::new();
    let mut marked = std::collections::HashSet::new();
    for pid in pids() {
        if carries_mark(pid) || environ_has(pid, needle.as_bytes()) || in_call_cgroup(pid) {
            marked.insert(pid);
        }
        if let Some(parent) = parent_of(pid) {
            parents.insert(pid, parent);
        }
    }
    if marked.is_empty() {
        return Vec::new();
    }
    let tool = |pid: i32| {
        let mut cur = pid;
        for _ in 0..256 {
            if marked.contains(&cur) {
                return true;
            }
            match parents.get(&cur) {
                Some(&p) if p > 1 => cur = p,
                _ => return false,
            }
        }
        false
    };
    parents.keys().copied().filter(|pid| tool(*pid)).filter_map(|pid| u32::try_from(pid).ok()).collect()
}

/// Whether `pid` sits in a call's cgroup (`superpi-KERNELPID-N`) of any kernel.
fn in_call_cgroup(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| {
        c.lines().any(|line| {
            line.split('/').any(|part| {
                part.strip_prefix("superpi-")
                    .and_then(|rest| rest.split_once('-'))
                    .is_some_and(|(kernel, n)| kernel.parse::<u32>().is_ok() && n.parse::<u64>().is_ok())
            })
        })
    })
}

/// Whether `pid` is a tool process the kernel must refuse: a descendant of this process, a
/// member of one of its call cgroups, a carrier of one of its call tags, or any confined tool
/// (the mark, [`LOCKS_MARK`]: also one whose environment and process tree are gone).
pub fn is_tool_process(pid: u32) -> bool {
    let me = std::process::id() as i32;
    let Ok(pid) = i32::try_from(pid) else { return false };
    if pid == me {
        return false;
    }
    if carries_mark(pid) {
        return true;
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
