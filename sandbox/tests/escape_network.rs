//! Escape attempts over sockets, with the default settings (no network granted), as root:
//! each must be refused, and the listener the test holds must receive nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};

use common::{python, root_env};

fn nothing_received(socket: &UnixDatagram) -> bool {
    socket.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    socket.recv(&mut buf).err().map(|e| e.kind()) == Some(ErrorKind::WouldBlock)
}

#[tokio::test]
async fn tcp_to_a_local_listener_is_refused_every_way() {
    let env = root_env();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "import socket\nfor how in ['connect', 'sendto']:\n    try:\n        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n        s.connect(('127.0.0.1', {port})) if how == 'connect' else s.sendto(b'x', socket.MSG_FASTOPEN, ('127.0.0.1', {port}))\n        print(how, 'CONNECTED')\n    except OSError as e:\n        print(how, 'refused', e.errno)"
    );
    let out = env.bash(&python(&script)).await;
    assert!(out.output.contains("connect refused 1") && out.output.contains("sendto refused 1"), "{out:?}");
    assert!(!out.output.contains("CONNECTED"), "{out:?}");
    let out = env.bash(&format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")).await;
    assert!(out.is_error && !out.output.contains("CONNECTED"), "{out:?}");
    assert_eq!(listener.accept().err().map(|e| e.kind()), Some(ErrorKind::WouldBlock));
}

#[tokio::test]
async fn udp_sendto_is_refused() {
    let env = root_env();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_nonblocking(true).unwrap();
    let port = socket.local_addr().unwrap().port();
    let script = format!(
        "import socket\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))\n    print('SENT')\nexcept OSError as e:\n    print('refused', e.errno)"
    );
    let out = env.bash(&format!("{}echo hi > /dev/udp/127.0.0.1/{port} && echo SENT", python(&script))).await;
    assert!(out.output.contains("refused 1") && !out.output.contains("SENT"), "{out:?}");
    let mut buf = [0u8; 16];
    assert_eq!(socket.recv(&mut buf).err().map(|e| e.kind()), Some(ErrorKind::WouldBlock));
}

#[tokio::test]
async fn no_socket_of_another_family_is_made() {
    let env = root_env();
    let script = "import socket\nfor name, fam, kind in [('inet', 2, 1), ('inet6', 10, 1), ('netlink', 16, 3), ('packet', 17, 3), ('vsock', 40, 1), ('bluetooth', 31, 5)]:\n    try:\n        socket.socket(fam, kind)\n        print(name, 'MADE')\n    except OSError as e:\n        print(name, 'refused', e.errno)";
    let out = env.bash(&python(script)).await;
    assert!(!out.output.contains("MADE"), "{out:?}");
    for name in ["inet", "inet6", "netlink", "packet", "vsock", "bluetooth"] {
        assert!(out.output.contains(&format!("{name} refused 1")), "{name}: {out:?}");
    }
}

/// A pathname datagram socket like /dev/log or one beside the kernel's socket: seccomp cannot
/// see the address in sendto or sendmsg, so no Unix datagram socket is made without network.
#[tokio::test]
async fn datagrams_to_a_pathname_unix_socket_are_refused() {
    let env = root_env();
    let targets = [env.data_dir.join("log.sock"), env.workspace.join("planted-log.sock")];
    let sockets: Vec<UnixDatagram> = targets.iter().map(|p| UnixDatagram::bind(p).unwrap()).collect();
    for target in &targets {
        let t = target.display();
        let script = format!(
            "import socket\nattempts = {{\n  'dgram': lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', '{t}'),\n  'raw': lambda: socket.socket(socket.AF_UNIX, socket.SOCK_RAW).sendto(b'x', '{t}'),\n  'pair': lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0].sendto(b'x', '{t}'),\n  'pair-sendmsg': lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0].sendmsg([b'x'], [], 0, '{t}'),\n  'stream-pair': lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)[0].sendto(b'x', '{t}'),\n  'seqpacket-pair': lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)[0].sendmsg([b'x'], [], 0, '{t}'),\n}}\nfor name, attempt in attempts.items():\n    try:\n        attempt()\n        print(name, 'SENT')\n    except OSError as e:\n        print(name, 'refused', e.errno)"
        );
        let out = env.bash(&python(&script)).await;
        for name in ["dgram", "raw", "pair", "pair-sendmsg"] {
            assert!(out.output.contains(&format!("{name} refused 1")), "{name}: {out:?}");
        }
        // A stream pair refuses an address itself; a seqpacket pair ignores it and sends to
        // its peer: neither reaches the socket.
        assert!(out.output.contains("stream-pair refused 106"), "{out:?}");
        let out = env.bash(&format!("logger --socket {t} --socket-errors=on pwned && echo SENT")).await;
        assert!(!out.output.contains("SENT"), "{out:?}");
    }
    for socket in &sockets {
        assert!(nothing_received(socket), "a datagram reached the socket");
    }
    // Pairs for talking among a tool's own processes keep working.
    let out = env
        .bash(&python(
            "import socket\na, b = socket.socketpair()\na.send(b'ping')\nprint(b.recv(4).decode())\nc, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)\nc.send(b'pong')\nprint(d.recv(4).decode())",
        ))
        .await;
    assert!(!out.is_error && out.output == "ping\npong\n", "{out:?}");
}

#[tokio::test]
async fn abstract_unix_sockets_outside_the_call_are_refused_even_with_network() {
    let env = root_env();
    let name = format!("superpi-escape-{}", std::process::id());
    let stream = UnixListener::bind_addr(&SocketAddr::from_abstract_name(format!("{name}-s")).unwrap()).unwrap();
    stream.set_nonblocking(true).unwrap();
    let dgram = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(format!("{name}-d")).unwrap()).unwrap();
    let script = format!(
        "import socket\ntry:\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n    s.connect('\\0{name}-s')\n    print('CONNECTED')\nexcept OSError as e:\n    print('connect refused', e.errno)\ntry:\n    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', '\\0{name}-d')\n    print('SENT')\nexcept OSError as e:\n    print('sendto refused', e.errno)"
    );
    for network in [false, true] {
        let mut call = env.call("bash", serde_json::json!({ "command": python(&script) }));
        call.network = network;
        let out = env.sandbox.run(call, tokio_util::sync::CancellationToken::new(), None).await;
        assert!(out.output.contains("connect refused"), "network {network}: {out:?}");
        assert!(out.output.contains("sendto refused"), "network {network}: {out:?}");
        assert!(!out.output.contains("CONNECTED") && !out.output.contains("SENT"), "{out:?}");
    }
    assert_eq!(stream.accept().err().map(|e| e.kind()), Some(ErrorKind::WouldBlock));
    assert!(nothing_received(&dgram));
}

#[test]
fn the_battery_as_an_ordinary_user() {
    common::rerun_as_nobody(module_path!(), &[]);
}
