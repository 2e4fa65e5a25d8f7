"""A consumer: receiver queue with flow permits, a processing rate and an acknowledgement policy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from brokerlab.protocols import Position
from brokerlab.workloads.model import DurationSpec

if TYPE_CHECKING:
    from brokerlab.broker.client import ConsumerClient

__all__ = ["ACK_GROUP_NS", "Consumer", "ConsumerPolicy", "Delivery"]

NS: Final = 1_000_000_000
# The Pulsar client groups acknowledgements for 100 ms (acknowledgementsGroupTimeMicros).
ACK_GROUP_NS: Final = 100_000_000

Delivery = tuple[Position, int, int, int]
"""A dispatched entry in a receiver queue: ``(position, messages, publish_ns, key)``.

The position is the tuple the dispatcher built for it, so acknowledging it creates none."""


@dataclass(frozen=True, slots=True)
class ConsumerPolicy:
    """What a consumer does with each message (from the workload's consumer spec)."""

    rate: float
    receiver_queue_size: int
    cumulative: bool
    ack_hole_probability: float
    nack_probability: float
    nack_delay_ns: int
    # The message-by-message client model (``client.py``), when ``models_client``: each message
    # takes a draw of ``service_time`` (None: no time of its own, only ``1 / rate``), and
    # acknowledgements are grouped for ``ack_group_ns`` (0: each is sent at once).
    models_client: bool = False
    service_time: DurationSpec | None = None
    ack_group_ns: int = ACK_GROUP_NS


class Consumer:
    """One connected (or disconnected) consumer of a subscription.

    ``permits`` are Pulsar's flow permits in messages: the receiver queue size minus what was
    dispatched and not yet processed. The client gives permits back in halves of its queue, as the
    Pulsar client does. ``pending`` holds what was delivered and not acknowledged, so a disconnect
    can hand it back to the dispatcher for redelivery.
    """

    __slots__ = (
        "acks_each",
        "busy",
        "chunk_limit",
        "client",
        "connected",
        "epoch",
        "group",
        "index",
        "name",
        "pending",
        "per_message_ns",
        "permits",
        "policy",
        "process",
        "queue",
    )

    def __init__(self, name: str, index: int, policy: ConsumerPolicy, group: str | None) -> None:
        # What every dispatch and completion reads comes first: compiled, attributes are laid
        # out in the order they are first assigned, and these then share two cache lines.
        #
        # The receiver queue, oldest first. A list, not a deque: appending and slicing are C
        # operations when compiled, where a deque's methods are Python calls, and a queue holds
        # at most a receiver queue's worth of entries.
        self.queue: list[Delivery] = []
        self.pending: dict[Position, int] = {}
        self.policy = policy
        # "Process what the receiver queue holds", bound once by the broker: an unlimited consumer
        # schedules it on every dispatch, which should not build a new callable each time.
        self.process: Callable[[], None] = _unbound
        self.permits = 0
        self.epoch = 0
        # Fixed for the consumer's life, read on every completed chunk: whether every message is
        # simply acknowledged (no negative acks, ack holes or cumulative acks) and how long one
        # message takes (0.0 with no rate limit).
        self.per_message_ns = NS / policy.rate if policy.rate > 0 else 0.0
        self.acks_each = not (
            policy.nack_probability + policy.ack_hole_probability > 0 or policy.cumulative
        )
        self.connected = False
        self.busy = False
        # The most messages one chunk takes: what the consumer processes within one ack group,
        # at most half its receiver queue (then the client returns flow permits).
        self.chunk_limit = max(
            1, min(policy.receiver_queue_size // 2, int(policy.rate * ACK_GROUP_NS / NS))
        )
        self.name = name
        self.index = index
        self.group = group
        # The client model of a consumer with ``policy.models_client`` (set by the broker), read
        # only on that path: last, so the lines above stay as they were.
        self.client: ConsumerClient | None = None

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
        if self.client is not None:
            self.client.forget()
        return back


def _unbound() -> None:
    raise RuntimeError("a consumer's process callback is bound when it joins a dispatcher")
