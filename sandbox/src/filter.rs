//! The seccomp program of a confined call, built once per kernel, in two layers (see
//! [`Layer`]): the spawner thread's, which every confined child inherits, and the call's (one
//! without network, one with), which the child installs last, before exec.
//!
//! Every rule is stated once, in [`refusals`]: a map from call number to the argument
//! conditions under which it is refused. seccompiler compiles the spawner's layer from it,
//! behind a short hand-written prologue for what it cannot say (another architecture's calls
//! answered EPERM, x32 numbers and clone3/openat2 ENOSYS). The call's layer is assembled by
//! hand (`filter_call.rs`, a binary search): the child installs it on every call, and the
//! kernel emulates a program once per call number at install, so its length is paid each time.
//! Interleaved in sandbox_bench (16 pairs, load 8-9 on 2 cores), seccompiler's call layer (88
//! instructions with network, 151 without, against 36-52) cost 0.052 ms more per call (median
//! of the pairs; spawn phase 0.057 ms), over the 0.05 ms that keeps hand assembly.
//! `filter_tests.rs` runs the installed layers through a BPF interpreter for every rule, and
//! checks the hand-assembled call layer decides as seccompiler's compile of the same rules.
//!
//! What each family of allowed and refused calls means for a tool is in ARCHITECTURE.md beside
//! this crate ("seccomp").

use std::collections::BTreeMap;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

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
/// descriptors, the kernel itself, the user's keyrings, file handles
/// that bypass path checks, filesystem-wide event streams) or hides its arguments from this
/// program (io_uring).
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_process_madvise,
    libc::SYS_process_mrelease,
    libc::SYS_pidfd_getfd,
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

/// Refused too, the mounts and namespaces family: a new view of the filesystem would undo the
/// read-only mounts. The child makes some of them itself between clone and exec (entering and
/// setting up its namespaces), so the layer its spawner thread holds leaves them to the
/// call's layer, which the child installs last.
const MOUNT_CALLS: &[i64] = &[
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

const PRIO_USER: u32 = 2;
const IOPRIO_WHO_USER: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("seccomp: {0}")]
    Compile(#[from] seccompiler::BackendError),
    #[error("seccomp: a jump of the program is too long ({0} instructions)")]
    JumpTooLong(usize),
    #[error("seccomp: the program jumps to a missing or earlier label {0}")]
    Label(String),
}

/// The program is installed in two layers, which a call must both pass. The spawner thread of
/// confined children installs the first once, and every child inherits it at no cost: every
/// rule but those of the calls the child itself still makes before exec (its namespaces) and
/// those that depend on the call's network grant. The child installs the second, short one
/// last: an install costs in proportion to the program, on every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layer {
    Spawner,
    Call {
        network: bool,
    },
    /// The call's layer without network whose internet sockets wait for the parent, which
    /// refuses and counts them (netwatch.rs): installed with a listener, `Call { network:
    /// false }` in its place where the machine gives none.
    WatchedCall,
}

/// The program of one layer: the spawner's compiled by seccompiler, the call's by hand.
pub(crate) fn program(layer: Layer) -> Result<Program, FilterError> {
    match layer {
        Layer::Spawner => compiled(layer),
        Layer::Call { network } => call_layer::program(network, false),
        Layer::WatchedCall => call_layer::program(false, true),
    }
}

/// The numbers whose rules belong to the call's layer.
fn in_call_layer(nr: i64) -> bool {
    MOUNT_CALLS.contains(&nr) || NETWORK_CALLS.contains(&nr) || nr == libc::SYS_socket || nr == libc::SYS_socketpair
}

/// seccompiler's program of one layer: the rules of [`refusals`] that belong to it, behind
/// the prologue. (The call's layer is compiled so only by the tests, which compare it with
/// the hand-assembled one.)
fn compiled(layer: Layer) -> Result<Program, FilterError> {
    let call = matches!(layer, Layer::Call { .. });
    let mut refused = refusals(matches!(layer, Layer::Call { network: true }))?;
    refused.retain(|nr, _| in_call_layer(*nr) == call);
    let compiled: seccompiler::BpfProgram =
        SeccompFilter::new(refused, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), TARGET_ARCH)?
            .try_into()?;
    let mut program = prologue(if call { &[] } else { ENOSYS });
    program.extend(compiled.into_iter().map(|i| libc::sock_filter { code: i.code, jt: i.jt, jf: i.jf, k: i.k }));
    Ok(program)
}

#[cfg(target_arch = "x86_64")]
const TARGET_ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const TARGET_ARCH: TargetArch = TargetArch::aarch64;
#[cfg(target_arch = "riscv64")]
const TARGET_ARCH: TargetArch = TargetArch::riscv64;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const NOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
const NOTIFY: u32 = libc::SECCOMP_RET_USER_NOTIF;

const fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// What seccompiler cannot say, written by hand before its program: another architecture's
/// calls refused with EPERM (seccompiler kills the process), x32 numbers (which pass its
/// architecture check with the x32 bit set, and would match none of its numbers) and `enosys`
/// answered ENOSYS (a seccompiler filter has one action for every rule).
fn prologue(enosys: &[i64]) -> Program {
    let mut p = vec![op(LD_W_ABS, 0, 0, DATA_ARCH), op(JEQ_K, 1, 0, AUDIT_ARCH), op(RET_K, 0, 0, EPERM)];
    p.push(op(LD_W_ABS, 0, 0, DATA_NR));
    #[cfg(target_arch = "x86_64")]
    p.extend([op(JGE_K, 0, 1, 0x4000_0000), op(RET_K, 0, 0, NOSYS)]);
    let n = enosys.len();
    for (i, nr) in enosys.iter().enumerate() {
        // To the ENOSYS return after the last comparison, else on.
        p.push(op(JEQ_K, (n - i) as u8, 0, *nr as u32));
    }
    if n > 0 {
        p.push(op(libc::BPF_JMP as u16 | libc::BPF_JA as u16, 0, 0, 1));
        p.push(op(RET_K, 0, 0, NOSYS));
    }
    p
}

/// A refusal when the 32-bit argument `index` (the kernel reads these as int) compares so.
fn when(index: u8, cmp: SeccompCmpOp, value: u64) -> Result<SeccompRule, FilterError> {
    when_all(&[(index, SeccompCmpArgLen::Dword, cmp, value)])
}

fn when_all(conditions: &[(u8, SeccompCmpArgLen, SeccompCmpOp, u64)]) -> Result<SeccompRule, FilterError> {
    let conditions = conditions
        .iter()
        .map(|(index, len, cmp, value)| SeccompCondition::new(*index, len.clone(), cmp.clone(), *value))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SeccompRule::new(conditions)?)
}

/// Refusals of a socket type outside stream (1) and seqpacket (5), which cannot address anyone:
/// a stream or seqpacket socket sends only to its connected peer (a datagram socket, and
/// SOCK_RAW which AF_UNIX turns into one, can name a pathname socket such as /dev/log in every
/// sendto and sendmsg). The type is its low four bits: refused when they lack bit 0, or have bit 1 or bit 3 (1 and 5 are the only values of bit 0 alone or with bit
/// 2). seccompiler has no masked "not equal", so the complement is three masked comparisons.
fn not_stream_or_seqpacket(index: u8) -> Result<Vec<SeccompRule>, FilterError> {
    debug_assert_eq!((libc::SOCK_STREAM, libc::SOCK_SEQPACKET), (1, 5));
    [(1, 0), (2, 2), (8, 8)].into_iter().map(|(mask, value)| when(index, SeccompCmpOp::MaskedEq(mask), value)).collect()
}

/// Every call number the program refuses, each with the argument conditions under which it
/// does (none: always); any other number, or a call whose conditions all fail, is allowed.
fn refusals(network: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, FilterError> {
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let offline: &[i64] = if network { &[] } else { NETWORK_CALLS };
    for nr in DENIED.iter().chain(MOUNT_CALLS).chain(offline) {
        rules.insert(*nr, Vec::new());
    }
    let namespace_flags = (0..32).map(|bit| 1u64 << bit).filter(|f| *f & u64::from(CLONE_NAMESPACE_FLAGS) != 0);
    rules.insert(libc::SYS_clone, namespace_flags.map(|f| when(0, MaskedEq(f), f)).collect::<Result<_, _>>()?);
    #[allow(clippy::unnecessary_cast)] // c_ulong on glibc, c_int elsewhere
    let (tiocsti, tioclinux) = (libc::TIOCSTI as u64, libc::TIOCLINUX as u64);
    // The kernel reads the request as an unsigned int: the low word is all of it.
    rules.insert(libc::SYS_ioctl, vec![when(1, Eq, tiocsti)?, when(1, Eq, tioclinux)?]);
    for (nr, mode) in MODE_SETTERS {
        let index = *mode as u8;
        let bits = [libc::S_ISUID, libc::S_ISGID].map(u64::from);
        rules.insert(*nr, bits.iter().map(|b| when(index, MaskedEq(*b), *b)).collect::<Result<_, _>>()?);
    }
    if network {
        // Packet sockets see and forge every frame of the machine.
        rules.insert(libc::SYS_socket, vec![when(0, Eq, libc::AF_PACKET as u64)?]);
    } else {
        let mut socket = vec![when(0, Ne, libc::AF_UNIX as u64)?];
        socket.extend(not_stream_or_seqpacket(1)?);
        rules.insert(libc::SYS_socket, socket);
        rules.insert(libc::SYS_socketpair, not_stream_or_seqpacket(1)?);
    }
    // Another process's limits may be read, not set: a CPU limit would kill it.
    rules.insert(
        libc::SYS_prlimit64,
        vec![when_all(&[(0, SeccompCmpArgLen::Dword, Ne, 0), (2, SeccompCmpArgLen::Qword, Ne, 0)])?],
    );
    // A whole user (every process of root, for a kernel run as root) or another process:
    // refused. The caller and its own process group: allowed.
    for (nr, user) in [(libc::SYS_setpriority, PRIO_USER), (libc::SYS_ioprio_set, IOPRIO_WHO_USER)] {
        rules.insert(nr, vec![when(0, Eq, u64::from(user))?, when(1, Ne, 0)?]);
    }
    for nr in OWN_PROCESS_ONLY {
        rules.insert(*nr, vec![when(0, Ne, 0)?]);
    }
    Ok(rules)
}

#[path = "filter_call.rs"]
mod call_layer;

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
