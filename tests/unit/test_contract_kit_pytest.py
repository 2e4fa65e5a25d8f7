"""The contract kit as a plugin author meets it: a test module subclassing a suite, run by pytest
with brokerlab's pytest plugin (entry point ``pytest11``), checked with ``pytester``.

The determinism check runs its second simulation in a fresh interpreter with another
``PYTHONHASHSEED``: a cache whose eviction hangs on ``hash(topic)`` gives the same result twice in
one process (the check passed it before) and fails here, naming the metrics that differ.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from brokerlab import load_profile
from brokerlab.host import PluginHost

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

# A third-party entry cache: PIP-430's, plus it drops a topic's entries at the eviction runs
# where hash((topic, run)) is a multiple of 4. A string's hash is salted per interpreter.
HASHED_CACHE = """
from brokerlab import EntryCacheRecord, hookimpl
from brokerlab_plugins.pip430_cache import Pip430EntryCache


class HashedEviction:
    def __init__(self, context):
        self.inner = Pip430EntryCache(context)
        self.topics = {}
        self.runs = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def open_ledger(self, topic, cursors):
        self.topics[topic] = cursors
        self.inner.open_ledger(topic, cursors)

    def close_ledger(self, topic):
        self.topics.pop(topic, None)
        self.inner.close_ledger(topic)

    def evict_expired(self):
        self.inner.evict_expired()
        self.runs += 1
        for topic, cursors in list(self.topics.items()):
            if hash((topic, self.runs)) % 4 == 0:
                self.inner.close_ledger(topic)
                self.inner.open_ledger(topic, cursors)


@hookimpl
def brokerlab_entry_caches():
    yield EntryCacheRecord(
        name="hashed",
        description="PIP-430, plus drops chosen by hash(topic)",
        factory=HashedEviction,
        uses_eviction_predicates=True,
    )
"""

# What the author writes: the suite, the record's name, and a host with the module.
AUTHOR_TESTS = """
import pytest
from brokerlab.host import PluginHost
from brokerlab.testing import EntryCacheContract


class TestCaches(EntryCacheContract):
    @pytest.fixture
    def brokerlab_host(self):
        return PluginHost(modules=["hashcache"])

    @pytest.fixture(params=["pip430", "hashed"])
    def entry_cache(self, request):
        return request.param
"""


def test_a_cache_evicting_by_hash_of_the_topic_fails_the_determinism_check(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(hashcache=HASHED_CACHE, test_author=AUTHOR_TESTS)
    # A fixed seed here, so the fresh interpreter's (one more) is known to give other drops.
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.delenv("BROKERLAB_PROFILE", raising=False)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-k", "runs_deterministically_in_a_simulation"
    )
    result.assert_outcomes(passed=1, failed=1)  # pip430 passes, hashed fails
    result.stdout.fnmatch_lines(
        [
            "E * the same seed gave different results in a fresh interpreter with "
            "PYTHONHASHSEED=1 (this one: 0): metrics that differ: cache_*",
            "FAILED test_author.py::TestCaches::test_runs_deterministically_*?hashed?*",
        ]
    )
    host = PluginHost()
    fingerprint = load_profile(None, host=host).fingerprint()[:12]
    result.stdout.fnmatch_lines(
        [
            f"brokerlab profile: the defaults, fingerprint {fingerprint}",
            f"brokerlab plugins: *brokerlab {host.distributions()['brokerlab']}*",
        ]
    )


def test_the_header_names_the_chosen_profile_or_why_it_does_not_load(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    ready = ROOT / "profiles" / "pulsar-5.0.conf"  # not the defaults: its own fingerprint
    monkeypatch.setenv("BROKERLAB_PROFILE", str(ready))
    fingerprint = load_profile(ready).fingerprint()[:12]
    assert fingerprint != load_profile(None).fingerprint()[:12]
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"brokerlab profile: {ready} (from $BROKERLAB_PROFILE), fingerprint {fingerprint}"]
    )

    broken = tmp_path / "broken.conf"
    broken.write_text("sim.entryCache=no-such-cache\nmanagedLedgerCacheSizeMB=-3\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--brokerlab-profile={broken}")
    result.assert_outcomes(passed=1)  # a test that needs no profile still runs
    result.stdout.fnmatch_lines(
        [f"brokerlab profile: {broken} (from --brokerlab-profile): does not load: *managedLedger*"]
    )


class _NoHooks:
    """A plugin object without hooks (pluggy registers it all the same)."""


MODULE_LEVEL_PLUGIN = _NoHooks()


def test_the_fresh_interpreter_gets_the_host_by_name_or_says_why_it_cannot() -> None:
    from brokerlab.testing._isolated import host_recipe

    recipe = host_recipe(
        PluginHost(modules=["brokerlab_plugins.baselines"], blocked=["x"], entry_points=False)
    )
    assert recipe == {
        "modules": ["brokerlab_plugins.baselines"],
        "blocked": ["x"],
        "entry_points": False,
        "objects": {},
    }
    module = importlib.import_module("brokerlab_plugins.baselines")
    by_module = host_recipe(PluginHost(plugins={"b": module}, entry_points=False))
    assert by_module["objects"] == {"b": "brokerlab_plugins.baselines:"}
    global_object = host_recipe(PluginHost(plugins={"mine": MODULE_LEVEL_PLUGIN}))
    assert global_object["objects"] == {"mine": f"{__name__}:MODULE_LEVEL_PLUGIN"}
    with pytest.raises(AssertionError, match=r"cannot import the plugin object given as "):
        host_recipe(PluginHost(plugins={"local": _NoHooks()}))
