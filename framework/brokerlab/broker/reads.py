"""Reads that take time: storage latency, shared storage reads and the in-flight limit.

With a workload whose ``[storage]`` reads take time, or a profile that sets
``managedLedgerMaxReadsInFlightSizeInMB``, a dispatcher's read is an operation under way
(:class:`ReadOp`) rather than a call that returns its entries, and the dispatcher issues no other
read until it completes, as Pulsar's dispatchers wait for their pending read. Three parts, each
following Pulsar's managed ledger:

* :class:`Storage`, the bookies: a storage read takes a drawn latency plus the transfer time of
  its bytes. The bookies are shared by every broker of a cluster.
* :class:`PendingReads` (``PendingReadsManager``): a storage read of entries that another read of
  the same ledger is already fetching waits for that one instead of reading them again. A read
  inside one under way attaches to it; a read that overlaps one attaches to it and, once it
  completes, reads what lies outside it (left, then right), as Pulsar does.
* :class:`InflightReadsLimiter`: before it looks into the cache, a read acquires its estimated
  size (entries x (the topic's last read entry size + 64 bytes)) from a broker-wide budget, and
  gives it back once its entries are handed to consumers. A read that does not fit waits in line
  (first come, first served); one that waits longer than the acquire timeout, or finds the line
  full, fails, and the dispatcher backs off.

With none of that configured the broker builds no :class:`Reads` and dispatchers read
synchronously, as they always did.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Final

from brokerlab.broker.durations import Durations
from brokerlab.broker.ledger import SIZE, Ledger
from brokerlab.broker.streams import stream
from brokerlab.workloads.model import StorageSpec

if TYPE_CHECKING:
    from brokerlab.broker.broker import Counters
    from brokerlab.broker.dispatcher import Dispatcher
    from brokerlab.broker.events import EventLoop

__all__ = [
    "READ_OVERHEAD_PER_ENTRY",
    "Backoff",
    "InflightReadsLimiter",
    "PendingReads",
    "ReadOp",
    "Reads",
    "Storage",
    "contiguous_runs",
]

MS: Final = 1_000_000
MIB: Final = 1024 * 1024
# Pulsar's BOOKKEEPER_READ_OVERHEAD_PER_ENTRY and DEFAULT_ESTIMATED_ENTRY_SIZE
# (RangeEntryCacheImpl).
READ_OVERHEAD_PER_ENTRY: Final = 64
DEFAULT_ESTIMATED_ENTRY_SIZE: Final = 10 * 1024


def contiguous_runs(entry_ids: list[int]) -> list[list[int]]:
    """``entry_ids`` (ascending) cut where they skip an id: each run is one storage read, since
    BookKeeper reads a range of entries (Pulsar's PIP-430 cache reads each missing run apart)."""
    runs: list[list[int]] = []
    run: list[int] = []
    previous = -2
    for entry_id in entry_ids:
        if entry_id != previous + 1 and run:
            runs.append(run)
            run = []
        run.append(entry_id)
        previous = entry_id
    if run:
        runs.append(run)
    return runs


class Storage:
    """The bookies: how long a read takes. Draws come from the run's ``storage`` stream."""

    __slots__ = ("_latency", "_ns_per_byte")

    def __init__(self, spec: StorageSpec, seed: int) -> None:
        self._latency = Durations(spec.read_latency_ms, stream(seed, "storage", "read"))
        self._ns_per_byte = spec.read_ms_per_mib * MS / MIB

    def read_ns(self, size: int) -> int:
        """The time one read of ``size`` bytes takes."""
        return self._latency.next_ns() + round(size * self._ns_per_byte)


class ReadOp:
    """A dispatcher's read under way: the runs it reads, in the order they are dispatched.

    ``source`` is the dispatcher's NEW, REPLAY or DELAYED; ``waiting`` counts the storage reads it
    still waits for; ``wanted`` is its estimate for the in-flight limit and ``permits`` what it
    holds of it.
    """

    __slots__ = (
        "cancelled",
        "dispatcher",
        "permits",
        "queued_ns",
        "runs",
        "source",
        "started_ns",
        "waiting",
        "wanted",
    )

    def __init__(
        self, dispatcher: Dispatcher, source: int, runs: list[tuple[Ledger, int, int]]
    ) -> None:
        self.dispatcher = dispatcher
        self.source = source
        self.runs = runs
        self.waiting = 0
        self.wanted = 0
        self.permits = 0
        self.started_ns = 0
        self.queued_ns = 0
        # Set when the broker restarted or unloaded the topic meanwhile: what arrives is dropped.
        self.cancelled = False

    def entries(self) -> int:
        return sum(last - first + 1 for _, first, last in self.runs)


class _StorageRead:
    """One storage read under way: entries ``first..last`` of one ledger, and who waits for it."""

    __slots__ = ("first", "last", "waiters")

    def __init__(self, first: int, last: int) -> None:
        self.first = first
        self.last = last
        self.waiters: list[Callable[[], None]] = []


class PendingReads:
    """The storage reads under way on one broker, per ledger, shared by concurrent readers."""

    __slots__ = ("_by_ledger", "_counters", "_in_flight", "_loop", "_storage")

    def __init__(self, storage: Storage, loop: EventLoop, counters: Counters) -> None:
        self._storage = storage
        self._loop = loop
        self._counters = counters
        self._by_ledger: dict[int, list[_StorageRead]] = {}
        self._in_flight = 0

    def read(
        self,
        ledger: Ledger,
        misses: list[int],
        on_read: Callable[[list[int]], None],
        done: Callable[[], None],
    ) -> None:
        """Fetch the entries ``misses`` (ascending ids of ``ledger``); ``done`` runs when they are
        here. ``on_read(ids)`` runs first for the entries this call read from storage itself (the
        caller caches them), not for those it took from another read."""
        first, last = misses[0], misses[-1]
        under_way = self._by_ledger.setdefault(ledger.ledger_id, [])
        left: _StorageRead | None = None
        right: _StorageRead | None = None
        both: _StorageRead | None = None
        for read in under_way:
            if read.first <= first and last <= read.last:
                self._counters.storage_entries_shared += len(misses)
                read.waiters.append(done)
                return
            if read.first <= last and first <= read.last:
                missing_left = first < read.first
                missing_right = last > read.last
                if missing_left and missing_right:
                    both = read
                elif missing_right:
                    right = read
                else:
                    left = read
        # As Pulsar: an overlap that leaves only a right-hand part is preferred, then a left one.
        base = right or left or both
        if base is None:
            self._start(ledger, misses, on_read, done)
            return
        inside = [e for e in misses if base.first <= e <= base.last]
        before = [e for e in misses if e < base.first]
        after = [e for e in misses if e > base.last]
        self._counters.storage_entries_shared += len(inside)
        base.waiters.append(lambda: self._read_rest(ledger, before, after, on_read, done))

    def _read_rest(
        self,
        ledger: Ledger,
        before: list[int],
        after: list[int],
        on_read: Callable[[list[int]], None],
        done: Callable[[], None],
    ) -> None:
        """After an overlapping read: the entries left of it, then those right of it."""
        if before:
            then: Callable[[], None] = (
                done if not after else (lambda: self.read(ledger, after, on_read, done))
            )
            self.read(ledger, before, on_read, then)
        else:
            self.read(ledger, after, on_read, done)

    def _start(
        self,
        ledger: Ledger,
        misses: list[int],
        on_read: Callable[[list[int]], None],
        done: Callable[[], None],
    ) -> None:
        read = _StorageRead(misses[0], misses[-1])
        read.waiters.append(done)
        self._by_ledger[ledger.ledger_id].append(read)
        size = 0
        for entry_id in misses:
            size += ledger.field(entry_id, SIZE)
        counters = self._counters
        counters.storage_read_ops += 1
        counters.storage_entries_read += len(misses)
        counters.storage_bytes_read += size
        self._in_flight += 1
        if self._in_flight > counters.storage_reads_in_flight_peak:
            counters.storage_reads_in_flight_peak = self._in_flight
        when = self._loop.now_ns() + self._storage.read_ns(size)
        self._loop.at(when, lambda: self._complete(ledger, read, misses, on_read))

    def _complete(
        self,
        ledger: Ledger,
        read: _StorageRead,
        misses: list[int],
        on_read: Callable[[list[int]], None],
    ) -> None:
        self._in_flight -= 1
        under_way = self._by_ledger.get(ledger.ledger_id)
        # Gone from the map first, as in Pulsar: a read from here on starts afresh (or hits the
        # cache this read fills).
        if under_way is not None and read in under_way:
            under_way.remove(read)
            if not under_way:
                del self._by_ledger[ledger.ledger_id]
        on_read(misses)
        for waiter in read.waiters:
            waiter()

    def forget(self, ledger_ids: list[int]) -> None:
        """A topic was closed: later reads of its ledgers start afresh. The reads under way still
        complete (the bookies answer), and their readers, cancelled, drop what arrives."""
        for ledger_id in ledger_ids:
            self._by_ledger.pop(ledger_id, None)


class InflightReadsLimiter:
    """The broker-wide budget of bytes read and not yet handed to consumers, with its line.

    As Pulsar's ``InflightReadsLimiter`` (master): ``acquire`` grants at once whatever fits, even
    while others wait (the line is no queue for fairness, only for reads that did not fit); a
    read estimated above the whole limit is granted the whole limit when nothing else is in
    flight. Otherwise the read joins the line, which ``release`` serves in order: a head that
    waited longer than ``timeout_ns`` fails, one that can be granted is. A read that finds the
    line full fails at once. The line holds ``max_line`` reads rounded up to a power of two, at
    least 4 (JCTools' ``SpscArrayQueue``).
    """

    __slots__ = (
        "_counters",
        "_free",
        "_line",
        "_loop",
        "_max_line",
        "_timeout_ns",
        "limit",
    )

    def __init__(
        self, limit: int, timeout_ns: int, max_line: int, loop: EventLoop, counters: Counters
    ) -> None:
        self.limit = limit
        self._free = limit
        self._timeout_ns = timeout_ns
        self._max_line = max(4, 1 << max(0, max_line - 1).bit_length())
        self._loop = loop
        self._counters = counters
        self._line: deque[ReadOp] = deque()

    def acquire(self, op: ReadOp, permits: int) -> bool | None:
        """True: granted now. None: ``op`` waits in line (``Dispatcher.permits_granted`` or
        ``Dispatcher.read_failed`` follows). False: the line is full; the read fails."""
        op.wanted = permits
        if self._grantable(permits):
            self._take(op)
            return True
        if len(self._line) >= self._max_line:
            return False
        op.queued_ns = self._loop.now_ns()
        self._line.append(op)
        if self._timeout_ns > 0:
            self._loop.at(op.queued_ns + self._timeout_ns, self._expire)
        return None

    def _grantable(self, permits: int) -> bool:
        free = self._free
        return free >= permits or (permits > self.limit and free == self.limit)

    def _take(self, op: ReadOp) -> None:
        # An estimate above the whole limit holds the whole limit.
        op.permits = min(op.wanted, self.limit)
        self._free -= op.permits
        used = self.limit - self._free
        if used > self._counters.reads_in_flight_peak_bytes:
            self._counters.reads_in_flight_peak_bytes = used

    def release(self, op: ReadOp) -> None:
        """``op`` handed its entries on (or was dropped): its permits go back, the line moves."""
        self._free += op.permits
        op.permits = 0
        line = self._line
        now = self._loop.now_ns()
        while line:
            head = line[0]
            if self._timeout_ns > 0 and now - head.queued_ns > self._timeout_ns:
                line.popleft()
                self._fail(head)
            elif self._grantable(head.wanted):
                line.popleft()
                self._take(head)
                self._counters.read_permit_wait_ns += now - head.queued_ns
                # Through the event loop: a grant that completes at once releases in turn, and a
                # long line must not become a deep chain of calls.
                self._loop.soon(partial(head.dispatcher.permits_granted, head))
            else:
                break

    def _expire(self) -> None:
        """The timeout check: reads at the head of the line that waited too long fail."""
        line = self._line
        now = self._loop.now_ns()
        while line and now - line[0].queued_ns >= self._timeout_ns:
            self._fail(line.popleft())

    def _fail(self, op: ReadOp) -> None:
        self._counters.read_permit_wait_ns += self._loop.now_ns() - op.queued_ns
        op.dispatcher.read_failed(op)


class Backoff:
    """Pulsar's ``Backoff`` as a dispatcher uses it after failed reads: each failure waits twice
    as long as the last (from ``initial_ns`` up to ``max_ns``); each success halves the next
    wait, down to ``initial_ns``."""

    __slots__ = ("_next_ns", "initial_ns", "max_ns")

    def __init__(self, initial_ns: int, max_ns: int) -> None:
        self.initial_ns = initial_ns
        self.max_ns = max(max_ns, initial_ns)
        self._next_ns = initial_ns

    def next_ns(self) -> int:
        wait = self._next_ns
        self._next_ns = min(self.max_ns, wait * 2)
        return wait

    def reduce_to_half(self) -> None:
        self._next_ns = max(self.initial_ns, self._next_ns // 2)


class Reads:
    """One broker's read path when reads take time: its pending storage reads, its in-flight
    limiter (None when ``managedLedgerMaxReadsInFlightSizeInMB`` is 0) and the topics' last read
    entry sizes, from which the limiter estimates a read."""

    __slots__ = ("estimated_entry_size", "limiter", "pending")

    def __init__(self, pending: PendingReads, limiter: InflightReadsLimiter | None) -> None:
        self.pending = pending
        self.limiter = limiter
        # Per topic, as each managed ledger's entry cache keeps it in Pulsar.
        self.estimated_entry_size: dict[str, int] = {}

    def estimate(self, topic: str, entries: int) -> int:
        """The limiter's estimate of a read of ``entries`` entries of ``topic``."""
        size = self.estimated_entry_size.get(topic, DEFAULT_ESTIMATED_ENTRY_SIZE)
        return entries * (size + READ_OVERHEAD_PER_ENTRY)
