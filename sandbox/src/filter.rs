//! The seccomp program of a confined call, assembled once per kernel, in two layers (see
//! [`Layer`]): the spawner thread's, which every confined child inherits, and the call's (one
//! without network, one with), which the child installs last, before exec.
//!
//! It is written out by hand: a binary search over the call numbers the program treats apart
//! (a few comparisons at the bottom), then for each either a refusal or one short block that
//! reads the arguments; any other number is allowed. The kernel JIT-compiles every program at
//! install and emulates it once per system call number to build its allow cache, so an install
//! costs in proportion to the program's length and to the walk of each number, on every call:
//! the 440 instructions a general-purpose generator made for the same rules took 0.2 ms of each
//! call's start; a list of comparisons (every allowed call walking all ~60 of them) 0.105 ms;
//! the search (at most 17 instructions to a decision) 0.05 ms, of which the call's layer is now
//! a quarter. `filter_tests.rs` runs both layers through a BPF interpreter for every rule.
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

/// The program is installed in two layers, which a call must both pass. The spawner thread of
/// confined children installs the first once, and every child inherits it at no cost: every
/// rule but those of the calls the child itself still makes before exec (its namespaces) and
/// those that depend on the call's network grant. The child installs the second, short one
/// last: an install costs in proportion to the program, on every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layer {
    Spawner,
    Call { network: bool },
}

/// The program of one layer.
pub(crate) fn program(layer: Layer) -> Result<Program, FilterError> {
    let network = matches!(layer, Layer::Call { network: true });
    let in_call_layer = |nr: u32| {
        let nr = i64::from(nr);
        MOUNT_CALLS.contains(&nr) || NETWORK_CALLS.contains(&nr) || nr == libc::SYS_socket || nr == libc::SYS_socketpair
    };
    let rules = rules(network).into_iter().filter(|(nr, _)| in_call_layer(*nr) == matches!(layer, Layer::Call { .. }));
    assemble(&rules.collect::<Vec<_>>())
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

    fn label(&mut self, name: &str) {
        self.labels.push((name.to_string(), self.code.len()));
    }

    fn ret(&mut self, action: u32) {
        self.stmt(RET_K, action);
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

/// Writes a block of the program; its labels start with the given prefix.
type Block = Box<dyn Fn(&mut Asm, &str)>;

/// What the program does with one system call number.
enum Rule {
    Refuse,
    NotImplemented,
    /// A short block that reads the arguments and returns; its labels start with the prefix.
    Check(Block),
}

/// Every call number the program treats apart, sorted; any other number is allowed.
fn rules(network: bool) -> Vec<(u32, Rule)> {
    let mut rules: Vec<(u32, Rule)> = Vec::new();
    let offline: &[i64] = if network { &[] } else { NETWORK_CALLS };
    rules.extend(DENIED.iter().chain(MOUNT_CALLS).chain(offline).map(|nr| (*nr as u32, Rule::Refuse)));
    rules.extend(ENOSYS.iter().map(|nr| (*nr as u32, Rule::NotImplemented)));
    let check = Rule::Check;
    rules.push((
        libc::SYS_clone as u32,
        check(Box::new(|a, p| {
            a.stmt(LD_W_ABS, arg(0, false));
            a.jump(JSET_K, CLONE_NAMESPACE_FLAGS, To::Next, to(&format!("{p}ok")));
            a.ret(EPERM);
            a.label(&format!("{p}ok"));
            a.ret(ALLOW);
        })),
    ));
    #[allow(clippy::unnecessary_cast)] // c_ulong on glibc, c_int elsewhere
    let (tiocsti, tioclinux) = (libc::TIOCSTI as u32, libc::TIOCLINUX as u32);
    rules.push((
        libc::SYS_ioctl as u32,
        check(Box::new(move |a, p| {
            // The kernel reads the request as an unsigned int: the low word is all of it.
            a.stmt(LD_W_ABS, arg(1, false));
            a.jump(JEQ_K, tiocsti, to(&format!("{p}no")), To::Next);
            a.jump(JEQ_K, tioclinux, to(&format!("{p}no")), To::Next);
            a.ret(ALLOW);
            a.label(&format!("{p}no"));
            a.ret(EPERM);
        })),
    ));
    for (nr, mode) in MODE_SETTERS {
        let mode = *mode;
        rules.push((
            *nr as u32,
            check(Box::new(move |a, p| {
                a.stmt(LD_W_ABS, arg(mode, false));
                a.jump(JSET_K, SET_ID_BITS, To::Next, to(&format!("{p}ok")));
                a.ret(EPERM);
                a.label(&format!("{p}ok"));
                a.ret(ALLOW);
            })),
        ));
    }
    rules.push((
        libc::SYS_socket as u32,
        check(Box::new(move |a, p| {
            let (ok, no) = (format!("{p}ok"), format!("{p}no"));
            a.stmt(LD_W_ABS, arg(0, false));
            if network {
                // Packet sockets see and forge every frame of the machine.
                a.jump(JEQ_K, libc::AF_PACKET as u32, To::Next, to(&ok));
                a.ret(EPERM);
            } else {
                a.jump(JEQ_K, libc::AF_UNIX as u32, To::Next, to(&no));
                a.stmt(LD_W_ABS, arg(1, false));
                a.stmt(AND_K, SOCK_TYPE_MASK);
                a.jump(JEQ_K, libc::SOCK_STREAM as u32, to(&ok), To::Next);
                a.jump(JEQ_K, libc::SOCK_SEQPACKET as u32, to(&ok), To::Next);
                a.label(&no);
                a.ret(EPERM);
            }
            a.label(&ok);
            a.ret(ALLOW);
        })),
    ));
    if !network {
        rules.push((
            libc::SYS_socketpair as u32,
            check(Box::new(|a, p| {
                a.stmt(LD_W_ABS, arg(1, false));
                a.stmt(AND_K, SOCK_TYPE_MASK);
                a.jump(JEQ_K, libc::SOCK_STREAM as u32, to(&format!("{p}ok")), To::Next);
                a.jump(JEQ_K, libc::SOCK_SEQPACKET as u32, to(&format!("{p}ok")), To::Next);
                a.ret(EPERM);
                a.label(&format!("{p}ok"));
                a.ret(ALLOW);
            })),
        ));
    }
    rules.push((
        libc::SYS_prlimit64 as u32,
        check(Box::new(|a, p| {
            // Another process's limits may be read, not set: a CPU limit would kill it.
            let (ok, no) = (format!("{p}ok"), format!("{p}no"));
            a.stmt(LD_W_ABS, arg(0, false));
            a.jump(JEQ_K, 0, to(&ok), To::Next);
            a.stmt(LD_W_ABS, arg(2, false));
            a.jump(JEQ_K, 0, To::Next, to(&no));
            a.stmt(LD_W_ABS, arg(2, true));
            a.jump(JEQ_K, 0, to(&ok), To::Next);
            a.label(&no);
            a.ret(EPERM);
            a.label(&ok);
            a.ret(ALLOW);
        })),
    ));
    for (nr, user) in [(libc::SYS_setpriority, PRIO_USER), (libc::SYS_ioprio_set, IOPRIO_WHO_USER)] {
        rules.push((
            nr as u32,
            check(Box::new(move |a, p| {
                // A whole user (every process of root, for a kernel run as root) or another
                // process: refused. The caller and its own process group: allowed.
                let (ok, no) = (format!("{p}ok"), format!("{p}no"));
                a.stmt(LD_W_ABS, arg(0, false));
                a.jump(JEQ_K, user, to(&no), To::Next);
                a.stmt(LD_W_ABS, arg(1, false));
                a.jump(JEQ_K, 0, to(&ok), To::Next);
                a.label(&no);
                a.ret(EPERM);
                a.label(&ok);
                a.ret(ALLOW);
            })),
        ));
    }
    for nr in OWN_PROCESS_ONLY {
        rules.push((
            *nr as u32,
            check(Box::new(|a, p| {
                a.stmt(LD_W_ABS, arg(0, false));
                a.jump(JEQ_K, 0, To::Next, to(&format!("{p}no")));
                a.ret(ALLOW);
                a.label(&format!("{p}no"));
                a.ret(EPERM);
            })),
        ));
    }
    rules.sort_by_key(|(nr, _)| *nr);
    rules
}

/// Most call numbers compared one by one at the bottom of the search.
const LEAF: usize = 6;

/// A binary search over the sorted `rules`: a call walks about a dozen instructions whatever
/// its number, where a list of comparisons made most calls walk all of them. The kernel
/// emulates the program once per call number at install to build its allow cache, so the
/// walk's length is paid some 450 times on every call's start.
fn search(a: &mut Asm, rules: &[(u32, Rule)], name: &str) {
    if rules.len() > LEAF {
        let mid = rules.len() / 2;
        let upper = format!("{name}>");
        a.jump(JGE_K, rules[mid].0, to(&upper), To::Next);
        search(a, &rules[..mid], &format!("{name}l"));
        a.label(&upper);
        search(a, &rules[mid..], &format!("{name}h"));
        return;
    }
    let (eperm, enosys) = (format!("{name}:eperm"), format!("{name}:enosys"));
    let target = |i: usize, rule: &Rule| match rule {
        Rule::Refuse => eperm.clone(),
        Rule::NotImplemented => enosys.clone(),
        Rule::Check(_) => format!("{name}:{i}"),
    };
    for (i, (nr, rule)) in rules.iter().enumerate() {
        a.jump(JEQ_K, *nr, to(&target(i, rule)), To::Next);
    }
    a.ret(ALLOW);
    if rules.iter().any(|(_, r)| matches!(r, Rule::Refuse)) {
        a.label(&eperm);
        a.ret(EPERM);
    }
    if rules.iter().any(|(_, r)| matches!(r, Rule::NotImplemented)) {
        a.label(&enosys);
        a.ret(NOSYS);
    }
    for (i, (_, rule)) in rules.iter().enumerate() {
        if let Rule::Check(block) = rule {
            let label = format!("{name}:{i}");
            a.label(&label);
            block(a, &format!("{label}:"));
        }
    }
}

fn assemble(rules: &[(u32, Rule)]) -> Result<Program, FilterError> {
    let mut a = Asm::default();
    // Another architecture's calls (int 0x80 on x86_64) would pass under other numbers.
    a.stmt(LD_W_ABS, DATA_ARCH);
    a.jump(JEQ_K, AUDIT_ARCH, to("native"), To::Next);
    a.ret(EPERM);
    a.label("native");
    a.stmt(LD_W_ABS, DATA_NR);
    #[cfg(target_arch = "x86_64")]
    {
        a.jump(JGE_K, 0x4000_0000, To::Next, to("numbered")); // x32 numbers
        a.ret(NOSYS);
        a.label("numbered");
    }
    search(&mut a, rules, "s");
    a.finish()
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
