"""Collective calls across ranks from each rank's Flight Recorder record: waits by arrival, and
bytes and bandwidth per operation (NCCL's bus factors). Real gloo calls under torchrun are checked
in tests/cli/test_torchrun.py; these are the rules on made records."""

from __future__ import annotations

import os

import pytest

from deuteron.collect import collectives
from deuteron.model.tree import Profile
from deuteron.view.collectives import _bus_factor, collective_findings


def _rank(
    rank: int, arrivals_ms: list[float], host: str = "h", durations: list[float | None] | None = None
) -> Profile:
    p = Profile()
    p.metadata.update(rank=str(rank), world_size="8", host=host)
    n = len(arrivals_ms)
    p.metadata["collectives"] = {
        "group": ["0"] * n,
        "seq": list(range(1, n + 1)),
        "op": ["nccl:all_reduce"] * n,
        "in_bytes": [256 << 20] * n,
        "out_bytes": [256 << 20] * n,
        "dtype": ["BFloat16"] * n,
        "created_ns": [int((1000 + ms) * 1e6) for ms in arrivals_ms],  # host clock times
        "duration_ms": durations or [None] * n,
        "p2p": [False] * n,
    }
    return p


def test_the_rank_arriving_last_is_named_with_the_waits_it_causes() -> None:
    ranks = [_rank(0, [0, 100, 200]), _rank(1, [10, 150, 205]), _rank(2, [1, 101, 240])]
    waits, costs = collective_findings(ranks)
    # rank 1 is last at calls 1 and 2 (the others wait 10 + 9, then 50 + 49); rank 2 at call 3 (40 + 35)
    head = "rank 1 holds the others up: it reaches 2 of 3 calls last, a median 30.00 ms after the first rank"
    assert waits.title.startswith(head)
    assert "the others wait 118.00 ms in all for it (61% of all the waiting;" in waits.title
    assert "the longest wait: nccl:all_reduce #2 of group 0, 50.00 ms" in waits.title
    assert "CPU made the call" in waits.title and "TORCH_NCCL_ENABLE_TIMING=1" in waits.title
    rows = {row["path"]: (row["others_waited_ms"], row["last_at"]) for row in waits.evidence}
    assert rows == {"rank 1": (118.0, 2), "rank 2": (75.0, 1), "rank 0": (0.0, 0)}
    assert costs.kind == "collectives" and costs.evidence[0]["path"] == "nccl:all_reduce 256.0 MiB BFloat16"


def test_no_rank_is_named_when_one_long_wait_is_all_there_is() -> None:
    # rank 0 is last at three calls (1 ms each); rank 1 at one call that costs 80 ms: a set-up
    # call, not a straggler. Nobody is named; the waits and the longest are said.
    ranks = [_rank(0, [1, 1, 1, 0]), _rank(1, [0, 0, 0, 80])]
    (waits, _) = collective_findings(ranks)
    assert waits.title.startswith(
        "no one rank holds the others up: the last to arrive varies (rank 0 at 3, rank 1 at 1 of 4 calls); "
        "the ranks wait 83.00 ms in all, 96% of it for rank 1 (the longest wait: nccl:all_reduce #4"
    )


def test_a_rank_last_at_most_calls_and_most_of_the_waiting_is_named() -> None:
    ranks = [_rank(0, [0, 0, 0, 5]), _rank(1, [20, 25, 30, 0])]
    (waits, _) = collective_findings(ranks)
    assert waits.title.startswith("rank 1 holds the others up: it reaches 3 of 4 calls last")
    assert "(94% of all the waiting;" in waits.title


def test_arrivals_on_different_hosts_are_not_compared() -> None:
    ranks = [_rank(0, [0, 100], host="a"), _rank(1, [50, 150], host="b")]
    assert [f.kind for f in collective_findings(ranks)] == ["collectives"]  # clocks not aligned yet


def test_timed_calls_name_the_last_rank_by_duration_whatever_the_clocks() -> None:
    # NCCL's timing: a call ends together on every rank, so the shortest duration came last.
    # The CPU call times say the opposite (rank 1 first), as a CPU running ahead of its GPU would.
    ranks = [
        _rank(0, [10, 110], host="a", durations=[40.0, 60.0]),
        _rank(1, [0, 100], host="b", durations=[5.0, 5.0]),
    ]
    waits, _ = collective_findings(ranks)
    assert waits.title.startswith("rank 1 holds the others up: it reaches 2 of 2 calls last")
    assert "the others wait 90.00 ms in all for it" in waits.title and "GPU reached the call" in waits.title


def test_bandwidth_from_durations_with_the_bus_factor() -> None:
    (costs,) = collective_findings([_rank(0, [0, 1, 2], durations=[2.0, 4.0, 3.0])])
    row = costs.evidence[0]
    assert row["median_ms"] == 3.0 and row["algbw_gbs"] == round((256 << 20) / 3e-3 / 1e9, 2)
    assert row["busbw_gbs"] == round(row["algbw_gbs"] * 2 * 7 / 8, 2)  # all_reduce over 8 ranks
    assert "with durations" in costs.title


@pytest.mark.parametrize(
    ("op", "factor"),
    [("nccl:all_reduce", 1.75), ("nccl:_allgather_base", 0.875), ("nccl:reduce_scatter", 0.875),
     ("nccl:broadcast", 1.0), ("gloo:all_gather0", 0.875), ("nccl:_all_gather_base", 0.875),
     ("nccl:_reduce_scatter_base", 0.875), ("nccl:all_gather_into_tensor_coalesced", 0.875),
     ("nccl:reduce_scatter_tensor_coalesced", 0.875), ("nccl:all_to_all_base", 0.875)],
)  # fmt: skip
def test_bus_factors_follow_nccl_tests(op: str, factor: float) -> None:
    assert _bus_factor(op, 8) == factor


def test_no_record_no_finding() -> None:
    assert collective_findings([Profile(), Profile()]) == []


def test_the_recorder_is_turned_on_only_in_a_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("RANK", "LOCAL_RANK", "SLURM_PROCID", *collectives.BUFFER_VARIABLES):
        monkeypatch.delenv(variable, raising=False)
    collectives.prepare()
    assert "TORCH_FR_BUFFER_SIZE" not in os.environ
    monkeypatch.setenv("RANK", "1")
    collectives.prepare()  # torch >= 2.7 here: only the new name, as the old one makes torch warn
    assert os.environ["TORCH_FR_BUFFER_SIZE"] == collectives.BUFFER_SIZE
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in os.environ
    monkeypatch.delenv("TORCH_FR_BUFFER_SIZE")
    monkeypatch.setenv("TORCH_NCCL_TRACE_BUFFER_SIZE", "64")  # the program's own choice stays
    collectives.prepare()
    assert "TORCH_FR_BUFFER_SIZE" not in os.environ
    assert os.environ["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "64"
    assert collectives._bytes([[2, 3], [4]], ["BFloat16", "Float"]) == 2 * 3 * 2 + 4 * 4
