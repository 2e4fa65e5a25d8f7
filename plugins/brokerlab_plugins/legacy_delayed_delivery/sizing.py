"""Two memory models for Roaring bitmaps and the maps that hold them (spec §3.7, §0.4).

* :data:`PORTABLE` is Pulsar's own estimate: the serialized (portable format) size of each 32-bit
  Roaring bitmap, 8 B of header plus 8 B per container plus the payload. Map overhead is not
  counted, exactly as ``getBufferMemoryUsage()`` does not count it.
* :data:`HEAP` estimates real bytes: the same payload plus CRoaring's per-bitmap and per-container
  structures, and (through :data:`BUCKET_BYTES` / :data:`LEDGER_SLOT_BYTES`) the Python maps that
  hold the bitmaps.

Both trackers use these same models, so the legacy/PIP-448 comparison is like for like.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyroaring import BitMap

__all__ = [
    "BUCKET_BYTES",
    "HEAP",
    "LEDGER_SLOT_BYTES",
    "PORTABLE",
    "BitmapModel",
    "heap_bytes",
]

ARRAY_MAX = 4096  # an array container holds at most this many values, then becomes a bitset
BITSET_BYTES = 8192

# One outer-map slot (SortedDict key + list slot + int object) plus the inner ledger dict.
BUCKET_BYTES = 80 + 224
# One inner-map slot: dict entry (hash, key, value) with growth slack, and the ledger id object.
LEDGER_SLOT_BYTES = 64


@dataclass(frozen=True)
class BitmapModel:
    """Bytes of one bitmap = header + per container (overhead + payload)."""

    header: int
    per_container: int
    bitset_overhead: int

    def container(self, cardinality: int) -> int:
        """Bytes of one container holding ``cardinality`` values (0 when empty)."""
        if cardinality <= 0:
            return 0
        if cardinality <= ARRAY_MAX:
            return self.per_container + 2 * cardinality
        return self.per_container + self.bitset_overhead + BITSET_BYTES

    def size(self, bitmap: BitMap) -> int:
        """Bytes of a whole bitmap (0 when empty, since trackers drop empty bitmaps)."""
        if not bitmap:
            return 0
        stats = bitmap.get_statistics()
        containers = int(stats["n_containers"])
        arrays = int(stats["n_values_array_containers"])
        bitsets = int(stats["n_bitset_containers"])
        runs = int(stats["n_bytes_run_containers"])
        return (
            self.header
            + containers * self.per_container
            + 2 * arrays
            + bitsets * (BITSET_BYTES + self.bitset_overhead)
            + runs
        )

    def add_delta(self, bitmap: BitMap, entry: int) -> int:
        """Size change caused by ``entry`` having just been added to ``bitmap``."""
        high = entry >> 16
        card = int(bitmap.range_cardinality(high << 16, (high + 1) << 16))
        delta = self.container(card) - self.container(card - 1)
        if len(bitmap) == 1:
            delta += self.header
        return delta


PORTABLE = BitmapModel(header=8, per_container=8, bitset_overhead=0)
# roaring_bitmap_t + Python wrapper ~96 B; per container key 2 + pointer 8 + typecode 1 + struct 16.
HEAP = BitmapModel(header=96, per_container=27, bitset_overhead=16)


def heap_bytes(bitmaps: dict[int, BitMap]) -> int:
    """Real bytes of a ledger -> bitmap map (per-subscription state, membership sets)."""
    return sum(LEDGER_SLOT_BYTES + HEAP.size(bm) for bm in bitmaps.values())
