#!/usr/bin/env python3
"""A registry of one image, for the docker backend's pull tests (no Docker Hub here).

Usage: mini-registry.py PORT_FILE [PROGRAM...]
Listens on 127.0.0.1 (a port of its own, written to PORT_FILE once it listens) and speaks
just enough of the registry API v2 for an engine to pull: GET /v2/, the manifest (schema 2)
and the blobs of:
  agentsbx-pulltest:v1      two layers: Debian's static busybox with sh, cat and id, and a
                            file /hello.txt saying "pulled"
  agentsbx-brokenlayer:v1   the busybox layer and one of its own whose blob answers 404
The shared libraries each PROGRAM needs go into the busybox layer at their host paths (a
sanitizer build's helpers, which the backend binds into the container, are not static).
Anything else is the registry's 404 MANIFEST_UNKNOWN. Engines treat 127.0.0.0/8 registries
as insecure: plain HTTP is fine.
"""
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def tar_layer(entries):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data, mode, link in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if link:
                info.type = tarfile.SYMTYPE
                info.linkname = link
                t.addfile(info)
            elif data is None:
                info.type = tarfile.DIRTYPE
                info.mode = mode
                t.addfile(info)
            else:
                info.size = len(data)
                info.mode = mode
                t.addfile(info, io.BytesIO(data))
    diff = raw.getvalue()
    return diff, gzip.compress(diff, mtime=0)


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def library_entries(programs):
    """Tar entries for the shared libraries of programs (ldd's paths), with their dirs."""
    libs, dirs = set(), set()
    for program in programs:
        out = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
        libs.update(re.findall(r"(/\S+)", out))
    entries = []
    for lib in sorted(libs):
        parts = lib.strip("/").split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in dirs and d not in ("bin", "etc"):
                dirs.add(d)
                entries.append((d, None, 0o755, None))
        with open(lib, "rb") as f:
            entries.append((lib.strip("/"), f.read(), 0o755, None))
    return entries


with open("/bin/busybox", "rb") as f:
    busybox = f.read()
# Layers of this registry's own, never seen by the engine before: a layer it already has (an
# image of an earlier run still tagged under another port, say) would be reported as
# "Already exists" instead of being downloaded.
nonce = os.urandom(16).hex().encode()
layers = [
    tar_layer(library_entries(sys.argv[2:]) + [
              ("bin", None, 0o755, None), ("bin/busybox", busybox, 0o755, None),
               ("bin/sh", None, 0, "busybox"), ("bin/cat", None, 0, "busybox"),
               ("bin/id", None, 0, "busybox"), ("etc", None, 0o755, None),
               ("etc/passwd", b"root:x:0:0::/:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n",
                0o644, None), ("etc/agentsbx-nonce", nonce, 0o644, None)]),
    tar_layer([("hello.txt", b"pulled\n", 0o644, None), (".nonce", nonce, 0o644, None)]),
]
broken = tar_layer([("broken.txt", b"never arrives\n", 0o644, None)])
blobs = {}


def image(image_layers):
    """The manifest of an image of these layers; its config and layers become blobs."""
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": [sha(diff) for diff, _ in image_layers]},
    }).encode()
    blobs[sha(config)] = config
    for _, gz in image_layers:
        blobs[sha(gz)] = gz
    return json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                   "size": len(config), "digest": sha(config)},
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "size": len(gz), "digest": sha(gz)} for _, gz in image_layers],
    }).encode()


IMAGES = {"agentsbx-pulltest": image(layers), "agentsbx-brokenlayer": image([layers[0], broken])}
BROKEN = {"agentsbx-brokenlayer": sha(broken[1])}


class Registry(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, ctype="application/json", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message):
        self.send(status, json.dumps({"errors": [{"code": code, "message": message,
                                                  "detail": self.path}]}).encode())

    def do_GET(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts == ["v2"]:
            return self.send(200, b"{}")
        if len(parts) == 4 and parts[0] == "v2" and parts[2] == "manifests":
            name, ref = parts[1], parts[3]
            if name in IMAGES and (ref == "v1" or ref == sha(IMAGES[name])):
                return self.send(200, IMAGES[name],
                                 "application/vnd.docker.distribution.manifest.v2+json",
                                 {"Docker-Content-Digest": sha(IMAGES[name])})
            return self.error(404, "MANIFEST_UNKNOWN", "manifest unknown")
        if len(parts) == 4 and parts[0] == "v2" and parts[2] == "blobs":
            name, digest = parts[1], parts[3]
            if name in IMAGES and BROKEN.get(name) != digest and digest in blobs:
                return self.send(200, blobs[digest], "application/octet-stream",
                                 {"Docker-Content-Digest": digest})
            return self.error(404, "BLOB_UNKNOWN", "blob unknown to registry")
        self.error(404, "NAME_UNKNOWN", "repository name not known to registry")

    do_HEAD = do_GET


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass   # an engine that gives up on a blob (the broken layer) resets its connection


def main():
    server = Server(("127.0.0.1", 0), Registry)
    server.daemon_threads = True
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
