"""Shared pieces of the ack-state conformance modules: a hand-moved clock, managed ledgers of a
given shape, and persisters built the way a broker builds them.

Imported by the ``test_managed_cursor_*`` modules (pytest puts this folder on ``sys.path``); it
holds no tests itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from ack_state_support import FakeClock, FakeState

from brokerlab.broker.cursor import Cursor
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.profiles.loader import Profile
from brokerlab.profiles.model import BrokerSettings
from brokerlab.protocols import PluginContext, Position
from brokerlab_plugins.ack_state.range_count import new_range_count_persister
from brokerlab_plugins.ack_state.settings import NAMESPACE, AckStateSettings
from brokerlab_plugins.ack_state.whole_state import WholeStatePersister

NS = 1_000_000_000
Range = tuple[Position, Position]


# The unit tests' hand-moved clock and ack state given by its parts (tests/support).
Clock = FakeClock
State = FakeState


class GivenIds(LedgerIds):
    """Ledger ids handed out from a fixed list (BookKeeper ids need not be consecutive)."""

    def __init__(self, ids: Iterable[int]) -> None:
        super().__init__()
        self._ids = iter(ids)

    def next(self) -> int:
        return next(self._ids)


def managed_ledger(layout: Mapping[int, int]) -> ManagedLedger:
    """A managed ledger whose ledgers are ``layout`` (ledger id -> entries), in id order."""
    ids = sorted(layout)
    ml = ManagedLedger("t", GivenIds(ids), max(layout[ids[0]], 1))
    for i, lid in enumerate(ids):
        # The first append of a ledger rolls the previous one over: it is full at its size.
        ml.max_entries_per_ledger = max(layout[ids[i - 1]] if i else layout[lid], 1)
        for e in range(layout[lid]):
            if e == 1:
                ml.max_entries_per_ledger = layout[lid]
            ml.append(100, 0)
    assert {lid: len(ml.ledgers[lid]) for lid in ml.ledger_ids()} == dict(layout)
    return ml


def cursor_on(entries: int, per_ledger: int | None = None, after: int = 0) -> Cursor:
    """A cursor on a managed ledger of ``entries`` entries (``per_ledger`` each), created when
    ``after`` of them had been written (its mark-delete is the last of those)."""
    ml = ManagedLedger("t", LedgerIds(1), per_ledger or max(entries, 1))
    positions = [ml.append(100, 0) for _ in range(entries)]
    start = positions[after - 1] if after else ml.first_position
    return Cursor("c", ml, start)


def positions_of(cursor: Cursor) -> list[Position]:
    """Every entry position of the cursor's managed ledger, in order."""
    ml = cursor.ledger
    return [(lid, e) for lid in ml.ledger_ids() for e in range(len(ml.ledgers[lid]))]


def backlog(cursor: Cursor) -> int:
    """Entries not acknowledged (Pulsar's ``getNumberOfEntriesInBacklog(false)``)."""
    return sum(1 for pos in positions_of(cursor) if not cursor.is_acked(*pos))


def settings(**values: Any) -> BrokerSettings:
    """``ManagedLedgerConfig``'s defaults as the managed-ledger tests use them: no mark-delete
    rate limit, the MessageRange form, batch-index acks on."""
    base: dict[str, Any] = {
        "managed_ledger_default_mark_delete_rate_limit": 0.0,
        "managed_ledger_persist_individual_ack_as_long_array": False,
    }
    base.update(values)
    return BrokerSettings(**base)


def persister(
    clock: Clock | None = None,
    broker: BrokerSettings | None = None,
    ack: AckStateSettings | None = None,
    **values: Any,
) -> WholeStatePersister:
    """The range-count persister (Pulsar as merged) of one cursor.

    ``broker`` and ``ack`` default to :func:`settings` and the 4.x line; ``values`` override
    broker settings by field name.
    """
    clock = clock or Clock()
    base = broker if broker is not None else settings()
    if values:
        base = base.model_copy(update=values)
    context = PluginContext(
        settings=base,
        clock=clock,
        scheduler=clock,
        rng=np.random.default_rng(0),
        plugin_settings={NAMESPACE: ack or AckStateSettings()},
    )
    return new_range_count_persister(context, "t/c")


def restart(p: WholeStatePersister, cursor: Cursor, *, close: bool = False) -> Cursor:
    """Close ``cursor`` gracefully (``close``) or crash, then recover: the new broker cursor on
    the same managed ledger that a reopened topic builds, with the recovered state restored."""
    if close:
        p.close(cursor)
    else:
        p.crash()
    again = Cursor(cursor.name, cursor.ledger, cursor.ledger.first_position)
    again.restore(p.recover())
    return again


def profile_persister(
    profile: Profile, clock: Clock | None = None, **values: Any
) -> WholeStatePersister:
    """The range-count persister under a ready profile's settings (its Pulsar line), with no
    mark-delete rate limit (``ManagedLedgerConfig``'s default) and ``values`` on top."""
    ack = profile.plugin_settings.get(NAMESPACE)
    assert isinstance(ack, AckStateSettings)
    update = {"managed_ledger_default_mark_delete_rate_limit": 0.0, **values}
    return persister(clock, profile.settings.model_copy(update=update), ack)
