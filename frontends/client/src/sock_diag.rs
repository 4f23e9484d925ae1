//! One TCP socket's owner and inode through netlink `sock_diag` (an exact lookup by its two
//! ends): /proc/net/tcp lists every socket of the machine, which costs tens of milliseconds on
//! a busy one, for every connection a frontend accepts.

use std::net::{IpAddr, SocketAddr};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
/// nlmsghdr (16) + inet_diag_req_v2 (56).
const REQUEST_LEN: usize = 72;
/// In an answer: nlmsghdr (16), then inet_diag_msg, whose uid is at 64 and inode at 68.
const UID_AT: usize = 16 + 64;
const INODE_AT: usize = 16 + 68;

/// The uid and inode of the TCP socket whose local end is `local` and remote end `remote`;
/// `None` when there is none or netlink cannot be used.
pub(crate) fn tcp_socket(local: SocketAddr, remote: SocketAddr) -> Option<(u32, u64)> {
    if local.is_ipv4() != remote.is_ipv4() {
        return None;
    }
    let request = request(local, remote);
    // SAFETY: a netlink socket we own, a buffer we own for send and recv, closed on every path.
    unsafe {
        let fd = libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::NETLINK_SOCK_DIAG);
        if fd < 0 {
            return None;
        }
        let timeout = libc::timeval { tv_sec: 1, tv_usec: 0 };
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
        let mut answer = [0u8; 512];
        let sent = libc::send(fd, request.as_ptr().cast(), request.len(), 0);
        let got = if sent == request.len() as isize {
            libc::recv(fd, answer.as_mut_ptr().cast(), answer.len(), 0)
        } else {
            -1
        };
        libc::close(fd);
        parse(answer.get(..usize::try_from(got).ok()?)?)
    }
}

fn request(local: SocketAddr, remote: SocketAddr) -> [u8; REQUEST_LEN] {
    let mut r = [0u8; REQUEST_LEN];
    r[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    r[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    r[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    // inet_diag_req_v2: family, protocol, ext, pad, states, then the socket id.
    r[16] = if local.is_ipv4() { libc::AF_INET as u8 } else { libc::AF_INET6 as u8 };
    r[17] = libc::IPPROTO_TCP as u8;
    r[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    // inet_diag_sockid: sport, dport (big-endian), src[4], dst[4], if, cookie[2].
    r[24..26].copy_from_slice(&local.port().to_be_bytes());
    r[26..28].copy_from_slice(&remote.port().to_be_bytes());
    put_addr(&mut r[28..44], local.ip());
    put_addr(&mut r[44..60], remote.ip());
    // No cookie: INET_DIAG_NOCOOKIE.
    r[64..72].copy_from_slice(&[0xff; 8]);
    r
}

fn put_addr(out: &mut [u8], ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => out.copy_from_slice(&v6.octets()),
    }
}

fn parse(answer: &[u8]) -> Option<(u32, u64)> {
    let kind = u16::from_ne_bytes(answer.get(4..6)?.try_into().ok()?);
    if kind != SOCK_DIAG_BY_FAMILY || kind == NLMSG_ERROR {
        return None;
    }
    let uid = u32::from_ne_bytes(answer.get(UID_AT..UID_AT + 4)?.try_into().ok()?);
    let inode = u32::from_ne_bytes(answer.get(INODE_AT..INODE_AT + 4)?.try_into().ok()?);
    Some((uid, u64::from(inode)))
}
