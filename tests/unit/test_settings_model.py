"""The broker settings model: every key is real, defaults match Pulsar, bounds hold, metadata is
complete.

Validation goes through ``BrokerSettings.model_validate`` so that no settings source (environment,
files) takes part: these tests are about the model alone.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from pydantic import TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from brokerlab.broker.broker import BrokerTuning
from brokerlab.profiles.model import SECTIONS, BrokerSettings, field_for_key

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
PULSAR = SHARED / "fixtures" / "pulsar"
SPECS = SHARED / "specs"

needs_shared = pytest.mark.skipif(
    not (PULSAR / "broker.conf").is_file() or not SPECS.is_dir(),
    reason=f"shared fixtures and specs not found at {SHARED}",
)

CONF_KEY = re.compile(r"^(#?)\s*([A-Za-z][A-Za-z0-9_.]*)\s*=(.*)$")
SOURCES = {"pulsar", "pip-299", "pip-81", "pip-448", "sim"}
PROPOSALS = {"pip-299", "pip-81", "pip-448"}

# Pulsar keys newer than the broker.conf fixture (a 4.0-era file), with where they are defined.
NEWER_THAN_FIXTURE = {
    "managedLedgerMaxReadsInFlightPermitsAcquireTimeoutMillis": (
        "apache/pulsar ServiceConfiguration, read into ManagedLedgerFactoryConfig for the "
        "InflightReadsLimiter's acquire timeout (default 60,000 ms)"
    ),
    "managedLedgerMaxReadsInFlightPermitsAcquireQueueSize": (
        "apache/pulsar ServiceConfiguration, read into ManagedLedgerFactoryConfig for the "
        "InflightReadsLimiter's queue (default 50,000)"
    ),
}

# Keys whose default deliberately differs from the broker.conf fixture, with the reason.
DEFAULT_EXCEPTIONS = {
    "acknowledgmentAtBatchIndexLevelEnabled": (
        "ack-state.md §9: true in Pulsar 4.2.x and 5.0 (brokerlab's baseline); the fixture is a "
        "4.0-era broker.conf where it is false"
    ),
}

FIELDS: dict[str, FieldInfo] = dict(BrokerSettings.model_fields)
ALIASES: dict[str, str] = {name: info.alias or name for name, info in FIELDS.items()}


def conf_keys(path: Path) -> dict[str, str | None]:
    """Every key a .conf file names; the value of its active (uncommented) line, else None."""
    keys: dict[str, str | None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = CONF_KEY.match(line)
        if match is None:
            continue
        commented, key, value = match.groups()
        if commented:
            keys.setdefault(key, None)
        else:
            keys[key] = value.strip()
    return keys


def file_value(info: FieldInfo, raw: str) -> Any:
    """A broker.conf value converted to the field's type (bounds aside)."""
    assert info.annotation is not None
    return TypeAdapter(info.annotation).validate_python(raw)


def extra(info: FieldInfo) -> dict[str, Any]:
    assert isinstance(info.json_schema_extra, dict)
    return info.json_schema_extra


def snake_case(key: str) -> str:
    key = key.replace(".", "_")
    key = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", key)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower()


@pytest.fixture(scope="module")
def broker_conf() -> dict[str, str | None]:
    return conf_keys(PULSAR / "broker.conf")


@pytest.fixture(scope="module")
def known_keys(broker_conf: dict[str, str | None]) -> set[str]:
    return set(broker_conf) | set(conf_keys(PULSAR / "standalone.conf")) | set(NEWER_THAN_FIXTURE)


@pytest.fixture(scope="module")
def spec_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(SPECS.glob("*.md")))


def named_in(text: str, key: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_.]){re.escape(key)}(?![A-Za-z0-9_])", text) is not None


# --- keys are real ---------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("alias", sorted(ALIASES.values()))
def test_alias_is_a_real_key(alias: str, known_keys: set[str], spec_text: str) -> None:
    assert alias.startswith("sim.") or alias in known_keys or named_in(spec_text, alias), (
        f"{alias} is neither in broker.conf/standalone.conf, nor named in a spec, nor a sim. key"
    )


@needs_shared
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_source_matches_where_the_key_lives(
    name: str, known_keys: set[str], spec_text: str
) -> None:
    alias, source = ALIASES[name], extra(FIELDS[name])["source"]
    assert (source == "sim") == alias.startswith("sim.")
    if source in PROPOSALS:
        # Proposal keys do not exist in Pulsar, so the spec that describes them must name them.
        assert alias not in known_keys
        assert named_in(spec_text, alias)


def test_no_kafka_keys() -> None:
    dotted = [a for a in ALIASES.values() if "." in a and not a.startswith("sim.")]
    assert dotted == []


# --- defaults --------------------------------------------------------------------------------


@needs_shared
def test_defaults_match_broker_conf(broker_conf: dict[str, str | None]) -> None:
    compared = 0
    for name, info in FIELDS.items():
        alias = ALIASES[name]
        raw = broker_conf.get(alias)
        if not raw or alias in DEFAULT_EXCEPTIONS:
            continue
        from_file = file_value(info, raw)
        assert info.default == from_file, f"{alias}: default {info.default!r}, broker.conf {raw!r}"
        compared += 1
    assert compared >= 20


@needs_shared
@pytest.mark.parametrize("alias", sorted(DEFAULT_EXCEPTIONS))
def test_default_exceptions_really_differ(alias: str, broker_conf: dict[str, str | None]) -> None:
    found = field_for_key(alias)
    assert found is not None
    raw = broker_conf.get(alias)
    assert raw, f"{alias} is no longer set in broker.conf; drop the exception"
    assert file_value(found[1], raw) != found[1].default


def test_defaults_validate() -> None:
    settings = BrokerSettings.model_validate({})
    for name, info in FIELDS.items():
        assert getattr(settings, name) == info.default


def test_spec_defaults() -> None:
    s = BrokerSettings.model_validate({})
    assert s.managed_ledger_max_ack_state_in_bytes_to_persist == 5 * 1024 * 1024
    assert s.dispatcher_pause_on_ack_persistent_state_enabled is True
    assert s.dispatcher_pause_on_ack_state_persistent_enabled is False
    assert s.max_individual_ack_cache_bytes_per_cursor == 3 * 1024 * 1024
    assert s.enable_lru_cache_max_unacked_ranges is True
    assert s.delayed_delivery_prune_min_interval_millis == 0
    assert s.delayed_delivery_prune_eligible_ratio == 0.5
    assert s.delayed_delivery_topic_manager_idle_millis == 0
    assert s.cache_eviction_by_expected_read_count is True
    assert s.managed_ledger_cache_eviction_extend_ttl_of_recently_accessed is True
    assert s.sim_entry_cache == "pip430"
    assert s.sim_ack_state_persister == "range-count"
    assert s.sim_cursor_container is None
    assert s.sim_eviction_predicates == () and s.sim_include == ()


# --- bounds ----------------------------------------------------------------------------------


def _step_below(value: float, integral: bool) -> float:
    return value - 1 if integral else math.nextafter(value, -math.inf)


def _step_above(value: float, integral: bool) -> float:
    return value + 1 if integral else math.nextafter(value, math.inf)


def _bound_cases() -> list[Any]:
    cases = []
    for name, info in FIELDS.items():
        integral = "int" in str(info.annotation)
        for meta in info.metadata:
            for kind in ("ge", "gt", "le", "lt"):
                limit = getattr(meta, kind, None)
                if isinstance(meta, annotated_types.BaseMetadata) and limit is not None:
                    cases.append(
                        pytest.param(ALIASES[name], kind, limit, integral, id=f"{name}-{kind}")
                    )
    return cases


BOUND_CASES = _bound_cases()


def _valid(alias: str, value: object) -> bool:
    try:
        BrokerSettings.model_validate({alias: value})
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(("alias", "kind", "limit", "integral"), BOUND_CASES)
def test_bound(alias: str, kind: str, limit: float, integral: bool) -> None:
    below, above = _step_below(limit, integral), _step_above(limit, integral)
    if kind == "ge":
        assert _valid(alias, limit) and not _valid(alias, below)
    elif kind == "gt":
        assert _valid(alias, above) and not _valid(alias, limit)
    elif kind == "le":
        assert _valid(alias, limit) and not _valid(alias, above)
    else:
        assert _valid(alias, below) and not _valid(alias, limit)


# Numbers that take every value of their Java type, NaN included, with the reason.
ANY_DOUBLE = {
    "delayed_delivery_prune_eligible_ratio": (
        "the PIP-448 draft clamps any double into [0, 1], NaN meaning 0.5 "
        "(delayed-delivery.md §4.4)"
    ),
}


@pytest.mark.parametrize(
    "name", sorted(n for n, i in FIELDS.items() if i.annotation is float and n not in ANY_DOUBLE)
)
def test_ratios_and_rates_reject_nan(name: str) -> None:
    assert not _valid(ALIASES[name], math.nan)


def test_every_number_has_a_lower_bound() -> None:
    unbounded = [
        name
        for name, info in FIELDS.items()
        if any(t in str(info.annotation) for t in ("int", "float"))
        and not any(hasattr(m, "ge") or hasattr(m, "gt") for m in info.metadata)
    ]
    assert unbounded == sorted(ANY_DOUBLE)


def test_pip299_byte_limit_range() -> None:
    key = "managedLedgerMaxAckStateInBytesToPersist"
    assert _valid(key, 1024) and _valid(key, 5_242_880)
    assert not _valid(key, 1023) and not _valid(key, 5_242_881)


def test_enumerations_and_lists() -> None:
    assert _valid("managedCursorInfoCompressionType", "LZ4")
    with pytest.raises(ValidationError):
        BrokerSettings.model_validate({"managedCursorInfoCompressionType": "lz4"})
    s = BrokerSettings.model_validate(
        {"sim.include": "base.conf, more.conf,", "sim.evictionPredicates": ("a",)}
    )
    assert s.sim_include == ("base.conf", "more.conf")
    assert s.sim_eviction_predicates == ("a",)


# --- metadata --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_field_metadata(name: str) -> None:
    info = FIELDS[name]
    meta = extra(info)
    assert info.alias, "every field is read by its profile key"
    assert name == snake_case(info.alias)
    assert info.description and len(info.description) >= 20
    assert meta["section"] in SECTIONS
    assert meta["source"] in SOURCES
    assert isinstance(meta["spec"], str) and meta["spec"]


@needs_shared
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_spec_reference_exists(name: str) -> None:
    for cited in re.findall(r"[\w-]+\.md", extra(FIELDS[name])["spec"]):
        assert (SPECS / cited).is_file() or (SHARED / cited).is_file(), cited


def test_every_section_is_used() -> None:
    used = {extra(info)["section"] for info in FIELDS.values()}
    assert used == set(SECTIONS)


def test_field_for_key() -> None:
    for name, alias in ALIASES.items():
        found = field_for_key(alias)
        assert found is not None and found[0] == name and found[1] is FIELDS[name]
    assert field_for_key("managedLedgerCacheSizeMb") is None
    assert field_for_key("managed_ledger_cache_size_mb") is None


# --- model behaviour -------------------------------------------------------------------------


def test_frozen_and_strict() -> None:
    settings = BrokerSettings.model_validate({})
    with pytest.raises(ValidationError):
        settings.max_message_size = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        BrokerSettings.model_validate({"managedLedgerCacheSizeMb": 1})


def test_field_names_are_accepted_too() -> None:
    settings = BrokerSettings.model_validate({"managed_ledger_cache_size_mb": 7})
    assert settings.cache_size_bytes == 7 * 1024 * 1024


@pytest.mark.parametrize(
    ("values", "expected_mb"),
    [
        ({}, 4096 // 5),
        ({"sim.maxDirectMemoryMB": 100}, 64),
        ({"sim.maxDirectMemoryMB": 10_000}, 2000),
        ({"managedLedgerCacheSizeMB": 0}, 0),
        ({"managedLedgerCacheSizeMB": 512, "sim.maxDirectMemoryMB": 100}, 512),
    ],
)
def test_cache_size_bytes(values: dict[str, int], expected_mb: int) -> None:
    assert BrokerSettings.model_validate(values).cache_size_bytes == expected_mb * 1024 * 1024


def test_continue_caching_window() -> None:
    key = "managedLedgerContinueCachingAddedEntriesAfterLastActiveCursorLeavesMillis"
    assert BrokerSettings.model_validate({}).continue_caching_window_ms == 2000
    ttl = {"managedLedgerCacheEvictionTimeThresholdMillis": 300}
    assert BrokerSettings.model_validate(ttl).continue_caching_window_ms == 600
    assert BrokerSettings.model_validate({**ttl, key: 0}).continue_caching_window_ms == 0


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, "sorted-list"),
        ({"cacheEvictionByExpectedReadCount": False}, "heap"),
        (
            {"cacheEvictionByExpectedReadCount": False, "sim.cursorContainer": "sorted-list"},
            "sorted-list",
        ),
    ],
)
def test_cursor_container_name(values: dict[str, Any], expected: str) -> None:
    assert BrokerSettings.model_validate(values).cursor_container_name == expected


def test_deprecated_zookeeper_threshold() -> None:
    store = "managedLedgerMaxUnackedRangesToPersistInMetadataStore"
    zk = "managedLedgerMaxUnackedRangesToPersistInZooKeeper"
    assert (
        BrokerSettings.model_validate({store: 50}).unacked_ranges_to_persist_in_metadata_store == 50
    )
    both = BrokerSettings.model_validate({store: 50, zk: 7})
    assert both.unacked_ranges_to_persist_in_metadata_store == 7


@pytest.mark.parametrize("zk", [0, -1, -7, -(2**31)])
def test_a_zookeeper_threshold_of_zero_or_less_leaves_the_metadata_store_key(zk: int) -> None:
    """``managedLedgerMaxUnackedRangesToPersistInZooKeeper`` is an ``int`` with no minimum, and
    ``getManagedLedgerMaxUnackedRangesToPersistInMetadataStore()`` takes it only when it is above
    0 (apache/pulsar ``pulsar-broker-common/.../ServiceConfiguration.java`` at
    0023b9371b309b64aca6f47f03cd05aba78bb280): 0 and every negative value leave the
    metadata-store key in effect."""
    store = "managedLedgerMaxUnackedRangesToPersistInMetadataStore"
    zk_key = "managedLedgerMaxUnackedRangesToPersistInZooKeeper"
    settings = BrokerSettings.model_validate({store: 50, zk_key: zk})
    assert settings.unacked_ranges_to_persist_in_metadata_store == 50


def test_max_message_size_stops_where_pulsar_stops() -> None:
    """apache/pulsar ``ServiceConfiguration.java`` at 0023b9371b309b64aca6f47f03cd05aba78bb280
    declares ``maxMessageSize`` with ``@FieldContext(maxValue = Integer.MAX_VALUE -
    Commands.MESSAGE_SIZE_FRAME_PADDING)`` (the padding is 10 * 1024), which
    ``PulsarConfigurationLoader.isComplete`` enforces at start-up."""
    assert _valid("maxMessageSize", 2**31 - 1 - 10 * 1024)
    assert not _valid("maxMessageSize", 2**31 - 10 * 1024)


@pytest.mark.parametrize(
    ("ms", "effective"), [(10, 10), (1_000_000, 1_000_000), (2**40, 1_000_000)]
)
def test_the_cache_eviction_interval_is_capped_as_pulsar_caps_it(ms: int, effective: int) -> None:
    """apache/pulsar ``ServiceConfiguration.java`` at 0023b9371b309b64aca6f47f03cd05aba78bb280:
    ``getManagedLedgerCacheEvictionIntervalMs()`` returns at most
    ``MAX_ML_CACHE_EVICTION_INTERVAL_MS`` (1000000) when the deprecated frequency is unset, and
    ``ManagedLedgerClientFactory`` hands the factory that getter's value."""
    settings = BrokerSettings.model_validate({"managedLedgerCacheEvictionIntervalMs": ms})
    assert settings.cache_eviction_interval_ms == effective
    tuning = BrokerTuning.from_settings(settings)
    assert tuning.cache_eviction_interval_ns == effective * 1_000_000


# Keys whose bound is narrower than what Pulsar accepts, because brokerlab cannot give the other
# values Pulsar's meaning (or that meaning was not established); the description says why.
NARROWER_THAN_PULSAR = [
    "managedLedgerMaxEntriesPerLedger",
    "managedLedgerMaxReadsInFlightSizeInMB",
    "maxMessageSize",
    "defaultNumberOfNamespaceBundles",
    "dispatcherMaxReadBatchSize",
    "dispatcherMaxReadSizeBytes",
    "dispatcherMinReadBatchSize",
    "dispatcherReadFailureBackoffInitialTimeInMs",
    "dispatcherReadFailureBackoffMaxTimeInMs",
    "managedLedgerCacheSizeMB",
    "managedLedgerCacheEvictionWatermark",
    "managedLedgerCacheEvictionTimeThresholdMillis",
    "managedLedgerContinueCachingAddedEntriesAfterLastActiveCursorLeavesMillis",
    "managedLedgerCursorBackloggedThreshold",
]


@pytest.mark.parametrize("alias", NARROWER_THAN_PULSAR)
def test_a_bound_narrower_than_pulsars_says_why(alias: str) -> None:
    """Each of these keys takes values in Pulsar that brokerlab refuses (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6 gives none of them
    a ``@FieldContext`` minimum, and ``maxMessageSize`` only a maximum): the description names
    what Pulsar does with them and why brokerlab does not follow."""
    found = field_for_key(alias)
    assert found is not None
    description = found[1].description or ""
    assert "Pulsar" in description and "brokerlab" in description


@pytest.mark.parametrize("threshold", [-1, -(2**63)])
def test_the_cursor_info_compression_threshold_takes_any_long(threshold: int) -> None:
    """apache/pulsar ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6
    declares ``managedCursorInfoCompressionThresholdInBytes`` as a long with no minimum ("0 means
    compression will always apply"; a negative threshold compresses every state as well)."""
    assert _valid("managedCursorInfoCompressionThresholdInBytes", threshold)
