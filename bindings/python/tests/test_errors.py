"""Failures raise the class chosen by the code, with the code and sbx_last_error()'s message."""

from __future__ import annotations

import ctypes
import threading

import pytest

import agentsbx
from agentsbx import _native, errors


def test_bad_config_key_is_a_config_error() -> None:
    with pytest.raises(agentsbx.ConfigError) as info:
        agentsbx.Workspace({"backend": "local", "no_such_key": 1})
    assert info.value.code == -errors.SBX_ECONFIG
    assert "no_such_key" in info.value.message
    assert info.value.name == "SBX_ECONFIG"
    assert "[SBX_ECONFIG]" in str(info.value)


def test_malformed_json_text_is_a_config_error() -> None:
    with pytest.raises(agentsbx.ConfigError):
        agentsbx.Workspace('{"backend": ')


def test_unknown_backend_is_a_backend_error() -> None:
    with pytest.raises(agentsbx.BackendError) as info:
        agentsbx.Workspace({"backend": "nosuchbackend"})
    assert info.value.code == -errors.SBX_EBACKEND
    assert "nosuchbackend" in info.value.message


def test_missing_file_is_not_found(ws: agentsbx.Workspace) -> None:
    with pytest.raises(agentsbx.NotFoundError) as info:
        ws.read_file("missing.txt")
    assert info.value.code == -errors.SBX_ENOENT
    assert "missing.txt" in info.value.message


def test_path_outside_the_root_is_an_escape(ws: agentsbx.Workspace) -> None:
    for path in ("../outside", "/etc/passwd"):
        with pytest.raises(agentsbx.EscapeError) as info:
            ws.write_file(path, b"x")
        assert info.value.code == -errors.SBX_EESCAPE


def test_exclusive_write_of_an_existing_file(ws: agentsbx.Workspace) -> None:
    ws.write_file("f", b"1")
    with pytest.raises(agentsbx.ExistsError):
        ws.write_file("f", b"2", exclusive=True)


def test_every_error_is_an_agentsbx_error(ws: agentsbx.Workspace) -> None:
    with pytest.raises(agentsbx.AgentSbxError):
        ws.stat("missing")


def test_invalid_argument_is_also_a_value_error(ws: agentsbx.Workspace) -> None:
    with pytest.raises(ValueError):
        ws.tool_call("Bash", {"command": "true"}, session_id=".bad")


def test_unknown_code_falls_back_to_the_base_class() -> None:
    e = errors.error_for(-errors.SBX_EIO, "broken")
    assert type(e) is agentsbx.AgentSbxError and e.code == -5 and e.name == "SBX_EIO"


def test_errors_are_per_thread(ws: agentsbx.Workspace) -> None:
    """sbx_last_error() is thread-local: each thread sees its own failure's message."""
    messages: dict[str, str] = {}

    def fail(path: str) -> None:
        try:
            ws.read_file(path)
        except agentsbx.NotFoundError as e:
            messages[path] = e.message

    threads = [threading.Thread(target=fail, args=(f"missing-{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(path in message for path, message in messages.items()) and len(messages) == 8


def test_a_missing_symbol_fails_only_when_called() -> None:
    libc = _native.Library(ctypes.CDLL(None), "libc")  # has none of the sbx_ functions
    assert not libc.has("sbx_skill_add")
    stand_in = libc.sbx_skill_add  # looking it up is fine
    with pytest.raises(agentsbx.NotSupportedError, match="sbx_skill_add is not exported"):
        stand_in(None, b"x", None)
    with pytest.raises(AttributeError):
        libc.not_an_api_function  # noqa: B018


def test_strerror_and_versions() -> None:
    assert agentsbx.strerror(-errors.SBX_EESCAPE)
    assert agentsbx.version().count(".") == 2
    assert agentsbx.abi_version() == 1
