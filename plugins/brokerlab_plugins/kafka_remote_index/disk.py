"""A simulated ``remote-log-index-cache`` directory: file names, byte sizes, nothing else.

Resident bytes are the bytes of every file present, whatever its state: ``<name>.tmp`` while a
fetch is being written, the final name while the entry is cached, and ``<name>.deleted`` from
the cleanup mark until the delayed deletion (spec §3.2, §8).

Renames replace an existing target, like Kafka's atomic move: if one segment is evicted twice
within ``fileDeleteDelayMs``, the second rename overwrites the first ``.deleted`` set, and the
first scheduled deletion then removes the second set early.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DELETED_SUFFIX",
    "INDEX_SUFFIXES",
    "TMP_SUFFIX",
    "CacheDirectory",
    "IndexFileSet",
    "index_file_names",
]

# In IndexType order: OFFSET, TIMESTAMP, TRANSACTION.
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
TMP_SUFFIX = ".tmp"
DELETED_SUFFIX = ".deleted"


def index_file_names(start_offset: int, uuid: str) -> tuple[str, str, str]:
    """``<startOffset>_<uuid>`` plus each index suffix, the offset in plain decimal: Kafka's
    ``RemoteIndexCache.generateFileNamePrefixForIndex`` writes ``startOffset + "_" + uuid``, with
    no zero padding (unlike its log segment file names)."""
    prefix = f"{start_offset}_{uuid}"
    return (prefix + INDEX_SUFFIXES[0], prefix + INDEX_SUFFIXES[1], prefix + INDEX_SUFFIXES[2])


@dataclass(frozen=True)
class IndexFileSet:
    """A complete set of the three index files of one segment, found at start-up."""

    uuid: str
    start_offset: int
    names: tuple[str, str, str]
    sizes: tuple[int, int, int]


class CacheDirectory:
    """Files by name with their sizes, and a corrupt flag that models a failed sanity check."""

    __slots__ = ("_bytes", "_corrupt", "_files")

    def __init__(self) -> None:
        self._files: dict[str, int] = {}
        self._corrupt: set[str] = set()
        self._bytes = 0

    @property
    def resident_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._files)

    def names(self) -> list[str]:
        return sorted(self._files)

    def exists(self, name: str) -> bool:
        return name in self._files

    def size(self, name: str) -> int:
        return self._files[name]

    def create(self, name: str, size: int) -> None:
        """Write ``name`` with ``size`` bytes, replacing any file of that name."""
        if size < 0:
            raise ValueError(f"negative file size {size} for {name}")
        self._drop(name)
        self._files[name] = size
        self._bytes += size

    def rename(self, src: str, dst: str) -> None:
        """Atomic move; replaces ``dst``. Raises FileNotFoundError if ``src`` does not exist."""
        if src not in self._files:
            raise FileNotFoundError(src)
        if src == dst:
            return
        self._drop(dst)
        self._files[dst] = self._files.pop(src)
        if src in self._corrupt:
            self._corrupt.discard(src)
            self._corrupt.add(dst)

    def delete(self, name: str) -> bool:
        """Delete-if-exists; True if a file was deleted."""
        return self._drop(name)

    def _drop(self, name: str) -> bool:
        size = self._files.pop(name, None)
        if size is None:
            return False
        self._bytes -= size
        self._corrupt.discard(name)
        return True

    def corrupt(self, name: str) -> None:
        """Make ``name`` fail its next sanity check (scenario 15)."""
        if name not in self._files:
            raise FileNotFoundError(name)
        self._corrupt.add(name)

    def is_corrupt(self, name: str) -> bool:
        return name in self._corrupt

    def recover(self) -> list[IndexFileSet]:
        """Start-up ``init()`` (spec §3.3): delete ``*.deleted`` and ``*.tmp``, delete every
        partial or corrupt set of index files, return the complete sets sorted by name.

        Files that are not index files are left alone. A corrupt file makes its set partial: the
        loader would fetch it again anyway, so dropping the set keeps start-up simple.
        """
        for name in list(self._files):
            if name.endswith((DELETED_SUFFIX, TMP_SUFFIX)):
                self.delete(name)
        groups: dict[str, dict[str, str]] = {}
        for name in self._files:
            for suffix in INDEX_SUFFIXES:
                if name.endswith(suffix):
                    groups.setdefault(name[: -len(suffix)], {})[suffix] = name
                    break
        found: list[IndexFileSet] = []
        for prefix in sorted(groups):
            members = groups[prefix]
            offset_text, sep, uuid = prefix.partition("_")
            names = tuple(members.get(suffix, "") for suffix in INDEX_SUFFIXES)
            complete = all(names) and not any(n in self._corrupt for n in names)
            if not (sep and uuid and offset_text.isdigit() and complete):
                for name in members.values():
                    self.delete(name)
                continue
            a, b, c = names
            found.append(
                IndexFileSet(
                    uuid=uuid,
                    start_offset=int(offset_text),
                    names=(a, b, c),
                    sizes=(self._files[a], self._files[b], self._files[c]),
                )
            )
        return found
