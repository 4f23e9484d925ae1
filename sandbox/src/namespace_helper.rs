//! The namespace helper of a kernel that is not root. Such a kernel gets the calls' private
//! mount and IPC namespaces (`mounts.rs`) inside a user namespace that maps only its own uid
//! and gid, so a tool keeps its identity and gains nothing outside. The call's child cannot
//! make them: a process of several threads cannot make a user namespace, and the kernel is not
//! dumpable (`harden_kernel_process`), which leaves its /proc files, the new namespace's maps
//! among them, to root. The helper, the tool runner's binary started fresh (its environment
//! empty), is its user's: it makes them, says `ready` and waits; the kernel opens its three
//! namespaces and kills it.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use libc::{c_long, c_ulong};
use serde::{Deserialize, Serialize};

use crate::mounts::{NAMESPACES, Namespaces, bind_writable, check, readonly_outside};
use crate::step::Step;

/// The contents of a new user namespace's maps: the helper's own uid and gid mapped to
/// themselves, nothing else (setgroups denied, as an unprivileged map needs).
#[derive(Debug, Clone)]
struct IdMaps {
    uid_map: CString,
    gid_map: CString,
}

impl IdMaps {
    fn own() -> IdMaps {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let line = |id: u32| CString::new(format!("{id} {id} 1")).unwrap_or_default();
        IdMaps { uid_map: line(uid), gid_map: line(gid) }
    }

    /// Right after unsharing the user namespace.
    fn write(&self) -> Result<(), i32> {
        write_file(c"/proc/self/setgroups", c"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)
    }
}

fn write_file(path: &std::ffi::CStr, text: &std::ffi::CStr) -> Result<(), i32> {
    // SAFETY: open, write and close with C strings that outlive the calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd as c_long)?;
        let bytes = text.to_bytes();
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(if written < 0 {
                std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
            } else {
                libc::EIO
            });
        }
    }
    Ok(())
}

/// What the namespace helper sets up: the trees to bind writable and the /dev/shm source.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct HelperPlan {
    pub writable: Vec<PathBuf>,
    pub shm: Option<PathBuf>,
}

/// The helper's answer when its namespaces are ready (else `refused STEP ERRNO`).
const HELPER_READY: &str = "ready";

/// The helper process (the tool runner dispatches [`HelperPlan`] requests here): sets up a user
/// namespace and, owned by it, the call's mount and IPC namespaces; says so on stdout; then
/// waits to be killed (or dies with the kernel), holding them until the kernel opened them.
pub(crate) fn helper_main(plan: &HelperPlan) -> i32 {
    use std::io::Write;
    let outcome = set_up_in_helper(plan);
    let line = match outcome {
        Ok(()) => format!("{HELPER_READY}\n"),
        Err((step, errno)) => format!("refused {} {errno}\n", step as u8),
    };
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(line.as_bytes()).and_then(|()| stdout.flush()).is_err() || outcome.is_err() {
        return 1;
    }
    loop {
        // SAFETY: pause has no arguments; only a signal ends it.
        unsafe { libc::pause() };
    }
}

fn set_up_in_helper(plan: &HelperPlan) -> Result<(), (Step, i32)> {
    // SAFETY: prctl with constant arguments.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as c_ulong, 0, 0, 0) } as c_long)
        .map_err(|e| (Step::ParentDeath, e))?;
    // SAFETY: unshare with constant flags.
    check(unsafe { libc::unshare(NAMESPACES | libc::CLONE_NEWUSER) } as c_long)
        .map_err(|e| (Step::MountNamespace, e))?;
    IdMaps::own().write().map_err(|e| (Step::MountNamespace, e))?;
    readonly_outside(&[])?;
    let c_path =
        |p: &PathBuf| CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| (Step::ReadOnlyMounts, libc::EINVAL));
    let trees = plan.writable.iter().map(c_path).collect::<Result<Vec<_>, _>>()?;
    let shm = plan.shm.as_ref().map(c_path).transpose()?;
    bind_writable(&trees, shm.as_ref())
}

/// How a kernel that is not root starts the namespace helper: the tool runner's command.
#[derive(Debug, Clone)]
pub(crate) struct Helper {
    pub program: PathBuf,
    pub args: Vec<std::ffi::OsString>,
}

impl Helper {
    /// Namespaces set up by a helper for `plan`: a user namespace and the mount and IPC
    /// namespaces it owns. The helper gets no environment (it is dumpable while it lives).
    /// `request` is the tool runner's request carrying a [`HelperPlan`].
    pub(crate) fn make(&self, request: &[u8]) -> Result<Namespaces, String> {
        use std::io::{BufRead, Write};
        #[allow(clippy::disallowed_methods)] // a short-lived helper, killed below
        let mut child = std::process::Command::new(&self.program)
            .args(&self.args)
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.program.display()))?;
        let answer = (|| {
            let mut stdin = child.stdin.take().ok_or("no stdin")?;
            stdin.write_all(request).map_err(|e| e.to_string())?;
            drop(stdin);
            let mut line = String::new();
            let stdout = child.stdout.take().ok_or("no stdout")?;
            std::io::BufReader::new(stdout).read_line(&mut line).map_err(|e| e.to_string())?;
            match line.trim_end() {
                HELPER_READY => {
                    let open = |kind: &str| {
                        File::open(format!("/proc/{}/ns/{kind}", child.id()))
                            .map(OwnedFd::from)
                            .map_err(|e| format!("opening the helper's {kind} namespace: {e}"))
                    };
                    Ok(Namespaces { user: Some(open("user")?), mnt: open("mnt")?, ipc: open("ipc")? })
                }
                refused => Err(helper_refusal(refused)),
            }
        })();
        let _ = child.kill();
        let _ = child.wait();
        answer
    }
}

fn helper_refusal(line: &str) -> String {
    let mut words = line.split(' ').skip(1).map(str::parse::<i32>);
    match (words.next(), words.next()) {
        (Some(Ok(step)), Some(Ok(errno))) => {
            let step = u8::try_from(step).ok().and_then(Step::from_code).map_or("an unnamed step", Step::describe);
            format!("could not {step}: {}", std::io::Error::from_raw_os_error(errno))
        }
        _ => format!("the namespace helper answered {line:?}"),
    }
}
