#!/usr/bin/env python3
"""Test client for the guest agent protocol (src/proto/agent.h), spoken through the VMM's
vsock bridge: CONNECT <port>, then length-prefixed frames. Used by integration tests to drive
guest-init directly (hello, poweroff) without going through space itself.

usage: agent.py VSOCK_SOCKET hello|poweroff"""
import os
import os
import socket
import struct
import sys
import time
import time

HELLO, HELLO_REPLY, ERROR, POWEROFF, ACK = 1, 2, 3, 4, 5


def frame(kind, payload=b""):
    return struct.pack("<IHH", len(payload), kind, 0) + payload


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise SystemExit("agent closed the connection")
        buf += chunk
    return buf


def read_frame(s):
    length, kind, _ = struct.unpack("<IHH", read_exact(s, 8))
    return kind, read_exact(s, length)


def main():
    path, op = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    s.sendall(b"CONNECT 1024\n")
    line = b""
    while not line.endswith(b"\n"):
        c = s.recv(1)
        if not c:
            raise SystemExit("vsock bridge closed before OK")
        line += c
    if not line.startswith(b"OK "):
        raise SystemExit("bad handshake reply: %r" % line)
    client = b"agent.py"
    # Hello (protocol 3): version, client, 32 bytes of entropy for the guest's RNG, host time in
    # ns, the sandbox id ("": keep the hostname) and flags (0: no image to mount).
    hello = (struct.pack("<II", 3, len(client)) + client + os.urandom(32) +
             struct.pack("<QII", time.time_ns(), 0, 0))
    s.sendall(frame(HELLO, hello))
    kind, payload = read_frame(s)
    if kind != HELLO_REPLY:
        raise SystemExit("expected HelloReply, got type %d" % kind)
    version, = struct.unpack_from("<I", payload)
    n, = struct.unpack_from("<I", payload, 4)
    agent = payload[8:8 + n].decode()
    m, = struct.unpack_from("<I", payload, 8 + n)
    hostname = payload[12 + n:12 + n + m].decode()
    if op == "hello":
        print("version=%d agent=%s hostname=%s" % (version, agent, hostname))
        return
    if op == "poweroff":
        s.sendall(frame(POWEROFF))
        kind, _ = read_frame(s)
        if kind != ACK:
            raise SystemExit("expected Ack, got type %d" % kind)
        print("poweroff acknowledged")
        return
    raise SystemExit("unknown op " + op)


if __name__ == "__main__":
    main()
