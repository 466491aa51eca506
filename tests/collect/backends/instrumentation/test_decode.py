"""Decoding instrumented kernels' buffers: real buffers recorded on an H200 with Triton 3.6 (the
fixtures, each beside the tree Proton itself made from the same buffer), and hostile ones."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from deuteron.collect.backends.instrumentation import aggregate
from deuteron.collect.backends.instrumentation.decode import (
    PREAMBLE,
    BufferError,
    Layout,
    decode,
    host_buffer,
    read_host_buffer,
)

FIXTURES = Path(__file__).parents[3] / "fixtures" / "instrumentation"
NAMES = {0: "load", 1: "compute", 2: "store"}  # the recorded kernel's scopes, in its TTGIR's order
FLAT = {0: -1, 1: -1, 2: -1}


def proton_scopes(tag: str) -> dict[str, dict[str, float]]:
    """The scope rows of the tree Proton wrote for the same buffer."""
    tree = json.loads((FIXTURES / f"{tag}.proton.hatchet").read_text())[0]
    kernel = tree["children"][0]["children"][0]  # ROOT > outer > three
    return {child["frame"]["name"]: child["metrics"] for child in kernel["children"]}


@pytest.mark.parametrize("tag", ["default", "select", "small", "clock32"])
def test_cycles_match_protons_own_tree(tag: str) -> None:
    decoded, layout, device = read_host_buffer((FIXTURES / f"{tag}.bin").read_bytes())
    assert device == 1 and decoded.bad_ctas == 0 and decoded.unmatched == 0
    rows = aggregate.rows(decoded, NAMES, FLAT, 4, layout.total_units, 1_980_000)
    ours = {row.path[-1]: row.metrics for row in rows}
    theirs = proton_scopes(tag)
    assert set(ours) == set(theirs)
    for name, metrics in theirs.items():
        assert ours[name]["cycles"] == metrics["cycles"]
        assert ours[name]["normalized_cycles"] == pytest.approx(metrics["normalized_cycles"])


def test_every_warp_of_every_cta_is_read() -> None:
    decoded, layout, _ = read_host_buffer((FIXTURES / "default.bin").read_bytes())
    assert layout.uids == [0, 1, 2, 3] and len(decoded.cta_id) == 4
    assert len(decoded.start_cycle) == 4 * 4 * 3  # CTAs x warps x scopes
    assert sorted(decoded.sm.tolist()) == sorted(set(decoded.sm.tolist()))  # one SM per CTA here
    assert (decoded.init_ns > 1.7e18).all()  # the global timer counts ns since the epoch
    assert (decoded.post_final_ns >= decoded.pre_final_ns).all()
    assert (decoded.end_cycle > decoded.start_cycle).all()


def test_selected_warps_only() -> None:
    decoded, layout, _ = read_host_buffer((FIXTURES / "select.bin").read_bytes())
    assert layout.uids == [0, 2]
    assert set(decoded.unit.tolist()) == {0, 2}


def test_a_full_circular_buffer_keeps_the_last_entries_and_counts_the_rest() -> None:
    decoded, _, _ = read_host_buffer((FIXTURES / "small.bin").read_bytes())
    # 64 bytes for 4 warps: room for one scope (2 entries) of the 3 each warp wrote
    assert set(decoded.scope.tolist()) == {2}  # "store", the last one
    assert decoded.dropped_entries == 4 * 4 * 4  # CTAs x warps x the 4 entries overwritten
    assert decoded.unmatched == 0


def test_time_is_own_time_averaged_over_units() -> None:
    decoded, layout, _ = read_host_buffer((FIXTURES / "default.bin").read_bytes())
    rows = {r.path[-1]: r.metrics for r in aggregate.rows(decoded, NAMES, FLAT, 4, 4, 2_000_000)}
    dur = decoded.end_cycle - decoded.start_cycle
    compute = dur[decoded.scope == 1]
    assert rows["compute"]["time (ns)"] == pytest.approx(compute.sum() / 16 / 2.0)
    assert rows["compute"]["cycles max (pty)"] == compute.max()
    assert rows["compute"]["instances (exc)"] == 16


def _entry(start: bool, scope: int, clock: int) -> tuple[int, int]:
    tag = (0 if start else 1 << 31) | (scope << 23) | ((clock >> 32) & 0x7FF)
    return tag, clock & 0xFFFFFFFF


def _cta(entries_per_unit: list[list[tuple[int, int]]], cta: int = 0, seg_entries: int = 8) -> bytes:
    """One CTA's slot as the lowering writes it: header, counts, then a segment per unit."""
    units = len(entries_per_unit)
    words = [PREAMBLE, cta, 7, units * seg_entries * 8, 100, 0, 200, 0, 300, 0]
    words += [2 * len(e) for e in entries_per_unit]
    for entries in entries_per_unit:
        seg = [w for pair in entries[:seg_entries] for w in pair]
        words += seg + [0] * (2 * seg_entries - len(seg))
    return struct.pack(f"<{len(words)}I", *words)


def test_nested_scopes_give_own_time_and_paths() -> None:
    unit = [_entry(True, 0, 1000), _entry(True, 1, 1100), _entry(False, 1, 1400), _entry(False, 0, 2000)]
    slot = _cta([unit])
    decoded = decode(slot, 1, Layout(len(slot), 1, [0]))
    rows = {
        r.path: r.metrics
        for r in aggregate.rows(decoded, {0: "outer", 1: "inner"}, {0: -1, 1: 0}, 1, 1, 1_000_000)
    }
    assert set(rows) == {("outer",), ("outer", "inner")}
    assert rows[("outer",)]["cycles"] == 1000 and rows[("outer",)]["time (ns)"] == 700  # 1000 - 300 nested
    assert rows[("outer", "inner")]["time (ns)"] == 300


def test_an_end_without_its_start_is_counted_not_raised() -> None:
    unit = [_entry(False, 0, 500), _entry(True, 1, 600), _entry(False, 1, 700), _entry(True, 2, 800)]
    slot = _cta([unit])
    decoded = decode(slot, 1, Layout(len(slot), 1, [0]))
    assert decoded.unmatched == 2 and len(decoded.start_cycle) == 1


def test_a_clock_going_backwards_is_counted() -> None:
    slot = _cta([[_entry(True, 0, 900), _entry(False, 0, 100)]])
    decoded = decode(slot, 1, Layout(len(slot), 1, [0]))
    assert decoded.unmatched == 1 and not len(decoded.start_cycle)


def test_host_buffer_round_trip() -> None:
    data = (FIXTURES / "default.bin").read_bytes()
    decoded, layout, _ = read_host_buffer(data)
    payload_offset = struct.unpack_from("<I", data, 12)[0]
    again = host_buffer(data[payload_offset:], 4, layout)
    assert again == data


def test_hostile_headers_are_one_line_errors() -> None:
    data = (FIXTURES / "default.bin").read_bytes()
    for bad in (
        b"",
        data[:20],
        struct.pack("<I", 9) + data[4:],
        data[:36] + struct.pack("<I", 10**6) + data[40:],
    ):
        with pytest.raises(BufferError) as info:
            read_host_buffer(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(BufferError):
        decode(b"\0" * 64, 1, Layout(0, 4, [0]))
    with pytest.raises(BufferError):
        decode(b"\0" * 64, 1, Layout(64, 4, [7]))


def test_truncated_and_damaged_ctas_are_skipped_and_counted() -> None:
    data = (FIXTURES / "default.bin").read_bytes()
    decoded, layout, _ = read_host_buffer(data[: len(data) - 5000])  # the last CTA cut off
    assert decoded.bad_ctas == 1 and len(decoded.start_cycle) == 36 and decoded.problems
    payload = bytearray(data[56:])
    payload[0:4] = b"\0\0\0\0"  # CTA 0's preamble gone
    payload[8320 + 12 : 8320 + 16] = struct.pack("<I", 10**7)  # CTA 1's event area impossible
    damaged = decode(bytes(payload), 4, layout)
    assert damaged.bad_ctas == 2 and len(damaged.start_cycle) == 24


def test_random_damage_never_crashes() -> None:
    data = bytearray((FIXTURES / "default.bin").read_bytes())
    rng = random.Random(7)
    for _ in range(300):
        bad = bytearray(data)
        for _ in range(rng.randint(1, 40)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        try:
            decoded, _, _ = read_host_buffer(bytes(bad))
        except BufferError:
            continue
        assert len(decoded.start_cycle) <= 48 + 40  # never more spans than entries could make
        assert (decoded.end_cycle >= decoded.start_cycle).all()


def test_spans_line_up_ctas_on_the_global_timer() -> None:
    decoded, _, _ = read_host_buffer((FIXTURES / "default.bin").read_bytes())
    spans = aggregate.spans(decoded, "three", NAMES, 1_980_000, offset_ns=0)
    assert len(spans) == 48 and spans.names == ["load", "compute", "store"]
    for c in range(4):
        mine = spans.cta == decoded.cta_id[c]
        assert spans.start[mine].min() == decoded.init_ns[c]  # each CTA's first span at its start
    assert (spans.end - spans.start >= 0).all()
    assert np.array_equal(np.sort(np.unique(spans.sm)), np.sort(decoded.sm))


def test_the_clock_floor_is_below_the_reported_clock() -> None:
    """The floor is a CTA's cycle span over the ns it lived: the recorded CTAs lived 0.6 us (too
    short to measure); given 4 us, their ~1,170-cycle spans make a floor near 290 MHz."""
    decoded, _, _ = read_host_buffer((FIXTURES / "default.bin").read_bytes())
    decoded.pre_final_ns = decoded.init_ns + 4000
    first = [decoded.start_cycle[decoded.cta == c].min() for c in range(4)]
    last = [decoded.end_cycle[decoded.cta == c].max() for c in range(4)]
    expected = float(np.median([(b - a) / 4000 for a, b in zip(first, last, strict=True)])) * 1e3
    floor = aggregate.clock_floor_mhz(decoded)
    assert floor is not None and abs(floor - expected) < 1e-6 and 250 < floor < 330
    short, _, _ = read_host_buffer((FIXTURES / "default.bin").read_bytes())
    assert aggregate.clock_floor_mhz(short) is None  # too short-lived to measure
