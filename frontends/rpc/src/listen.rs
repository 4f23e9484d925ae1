//! The three transports: a Unix socket (0600, peer uid checked), TCP on 127.0.0.1 (peer uid
//! checked through /proc/net/tcp), and stdio.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::{TcpListener, UnixListener, UnixStream};

use crate::Error;
use crate::conn::Shared;
use crate::server::serve;

fn my_uid() -> u32 {
    nix::unistd::Uid::effective().as_raw()
}

/// Binds the socket file with mode 0600. A stale socket (nobody answers) is replaced; a live
/// one or any other file is an error.
pub fn bind_unix(path: &Path) -> Result<UnixListener, Error> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(Error::Bind(format!("{} exists and is not a socket", path.display())));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(Error::Bind(format!("a server already listens on {}", path.display())));
        }
        std::fs::remove_file(path).map_err(|e| Error::Bind(format!("removing stale {}: {e}", path.display())))?;
    }
    // The file is created 0600 from the start (umask), and set so again in case the umask
    // was ignored; the peer's uid is checked on every connection anyway.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let listener = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let listener = listener.map_err(|e| Error::Bind(format!("{}: {e}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::Bind(format!("chmod {}: {e}", path.display())))?;
    Ok(listener)
}

/// Removes the socket file when the server stops.
pub struct SocketFile(pub PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub async fn serve_unix(listener: UnixListener, shared: Arc<Shared>, max_line: usize) -> Result<(), Error> {
    let me = my_uid();
    loop {
        let (stream, _) = listener.accept().await.map_err(|e| Error::Io(e.to_string()))?;
        match stream.peer_cred() {
            Ok(cred) if cred.uid() == me => {}
            Ok(cred) => {
                tracing::warn!(uid = cred.uid(), "refused a connection from another user");
                continue;
            }
            Err(err) => {
                tracing::warn!("refused a connection whose peer is unknown: {err}");
                continue;
            }
        }
        spawn_connection(stream, shared.clone(), max_line);
    }
}

fn spawn_connection(stream: UnixStream, shared: Arc<Shared>, max_line: usize) {
    tokio::spawn(async move {
        let (read, write) = stream.into_split();
        if let Err(err) = serve(read, write, shared, max_line).await {
            tracing::warn!("connection ended: {err}");
        }
    });
}

pub async fn bind_tcp(port: u16) -> Result<TcpListener, Error> {
    TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
        .await
        .map_err(|e| Error::Bind(format!("127.0.0.1:{port}: {e}")))
}

pub async fn serve_tcp(listener: TcpListener, shared: Arc<Shared>, max_line: usize) -> Result<(), Error> {
    let me = my_uid();
    loop {
        let (stream, peer) = listener.accept().await.map_err(|e| Error::Io(e.to_string()))?;
        let local = stream.local_addr().map_err(|e| Error::Io(e.to_string()))?;
        let owner = match (local, peer) {
            (SocketAddr::V4(local), SocketAddr::V4(peer)) => tcp_peer_uid(local, peer),
            _ => None,
        };
        if owner != Some(me) {
            tracing::warn!(%peer, ?owner, "refused a TCP connection not from this user");
            continue;
        }
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let (read, write) = stream.into_split();
            if let Err(err) = serve(read, write, shared, max_line).await {
                tracing::warn!("connection ended: {err}");
            }
        });
    }
}

/// The uid owning the client end of a loopback TCP connection, from /proc/net/tcp.
fn tcp_peer_uid(local: SocketAddrV4, peer: SocketAddrV4) -> Option<u32> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    find_socket_uid(&table, peer, local)
}

/// In a /proc/net/tcp table, the uid of the socket whose local end is `local` and remote end
/// is `remote`.
pub fn find_socket_uid(table: &str, local: SocketAddrV4, remote: SocketAddrV4) -> Option<u32> {
    let want_local = proc_addr(local);
    let want_remote = proc_addr(remote);
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() > 7
            && fields[1].eq_ignore_ascii_case(&want_local)
            && fields[2].eq_ignore_ascii_case(&want_remote)
        {
            fields[7].parse().ok()
        } else {
            None
        }
    })
}

/// An address as /proc/net/tcp writes it: the IPv4 address as a native-endian u32 in hex,
/// a colon, the port in hex.
fn proc_addr(addr: SocketAddrV4) -> String {
    let ip = u32::from_ne_bytes(addr.ip().octets());
    format!("{ip:08X}:{:04X}", addr.port())
}

/// Serves one client on stdin/stdout until stdin closes.
pub async fn serve_stdio(shared: Arc<Shared>, max_line: usize) -> Result<(), Error> {
    serve(tokio::io::stdin(), tokio::io::stdout(), shared, max_line).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_uid_of_a_loopback_socket() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1\n\
           1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 2 1\n\
           2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 3 1\n\
           3: 0100007F:D432 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1001        0 4 1\n";
        let server = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0x1F90);
        let client = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0xD431);
        let other = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0xD432);
        if cfg!(target_endian = "little") {
            assert_eq!(find_socket_uid(table, client, server), Some(1000));
            assert_eq!(find_socket_uid(table, other, server), Some(1001));
            assert_eq!(find_socket_uid(table, SocketAddrV4::new(Ipv4Addr::LOCALHOST, 1), server), None);
        }
    }

    #[tokio::test]
    async fn a_real_loopback_connection_is_ours() {
        let listener = bind_tcp(0).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (server_side, peer) = listener.accept().await.unwrap();
        let (SocketAddr::V4(local), SocketAddr::V4(peer)) = (server_side.local_addr().unwrap(), peer) else {
            panic!("loopback is IPv4")
        };
        assert_eq!(tcp_peer_uid(local, peer), Some(my_uid()));
        drop(client);
    }

    #[tokio::test]
    async fn the_socket_file_is_private_and_a_stale_one_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rpc.sock");
        let listener = bind_unix(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(matches!(bind_unix(&path), Err(Error::Bind(msg)) if msg.contains("already listens")));
        drop(listener);
        // The file stays behind, nobody answers: a new server takes its place.
        assert!(path.exists());
        let _listener = bind_unix(&path).unwrap();
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(bind_unix(&file), Err(Error::Bind(msg)) if msg.contains("not a socket")));
    }
}
