"""brokerlab: evaluate broker storage-layer strategies by simulating a broker under workloads.

The public Python API. Plugins import from here (records, protocols, ``hookimpl``); tools call
:func:`load_profile` and, once a broker model is present, ``simulate``.
"""

# First: the compiled modules' guard must be in place before any of them is imported.
from brokerlab._native import install_guard

install_guard()

from brokerlab._api import load_profile, make_host, simulate
from brokerlab.errors import BrokerlabError, Origin, PluginError, ProfileError, WorkloadError
from brokerlab.hookspecs import hookimpl
from brokerlab.records import (
    AckStatePersisterRecord,
    CursorContainerRecord,
    DelayedDeliveryTrackerFactoryRecord,
    EntryCacheRecord,
    EvictionPredicateRecord,
    PluginRecord,
    SettingsRecord,
    WorkloadRecord,
)

__version__ = "0.1.0"

__all__ = [
    "AckStatePersisterRecord",
    "BrokerlabError",
    "CursorContainerRecord",
    "DelayedDeliveryTrackerFactoryRecord",
    "EntryCacheRecord",
    "EvictionPredicateRecord",
    "Origin",
    "PluginError",
    "PluginRecord",
    "ProfileError",
    "SettingsRecord",
    "WorkloadError",
    "WorkloadRecord",
    "__version__",
    "hookimpl",
    "load_profile",
    "make_host",
    "simulate",
]
