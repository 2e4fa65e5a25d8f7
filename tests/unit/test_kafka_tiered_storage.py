"""The Kafka family end to end: profiles from server.properties, the tiered-storage workloads,
the simulator's stale-index accounting, and its place in the framework (CLI, matrix cells)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from brokerlab import load_profile
from brokerlab.errors import ProfileError, WorkloadError
from brokerlab.host import PluginHost
from brokerlab.metrics import metrics_of
from brokerlab.profiles import Profile
from brokerlab.simulation import load_workload, profile_simulators, simulate
from brokerlab.spark.cells import build_cells
from brokerlab.spark.executor import HostConfig, run_cells
from brokerlab.workloads import parse_workload
from brokerlab_plugins.kafka_remote_index.model import KafkaWorkload
from brokerlab_plugins.kafka_remote_index.plugin import scale_kafka_workload
from brokerlab_plugins.kafka_remote_index.settings import NAMESPACE, KafkaIndexCacheSettings
from brokerlab_plugins.kafka_remote_index.tiered_storage import TieredStorageModel

ROOT = Path(__file__).resolve().parents[2]
KAFKA_FIXTURE = ROOT.parent / "shared" / "fixtures" / "kafka" / "server.properties"
SIZE_ONLY = ROOT / "profiles" / "kafka-size-only.conf"
WITH_TTL = ROOT / "profiles" / "kafka-ttl.conf"

# One hour, 4 partitions led here, 2 of which move away at 10 minutes; 5-minute segments,
# 30 minutes of remote history and retention: small enough for a unit test, yet segments of the
# moved partitions are deleted by the other leader while this broker still caches them.
SMALL = textwrap.dedent(
    """
    simulator = "kafka-tiered-storage"
    name = "kafka-small"
    duration_s = 3600

    [[partitions]]
    name = "moved"
    count = 2
    segment_interval_s = 300
    history_s = 1800
    retention_s = 1800
    index = { offset_kib = { min = 100, max = 200 }, time_kib = { min = 100, max = 300 } }

    [[partitions]]
    name = "kept"
    count = 2
    segment_interval_s = 300
    history_s = 1800
    retention_s = 1800
    index = { offset_kib = { min = 100, max = 200 }, time_kib = { min = 100, max = 300 } }

    [[consumers]]
    name = "replay-moved"
    partitions = "moved"
    from_age_s = 1800
    at_end = "loop"
    fetch_rate = 1.0

    [[consumers]]
    name = "replay-kept"
    partitions = "kept"
    from_age_s = 1800
    at_end = "loop"
    fetch_rate = 1.0

    [[events]]
    at_s = 600
    kind = "leadership-change"
    partitions = "moved"
    """
)


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost()


@pytest.fixture(scope="module")
def small(host: PluginHost) -> KafkaWorkload:
    workload = parse_workload(SMALL, "kafka-small.toml", host.workload_models())
    assert isinstance(workload, KafkaWorkload)
    return workload


def kafka_settings(profile: Profile) -> KafkaIndexCacheSettings:
    settings = profile.plugin_settings[NAMESPACE]
    assert isinstance(settings, KafkaIndexCacheSettings)
    return settings


def run_model(
    host: PluginHost, workload: KafkaWorkload, seed: int = 0, **overrides: str
) -> TieredStorageModel:
    profile = load_profile(SIZE_ONLY, overrides, host=host)
    model = TieredStorageModel(workload, kafka_settings(profile), seed)
    model.build()
    model.run()
    return model


# ---- profiles ---------------------------------------------------------------------------------


def test_real_server_properties_loads_leniently_with_kafka_defaults(host: PluginHost) -> None:
    profile = load_profile(KAFKA_FIXTURE, host=host)
    assert profile.mode == "lenient"
    assert "log.segment.bytes" in profile.unmodelled
    settings = kafka_settings(profile)
    assert settings.total_size_bytes == 1_073_741_824
    assert settings.ttl_ms == 900_000
    assert settings.policy == "w-tinylfu"
    # Nothing of it is modelled, so the matrix may pair it with any simulator.
    assert profile_simulators(profile, host) == set()


def test_kafka_profiles_set_the_dotted_keys(host: PluginHost) -> None:
    size_only = load_profile(SIZE_ONLY, host=host)
    with_ttl = load_profile(WITH_TTL, host=host)
    assert size_only.mode == with_ttl.mode == "strict"
    assert kafka_settings(size_only).ttl_ms == -1
    assert kafka_settings(with_ttl).ttl_ms == 900_000
    assert size_only.origin("remote.log.index.file.cache.ttl.ms") is not None
    assert profile_simulators(with_ttl, host) == {"kafka-tiered-storage"}


def test_size_below_one_byte_is_refused_with_its_key_and_range(host: PluginHost) -> None:
    with pytest.raises(ProfileError) as caught:
        load_profile(SIZE_ONLY, ["remote.log.index.file.cache.total.size.bytes=0"], host=host)
    text = str(caught.value)
    assert "remote.log.index.file.cache.total.size.bytes" in text and ">= 1" in text


def test_unknown_policy_lists_the_allowed_ones(host: PluginHost) -> None:
    with pytest.raises(ProfileError) as caught:
        load_profile(SIZE_ONLY, ["sim.kafka.indexCachePolicy=arc"], host=host)
    assert "w-tinylfu" in str(caught.value) and "lru" in str(caught.value)


# ---- workloads --------------------------------------------------------------------------------


def test_a_workload_naming_an_unknown_simulator_is_refused(host: PluginHost) -> None:
    with pytest.raises(WorkloadError) as caught:
        parse_workload('simulator = "kafka"\nname = "x"\n', "x.toml", host.workload_models())
    text = str(caught.value)
    assert "x.toml:1" in text and "kafka-tiered-storage" in text and "pulsar" in text


def test_kafka_workload_errors_point_at_the_line(host: PluginHost) -> None:
    broken = SMALL.replace('partitions = "moved"\nfrom_age_s', 'partitions = "gone"\nfrom_age_s')
    with pytest.raises(WorkloadError) as caught:
        parse_workload(broken, "k.toml", host.workload_models())
    assert "'gone' is not defined" in str(caught.value)
    typo = SMALL.replace("fetch_rate = 1.0", 'fetch_rate = "fast"', 1)
    with pytest.raises(WorkloadError) as caught:
        parse_workload(typo, "k.toml", host.workload_models())
    line = typo.splitlines().index('fetch_rate = "fast"') + 1
    assert f"k.toml:{line}: key 'consumers[0].fetch_rate'" in str(caught.value)
    assert "is not a number" in str(caught.value)


def test_builtin_kafka_workloads_validate(host: PluginHost) -> None:
    for name in ("kafka-leadership-change", "kafka-read-from-replica", "kafka-backfill-tail"):
        assert isinstance(load_workload(host, name), KafkaWorkload)


def test_scaling_keeps_the_time_axis_and_shrinks_partitions(host: PluginHost) -> None:
    workload = load_workload(host, "kafka-leadership-change")
    assert isinstance(workload, KafkaWorkload)
    short = scale_kafka_workload(workload, 0.1)
    assert short.duration_s == workload.duration_s
    assert short.events == workload.events
    assert [g.count for g in short.partitions] == [2, 1]  # 16 and 4, at least one each
    with pytest.raises(WorkloadError):
        scale_kafka_workload(workload, 1.5)


# ---- the model --------------------------------------------------------------------------------


def cached_stale_bytes(model: TieredStorageModel) -> int:
    """Reference: resident entries whose segment no longer exists remotely, found from scratch."""
    existing = {
        segment.remote.uuid
        for members in model.partitions.values()
        for partition in members
        for segment in partition.segments
    }
    total = 0
    for uuid in model.cache.resident_uuids():
        entry = model.cache.peek(uuid)
        assert entry is not None
        if uuid not in existing:
            total += entry.weight
    return total


@pytest.mark.parametrize("ttl", ["-1", "900000"])
@pytest.mark.parametrize("policy", ["lru", "w-tinylfu"])
def test_stale_bytes_equal_a_recount_of_the_cache(
    host: PluginHost, small: KafkaWorkload, ttl: str, policy: str
) -> None:
    model = run_model(
        host,
        small,
        **{"remote.log.index.file.cache.ttl.ms": ttl, "sim.kafka.indexCachePolicy": policy},
    )
    assert model.stale_bytes == cached_stale_bytes(model)
    assert model.metrics()["index_cache_stale_entries_end"] == len(model.stale)


def test_size_only_holds_stale_indexes_and_the_ttl_releases_them(
    host: PluginHost, small: KafkaWorkload
) -> None:
    held = run_model(host, small, **{"remote.log.index.file.cache.ttl.ms": "-1"}).metrics()
    ttl_ms = 600_000
    released = run_model(
        host, small, **{"remote.log.index.file.cache.ttl.ms": str(ttl_ms)}
    ).metrics()
    assert held["index_cache_stale_bytes_end"] > 0
    assert held["index_cache_evictions_expired"] == 0
    assert released["index_cache_stale_bytes_end"] == 0
    assert released["index_cache_evictions_expired"] > 0
    # An entry idle since the move expires ttl after its last access; it is stale only from its
    # segment's deletion, so it is never held stale longer than the TTL plus one maintenance gap.
    assert released["index_cache_stale_residence_max_s"] <= ttl_ms / 1000 + 60
    assert released["index_cache_stale_byte_seconds"] < held["index_cache_stale_byte_seconds"]


def test_a_leader_clears_what_it_deletes(host: PluginHost, small: KafkaWorkload) -> None:
    stays = small.model_copy(update={"events": ()})
    model = run_model(host, stays)
    metrics = model.metrics()
    assert metrics["leadership_changes"] == 0
    assert metrics["index_cache_stale_bytes_peak"] == 0
    assert metrics["index_cache_removals_explicit"] > 0
    assert cached_stale_bytes(model) == 0


def test_fetches_served_elsewhere_never_touch_the_cache(
    host: PluginHost, small: KafkaWorkload
) -> None:
    elsewhere = tuple(g.model_copy(update={"led_here": False}) for g in small.partitions)
    model = run_model(host, small.model_copy(update={"partitions": elsewhere, "events": ()}))
    assert model.metrics()["index_lookups"] == 0
    from_replica = tuple(c.model_copy(update={"read_from_replica": True}) for c in small.consumers)
    workload = small.model_copy(
        update={"partitions": elsewhere, "consumers": from_replica, "events": ()}
    )
    metrics = run_model(host, workload).metrics()
    assert metrics["index_lookups"] > 0
    assert metrics["index_cache_removals_explicit"] == 0  # a follower is never told
    assert metrics["index_cache_stale_bytes_end"] > 0


def test_lookups_split_into_hits_and_misses_and_misses_fetch_two_files(
    host: PluginHost, small: KafkaWorkload
) -> None:
    metrics = run_model(host, small).metrics()
    assert metrics["index_lookups"] == metrics["index_cache_hits"] + metrics["index_cache_misses"]
    # No transaction index in this workload: each load fetches the offset and time index, and
    # the transaction fetch finds nothing (it is attempted, and counts, as in Kafka).
    assert metrics["remote_index_fetches"] == 3 * metrics["index_cache_misses"]
    assert metrics["index_cache_live_bytes_peak"] <= 1_073_741_824


def test_sampled_live_bytes_leave_out_expired_entries_maintenance_has_not_removed(
    host: PluginHost, small: KafkaWorkload
) -> None:
    # Spec §0.4: resident = live + expired-not-yet-removed + .deleted. A follower whose readers
    # stop is never told of deletions and makes no more writes, so nothing runs maintenance:
    # the expired entries stay resident (Caffeine has no scheduler) but are not live.
    followed = tuple(g.model_copy(update={"led_here": False}) for g in small.partitions)
    readers = tuple(
        c.model_copy(update={"read_from_replica": True, "stop_s": 600.0}) for c in small.consumers
    )
    workload = small.model_copy(update={"partitions": followed, "consumers": readers, "events": ()})
    model = run_model(host, workload, **{"remote.log.index.file.cache.ttl.ms": "300000"})
    last = model.samples[-1]  # t = 3600 s, every entry idle for at least 3000 s
    assert model.cache.entry_count > 0 and model.cache.stats()["live_entries"] == 0
    assert last["resident_bytes"] == model.cache.weighted_size > 0
    assert last["live_bytes"] == 0
    before_expiry = [s for s in model.samples if s["t_s"] <= 600]
    assert model.metrics()["index_cache_live_bytes_peak"] == max(
        s["live_bytes"] for s in before_expiry
    )


def test_remote_fetches_are_reported_per_index_type(host: PluginHost, small: KafkaWorkload) -> None:
    # Spec §0.4 measures remote fetches per index type (OFFSET, TIMESTAMP, TRANSACTION).
    metrics = run_model(host, small).metrics()
    by_type = [
        metrics[f"remote_index_fetches_{kind}"] for kind in ("offset", "timestamp", "transaction")
    ]
    assert by_type == [metrics["index_cache_misses"]] * 3
    assert sum(by_type) == metrics["remote_index_fetches"]


def test_a_resize_event_evicts_down_to_the_new_bound(
    host: PluginHost, small: KafkaWorkload
) -> None:
    resize = {"at_s": 3000, "kind": "resize", "bytes": 1_000_000}
    events = (*small.events, type(small.events[0]).model_validate(resize))
    model = run_model(host, small.model_copy(update={"events": events}))
    assert model.metrics()["index_cache_evictions_resize"] > 0
    assert all(s["live_bytes"] <= 1_000_000 for s in model.samples if s["t_s"] > 3000)


def test_a_run_is_a_pure_function_of_its_inputs(host: PluginHost, small: KafkaWorkload) -> None:
    profile = load_profile(WITH_TTL, host=host)
    first = simulate(profile, small, 3, host=host)
    assert simulate(profile, small, 3, host=host).to_json() == first.to_json()
    assert simulate(profile, small, 4, host=host).metrics != first.metrics
    assert first.plugins == {"simulator": "kafka-tiered-storage", "index_cache_policy": "w-tinylfu"}
    # Exactly the Kafka metrics: none of the Pulsar broker's.
    assert set(first.metrics) == set(metrics_of("kafka-tiered-storage"))


# ---- the framework around it ------------------------------------------------------------------


def test_matrix_pairs_profiles_with_workloads_of_their_simulator(host: PluginHost) -> None:
    profiles = [
        load_profile(ROOT / "profiles" / "baseline.conf", host=host),
        load_profile(WITH_TTL, host=host),
        load_profile(KAFKA_FIXTURE, host=host),
    ]
    cells = build_cells(profiles, [], ["tailing", "kafka-read-from-replica"], 1, host, scale=0.1)
    pairs = {(cell.profile, cell.workload) for cell in cells}
    assert pairs == {
        ("baseline", "tailing"),
        ("kafka-ttl", "kafka-read-from-replica"),
        ("server", "tailing"),
        ("server", "kafka-read-from-replica"),
    }
    with pytest.raises(WorkloadError, match="none of the workloads"):
        build_cells(profiles[1:2], [], ["tailing"], 1, host)


def test_executor_runs_a_kafka_cell_and_leaves_pulsar_metrics_empty(host: PluginHost) -> None:
    profile = load_profile(WITH_TTL, host=host)
    cells = build_cells([profile], [], ["kafka-leadership-change"], 1, host, scale=0.1)
    (row,) = list(run_cells([cell.as_row() for cell in cells], HostConfig()))
    assert row["status"] == "ok", row["error"]
    assert row["index_lookups"] > 0
    assert row["delivered"] is None


def test_cli_runs_a_kafka_profile_and_writes_its_timeline(tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.csv"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "brokerlab",
            "run",
            "--profile",
            str(SIZE_ONLY),
            "--workload",
            "kafka-leadership-change",
            "--timeline",
            str(timeline),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout)["metrics"]
    assert metrics["index_cache_stale_bytes_end"] > 0
    lines = timeline.read_text().splitlines()
    assert lines[0] == "t_s,live_bytes,resident_bytes,stale_bytes,stale_entries"
    assert len(lines) == 1 + 10800 // 60 + 2  # every minute from 0 to the end, and the end


def test_a_kafka_profile_refuses_a_pulsar_workload_and_back(host: PluginHost) -> None:
    with pytest.raises(WorkloadError, match="sets keys of kafka-tiered-storage only"):
        simulate(load_profile(WITH_TTL, host=host), "tailing", host=host)
    pulsar = load_profile(ROOT / "profiles" / "pulsar-4.2.conf", host=host)
    with pytest.raises(WorkloadError, match="sets keys of pulsar only"):
        simulate(pulsar, "kafka-read-from-replica", host=host)
