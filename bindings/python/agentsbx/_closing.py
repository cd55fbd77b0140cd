"""The lifetime plumbing every handle class shares: `with`, `async with` and garbage
collection all end in the class's own close(), which must be idempotent."""

from __future__ import annotations

from types import TracebackType
from typing import Optional, TypeVar

T = TypeVar("T", bound="Closing")


class Closing:
    _handle: object

    def close(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    async def __aenter__(self: T) -> T:
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            try:
                self.close()
            except Exception:
                pass
