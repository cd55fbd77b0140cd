"""The workspace manager: (user, agent, session) -> workspace, with isolation policies, an idle
TTL and reattach across processes (sbx_manager_*)."""

from __future__ import annotations

from ctypes import byref, c_int, c_void_p
from typing import Any, Optional

from . import _native
from ._closing import Closing
from ._util import check, encode, json_text, opt_encode, out_pointer, take_json
from .workspace import Config, Workspace


class Manager(Closing):
    """Hands out workspaces by (user, agent, session). config is the JSON object of
    sbx_manager_open: workspace, base_dir, policy (per_agent | per_session | per_user), ttl_s,
    sweep_interval_s, max_workspaces.

    A workspace get() returns is shared: close() (or leaving its `with`) gives it back to the
    manager, whose idle TTL then starts; it does not stop the sandbox.
    """

    def __init__(self, config: Config = None) -> None:
        self._handle: Optional[c_void_p] = None
        handle = c_void_p()
        check(_native.load().sbx_manager_open(None if config is None else json_text(config),
                                              byref(handle)))
        self._handle = handle

    def _live(self) -> c_void_p:
        if self._handle is None:
            raise ValueError("the manager is closed")
        return self._handle

    def _borrowed(self, handle: c_void_p) -> Workspace:
        return Workspace(_borrowed=handle, _release=self._give_back)

    def _give_back(self, handle: c_void_p) -> None:
        if self._handle is not None:
            check(_native.load().sbx_manager_release(self._handle, handle))

    def get(self, user_id: str, agent_id: Optional[str] = None,
            session_id: Optional[str] = None, workspace_id: Optional[str] = None) -> Workspace:
        """The workspace for this conversation, opened (or attached to) once and shared."""
        handle = c_void_p()
        check(_native.load().sbx_manager_get(self._live(), encode(user_id), opt_encode(agent_id),
                                             opt_encode(session_id), opt_encode(workspace_id),
                                             byref(handle)))
        return self._borrowed(handle)

    def get_by_id(self, workspace_id: str) -> Workspace:
        """A workspace by its full id (for operators: it bypasses the per-user scoping)."""
        handle = c_void_p()
        check(_native.load().sbx_manager_get_by_id(self._live(), encode(workspace_id),
                                                   byref(handle)))
        return self._borrowed(handle)

    def close_workspace(self, workspace_id: str) -> None:
        """Closes a workspace now and stops its sandbox (unless another process holds it)."""
        check(_native.load().sbx_manager_close(self._live(), encode(workspace_id)))

    def list(self) -> list[dict[str, Any]]:
        out = out_pointer()
        check(_native.load().sbx_manager_list(self._live(), byref(out)))
        return take_json(out)  # type: ignore[no-any-return]

    def gc(self) -> int:
        """Sweeps now; returns how many workspaces it closed."""
        closed = c_int(0)
        check(_native.load().sbx_manager_gc(self._live(), byref(closed)))
        return closed.value

    def close(self) -> None:
        """Stops the sweeper and closes this manager's workspaces (detached sandboxes keep
        running for the next process). Idempotent."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _native.load().sbx_manager_free(handle)

