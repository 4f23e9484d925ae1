//! The child side of confinement: everything here runs between clone and exec.
//!
//! The parent prepares every input (the landlock ruleset descriptor, the compiled seccomp
//! programs, C strings for paths, the cgroup descriptor) before it clones. The child (spawn.rs)
//! runs [`Prepared::run_steps`], which makes raw system calls only: no allocation, no lock, no
//! formatting, so it is sound in a multi-threaded parent whose memory the child shares. A
//! failing step's code and errno go to the status pipe, which makes the spawn fail in the
//! parent with the step named.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use libc::{c_int, c_long, c_ulong};

use crate::mounts::MountPlan;
use crate::step::Step;

/// A compiled seccomp program, in the kernel's `sock_filter` layout.
pub(crate) type Program = Vec<libc::sock_filter>;

/// Everything the child needs, made in the parent before the clone.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub parent_pid: libc::pid_t,
    pub status: OwnedFd,
    pub cgroup_procs: Option<Arc<OwnedFd>>,
    pub mounts: Option<MountPlan>,
    pub cwd: CString,
    pub limits: Vec<(c_int, u64)>,
    /// Drop capabilities and set no_new_privs (off only when confinement is disabled).
    pub drop_capabilities: bool,
    /// The spawner thread emptied its bounding set, which the child inherits (spawn.rs).
    pub bounding_set_empty: bool,
    /// None when confinement is disabled by configuration.
    pub landlock: Option<Arc<OwnedFd>>,
    pub seccomp: Arc<Vec<Program>>,
    /// Installed after `seccomp`, for a call without network (netwatch.rs).
    pub watched: Option<WatchedLayer>,
}

/// The last seccomp layer of a call without network: its internet sockets wait for the
/// parent, which refuses and counts them. Installed with a listener that the child sends to
/// the parent through `channel` before it execs (the listener is close-on-exec: the program
/// never holds it, so it cannot answer its own calls).
#[derive(Debug)]
pub(crate) struct WatchedLayer {
    pub program: Arc<Program>,
    /// Installed instead where the machine gives no listener (a filter above already has
    /// one: superpi confined by itself, or a container's supervisor).
    pub fallback: Arc<Program>,
    pub channel: OwnedFd,
}

const CLOSE_RANGE_CLOEXEC: c_ulong = 1 << 2;
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn check(ret: c_long) -> Result<c_long, i32> {
    if ret < 0 { Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)) } else { Ok(ret) }
}

fn check_int(ret: c_int) -> Result<c_long, i32> {
    check(ret as c_long)
}

impl Prepared {
    /// The confinement steps, run in the child between clone and exec (spawn.rs). Async-signal-safe:
    /// raw system calls only.
    pub(crate) fn run_steps(&self) -> Result<(), (Step, i32)> {
        // SAFETY (whole function): plain system calls on values prepared by the parent, whose
        // pointers stay valid for the duration of each call.
        unsafe {
            check_int(libc::setsid()).map_err(|e| (Step::Session, e))?;

            check_int(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as c_ulong, 0, 0, 0))
                .map_err(|e| (Step::ParentDeath, e))?;
            if libc::getppid() != self.parent_pid {
                return Err((Step::ParentDeath, libc::ESRCH));
            }

            if let Some(fd) = &self.cgroup_procs {
                let zero = b"0";
                check(libc::write(fd.as_raw_fd(), zero.as_ptr().cast(), 1) as c_long).map_err(|e| (Step::Cgroup, e))?;
            }

            if let Some(plan) = &self.mounts {
                plan.enter()?;
            }
            check_int(libc::chdir(self.cwd.as_ptr())).map_err(|e| (Step::WorkingDir, e))?;

            for (resource, value) in &self.limits {
                let lim = libc::rlimit64 { rlim_cur: *value, rlim_max: *value };
                check(libc::syscall(
                    libc::SYS_prlimit64,
                    0,
                    *resource as c_long,
                    &lim as *const libc::rlimit64,
                    std::ptr::null_mut::<libc::rlimit64>(),
                ))
                .map_err(|e| (Step::Limits, e))?;
            }

            // Everything above 2 closes at exec (our own status and error pipes included).
            if check(libc::syscall(libc::SYS_close_range, 3 as c_ulong, c_ulong::MAX, CLOSE_RANGE_CLOEXEC)).is_err() {
                for fd in 3..4096 {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }

            if self.drop_capabilities {
                self.drop_capabilities()?;
            }

            if self.drop_capabilities {
                check_int(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as c_ulong, 0, 0, 0))
                    .map_err(|e| (Step::NoNewPrivs, e))?;
            }

            if let Some(ruleset) = &self.landlock {
                check(libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0 as c_ulong))
                    .map_err(|e| (Step::Landlock, e))?;
            }

            for program in self.seccomp.iter() {
                let fprog =
                    libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr() as *mut libc::sock_filter };
                check_int(libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER as c_ulong,
                    &fprog as *const libc::sock_fprog as c_ulong,
                    0,
                    0,
                ))
                .map_err(|e| (Step::Seccomp, e))?;
            }
            if let Some(watched) = &self.watched {
                watched.install()?;
            }
        }
        Ok(())
    }

    unsafe fn drop_capabilities(&self) -> Result<(), (Step, i32)> {
        // SAFETY: prctl and capset with stack values.
        unsafe {
            // Root without capabilities must not regain them through exec or setuid fix-ups.
            // Setting securebits needs CAP_SETPCAP: a non-root parent has none to drop anyway.
            let bits = libc::SECBIT_NOROOT
                | libc::SECBIT_NOROOT_LOCKED
                | libc::SECBIT_NO_SETUID_FIXUP
                | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
                | libc::SECBIT_KEEP_CAPS_LOCKED
                | libc::SECBIT_NO_CAP_AMBIENT_RAISE
                | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
            let has_setpcap = libc::prctl(libc::PR_SET_SECUREBITS, bits as c_ulong, 0, 0, 0) == 0;
            if has_setpcap && !self.bounding_set_empty {
                // Each drop commits new credentials: only what is still there is dropped.
                for cap in 0..64 as c_ulong {
                    match libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) {
                        0 => {}
                        1 => {
                            check_int(libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0))
                                .map_err(|e| (Step::Capabilities, e))?;
                        }
                        _ => break, // EINVAL past the last capability this kernel knows
                    }
                }
            }
            libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as c_ulong, 0, 0, 0);
            let header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
            let data = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
            check(libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()))
                .map_err(|e| (Step::Capabilities, e))?;
        }
        Ok(())
    }
}

fn install(program: &Program, flags: c_ulong) -> c_long {
    let fprog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr() as *mut libc::sock_filter };
    // SAFETY: the program outlives the call, which copies it.
    unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER as c_ulong,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    }
}

impl WatchedLayer {
    /// Installs the layer with a listener and sends it to the parent, else the fallback.
    /// Async-signal-safe, like every step.
    fn install(&self) -> Result<(), (Step, i32)> {
        let listener = install(&self.program, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER);
        if listener < 0 {
            return check(install(&self.fallback, 0)).map(drop).map_err(|e| (Step::Seccomp, e));
        }
        let listener = listener as c_int;
        // Unsent (the parent gone), the listener closes with this process: the calls it
        // would answer then fail with ENOSYS, refused all the same.
        let sent = send_descriptor(self.channel.as_raw_fd(), listener);
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(listener) };
        sent.map_err(|e| (Step::Seccomp, e))
    }
}

/// Sends `fd` over the socket `channel` (SCM_RIGHTS), from stack buffers only.
fn send_descriptor(channel: c_int, fd: c_int) -> Result<(), i32> {
    use crate::netwatch::FD_SIZE;
    let mut space = [0u64; 4];
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    // SAFETY: the message points at stack buffers that outlive sendmsg; CMSG_SPACE(4) is 24
    // bytes, within `space`.
    unsafe {
        let msg = crate::netwatch::one_descriptor(&mut iov, &mut space);
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(libc::EINVAL);
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(FD_SIZE) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<c_int>(), fd);
        check(libc::sendmsg(channel, &msg, libc::MSG_NOSIGNAL) as c_long).map(drop)
    }
}
