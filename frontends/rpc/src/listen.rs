//! The three transports: a Unix socket (0600) and TCP on 127.0.0.1, each peer checked by
//! superpi-client's [`peer`] (this user only, never a kernel's confined tool), and stdio.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use superpi_client::peer::{self, Admit};
use tokio::net::{TcpListener, UnixListener, UnixStream};

use crate::Error;
use crate::conn::Shared;
use crate::server::serve;

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
    loop {
        let (stream, _) = listener.accept().await.map_err(|e| Error::Io(e.to_string()))?;
        let checked = match stream.peer_cred() {
            Ok(cred) => peer::check_unix(cred.uid(), cred.pid()),
            Err(err) => Err(peer::PeerRefused::Unknown(err.to_string())),
        };
        if let Err(refused) = checked {
            tracing::warn!("refused a connection: {refused}");
            continue;
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
    loop {
        let (stream, from) = listener.accept().await.map_err(|e| Error::Io(e.to_string()))?;
        let local = stream.local_addr().map_err(|e| Error::Io(e.to_string()))?;
        let checked = tokio::task::spawn_blocking(move || peer::check_tcp(local, from, Admit::ThisUser))
            .await
            .unwrap_or_else(|e| Err(peer::PeerRefused::Unknown(e.to_string())));
        if let Err(refused) = checked {
            tracing::warn!(%from, "refused a TCP connection: {refused}");
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

/// Serves one client on stdin/stdout until stdin closes.
pub async fn serve_stdio(shared: Arc<Shared>, max_line: usize) -> Result<(), Error> {
    serve(tokio::io::stdin(), tokio::io::stdout(), shared, max_line).await
}

#[cfg(test)]
mod tests {
    use super::*;

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
