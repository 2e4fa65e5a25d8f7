"""Keep the garbage collector off the objects a run starts with and the model it builds.

A run allocates millions of short-lived objects, so CPython's collector runs often, and each full
collection walks every tracked object in the process: the imported modules, the profile and the
whole built model (10,000 topics' state in ``many-topics``), none of which a run frees.
:func:`new_objects_only` freezes what exists when a run starts (``gc.freeze``), and its ``keep``
freezes the model once built, so collections walk only what the run itself created; it unfreezes
everything afterwards. :func:`collector_paused` keeps the collector off while the model is built.
Results do not change: reference counting still frees objects at once, and cycles the run
creates are still collected.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["collector_paused", "new_objects_only"]


@contextmanager
def new_objects_only() -> Iterator[Callable[[], None]]:
    """Collect only objects created inside the block.

    Yields ``keep``: calling it adds every object alive now to those left alone, for a model
    built inside the block that lives as long as the run.

    Leaves the collector alone when something else froze objects already (an application that
    freezes its startup heap, or an enclosing block), since unfreezing would undo that; ``keep``
    then does nothing.
    """
    if gc.get_freeze_count() or not gc.isenabled():
        yield _keep_nothing
        return
    gc.freeze()
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()


def _keep_nothing() -> None:
    pass


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection inside the block; for code that allocates objects to keep.

    Building a model of 10,000 topics allocates hundreds of objects per topic, all alive until
    the run ends, and the collector would walk them again and again as they pile up (a third
    of a second in ``many-topics``) to find nothing; ``keep`` them before the block ends, or the
    first collection after it walks them all once. A cycle that does become garbage inside is
    collected by the first collection after the block. A collector that was off stays off.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
