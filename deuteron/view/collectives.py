"""A job's collective calls across its ranks, from each rank's record of them (metadata
``collectives``, torch's Flight Recorder: see :mod:`deuteron.collect.collectives`).

- **Who waits for whom.** One call of a process group has the same sequence number on every rank
  of that group, so the calls are matched across the rank files by (group, sequence number). A
  rank's arrival is when it made the call (the recorder's ``time_created_ns``, the host's clock);
  the last rank to arrive holds the others up by the difference. Arrivals are compared only when
  every rank ran on one host: hosts' clocks differ, and they are not aligned yet.
- **What the collectives move.** Per operation, size and dtype: how many calls, the bytes each
  (the tensors' elements times the dtype's size, as the recorder lists them), and where the
  recorder has durations (NCCL with ``TORCH_NCCL_ENABLE_TIMING=1``) the algorithm bandwidth
  (bytes over time) and the bus bandwidth (times NCCL's factor for the operation: 2(n-1)/n for
  all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 otherwise).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from deuteron.model.tree import Profile
from deuteron.view.advise import Finding
from deuteron.view.jobs import rank_of

SOURCE = "torch's Flight Recorder (c10d)"


def _columns(profile: Profile) -> dict[str, list[Any]] | None:
    cols = profile.metadata.get("collectives")
    return cols if isinstance(cols, dict) and cols.get("seq") else None


def collective_findings(profiles: Sequence[Profile]) -> list[Finding]:
    """The waits and the costs of the job's collectives; [] where no file has their record."""
    recorded = [(i, c) for i, p in enumerate(profiles) if (c := _columns(p)) is not None]
    if not recorded:
        return []
    out = []
    hosts = {profiles[i].metadata.get("host") for i, _ in recorded}
    waits = _waits(profiles, recorded) if len(recorded) > 1 and len(hosts) == 1 else None
    if waits is not None:
        out.append(waits)
    out.append(_costs(profiles[recorded[0][0]], recorded[0][1], _world(profiles)))
    return out


def _world(profiles: Sequence[Profile]) -> int:
    size = profiles[0].metadata.get("world_size")
    return int(size) if isinstance(size, str) and size.isdigit() else len(profiles)


Recorded = list[tuple[int, dict[str, list[Any]]]]  # (the profile's index, its collectives' columns)


def _waits(profiles: Sequence[Profile], recorded: Recorded) -> Finding | None:
    arrivals: dict[tuple[str, int], dict[int, int]] = {}
    ops: dict[tuple[str, int], str] = {}
    for i, cols in recorded:
        for group, seq, op, created, p2p in zip(
            cols["group"], cols["seq"], cols["op"], cols["created_ns"], cols["p2p"], strict=True
        ):
            if p2p or seq < 0 or not created:
                continue
            arrivals.setdefault((group, seq), {})[i] = created
            ops[(group, seq)] = op
    calls = {key: at for key, at in arrivals.items() if len(at) > 1}
    if not calls:
        return None
    last_at: dict[int, int] = {}
    late_by: dict[int, list[int]] = {}
    waited: dict[int, int] = {i: 0 for i, _ in recorded}
    worst: tuple[int, tuple[str, int]] | None = None
    for key, at in calls.items():
        last = max(at, key=lambda i: at[i])
        last_at[last] = last_at.get(last, 0) + 1
        lateness = at[last] - min(at.values())
        late_by.setdefault(last, []).append(lateness)
        for i, t in at.items():
            waited[i] += at[last] - t
        if worst is None or lateness > worst[0]:
            worst = (lateness, key)
    straggler = max(last_at, key=lambda i: (last_at[i], sum(late_by[i])))
    mean_late = statistics.fmean(late_by[straggler]) / 1e6
    held = sum(w for i, w in waited.items() if i != straggler) / 1e6
    name = rank_of(profiles[straggler], straggler)
    assert worst is not None
    title = (
        f"rank {name} reaches the collectives last at {last_at[straggler]} of {len(calls)} calls, "
        f"{mean_late:.2f} ms after the first rank on average; the other ranks wait {held:.2f} ms in "
        f"all (the longest: {ops[worst[1]]} #{worst[1][1]} of group {worst[1][0] or 'default'}, "
        f"{worst[0] / 1e6:.2f} ms); arrivals are when each rank made the call, from {SOURCE}"
    )
    evidence: list[dict[str, object]] = [
        {
            "path": f"rank {rank_of(profiles[i], i)}",
            "last_at": last_at.get(i, 0),
            "waited_ms": round(w / 1e6, 3),
        }
        for i, w in sorted(waited.items(), key=lambda kv: -kv[1])[:8]
    ]
    return Finding("waits", title, evidence)


_GATHERS = ("all_gather", "allgather", "_allgather_base", "reduce_scatter", "_reduce_scatter_base")
_ONE_WAY = (*_GATHERS, "all_to_all", "alltoall")


def _bus_factor(op: str, n: int) -> float:
    kind = op.split(":", 1)[-1].rstrip("0123456789_").lower()
    if n < 2:
        return 1.0
    if kind in ("all_reduce", "allreduce"):
        return 2 * (n - 1) / n
    if kind in _ONE_WAY:
        return (n - 1) / n
    return 1.0


def _costs(profile: Profile, cols: dict[str, list[Any]], world: int) -> Finding:
    groups: dict[tuple[str, int, str], list[float | None]] = {}
    for op, size, dtype, duration in zip(
        cols["op"], cols["in_bytes"], cols["dtype"], cols["duration_ms"], strict=True
    ):
        groups.setdefault((op, int(size), dtype), []).append(duration)
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
    return Finding("collectives", title, rows[:12])


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
