"""PIP-430's two requeue reasons as eviction predicates (``shouldRequeue``, spec §2.4, §2.5).

The queue asks these in chain order for every live head entry; the host puts
``recently-accessed`` first, so when both reasons apply the requeue counts as "accessed" (spec,
Clarifications). Both act only on entries the pass would otherwise remove: expired ones in a time
pass, any entry in a size pass.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from mypy_extensions import mypyc_attr

from brokerlab.protocols import CachedEntryView, EvictionDecision, EvictionPass, RequeueRule

__all__ = ["ExpectedReadsPredicate", "RecentlyAccessedPredicate", "StatelessPredicate"]

_REQUEUE: Final = EvictionDecision.REQUEUE
_TIME: Final = EvictionPass.TIME
_NOTIFICATIONS: Final = ("on_insert", "on_access", "on_remove")
_ACCESSED_RULE: Final = RequeueRule(when_accessed=True)


def _rule_unless_overridden(
    predicate: object, own: type, rule: RequeueRule, methods: tuple[str, ...] = ("decide",)
) -> RequeueRule | None:
    """``rule``, unless ``predicate``'s class overrides one of ``own``'s ``methods`` that decide:
    a subclass with a rule of its own must be asked (RulePredicate)."""
    mine = type(predicate)
    same = all(getattr(mine, name) is getattr(own, name) for name in methods)
    return rule if same else None


@mypyc_attr(allow_interpreted_subclasses=True)
class StatelessPredicate:
    """A predicate whose ``on_*`` notifications do nothing.

    Satisfies :class:`~brokerlab.protocols.SilentPredicate`: ``needs_notifications`` is false
    unless a subclass overrides one of the notifications, so the queue skips them.
    """

    name: ClassVar[str] = "stateless"

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        return None  # abstains; a subclass decides

    @property
    def needs_notifications(self) -> bool:
        """Whether this object's class overrides any of the ``on_*`` notifications."""
        own = type(self)
        return any(getattr(own, n) is not getattr(StatelessPredicate, n) for n in _NOTIFICATIONS)

    def on_insert(self, entry: CachedEntryView) -> None:
        return None

    def on_access(self, entry: CachedEntryView) -> None:
        return None

    def on_remove(self, entry: CachedEntryView) -> None:
        return None


@mypyc_attr(allow_interpreted_subclasses=True)
class RecentlyAccessedPredicate(StatelessPredicate):
    """``managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed``: requeue an entry read since it
    was (re)queued. This reason has no cap; the requeue clears ``accessed``."""

    name: ClassVar[str] = "recently-accessed"
    requeue_metric: ClassVar[str] = "cache_requeues_accessed"

    @property
    def requeue_rule(self) -> RequeueRule | None:
        """The rule :meth:`decide` follows, for a queue to apply itself (RulePredicate)."""
        return _rule_unless_overridden(self, RecentlyAccessedPredicate, _ACCESSED_RULE)

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        return _requeue_if_accessed(entry.accessed, entry.timestamp_ns, kind, threshold_ns)


@mypyc_attr(allow_interpreted_subclasses=True)
class ExpectedReadsPredicate(StatelessPredicate):
    """``cacheEvictionByExpectedReadCount``: requeue an entry with ``expected_reads >= 1`` while
    its ``requeue_count`` (shared with access requeues) is below the configured maximum."""

    name: ClassVar[str] = "expected-reads"
    requeue_metric: ClassVar[str] = "cache_requeues_expected_reads"

    def __init__(self, max_requeues: int) -> None:
        self.max_requeues = max_requeues

    @property
    def requeue_rule(self) -> RequeueRule | None:
        """The rule :meth:`decide` follows, for a queue to apply itself (RulePredicate)."""
        rule = RequeueRule(min_expected_reads=1, below_requeues=self.max_requeues)
        return _rule_unless_overridden(self, ExpectedReadsPredicate, rule, ("decide", "_rule"))

    @classmethod
    def from_settings(cls, settings: Any) -> ExpectedReadsPredicate:
        return cls(
            settings.managed_ledger_cache_eviction_extend_ttl_of_entries_with_remaining_expected_reads_max_times
        )

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        reads = entry.expected_reads or 0  # None: nothing tracked
        return self._rule(reads, entry.requeue_count, entry.timestamp_ns, kind, threshold_ns)

    def _rule(
        self,
        reads: int,
        requeue_count: int,
        timestamp_ns: int,
        kind: EvictionPass,
        threshold_ns: int,
    ) -> EvictionDecision | None:
        """Requeue an entry with reads still expected (0 when none are tracked) while its requeue
        count is below the maximum."""
        if reads < 1 or requeue_count >= self.max_requeues:
            return None
        return _requeue_unless_live(timestamp_ns, kind, threshold_ns)


def _requeue_if_accessed(
    accessed: bool, timestamp_ns: int, kind: EvictionPass, threshold_ns: int
) -> EvictionDecision | None:
    """Recently accessed: requeue an accessed entry the pass would remove."""
    return _requeue_unless_live(timestamp_ns, kind, threshold_ns) if accessed else None


def _requeue_unless_live(
    timestamp_ns: int, kind: EvictionPass, threshold_ns: int
) -> EvictionDecision | None:
    """REQUEUE an entry the pass would otherwise remove; abstain on a live entry in a time pass
    (the queue stops there)."""
    if kind is _TIME and timestamp_ns >= threshold_ns:
        return None
    return _REQUEUE
