#!/usr/bin/env python3
"""A Docker Engine that goes away mid-exec, for tests/integration/test_docker.c.

Listens on the Unix socket given as argv[1] and answers just enough of the Engine API for the
docker backend to open a workspace: version, an empty container list, create, start (where it
connects to the container's keepalive control socket, as the real runner would) and exec
create. On exec start it plays the runner (connects to the exec's control socket), sends the
upgraded response with one stdout frame, and then closes the connection while the command
"runs": what a client sees when the engine stops or crashes mid-exec.

GET /info lists two runtimes: runc, the default, and "runsc-closed", gVisor registered
without --host-uds=open; a create on runsc-closed is an error (the backend must refuse it
first).

Images named "fakepull/..." are missing until pulled: create answers 404 "No such image", and
POST /images/create answers with a pull stream in the Engine's format (recorded from a real
pull) cut into odd chunks, with garbage between the lines: text that is not JSON, JSON that
is not an object, members of the wrong types, a 2 MiB line. "fakepull/error" ends its stream
with the engine's error line instead.
"""
import json
import os
import socket
import socketserver
import struct
import sys
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote

state = {"control_dir": None, "held": [], "pulled": set()}

PULL_STREAM = [
    {"status": "Pulling from fakepull/image", "id": "v1"},
    {"status": "Pulling fs layer", "progressDetail": {}, "id": "56f0be66f5a3"},
    {"status": "Pulling fs layer", "progressDetail": {}, "id": "2335174eaf5d"},
    {"status": "Downloading", "progressDetail": {"current": 108, "total": 108},
     "progress": "[=====>]     108B/108B", "id": "2335174eaf5d"},
    {"status": "Download complete", "progressDetail": {}, "id": "2335174eaf5d"},
    {"status": "Downloading", "progressDetail": {"current": 36564, "total": 1027922},
     "progress": "[=>      ]  36.56kB/1.028MB", "id": "56f0be66f5a3"},
    {"status": "Downloading", "progressDetail": {"current": 1027922, "total": 1027922},
     "progress": "[=======>]  1.028MB/1.028MB", "id": "56f0be66f5a3"},
    {"status": "Download complete", "progressDetail": {}, "id": "56f0be66f5a3"},
    {"status": "Extracting", "progressDetail": {"current": 1027922, "total": 1027922},
     "id": "56f0be66f5a3"},
    {"status": "Pull complete", "progressDetail": {}, "id": "56f0be66f5a3"},
    {"status": "Pull complete", "progressDetail": {}, "id": "2335174eaf5d"},
    {"status": "Digest: sha256:827ee9e164123c11442c7048acd8b1c80e561e305b20cfda6efe643f56eeb7da"},
    {"status": "Status: Downloaded newer image for fakepull/image:v1"},
]
GARBAGE = [b"this is not json", b"[1, 2, 3]", b"\"a string\"", b"{\"status\": ",
           b'{"status": 12, "id": ["x"], "progressDetail": {"current": "5", "total": -1}}',
           b'{"status": "Waiting \\u001b[2J", "progressDetail": 7}',
           b"{" + b" " * (2 << 20) + b"}"]


def pull_stream(image):
    """The answer's bytes: every recorded line with garbage in between."""
    lines = []
    for i, event in enumerate(PULL_STREAM):
        lines.append(json.dumps(event).encode())
        lines.append(GARBAGE[i % len(GARBAGE)])
    if image.startswith("fakepull/error"):
        lines = lines[:6] + [json.dumps({"errorDetail": {"message": "unknown blob"},
                                         "error": "unknown blob"}).encode()]
    return b"\r\n".join(lines)
RUNNER_DIR = "/.agentsbx/run"


def host_socket(container_path):
    return os.path.join(state["control_dir"], os.path.basename(container_path))


def connect_control(argv):
    """Connects to the --control-socket named in a runner's argv, as the runner would."""
    if "--control-socket" not in argv:
        return
    path = argv[argv.index("--control-socket") + 1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # Through the folder's fd, as the library binds it: the state folder's docker/ may lie
    # deeper than a Unix socket address allows.
    dfd = os.open(os.path.dirname(host_socket(path)), os.O_PATH | os.O_DIRECTORY)
    try:
        s.connect(f"/proc/self/fd/{dfd}/{os.path.basename(path)}")
    finally:
        os.close(dfd)
    state["held"].append(s)  # open until we exit: the "runner" never reports


class Engine(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"null")

    def do_GET(self):
        if self.path == "/version":
            return self.reply(200, {"ApiVersion": "1.41", "Version": "fake"})
        if self.path == "/v1.41/info":
            return self.reply(200, {"DefaultRuntime": "runc", "Runtimes": {
                "runc": {"path": "runc"},
                "runsc-closed": {"path": "/usr/bin/runsc", "runtimeArgs": ["--platform=ptrace"]}}})
        if "/containers/json" in self.path:
            return self.reply(200, [])
        if "/exec/" in self.path:
            return self.reply(200, {"Running": False, "ExitCode": 0})
        self.reply(404, {"message": "fake engine: no " + self.path})

    def do_DELETE(self):
        self.reply(204)

    def do_POST(self):
        body = self.body()
        if "/images/create?" in self.path:
            image = unquote(self.path.split("fromImage=")[1].split("&")[0]).split(":")[0]
            data = pull_stream(image)
            if not image.startswith("fakepull/error"):
                state["pulled"].add(image)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            # Odd chunks: lines arrive split anywhere.
            for i in range(0, len(data), 1009):
                self.wfile.write(data[i:i + 1009])
                self.wfile.flush()
            self.close_connection = True
            return
        if self.path.endswith("/containers/create"):
            image = body["Image"]
            if body["HostConfig"].get("Runtime") == "runsc-closed":
                return self.reply(500, {"message": "fake engine: created on runsc-closed"})
            if image.startswith("fakepull/") and image.split(":")[0] not in state["pulled"]:
                return self.reply(404, {"message": "No such image: " + image})
            for m in body["HostConfig"]["Mounts"]:
                if m["Target"] == RUNNER_DIR:
                    state["control_dir"] = m["Source"]
            state["entrypoint"] = body.get("Entrypoint") or []
            return self.reply(201, {"Id": "fakecontainer"})
        if self.path.endswith("/start") and "/containers/" in self.path:
            connect_control(state["entrypoint"])
            return self.reply(204)
        if self.path.endswith("/exec"):
            state["exec_cmd"] = body["Cmd"]
            return self.reply(201, {"Id": "fakeexec"})
        if self.path.endswith("/exec/fakeexec/start"):
            connect_control(state["exec_cmd"])
            payload = b"partial\n"
            self.wfile.write(b"HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\n"
                             b"Upgrade: tcp\r\n\r\n")
            self.wfile.write(struct.pack(">BxxxL", 1, len(payload)) + payload)
            self.wfile.flush()
            self.close_connection = True
            return
        self.reply(404, {"message": "fake engine: no " + self.path})


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    path = sys.argv[1]
    # Listening before the socket appears under its name: the test connects once it exists.
    temp = path + ".tmp"
    for p in (path, temp):
        if os.path.exists(p):
            os.unlink(p)
    with Server(temp, Engine) as server:
        os.rename(temp, path)
        server.serve_forever()


if __name__ == "__main__":
    main()
