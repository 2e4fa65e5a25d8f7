"""A consumer: receiver queue with flow permits, a processing rate and an acknowledgement policy."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from brokerlab.protocols import Position

__all__ = ["Consumer", "ConsumerPolicy", "Delivery"]

Delivery = tuple[int, int, int, int, int]
"""A dispatched entry in a receiver queue: ``(ledger_id, entry_id, messages, publish_ns, key)``."""


@dataclass(frozen=True, slots=True)
class ConsumerPolicy:
    """What a consumer does with each message (from the workload's consumer spec)."""

    rate: float
    receiver_queue_size: int
    cumulative: bool
    ack_hole_probability: float
    nack_probability: float
    nack_delay_ns: int


class Consumer:
    """One connected (or disconnected) consumer of a subscription.

    ``permits`` are Pulsar's flow permits in messages: the receiver queue size minus what was
    dispatched and not yet processed. The client gives permits back in halves of its queue, as the
    Pulsar client does. ``pending`` holds what was delivered and not acknowledged, so a disconnect
    can hand it back to the dispatcher for redelivery.
    """

    __slots__ = (
        "busy",
        "connected",
        "epoch",
        "group",
        "index",
        "name",
        "pending",
        "permits",
        "policy",
        "queue",
    )

    def __init__(self, name: str, index: int, policy: ConsumerPolicy, group: str | None) -> None:
        self.name = name
        self.index = index
        self.policy = policy
        self.group = group
        self.connected = False
        self.busy = False
        self.epoch = 0
        self.permits = 0
        self.queue: deque[Delivery] = deque()
        self.pending: dict[Position, int] = {}

    def connect(self) -> None:
        self.connected = True
        self.permits = self.policy.receiver_queue_size

    def take_back(self) -> list[Position]:
        """Disconnect: everything queued or unacknowledged goes back for redelivery.

        The epoch moves on, so a chunk that was being processed when the consumer left is dropped
        when its completion comes due instead of acknowledging what was handed back.
        """
        self.epoch += 1
        self.connected = False
        self.busy = False
        self.permits = 0
        back = sorted(self.pending)
        self.queue.clear()
        self.pending.clear()
        return back
