"""Active-cursor containers, the structures an entry cache asks "who is behind this position?".

* ``heap``: Pulsar's legacy ``ManagedCursorContainer``: slowest cursor in O(1), updates in
  O(log n), no rank query (without the legacy removal gap, spec §0.4).
* ``sorted-list``: PIP-430's ``ActiveManagedCursorContainer`` semantics: adds an O(1)
  ``count_at_or_before`` rank query, which expected read counts need (without the known stale
  counter of the original linked list, spec §4.1).
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import CursorContainerRecord, hookimpl
from brokerlab_plugins.cursor_containers.heap import HeapCursorContainer
from brokerlab_plugins.cursor_containers.sorted_list import SortedListCursorContainer

__all__ = ["HeapCursorContainer", "SortedListCursorContainer"]


@hookimpl
def brokerlab_cursor_containers() -> Iterator[CursorContainerRecord]:
    yield CursorContainerRecord(
        name="heap",
        description="Legacy min-heap by position: O(1) slowest, O(log n) updates, no rank query",
        factory=HeapCursorContainer,
    )
    yield CursorContainerRecord(
        name="sorted-list",
        description="PIP-430 container: positions in sorted groups with an O(1) rank query",
        factory=SortedListCursorContainer,
    )
