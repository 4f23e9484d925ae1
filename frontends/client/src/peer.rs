//! Who is on the other end of a frontend's listener, and whether it may be served: the one
//! peer check of `superpi rpc` (Unix socket and `--port`) and the HTTP frontends.
//!
//! A Unix socket tells its peer's uid and pid (`SO_PEERCRED`). A loopback TCP connection does
//! not: the client's end is looked up (netlink `sock_diag`, else /proc/net/tcp) for its uid and
//! socket inode, and the confined tools' descriptors are searched for that inode. A peer is
//! refused when it is another
//! user (unless the caller allows other users: a listener guarded by tokens), when any process
//! holding its socket is a confined tool of a superpi kernel (a tool granted network must not
//! act as a frontend and answer its own questions), or when it cannot be found (fail closed).
//! A TCP peer that is not on loopback is served only where the caller allows other users.

use std::net::{IpAddr, SocketAddr};

/// Why a peer was refused, for the listener's log line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerRefused {
    #[error("the peer is uid {0}, not this user")]
    OtherUser(u32),
    #[error("the peer (pid {0}) is a confined tool of a superpi kernel")]
    Tool(u32),
    #[error("the peer {0} is not on this machine and no token guards the listener")]
    NotLocal(SocketAddr),
    #[error("the peer cannot be identified: {0}")]
    Unknown(String),
}

/// Who may connect besides this user's own processes (never a confined tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// This user only: no token guards the listener.
    ThisUser,
    /// Any user and any host: tokens guard every request.
    AnyUser,
}

fn my_uid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// The check of a Unix socket's peer, from its credentials (`SO_PEERCRED`).
pub fn check_unix(uid: u32, pid: Option<i32>) -> Result<(), PeerRefused> {
    if uid != my_uid() {
        return Err(PeerRefused::OtherUser(uid));
    }
    match pid.and_then(|p| u32::try_from(p).ok()) {
        Some(pid) if superpi_paths::confined::is_confined_tool(pid) => Err(PeerRefused::Tool(pid)),
        Some(_) => Ok(()),
        None => Err(PeerRefused::Unknown("no peer pid".into())),
    }
}

/// The check of a TCP connection accepted on `local` from `peer`. Reads /proc: call it off the
/// async runtime's threads (`spawn_blocking`).
pub fn check_tcp(local: SocketAddr, peer: SocketAddr, admit: Admit) -> Result<(), PeerRefused> {
    if !is_loopback(peer.ip()) {
        return match admit {
            Admit::AnyUser => Ok(()),
            Admit::ThisUser => Err(PeerRefused::NotLocal(peer)),
        };
    }
    let (uid, inode) = tcp_socket(peer, local)
        .ok_or_else(|| PeerRefused::Unknown(format!("{peer} is not in /proc/net/tcp (it left?)")))?;
    if uid != my_uid() && admit == Admit::ThisUser {
        return Err(PeerRefused::OtherUser(uid));
    }
    // The tools are few (often none): their descriptors are searched, not every process's.
    match superpi_paths::confined::confined_tools().into_iter().find(|pid| holds_socket(*pid, inode)) {
        Some(pid) => Err(PeerRefused::Tool(pid)),
        None => Ok(()),
    }
}

/// Loopback, an IPv4 address mapped into IPv6 included.
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        IpAddr::V4(v4) => v4.is_loopback(),
    }
}

/// The uid and socket inode of the TCP socket whose local end is `local` and remote end is
/// `remote`: asked of netlink, else read in /proc/net/tcp or tcp6.
fn tcp_socket(local: SocketAddr, remote: SocketAddr) -> Option<(u32, u64)> {
    if let Some(found) = crate::sock_diag::tcp_socket(local, remote) {
        return Some(found);
    }
    let file = if local.is_ipv4() { "/proc/net/tcp" } else { "/proc/net/tcp6" };
    let table = std::fs::read_to_string(file).ok()?;
    find_socket(&table, local, remote)
}

/// In a /proc/net/tcp table, the uid and inode of the socket with these two ends.
pub fn find_socket(table: &str, local: SocketAddr, remote: SocketAddr) -> Option<(u32, u64)> {
    let want_local = proc_addr(local);
    let want_remote = proc_addr(remote);
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() > 9
            && fields[1].eq_ignore_ascii_case(&want_local)
            && fields[2].eq_ignore_ascii_case(&want_remote)
        {
            Some((fields[7].parse().ok()?, fields[9].parse().ok()?))
        } else {
            None
        }
    })
}

/// An address as /proc/net/tcp writes it: the address as native-endian 32-bit words in hex,
/// a colon, the port in hex.
fn proc_addr(addr: SocketAddr) -> String {
    let words: String = match addr.ip() {
        IpAddr::V4(ip) => format!("{:08X}", u32::from_ne_bytes(ip.octets())),
        IpAddr::V6(ip) => ip
            .octets()
            .chunks_exact(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect(),
    };
    format!("{words}:{:04X}", addr.port())
}

/// Whether process `pid` holds the socket `inode` open.
fn holds_socket(pid: u32, inode: u64) -> bool {
    let target = format!("socket:[{inode}]");
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.filter_map(Result::ok)
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link.as_os_str() == target.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4};

    #[test]
    fn finds_the_uid_and_inode_of_a_loopback_socket() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 11 1\n\
           1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 12 1\n\
           2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 13 1\n\
           3: 0100007F:D432 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1001        0 14 1\n";
        let at = |port| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        if cfg!(target_endian = "little") {
            assert_eq!(find_socket(table, at(0xD431), at(0x1F90)), Some((1000, 12)));
            assert_eq!(find_socket(table, at(0xD432), at(0x1F90)), Some((1001, 14)));
            assert_eq!(find_socket(table, at(1), at(0x1F90)), None);
        }
    }

    #[test]
    fn ipv6_addresses_are_written_as_four_words() {
        let addr = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 0x1F90);
        if cfg!(target_endian = "little") {
            assert_eq!(proc_addr(addr), "00000000000000000000000001000000:1F90");
        }
        assert!(is_loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!is_loopback("::ffff:10.0.0.1".parse().unwrap()));
    }

    #[tokio::test]
    async fn a_real_loopback_connection_of_this_process_is_admitted() {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server_side, peer) = listener.accept().await.unwrap();
        let local = server_side.local_addr().unwrap();
        let (uid, inode) = tcp_socket(peer, local).unwrap();
        assert_eq!(uid, my_uid());
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
        assert_eq!(find_socket(&table, peer, local), Some((uid, inode)), "netlink and /proc agree");
        assert_eq!(crate::sock_diag::tcp_socket(peer, local), Some((uid, inode)), "netlink answers");
        assert!(holds_socket(std::process::id(), inode));
        assert!(!holds_socket(std::process::id(), u64::MAX));
        assert_eq!(check_tcp(local, peer, Admit::ThisUser), Ok(()));
        drop(client);
    }

    #[test]
    fn another_user_on_a_unix_socket_is_refused() {
        assert_eq!(
            check_unix(my_uid().wrapping_add(1), Some(1)),
            Err(PeerRefused::OtherUser(my_uid().wrapping_add(1)))
        );
        assert_eq!(check_unix(my_uid(), Some(std::process::id() as i32)), Ok(()));
        assert!(matches!(check_unix(my_uid(), None), Err(PeerRefused::Unknown(_))));
    }
}
