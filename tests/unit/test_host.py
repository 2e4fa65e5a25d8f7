"""PluginHost: discovery through real entry points, -p modules, blocking, duplicates, selection."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from brokerlab.errors import PluginError, ProfileError
from brokerlab.host import PluginHost

CACHE_PLUGIN = """
from brokerlab import EntryCacheRecord, hookimpl

@hookimpl
def brokerlab_entry_caches():
    yield EntryCacheRecord(name={name!r}, aliases={aliases!r}, description="test cache",
                           factory=lambda context: None)
"""


def make_distribution(
    root: Path,
    dist: str,
    module: str,
    source: str,
    *,
    version: str = "1.0",
    group: str = "brokerlab",
) -> None:
    """A real installed distribution: a module plus dist-info with an entry point, on ``root``."""
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{module} = {module}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path that importlib.metadata scans for distributions."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("BROKERLAB_DISABLE_PLUGINS", raising=False)
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("fakeplug")]:
        del sys.modules[name]


def cache_names(host: PluginHost) -> list[str]:
    return [reg.record.name for reg in host.records("entry_cache")]


def test_builtins_arrive_through_the_entry_point_group(site: Path) -> None:
    host = PluginHost()
    disabled = host.select("entry_cache", "disabled")
    assert disabled.distribution == "brokerlab"
    assert disabled.plugin == "baselines"


def test_third_party_distribution_is_discovered_with_its_name_and_version(site: Path) -> None:
    make_distribution(
        site,
        "brokerlab-fifo",
        "fakeplug_fifo",
        CACHE_PLUGIN.format(name="fifo", aliases=()),
        version="2.3",
    )
    host = PluginHost()
    fifo = host.select("entry_cache", "fifo")
    assert (fifo.distribution, fifo.version, fifo.plugin) == (
        "brokerlab-fifo",
        "2.3",
        "fakeplug_fifo",
    )
    assert "disabled" in cache_names(host)


def test_other_entry_point_groups_are_ignored(site: Path) -> None:
    make_distribution(
        site,
        "other-tool",
        "fakeplug_other",
        CACHE_PLUGIN.format(name="other", aliases=()),
        group="not_brokerlab",
    )
    assert "other" not in cache_names(PluginHost())


def test_disable_env_blocks_plugins_by_name(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_distribution(
        site, "brokerlab-fifo", "fakeplug_fifo", CACHE_PLUGIN.format(name="fifo", aliases=())
    )
    monkeypatch.setenv("BROKERLAB_DISABLE_PLUGINS", " fakeplug_fifo , baselines")
    host = PluginHost()
    assert {"fifo", "disabled"}.isdisjoint(cache_names(host))
    assert "fakeplug_fifo" not in host.plugin_names()
    assert "baselines" not in host.plugin_names()


def test_p_module_registers_a_plain_module(site: Path) -> None:
    (site / "fakeplug_local.py").write_text(CACHE_PLUGIN.format(name="local", aliases=()))
    host = PluginHost(modules=["fakeplug_local"])
    local = host.select("entry_cache", "local")
    assert local.distribution == "-p fakeplug_local"


def test_p_module_that_does_not_import_is_a_plugin_error(site: Path) -> None:
    with pytest.raises(PluginError, match="no_such_module"):
        PluginHost(modules=["no_such_module"])


def test_p_module_of_an_installed_plugin_is_registered_once(site: Path) -> None:
    # The entry point registered it under its own name already.
    host = PluginHost(modules=["brokerlab_plugins.baselines"])
    assert host.select("entry_cache", "disabled").plugin == "baselines"


BROKEN_AT_IMPORT = "from brokerlab import hookimpl\n\nrecords = Iterator\n"
WRONG_SIGNATURE = """
from brokerlab import hookimpl

@hookimpl
def brokerlab_entry_caches(context):
    return []
"""


def test_a_plugin_module_broken_at_import_names_the_error_and_its_line(site: Path) -> None:
    (site / "fakeplug_broken.py").write_text(BROKEN_AT_IMPORT)
    with pytest.raises(PluginError) as info:
        PluginHost(modules=["fakeplug_broken"])
    assert "NameError: name 'Iterator' is not defined" in str(info.value)
    assert f"{site / 'fakeplug_broken.py'}:3" in str(info.value)


def test_an_entry_point_broken_at_import_names_the_error_and_its_line(site: Path) -> None:
    make_distribution(site, "brokerlab-broken", "fakeplug_broken", BROKEN_AT_IMPORT)
    with pytest.raises(PluginError, match=r"failed to import: NameError: .*fakeplug_broken\.py:3"):
        PluginHost()


@pytest.mark.parametrize("how", ["entry point", "-p"])
def test_a_hook_with_the_wrong_arguments_is_named_as_such(site: Path, how: str) -> None:
    if how == "-p":
        (site / "fakeplug_args.py").write_text(WRONG_SIGNATURE)
    else:
        make_distribution(site, "brokerlab-args", "fakeplug_args", WRONG_SIGNATURE)
    with pytest.raises(PluginError) as info:
        PluginHost(modules=["fakeplug_args"] if how == "-p" else ())
    text = str(info.value)
    assert "plugin 'fakeplug_args' does not match brokerlab's hooks" in text
    assert "brokerlab_entry_caches" in text and "context" in text and "\n" not in text


def test_duplicate_names_name_both_distributions(site: Path) -> None:
    make_distribution(
        site, "dist-one", "fakeplug_one", CACHE_PLUGIN.format(name="twin", aliases=())
    )
    make_distribution(
        site, "dist-two", "fakeplug_two", CACHE_PLUGIN.format(name="twin", aliases=())
    )
    with pytest.raises(PluginError) as caught:
        PluginHost().records("entry_cache")
    message = str(caught.value)
    assert "dist-one" in message and "dist-two" in message and "'twin'" in message


def test_an_alias_clashing_with_a_name_is_a_duplicate(site: Path) -> None:
    make_distribution(
        site,
        "dist-alias",
        "fakeplug_alias",
        CACHE_PLUGIN.format(name="mine", aliases=("disabled",)),
    )
    with pytest.raises(PluginError, match=r"named 'disabled'.*dist-alias"):
        PluginHost().records("entry_cache")


def test_wrong_record_type_is_refused(site: Path) -> None:
    source = """
    from brokerlab import WorkloadRecord, hookimpl

    @hookimpl
    def brokerlab_entry_caches():
        yield WorkloadRecord(name="w", description="d", document="")
    """
    make_distribution(site, "dist-wrong", "fakeplug_wrong", source)
    with pytest.raises(PluginError, match=r"yielded WorkloadRecord.*expected EntryCacheRecord"):
        PluginHost().records("entry_cache")


def test_unknown_hook_fails_check_pending(site: Path) -> None:
    source = """
    from brokerlab import hookimpl

    @hookimpl
    def brokerlab_entry_cachez():
        return []
    """
    make_distribution(site, "dist-typo", "fakeplug_typo", source)
    with pytest.raises(PluginError, match="brokerlab_entry_cachez"):
        PluginHost()


def test_select_by_alias(site: Path) -> None:
    make_distribution(
        site,
        "dist-java",
        "fakeplug_java",
        CACHE_PLUGIN.format(name="java", aliases=("org.example.JavaCache",)),
    )
    assert PluginHost().select("entry_cache", "org.example.JavaCache").record.name == "java"


def test_unknown_name_lists_valid_names_and_suggests(site: Path) -> None:
    with pytest.raises(ProfileError) as caught:
        PluginHost().select("entry_cache", "disabeld", key="sim.entryCache")
    message = str(caught.value)
    assert "key 'sim.entryCache'" in message
    assert "'disabeld'" in message
    assert "allowed: disabled" in message
    assert "did you mean 'disabled'" in message
