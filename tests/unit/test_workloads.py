"""Workloads: the built-ins parse; each kind of bad input gives one error with file and line."""

from __future__ import annotations

import textwrap
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from brokerlab.errors import WorkloadError
from brokerlab.records import WorkloadRecord
from brokerlab.workloads import (
    TopicSpec,
    WorkloadSpec,
    format_key,
    load_workload_file,
    parse_workload,
    resolve_workload,
    toml_key_lines,
)
from brokerlab_plugins.workloads import BUILTIN_WORKLOADS, brokerlab_workloads

BUILTIN_DIR = Path(str(resources.files("brokerlab_plugins.workloads")))

# The deliveries (published messages x subscriptions) each built-in may cost, so it simulates in
# seconds at ~200k deliveries per second.
MAX_DELIVERIES = 2_500_000

HEADER = """\
name = "w"
duration_s = 10

[[topics]]
name = "t"

[[topics.subscriptions]]
name = "s"
"""


def doc(text: str) -> str:
    return textwrap.dedent(text)


def error_of(text: str, origin: str = "w.toml") -> WorkloadError:
    with pytest.raises(WorkloadError) as info:
        parse_workload(text, origin)
    return info.value


def deliveries(spec: WorkloadSpec) -> float:
    total = 0.0
    for topic in spec.topics:
        publishing = spec.duration_s if topic.publish_until_s is None else topic.publish_until_s
        published = topic.backlog + topic.rate * publishing
        total += topic.count * published * sum(s.count for s in topic.subscriptions)
    return total


# --- the built-ins -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUILTIN_WORKLOADS)
def test_builtin_file_parses(name: str) -> None:
    path = BUILTIN_DIR / f"{name}.toml"
    spec = parse_workload(path.read_text(encoding="utf-8"), str(path))
    assert spec.name == name
    assert spec.description and "\n" not in spec.description
    assert 0 < deliveries(spec) <= MAX_DELIVERIES
    assert spec.duration_s + spec.drain_s <= 300
    assert load_workload_file(path) == spec


def test_every_builtin_file_is_registered_once() -> None:
    records = list(brokerlab_workloads())
    assert [r.name for r in records] == list(BUILTIN_WORKLOADS)
    assert sorted(p.stem for p in BUILTIN_DIR.glob("*.toml")) == sorted(BUILTIN_WORKLOADS)
    for record in records:
        spec = parse_workload(record.document, record.origin)
        assert record.description == spec.description
        assert record.origin.startswith(f"builtin:{record.name} (")
        assert record.origin.endswith(f"{record.name}.toml)")


def test_builtins_model_what_their_names_say() -> None:
    by_name = {r.name: parse_workload(r.document, r.origin) for r in brokerlab_workloads()}
    fanout = by_name["catch-up-fanout"].topics[0]
    assert 50_000 <= fanout.backlog <= 100_000 and fanout.rate > 0
    assert len(fanout.subscriptions) == 10
    assert {s.initial_position for s in fanout.subscriptions} == {"earliest"}
    # only one consumer of an Exclusive or Failover subscription reads at a time
    speeds = {
        s.consumers[0].rate * (s.consumers[0].count if s.type == "Shared" else 1)
        for s in fanout.subscriptions
    }
    assert len(speeds) == 10

    many = by_name["many-topics"].topics[0]
    assert many.count == 10_000 and [s.type for s in many.subscriptions] == ["Exclusive"]

    delayed = by_name["delayed-mixed"].topics[0]
    assert [s.count for s in delayed.subscriptions] == [100]
    assert [(d.min_ms, d.max_ms) for d in delayed.delays] == [(100, 2000), (30_000, 120_000)]

    holes = by_name["ack-holes-restart"]
    assert [e.kind for e in holes.events] == ["restart"]
    assert holes.events[0].at_s == holes.duration_s / 2
    consumers = [c for s in holes.topics[0].subscriptions for c in s.consumers]
    assert all(c.ack_hole_probability == pytest.approx(0.01) for c in consumers)

    key_shared = by_name["key-shared-slow-consumer"].topics[0]
    assert key_shared.keys is not None and key_shared.keys.skew > 0
    rates = [c.rate for c in key_shared.subscriptions[0].consumers]
    assert key_shared.subscriptions[0].type == "Key_Shared" and max(rates) >= 4 * min(rates)

    storm = by_name["reconnect-storm"]
    assert {e.kind for e in storm.events} == {"disconnect", "reconnect"}
    assert len({e.at_s for e in storm.events}) >= 4

    tailing = by_name["tailing"]
    types = {s.type for t in tailing.topics for s in t.subscriptions}
    assert {"Shared", "Exclusive"} <= types


# --- TOML syntax -------------------------------------------------------------------------------


def test_toml_syntax_error_names_file_and_line() -> None:
    error = error_of('name = "w"\nduration_s = 10\nrate = = 5\n')
    assert str(error).startswith("w.toml:3: invalid TOML:")
    assert error.origin is not None and error.origin.line == 3


def test_unterminated_string_names_its_line() -> None:
    error = error_of('name = "w\nduration_s = 10\n')
    assert str(error).startswith("w.toml:1: invalid TOML")


# --- validation errors -------------------------------------------------------------------------


def test_unknown_key_names_line_key_path_and_suggestion() -> None:
    error = error_of(HEADER + 'tpye = "Shared"\n')
    text = str(error)
    assert text.startswith("w.toml:9: key 'topics[0].subscriptions[0].tpye': unknown key")
    assert "allowed: name, count, type, initial_position, consumers" in text
    assert "did you mean 'type'?" in text


def test_unknown_top_level_key() -> None:
    error = error_of('name = "w"\nduraton_s = 10\n[[topics]]\n')
    assert str(error).startswith("w.toml:2: key 'duraton_s': unknown key")
    assert error.suggestions[0] == "duration_s"


def test_bad_enum_value_lists_the_allowed_values() -> None:
    error = error_of(HEADER + 'type = "Sharde"\n')
    text = str(error)
    assert text.startswith("w.toml:9: key 'topics[0].subscriptions[0].type': value 'Sharde'")
    assert "allowed: 'Exclusive', 'Failover', 'Shared' or 'Key_Shared'" in text


def test_out_of_range_number_gives_the_range() -> None:
    error = error_of(HEADER + "\n[[topics.subscriptions.consumers]]\nack_hole_probability = 1.5\n")
    text = str(error)
    assert text.startswith(
        "w.toml:11: key 'topics[0].subscriptions[0].consumers[0].ack_hole_probability': "
        "value '1.5' is out of range"
    )
    assert "allowed: a number >= 0 and <= 1" in text


def test_inline_table_value_out_of_range_points_at_its_line() -> None:
    error = error_of(HEADER.replace('name = "t"', 'message_size = { kind = "fixed", value = 0 }'))
    assert str(error).startswith("w.toml:5: key 'topics[0].message_size.value': value '0'")
    assert "allowed: an integer >= 1" in str(error)


def test_wrong_type_is_not_coerced() -> None:
    # TOML is typed: a quoted number is a string, and 1.5 is not an integer.
    text = str(error_of(HEADER.replace('name = "t"', 'rate = "5"')))
    assert text.startswith("w.toml:5: key 'topics[0].rate': value '5' is not a number")
    text = str(error_of(HEADER.replace('name = "t"', "backlog = 1.5")))
    assert text.startswith("w.toml:5: key 'topics[0].backlog': value '1.5' is not an integer")


def test_a_boolean_is_shown_as_toml_writes_it() -> None:
    text = str(error_of(HEADER.replace('name = "t"', "count = true")))
    assert text.startswith("w.toml:5: key 'topics[0].count': value 'true' is not an integer")


def test_an_empty_topics_array_is_named_as_such() -> None:
    text = str(error_of('name = "w"\nduration_s = 1\ntopics = []\n'))
    assert text.startswith("w.toml:3: key 'topics': must not be empty; allowed: an array of tables")


def test_non_finite_number_is_rejected() -> None:
    error = error_of(HEADER.replace("duration_s = 10", "duration_s = inf"))
    assert str(error) == "w.toml:2: key 'duration_s': value 'inf' is not a finite number"


def test_model_rule_points_at_the_table_header() -> None:
    error = error_of(
        HEADER + 'type = "Shared"\n\n[[topics.subscriptions.consumers]]\nack = "cumulative"\n'
    )
    assert str(error) == (
        "w.toml:7: key 'topics[0].subscriptions[0]': "
        "cumulative acknowledgement is not allowed on a Shared subscription"
    )


def test_event_with_unknown_group_points_at_the_event() -> None:
    error = error_of(
        HEADER
        + doc("""
            [[topics.subscriptions.consumers]]
            group = "blue"

            [[events]]
            at_s = 1
            kind = "restart"

            [[events]]
            at_s = 2
            kind = "disconnect"
            group = "bleu"
            """)
    )
    text = str(error)
    assert text.startswith("w.toml:20: key 'events[1].group': event group 'bleu'")
    assert "known: blue" in text


def test_two_topics_tables_with_one_name_point_at_the_second() -> None:
    # Neither table names its topics: both would be called "topic".
    text = 'name = "w"\nduration_s = 1\n\n[[topics]]\nrate = 1\n\n[[topics]]\nrate = 2\n'
    assert str(error_of(text)) == (
        "w.toml:7: key 'topics[1].name': an earlier [[topics]] table already has a topic named "
        "'topic'; give each table its own name"
    )


def test_a_name_used_three_times_points_at_its_first_repeat() -> None:
    text = 'name = "w"\nduration_s = 1\n' + '\n[[topics]]\nname = "t"\n' * 3
    assert str(error_of(text)).startswith("w.toml:8: key 'topics[1].name': an earlier")


def test_a_group_whose_numbered_names_clash_with_another_table() -> None:
    text = (
        'name = "w"\nduration_s = 1\n\n[[topics]]\nname = "t-1"\n\n'
        '[[topics]]\nname = "t"\ncount = 3\n'
    )
    assert str(error_of(text)) == (
        "w.toml:8: key 'topics[1].name': name 't' makes topic 't-1', which an earlier "
        "[[topics]] table already has; give each table its own name"
    )


def test_two_subscriptions_of_a_topic_with_one_name_point_at_the_second() -> None:
    # They would share one cursor: a disconnect of either would remove both.
    text = (
        'name = "w"\nduration_s = 1\n\n[[topics]]\nname = "t"\n\n'
        '[[topics.subscriptions]]\nname = "s"\n\n[[topics.subscriptions]]\nname = "a"\n\n'
        '[[topics.subscriptions]]\nname = "s"\n'
    )
    assert str(error_of(text)) == (
        "w.toml:14: key 'topics[0].subscriptions[2].name': an earlier [[topics.subscriptions]] "
        "table already has a subscription named 's'; give each table its own name"
    )


def test_subscriptions_of_different_topics_may_share_a_name() -> None:
    text = (
        'name = "w"\nduration_s = 1\n\n[[topics]]\nname = "t"\n'
        '[[topics.subscriptions]]\nname = "s"\ncount = 2\n\n'
        '[[topics]]\nname = "u"\n[[topics.subscriptions]]\nname = "s-1"\n'
    )
    spec = parse_workload(text, "w.toml")
    assert [sub.subscription_names() for t in spec.topics for sub in t.subscriptions] == [
        ["s-0", "s-1"],
        ["s-1"],
    ]
    clash = text.replace('[[topics]]\nname = "u"\n', "")
    assert "makes" not in str(error_of(clash))  # the later table's own name is the clash
    assert "subscription named 's-1'" in str(error_of(clash))


def test_an_event_after_the_end_of_the_run_points_at_the_event() -> None:
    text = HEADER + doc("""
        [[events]]
        at_s = 5
        kind = "restart"

        [[events]]
        at_s = 12
        kind = "restart"
        """)
    assert str(error_of(text)) == (
        "w.toml:14: key 'events[1]': at_s (12) is after the end of the run "
        "(10 s = duration_s + drain_s): the event would never happen"
    )


def test_times_inside_the_run_are_accepted() -> None:
    text = (
        'name = "w"\nduration_s = 2\ndrain_s = 1\n\n[[topics]]\npublish_until_s = 2\n'
        "[[topics.subscriptions]]\nconsumers = [{ connect_at_s = 2.5 }]\n"
        '[[events]]\nat_s = 3\nkind = "restart"\n'
    )
    spec = parse_workload(text, "w.toml")
    assert spec.events[0].at_s == 3 and spec.topics[0].publish_until_s == 2


def test_producers_cannot_publish_into_the_drain() -> None:
    text = 'name = "w"\nduration_s = 2\ndrain_s = 10\n\n[[topics]]\npublish_until_s = 2.5\n'
    assert str(error_of(text)) == (
        "w.toml:5: key 'topics[0]': publish_until_s (2.5) is after duration_s (2); producers "
        "stop at duration_s at the latest"
    )


def test_a_consumer_connecting_after_the_run_is_an_error() -> None:
    text = (
        'name = "w"\nduration_s = 2\ndrain_s = 1\n\n[[topics]]\n'
        "[[topics.subscriptions]]\nconsumers = [{ connect_at_s = 3 }]\n"
    )
    assert "connect_at_s (3) of a consumer of subscription sub is not before the end" in str(
        error_of(text)
    )


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("duration_s", "1e300", "a number > 0 and <= 10000000"),
        ("topics[0].rate", "1e300", "a number >= 0 and <= 1000000000"),
        ("topics[0].keys.count", "9223372036854775807", "an integer >= 1 and <= 1000000"),
        ("topics[0].backlog", "1000000000000", "an integer >= 0 and <= 10000000"),
    ],
)
def test_values_the_model_cannot_hold_are_out_of_range(key: str, value: str, allowed: str) -> None:
    body = {
        "duration_s": f"duration_s = {value}\n[[topics]]\n",
        "topics[0].rate": f"duration_s = 1\n[[topics]]\nrate = {value}\n",
        "topics[0].keys.count": f"duration_s = 1\n[[topics]]\nkeys = {{ count = {value} }}\n",
        "topics[0].backlog": f"duration_s = 1\n[[topics]]\nbacklog = {value}\n",
    }[key]
    text = str(error_of('name = "w"\n' + body))
    assert f"key '{key}': value " in text and "is out of range" in text
    assert text.endswith(f"allowed: {allowed}")


# Counts and sizes beyond any realistic broker (#27): each is refused naming its bound and why.
BEYOND_A_BROKER = {
    "topics[0].count": ("count = 1000000000", "1000000", "about a million topics"),
    "topics[0].subscriptions[0].count": (
        "[[topics.subscriptions]]\ncount = 10001",
        "10000",
        "a cursor with its own ack state",
    ),
    "topics[0].subscriptions[0].consumers[0].count": (
        "[[topics.subscriptions]]\nconsumers = [{ count = 5000000 }]",
        "10000",
        "a connection the dispatcher serves",
    ),
    "topics[0].producers": ("producers = 100000", "10000", "pending sends"),
    "topics[0].batch_size": ("batch_size = 100000000000000000000", "100000", "one entry"),
    "topics[0].message_size.value": (
        "message_size = { value = 9223372036854775807 }",
        "2147473407",
        "maxMessageSize",
    ),
    "topics[0].message_size.max": (
        'message_size = { kind = "uniform", max = 4294967296 }',
        "2147473407",
        "maxMessageSize",
    ),
    "topics[0].keys.skew": ("keys = { skew = 1e308 }", "10.0", "99.9% of the messages"),
}


@pytest.mark.parametrize("key", sorted(BEYOND_A_BROKER))
def test_counts_and_sizes_beyond_a_broker_name_their_bound_and_why(key: str) -> None:
    body, bound, why = BEYOND_A_BROKER[key]
    text = str(error_of(f'name = "w"\nduration_s = 1\n[[topics]]\n{body}\n'))
    assert f"key '{key}': value " in text and "is out of range: " in text, text
    assert why in text and text.endswith(f"<= {bound}"), text


def test_topics_of_all_tables_are_bounded_together() -> None:
    body = "[[topics]]\nname = 'a'\ncount = 1000\npartitions = 600\n"
    text = str(error_of('name = "w"\nduration_s = 1\n' + body + body.replace("'a'", "'b'")))
    assert "make 1,200,000 topics (count x partitions)" in text
    assert "at most 1,000,000 in all" in text


def test_a_million_topics_validate_without_building_their_names() -> None:
    """Validation once built every topic name: 10^9 topics grew memory until killed."""
    import tracemalloc

    text = (
        'name = "w"\nduration_s = 1\n[[topics]]\nname = "t"\ncount = 999\n'
        "partitions = 1000\n[[topics]]\nname = 'u'\ncount = 1000\n"
        "[[events]]\nat_s = 0\nkind = 'unload'\ntopic = 't-998-partition-999'\n"
    )
    tracemalloc.start()
    try:
        spec = parse_workload(text, "w.toml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert spec.topics[0].topic_count == 999_000
    assert peak < 5_000_000, f"validation allocated {peak:,} bytes"


@pytest.mark.parametrize(
    ("tables", "clash"),
    [
        ([("t", 3, 0), ("t-2", 1, 0)], "t-2"),
        ([("t", 3, 0), ("t-3", 1, 0)], None),
        ([("t", 1, 4), ("t-partition-3", 1, 0)], "t-partition-3"),
        ([("t", 1, 4), ("t-partition", 5, 0)], "t-partition-0"),
        ([("t", 1, 4), ("t-partition", 5, 2)], None),
        ([("t", 20, 0), ("t-1", 3, 0)], None),  # t-1-0 is not t-10
        ([("t", 20, 2), ("t-1", 1, 2)], "t-1-partition-0"),
        ([("t", 2, 0), ("t", 1, 0)], None),
        ([("t", 2, 0), ("t", 5, 0)], "t-0"),
        ([("t", 11, 0), ("t-01", 1, 0)], None),  # numbers have no leading zero
    ],
)
def test_clashing_names_are_found_from_one_name_each(
    tables: list[tuple[str, int, int]], clash: str | None
) -> None:
    specs = [TopicSpec(name=n, count=c, partitions=p) for n, c, p in tables]
    every = [set(spec.topic_names()) for spec in specs]
    assert (every[0] & every[1]) == ({clash} if clash else set()) or clash in every[0] & every[1]
    assert specs[1].names.common(specs[0].names) == clash


def test_topic_names_of_a_group() -> None:
    assert TopicSpec(name="d", count=3).topic_names() == ["d-0", "d-1", "d-2"]
    assert TopicSpec(name="d").topic_names() == ["d"]


def test_missing_required_key() -> None:
    error = error_of('name = "w"\n\n[[topics]]\n')
    assert (
        str(error)
        == "w.toml: key 'duration_s': is missing and has no default; allowed: a number > 0 and "
        "<= 10000000"
    )


def test_the_first_error_by_line_is_reported() -> None:
    text = HEADER.replace('name = "t"', "rate = -1") + 'type = "Nope"\n'
    assert str(error_of(text)).startswith("w.toml:5: key 'topics[0].rate'")


def test_a_broken_item_is_reported_not_the_array_around_it() -> None:
    # pydantic adds "topics should have at least 1 item" when the only topic fails; hide it.
    error = error_of('name = "w"\nduration_s = 1\n\n[[topics]]\nbatch_size = 0\n')
    assert str(error).startswith("w.toml:5: key 'topics[0].batch_size'")


# --- the key locator ---------------------------------------------------------------------------

LOCATOR_DOC = doc("""\
    name = "w"                                  # 1
    duration_s = 10
    [[topics]]                                  # 3
    name = "a"
    delays = [
      { fraction = 0.1, min_ms = 1, max_ms = 2 },
      { fraction = 0.2, min_ms = 3, max_ms = 4 },   # 7
    ]
    [[topics.subscriptions]]                    # 9
    name = "a0"
    [[topics]]                                  # 11
    name = "b"
    [topics.keys]                               # 13
    count = 5
    [[topics.subscriptions]]                    # 15
    name = "b0"
    description = '''
    type = "not a key"
    '''
    [[topics.subscriptions]]                    # 20
    name = "b1"
    type = "Shared"                             # 22
    "initial_position" = 'earliest'             # 23
    [[topics.subscriptions.consumers]]          # 24
    rate = 5
    [[topics.subscriptions.consumers]]          # 26
    rate = 6                                    # 27
    [[events]]                                  # 28
    at_s = 1
    """)


def test_locator_maps_second_topic_second_subscription() -> None:
    lines = toml_key_lines(LOCATOR_DOC)
    assert lines[("topics", 1)] == 11
    assert lines[("topics", 1, "keys", "count")] == 14
    assert lines[("topics", 1, "subscriptions", 0)] == 15
    assert lines[("topics", 1, "subscriptions", 1)] == 20
    assert lines[("topics", 1, "subscriptions", 1, "type")] == 22
    assert lines[("topics", 1, "subscriptions", 1, "initial_position")] == 23
    assert lines[("topics", 1, "subscriptions", 1, "consumers", 1)] == 26
    assert lines[("topics", 1, "subscriptions", 1, "consumers", 1, "rate")] == 27
    assert lines[("topics", 0, "subscriptions", 0, "name")] == 10
    assert lines[("topics", 0, "delays", 1, "min_ms")] == 7
    assert lines[("events", 0, "at_s")] == 29
    # the multi-line string's content is not a key
    assert ("topics", 1, "subscriptions", 0, "type") not in lines


def test_error_in_second_topic_second_subscription_has_the_right_line() -> None:
    text = LOCATOR_DOC.replace('type = "Shared"', 'type = "Sharde"').replace(
        "description = '''\ntype = \"not a key\"\n'''\n", ""
    )
    error = error_of(text)
    assert str(error).startswith("w.toml:19: key 'topics[1].subscriptions[1].type'")


def test_format_key() -> None:
    assert (
        format_key(("topics", 0, "subscriptions", 1, "type")) == "topics[0].subscriptions[1].type"
    )
    assert format_key(()) == ""


# --- files -------------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(WorkloadError, match="no such workload file") as info:
        load_workload_file(path)
    assert str(info.value).startswith(f"{path}:")


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="is a directory") as info:
        load_workload_file(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_bad_utf8_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_bytes(b'name = "w"\nduration_s = 10\ndescription = "caf\xe9"\n')
    with pytest.raises(WorkloadError, match="not valid UTF-8") as info:
        load_workload_file(path)
    assert str(info.value).startswith(f"{path}:3:")


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(HEADER + 'type = "Sharde"\n', encoding="utf-8")
    with pytest.raises(WorkloadError) as info:
        load_workload_file(path)
    assert str(info.value).startswith(f"{path}:9: key 'topics[0].subscriptions[0].type'")


# --- resolving a name or a path ----------------------------------------------------------------


@pytest.fixture
def records() -> dict[str, WorkloadRecord]:
    return {r.name: r for r in brokerlab_workloads()}


def test_resolve_by_name(records: dict[str, WorkloadRecord]) -> None:
    assert resolve_workload("many-topics", records).topics[0].count == 10_000


def test_resolve_by_path(records: dict[str, WorkloadRecord], tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(HEADER, encoding="utf-8")
    assert resolve_workload(str(path), records).name == "w"
    # an existing file without the .toml suffix is still a file
    other = tmp_path / "mine.workload"
    other.write_text(HEADER, encoding="utf-8")
    assert resolve_workload(str(other), records).name == "w"


def test_resolve_missing_toml_path_is_a_missing_file(records: dict[str, WorkloadRecord]) -> None:
    with pytest.raises(WorkloadError, match="no such workload file"):
        resolve_workload("tailing.toml", records)


def test_resolve_a_directory_says_so(records: dict[str, WorkloadRecord], tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="is a directory, not a workload file"):
        resolve_workload(str(tmp_path), records)


def test_resolve_unknown_name_lists_names_and_suggests(records: dict[str, WorkloadRecord]) -> None:
    with pytest.raises(WorkloadError) as info:
        resolve_workload("tailng", records)
    text = str(info.value)
    assert "value 'tailng' is neither a named workload nor a workload file" in text
    assert all(name in text for name in BUILTIN_WORKLOADS)
    assert "did you mean 'tailing'?" in text


def test_resolved_record_errors_name_the_record() -> None:
    bad = WorkloadRecord(
        name="bad", description="broken", document=HEADER + "oops = 1\n", origin="builtin:bad (x)"
    )
    with pytest.raises(WorkloadError) as info:
        resolve_workload("bad", {"bad": bad})
    assert str(info.value).startswith("builtin:bad (x):9: key 'topics[0].subscriptions[0].oops'")


def _paths(value: object, loc: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every key and array-element path of a parsed TOML document."""
    items: list[tuple[str | int, object]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    found = [loc] if loc else []
    for key, item in items:
        found += _paths(item, (*loc, key))
    return found


@pytest.mark.parametrize("name", BUILTIN_WORKLOADS)
def test_locator_finds_every_path_of_the_builtins(name: str) -> None:
    text = (BUILTIN_DIR / f"{name}.toml").read_text(encoding="utf-8")
    lines = toml_key_lines(text)
    assert set(_paths(tomllib.loads(text))) <= set(lines)
    # the same with Windows line ends
    assert toml_key_lines(text.replace("\n", "\r\n")) == lines


def test_locator_reads_quoted_keys_spaced_headers_and_tricky_strings() -> None:
    text = doc("""\
        a = "x # not a comment \\" [not = a table]"
        [ t . "u v" ]
        k = 'c:\\path'
        [[ arr ]]
        x.y = [[1, 2], [3]]
        """)
    lines = toml_key_lines(text)
    assert lines == {
        ("a",): 1,
        ("t",): 2,
        ("t", "u v"): 2,
        ("t", "u v", "k"): 3,
        ("arr",): 4,
        ("arr", 0): 4,
        ("arr", 0, "x"): 5,
        ("arr", 0, "x", "y"): 5,
        ("arr", 0, "x", "y", 0): 5,
        ("arr", 0, "x", "y", 0, 0): 5,
        ("arr", 0, "x", "y", 0, 1): 5,
        ("arr", 0, "x", "y", 1): 5,
        ("arr", 0, "x", "y", 1, 0): 5,
    }
    assert tomllib.loads(text)  # the document is valid TOML


def test_builtins_register_through_the_plugin_host() -> None:
    from brokerlab.host import PluginHost

    host = PluginHost(modules=["brokerlab_plugins.workloads"], entry_points=False)
    records = {r.record.name: r.record for r in host.records("workload")}
    assert sorted(records) == sorted(BUILTIN_WORKLOADS)
    assert resolve_workload("tailing", records).name == "tailing"
