//! The seccomp program as installed (the spawner's layer from seccompiler, the call's by hand),
//! run through a BPF interpreter of the instructions it uses, against every rule; and the
//! hand-assembled call layer against seccompiler's compile of the same rules. (The escape battery in tests/escape.rs checks the same rules in a real kernel.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

/// The kernel's seccomp_data: nr, arch, instruction pointer, six arguments.
fn data(nr: i64, arch: u32, args: [u64; 6]) -> [u8; 64] {
    let mut d = [0u8; 64];
    d[0..4].copy_from_slice(&(nr as i32).to_ne_bytes());
    d[4..8].copy_from_slice(&arch.to_ne_bytes());
    for (i, a) in args.iter().enumerate() {
        d[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    d
}

fn run(program: &Program, data: &[u8; 64]) -> u32 {
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
        let i = program[pc];
        pc += 1;
        match i.code {
            LD_W_ABS => {
                let at = i.k as usize;
                acc = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
            }
            AND_K => acc &= i.k,
            JA => pc += i.k as usize,
            JEQ_K | JGE_K | JGT_K | JSET_K => {
                let taken = match i.code {
                    JEQ_K => acc == i.k,
                    JGE_K => acc >= i.k,
                    JGT_K => acc > i.k,
                    _ => acc & i.k != 0,
                };
                pc += if taken { i.jt } else { i.jf } as usize;
            }
            RET_K => return i.k,
            other => panic!("the interpreter does not know instruction {other:#x}"),
        }
    }
}

/// Every layer's program: what the spawner thread holds and what the call installs.
fn layers(network: bool) -> [Program; 2] {
    [program(Layer::Spawner).unwrap(), program(Layer::Call { network }).unwrap()]
}

/// What a call is answered: the first refusal of any layer (the kernel takes the strictest
/// action; the layers never both refuse a call), else allowed.
fn decide(network: bool, nr: i64, args: [u64; 6]) -> u32 {
    let answers = layers(network).map(|program| run(&program, &data(nr, AUDIT_ARCH, args)));
    answers.into_iter().find(|a| *a != ALLOW).unwrap_or(ALLOW)
}

const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const JGT_K: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;

fn a(args: &[u64]) -> [u64; 6] {
    let mut all = [0; 6];
    all[..args.len()].copy_from_slice(args);
    all
}

#[test]
fn the_program_is_short() {
    for network in [false, true] {
        let [spawner, call] = layers(network);
        assert!(spawner.len() < 500, "{} instructions: installing it costs in proportion", spawner.len());
        // The layer every call installs is a fraction of the whole.
        assert!(call.len() < 60, "{} instructions: every call installs it", call.len());
    }
    let watched = program(Layer::WatchedCall).unwrap();
    assert!(watched.len() < 60, "{} instructions: every call without network installs it", watched.len());
}

#[test]
fn another_architecture_is_refused() {
    for program in layers(false) {
        assert_eq!(run(&program, &data(libc::SYS_getpid, 0x4000_0003, [0; 6])), EPERM); // i386
        #[cfg(target_arch = "x86_64")]
        assert_eq!(run(&program, &data(0x4000_0000 + libc::SYS_ptrace, AUDIT_ARCH, [0; 6])), NOSYS); // x32
    }
}

#[test]
fn denied_calls_are_refused_and_ordinary_ones_allowed() {
    for network in [false, true] {
        for nr in DENIED.iter().chain(MOUNT_CALLS) {
            assert_eq!(decide(network, *nr, [0; 6]), EPERM, "call {nr}");
        }
        for nr in ENOSYS {
            assert_eq!(decide(network, *nr, [0; 6]), NOSYS, "call {nr}");
        }
        for nr in [libc::SYS_read, libc::SYS_write, libc::SYS_execve, libc::SYS_kill, libc::SYS_sendmsg] {
            assert_eq!(decide(network, nr, [0; 6]), ALLOW, "call {nr}");
        }
    }
    for nr in NETWORK_CALLS {
        assert_eq!(decide(false, *nr, [3, 0, 0, 0, 0, 0]), EPERM, "call {nr}");
        assert_eq!(decide(true, *nr, [3, 0, 0, 0, 0, 0]), ALLOW, "call {nr}");
    }
}

#[test]
fn clone_with_a_namespace_flag_is_refused() {
    let sigchld = libc::SIGCHLD as u64;
    assert_eq!(decide(false, libc::SYS_clone, a(&[sigchld])), ALLOW);
    let thread =
        (libc::CLONE_VM | libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_SIGHAND | libc::CLONE_THREAD) as u64;
    assert_eq!(decide(false, libc::SYS_clone, a(&[thread])), ALLOW);
    for flag in [libc::CLONE_NEWNET, libc::CLONE_NEWUSER, libc::CLONE_NEWNS, libc::CLONE_NEWPID] {
        assert_eq!(decide(true, libc::SYS_clone, a(&[flag as u64 | sigchld])), EPERM, "flag {flag:#x}");
    }
}

#[test]
fn terminal_injection_is_refused() {
    #[allow(clippy::unnecessary_cast)]
    let tiocsti = libc::TIOCSTI as u64;
    assert_eq!(decide(false, libc::SYS_ioctl, a(&[0, tiocsti])), EPERM);
    assert_eq!(decide(false, libc::SYS_ioctl, a(&[0, 0xffff_ffff_0000_0000 | tiocsti])), EPERM);
    #[allow(clippy::unnecessary_cast)]
    let tioclinux = libc::TIOCLINUX as u64;
    assert_eq!(decide(false, libc::SYS_ioctl, a(&[0, tioclinux])), EPERM);
    #[allow(clippy::unnecessary_cast)]
    let tcgets = libc::TCGETS as u64;
    assert_eq!(decide(false, libc::SYS_ioctl, a(&[0, tcgets])), ALLOW);
}

#[test]
fn set_id_modes_are_refused() {
    for (nr, index) in MODE_SETTERS {
        let mut args = [0u64; 6];
        args[*index as usize] = 0o755;
        assert_eq!(decide(false, *nr, args), ALLOW, "call {nr}");
        args[*index as usize] = 0o4755;
        assert_eq!(decide(false, *nr, args), EPERM, "call {nr}");
        args[*index as usize] = 0o2700;
        assert_eq!(decide(true, *nr, args), EPERM, "call {nr}");
    }
}

#[test]
fn without_network_only_unix_stream_and_seqpacket_sockets_are_made() {
    let (unix, inet, packet) = (libc::AF_UNIX as u64, libc::AF_INET as u64, libc::AF_PACKET as u64);
    let flags = (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u64;
    for (kind, allowed) in [
        (libc::SOCK_STREAM, true),
        (libc::SOCK_SEQPACKET, true),
        (libc::SOCK_DGRAM, false),
        (libc::SOCK_RAW, false),
        (libc::SOCK_RDM, false),
    ] {
        let kind = kind as u64 | flags;
        let offline = if allowed { ALLOW } else { EPERM };
        assert_eq!(decide(false, libc::SYS_socket, a(&[unix, kind])), offline, "socket type {kind:#x}");
        assert_eq!(decide(false, libc::SYS_socketpair, a(&[unix, kind])), offline, "pair type {kind:#x}");
        assert_eq!(decide(true, libc::SYS_socket, a(&[unix, kind])), ALLOW, "socket type {kind:#x}");
        assert_eq!(decide(true, libc::SYS_socketpair, a(&[unix, kind])), ALLOW, "pair type {kind:#x}");
    }
    let stream = libc::SOCK_STREAM as u64;
    assert_eq!(decide(false, libc::SYS_socket, a(&[inet, stream])), EPERM);
    assert_eq!(decide(true, libc::SYS_socket, a(&[inet, stream])), ALLOW);
    assert_eq!(decide(true, libc::SYS_socket, a(&[packet, libc::SOCK_RAW as u64])), EPERM);
}

#[test]
fn other_processes_limits_and_scheduling_are_left_alone() {
    let new = 0x7fff_1234_5678;
    assert_eq!(decide(false, libc::SYS_prlimit64, a(&[0, 0, new, 0])), ALLOW);
    assert_eq!(decide(false, libc::SYS_prlimit64, a(&[4242, 0, 0, new])), ALLOW); // reading only
    assert_eq!(decide(false, libc::SYS_prlimit64, a(&[4242, 0, new, 0])), EPERM);
    assert_eq!(decide(false, libc::SYS_prlimit64, a(&[4242, 0, 0x7fff_0000_0000, 0])), EPERM);
    let (process, group) = (libc::PRIO_PROCESS as u64, libc::PRIO_PGRP as u64);
    assert_eq!(decide(false, libc::SYS_setpriority, a(&[process, 0, 10])), ALLOW);
    assert_eq!(decide(false, libc::SYS_setpriority, a(&[group, 0, 10])), ALLOW);
    assert_eq!(decide(false, libc::SYS_setpriority, a(&[process, 4242, 10])), EPERM);
    assert_eq!(decide(false, libc::SYS_setpriority, a(&[PRIO_USER as u64, 0, 10])), EPERM);
    assert_eq!(decide(false, libc::SYS_ioprio_set, a(&[1, 0, 0])), ALLOW);
    assert_eq!(decide(false, libc::SYS_ioprio_set, a(&[1, 4242, 0])), EPERM);
    assert_eq!(decide(false, libc::SYS_ioprio_set, a(&[IOPRIO_WHO_USER as u64, 0, 0])), EPERM);
    for nr in OWN_PROCESS_ONLY {
        assert_eq!(decide(false, *nr, a(&[0, 8])), ALLOW, "call {nr}");
        assert_eq!(decide(true, *nr, a(&[4242, 8])), EPERM, "call {nr}");
    }
}

#[test]
fn each_call_number_is_compiled_once() {
    for network in [false, true] {
        // A map: one entry per number; the layers split it without overlap.
        let all = refusals(network).unwrap();
        let [spawner, call] = layers(network);
        let numbers = |p: &Program| p.iter().filter(|i| i.code == JEQ_K).map(|i| i.k).collect::<Vec<_>>();
        for nr in all.keys() {
            let nr = *nr as u32;
            let held = usize::from(numbers(&spawner).contains(&nr)) + usize::from(numbers(&call).contains(&nr));
            assert!(held >= 1, "call {nr} is in no layer");
        }
    }
}

#[test]
fn the_hand_assembled_call_layer_decides_as_seccompilers() {
    let (unix, inet, packet) = (libc::AF_UNIX as u64, libc::AF_INET as u64, libc::AF_PACKET as u64);
    let domains = [0, unix, inet, libc::AF_INET6 as u64, packet, libc::AF_NETLINK as u64, 0xffff_ffff_0000_0000 | unix];
    let flags = (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u64;
    let kinds = (0..16u64).flat_map(|k| [k, k | flags, k | 0xffff_ffff_0000_0000]).collect::<Vec<_>>();
    for network in [false, true] {
        let hand = program(Layer::Call { network }).unwrap();
        let compiled = compiled(Layer::Call { network }).unwrap();
        for nr in 0..470i64 {
            for domain in domains {
                for kind in &kinds {
                    let d = data(nr, AUDIT_ARCH, a(&[domain, *kind, 3]));
                    assert_eq!(
                        run(&hand, &d),
                        run(&compiled, &d),
                        "network {network}, call {nr}({domain:#x}, {kind:#x})"
                    );
                }
            }
        }
        for d in [data(libc::SYS_getpid, 0x4000_0003, [0; 6]), data(0x4000_0000 + libc::SYS_socket, AUDIT_ARCH, [0; 6])]
        {
            assert_eq!(run(&hand, &d), run(&compiled, &d), "network {network}");
        }
    }
}

#[test]
fn the_watched_layer_hands_internet_sockets_to_the_parent_and_decides_the_rest_alike() {
    let (unix, inet, inet6) = (libc::AF_UNIX as u64, libc::AF_INET as u64, libc::AF_INET6 as u64);
    let domains = [0, unix, inet, inet6, libc::AF_PACKET as u64, libc::AF_NETLINK as u64, 0xffff_ffff_0000_0000 | inet];
    let flags = (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u64;
    let kinds = (0..16u64).flat_map(|k| [k, k | flags]).collect::<Vec<_>>();
    let watched = program(Layer::WatchedCall).unwrap();
    let refused = program(Layer::Call { network: false }).unwrap();
    for nr in 0..470i64 {
        for domain in domains {
            for kind in &kinds {
                let d = data(nr, AUDIT_ARCH, a(&[domain, *kind, 0]));
                let internet = nr == libc::SYS_socket && [inet, inet6].contains(&(domain & 0xffff_ffff));
                let expected = if internet { NOTIFY } else { run(&refused, &d) };
                assert_eq!(run(&watched, &d), expected, "call {nr}({domain:#x}, {kind:#x})");
            }
        }
    }
}
