"""A job's collective calls across its ranks, from each rank's record of them (metadata
``collectives``, torch's Flight Recorder: see :mod:`deuteron.collect.collectives`).

- **Who waits for whom.** One call of a process group has the same sequence number on every rank
  of that group, so the calls are matched across the rank files by (group, sequence number). The
  last rank to arrive holds the others up by the difference. Where every rank timed the call
  (NCCL with ``TORCH_NCCL_ENABLE_TIMING=1``: from when its GPU stream reached the call to the
  end, which is the same moment on every rank), a rank's arrival is the end less its duration:
  the rank with the shortest duration came last, whatever the hosts' clocks. Otherwise the
  arrival is when the rank's CPU made the call (the recorder's ``time_created_ns``), compared
  only when every rank ran on one host; for NCCL, whose calls the CPU only enqueues, that is
  said to be a weaker sign (a CPU can run ahead of its GPU).
- **What the collectives move.** Per operation, size and dtype: how many calls, the bytes each
  (the tensors' elements times the dtype's size, as the recorder lists them; the larger of input
  and output, as nccl-tests counts: an all-gather's whole output), and where the
  recorder has durations (NCCL with ``TORCH_NCCL_ENABLE_TIMING=1``) the algorithm bandwidth
  (bytes over time) and the bus bandwidth (times NCCL's factor for the operation: 2(n-1)/n for
  all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 otherwise).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from deuteron.model.tree import Profile
from deuteron.view.advise import Advice
from deuteron.view.jobs import rank_of

SOURCE = "torch's Flight Recorder (c10d)"
HOLDS_UP = 0.5  # a rank is said to hold the others up when their waits for it are this share of all


def _columns(profile: Profile) -> dict[str, list[Any]] | None:
    cols = profile.metadata.get("collectives")
    return cols if isinstance(cols, dict) and cols.get("seq") else None


def collective_findings(profiles: Sequence[Profile]) -> list[Advice]:
    """The waits and the costs of the job's collectives; [] where no file has their record."""
    recorded = [(i, c) for i, p in enumerate(profiles) if (c := _columns(p)) is not None]
    if not recorded:
        return []
    out = []
    hosts = {profiles[i].metadata.get("host") for i, _ in recorded}
    waits = _waits(profiles, recorded, len(hosts) == 1) if len(recorded) > 1 else None
    if waits is not None:
        out.append(waits)
    out.append(_costs(profiles[recorded[0][0]], recorded[0][1], _world(profiles)))
    return out


def _world(profiles: Sequence[Profile]) -> int:
    size = profiles[0].metadata.get("world_size")
    return int(size) if isinstance(size, str) and size.isdigit() else len(profiles)


Recorded = list[tuple[int, dict[str, list[Any]]]]  # (the profile's index, its collectives' columns)


def _arrivals(
    recorded: Recorded, timed: bool
) -> tuple[dict[tuple[str, int], dict[int, int]], dict[Any, str]]:
    """Each call's arrival per rank (ns): with ``timed``, minus its duration (the calls end together);
    else the CPU's call time. Only calls that two or more ranks made, each with what is needed."""
    arrivals: dict[tuple[str, int], dict[int, int]] = {}
    ops: dict[tuple[str, int], str] = {}
    for i, cols in recorded:
        for group, seq, op, created, p2p, duration in zip(
            cols["group"],
            cols["seq"],
            cols["op"],
            cols["created_ns"],
            cols["p2p"],
            cols["duration_ms"],
            strict=True,
        ):
            if p2p or seq < 0:
                continue
            if timed and isinstance(duration, (int, float)):
                arrivals.setdefault((group, seq), {})[i] = -round(duration * 1e6)
            elif not timed and created:
                arrivals.setdefault((group, seq), {})[i] = created
            ops[(group, seq)] = op
    return {key: at for key, at in arrivals.items() if len(at) > 1}, ops


def _waits(profiles: Sequence[Profile], recorded: Recorded, one_host: bool) -> Advice | None:
    calls, ops = _arrivals(recorded, timed=True)
    timed = bool(calls)
    if not timed:
        if not one_host:
            return None  # the hosts' clocks are not one: CPU call times cannot be compared
        calls, ops = _arrivals(recorded, timed=False)
    if not calls:
        return None
    last_at: dict[int, int] = {}
    late_by: dict[int, list[int]] = {}
    waited: dict[int, int] = {i: 0 for i, _ in recorded}
    caused: dict[int, int] = {i: 0 for i, _ in recorded}  # the waits of the others while it came last
    worst: tuple[int, tuple[str, int]] | None = None
    for key, at in calls.items():
        last = max(at, key=lambda i: at[i])
        last_at[last] = last_at.get(last, 0) + 1
        lateness = at[last] - min(at.values())
        late_by.setdefault(last, []).append(lateness)
        for i, t in at.items():
            waited[i] += at[last] - t
            caused[last] += at[last] - t
        if worst is None or lateness > worst[0]:
            worst = (lateness, key)
    # The rank the others wait for longest in all is named as holding them up only when that is
    # most of all the waiting and it comes last more often than chance: a few long waits at set-up,
    # or many small calls (barriers, broadcasts), must not name a rank on their own.
    straggler = max(caused, key=lambda i: (caused[i], last_at.get(i, 0)))
    total = sum(caused.values())
    if not total:
        return None
    assert worst is not None
    longest = f"{ops[worst[1]]} #{worst[1][1]} of group {worst[1][0] or 'default'}, {worst[0] / 1e6:.2f} ms"
    share = caused[straggler] / total
    name = rank_of(profiles[straggler], straggler)
    if share >= HOLDS_UP and last_at.get(straggler, 0) > len(calls) / len(recorded):
        median_late = statistics.median(late_by[straggler]) / 1e6
        title = (
            f"rank {name} holds the others up: it reaches {last_at[straggler]} of {len(calls)} calls "
            f"last, a median {median_late:.2f} ms after the first rank, and the others wait "
            f"{caused[straggler] / 1e6:.2f} ms in all for it ({share:.0%} of all the waiting; the "
            f"longest wait: {longest}); "
        )
    else:
        often = sorted(last_at, key=lambda i: -last_at[i])[:3]
        lasts = ", ".join(f"rank {rank_of(profiles[i], i)} at {last_at[i]}" for i in often)
        title = (
            f"no one rank holds the others up: the last to arrive varies ({lasts} of {len(calls)} "
            f"calls); the ranks wait {total / 1e6:.2f} ms in all, {share:.0%} of it for rank {name} "
            f"(the longest wait: {longest}); "
        )
    if timed:
        title += "arrivals are when each rank's GPU reached the call (its end less its duration), "
        title += f"from {SOURCE}"
    else:
        title += f"arrivals are when each rank's CPU made the call, from {SOURCE}"
        if any(str(op).startswith("nccl:") for op in ops.values()):
            title += (
                " (NCCL's calls are only enqueued there, and a CPU can run ahead of its GPU: "
                "TORCH_NCCL_ENABLE_TIMING=1 times them on the GPU)"
            )
    evidence: list[dict[str, object]] = [
        {
            "path": f"rank {rank_of(profiles[i], i)}",
            "others_waited_ms": round(caused[i] / 1e6, 3),
            "last_at": last_at.get(i, 0),
            "waited_ms": round(waited[i] / 1e6, 3),
        }
        for i in sorted(caused, key=lambda i: -caused[i])[:8]
    ]
    return Advice("waits", title, evidence)


_ONE_WAY = ("all_gather", "allgather", "reduce_scatter", "all_to_all", "alltoall")
# torch's names for one operation: "nccl:_all_gather_base", "all_gather_into_tensor_coalesced", ...
_VARIANTS = ("_into_tensor_coalesced", "_tensor_coalesced", "_into_tensor", "_coalesced", "_tensor", "_base")


def _kind(op: str) -> str:
    """The operation a recorded name stands for: "nccl:_all_gather_base" -> "all_gather"."""
    kind = op.split(":", 1)[-1].lower().strip("_0123456789")
    for suffix in _VARIANTS:
        if kind.endswith(suffix):
            return kind[: -len(suffix)]
    return kind


def _bus_factor(op: str, n: int) -> float:
    kind = _kind(op)
    if n < 2:
        return 1.0
    if kind in ("all_reduce", "allreduce"):
        return 2 * (n - 1) / n
    if kind in _ONE_WAY:
        return (n - 1) / n
    return 1.0


def _costs(profile: Profile, cols: dict[str, list[Any]], world: int) -> Advice:
    groups: dict[tuple[str, int, str], list[float | None]] = {}
    # A call's size as nccl-tests counts it: the larger of its input and output (an all-gather's
    # whole output, a reduce-scatter's whole input), so that the bus factor applies to every kind.
    for op, size_in, size_out, dtype, duration in zip(
        cols["op"], cols["in_bytes"], cols["out_bytes"], cols["dtype"], cols["duration_ms"], strict=True
    ):
        groups.setdefault((op, max(int(size_in), int(size_out)), dtype), []).append(duration)
    rows: list[dict[str, object]] = []
    for (op, size, dtype), durations in sorted(groups.items(), key=lambda kv: -kv[0][1] * len(kv[1])):
        row: dict[str, object] = {"path": f"{op} {_size(size)} {dtype}".strip(), "calls": len(durations)}
        row["total_bytes"] = size * len(durations)
        timed = [d for d in durations if d]
        if timed:
            median = statistics.median(timed)
            algbw = size / (median / 1e3) / 1e9
            row.update(median_ms=round(median, 3), algbw_gbs=round(algbw, 2))
            row["busbw_gbs"] = round(algbw * _bus_factor(op, world), 2)
        rows.append(row)
    calls = sum(len(d) for d in groups.values())
    any_timed = any(d for ds in groups.values() for d in ds)
    untimed = "no durations (NCCL records them with TORCH_NCCL_ENABLE_TIMING=1)"
    how = "with durations" if any_timed else untimed
    title = (
        f"rank {rank_of(profile, 0)}'s {calls} collective calls by operation, size and dtype, from "
        f"{SOURCE}: {how}"
    )
    return Advice("collectives", title, rows[:12])


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
