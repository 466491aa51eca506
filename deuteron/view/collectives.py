"""A job's collective calls across its ranks, from each rank's record of them (metadata
``collectives``, torch's Flight Recorder: see :mod:`deuteron.collect.collectives`), matched call
by call in :mod:`deuteron.view.collective_calls`, which says how a call's time splits into the
ranks' waits and the transfer.

- **Who waits for whom** (``[waits]``, ``[calls]``). The last rank to arrive at a call holds the
  others up by the difference. A rank is named as holding the others up when their waits for it
  are at least half of all the waiting and it comes last more often than chance; the calls the
  ranks waited at longest follow, each with the median and the worst wait over the other ranks.
- **What the collectives move** (``[collectives]``). Per operation, size and dtype, the largest
  first: how many calls, the bytes each (the larger of input and output, as nccl-tests counts: an
  all-gather's whole output), the transfer time and, from it, the algorithm bandwidth (bytes over
  time) and the bus bandwidth (times NCCL's factor: 2(n-1)/n for all_reduce, (n-1)/n for
  all_gather, reduce_scatter and all_to_all, 1 otherwise), as nccl-tests computes them. NCCL's
  own duration is no measure of the link: it holds the rank's wait for the others, so a job held
  up by a straggler would show a fraction of what the link did.
- **The link** (``[link]``). The bus bandwidth is set against the peak of the link the ranks most
  likely used, one direction (:func:`deuteron.model.devices.assumed_link`: NVLink within a host of
  SXM parts, the network between hosts; said as assumed), and sizes of at least 1 MiB moving at
  under a quarter of it once the waits are out are flagged.

The output stays a few lines for any number of ranks: ranks and calls are summarised, and only
the top ones listed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from deuteron.model.devices import Link, assumed_link
from deuteron.model.tree import Profile
from deuteron.view.advise import Advice
from deuteron.view.collective_calls import Call, Matched, group_size, match, single_durations, world_size
from deuteron.view.jobs import rank_of

SOURCE = "torch's Flight Recorder (c10d)"
HOLDS_UP = 0.5  # a rank is said to hold the others up when their waits for it are this share of all
LOW_SHARE = 0.25  # a size moving at under this share of the link's peak is flagged ...
LOW_MIN_BYTES = 1 << 20  # ... when its calls move at least this much (smaller ones are latency-bound)
TOP_RANKS, TOP_CALLS, TOP_SIZES = 8, 5, 10  # rows shown, whatever the number of ranks and calls


@dataclass
class CollectiveReport:
    """The advice on the job's collectives, and what the straggler's analysis reads of it: the
    rank the others wait for (a profile's index), if one is named, and the calls matched."""

    advice: list[Advice] = field(default_factory=list)
    matched: Matched | None = None
    holds_up: int | None = None
    others_waited_ns: float = 0.0  # the others' waits for that rank, in all


def collective_findings(profiles: Sequence[Profile]) -> list[Advice]:
    """The waits and the costs of the job's collectives; [] where no file has their record."""
    return collective_report(profiles).advice


def collective_report(profiles: Sequence[Profile]) -> CollectiveReport:
    matched = match(profiles)
    out = CollectiveReport(matched=matched)
    if matched is None:
        return out
    hosts = {p.metadata.get("host") for p in profiles} - {None}
    link, why = assumed_link(profiles[matched.records[0].index].devices, max(len(hosts), 1))
    if len(matched.records) == 1:
        out.advice.append(_one_rank(profiles, matched))
        return out
    waits = _waits(profiles, matched, out)
    if waits is not None:
        out.advice += [waits, _top_calls(profiles, matched)]
    rows = _sizes(profiles, matched, link)
    out.advice.append(Advice("collectives", _costs_title(profiles, matched, link, why), rows[:TOP_SIZES]))
    low = [r for r in rows if r.pop("_low", False)]
    for row in rows:
        row.pop("_low", None)
    if low and link is not None:
        out.advice.append(_slow_link(low, link, why))
    return out


def _waits(profiles: Sequence[Profile], matched: Matched, out: CollectiveReport) -> Advice | None:
    """``[waits]``: the rank the others wait for, if one is, with each rank's waits."""
    calls = [c for c in matched.calls if c.arrivals is not None]
    if not calls:
        return None
    last_at: dict[int, int] = {}
    late_by: dict[int, list[float]] = {}
    waited: dict[int, float] = {r.index: 0.0 for r in matched.records}
    caused: dict[int, float] = {r.index: 0.0 for r in matched.records}  # others' waits while it came last
    worst: tuple[float, Call] | None = None
    # The first call of each operation on each process group is set-up (NCCL connects its ranks,
    # the first step loads and compiles at its own pace on each rank): its waits count in every
    # number shown, but not in the share that names a straggler (on two H200s a 180 ms wait at the
    # first all-reduce, rank 0 last, outweighed the planted straggler's 26 of 36 calls).
    first: dict[tuple[str, str], int] = {}  # each operation's first sequence number on its group
    for call in calls:
        key = (call.group, call.op)
        first[key] = min(first.get(key, call.seq), call.seq)
    steady: dict[int, float] = {r.index: 0.0 for r in matched.records}  # caused, set-up left out
    for call in calls:
        waits = call.waits()
        last = call.ranks[call.last]
        if call.seq != first[(call.group, call.op)]:
            steady[last] += sum(waits)
        last_at[last] = last_at.get(last, 0) + 1
        lateness = max(waits)
        late_by.setdefault(last, []).append(lateness)
        for i, w in zip(call.ranks, waits, strict=True):
            waited[i] += w
            caused[last] += w
        if worst is None or lateness > worst[0]:
            worst = (lateness, call)
    # The rank the others wait for longest in all is named as holding them up only when that is
    # most of all the waiting and it comes last more often than chance: a few long waits at set-up,
    # or many small calls (barriers, broadcasts), must not name a rank on their own.
    straggler = max(caused, key=lambda i: (steady[i], caused[i], last_at.get(i, 0)))
    total = sum(caused.values())
    if not total or worst is None:
        return None
    longest = f"{worst[1].name()}, {worst[0] / 1e6:.2f} ms"
    share = caused[straggler] / total
    name = rank_of(profiles[straggler], straggler)
    steady_total = sum(steady.values())
    steady_share = steady[straggler] / steady_total if steady_total else share
    if max(share, steady_share) >= HOLDS_UP and last_at.get(straggler, 0) > len(calls) / len(matched.records):
        out.holds_up, out.others_waited_ns = straggler, caused[straggler]
        median_late = statistics.median(late_by[straggler]) / 1e6
        title = (
            f"rank {name} holds the others up: it reaches {last_at[straggler]} of {len(calls)} calls "
            f"last, a median {median_late:.2f} ms after the first rank, and the others wait "
            f"{caused[straggler] / 1e6:.2f} ms in all for it ({share:.0%} of all the waiting"
            + (
                f", {steady_share:.0%} after each operation's first call, set-up"
                if steady_share > share + 0.005
                else ""
            )
            + f"; the longest wait: {longest}); "
        )
    else:
        often = sorted(last_at, key=lambda i: -last_at[i])[:3]
        lasts = ", ".join(f"rank {rank_of(profiles[i], i)} at {last_at[i]}" for i in often)
        title = (
            f"no one rank holds the others up: the last to arrive varies ({lasts} of {len(calls)} "
            f"calls); the ranks wait {total / 1e6:.2f} ms in all, {share:.0%} of it for rank {name} "
            f"(the longest wait: {longest}); "
        )
    if matched.timed:
        title += "arrivals are when each rank's GPU reached the call (its end less its duration), "
        title += f"from {SOURCE}"
    else:
        title += f"arrivals are when each rank's CPU made the call, from {SOURCE}"
        if any(c.op.startswith("nccl:") for c in calls):
            title += (
                " (NCCL's calls are only enqueued there, and a CPU can run ahead of its GPU: "
                "TORCH_NCCL_ENABLE_TIMING=1 times them on the GPU)"
            )
    evidence: list[dict[str, object]] = [
        {
            "path": f"rank {rank_of(profiles[i], i)}",
            "others_waited_ms": _ms(caused[i]),
            "last_at": last_at.get(i, 0),
            "waited_ms": _ms(waited[i]),
        }
        for i in sorted(caused, key=lambda i: -caused[i])[:TOP_RANKS]
    ]
    return Advice("waits", title, evidence)


def _others(call: Call) -> tuple[list[float], int]:
    """The waits of the ranks other than the last (ns), and the profile index of the rank that
    waited longest."""
    waits = call.waits()
    last = call.last
    others = [w for k, w in enumerate(waits) if k != last]
    longest = max(range(len(waits)), key=lambda k: waits[k])
    return others, call.ranks[longest]


def _top_calls(profiles: Sequence[Profile], matched: Matched) -> Advice:
    """``[calls]``: the calls the ranks waited at longest, each summarised over the ranks."""
    calls = [c for c in matched.calls if c.arrivals is not None]
    ranked = sorted(calls, key=lambda c: -sum(c.waits()))[:TOP_CALLS]
    rows: list[dict[str, object]] = []
    for call in ranked:
        others, longest = _others(call)
        row: dict[str, object] = {"path": f"{call.name()} ({_size(call.size)} {call.dtype})".strip()}
        if call.transfer_ns is not None:
            row["transfer_ms"] = _ms(call.transfer_ns)
        row["wait_ms_median"] = _ms(statistics.median(others))
        row["wait_ms_worst"] = _ms(max(others))
        row["waited_longest"] = f"rank {rank_of(profiles[longest], longest)}"
        row["last"] = f"rank {rank_of(profiles[call.ranks[call.last]], call.ranks[call.last])}"
        rows.append(row)
    title = (
        f"the {len(rows)} calls of {len(calls)} the ranks waited at longest (their waits summed): "
        "each rank's wait is the last arrival less its own; median and worst over the ranks other "
        "than the last"
    )
    return Advice("calls", title, rows)


def _sizes(profiles: Sequence[Profile], matched: Matched, link: Link | None) -> list[dict[str, object]]:
    """``[collectives]``' rows: per operation, size and dtype, the most bytes first."""
    groups: dict[tuple[str, int, str], list[Call]] = {}
    for call in matched.calls:
        groups.setdefault((call.op, call.size, call.dtype), []).append(call)
    rows: list[dict[str, object]] = []
    for (op, size, dtype), calls in sorted(groups.items(), key=lambda kv: -kv[0][1] * len(kv[1])):
        row: dict[str, object] = {"path": f"{op} {_size(size)} {dtype}".strip(), "calls": len(calls)}
        row["total_bytes"] = size * len(calls)
        transfers = [c.transfer_ns for c in calls if c.transfer_ns]
        if transfers:
            took = statistics.median(transfers)
            algbw = size / took  # bytes per ns: GB/s
            busbw = algbw * bus_factor(op, group_size(profiles, calls[0], matched))
            row.update(transfer_ms=_ms(took), algbw_gbs=round(algbw, 2), busbw_gbs=round(busbw, 2))
            if link is not None and size >= LOW_MIN_BYTES:  # a smaller call is latency-bound
                share = busbw * 1e9 / link.bytes_per_s
                row["link_peak"] = f"{math.floor(share * 100)}%"  # 24.7% is under 25%, and shown so
                row["_low"] = share < LOW_SHARE
        waited = [(c, _others(c)) for c in calls if c.arrivals is not None]
        if waited:
            worst_call, (worst, longest) = max(waited, key=lambda cw: max(cw[1][0]))
            row["wait_ms_median"] = _ms(statistics.median(statistics.median(o) for _, (o, _) in waited))
            row["wait_ms_worst"] = _ms(max(worst))
            row["waited_longest"] = f"rank {rank_of(profiles[longest], longest)}"
        rows.append(row)
    return rows


def _costs_title(profiles: Sequence[Profile], matched: Matched, link: Link | None, why: str) -> str:
    calls = len(matched.calls)
    ranks = len(matched.records)
    title = (
        f"{calls} collective calls of {ranks} ranks matched by process group and sequence number, "
        f"from {SOURCE}, by operation, size and dtype, the most bytes first: "
    )
    if any(c.transfer_ns for c in matched.calls):
        title += (
            "the transfer runs from the last rank's arrival to the end (an arrival: the end less "
            "that rank's NCCL duration; NCCL's duration itself holds the rank's wait), the waits "
            "from each rank's arrival to the last's; bandwidth from the transfer (busbw: "
            "nccl-tests' factor for the operation and the group's ranks)"
        )
        if link is not None:
            title += (
                f", set against {link.name}'s {link.bytes_per_s / 1e9:.0f} GB/s per direction "
                f"(assumed: {why}) for calls of {_size(LOW_MIN_BYTES)} or more"
            )
        else:
            title += f"; {why}, so no peak to set it against"
    elif matched.comparable:
        title += (
            "no durations, so the transfer is not known (NCCL records them with "
            "TORCH_NCCL_ENABLE_TIMING=1; gloo has none); waits from the CPUs' call times"
        )
    else:
        title += (
            "no durations, so neither the transfer nor the waits are known (NCCL records them with "
            "TORCH_NCCL_ENABLE_TIMING=1), and the hosts' clocks are not one"
        )
    world = world_size(profiles)
    if ranks < world:
        title += (
            f"; from {ranks} of the job's {world} ranks: a rank not given may have arrived later, "
            "so the transfer is at most this and the bandwidth at least"
        )
    if not any(len(c.ranks) > 1 for c in matched.calls):
        title += "; no call is in two ranks' records (records of different runs, or rings that wrapped)"
    return title + _notes(matched)


def _notes(matched: Matched) -> str:
    notes = ""
    if matched.unread:
        notes += "; " + "; ".join(matched.unread[:3]) + (", ..." if len(matched.unread) > 3 else "")
    if matched.mismatched_count:
        notes += (
            f"; {matched.mismatched_count} calls differ between the ranks' records and are left out: "
            + "; ".join(matched.mismatched)
        )
    skipped = sum(r.skipped for r in matched.records)
    if skipped:
        notes += f"; {skipped} damaged rows of the records not read"
    return notes


def _one_rank(profiles: Sequence[Profile], matched: Matched) -> Advice:
    """``[collectives]`` of one rank's file: NCCL's durations, which hold the rank's waits."""
    record = matched.records[0]
    rows: list[dict[str, object]] = []
    world = world_size(profiles)
    groups = single_durations(record)
    for (op, size, dtype), durations in sorted(groups.items(), key=lambda kv: -kv[0][1] * len(kv[1])):
        row: dict[str, object] = {"path": f"{op} {_size(size)} {dtype}".strip(), "calls": len(durations)}
        row["total_bytes"] = size * len(durations)
        timed = [d for d in durations if d]
        if timed:
            took = statistics.median(timed)
            algbw = size / took
            row["nccl_ms_with_wait"] = _ms(took)
            row["busbw_gbs_with_wait"] = round(algbw * bus_factor(op, world), 2)
        rows.append(row)
    calls = sum(len(d) for d in groups.values())
    title = f"rank {record.rank}'s {calls} collective calls by operation, size and dtype, from {SOURCE}: "
    if any(d for ds in groups.values() for d in ds):
        title += (
            "only one rank's record, so the transfer cannot be told from the wait: NCCL's duration runs "
            "from when this rank's GPU reached the call and holds its wait for the others, and the "
            "bus bandwidth from it is at most what the link gave; given every rank's file, the two "
            "are told apart"
        )
    else:
        title += "no durations (NCCL records them with TORCH_NCCL_ENABLE_TIMING=1)"
    return Advice("collectives", title + _notes(matched), rows[:TOP_SIZES])


def _slow_link(low: list[dict[str, object]], link: Link, why: str) -> Advice:
    calls = sum(int(r["calls"]) for r in low)  # type: ignore[call-overload]
    title = (
        f"{len(low)} collective sizes of {_size(LOW_MIN_BYTES)} or more ({calls} calls) move at "
        f"under {LOW_SHARE:.0%} of the link's peak with the waits taken out: {link.name} assumed "
        f"({why}), {link.bytes_per_s / 1e9:.0f} GB/s per direction ({link.source}). A call beside "
        "compute kernels shares the GPU with them, and NCCL's protocol and channels set what it "
        "reaches: benchmarks/nccl_busbw.py times the same sizes alone, for what this link gives"
    )
    keys = ("calls", "transfer_ms", "busbw_gbs", "link_peak")
    return Advice("link", title, [{"path": r["path"], **{k: r[k] for k in keys}} for r in low[:TOP_SIZES]])


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


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' factor from algorithm to bus bandwidth for ``op`` over ``n`` ranks."""
    kind = _kind(op)
    if n < 2:
        return 1.0
    if kind in ("all_reduce", "allreduce"):
        return 2 * (n - 1) / n
    if kind in _ONE_WAY:
        return (n - 1) / n
    return 1.0


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
