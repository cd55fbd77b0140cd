#!/usr/bin/env python3
"""A Docker Engine that goes away mid-exec, for tests/integration/test_docker.c.

Listens on the Unix socket given as argv[1] and answers just enough of the Engine API for the
docker backend to open a workspace: version, an empty container list, create, start (where it
connects to the container's keepalive control socket, as the real runner would) and exec
create. On exec start it plays the runner (connects to the exec's control socket), sends the
upgraded response with one stdout frame, and then closes the connection while the command
"runs": what a client sees when the engine stops or crashes mid-exec.
"""
import json
import os
import socket
import socketserver
import struct
import sys
from http.server import BaseHTTPRequestHandler

state = {"control_dir": None, "held": []}
RUNNER_DIR = "/.agentsbx/run"


def host_socket(container_path):
    return os.path.join(state["control_dir"], os.path.basename(container_path))


def connect_control(argv):
    """Connects to the --control-socket named in a runner's argv, as the runner would."""
    if "--control-socket" not in argv:
        return
    path = argv[argv.index("--control-socket") + 1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(host_socket(path))
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
        if "/containers/json" in self.path:
            return self.reply(200, [])
        if "/exec/" in self.path:
            return self.reply(200, {"Running": False, "ExitCode": 0})
        self.reply(404, {"message": "fake engine: no " + self.path})

    def do_DELETE(self):
        self.reply(204)

    def do_POST(self):
        body = self.body()
        if self.path.endswith("/containers/create"):
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
