"""Reads that take time (``broker/reads.py``): storage latency, shared reads, the in-flight limit,
read-size caps and back-off, each against a case computed by hand."""

from __future__ import annotations

import math
import textwrap
from functools import partial
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerlab import load_profile
from brokerlab.broker.broker import Broker, Counters
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import NO_KEY, Ledger
from brokerlab.broker.reads import (
    Backoff,
    InflightReadsLimiter,
    PendingReads,
    ReadOp,
    Storage,
    contiguous_runs,
)
from brokerlab.broker.simulator import wire_broker
from brokerlab.errors import ProfileError
from brokerlab.host import PluginHost
from brokerlab.metrics import invariants
from brokerlab.simulation import load_workload, simulate
from brokerlab.workloads import DurationSpec, StorageSpec, WorkloadSpec, parse_workload

MS = 1_000_000
HOST = PluginHost()
# Reads capped just below 1 MiB (never binding on 100 entries of 1 KiB): with a 1 MiB in-flight
# limit, a read's estimate then stays within the limit.
SMALL_READS = "dispatcherMaxReadSizeBytes=1048575"
# Every read misses (the disabled cache), so each read goes to storage.
NO_CACHE = ("sim.entryCache=disabled", "sim.ackStatePersister=unlimited")


def workload(storage: str, subscriptions: int = 1, backlog: int = 1000, batch: int = 1) -> str:
    """A topic whose producer is all but silent, with ``backlog`` entries of 1 KiB to read."""
    return textwrap.dedent(
        f"""
        name = "reads"
        duration_s = 5
        [storage]
        {storage}
        [[topics]]
        name = "t"
        rate = 0.001
        arrival = "constant"
        backlog = {backlog * batch}
        batch_size = {batch}
        message_size = {{ kind = "fixed", value = 1024 }}
        [[topics.subscriptions]]
        name = "s"
        count = {subscriptions}
        type = "Exclusive"
        initial_position = "earliest"
        [[topics.subscriptions.consumers]]
        """
    )


def broker(document: str, *settings: str) -> tuple[Broker, EventLoop]:
    spec = parse_workload(document, "reads.toml")
    assert isinstance(spec, WorkloadSpec)
    profile = load_profile(None, [*NO_CACHE, *settings], host=HOST)
    loop = EventLoop()
    b = wire_broker(profile, HOST.resolve(profile), loop, 0)
    b.build(spec)
    return b, loop


def test_reads_that_take_no_time_are_synchronous() -> None:
    b, loop = broker(workload(""))
    assert b.reads is None
    loop.run_until(0)
    assert b.counters.delivered == 1000  # ten reads of 100 entries, all at time zero
    assert b.counters.storage_read_ops == 10


def test_each_read_waits_for_its_latency_and_the_next_starts_after_it() -> None:
    """Fixed 10 ms per read, batches of 100: the n-th batch arrives at n x 10 ms."""
    b, loop = broker(workload("read_latency_ms = 10"))
    for n in range(1, 11):
        loop.run_until(n * 10 * MS - 1)
        assert b.counters.delivered == (n - 1) * 100
        loop.run_until(n * 10 * MS)
        assert b.counters.delivered == n * 100
    assert b.counters.storage_read_ops == 10
    assert b.counters.storage_wait_ns == 10 * 10 * MS


def test_transfer_time_adds_the_bytes_over_the_bandwidth() -> None:
    """10 ms per MiB and reads of 100 x 1 KiB: each read takes 100 KiB / 1 MiB x 10 ms."""
    b, loop = broker(workload("read_ms_per_mib = 10"))
    per_read = round(100 * 1024 * 10 * MS / (1024 * 1024))
    loop.run_until(10 * per_read - 1)
    assert b.counters.delivered == 900
    loop.run_until(10 * per_read)
    assert b.counters.delivered == 1000


def test_two_cursors_reading_the_same_entries_within_the_latency_share_one_read() -> None:
    """Two subscriptions in lockstep: every read of the second attaches to the first's storage
    read under way, so storage serves each entry once."""
    b, loop = broker(workload("read_latency_ms = 10", subscriptions=2))
    loop.run_until(10 * MS - 1)
    assert b.counters.storage_read_ops == 1
    assert b.counters.storage_entries_shared == 100
    loop.run_until(10 * MS)
    assert b.counters.delivered == 200
    loop.run_until(200 * MS)
    assert b.counters.delivered == 2000
    assert b.counters.storage_entries_read == 1000
    assert b.counters.storage_entries_shared == 1000
    assert b.counters.storage_read_ops == 10


def test_without_latency_the_same_two_cursors_read_everything_twice() -> None:
    b, loop = broker(workload("", subscriptions=2))
    loop.run_until(200 * MS)
    assert b.counters.storage_entries_read == 2000
    assert b.counters.storage_entries_shared == 0


def test_a_read_overlapping_one_under_way_reads_only_what_lies_outside_it() -> None:
    """Subscription b starts at entry 50: it asks for 50-149 while a's read of 0-99 is under way,
    takes 50-99 from a's read, and reads 100-149 once a's read is over, as Pulsar's
    PendingReadsManager does."""
    b, loop = broker(workload("read_latency_ms = 10", subscriptions=2))
    first, second = b.dispatchers
    ledger_id = b.topics[0].ledger.current_id
    second.cursor.read_position = (ledger_id, 50)
    loop.run_until(0)
    assert b.counters.storage_read_ops == 1  # a's 0-99; b waits on it
    assert b.counters.storage_entries_shared == 50
    loop.run_until(10 * MS)
    # a's read arrived; b's right-hand part (100-149) started then, a's next read (100-199) too,
    # and the later of the two attached to the earlier.
    assert first.cursor.read_position == (ledger_id, 100)
    assert second.cursor.read_position == (ledger_id, 50)
    loop.run_until(20 * MS)
    assert second.cursor.read_position == (ledger_id, 150)


def test_the_in_flight_limit_makes_a_read_wait_for_anothers_permits() -> None:
    """1 MiB limit. Before any read completes, a read of 100 entries is estimated at
    100 x (10 KiB + 64) = 1,030,400 bytes: b's first read does not fit beside a's and waits in
    line until a hands its entries over (10 ms). a's next read, estimated from the real entry size
    (100 x 1,088 bytes), does not fit beside b's old estimate and waits until b is done (20 ms).
    From then on both fit, and b's reads attach to a's again."""
    b, loop = broker(
        workload("read_latency_ms = 10", subscriptions=2),
        "managedLedgerMaxReadsInFlightSizeInMB=1",
        SMALL_READS,
    )
    loop.run_until(10 * MS)
    assert b.counters.delivered == 100
    assert b.counters.reads_in_flight_peak_bytes == 100 * (10 * 1024 + 64)
    loop.run_until(20 * MS - 1)
    assert b.counters.delivered == 100
    assert b.counters.storage_entries_shared == 0  # b began after a's read was over
    loop.run_until(20 * MS)
    assert b.counters.delivered == 200
    assert b.counters.read_permit_wait_ns == 10 * MS + 10 * MS
    loop.run_until(30 * MS - 1)
    assert b.counters.storage_entries_shared == 100  # a's second read attached to b's
    loop.run_until(30 * MS)
    assert b.counters.delivered == 400
    loop.run_until(1000 * MS)
    assert b.counters.delivered == 2000


def test_a_read_that_waits_past_the_timeout_fails_and_the_dispatcher_backs_off() -> None:
    """1 MiB limit, reads of 2 s. a's read of 100 entries (estimated 100 x 10,304 = 1,030,400
    bytes) holds the limit; b's equal read does not fit beside it and waits in line. At 1 s it has
    waited the timeout and fails; b backs off 0.5 s and reads 1 entry (10,304 bytes, which fits
    beside a's): entry 0, which a's read is fetching, so it waits for that read and both arrive
    at 2 s."""
    b, loop = _two_readers_of_two_seconds("1000")
    loop.run_until(1000 * MS - 1)
    assert b.counters.read_failures == 0
    loop.run_until(1000 * MS)
    assert b.counters.read_failures == 1
    loop.run_until(2000 * MS - 1)
    assert b.counters.delivered == 0
    loop.run_until(2000 * MS)
    assert b.counters.delivered == 101 and b.counters.storage_entries_shared == 1
    assert b.counters.read_failures == 1


def _two_readers_of_two_seconds(timeout_ms: str) -> tuple[Broker, EventLoop]:
    """Two subscriptions, reads of 2 s, a 1 MiB limit that holds one read of 100 entries."""
    return broker(
        workload("read_latency_ms = 2000", subscriptions=2),
        "managedLedgerMaxReadsInFlightSizeInMB=1",
        SMALL_READS,
        f"managedLedgerMaxReadsInFlightPermitsAcquireTimeoutMillis={timeout_ms}",
        "dispatcherReadFailureBackoffInitialTimeInMs=500",
    )


def _limiter(limit: int, max_line: int = 50_000) -> tuple[InflightReadsLimiter, Broker]:
    """A limiter of ``limit`` bytes on a broker whose own reads never start (the loop is not
    run): the grants it decides are the test's alone."""
    b, loop = broker(workload("read_latency_ms = 10"))
    return InflightReadsLimiter(limit, 0, max_line, loop, b.counters), b


def test_a_read_that_fits_is_granted_while_others_wait_in_line() -> None:
    """apache/pulsar ``InflightReadsLimiter.internalAcquire`` (at
    00c946d29b431ddba478f03df4c1e832f8e12685 and on master) grants whenever the remaining bytes
    cover the request, whoever waits: with 100 bytes, 80 are granted, 50 wait, and 20 are granted
    at once past them."""
    limiter, b = _limiter(100)
    first, waiting, small = (ReadOp(b.dispatchers[0], 0, []) for _ in range(3))
    assert limiter.acquire(first, 80) is True
    assert limiter.acquire(waiting, 50) is None
    assert limiter.acquire(small, 20) is True
    assert (first.permits, waiting.permits, small.permits) == (80, 0, 20)
    limiter.release(first)
    assert waiting.permits == 50  # the line moves once 50 are free


def test_a_read_above_the_whole_limit_gets_the_whole_limit_when_nothing_is_in_flight() -> None:
    """Pulsar master's ``InflightReadsLimiter`` grants a request above ``maxReadsInFlightSize``
    the whole limit when all of it is free, at once or from the line; the broker only warns about
    such a limit (``ManagedLedgerClientFactory``)."""
    limiter, b = _limiter(100)
    big, other = (ReadOp(b.dispatchers[0], 0, []) for _ in range(2))
    assert limiter.acquire(big, 150) is True and big.permits == 100
    assert limiter.acquire(other, 150) is None
    limiter.release(big)
    assert other.permits == 100


@pytest.mark.parametrize(("configured", "holds"), [(1, 4), (4, 4), (5, 8), (50_000, 65_536)])
def test_the_line_holds_its_size_rounded_up_to_a_power_of_two_and_at_least_four(
    configured: int, holds: int
) -> None:
    """The line is a JCTools ``SpscArrayQueue(capacity)``: ``max(capacity, 4)`` rounded up to a
    power of two places; the read after that fails at once."""
    limiter, b = _limiter(100, configured)
    assert limiter.acquire(ReadOp(b.dispatchers[0], 0, []), 100) is True
    for _ in range(holds):
        assert limiter.acquire(ReadOp(b.dispatchers[0], 0, []), 100) is None
    assert limiter.acquire(ReadOp(b.dispatchers[0], 0, []), 100) is False


@pytest.mark.parametrize("mb", ["0", "-1", "-9223372036854775808"])
def test_an_in_flight_limit_of_zero_or_less_turns_the_limiter_off(mb: str) -> None:
    """``managedLedgerMaxReadsInFlightSizeInMB`` is a ``long`` with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6), and apache/pulsar
    ``InflightReadsLimiter.java`` at 00c946d29b431ddba478f03df4c1e832f8e12685 enables the limiter
    only when ``maxReadsInFlightSize`` is above 0."""
    b, _ = broker(workload(""), f"managedLedgerMaxReadsInFlightSizeInMB={mb}")
    assert b.tuning.reads_in_flight_bytes == 0


def test_an_in_flight_limit_whose_bytes_overflow_a_java_long_is_refused() -> None:
    """Pulsar multiplies the key by 1024 * 1024 in a Java long (ManagedLedgerClientFactory);
    brokerlab refuses the values for which that overflows rather than model the wrap."""
    key = "managedLedgerMaxReadsInFlightSizeInMB"
    assert load_profile(None, [f"{key}={(2**63 - 1) // 2**20}"], host=HOST).get(key) == 2**43 - 1
    with pytest.raises(ProfileError, match=key):
        load_profile(None, [f"{key}={2**43}"], host=HOST)


@pytest.mark.parametrize("timeout", ["0", "-1"])
def test_a_permits_timeout_of_zero_or_less_waits_without_limit(timeout: str) -> None:
    """``managedLedgerMaxReadsInFlightPermitsAcquireTimeoutMillis`` is a ``long`` with no
    minimum; apache/pulsar ``InflightReadsLimiter.java`` at
    00c946d29b431ddba478f03df4c1e832f8e12685 schedules no timeout check
    (``scheduleTimeOutCheck``) and fails no queued read (``internalRelease``) when
    ``acquireTimeoutMillis`` is 0 or less. b's read of the timeout test above then waits in line
    without failing until a's read hands its entries over at 2 s, and arrives 2 s later."""
    b, loop = _two_readers_of_two_seconds(timeout)
    loop.run_until(2000 * MS)
    assert b.counters.read_failures == 0 and b.counters.delivered == 100
    loop.run_until(4000 * MS - 1)
    assert b.counters.delivered == 100
    loop.run_until(4000 * MS)
    assert b.counters.read_failures == 0 and b.counters.delivered == 200


SLOW_CONSUMER = """
    name = "slow-consumer"
    duration_s = 5
    [[topics]]
    name = "t"
    rate = 1000
    arrival = "constant"
    [[topics.subscriptions]]
    name = "s"
    [[topics.subscriptions.consumers]]
    rate = 1
    receiver_queue_size = 10
"""


@pytest.mark.parametrize(("threshold", "active"), [("100", False), ("-1", True)])
def test_a_backlogged_threshold_of_minus_one_keeps_cursors_active(
    threshold: str, active: bool
) -> None:
    """apache/pulsar ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6
    documents ``managedLedgerCursorBackloggedThreshold`` (a long with no minimum): "Set to -1 to
    disable this behavior". A consumer of one message a second falls hundreds of entries behind
    in a second; the periodic check then makes its cursor inactive at 100, and leaves it active
    at -1."""
    b, loop = broker(
        SLOW_CONSUMER,
        "cacheEvictionByExpectedReadCount=false",
        f"managedLedgerCursorBackloggedThreshold={threshold}",
    )
    loop.run_until(1000 * MS)
    assert b.dispatchers[0].cursor.unread_entries() > 100
    b.set_active(b.dispatchers[0], True)
    b._check_active_cursors()
    assert b.dispatchers[0].active is active


def test_a_full_line_fails_the_read_at_once() -> None:
    """A line of 1 holds 4 (JCTools' minimum): of six readers, one holds the permits, four wait
    and the sixth finds the line full."""
    b, loop = broker(
        workload("read_latency_ms = 10", subscriptions=6),
        "managedLedgerMaxReadsInFlightSizeInMB=1",
        SMALL_READS,
        "managedLedgerMaxReadsInFlightPermitsAcquireQueueSize=1",
    )
    loop.run_until(0)
    assert b.counters.read_failures == 1


def test_a_limit_below_one_read_is_kept_and_the_read_gets_all_of_it() -> None:
    """2 MiB against reads of up to 5 MiB: the limit stays 2 MiB (Pulsar only warns); a read
    estimated above it would hold all of it (the test above)."""
    b, _ = broker(workload(""), "managedLedgerMaxReadsInFlightSizeInMB=2")
    assert b.tuning.reads_in_flight_bytes == 2 * 1024 * 1024


def test_a_read_is_capped_at_the_read_size_over_the_average_entry_size() -> None:
    """dispatcherMaxReadSizeBytes = 10 KiB over 1 KiB entries: reads of 10 entries, not 100."""
    b, loop = broker(workload(""), "dispatcherMaxReadSizeBytes=10240")
    loop.run_until(0)
    assert b.counters.storage_read_ops == 100
    assert b.counters.delivered == 1000


def test_the_cap_still_reads_one_entry_when_an_entry_is_larger_than_it() -> None:
    b, loop = broker(workload(""), "dispatcherMaxReadSizeBytes=100")
    loop.run_until(0)
    assert b.counters.storage_read_ops == 1000


def test_backoff_doubles_up_to_its_maximum_and_halves_on_success() -> None:
    backoff = Backoff(100, 1000)
    assert [backoff.next_ns() for _ in range(6)] == [100, 200, 400, 800, 1000, 1000]
    backoff.reduce_to_half()
    assert backoff.next_ns() == 500
    for _ in range(10):
        backoff.reduce_to_half()
    assert backoff.next_ns() == 100


def test_a_restart_drops_the_reads_under_way_and_loses_nothing() -> None:
    """Reads under way when the broker restarts are dropped; the cursors recover and read again,
    and every message is still delivered, none after its acknowledgement."""
    document = workload("read_latency_ms = 10", subscriptions=2)
    document += '[[events]]\nat_s = 0.035\nkind = "restart"\n'
    b, loop = broker(document)
    loop.run_until(1000 * MS)
    metrics = b.finish()
    assert metrics["broker_restarts"] == 1
    assert metrics["redelivered_after_restart"] + metrics["redelivered"] > 0
    assert metrics["unacked_at_end"] == 0
    assert metrics["delivered_after_ack"] == metrics["lost"] == 0


@pytest.mark.parametrize("cache", ["pip430", "disabled"])
@pytest.mark.parametrize(
    "name",
    [
        "ack-holes-restart",
        "catch-up-fanout",
        "delayed-mixed",
        "key-shared-slow-consumer",
        "reconnect-storm",
        "tailing",
    ],
)
def test_built_in_workloads_keep_every_invariant_with_slow_storage(name: str, cache: str) -> None:
    """Each built-in workload, shortened, with lognormal read latency and a small in-flight
    limit: the invariants stay zero, and every storage read kept its reader waiting."""
    spec = load_workload(HOST, name)
    assert isinstance(spec, WorkloadSpec)
    spec = spec.model_copy(
        update={
            "duration_s": min(spec.duration_s, 10.0),
            "drain_s": 0.0,
            "storage": spec.storage.model_validate(
                {"read_latency_ms": {"kind": "lognormal", "median": 3, "sigma": 0.8}}
            ),
            "events": tuple(e for e in spec.events if e.at_s <= 10.0),
        }
    )
    settings = ["managedLedgerMaxReadsInFlightSizeInMB=4", f"sim.entryCache={cache}"]
    profile = load_profile(None, settings, host=HOST)
    metrics = simulate(profile, spec, 0, host=HOST).metrics
    for invariant in invariants():
        assert metrics[invariant] == 0, invariant
    assert metrics["delivered"] > 0
    assert (metrics["storage_wait_ms"] > 0) == (metrics["storage_read_ops"] > 0)
    if cache == "disabled":
        assert metrics["storage_read_ops"] > 0
    assert math.isfinite(metrics["latency_p99_ms"])


@given(
    requests=st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 60), st.integers(1, 40)),
        min_size=1,
        max_size=12,
    )
)
def test_pending_reads_serve_every_entry_once_and_in_time(
    requests: list[tuple[int, int, int]],
) -> None:
    """Reads of random ranges of one ledger at random instants, 10 ms per storage read: each
    requester is served exactly once, no sooner than it asked and within a bounded chain of reads
    (the part it attached to, then what lies outside it, which may attach again); each requested
    entry is either read from storage or taken from another read, never both; and a requester
    caches only entries it asked for."""
    loop = EventLoop()
    counters = Counters()
    storage = Storage(StorageSpec(read_latency_ms=DurationSpec(value=10)), 0)
    pending = PendingReads(storage, loop, counters)
    ledger = Ledger(1)
    for _ in range(200):
        ledger.fields.extend([1024, 0, NO_KEY, 1, 0])
    served: dict[int, list[int]] = {}
    cached: dict[int, list[int]] = {}
    asked: dict[int, tuple[int, list[int]]] = {}

    def ask(i: int, misses: list[int]) -> None:
        asked[i] = (loop.now_ns(), misses)
        pending.read(
            ledger,
            misses,
            lambda ids: cached.setdefault(i, []).extend(ids),
            lambda: served.setdefault(i, []).append(loop.now_ns()),
        )

    for i, (at_ms, first, length) in enumerate(requests):
        loop.at(at_ms * MS, partial(ask, i, list(range(first, first + length))))
    loop.run_until(10_000 * MS)
    assert sorted(served) == list(range(len(requests)))
    for i, times in served.items():
        asked_at, misses = asked[i]
        assert len(times) == 1
        assert asked_at <= times[0] <= asked_at + 10 * MS * (2 * len(requests) + 1)
        assert set(cached.get(i, [])) <= set(misses)
    requested = sum(len(misses) for _, misses in asked.values())
    assert counters.storage_entries_read + counters.storage_entries_shared == requested
    assert counters.storage_entries_read == sum(len(ids) for ids in cached.values())


@given(st.sets(st.integers(0, 200), min_size=1))
def test_contiguous_runs_cut_only_where_an_id_is_skipped(ids: set[int]) -> None:
    """Against the definition: the runs concatenate back to the ids, each run is consecutive,
    and consecutive runs are separated by at least one missing id."""
    entry_ids = sorted(ids)
    runs = contiguous_runs(entry_ids)
    assert [e for run in runs for e in run] == entry_ids
    assert all(run == list(range(run[0], run[-1] + 1)) for run in runs)
    assert all(a[-1] + 1 < b[0] for a, b in pairwise(runs))
