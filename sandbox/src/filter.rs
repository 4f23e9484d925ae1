//! The seccomp programs of a confined call, compiled once per kernel (one set without network,
//! one with) and installed by the child before exec.
//!
//! Two programs stack: the main one (seccompiler) answers EPERM to what a tool must never do;
//! a small hand-written one answers ENOSYS to `clone3` (libc then falls back to `clone`, whose
//! flags the main program can inspect) and to x32 system call numbers, which would otherwise
//! pass an x86_64 filter under other numbers.

use std::collections::BTreeMap;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use crate::confine::Program;

/// Namespace flags of clone(2) that a tool may not use.
const CLONE_NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// System calls refused outright.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_open_tree,
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
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_pidfd_getfd,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// fchmodat2 has the same number on every architecture, and no constant in libc everywhere.
const SYS_FCHMODAT2: i64 = 452;

/// Calls that set a file mode, with the index of their mode argument: a mode with the
/// set-user-ID or set-group-ID bit is refused, so a tool cannot leave a set-ID program in the
/// workspace for someone to run outside the sandbox.
const MODE_SETTERS: &[(i64, u8)] = &[
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

/// Socket calls refused unless the call is granted network.
const NETWORK_CALLS: &[i64] =
    &[libc::SYS_connect, libc::SYS_bind, libc::SYS_listen, libc::SYS_accept, libc::SYS_accept4];

#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("seccomp: unsupported architecture {0}")]
    Arch(String),
    #[error("seccomp: {0}")]
    Compile(#[from] seccompiler::BackendError),
}

fn cond(arg: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, FilterError> {
    Ok(SeccompCondition::new(arg, len, op, value)?)
}

/// The programs to install, in order.
pub(crate) fn programs(network: bool) -> Result<Vec<Program>, FilterError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| FilterError::Arch(std::env::consts::ARCH.to_string()))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in DENIED {
        rules.insert(*nr, Vec::new());
    }
    // clone with any namespace flag.
    let clone_rules = CLONE_NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            Ok(SeccompRule::new(vec![cond(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(*flag), *flag)?])?)
        })
        .collect::<Result<Vec<_>, FilterError>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    // Terminal injection.
    #[allow(clippy::unnecessary_cast)] // c_ulong on glibc, c_int elsewhere
    let ioctl_rules = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64]
        .iter()
        .map(|req| Ok(SeccompRule::new(vec![cond(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *req)?])?))
        .collect::<Result<Vec<_>, FilterError>>()?;
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    for (nr, arg) in MODE_SETTERS {
        let set_id = [libc::S_ISUID as u64, libc::S_ISGID as u64]
            .iter()
            .map(|bit| {
                Ok(SeccompRule::new(vec![cond(*arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(*bit), *bit)?])?)
            })
            .collect::<Result<Vec<_>, FilterError>>()?;
        rules.insert(*nr, set_id);
    }
    // Packet sockets always; without network anything but AF_UNIX.
    let socket_rule = if network {
        SeccompRule::new(vec![cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_PACKET as u64)?])?
    } else {
        SeccompRule::new(vec![cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])?
    };
    rules.insert(libc::SYS_socket, vec![socket_rule]);
    if !network {
        for nr in NETWORK_CALLS {
            rules.insert(*nr, Vec::new());
        }
    }
    let main = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;
    let main: seccompiler::BpfProgram = main.try_into()?;
    Ok(vec![to_kernel(main), enosys_program()])
}

fn to_kernel(program: seccompiler::BpfProgram) -> Program {
    program.into_iter().map(|i| libc::sock_filter { code: i.code, jt: i.jt, jf: i.jf, k: i.k }).collect()
}

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 243 | 0x8000_0000 | 0x4000_0000;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt: 0, jf: 0, k }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// clone3, openat2 (its mode hides in a struct) and x32 numbers: ENOSYS. Anything of another
/// architecture: EPERM.
fn enosys_program() -> Program {
    let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    vec![
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_ARCH),
        jump(BPF_JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(BPF_RET_K, eperm),
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR),
        jump(BPF_JGE_K, 0x4000_0000, 3, 0),
        jump(BPF_JEQ_K, libc::SYS_clone3 as u32, 2, 0),
        jump(BPF_JEQ_K, libc::SYS_openat2 as u32, 1, 0),
        stmt(BPF_RET_K, libc::SECCOMP_RET_ALLOW),
        stmt(BPF_RET_K, enosys),
    ]
}
