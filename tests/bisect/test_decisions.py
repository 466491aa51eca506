"""Bisect's decisions without running anything: ``--slower``'s verdict from recorded rounds, the
output comparison, the search, and the first IR stage that differs."""

from __future__ import annotations

import pytest

from deuteron.bisect import search, timing
from deuteron.bisect.outputs import first_difference
from deuteron.bisect.stages import first_change, normalised

# Kernel times in ms, recorded in turn (good, candidate, candidate, good, ...).
GOOD = [10.02, 10.11, 9.97, 10.05, 10.20]
STEADY_SLOWER = [12.01, 12.14, 11.93, 12.20, 12.05]  # 20% slower, 1% noise
SAME = [10.08, 9.95, 10.12, 10.01, 10.16]
NOISY_GOOD = [10.0, 14.1, 8.2, 12.5, 9.1]
NOISY_SLOWER = [12.3, 16.0, 9.4, 11.2, 13.1]  # 1.2x by medians, but the rounds spread ±25%


def test_a_clear_slowdown_is_slower() -> None:
    verdict, measured = timing.decide(GOOD, STEADY_SLOWER, 1.1, last_round=False)
    assert verdict == timing.SLOWER
    assert measured.ratio == pytest.approx(12.05 / 10.05)
    assert measured.noise < 0.02
    assert "1.199x" in measured.describe() and "5 rounds" in measured.describe()


def test_under_the_threshold_is_not_slower() -> None:
    assert timing.decide(GOOD, SAME, 1.1, last_round=False)[0] == timing.NOT_SLOWER
    # 20% slower is not slower against a threshold of 1.3
    assert timing.decide(GOOD, STEADY_SLOWER, 1.3, last_round=False)[0] == timing.NOT_SLOWER


def test_within_the_noise_is_unclear_then_not_slower() -> None:
    verdict, measured = timing.decide(NOISY_GOOD, NOISY_SLOWER, 1.1, last_round=False)
    assert measured.ratio > 1.1
    assert measured.noise > 0.1
    assert verdict == timing.UNCLEAR  # more rounds are taken
    assert timing.decide(NOISY_GOOD, NOISY_SLOWER, 1.1, last_round=True)[0] == timing.NOT_SLOWER


def test_one_wild_round_does_not_make_noise() -> None:
    """A round the machine hiccupped in (3x) moves neither the medians nor the spread much."""
    good = [*GOOD[:4], 30.0]
    verdict, measured = timing.decide(good, STEADY_SLOWER, 1.1, last_round=False)
    assert verdict == timing.SLOWER
    assert measured.noise < 0.03


def test_rounds_alternate_which_side_runs_first() -> None:
    assert [timing.order(i) for i in range(3)] == [
        ("good", "candidate"),
        ("candidate", "good"),
        ("good", "candidate"),
    ]


def test_search_finds_the_first_bad() -> None:
    for first_bad in range(1, 9):
        asked: list[int] = []

        def is_bad(
            i: int, step: int, steps: int, first_bad: int = first_bad, asked: list[int] = asked
        ) -> bool:
            asked.append(i)
            assert 1 <= step <= steps <= 3
            return i >= first_bad

        assert search.bisect(9, is_bad) == (first_bad - 1, first_bad)
        assert len(asked) <= 3 and 0 not in asked and 8 not in asked


def test_outputs_compare_numbers_within_a_tolerance_and_ignore_durations() -> None:
    good = "add_kernel: launch 2 of 2, on the CPU: 89.7 ms\noutputs match: out_ptr\nsum 1.0000001\n"
    assert (
        first_difference(good, good.replace("89.7 ms", "120.4 ms").replace("1.0000001", "1.0000002")) is None
    )
    wrong = first_difference(good, good.replace("sum 1.0000001", "sum 1.01"))
    assert wrong == "output line 3 is 'sum 1.01', the good one's 'sum 1.0000001'"
    assert first_difference("a\nb\n", "a\n") == "1 lines of output, the good one's 2"
    assert first_difference("x nan\n", "x nan\n") is None


TTIR_GOOD = [
    "module {",
    '  tt.func public @k(%a: i32 loc("a"(#loc))) attributes {noinline = false} {',
    "    %x = arith.constant dense<1> : tensor<8xi32> loc(#loc2)",
    "    tt.return loc(#loc3)",
    "  } loc(#loc1)",
    "} loc(#loc)",
    '#loc = loc("/tmp/wt-a/kernel.py":0:0)',
]


def _report(ttir: list[str], ptx: list[str]) -> dict[str, object]:
    return {"kernels": [{"name": "k", "stage_text": {"ttir": {"lines": ttir}, "ptx": {"lines": ptx}}}]}


def test_location_info_is_not_a_change() -> None:
    moved = [line.replace("/tmp/wt-a/", "/tmp/wt-b/").replace("#loc2", "#loc7") for line in TTIR_GOOD]
    ptx_a = [
        "\t.loc\t1 10 5",
        "\tadd.s32 \t%r1, %r2, 1;",
        '\t.file\t1 "/tmp/wt-a/kernel.py"',
        ".section\t.debug_str",
        ".b8 97",
    ]
    ptx_b = [
        "\t.loc\t1 12 5",
        "\tadd.s32 \t%r1, %r2, 1;",
        '\t.file\t1 "/tmp/wt-b/kernel.py"',
        ".section\t.debug_str",
        ".b8 98",
    ]
    assert normalised("ttir", TTIR_GOOD) == normalised("ttir", moved)
    assert normalised("ptx", ptx_a) == ["\tadd.s32 \t%r1, %r2, 1;"]
    assert normalised("llir", ["  %6 = mul i32 %0, %5, !dbg !18", "!18 = !DILocation(line: 9)"]) == [
        "  %6 = mul i32 %0, %5"
    ]
    assert first_change(_report(TTIR_GOOD, ptx_a), _report(moved, ptx_b)) is None


def test_the_first_stage_that_differs_is_named() -> None:
    ptx_a = ["\tadd.s32 \t%r1, %r2, 1;"]
    ptx_b = ["\tadd.s32 \t%r1, %r2, 2;"]
    changed = [line.replace("dense<1>", "dense<2>") for line in TTIR_GOOD]
    change = first_change(_report(TTIR_GOOD, ptx_a), _report(changed, ptx_b))
    assert change is not None and (change.kernel, change.stage, change.also) == ("k", "ttir", ["ptx"])
    assert "-    %x = arith.constant dense<1> : tensor<8xi32>" in change.excerpt
    assert "+    %x = arith.constant dense<2> : tensor<8xi32>" in change.excerpt
    only_ptx = first_change(_report(TTIR_GOOD, ptx_a), _report(TTIR_GOOD, ptx_b))
    assert only_ptx is not None and only_ptx.stage == "ptx" and only_ptx.also == []
