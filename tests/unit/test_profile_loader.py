"""Loading profiles: layers, precedence, includes, environment, modes, errors, the Profile API."""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

import brokerlab
from brokerlab.errors import Origin, PluginError, ProfileError
from brokerlab.profiles import Profile, load_profile, profile_keys
from brokerlab.profiles.loader import allowed_values, property_text
from brokerlab.records import JAVA_INT, JAVA_LONG, JavaLong, SettingsRecord

ROOT = Path(__file__).resolve().parents[2]


class Mini(BaseSettings):
    """A small stand-in for BrokerSettings with one field of each kind."""

    model_config = SettingsConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    entry_cache: str = Field("legacy", alias="sim.entryCache", json_schema_extra={"section": "Sim"})
    predicates: list[str] = Field(default_factory=list, alias="sim.evictionPredicates")
    include: list[str] = Field(default_factory=list, alias="sim.include")
    batch: int = Field(100, alias="dispatcherMaxReadBatchSize", ge=1, le=10_000)
    cache_mb: int | None = Field(None, alias="managedLedgerCacheSizeMB", ge=0)
    watermark: float = Field(0.9, alias="managedLedgerCacheEvictionWatermark", ge=0.0, le=1.0)
    by_expected: bool = Field(True, alias="cacheEvictionByExpectedReadCount")
    codec: Literal["NONE", "LZ4"] = Field("NONE", alias="managedCursorInfoCompressionType")
    backoff: tuple[int, ...] = Field((), alias="retryBackoffMs")


class NoInclude(BaseSettings):
    """A model without ``sim.include``: the loader still follows includes."""

    model_config = SettingsConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    batch: int = Field(100, alias="dispatcherMaxReadBatchSize", ge=1)


class AckPlugin(BaseModel):
    """A plugin's own keys, read from ``sim.ackState.*``."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    byte_limit: int = Field(1024, alias="byteLimit", ge=1024, le=4096)
    policy: Literal["lru", "fifo"] = Field("lru", alias="policy")


ACK = SettingsRecord(namespace="ackState", model=AckPlugin, description="ack state")
NO_ENV: Mapping[str, str] = {}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load(
    path: Path | None,
    overrides: Mapping[str, str] | list[str] | str | None = None,
    *,
    environ: Mapping[str, str] = NO_ENV,
    mode: Literal["strict", "lenient"] | None = None,
) -> Profile:
    return load_profile(
        path, overrides, plugin_settings=[ACK], environ=environ, mode=mode, model=Mini
    )


def error_of(path: Path | None, overrides: object = None, **kwargs: object) -> str:
    with pytest.raises(ProfileError) as info:
        load(path, overrides, **kwargs)  # type: ignore[arg-type]
    return str(info.value)


# --- values ----------------------------------------------------------------------------------


def test_no_file_gives_the_defaults(tmp_path: Path) -> None:
    profile = load(None)
    assert profile.settings == Mini()
    assert profile.plugin_settings == {"ackState": AckPlugin()}
    assert profile.origins == {}
    assert profile.unmodelled == {}
    assert profile.path is None
    assert profile.mode == "strict"


def test_file_values_are_applied_with_their_origins(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.conf",
        "sim.entryCache=pip430\n"
        "# comment\n"
        "dispatcherMaxReadBatchSize = 250\n"
        "managedLedgerCacheEvictionWatermark: 0.75\n"
        "cacheEvictionByExpectedReadCount=FALSE\n"
        "sim.evictionPredicates= a, b ,,c\n"
        "retryBackoffMs=10,20\n"
        "managedCursorInfoCompressionType=LZ4\n",
    )
    profile = load(path)
    settings = profile.settings
    assert settings.entry_cache == "pip430"
    assert settings.batch == 250
    assert settings.watermark == 0.75
    assert settings.by_expected is False
    assert settings.predicates == ["a", "b", "c"]
    assert settings.backoff == (10, 20)
    assert settings.codec == "LZ4"
    assert profile.origin("dispatcherMaxReadBatchSize") == Origin(str(path), 3)
    assert profile.origin("cacheEvictionByExpectedReadCount") == Origin(str(path), 5)
    assert profile.origin("managedLedgerCacheSizeMB") is None
    assert profile.path == path


@pytest.mark.parametrize("spelling", ["true", "TRUE", "True", " true "])
def test_booleans_accept_java_spellings(tmp_path: Path, spelling: str) -> None:
    profile = load(None, {"cacheEvictionByExpectedReadCount": spelling})
    assert profile.settings.by_expected is True


@pytest.mark.parametrize("spelling", ["0.5", " .5 ", "+5e-1", "0.5d", "0.5F", "0x1p-1", "0X.8P0"])
def test_numbers_accept_java_double_spellings(spelling: str) -> None:
    profile = load(None, {"managedLedgerCacheEvictionWatermark": spelling})
    assert profile.settings.watermark == 0.5


@pytest.mark.parametrize("spelling", ["0.1_5", "inf", "nan", "infinity", "0,5", "0x8"])
def test_numbers_refuse_what_java_double_refuses(spelling: str) -> None:
    message = error_of(None, {"managedLedgerCacheEvictionWatermark": spelling})
    assert message == (
        f"--set: key 'managedLedgerCacheEvictionWatermark': value '{spelling}' is not a number; "
        "allowed: a number from 0.0 to 1.0"
    )


def test_a_hexadecimal_number_too_large_for_a_double_is_infinite_as_in_java() -> None:
    message = error_of(None, {"managedLedgerCacheEvictionWatermark": "-0x1p2000"})
    assert "value '-0x1p2000' is out of range" in message


def test_values_are_trimmed_as_java_trims_them() -> None:
    # String.trim removes every character up to U+0020, and no other: Pulsar fails to start on
    # "512\u00a0" (a no-break space pasted from a web page) and reads "true\u00a0" as false.
    profile = load(None, {"dispatcherMaxReadBatchSize": "\t\f512\x00 "})
    assert profile.settings.batch == 512
    message = error_of(None, {"dispatcherMaxReadBatchSize": "512\u00a0"})
    assert message.startswith("--set: key 'dispatcherMaxReadBatchSize': value '512\\xa0' is not")
    message = error_of(None, {"cacheEvictionByExpectedReadCount": "true\u00a0"})
    assert "value 'true\\xa0' is not true or false" in message
    message = error_of(None, {"managedLedgerCacheEvictionWatermark": "0.5\u00a0"})
    assert "value '0.5\\xa0' is not a number" in message


def test_empty_value_means_the_default(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", "sim.entryCache=\nmanagedLedgerCacheSizeMB=   \n")
    profile = load(path)
    assert profile.settings.entry_cache == "legacy"
    assert profile.settings.cache_mb is None
    assert profile.origins == {}


def test_plugin_keys_are_validated_in_the_same_pass(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", "sim.ackState.byteLimit=2048\n")
    profile = load(path)
    assert profile.plugin_settings["ackState"] == AckPlugin(byte_limit=2048)
    assert profile.get("sim.ackState.byteLimit") == 2048
    assert profile.get("sim.ackState.policy") == "lru"
    assert profile.origin("sim.ackState.byteLimit") == Origin(str(path), 1)


# --- precedence ------------------------------------------------------------------------------

KEY = "dispatcherMaxReadBatchSize"
LAYERS = ["--set", "env", "file", "include", "default"]


@pytest.mark.parametrize("removed", [None, *LAYERS[:-1]])
def test_precedence_set_env_file_include_default(tmp_path: Path, removed: str | None) -> None:
    values = {"--set": "500", "env": "400", "file": "300", "include": "200", "default": "100"}
    base = write(tmp_path / "base.conf", f"sim.x.unused=\n{KEY}={values['include']}\n")
    lines = ["sim.include=base.conf"]
    if removed != "file":
        lines.append(f"{KEY}={values['file']}")
    path = write(tmp_path / "p.conf", "\n".join(lines) + "\n")
    if removed == "include":
        write(base, "")
    environ = {} if removed == "env" else {f"BROKERLAB_{KEY}": values["env"]}
    overrides = [] if removed == "--set" else [f"{KEY}={values['--set']}"]
    profile = load_profile(path, overrides, environ=environ, model=Mini, mode="lenient")

    present = [layer for layer in LAYERS if layer != removed]
    assert profile.settings.batch == int(values[present[0]])
    expected_origin = {
        "--set": Origin("--set"),
        "env": Origin(f"env BROKERLAB_{KEY}"),
        "file": Origin(str(path), 2),
        "include": Origin(str(base), 2),
        "default": None,
    }[present[0]]
    assert profile.origin(KEY) == expected_origin


@pytest.mark.parametrize("layer", ["--set", "env", "file"])
def test_an_empty_value_falls_through_to_the_next_layer(tmp_path: Path, layer: str) -> None:
    base = write(tmp_path / "base.conf", f"{KEY}=200\n")
    file_value = "" if layer == "file" else "300"
    path = write(tmp_path / "p.conf", f"sim.include=base.conf\n{KEY}={file_value}\n")
    environ = {"--set": {f"BROKERLAB_{KEY}": "400"}, "env": {f"BROKERLAB_{KEY}": ""}}.get(layer, {})
    overrides = {KEY: ""} if layer == "--set" else {}
    profile = load(path, overrides, environ=environ)
    assert profile.settings.batch == {"--set": 400, "env": 300, "file": 200}[layer]
    assert (
        profile.origin(KEY)
        == {
            "--set": Origin(f"env BROKERLAB_{KEY}"),
            "env": Origin(str(path), 2),
            "file": Origin(str(base), 1),
        }[layer]
    )


# --- environment -----------------------------------------------------------------------------


def test_env_forms_and_their_order() -> None:
    environ = {
        "BROKERLAB_sim.entryCache": "a",
        "BROKERLAB_sim_entryCache": "b",
        "sim.entryCache": "c",
        "BROKERLAB_sim_ackState_byteLimit": "3000",
        "managedLedgerCacheEvictionWatermark": "0.5",
        "BROKERLAB_managedLedgerCacheEvictionWatermark": "",  # empty: falls to the bare name
    }
    profile = load(None, environ=environ)
    assert profile.settings.entry_cache == "a"
    assert profile.origin("sim.entryCache") == Origin("env BROKERLAB_sim.entryCache")
    assert profile.plugin_settings["ackState"] == AckPlugin(byte_limit=3000)
    assert profile.origin("sim.ackState.byteLimit") == Origin(
        "env BROKERLAB_sim_ackState_byteLimit"
    )
    assert profile.settings.watermark == 0.5
    assert profile.origin("managedLedgerCacheEvictionWatermark") == Origin(
        "env managedLedgerCacheEvictionWatermark"
    )


@pytest.mark.parametrize(
    ("names", "winner"),
    [
        (["BROKERLAB_sim_entryCache", "sim.entryCache"], "BROKERLAB_sim_entryCache"),
        (["sim.entryCache"], "sim.entryCache"),
    ],
)
def test_brokerlab_form_wins_over_the_bare_name(names: list[str], winner: str) -> None:
    profile = load(None, environ={name: name for name in names})
    assert profile.settings.entry_cache == winner


def test_only_modelled_keys_are_read_from_the_environment() -> None:
    environ = {
        "BROKERLAB_PROFILE": "x.conf",
        "BROKERLAB_DISABLE_PLUGINS": "a,b",
        "BROKERLAB_noSuchKey": "1",
        "clusterName": "c",
        "BROKERLAB_sim.include": "other.conf",
        "dispatchermaxreadbatchsize": "7",  # environment names are case-sensitive
        "batch": "7",  # field names are not keys: BaseSettings' own env source must be off
        "BATCH": "7",
    }
    profile = load(None, environ=environ)
    assert profile.origins == {}
    assert profile.unmodelled == {}


def test_bad_env_value_names_the_variable() -> None:
    message = error_of(None, environ={"BROKERLAB_dispatcherMaxReadBatchSize": "lots"})
    assert "env BROKERLAB_dispatcherMaxReadBatchSize" in message
    assert "'lots'" in message
    assert "an integer from 1 to 10000" in message


def test_environ_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKERLAB_dispatcherMaxReadBatchSize", "42")
    assert load_profile(None, model=Mini).settings.batch == 42


# --- --set -----------------------------------------------------------------------------------


def test_set_accepts_mappings_strings_and_a_single_string() -> None:
    assert load(None, {KEY: "7"}).settings.batch == 7
    assert load(None, [f"{KEY}=7", "sim.entryCache = x=y"]).settings.entry_cache == " x=y".strip()
    assert load(None, f"{KEY}=9").settings.batch == 9


def test_set_without_equals_is_an_error() -> None:
    message = error_of(None, ["dispatcherMaxReadBatchSize"])
    assert message.startswith("--set:")
    assert "'dispatcherMaxReadBatchSize'" in message
    assert "key=value" in message


def test_set_with_an_empty_key_is_an_error() -> None:
    assert "has no key" in error_of(None, ["=5"])


def test_unknown_set_key_is_an_error_even_in_lenient_mode(tmp_path: Path) -> None:
    path = write(tmp_path / "broker.conf", "clusterName=x\n")
    assert load(path).mode == "lenient"
    message = error_of(path, {"dispatcherMaxReadBatchSise": "5"})
    assert "--set" in message
    assert "'dispatcherMaxReadBatchSise'" in message
    assert "did you mean 'dispatcherMaxReadBatchSize'" in message


def test_include_cannot_be_set_from_the_command_line() -> None:
    assert "only be set in a profile file" in error_of(None, {"sim.include": "a.conf"})


def test_with_overrides_revalidates_on_top() -> None:
    profile = load(None, {KEY: "7"}, environ={"managedLedgerCacheSizeMB": "64"})
    swept = profile.with_overrides([f"{KEY}=8"])
    assert (profile.settings.batch, swept.settings.batch) == (7, 8)
    assert swept.settings.cache_mb == 64  # the environment captured at load time stays
    assert swept.origin(KEY) == Origin("--set")
    assert profile.with_overrides({KEY: ""}).settings.batch == 7  # empty: falls through
    with pytest.raises(ProfileError, match="out of range"):
        profile.with_overrides({KEY: "0"})


# --- includes --------------------------------------------------------------------------------


def test_includes_of_includes_relative_to_each_file(tmp_path: Path) -> None:
    write(tmp_path / "base" / "root.conf", "managedLedgerCacheSizeMB=1\n" + f"{KEY}=1\n")
    write(
        tmp_path / "base" / "mid.conf",
        "sim.include=root.conf\nmanagedLedgerCacheEvictionWatermark=0.2\n" + f"{KEY}=2\n",
    )
    path = write(tmp_path / "p.conf", f"sim.include = base/mid.conf\n{KEY}=3\n")
    profile = load(path)
    assert (profile.settings.cache_mb, profile.settings.watermark, profile.settings.batch) == (
        1,
        0.2,
        3,
    )
    assert profile.origin("managedLedgerCacheSizeMB") == Origin(str(tmp_path / "base/root.conf"), 1)
    assert profile.settings.include == ["base/mid.conf"]  # the including file's own value wins


def test_the_last_include_listed_wins(tmp_path: Path) -> None:
    write(tmp_path / "a.conf", f"{KEY}=1\nmanagedLedgerCacheSizeMB=1\n")
    write(tmp_path / "b.conf", f"{KEY}=2\n")
    path = write(tmp_path / "p.conf", "sim.include=a.conf, b.conf\n")
    profile = load(path)
    assert (profile.settings.batch, profile.settings.cache_mb) == (2, 1)


def test_a_shared_base_is_not_a_cycle(tmp_path: Path) -> None:
    write(tmp_path / "common.conf", f"{KEY}=5\n")
    write(tmp_path / "a.conf", "sim.include=common.conf\n")
    write(tmp_path / "b.conf", "sim.include=common.conf\n")
    path = write(tmp_path / "p.conf", "sim.include=a.conf,b.conf\n")
    assert load(path).settings.batch == 5


def test_includes_work_without_a_modelled_include_key(tmp_path: Path) -> None:
    write(tmp_path / "base.conf", f"{KEY}=5\n")
    path = write(tmp_path / "p.conf", "sim.include=base.conf\n")
    profile = load_profile(path, environ={}, model=NoInclude)
    assert profile.settings.batch == 5
    assert profile.mode == "strict"
    assert profile.origin("sim.include") == Origin(str(path), 1)
    assert "sim.include" not in profile.resolved()


def test_include_cycle_lists_the_chain(tmp_path: Path) -> None:
    a = write(tmp_path / "a.conf", "# a\nsim.include=b.conf\n")
    b = write(tmp_path / "b.conf", "sim.include=a.conf\n")
    message = error_of(a)
    assert message.startswith(f"{b}:1: key 'sim.include': value 'a.conf' forms an include cycle")
    assert f"{a}:2 -> {b}:1 -> {a}" in message


def test_self_include_is_a_cycle(tmp_path: Path) -> None:
    a = write(tmp_path / "a.conf", "sim.include=./a.conf\n")
    message = error_of(a)
    assert f"{a}:1:" in message
    assert f"include cycle: {a}:1 -> {a}" in message


def test_missing_include_is_an_error_at_the_include_line(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", "\nsim.include=nope.conf\n")
    message = error_of(path)
    assert message.startswith(f"{path}:2: key 'sim.include': value 'nope.conf'")
    assert f"names {str(tmp_path / 'nope.conf')!r}, which does not exist" in message
    assert "relative to this file) or ready profile names" in message


def test_directory_include_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "dir.conf").mkdir()
    path = write(tmp_path / "p.conf", "sim.include=dir.conf\n")
    assert "which is a directory, not a profile file" in error_of(path)


def test_bad_utf8_in_an_include_names_that_file_and_line(tmp_path: Path) -> None:
    base = tmp_path / "base.conf"
    base.write_bytes(b"a=1\nb=\xff\n")
    path = write(tmp_path / "p.conf", "sim.include=base.conf\n")
    message = error_of(path)
    assert f"{base}:2:" in message
    assert "UTF-8" in message


def test_missing_profile_is_an_error(tmp_path: Path) -> None:
    message = error_of(tmp_path / "missing.conf")
    assert str(tmp_path / "missing.conf") in message
    assert "not found" in message


# --- modes -----------------------------------------------------------------------------------


def test_a_file_without_sim_keys_is_lenient_and_keeps_unknown_keys(tmp_path: Path) -> None:
    path = write(tmp_path / "broker.conf", f"clusterName=standalone\nzkServers=\n{KEY}=5\n")
    profile = load(path)
    assert profile.mode == "lenient"
    assert profile.settings.batch == 5
    assert profile.unmodelled == {
        "clusterName": ("standalone", Origin(str(path), 1)),
        "zkServers": ("", Origin(str(path), 2)),
    }
    assert profile.origin("clusterName") == Origin(str(path), 1)
    assert "clusterName" not in profile.resolved()


def test_unmodelled_keys_never_change_behaviour(tmp_path: Path) -> None:
    plain = load(write(tmp_path / "a.conf", f"{KEY}=5\n"))
    extra = load(write(tmp_path / "b.conf", f"{KEY}=5\nclusterName=x\n"))
    assert extra.settings == plain.settings
    assert extra.fingerprint() == plain.fingerprint()


def test_a_file_with_a_sim_key_is_strict(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", "sim.entryCache=pip430\n\nmanagedLedgerCacheSizeMb=64\n")
    message = error_of(path)
    assert message.startswith(f"{path}:3: key 'managedLedgerCacheSizeMb'")
    assert "not a known key" in message
    assert "did you mean 'managedLedgerCacheSizeMB'" in message


def test_a_sim_key_in_an_include_makes_the_profile_strict(tmp_path: Path) -> None:
    write(tmp_path / "base.conf", "sim.entryCache=pip430\n")
    path = write(tmp_path / "p.conf", "sim.include=base.conf\nclusterName=x\n")
    write(tmp_path / "q.conf", "clusterName=x\n")
    assert "'clusterName'" in error_of(path)
    assert load(tmp_path / "q.conf").mode == "lenient"


def test_explicit_mode_wins(tmp_path: Path) -> None:
    strict_looking = write(tmp_path / "p.conf", "sim.entryCache=x\nclusterName=y\n")
    assert load(strict_looking, mode="lenient").unmodelled["clusterName"][0] == "y"
    plain = write(tmp_path / "broker.conf", "clusterName=y\n")
    assert "'clusterName'" in error_of(plain, mode="strict")
    with pytest.raises(ValueError, match="mode"):
        load(None, mode="loose")  # type: ignore[arg-type]


def test_unknown_plugin_key_suggests_the_plugin_key(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", "sim.ackState.bytelimit=2048\n")
    assert "did you mean 'sim.ackState.byteLimit'" in error_of(path)


def test_unmodelled_key_from_a_higher_file_wins(tmp_path: Path) -> None:
    write(tmp_path / "base.conf", "clusterName=base\nzkServers=z\n")
    path = write(tmp_path / "p.conf", "sim.include=base.conf\nclusterName=top\nzkServers=\n")
    profile = load(path, mode="lenient")
    assert profile.unmodelled["clusterName"] == ("top", Origin(str(path), 2))
    assert profile.unmodelled["zkServers"] == ("z", Origin(str(tmp_path / "base.conf"), 2))


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "value", "allowed", "problem"),
    [
        (f"{KEY}=0", "0", "an integer from 1 to 10000", "out of range"),
        (f"{KEY}=lots", "lots", "an integer from 1 to 10000", "not an integer"),
        (f"{KEY}=1_000", "1_000", "an integer from 1 to 10000", "not an integer"),
        (f"{KEY}=100.0", "100.0", "an integer from 1 to 10000", "not an integer"),
        ("managedLedgerCacheEvictionWatermark=1.5", "1.5", "a number from 0.0 to 1.0", "range"),
        ("managedLedgerCacheEvictionWatermark=high", "high", "a number from 0.0 to 1.0", "number"),
        ("managedLedgerCacheSizeMB=-1", "-1", "an integer >= 0", "out of range"),
        ("cacheEvictionByExpectedReadCount=yes", "yes", "true or false", "not true or false"),
        ("managedCursorInfoCompressionType=lz4", "lz4", "one of NONE, LZ4", "allowed values"),
        ("retryBackoffMs=1,x", "1,x", "a comma-separated list, each an integer", "item 2 ('x')"),
        ("sim.ackState.byteLimit=10", "10", "an integer from 1024 to 4096", "out of range"),
        ("sim.ackState.policy=lfu", "lfu", "one of lru, fifo", "allowed values"),
    ],
)
def test_every_value_error_names_file_line_key_value_and_range(
    tmp_path: Path, line: str, value: str, allowed: str, problem: str
) -> None:
    path = write(tmp_path / "p.conf", f"sim.entryCache=x\n# why\n{line}\n")
    message = error_of(path)
    key = line.split("=")[0]
    assert message.startswith(f"{path}:3: key '{key}': value '{value}' ")
    assert problem in message
    assert message.endswith(f"; allowed: {allowed}")


def test_several_problems_raise_the_first_by_line_and_note_the_rest(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.conf",
        "sim.entryCache=x\n"
        "sim.ackState.byteLimit=1\n"
        "cacheEvictionByExpectedReadCount=maybe\n"
        "dispatcherMaxReadBatchSize=0\n"
        "bogusKey=1\n",
    )
    with pytest.raises(ProfileError) as info:
        load(path, {"managedLedgerCacheSizeMB": "-5"})
    error = info.value
    assert error.origin == Origin(str(path), 2)
    assert error.key == "sim.ackState.byteLimit"
    notes = error.__notes__
    assert [note.split(": key")[0] for note in notes] == [
        f"also: {path}:3",
        f"also: {path}:4",
        f"also: {path}:5",
        "also: --set",
    ]


@pytest.mark.parametrize("layer", ["--set", "env", "include"])
def test_a_bad_value_covered_by_a_higher_layer_is_still_an_error(
    tmp_path: Path, layer: str
) -> None:
    bad = write(tmp_path / "base.conf", "sim.entryCache=x\nmanagedLedgerCacheSizeMB=x\n")
    overrides, environ, path = None, {}, bad
    if layer == "--set":
        overrides = {"managedLedgerCacheSizeMB": "8"}
    elif layer == "env":
        environ = {"BROKERLAB_managedLedgerCacheSizeMB": "8"}
    else:
        path = write(tmp_path / "top.conf", "sim.include=base.conf\nmanagedLedgerCacheSizeMB=8\n")
    message = error_of(path, overrides, environ=environ)
    assert message == (
        f"{bad}:2: key 'managedLedgerCacheSizeMB': value 'x' is not an integer; "
        "allowed: an integer >= 0"
    )


def test_a_covered_value_is_checked_alone_not_across_keys(tmp_path: Path) -> None:
    """A base's low=5 is fine under a file that also raises high: checks across keys see the
    winners only."""
    write(tmp_path / "base.conf", "sim.window.low=5\n")
    path = write(
        tmp_path / "top.conf", "sim.include=base.conf\nsim.window.low=6\nsim.window.high=9\n"
    )
    record = SettingsRecord(namespace="window", model=Window)
    profile = load_profile(path, plugin_settings=[record], environ={}, model=Mini)
    assert profile.get("sim.window.low") == 6


class Window(BaseModel):
    """A plugin model with a check across two keys."""

    low: int = Field(1, alias="low")
    high: int = Field(2, alias="high")

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


def test_a_model_level_check_names_the_file_and_the_plugin(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", "sim.window.low=5\n")
    record = SettingsRecord(namespace="window", model=Window)
    with pytest.raises(ProfileError) as info:
        load_profile(path, plugin_settings=[record], environ={}, model=Mini)
    assert str(info.value) == f"{path}: key 'sim.window.*': low must not exceed high"


def test_a_key_defined_twice_names_both_owners() -> None:
    clash = SettingsRecord(namespace="clash", model=NoInclude, prefix="")
    with pytest.raises(PluginError) as info:
        load_profile(None, plugin_settings=[clash], environ={}, model=Mini)
    assert str(info.value) == (
        "key 'dispatcherMaxReadBatchSize': is defined twice: by the broker settings Mini "
        "(field batch) and by the plugin settings namespace 'clash' (NoInclude) (field batch)"
    )


def test_two_plugins_with_one_namespace_is_an_error() -> None:
    other = SettingsRecord(namespace="ackState", model=Mini)
    with pytest.raises(PluginError, match="two plugin settings models"):
        load_profile(None, plugin_settings=[ACK, other], environ={}, model=Mini)


# --- Profile API -----------------------------------------------------------------------------


def test_resolved_lists_broker_then_plugin_keys_sorted_and_is_json() -> None:
    resolved = load(None, {"managedCursorInfoCompressionType": "LZ4"}).resolved()
    keys = list(resolved)
    broker = [key for key in keys if not key.startswith("sim.ackState.")]
    assert keys == [*sorted(broker), "sim.ackState.byteLimit", "sim.ackState.policy"]
    assert resolved["managedCursorInfoCompressionType"] == "LZ4"
    assert resolved["managedLedgerCacheSizeMB"] is None
    assert resolved["retryBackoffMs"] == []
    assert json.loads(json.dumps(resolved)) == resolved


def test_get_by_key_spelling() -> None:
    profile = load(None, {"managedLedgerCacheSizeMB": "12"})
    assert profile.get("managedLedgerCacheSizeMB") == 12
    with pytest.raises(KeyError):
        profile.get("cache_mb")


def test_fingerprint_is_stable_and_follows_values(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", f"{KEY}=5\n")
    first, again = load(path), load(path)
    assert first.fingerprint() == again.fingerprint()
    assert len(first.fingerprint()) == 64
    assert load(path, {KEY: "6"}).fingerprint() != first.fingerprint()
    assert load(None, {KEY: "5"}).fingerprint() == first.fingerprint()  # same values, same print
    assert load(path, {"sim.ackState.policy": "fifo"}).fingerprint() != first.fingerprint()


def test_profile_pickles(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", f"{KEY}=5\nclusterName=x\n")
    profile = load(path)
    copy = pickle.loads(pickle.dumps(profile))
    assert copy == profile
    assert copy.with_overrides({KEY: "6"}).settings.batch == 6


def test_profile_keys_and_allowed_values() -> None:
    keys = profile_keys(Mini, [ACK])
    assert list(keys)[:2] == ["sim.entryCache", "sim.evictionPredicates"]
    assert list(keys)[-2:] == ["sim.ackState.byteLimit", "sim.ackState.policy"]
    assert keys["sim.ackState.byteLimit"].namespace == "ackState"
    assert keys["sim.entryCache"].section == "Sim"
    assert keys["managedLedgerCacheSizeMB"].allowed == "an integer >= 0"
    assert keys["managedLedgerCacheSizeMB"].default is None
    assert keys["sim.evictionPredicates"].allowed == "a comma-separated list"
    assert keys["sim.evictionPredicates"].default == []
    assert allowed_values(Mini.model_fields["by_expected"]) == "true or false"


def test_a_bound_at_the_java_type_limit_is_not_spelled_out() -> None:
    """A key Pulsar leaves unbounded carries its Java type's limit as its bound; the allowed
    values then read as the type alone."""

    class Unbounded(BaseModel):
        any_int: int = Field(0, ge=JAVA_INT.low)
        any_long: JavaLong = Field(0, ge=JAVA_LONG.low, le=JAVA_LONG.high)
        positive_long: JavaLong = Field(1, ge=1)

    fields = Unbounded.model_fields
    assert allowed_values(fields["any_int"]) == "an integer"
    assert allowed_values(fields["any_long"]) == "an integer"
    assert allowed_values(fields["positive_long"]) == "an integer >= 1"


def test_property_text() -> None:
    assert [property_text(v) for v in (None, True, False, 0.9, 7, ("a", "b"), "x")] == [
        "",
        "true",
        "false",
        "0.9",
        "7",
        "a,b",
        "x",
    ]


# --- the real model and fixtures ---------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "pulsar"
needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"Pulsar fixtures not found at {FIXTURES} (../shared beside repo)"
)


def broker_settings() -> type[BaseModel]:
    model = pytest.importorskip("brokerlab.profiles.model", reason="BrokerSettings not written yet")
    return model.BrokerSettings  # type: ignore[no-any-return]


@needs_fixtures
@pytest.mark.parametrize("name", ["broker.conf", "standalone.conf"])
def test_real_pulsar_files_load_leniently(name: str) -> None:
    model = broker_settings()
    profile = load_profile(FIXTURES / name, environ={}, model=model)
    assert profile.mode == "lenient"
    assert profile.get("managedLedgerCacheEvictionWatermark") == 0.9
    assert profile.get("managedLedgerCacheSizeMB") is None  # "managedLedgerCacheSizeMB=" in file
    assert profile.origin("managedLedgerCacheEvictionWatermark") is not None
    # broker.conf has ~440 keys and standalone.conf ~320; the model knows a few dozen of them.
    assert len(profile.unmodelled) >= {"broker.conf": 300, "standalone.conf": 250}[name]
    assert "clusterName" in profile.unmodelled
    # Cross-check with a plain reading of the file (it has no continuations or escapes).
    text = (FIXTURES / name).read_text(encoding="utf-8")
    keys = {
        re.match(r"\s*([^=:\s]+)", line).group(1)  # type: ignore[union-attr]
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "!"))
    }
    assert set(profile.unmodelled) == keys - set(profile_keys(model))


@needs_fixtures
def test_real_broker_conf_values_are_applied() -> None:
    profile = load_profile(FIXTURES / "broker.conf", environ={}, model=broker_settings())
    assert profile.get("dispatcherMaxReadBatchSize") == 100
    assert profile.origin("dispatcherMaxReadBatchSize") == Origin(
        str(FIXTURES / "broker.conf"), 422
    )
    swept = profile.with_overrides({"managedLedgerCacheEvictionWatermark": "0.5"})
    assert swept.get("managedLedgerCacheEvictionWatermark") == 0.5


def test_real_model_typo_suggests_the_pulsar_key(tmp_path: Path) -> None:
    path = write(tmp_path / "p.conf", "sim.entryCache=pip430\nmanagedLedgerCacheSizeMb=64\n")
    with pytest.raises(ProfileError) as info:
        load_profile(path, environ={}, model=broker_settings())
    assert "did you mean 'managedLedgerCacheSizeMB'" in str(info.value)
    assert f"{path}:2" in str(info.value)


@pytest.mark.parametrize(
    ("line", "allowed"),
    [
        ("managedLedgerCacheSizeMB=2147483648", "an integer >= 0, at most 2147483647 (a Java int)"),
        (
            "managedLedgerCacheSizeMB=99999999999999999999",
            "an integer >= 0, at most 2147483647 (a Java int)",
        ),
        (
            "managedLedgerMaxUnackedRangesToPersistInZooKeeper=-2147483649",
            "an integer, at least -2147483648 (a Java int)",
        ),
        (
            "managedLedgerCacheEvictionTimeThresholdMillis=9223372036854775808",
            "an integer >= 0, at most 9223372036854775807 (a Java long)",
        ),
    ],
)
def test_integers_beyond_their_java_type_are_out_of_range(
    tmp_path: Path, line: str, allowed: str
) -> None:
    path = write(tmp_path / "p.conf", f"sim.entryCache=pip430\n{line}\n")
    key, value = line.split("=")
    with pytest.raises(ProfileError) as info:
        load_profile(path, environ={})
    assert str(info.value) == (
        f"{path}:2: key '{key}': value '{value}' is out of range; allowed: {allowed}"
    )


@pytest.mark.parametrize(
    "key",
    [
        "managedLedgerCacheEvictionTimeThresholdMillis",
        # ServiceConfiguration: private long managedLedgerCacheEvictionIntervalMs = 10;
        "managedLedgerCacheEvictionIntervalMs",
    ],
)
def test_java_longs_take_values_beyond_a_java_int(key: str) -> None:
    profile = load_profile(None, {key: "9223372036854775807"}, environ={})
    assert profile.get(key) == 2**63 - 1


def test_default_model_is_broker_settings() -> None:
    model = broker_settings()
    assert isinstance(load_profile(None, environ={}).settings, model)
    import brokerlab.profiles

    assert brokerlab.profiles.BrokerSettings is model


# ---- ready profiles by name ---------------------------------------------------------------------


def test_a_ready_profile_loads_by_name_and_by_include(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pulsar-4.2`` names profiles/pulsar-4.2.conf from any folder, and a profile elsewhere
    includes it by that name; a file of the same name in the current folder still wins."""
    monkeypatch.chdir(tmp_path)
    by_name = brokerlab.load_profile("pulsar-4.2")
    assert by_name.path == ROOT / "profiles" / "pulsar-4.2.conf"
    mine = tmp_path / "mine.conf"
    mine.write_text("sim.include=pulsar-5.0\nmanagedLedgerCacheSizeMB=64\n", encoding="utf-8")
    profile = brokerlab.load_profile(mine)
    assert profile.get("managedLedgerCacheSizeMB") == 64
    assert profile.get("managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed") is False  # 5.0
    (tmp_path / "pulsar-4.2").write_text("sim.entryCache=legacy\n", encoding="utf-8")
    assert brokerlab.load_profile("pulsar-4.2").get("sim.entryCache") == "legacy"


def test_an_unknown_profile_name_lists_the_ready_ones(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as caught:
        brokerlab.load_profile(tmp_path / "pulsar-9.conf")
    text = str(caught.value)
    assert "profile file not found" in text and "pulsar-4.2, pulsar-5.0" in text
