//! Finding a call's processes without a cgroup, and recognising tool processes.
//!
//! Every call's environment carries a tag (`SUPERPI_SANDBOX_CALL=KERNELPID-N`). Where no pids
//! cgroup is available, the end of a call sweeps /proc for processes that still carry its tag
//! (a grandchild that called setsid and left the process group, for instance). A process that
//! also scrubs its environment escapes this sweep: only the cgroup closes that hole.
//!
//! Recognising a confined tool (for the peer checks of the kernel's socket and the frontends'
//! listeners: superpi-paths' `confined`, which frontends read without this crate) does not
//! depend on the tag alone: every confined process also carries a mark it
//! cannot remove ([`LOCKS_MARK`]), whatever it does to its environment or its process tree.

use std::sync::atomic::{AtomicU64, Ordering};

pub use superpi_paths::confined::{LOCKS_MARK, TAG_VAR, confined_tools, is_confined_tool};
use superpi_paths::confined::{carries_mark, environ_has, parent_of, pids};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A fresh tag for one call.
pub(crate) fn new_tag() -> String {
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
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
