"""Keep the garbage collector off the objects a run starts with.

A run allocates millions of short-lived objects, so CPython's collector runs often, and each full
collection walks every tracked object in the process: the imported modules, the profile and the
whole built model (10,000 topics' state in ``many-topics``), none of which a run frees.
:func:`new_objects_only` freezes what exists when a run starts (``gc.freeze``), so collections
walk only what the run itself created, and unfreezes it afterwards. Results do not change:
reference counting still frees objects at once, and cycles the run creates are still collected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["new_objects_only"]


@contextmanager
def new_objects_only() -> Iterator[None]:
    """Collect only objects created inside the block.

    Leaves the collector alone when something else froze objects already (an application that
    freezes its startup heap, or an enclosing block), since unfreezing would undo that.
    """
    if gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
