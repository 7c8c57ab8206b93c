#!/usr/bin/env python3
"""A read-only OCI distribution registry over plain HTTP, serving one OCI image layout directory
(as `podman save --format oci-dir` writes it), so that the CRI's PullImage pulls for real in
tests/integration/89_cri.sh. Usage: registry.py LAYOUT_DIR ADDRESS PORT. Serves GET and HEAD of
/v2/, /v2/<name>/manifests/<tag or digest> (a tag is the part after the last ':' of the layout's
org.opencontainers.image.ref.name) and /v2/<name>/blobs/<digest>; everything else is 404."""
import http.server, json, os, re, sys

layout, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
index = json.load(open(os.path.join(layout, "index.json")))

def blob_path(digest):
    m = re.fullmatch(r"sha256:([0-9a-f]{64})", digest)
    return os.path.join(layout, "blobs", "sha256", m.group(1)) if m else None

def manifest_for(ref):
    for m in index["manifests"]:
        name = m.get("annotations", {}).get("org.opencontainers.image.ref.name", "")
        if ref == m["digest"] or name.rsplit(":", 1)[-1] == ref:
            return m
    return None

class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body=b"", ctype="application/json", digest=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        if digest:
            self.send_header("Docker-Content-Digest", digest)
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path in ("/v2", "/v2/"):
            return self.reply(200, b"{}")
        m = re.fullmatch(r"/v2/(.+)/(manifests|blobs)/([^/]+)", path)
        if not m:
            return self.reply(404)
        kind, ref = m.group(2), m.group(3)
        if kind == "manifests":
            desc = manifest_for(ref)
            if not desc:
                return self.reply(404)
            body = open(blob_path(desc["digest"]), "rb").read()
            return self.reply(200, body, desc["mediaType"], desc["digest"])
        p = blob_path(ref)
        if not p or not os.path.exists(p):
            return self.reply(404)
        return self.reply(200, open(p, "rb").read(), "application/octet-stream", ref)

    do_HEAD = do_GET

    def log_message(self, fmt, *args):
        sys.stderr.write("registry: " + (fmt % args) + "\n")

http.server.ThreadingHTTPServer((address, port), Handler).serve_forever()
