//! The call's layer of the seccomp program, assembled by hand (see the module docs of
//! `filter.rs` for why): a binary search over its call numbers, then a refusal or one short
//! block that reads the arguments. It says what [`super::refusals`] says of the same numbers;
//! `filter_tests.rs` checks the two agree.

use super::{
    ALLOW, AUDIT_ARCH, DATA_ARCH, DATA_NR, EPERM, FilterError, JEQ_K, JGE_K, LD_W_ABS, MOUNT_CALLS, NETWORK_CALLS,
    NOSYS, NOTIFY, RET_K,
};
use crate::confine::Program;

const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
/// A socket's type is its low four bits; stream and seqpacket are the types that cannot
/// address anyone (see `not_stream_or_seqpacket`).
const SOCK_TYPE_MASK: u32 = 0xf;

/// Offset of the low 32 bits of argument `index` in seccomp_data (little-endian targets only,
/// which all three are).
const fn arg(index: u32) -> u32 {
    16 + 8 * index
}

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
                To::Label(name) => match self.labels.iter().find(|(n, _)| n == name).map(|(_, t)| *t) {
                    Some(t) if t > at => Ok(t - at - 1),
                    _ => Err(FilterError::Label(name.clone())),
                },
            }
        };
        let mut program = Vec::with_capacity(self.code.len());
        for (at, (code, jt, jf, k)) in self.code.iter().enumerate() {
            let short = |to: &To| offset(at, to).and_then(|o| u8::try_from(o).map_err(|_| FilterError::JumpTooLong(o)));
            let instruction = if *code == JA {
                let o = offset(at, jt)?;
                libc::sock_filter {
                    code: *code,
                    jt: 0,
                    jf: 0,
                    k: u32::try_from(o).map_err(|_| FilterError::JumpTooLong(o))?,
                }
            } else {
                libc::sock_filter { code: *code, jt: short(jt)?, jf: short(jf)?, k: *k }
            };
            program.push(instruction);
        }
        Ok(program)
    }
}

/// What the layer does with one call number: refuse it, or check its socket type.
enum Rule {
    Refuse,
    /// socket (`domain` checked too) or socketpair without network; `watch`: an internet
    /// socket waits for the parent's answer instead of being refused here.
    UnixStreamOnly {
        domain: bool,
        watch: bool,
    },
    /// socket with network.
    NotPacket,
}

/// The call layer's numbers, sorted; any other number is allowed.
fn rules(network: bool, watch: bool) -> Vec<(u32, Rule)> {
    let offline: &[i64] = if network { &[] } else { NETWORK_CALLS };
    let mut rules: Vec<(u32, Rule)> = MOUNT_CALLS.iter().chain(offline).map(|nr| (*nr as u32, Rule::Refuse)).collect();
    if network {
        rules.push((libc::SYS_socket as u32, Rule::NotPacket));
    } else {
        rules.push((libc::SYS_socket as u32, Rule::UnixStreamOnly { domain: true, watch }));
        rules.push((libc::SYS_socketpair as u32, Rule::UnixStreamOnly { domain: false, watch: false }));
    }
    rules.sort_by_key(|(nr, _)| *nr);
    rules
}

fn check(a: &mut Asm, rule: &Rule, p: &str) {
    let (ok, no) = (format!("{p}ok"), format!("{p}no"));
    match rule {
        Rule::Refuse => a.ret(EPERM),
        Rule::NotPacket => {
            // Packet sockets see and forge every frame of the machine.
            a.stmt(LD_W_ABS, arg(0));
            a.jump(JEQ_K, libc::AF_PACKET as u32, To::Next, to(&ok));
            a.ret(EPERM);
            a.label(&ok);
            a.ret(ALLOW);
        }
        Rule::UnixStreamOnly { domain, watch } => {
            let notify = format!("{p}notify");
            if *domain {
                a.stmt(LD_W_ABS, arg(0));
                if *watch {
                    a.jump(JEQ_K, libc::AF_INET as u32, to(&notify), To::Next);
                    a.jump(JEQ_K, libc::AF_INET6 as u32, to(&notify), To::Next);
                }
                a.jump(JEQ_K, libc::AF_UNIX as u32, To::Next, to(&no));
            }
            a.stmt(LD_W_ABS, arg(1));
            a.stmt(AND_K, SOCK_TYPE_MASK);
            a.jump(JEQ_K, libc::SOCK_STREAM as u32, to(&ok), To::Next);
            a.jump(JEQ_K, libc::SOCK_SEQPACKET as u32, to(&ok), To::Next);
            a.label(&no);
            a.ret(EPERM);
            a.label(&ok);
            a.ret(ALLOW);
            if *domain && *watch {
                a.label(&notify);
                a.ret(NOTIFY);
            }
        }
    }
}

/// Most call numbers compared one by one at the bottom of the search.
const LEAF: usize = 6;

/// A binary search over the sorted `rules`: the kernel emulates the program once per call
/// number at install to build its allow cache, so the walk's length is paid some 450 times on
/// every call's start.
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
    let eperm = format!("{name}:eperm");
    let target = |i: usize, rule: &Rule| match rule {
        Rule::Refuse => eperm.clone(),
        _ => format!("{name}:{i}"),
    };
    for (i, (nr, rule)) in rules.iter().enumerate() {
        a.jump(JEQ_K, *nr, to(&target(i, rule)), To::Next);
    }
    a.ret(ALLOW);
    if rules.iter().any(|(_, r)| matches!(r, Rule::Refuse)) {
        a.label(&eperm);
        a.ret(EPERM);
    }
    for (i, (_, rule)) in rules.iter().enumerate() {
        if !matches!(rule, Rule::Refuse) {
            let label = format!("{name}:{i}");
            a.label(&label);
            check(a, rule, &format!("{label}:"));
        }
    }
}

/// The call's layer, with or without network; `watch` (without network only): internet
/// sockets wait for the parent.
pub(super) fn program(network: bool, watch: bool) -> Result<Program, FilterError> {
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
    search(&mut a, &rules(network, watch), "s");
    a.finish()
}
