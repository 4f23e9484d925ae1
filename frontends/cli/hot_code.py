#!/usr/bin/env python3
"""Writes frontend-hot.ld: the functions superpi-frontend runs to start each role and answer a
first request, placed together at the start of its code when it is linked (build.rs).

Why: an idle frontend's memory is mostly the pages of code it touched, and a page fault on a
cached file maps its neighbours too (64 KiB of fault-around, whole page-cache folios), so code
run at start that is scattered over the binary keeps most of it resident. Gathered, it is about
1.6 MB. The symbols are the release build's; functions missing from the list (new code, other
hashes after a toolchain or dependency update) only land in the ordinary text: the layout gets
worse, never wrong. Run it again after such changes, or when frontend_idle's last line
reports that the list has decayed, through the release step that also relinks and measures:

    cargo xtask hot-layout

It runs each role as frontend_idle does (acp and mcp: initialize; rpc --unix: session.list;
gateway: GET /v1/models; agui: a GET), under valgrind's callgrind, against a kernel of its own
in a temporary directory, and lists every function callgrind saw run in superpi-frontend.
Needs valgrind (callgrind_control) and binutils (nm).
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "target" / "release"
OUT = HERE / "frontend-hot.ld"


def wait_for(predicate, what, seconds=120):
    deadline = time.time() + seconds
    while not predicate():
        if time.time() > deadline:
            sys.exit(f"hot_code: {what} did not happen in {seconds} s")
        time.sleep(0.05)


def stdio_role(args, messages):
    """A stdio role: the messages written, the answer to the first read, then a quiet second."""

    def drive(proc):
        for message in messages:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            if "id" in message:
                proc.stdout.readline()
        time.sleep(1)

    return args, drive, True


def rpc_role(sock_path):
    def drive(proc):
        wait_for(lambda: os.path.exists(sock_path), "the rpc socket")
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock_path)
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"session.list","params":{}}\n')
        s.recv(65536)
        time.sleep(1)
        s.close()

    return ["rpc", "--unix", sock_path], drive, False


def http_role(role, path):
    def drive(proc):
        line = proc.stdout.readline().decode()
        address = line.strip().rsplit(" ", 1)[-1].removeprefix("http://").rstrip("/")
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n".encode())
            while s.recv(65536):
                pass
        time.sleep(1)

    return [role, "--port", "0"], drive, False


def record(tmp):
    env = dict(os.environ)
    for name in ["data", "config", "run"]:
        (tmp / name).mkdir()
    (tmp / "workspace").mkdir()
    env.update(
        SUPERPI_DATA_DIR=str(tmp / "data"),
        SUPERPI_CONFIG_DIR=str(tmp / "config"),
        SUPERPI_RUNTIME_DIR=str(tmp / "run"),
        RUST_LOG="warn",
    )
    kernel = subprocess.Popen([TARGET / "superpi", "kernel"], env=env, stdout=subprocess.DEVNULL)
    wait_for(lambda: (tmp / "run" / "kernel.sock").exists(), "the kernel socket")
    acp_init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}}}
    mcp_init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "hot_code", "version": "0"}}}
    roles = {
        "acp": stdio_role(["acp"], [acp_init]),
        "mcp": stdio_role(["mcp"], [mcp_init, {"jsonrpc": "2.0", "method": "notifications/initialized"}]),
        "rpc": rpc_role(str(tmp / "rpc.sock")),
        "gateway": http_role("gateway", "/v1/models"),
        "agui": http_role("agui", "/agui/v1/none"),
    }
    outputs = {}
    try:
        for role, (args, drive, stdio) in roles.items():
            out = tmp / f"{role}.callgrind"
            proc = subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
                 TARGET / "superpi-frontend", *args],
                env=env, cwd=tmp / "workspace", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL)
            drive(proc)
            if stdio:
                proc.stdin.close()
                proc.wait(120)
            else:
                subprocess.run(["callgrind_control", "--dump", str(proc.pid)], check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            outputs[role] = sorted(tmp.glob(f"{role}.callgrind*"))
            print(f"hot_code: {role} recorded", file=sys.stderr)
    finally:
        kernel.kill()
        kernel.wait()
    return outputs


def executed(files):
    names = set()
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            m = re.match(r"c?fn=\(\d+\) (.+)$", line)
            if m:
                names.add(m.group(1).strip())
    return names


def main():
    nm = subprocess.run(["nm", "--defined-only", TARGET / "superpi-frontend"], capture_output=True, text=True,
                        check=True).stdout
    defined = {p[2] for p in (line.split() for line in nm.splitlines()) if len(p) == 3 and p[1] in "tTwW"}
    roles_of = {}
    with tempfile.TemporaryDirectory(prefix="superpi-hot-code-") as tmp:
        for role, files in record(Path(tmp)).items():
            for name in executed(files) & defined:
                roles_of.setdefault(name, set()).add(role)
    # Code every role runs first, then each set of roles' own, so one role's pages stay together.
    order = sorted(roles_of, key=lambda n: (-len(roles_of[n]), sorted(roles_of[n]), n))
    # A Rust (legacy) symbol is named by its hash alone, which is unique; a v0 one (std's) cut
    # at 120 characters (a nested generic's name runs to thousands; the cut takes its siblings
    # along). New hashes after a toolchain or dependency update match nothing: the code is then
    # laid out as without this file until it is written again.
    patterns = []
    for name in order:
        legacy = re.search(r"17h[0-9a-f]{16}E$", name)
        if legacy:
            pattern = "*" + legacy.group(0)
        elif len(name) > 120:
            pattern = name[:120] + "*"
        else:
            pattern = name
        if pattern not in patterns:
            patterns.append(pattern)
    lines = [
        "/* Written by hot_code.py: what superpi-frontend runs to start each role and answer a",
        "   first request, gathered at the start of its code. Do not edit; run it again. */",
        "SECTIONS",
        "{",
        "  .text.hot :",
        "  {",
        *[f"    *(.text.{p})" for p in patterns],
        "  }",
        "}",
        "INSERT BEFORE .text;",
    ]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"hot_code: {len(order)} functions ({len(patterns)} patterns) written to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
