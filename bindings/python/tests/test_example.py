"""examples/python/agent_loop.py prints exactly the C harness's transcript."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, build_root, skip_unless_backend

SCRIPT = REPO / "examples" / "scripted_session.txt"
PY_HARNESS = REPO / "examples" / "python" / "agent_loop.py"


def c_harness() -> Path:
    root = build_root()
    binary = root / "examples" / "agent_loop" if root else None
    if binary is None or not binary.is_file():
        pytest.skip("the C harness (<build>/examples/agent_loop) is not built")
    return binary


def transcript(command: list[str], config: str, workdir: Path) -> subprocess.CompletedProcess[bytes]:
    """One harness run in a fresh workdir at a fixed path, so the local backend's root (which
    the transcript shows) is the same for both harnesses."""
    shutil.rmtree(workdir, ignore_errors=True)
    return subprocess.run(command + [str(SCRIPT), config], capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.mark.parametrize("backend", ["local", "ns"])
def test_same_transcript_as_the_c_harness(backend: str, tmp_path: Path) -> None:
    skip_unless_backend(backend)
    workdir = tmp_path / "ws"
    config = json.dumps({"backend": backend, "workdir": str(workdir)})
    c = transcript([str(c_harness())], config, workdir)
    py = transcript([sys.executable, str(PY_HARNESS)], config, workdir)
    assert (py.returncode, py.stderr.decode()) == (c.returncode, c.stderr.decode())
    assert py.stdout.decode() == c.stdout.decode()
    assert b">>> Bash {\"command\":\"sh greet.sh\"}\n<<< ok\nHello, sandbox\n\n" in py.stdout
    assert py.stdout.rstrip().splitlines()[-1].startswith(b"session: 13 tool calls, ")


def test_same_errors_as_the_c_harness(tmp_path: Path) -> None:
    for args in (["/no/such/script"], [str(SCRIPT), '{"backend":"local","bad":1}']):
        c = subprocess.run([str(c_harness()), *args], capture_output=True, timeout=60)
        py = subprocess.run([sys.executable, str(PY_HARNESS), *args], capture_output=True,
                            timeout=60)
        assert (py.returncode, py.stdout, py.stderr) == (c.returncode, c.stdout, c.stderr)
