"""The per-subscription handle both topic-level trackers hand out (the PIP's design and the draft).

A handle is a thin proxy onto state its topic manager owns: every call but ``close`` fails once
the handle is closed, and ``close`` is idempotent and unregisters the subscription.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

__all__ = ["ClosableProxy", "TrackerClosedError"]

S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)
M = TypeVar("M", bound="_Registry[Any]")


class TrackerClosedError(RuntimeError):
    """An operation on a closed tracker (Pulsar throws ``IllegalStateException``)."""


class _Registry(Protocol[S_contra]):
    def unregister(self, state: S_contra) -> None: ...


class ClosableProxy(Generic[M, S]):
    """``manager``'s subscription ``state``, behind the closed check."""

    __slots__ = ("_closed", "_state", "manager")

    def __init__(self, manager: M, state: S) -> None:
        self.manager = manager
        self._state = state
        self._closed = False

    def _live(self) -> S:
        if self._closed:
            raise TrackerClosedError("DelayedDeliveryTracker is already closed")
        return self._state

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.manager.unregister(self._state)
