"""Seeded random streams: one independent generator per component, named, stable across runs."""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["stream"]


def stream(seed: int, *names: str) -> np.random.Generator:
    """A generator for the component ``names`` of the run with ``seed``.

    Keyed by name (CRC-32, not Python's salted ``hash``), so adding a ``[[topics]]`` table or a
    subscription does not shift the random numbers every other component sees.
    """
    return np.random.default_rng([seed, *(zlib.crc32(n.encode()) for n in names)])
