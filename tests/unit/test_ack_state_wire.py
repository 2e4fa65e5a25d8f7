"""Byte sizes of the serialized ack state: the spec's worked examples (§2.3, §7, §10) and an
independent byte-level proto2 encoder for random states."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlab.protocols import BatchAck
from brokerlab_plugins.ack_state.forms import range_entry
from brokerlab_plugins.ack_state.shapes import Snapshot, ledger_words
from brokerlab_plugins.ack_state.wire_size import (
    batch_info_bytes,
    header_bytes,
    long_list_map_bytes,
    long_property_bytes,
    managed_cursor_info_bytes,
    message_range_bytes,
    position_info_bytes,
    string_property_bytes,
    varint_size,
)

# ---- an independent proto2 encoder (bytes, not sizes) ------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 two's complement: negatives take 10 bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def f_int(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def f_bytes(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def nested(ledger: int, entry: int) -> bytes:
    return f_int(1, ledger) + f_int(2, entry)


def message_range(lo: tuple[int, int], hi: tuple[int, int]) -> bytes:
    return f_bytes(1, nested(*lo)) + f_bytes(2, nested(*hi))


def words(bits: int) -> list[int]:
    out = []
    while bits:
        out.append(bits & ((1 << 64) - 1))
        bits >>= 64
    return out


def encode_position_info(md, ranges, batches, props, long_array=None) -> bytes:
    out = f_int(1, md[0]) + f_int(2, md[1])
    for lo, hi in ranges:
        out += f_bytes(3, message_range(lo, hi))
    for name, value in props.items():
        out += f_bytes(4, f_bytes(1, name.encode()) + f_int(2, value))
    for pos, ack in batches.items():
        # BitSet.toLongArray(): the words up to the one holding the highest set bit.
        payload = f_bytes(1, nested(*pos)) + b"".join(f_int(2, w) for w in words(ack.unacked))
        out += f_bytes(5, payload)
    for lid, bits in (long_array or {}).items():
        payload = f_int(1, lid) + b"".join(f_int(2, w) for w in words(bits))
        out += f_bytes(6, payload)
    return out


# ---- the spec's worked examples ----------------------------------------------------------------


def test_varint_table() -> None:
    assert [varint_size(x) for x in (0, 127, 128, 2**14 - 1, 2**14, 2**63 - 1, -1)] == [
        1,
        1,
        2,
        2,
        3,
        9,
        10,
    ]


@settings(max_examples=100, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_varint_size_matches_the_encoder(value: int) -> None:
    assert varint_size(value) == len(varint(value))


def test_header_and_range_examples() -> None:
    assert header_bytes((1, -1)) == 13
    assert message_range_bytes((3_000_000, 1000), (3_000_000, 1005)) == 22
    assert message_range_bytes((3, 5), (3, 6)) == 14
    assert message_range_bytes((5, -1), (5, 9)) == 23
    assert message_range_bytes((3_000_000, 20_000), (3_000_000, 20_001)) == 24


def test_long_list_map_examples() -> None:
    # Scenario 5: odd entries 1..99 of ledger 1: 0xAAAA... (11 B) + a 36-bit word (7 B).
    odd = ledger_words([((1, e - 1), (1, e)) for e in range(1, 100, 2)])
    assert long_list_map_bytes(1, odd) == 22
    # Scenario 10: entries 1..63 -> 0xFFFF...FFFE, negative.
    assert long_list_map_bytes(7, ledger_words([((7, 0), (7, 63))])) == 15
    # Scenario 11: only entry 40000: 625 zero words, then 1.
    assert long_list_map_bytes(7, ledger_words([((7, 39_999), (7, 40_000))])) == 1257


def test_batch_and_property_examples() -> None:
    assert batch_info_bytes((1, 5), BatchAck(10, 1015)) == 11  # scenario 12
    # A 128-message batch with only indexes 1 and 3 set: one word, since toLongArray() drops the
    # trailing zero word (8 bytes inside, 10 with the field's tag and length; 12 counting both).
    assert batch_info_bytes((1, 5), BatchAck(128, 0b1010)) == 10
    # Only index 64 set: word 0 (zero) is still written before word 1, 2 bytes each: 12.
    assert batch_info_bytes((1, 5), BatchAck(128, 1 << 64)) == 12
    assert long_property_bytes("p1", 100) + long_property_bytes("p2", 200) == 17  # scenario 15
    assert long_property_bytes("standalone-0-12", 1_000_000) == 23  # §7


def test_string_property_is_the_proto2_encoding() -> None:
    # §2.3 [check]: the encoding is one byte less than the spec's first formula.
    for key, value in [("a", "b"), ("k" * 20, "v" * 200), ("", "")]:
        enc = f_bytes(8, f_bytes(1, key.encode()) + f_bytes(2, value.encode()))
        assert string_property_bytes(key, value) == len(enc)


def test_managed_cursor_info_header() -> None:
    # cursorsLedgerId -1 (11) + md 1:-1 (2 + 1 + 10) + lastActive 1.7e12 (7).
    assert managed_cursor_info_bytes(-1, (1, -1), last_active_ms=1_700_000_000_000) == 31


positions = st.tuples(st.integers(0, 2**40), st.integers(-1, 2**30))


@settings(max_examples=30, deadline=None)
@given(
    md=positions,
    ranges=st.lists(st.tuples(st.integers(0, 2**35), st.integers(-1, 2**25), st.integers(1, 500))),
    batches=st.dictionaries(
        positions,
        st.integers(1, 200).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, 2**n - 1))),
    ),
    props=st.dictionaries(st.text(max_size=30), st.integers(0, 2**62)),
)
def test_sizes_match_a_byte_encoder(md, ranges, batches, props) -> None:
    rs = [((lid, lo), (lid, lo + n)) for lid, lo, n in ranges]
    bs = {pos: BatchAck(n, mask) for pos, (n, mask) in batches.items()}
    expected = len(encode_position_info(md, rs, bs, props))
    assert position_info_bytes(md, rs, bs, props) == expected
    # The persisters' entry form sizes the same bytes from the parts its snapshot sized once.
    ordered = tuple(sorted(rs))
    snap = Snapshot(md, ordered, bs, props)
    entry = range_entry(snap, len(ordered), bs)
    assert entry.bytes == len(encode_position_info(md, list(ordered), bs, props))


@settings(max_examples=30, deadline=None)
@given(lid=st.integers(0, 2**40), entries=st.sets(st.integers(0, 3000), min_size=1))
def test_long_list_map_matches_a_byte_encoder(lid: int, entries: set[int]) -> None:
    bits = sum(1 << e for e in entries)
    expected = len(encode_position_info((0, 0), [], {}, {}, {lid: bits})) - 4
    ranges = [((lid, e - 1), (lid, e)) for e in entries]  # one range per entry: words must merge
    assert long_list_map_bytes(lid, ledger_words(ranges)) == expected
