//! The internet sockets of a call without network, seen as they are refused: the call's last
//! seccomp layer hands `socket(AF_INET | AF_INET6, ..)` to this process (a seccomp user
//! notification) instead of refusing it in the kernel, and this module answers EPERM and counts.
//! What a program prints when it cannot connect differs from one to the next (and `npm install`
//! retries in silence until its deadline); the count does not, so a result can say the
//! command wanted the network whatever it printed.
//!
//! The listener reaches this process through a socket pair the child sends it on before it
//! execs (confine.rs); the program itself never holds it. When this side is gone (the call
//! over, the kernel dead), the kernel answers the waiting calls ENOSYS: refused all the same.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use nix::sys::socket::{AddressFamily, SockFlag, SockType};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// What a call without network asked for and was refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refused {
    /// Internet sockets refused (name lookups count: a resolver opens one per server).
    pub sockets: u32,
    /// The command name of the first process that asked, as the kernel shows it.
    pub first_program: Option<String>,
}

impl Refused {
    /// The line a result carries when the command tried the network, else None.
    pub fn hint(&self) -> Option<String> {
        if self.sockets == 0 {
            return None;
        }
        let who = self.first_program.as_deref().map(|p| format!("`{p}` ")).unwrap_or_default();
        let times = if self.sockets == 1 { "once".to_string() } else { format!("{} times", self.sockets) };
        Some(format!("{who}tried to open an internet connection ({times}), which the sandbox refused"))
    }
}

/// The two ends of the channel the listener travels through: the parent's, the child's.
pub(crate) fn channel() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::sys::socket::socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)
        .map_err(io::Error::from)
}

/// Bytes of a descriptor in a control message.
pub(crate) const FD_SIZE: u32 = std::mem::size_of::<libc::c_int>() as u32;

/// The header of a message of one byte (`iov`) and one descriptor, whose control message goes
/// in `space` (CMSG_SPACE of one descriptor is 24 bytes, aligned as cmsghdr needs). Sender
/// (the child, which may not allocate) and receiver build it alike.
pub(crate) fn one_descriptor(iov: &mut libc::iovec, space: &mut [u64; 4]) -> libc::msghdr {
    // SAFETY: msghdr is plain data, valid zeroed; CMSG_SPACE only computes.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(FD_SIZE) } as _;
    msg
}

/// The listener the child sent, if it sent one (it does not where the machine gives none).
pub(crate) fn receive(channel: &OwnedFd) -> Option<OwnedFd> {
    let mut space = [0u64; 4];
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    // SAFETY: recvmsg into stack buffers that outlive it; the control message is read only
    // when the kernel filled one of the size of one descriptor.
    unsafe {
        let mut msg = one_descriptor(&mut iov, &mut space);
        let flags = libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC;
        if libc::recvmsg(channel.as_raw_fd(), &mut msg, flags) < 1 {
            return None;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
            || (*cmsg).cmsg_len as usize != libc::CMSG_LEN(FD_SIZE) as usize
        {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        Some(std::os::fd::FromRawFd::from_raw_fd(fd))
    }
}

/// Answers a call's listener until the call's processes are gone or it is dropped.
#[derive(Debug)]
pub(crate) struct NetWatch {
    seen: Arc<Mutex<Refused>>,
    task: tokio::task::AbortHandle,
}

impl NetWatch {
    pub(crate) fn start(listener: OwnedFd) -> io::Result<NetWatch> {
        // SAFETY: the AsyncFd owns the OwnedFd, which stays open (and the same) for its lifetime.
        let listener =
            unsafe { AsyncFd::register_with_interest(listener, Interest::READABLE) }.map_err(io::Error::from)?;
        let seen = Arc::new(Mutex::new(Refused::default()));
        let task = tokio::spawn(answer(listener, seen.clone())).abort_handle();
        Ok(NetWatch { seen, task })
    }

    /// What was refused so far (everything, once the call's processes are gone: each is
    /// counted before it is answered).
    pub(crate) fn seen(&self) -> Refused {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for NetWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(listener: AsyncFd<OwnedFd>, seen: Arc<Mutex<Refused>>) {
    loop {
        let Ok(mut ready) = listener.readable().await else { return };
        // The receive blocks unless a notification waits, so each is asked for after poll
        // says one does (the edge-triggered readiness alone would miss a second one).
        loop {
            match waiting(listener.get_ref()) {
                Waiting::Notification => refuse_one(listener.get_ref(), &seen),
                Waiting::Nothing => break,
                Waiting::Gone => return,
            }
        }
        ready.clear_ready();
    }
}

enum Waiting {
    Notification,
    Nothing,
    /// Every process under the filter has exited.
    Gone,
}

fn waiting(listener: &OwnedFd) -> Waiting {
    let mut p = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: poll on one descriptor we own, without waiting.
    if unsafe { libc::poll(&mut p, 1, 0) } <= 0 {
        return Waiting::Nothing;
    }
    if p.revents & libc::POLLIN != 0 {
        Waiting::Notification
    } else if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Waiting::Gone
    } else {
        Waiting::Nothing
    }
}

fn refuse_one(listener: &OwnedFd, seen: &Mutex<Refused>) {
    let fd = listener.as_raw_fd();
    // SAFETY: the kernel requires a zeroed request; both ioctls take our own stack structs.
    unsafe {
        let mut request: libc::seccomp_notif = std::mem::zeroed();
        if libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut request) < 0 {
            return; // withdrawn: the caller was killed while it waited
        }
        {
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.sockets = seen.sockets.saturating_add(1);
            if seen.first_program.is_none() {
                seen.first_program = command_name(request.pid);
            }
        }
        let mut answer = libc::seccomp_notif_resp { id: request.id, val: 0, error: -libc::EPERM, flags: 0 };
        libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut answer);
    }
}

/// The caller's command name; it is waiting on us, so the pid is still its own.
fn command_name(pid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let comm = comm.trim_end();
    (!comm.is_empty()).then(|| comm.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_the_program_and_the_count() {
        assert_eq!(Refused::default().hint(), None);
        let once = Refused { sockets: 1, first_program: Some("curl".into()) };
        assert_eq!(
            once.hint().as_deref(),
            Some("`curl` tried to open an internet connection (once), which the sandbox refused")
        );
        let many = Refused { sockets: 7, first_program: None };
        assert!(many.hint().is_some_and(|h| h.starts_with("tried") && h.contains("(7 times)")), "{many:?}");
    }
}
