#!/usr/bin/env python3
"""An HTTPS server for the tests of secrets bound to hosts (72_inject.sh), on one address of this
machine: it records the request line and headers of every request it gets as a JSON line in LOG
(never echoing them back: what it saw must not reach the guest), answers "ok", and serves the
git repositories under GITROOT through `git http-backend` (smart HTTP), asking for Basic
credentials first (401) as a git host does, and refusing any whose password is not PASSWORD.

Usage: https_recorder.py ADDR PORT CERT KEY LOG [GITROOT PASSWORD]
Prints "ready" on stdout once it listens."""
import base64
import json
import os
import ssl
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

addr, port, cert, key, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
gitroot = sys.argv[6] if len(sys.argv) > 6 else None
password = sys.argv[7] if len(sys.argv) > 7 else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # its head and body are two writes: no 40 ms delayed-ACK wait

    def log_message(self, *args):
        pass

    def record(self):
        with open(log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "headers": dict(self.headers.items())}) + "\n")

    def reply(self, code, body=b"ok\n", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            return self.rfile.read(n)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def git(self, data):
        auth = self.headers.get("Authorization", "")
        ok = False
        if auth.startswith("Basic "):
            user, _, pw = base64.b64decode(auth[6:]).decode(errors="replace").partition(":")
            ok = pw == password
        if not ok:
            self.reply(401, b"credentials, please\n", [("WWW-Authenticate", 'Basic realm="git"')])
            return
        path, _, query = self.path.partition("?")
        env = dict(os.environ, GIT_PROJECT_ROOT=gitroot, GIT_HTTP_EXPORT_ALL="1",
                   PATH_INFO=path, QUERY_STRING=query, REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   CONTENT_LENGTH=str(len(data)), REMOTE_USER="x", REMOTE_ADDR=addr)
        out = subprocess.run(["git", "http-backend"], input=data, env=env,
                             capture_output=True).stdout
        head, _, body = out.partition(b"\r\n\r\n")
        code, headers = 200, []
        for line in head.decode().split("\r\n"):
            k, _, v = line.partition(": ")
            if k.lower() == "status":
                code = int(v.split()[0])
            elif k:
                headers.append((k, v))
        self.reply(code, body, headers)

    def handle_any(self):
        self.record()
        data = self.body()
        if gitroot and ".git" in self.path:
            self.git(data)
        else:
            self.reply(200)

    do_GET = do_POST = do_PUT = handle_any


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv = ThreadingHTTPServer((addr, port), Handler)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
