//! The seccomp program of a confined call, assembled once per kernel (one without network, one
//! with) and installed by the child before exec.
//!
//! It is written out by hand, in the compact form a human would write: a call the tool may
//! never make is one comparison, a call whose arguments matter is one short block. The kernel
//! JIT-compiles every program at install and emulates it once per system call number to build
//! its allow cache, so an install costs in proportion to the program's length, on every call:
//! the 440 instructions a general-purpose generator made for the same rules took 0.2 ms of each
//! call's start, this program takes a third of it. `filter_tests.rs` runs the program through
//! a BPF interpreter for every rule.
//!
//! What each family of allowed and refused calls means for a tool is in ARCHITECTURE.md beside
//! this crate ("seccomp").

use crate::confine::Program;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
compile_error!("the sandbox's seccomp program knows x86_64, aarch64 and riscv64");

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 243 | 0x8000_0000 | 0x4000_0000;

/// System call numbers libc does not name on every target (the same on every architecture
/// since the numbering was unified at 424).
const SYS_FCHMODAT2: i64 = 452;
const SYS_OPEN_TREE_ATTR: i64 = 467;

/// Refused outright: each would reach outside the call (other processes' memory or
/// descriptors, mounts and namespaces, the kernel itself, the user's keyrings, file handles
/// that bypass path checks, filesystem-wide event streams) or hides its arguments from this
/// program (io_uring).
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_process_madvise,
    libc::SYS_process_mrelease,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_open_tree,
    SYS_OPEN_TREE_ATTR,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_quotactl_fd,
    libc::SYS_syslog,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_fanotify_init,
    libc::SYS_fanotify_mark,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// Refused unless the call is granted network.
const NETWORK_CALLS: &[i64] =
    &[libc::SYS_connect, libc::SYS_bind, libc::SYS_listen, libc::SYS_accept, libc::SYS_accept4];

/// Answered ENOSYS: clone3 (libc then falls back to clone, whose flags this program reads) and
/// openat2 (its mode hides in a struct; libc and programs fall back to openat).
const ENOSYS: &[i64] = &[libc::SYS_clone3, libc::SYS_openat2];

/// Calls that set a file mode, with the index of their mode argument: a mode with the
/// set-user-ID or set-group-ID bit is refused, so a tool cannot leave a set-ID program in the
/// workspace for someone to run outside the sandbox.
const MODE_SETTERS: &[(i64, u32)] = &[
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_chmod, 1),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_open, 2),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_creat, 1),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_mknod, 1),
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (SYS_FCHMODAT2, 2),
    (libc::SYS_openat, 3),
    (libc::SYS_mknodat, 2),
];

/// Calls whose first argument names a process: allowed on the caller itself (0) only, so a
/// tool cannot starve or pin the kernel or anything else of the same user.
const OWN_PROCESS_ONLY: &[i64] = &[
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setattr,
    libc::SYS_migrate_pages,
    libc::SYS_move_pages,
];

/// Namespace flags of clone(2), all in its low word.
const CLONE_NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

const SET_ID_BITS: u32 = libc::S_ISUID | libc::S_ISGID;
/// Socket types that cannot address anyone: a stream or seqpacket socket sends only to its
/// connected peer (a datagram socket, and SOCK_RAW which AF_UNIX turns into one, can name a
/// pathname socket such as /dev/log in every sendto and sendmsg).
const SOCK_TYPE_MASK: u32 = 0xf;
const PRIO_USER: u32 = 2;
const IOPRIO_WHO_USER: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("seccomp: a jump of the program is too long ({0} instructions)")]
    JumpTooLong(usize),
    #[error("seccomp: the program jumps to a missing or earlier label {0}")]
    Label(String),
}

/// The program to install (one per call; the list form leaves room for stacking).
pub(crate) fn programs(network: bool) -> Result<Vec<Program>, FilterError> {
    Ok(vec![program(network)?])
}

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;

/// Offset of the low (`high == false`) or high 32 bits of argument `index` in seccomp_data
/// (little-endian targets only, which all three are).
const fn arg(index: u32, high: bool) -> u32 {
    16 + 8 * index + if high { 4 } else { 0 }
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const NOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

/// Where a jump goes.
#[derive(Clone, PartialEq, Eq)]
enum To {
    Next,
    Label(String),
}

fn to(label: &str) -> To {
    To::Label(label.to_string())
}

/// A tiny assembler: jumps name labels, resolved (forward only) at the end.
#[derive(Default)]
struct Asm {
    code: Vec<(u16, To, To, u32)>,
    labels: Vec<(String, usize)>,
}

impl Asm {
    fn stmt(&mut self, code: u16, k: u32) {
        self.code.push((code, To::Next, To::Next, k));
    }

    fn jump(&mut self, code: u16, k: u32, jt: To, jf: To) {
        self.code.push((code, jt, jf, k));
    }

    /// An unconditional jump (its offset goes in `k`).
    fn goto(&mut self, label: &str) {
        self.code.push((JA, to(label), To::Next, 0));
    }

    fn label(&mut self, name: &str) {
        self.labels.push((name.to_string(), self.code.len()));
    }

    fn ret(&mut self, action: u32) {
        self.stmt(RET_K, action);
    }

    /// Runs `block` for the calls in `nrs` (a shared block), skipping it for every other call.
    /// Labels inside a block are prefixed by `name`.
    fn on(&mut self, nrs: &[i64], name: &str, block: impl FnOnce(&mut Asm)) {
        let (start, end) = (format!("{name}:start"), format!("{name}:end"));
        for (i, nr) in nrs.iter().enumerate() {
            let other = if i + 1 == nrs.len() { To::Label(end.clone()) } else { To::Next };
            self.jump(JEQ_K, *nr as u32, To::Label(start.clone()), other);
        }
        self.label(&start);
        block(self);
        self.label(&end);
    }

    fn finish(self) -> Result<Program, FilterError> {
        let offset = |at: usize, to: &To| -> Result<usize, FilterError> {
            match to {
                To::Next => Ok(0),
                To::Label(name) => {
                    let target = self.labels.iter().find(|(n, _)| n == name).map(|(_, t)| *t);
                    match target {
                        Some(t) if t > at => Ok(t - at - 1),
                        _ => Err(FilterError::Label(name.clone())),
                    }
                }
            }
        };
        let mut program = Vec::with_capacity(self.code.len());
        for (at, (code, jt, jf, k)) in self.code.iter().enumerate() {
            let short = |to: &To| offset(at, to).and_then(|o| u8::try_from(o).map_err(|_| FilterError::JumpTooLong(o)));
            let instruction = if *code == JA {
                let k = u32::try_from(offset(at, jt)?).map_err(|_| FilterError::JumpTooLong(usize::MAX))?;
                libc::sock_filter { code: *code, jt: 0, jf: 0, k }
            } else {
                libc::sock_filter { code: *code, jt: short(jt)?, jf: short(jf)?, k: *k }
            };
            program.push(instruction);
        }
        Ok(program)
    }
}

fn program(network: bool) -> Result<Program, FilterError> {
    let mut a = Asm::default();
    // Another architecture's calls (int 0x80 on x86_64) would pass under other numbers.
    a.stmt(LD_W_ABS, DATA_ARCH);
    a.jump(JEQ_K, AUDIT_ARCH, To::Next, to("eperm"));
    a.stmt(LD_W_ABS, DATA_NR);
    #[cfg(target_arch = "x86_64")]
    a.jump(JGE_K, 0x4000_0000, to("enosys"), To::Next); // x32 numbers
    let offline: &[i64] = if network { &[] } else { NETWORK_CALLS };
    for nr in DENIED.iter().chain(offline) {
        a.jump(JEQ_K, *nr as u32, to("eperm"), To::Next);
    }
    for nr in ENOSYS {
        a.jump(JEQ_K, *nr as u32, to("enosys"), To::Next);
    }
    a.goto("checks");
    a.label("eperm");
    a.ret(EPERM);
    a.label("enosys");
    a.ret(NOSYS);
    a.label("checks");

    a.on(&[libc::SYS_clone], "clone", |a| {
        a.stmt(LD_W_ABS, arg(0, false));
        a.jump(JSET_K, CLONE_NAMESPACE_FLAGS, To::Next, to("clone:ok"));
        a.ret(EPERM);
        a.label("clone:ok");
        a.ret(ALLOW);
    });
    #[allow(clippy::unnecessary_cast)] // c_ulong on glibc, c_int elsewhere
    let (tiocsti, tioclinux) = (libc::TIOCSTI as u32, libc::TIOCLINUX as u32);
    a.on(&[libc::SYS_ioctl], "ioctl", |a| {
        // The kernel reads the request as an unsigned int: the low word is all of it.
        a.stmt(LD_W_ABS, arg(1, false));
        a.jump(JEQ_K, tiocsti, to("ioctl:no"), To::Next);
        a.jump(JEQ_K, tioclinux, to("ioctl:no"), To::Next);
        a.ret(ALLOW);
        a.label("ioctl:no");
        a.ret(EPERM);
    });
    for (i, (nr, mode)) in MODE_SETTERS.iter().enumerate() {
        let name = format!("mode{i}");
        let ok = format!("{name}:ok");
        a.on(&[*nr], &name, |a| {
            a.stmt(LD_W_ABS, arg(*mode, false));
            a.jump(JSET_K, SET_ID_BITS, To::Next, to(&ok));
            a.ret(EPERM);
            a.label(&ok);
            a.ret(ALLOW);
        });
    }
    a.on(&[libc::SYS_socket], "socket", |a| {
        a.stmt(LD_W_ABS, arg(0, false));
        if network {
            // Packet sockets see and forge every frame of the machine.
            a.jump(JEQ_K, libc::AF_PACKET as u32, To::Next, to("socket:ok"));
            a.ret(EPERM);
        } else {
            a.jump(JEQ_K, libc::AF_UNIX as u32, To::Next, to("socket:no"));
            a.stmt(LD_W_ABS, arg(1, false));
            a.stmt(AND_K, SOCK_TYPE_MASK);
            a.jump(JEQ_K, libc::SOCK_STREAM as u32, to("socket:ok"), To::Next);
            a.jump(JEQ_K, libc::SOCK_SEQPACKET as u32, to("socket:ok"), To::Next);
            a.label("socket:no");
            a.ret(EPERM);
        }
        a.label("socket:ok");
        a.ret(ALLOW);
    });
    if !network {
        a.on(&[libc::SYS_socketpair], "pair", |a| {
            a.stmt(LD_W_ABS, arg(1, false));
            a.stmt(AND_K, SOCK_TYPE_MASK);
            a.jump(JEQ_K, libc::SOCK_STREAM as u32, to("pair:ok"), To::Next);
            a.jump(JEQ_K, libc::SOCK_SEQPACKET as u32, to("pair:ok"), To::Next);
            a.ret(EPERM);
            a.label("pair:ok");
            a.ret(ALLOW);
        });
    }
    a.on(&[libc::SYS_prlimit64], "prlimit", |a| {
        // Another process's limits may be read, not set: a CPU limit would kill it.
        a.stmt(LD_W_ABS, arg(0, false));
        a.jump(JEQ_K, 0, to("prlimit:ok"), To::Next);
        a.stmt(LD_W_ABS, arg(2, false));
        a.jump(JEQ_K, 0, To::Next, to("prlimit:no"));
        a.stmt(LD_W_ABS, arg(2, true));
        a.jump(JEQ_K, 0, to("prlimit:ok"), To::Next);
        a.label("prlimit:no");
        a.ret(EPERM);
        a.label("prlimit:ok");
        a.ret(ALLOW);
    });
    for (nr, user, name) in
        [(libc::SYS_setpriority, PRIO_USER, "priority"), (libc::SYS_ioprio_set, IOPRIO_WHO_USER, "ioprio")]
    {
        let (ok, no) = (format!("{name}:ok"), format!("{name}:no"));
        a.on(&[nr], name, |a| {
            // A whole user (every process of root, for a kernel run as root) or another
            // process: refused. The caller and its own process group: allowed.
            a.stmt(LD_W_ABS, arg(0, false));
            a.jump(JEQ_K, user, to(&no), To::Next);
            a.stmt(LD_W_ABS, arg(1, false));
            a.jump(JEQ_K, 0, to(&ok), To::Next);
            a.label(&no);
            a.ret(EPERM);
            a.label(&ok);
            a.ret(ALLOW);
        });
    }
    a.on(OWN_PROCESS_ONLY, "own", |a| {
        a.stmt(LD_W_ABS, arg(0, false));
        a.jump(JEQ_K, 0, To::Next, to("own:no"));
        a.ret(ALLOW);
        a.label("own:no");
        a.ret(EPERM);
    });
    a.ret(ALLOW);
    a.finish()
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
