"""What a plugin author imports: everything from ``brokerlab`` itself (and the contract kit from
``brokerlab.testing``), never from the modules behind it."""

from __future__ import annotations

import ast
from pathlib import Path

import brokerlab
from brokerlab import protocols, records

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "brokerlab-s3fifo"


def test_every_record_and_protocol_is_exported_from_the_package() -> None:
    """The hooks' records, the protocols plugins implement, the types in their signatures and
    ``PluginHost`` (which the kit's fixtures hand out) are all in ``brokerlab.__all__``."""
    wanted = {name for name in records.__all__ if name.endswith("Record")}
    wanted |= {
        "AckState",
        "AckStatePersister",
        "CachedEntryView",
        "CursorContainer",
        "DelayedDeliveryTracker",
        "DelayedDeliveryTrackerFactory",
        "EntryCache",
        "EvictionPredicate",
        "PluginContext",
        "PluginHost",
        "Profile",
        "RankedCursorContainer",
        "SilentPredicate",
        "AttributedPredicate",
        "SingleEntryCache",
    }
    assert wanted <= set(brokerlab.__all__)
    for name in brokerlab.__all__:
        assert hasattr(brokerlab, name), name
    assert brokerlab.PluginContext is protocols.PluginContext


def _private_imports(path: Path) -> list[str]:
    """``path``'s imports of brokerlab modules other than the package and its contract kit."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno}: {module}"
            for module in modules
            if module.startswith("brokerlab.") and not module.startswith("brokerlab.testing")
        ]
    return found


def test_the_example_plugin_imports_only_the_public_surface() -> None:
    """The third-party example reaches brokerlab only through ``brokerlab`` and
    ``brokerlab.testing``, as any outside package should be able to."""
    files = sorted(EXAMPLE.rglob("*.py"))
    assert files
    assert [line for path in files for line in _private_imports(path)] == []
