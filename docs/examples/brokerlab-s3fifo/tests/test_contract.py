"""brokerlab's contract kit on this plugin: the suite every eviction predicate must pass.

The fixtures the suite needs (``brokerlab_host``, ``brokerlab_profile``, ``simulate``) come from
brokerlab's pytest plugin; run it under a profile with ``--brokerlab-profile PATH``.
"""

from __future__ import annotations

import pytest
from brokerlab.testing import EvictionPredicateContract


class TestS3FifoContract(EvictionPredicateContract):
    @pytest.fixture
    def eviction_predicate(self) -> str:
        return "s3fifo"
