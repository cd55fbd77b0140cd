"""Skills and context offload. These functions are being merged from other branches: each test
skips while the loaded library lacks its function, and runs once it is there."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

import agentsbx
from conftest import requires

SKILL_MD = "---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nSay hello.\n"


def skill_dir(tmp_path: Path, name: str = "greeter") -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "SKILL.md").write_text(SKILL_MD.format(name=name, description="Greets people"))
    (d / "run.sh").write_text("echo hello\n")
    return d


def tar_gz(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def zip_of(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return out.getvalue()


@requires("sbx_skill_add")
@requires("sbx_skills_json")
def test_add_list_remove_skill(ws: agentsbx.Workspace, tmp_path: Path) -> None:
    assert ws.skills() == []
    assert "Skill" not in [t["name"] for t in ws.tools()]
    assert ws.add_skill(skill_dir(tmp_path)) == "greeter"
    skills = ws.skills()
    assert [(s["name"], s["description"], s["trusted"]) for s in skills] == [
        ("greeter", "Greets people", True)]
    assert ws.read_file(skills[0]["dir"] + "/run.sh") == b"echo hello\n"
    assert "Skill" in [t["name"] for t in ws.tools()]
    assert "greeter" in ws.instructions()
    with pytest.raises(agentsbx.ExistsError):
        ws.add_skill(tmp_path / "greeter")
    ws.remove_skill("greeter")
    assert ws.skills() == []
    with pytest.raises(agentsbx.NotFoundError):
        ws.remove_skill("greeter")


@requires("sbx_skill_add_archive")
@requires("sbx_skills_json")
def test_skill_archives(ws: agentsbx.Workspace) -> None:
    md = SKILL_MD.format(name="packed", description="From a tarball")
    assert ws.add_skill_archive(tar_gz({"packed/SKILL.md": md})) == "packed"
    md = SKILL_MD.format(name="zipped", description="From a zip")
    assert ws.add_skill_archive(zip_of({"SKILL.md": md}), format="zip") == "zipped"
    assert [s["name"] for s in ws.skills()] == ["packed", "zipped"]


@requires("sbx_skill_add_archive")
def test_an_escaping_archive_is_refused(ws: agentsbx.Workspace) -> None:
    md = SKILL_MD.format(name="evil", description="Escapes")
    with pytest.raises(agentsbx.InvalidArgumentError, match="../escape"):
        ws.add_skill_archive(tar_gz({"SKILL.md": md, "../escape": "x"}), format="tar.gz")


@requires("sbx_offload_context")
def test_offload_context(ws: agentsbx.Workspace) -> None:
    path = ws.offload_context("s1", [{"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": "hello"}])
    assert path == "sessions/s1/context.jsonl"
    ws.offload_context("s1", {"role": "user", "content": "again"})
    lines = ws.read_file(path).decode().splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["hi", "hello", "again"]


@requires("sbx_offload_tool_result")
def test_offload_tool_result(ws: agentsbx.Workspace) -> None:
    first = ws.offload_tool_result("s1", "call_1", "a long tool output")
    assert first == "sessions/s1/tool_result-call_1.txt"
    assert ws.read_file(first) == b"a long tool output"
    second = ws.offload_tool_result("s1", "call_1", b"another")
    assert second != first and ws.read_file(second) == b"another"


@requires("sbx_offload_data")
def test_offload_data_is_content_addressed(ws: agentsbx.Workspace) -> None:
    data = b"\x89PNG not really"
    url = ws.offload_data("image/png", data)
    digest = hashlib.sha256(data).hexdigest()
    assert url.startswith("workspace:///data/" + digest)
    assert ws.offload_data("image/png", data) == url
    assert ws.read_file(url[len("workspace:///"):]) == data
