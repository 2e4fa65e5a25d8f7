"""The .properties parser: Java syntax, line origins, escapes, UTF-8, and format round-trips."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerlab.errors import Origin, ProfileError
from brokerlab.profiles.properties import (
    PropertyLine,
    format_properties,
    parse_properties,
    read_properties,
)


def parsed(text: str) -> dict[str, str]:
    return {line.key: line.value for line in parse_properties(text, "t.conf")}


def lines_of(text: str) -> dict[str, int | None]:
    return {line.key: line.origin.line for line in parse_properties(text, "t.conf")}


# --- syntax -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("a=1", "a", "1"),
        ("a = 1", "a", "1"),
        ("a: 1", "a", "1"),
        ("a:1", "a", "1"),
        ("a 1", "a", "1"),
        ("a\t \f1", "a", "1"),
        ("a  =  1", "a", "1"),
        ("a =  = 1", "a", "= 1"),  # only one separator is consumed
        ("a==1", "a", "=1"),
        ("a=1=2:3", "a", "1=2:3"),
        ("   a=1", "a", "1"),
        ("\t\fa=1", "a", "1"),
        ("a=", "a", ""),
        ("a", "a", ""),
        ("a   ", "a", ""),
        ("a=1  ", "a", "1  "),  # trailing whitespace is kept, as Java does
        ("a=#not a comment", "a", "#not a comment"),
        ("a=x # y", "a", "x # y"),
    ],
)
def test_separators_and_whitespace(text: str, key: str, value: str) -> None:
    assert parsed(text) == {key: value}


def test_comments_and_blank_lines_are_skipped_but_counted() -> None:
    text = "# comment\n! other comment\n   # indented\n\n   \na=1\n\t! x\nb=2\n"
    assert parsed(text) == {"a": "1", "b": "2"}
    assert lines_of(text) == {"a": 6, "b": 8}


def test_comment_ending_in_backslash_does_not_continue() -> None:
    assert parsed("# comment \\\na=1\n") == {"a": "1"}


def test_continuation_lines_join_and_drop_leading_whitespace() -> None:
    text = "a=one, \\\n     two, \\\n\t three\nb=2\n"
    assert parsed(text) == {"a": "one, two, three", "b": "2"}
    assert lines_of(text) == {"a": 1, "b": 4}


def test_continuation_line_starting_with_hash_is_not_a_comment() -> None:
    assert parsed("a=x\\\n  #y\n") == {"a": "x#y"}


def test_continuation_of_a_key() -> None:
    assert parsed("long\\\n   Key=v") == {"longKey": "v"}


def test_even_number_of_backslashes_does_not_continue() -> None:
    assert parsed("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}
    assert parsed("a=x\\\\\\\nb\n") == {"a": "x\\b"}


def test_blank_continuation_line_ends_the_value() -> None:
    assert parsed("a=x\\\n\nb=y") == {"a": "x", "b": "y"}


def test_backslash_at_end_of_file_is_dropped() -> None:
    assert parsed("a=x\\") == {"a": "x"}


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_endings_and_line_numbers(newline: str) -> None:
    text = newline.join(["# c", "a=1", "b=2\\", "  3", "", "c=4"])
    assert parsed(text) == {"a": "1", "b": "23", "c": "4"}
    assert lines_of(text) == {"a": 2, "b": 3, "c": 6}


def test_only_java_line_terminators_split_lines() -> None:
    # str.splitlines() would split at these; Java does not.
    assert parsed("a=x\u2028y\x0bz\x85w") == {"a": "x\u2028y\x0bz\x85w"}


@pytest.mark.parametrize(
    ("escaped", "value"),
    [
        ("\\t", "\t"),
        ("\\n", "\n"),
        ("\\r", "\r"),
        ("\\f", "\f"),
        ("\\\\", "\\"),
        ("\\u00e9", "é"),
        ("\\u00E9t\\u00e9", "été"),
        ("\\q\\=\\:\\#\\!\\ ", "q=:#! "),  # any other escaped character stands for itself
        ("\\uD83D\\uDE00", "😀"),  # an escaped UTF-16 surrogate pair is one character
        ("\\ud83d", "\ud83d"),  # a lone surrogate stays as it is
    ],
)
def test_value_escapes(escaped: str, value: str) -> None:
    assert parsed("k=" + escaped) == {"k": value}


def test_escaped_separators_and_spaces_in_keys() -> None:
    assert parsed("a\\=b\\:c\\ d=v") == {"a=b:c d": "v"}
    assert parsed("\\#notComment=1\n\\!neither 2") == {"#notComment": "1", "!neither": "2"}


def test_escaped_leading_space_in_value_is_kept() -> None:
    assert parsed("k=\\  x") == {"k": "  x"}


def test_non_ascii_text() -> None:
    assert parsed("clé=значение 😀") == {"clé": "значение 😀"}


def test_byte_order_mark_in_text_is_ignored() -> None:
    assert parsed("\ufeffa=1") == {"a": "1"}


def test_later_duplicate_wins_and_keeps_its_line_and_position() -> None:
    result = parse_properties("a=1\nb=2\na=3\n", "t.conf")
    assert result == [
        PropertyLine("b", "2", Origin("t.conf", 2)),
        PropertyLine("a", "3", Origin("t.conf", 3)),
    ]


def test_malformed_unicode_escape_names_file_line_and_key() -> None:
    with pytest.raises(ProfileError) as info:
        parse_properties("# x\nname=ab\\u12g4\n", "p.conf")
    message = str(info.value)
    assert "p.conf:2" in message
    assert "'name'" in message
    assert "\\uXXXX" in message
    assert "four hexadecimal digits" in message


def test_value_without_key_is_an_error() -> None:
    with pytest.raises(ProfileError, match=r"p\.conf:3: value '5' has a value but no key"):
        parse_properties("\n\n= 5\n", "p.conf")


# --- files --------------------------------------------------------------------------------------


def test_read_properties_keeps_the_path_in_origins(tmp_path: Path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text("# c\nclusterName=standalone\n", encoding="utf-8")
    assert read_properties(path) == [
        PropertyLine("clusterName", "standalone", Origin(str(path), 2))
    ]


def test_read_properties_accepts_a_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.conf"
    path.write_bytes(b"\xef\xbb\xbfa=\xc3\xa9\n")
    assert read_properties(path) == [PropertyLine("a", "é", Origin(str(path), 1))]


def test_missing_file_is_a_profile_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.conf"
    with pytest.raises(ProfileError, match="not found") as info:
        read_properties(path)
    assert str(path) in str(info.value)


def test_directory_is_a_profile_error(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="is a directory") as info:
        read_properties(tmp_path)
    assert str(tmp_path) in str(info.value)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_a_profile_error(tmp_path: Path) -> None:
    path = tmp_path / "secret.conf"
    path.write_text("a=1\n")
    path.chmod(0)
    try:
        with pytest.raises(ProfileError, match="cannot be read") as info:
            read_properties(path)
        assert str(path) in str(info.value)
    finally:
        path.chmod(0o644)


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_bad_utf8_names_the_line_and_suggests_utf8(tmp_path: Path, newline: bytes) -> None:
    path = tmp_path / "latin1.conf"
    path.write_bytes(newline.join([b"# ok", b"a=1", b"clusterName=caf\xe9", b"b=2"]))
    with pytest.raises(ProfileError) as info:
        read_properties(path)
    message = str(info.value)
    assert f"{path}:3:" in message
    assert "0xe9" in message
    assert "UTF-8" in message
    assert "save the file as UTF-8" in message
    assert info.value.origin == Origin(str(path), 3)


# --- format -------------------------------------------------------------------------------------


def test_format_writes_one_readable_line_per_key() -> None:
    text = format_properties({"managedLedgerCacheSizeMB": "128", "sim.entryCache": "pip430"})
    assert text == "managedLedgerCacheSizeMB=128\nsim.entryCache=pip430\n"


def test_format_escapes_what_would_change_meaning() -> None:
    text = format_properties({" a=b:c#!": " x\\\n\tz", "#k": "#v"})
    assert text == "\\ a\\=b\\:c\\#\\!=\\ x\\\\\\n\\tz\n\\#k=#v\n"


def test_format_escapes_unprintable_characters() -> None:
    assert format_properties({"k": "\x00\ufeff\u2028😀"}) == "k=\\u0000\\uFEFF\\u2028😀\n"
    assert format_properties({"k": "\U000e0001"}) == "k=\\uDB40\\uDC01\n"  # a surrogate pair


def test_format_rejects_an_empty_key() -> None:
    with pytest.raises(ValueError, match="empty"):
        format_properties({"": "x"})


def test_lone_surrogates_round_trip() -> None:
    mapping = {"\ud83d": "\ude00x", "k": "a\udc00"}
    assert parsed(format_properties(mapping)) == mapping


_TRICKY = st.sampled_from(list(" =:#!\\\t\n\r\f\x00\x0b\x85\u2028\ufeff é😀\U000e0001"))
_CHARS = st.one_of(_TRICKY, st.characters(exclude_categories=["Cs"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.text(_CHARS, min_size=1, max_size=12), st.text(_CHARS, max_size=20), max_size=8
    )
)
def test_format_then_parse_round_trips(mapping: dict[str, str]) -> None:
    assert parsed(format_properties(mapping)) == mapping


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.text(_CHARS, min_size=1, max_size=8), st.text(_CHARS, max_size=8)))
def test_format_round_trips_through_a_utf8_file(mapping: dict[str, str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.conf"
        path.write_text(format_properties(mapping), encoding="utf-8", newline="")
        assert {line.key: line.value for line in read_properties(path)} == mapping
