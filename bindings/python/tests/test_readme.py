"""The README documents every public member of Workspace: a method missing from it is one
users do not know they have (set_network was)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import agentsbx

README = Path(__file__).resolve().parents[1] / "README.md"


def public_members(cls: type) -> list[str]:
    return sorted(name for name, _ in inspect.getmembers(cls) if not name.startswith("_"))


def test_every_workspace_member_is_documented() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [name for name in public_members(agentsbx.Workspace)
               if not re.search(rf"(`|ws\.){re.escape(name)}[`(]", text)]
    assert not missing, f"bindings/python/README.md does not mention: {missing}"
