"""The built-in named workloads, one TOML document each (the format: ``docs/workloads.md``).

Each is sized to simulate in seconds: at most ~1.2 million deliveries (published messages times
subscriptions). The TOML files say what they model and why the numbers.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from importlib import resources

from brokerlab.hookspecs import hookimpl
from brokerlab.records import WorkloadRecord

__all__ = ["BUILTIN_WORKLOADS", "brokerlab_workloads"]

# The document of each is <name>.toml next to this file.
BUILTIN_WORKLOADS = (
    "tailing",
    "catch-up-fanout",
    "key-shared-slow-consumer",
    "reconnect-storm",
    "many-topics",
    "delayed-mixed",
    "ack-holes-restart",
    "rolling-restart",
    "catch-up-shared-reads",
    "producers-vs-paused-dispatch",
)


@hookimpl
def brokerlab_workloads() -> Iterator[WorkloadRecord]:
    folder = resources.files(__name__)
    for name in BUILTIN_WORKLOADS:
        document = folder.joinpath(f"{name}.toml")
        text = document.read_text(encoding="utf-8")
        # The one-line description lives in the document only, so the two cannot drift apart.
        # Validation happens when the workload is used, with errors pointing into the file.
        try:
            description = str(tomllib.loads(text).get("description", ""))
        except tomllib.TOMLDecodeError:
            description = "(the document is not valid TOML; run it to see the error)"
        yield WorkloadRecord(
            name=name,
            description=description,
            document=text,
            origin=f"builtin:{name} ({document})",
        )
