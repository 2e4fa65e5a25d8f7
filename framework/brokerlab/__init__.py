"""brokerlab: evaluate broker storage-layer strategies by simulating a broker under workloads.

The public Python API. Plugins import from here: the records their hooks yield, the protocols
they implement, ``hookimpl`` and ``PluginHost`` (for tests); tools call :func:`load_profile` and
:func:`simulate`.
"""

# First: the compiled modules' guard must be in place before any of them is imported.
from brokerlab._native import install_guard

install_guard()

from brokerlab._api import load_profile, make_host, simulate
from brokerlab.errors import BrokerlabError, Origin, PluginError, ProfileError, WorkloadError
from brokerlab.hookspecs import hookimpl
from brokerlab.host import PluginHost
from brokerlab.metrics import Metric
from brokerlab.profiles.loader import Profile
from brokerlab.protocols import (
    AckState,
    AckStatePersister,
    AttributedPredicate,
    BatchAck,
    CachedEntryView,
    Clock,
    CursorContainer,
    DelayedDeliveryTracker,
    DelayedDeliveryTrackerFactory,
    EntryCache,
    EvictionDecision,
    EvictionPass,
    EvictionPredicate,
    PersistOutcome,
    PluginContext,
    Position,
    RankedCursorContainer,
    RecoveredAckState,
    RequeueRule,
    RulePredicate,
    Scheduler,
    SilentPredicate,
    SingleEntryCache,
    TimerHandle,
)
from brokerlab.records import (
    AckStatePersisterRecord,
    CursorContainerRecord,
    DelayedDeliveryTrackerFactoryRecord,
    EntryCacheRecord,
    EvictionPredicateRecord,
    PluginRecord,
    SettingsRecord,
    SimulatorRecord,
    WorkloadRecord,
)

__version__ = "0.1.0"

__all__ = [
    "AckState",
    "AckStatePersister",
    "AckStatePersisterRecord",
    "AttributedPredicate",
    "BatchAck",
    "BrokerlabError",
    "CachedEntryView",
    "Clock",
    "CursorContainer",
    "CursorContainerRecord",
    "DelayedDeliveryTracker",
    "DelayedDeliveryTrackerFactory",
    "DelayedDeliveryTrackerFactoryRecord",
    "EntryCache",
    "EntryCacheRecord",
    "EvictionDecision",
    "EvictionPass",
    "EvictionPredicate",
    "EvictionPredicateRecord",
    "Metric",
    "Origin",
    "PersistOutcome",
    "PluginContext",
    "PluginError",
    "PluginHost",
    "PluginRecord",
    "Position",
    "Profile",
    "ProfileError",
    "RankedCursorContainer",
    "RecoveredAckState",
    "RequeueRule",
    "RulePredicate",
    "Scheduler",
    "SettingsRecord",
    "SilentPredicate",
    "SimulatorRecord",
    "SingleEntryCache",
    "TimerHandle",
    "WorkloadError",
    "WorkloadRecord",
    "__version__",
    "hookimpl",
    "load_profile",
    "make_host",
    "simulate",
]
