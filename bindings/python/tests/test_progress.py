"""Progress of a slow open (sbx_workspace_open_with): the docker backend's image pull,
served by the fake engine of the C suites (tests/docker/fake-engine.py), which answers a pull
with a recorded stream and garbage between its lines. No real engine is needed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsbx

from conftest import REPO, requires, state_dir

pytestmark = requires("sbx_workspace_open_with")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short directory: the control sockets live below the workdir (108-byte paths)."""
    path = Path(tempfile.mkdtemp(prefix="sbx-py-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_engine(tmp_path: Path) -> Iterator[str]:
    sock = tmp_path / "engine.sock"
    proc = subprocess.Popen([sys.executable, str(REPO / "tests/docker/fake-engine.py"),
                             str(sock)])
    try:
        for _ in range(500):
            if sock.exists():
                break
            time.sleep(0.01)
        assert sock.exists(), "the fake engine did not start"
        yield str(sock)
    finally:
        proc.kill()
        proc.wait()


def config(tmp_path: Path, sock: str, image: str) -> dict[str, Any]:
    workdir = tmp_path / "ws"
    workdir.mkdir(exist_ok=True)
    return {"backend": "docker", "workdir": str(workdir),
            "docker": {"image": image, "host": f"unix://{sock}", "exec": "api"}}


def test_events_arrive_on_the_opening_thread(tmp_path: Path, fake_engine: str) -> None:
    events: list[dict[str, Any]] = []
    threads: set[int] = set()

    def on_progress(event: dict[str, Any]) -> None:
        threads.add(threading.get_ident())
        events.append(event)

    with agentsbx.Workspace(config(tmp_path, fake_engine, "fakepull/image:v1"),
                            on_progress=on_progress) as ws:
        assert ws.backend == "docker"
    assert threads == {threading.get_ident()}
    layers = [e for e in events if e["status"] == "Pull complete"]
    assert [e["item"] for e in layers] == ["56f0be66f5a3", "2335174eaf5d"]
    downloads = [e for e in events if e["status"] == "Downloading"]
    assert [(e["current"], e["total"]) for e in downloads] == [
        (108, 108), (36564, 1027922), (1027922, 1027922)]
    assert events[0] == {"phase": "pull", "subject": "fakepull/image:v1", "item": "v1",
                         "status": "Pulling from fakepull/image", "current": 0, "total": 0}
    assert events[-1]["status"] == "Waiting \x1b[2J"   # the recorded garbage, as it came
    assert events[-2]["status"] == "Status: Downloaded newer image for fakepull/image:v1"


def test_a_failed_pull_is_the_error(tmp_path: Path, fake_engine: str) -> None:
    events: list[dict[str, Any]] = []
    with pytest.raises(agentsbx.AgentSbxError, match="pull image 'fakepull/error:v1': "
                                                     "unknown blob"):
        agentsbx.Workspace(config(tmp_path, fake_engine, "fakepull/error:v1"),
                           on_progress=events.append)
    assert any(e["status"] == "Pulling fs layer" for e in events)


def test_a_raising_callback_fails_the_open_and_closes(tmp_path: Path, fake_engine: str) -> None:
    calls = 0

    def on_progress(event: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1
        raise ValueError("listener broke")

    cfg = config(tmp_path, fake_engine, "fakepull/image:v1")
    with pytest.raises(ValueError, match="listener broke"):
        agentsbx.Workspace(cfg, on_progress=on_progress)
    assert calls == 1   # not called again after it raised
    # Closed again: the control folder holds no socket of a live workspace.
    left = list((state_dir(cfg["workdir"]) / "docker").glob("*.sock"))
    assert left == []
    assert os.path.isdir(cfg["workdir"])
