//! The marks of a confined tool process, and recognising one from outside: what a frontend's
//! listener and the kernel's socket ask of a peer before serving it. The sandbox puts the
//! marks on every call ([`LOCKS_MARK`], [`TAG_VAR`], a call cgroup `superpi-KERNELPID-N`);
//! this module only reads /proc, so a frontend recognises tools without linking the sandbox.

use std::collections::{HashMap, HashSet};

/// The variable every call's environment carries: `SUPERPI_SANDBOX_CALL=KERNELPID-N`.
pub const TAG_VAR: &str = "SUPERPI_SANDBOX_CALL";

/// The hard (and soft) RLIMIT_LOCKS of every call: the mark of a confined tool. Linux has not
/// enforced this limit since 2.4.25, so it costs a tool nothing; every other process has it
/// unlimited. A process lowers a hard limit freely but raises it only with CAP_SYS_RESOURCE,
/// which a confined tool never has (its capabilities and bounding set are empty, no_new_privs
/// keeps set-ID programs from giving any back, and prlimit on another process is refused by
/// seccomp), and the limit survives fork, exec, setsid, a double fork and a cleared
/// environment. A process outside superpi could carry the mark only by choosing to, and then it
/// is refused as a tool: it gains nothing.
pub const LOCKS_MARK: u64 = 1 << 40;

/// Whether `pid` carries the mark of a confined tool: a finite hard limit on file locks and
/// no_new_privs (which a tool cannot clear either; requiring both keeps a process that only
/// lowered its lock limit from being taken for a tool).
pub fn carries_mark(pid: i32) -> bool {
    let finite_locks =
        std::fs::read_to_string(format!("/proc/{pid}/limits")).is_ok_and(|limits| hard_lock_limit_is_finite(&limits));
    finite_locks
        && std::fs::read_to_string(format!("/proc/{pid}/status"))
            .is_ok_and(|status| status.lines().any(|l| l.split_whitespace().eq(["NoNewPrivs:", "1"])))
}

fn hard_lock_limit_is_finite(limits: &str) -> bool {
    limits
        .lines()
        .find(|l| l.starts_with("Max file locks"))
        .and_then(|l| l.split_whitespace().nth(4))
        .is_some_and(|hard| hard != "unlimited")
}

/// Whether an entry of `pid`'s environment starts with `needle` (a process that cannot be
/// read has none).
pub fn environ_has(pid: i32, needle: &[u8]) -> bool {
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(env) => env.split(|b| *b == 0).any(|entry| entry.starts_with(needle)),
        Err(_) => false,
    }
}

/// Every process id in /proc.
pub fn pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(Result::ok).filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())).collect()
}

/// The parent of `pid`, from /proc/PID/stat.
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` is a confined tool process of any superpi kernel on this machine: it carries
/// the mark ([`LOCKS_MARK`]), it sits in a call's cgroup, or it or one of its ancestors
/// carries a call tag. What a frontend asks of the peer of its listener (the kernel asks the
/// sandbox's `is_tool_process` of its own socket's peers). A process that scrubbed its
/// environment and left its tool's process tree is still found by its mark, with or without
/// a cgroup.
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
    let mut parents = HashMap::new();
    let mut marked = HashSet::new();
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
    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| names_call_cgroup(&c))
}

fn names_call_cgroup(cgroups: &str) -> bool {
    cgroups.lines().any(|line| {
        line.split('/').any(|part| {
            part.strip_prefix("superpi-")
                .and_then(|rest| rest.split_once('-'))
                .is_some_and(|(kernel, n)| kernel.parse::<u32>().is_ok() && n.parse::<u64>().is_ok())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_no_confined_tool() {
        let me = std::process::id();
        assert!(!is_confined_tool(me));
        assert!(!confined_tools().contains(&me));
        assert_eq!(parent_of(me as i32), Some(std::os::unix::process::parent_id() as i32));
        assert!(pids().contains(&(me as i32)));
    }

    #[test]
    fn a_call_cgroup_is_named_by_a_kernel_pid_and_a_number() {
        assert!(names_call_cgroup("0::/user.slice/superpi-123-4\n"));
        assert!(names_call_cgroup("0::/a/superpi-123-4/inner\n"));
        assert!(!names_call_cgroup("0::/user.slice/superpi-kernel\n"));
        assert!(!names_call_cgroup("0::/superpi-x-4\n"));
        assert!(!names_call_cgroup("0::/\n"));
    }

    #[test]
    fn the_mark_is_a_finite_hard_lock_limit() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max file locks            1099511627776        1099511627776        locks\n";
        assert!(hard_lock_limit_is_finite(limits));
        let unlimited = "Max file locks            unlimited            unlimited            locks\n";
        assert!(!hard_lock_limit_is_finite(unlimited));
        assert_eq!(LOCKS_MARK, 1_099_511_627_776);
    }
}
