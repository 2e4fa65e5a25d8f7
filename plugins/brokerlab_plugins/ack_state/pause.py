"""The dispatcher-pause switch: broker value, overridden by namespace, then topic policy (§5).

The broker value is dynamic: changing it (or a policy) takes effect at the next re-check, so a
disabled feature resumes delivery without waiting for an ack.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PauseSwitch"]


@dataclass
class PauseSwitch:
    """Effective ``enabled`` = topic policy, else namespace policy, else the broker setting."""

    broker: bool
    namespace: bool | None = None
    topic: bool | None = None

    @property
    def enabled(self) -> bool:
        if self.topic is not None:
            return self.topic
        if self.namespace is not None:
            return self.namespace
        return self.broker
