"""A job's collective calls matched across its ranks, each split into the time its data moved
and the time each rank waited (the numbers :mod:`deuteron.view.collectives` reports).

**Matching.** Each rank's file holds its Flight Recorder's record (metadata ``collectives``, see
:mod:`deuteron.collect.collectives`). One call of a process group has the same sequence number on
every rank of that group, so calls are matched by (group, sequence number); a key whose operation
or size differs between ranks is not one call (a record from another run, a ring buffer that
wrapped differently) and is left out, and said.

**Arrival, transfer, wait.** The recorder's own start and end (``time_discovered_*``) are when
c10d's watchdog noticed them, a poll later, so they cannot time a call. NCCL's CUDA events can
(``TORCH_NCCL_ENABLE_TIMING=1``): each rank's duration runs from when its GPU stream reached the
call, its inputs ready, to the call's end. The end is the same moment on every rank (the last
rank's data completes the call everywhere), so a rank's arrival is the end less its duration,
whatever the hosts' clocks, and:

- the **transfer** is from the last arrival to the end: the shortest duration of the call;
- a rank's **wait** is the last arrival less its own: its duration less the shortest.

Without durations (gloo, or NCCL without the variable), arrivals are the CPUs' call times, which
only one host's ranks share, and the transfer is not known. With one rank's file there is no
other arrival: its duration is transfer and wait together, and is reported as such.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from deuteron.model.tree import Profile
from deuteron.view.jobs import rank_of

_FIELDS = ("group", "seq", "op", "in_bytes", "out_bytes", "dtype", "created_ns", "duration_ms", "p2p")


@dataclass(frozen=True)
class Row:
    """One call as one rank recorded it."""

    op: str
    size: int  # bytes as nccl-tests counts them: the larger of input and output
    dtype: str
    created_ns: int  # when the rank's CPU made the call (its host's wall clock)
    duration_ns: float | None  # NCCL's duration on the GPU: the rank's wait and the transfer


@dataclass
class RankRecord:
    """One rank's recorded calls by (group, sequence number), and what its file says of it."""

    index: int  # the profile's place among those given
    rank: str
    host: object
    calls: dict[tuple[str, int], Row]
    skipped: int = 0  # rows that could not be read


def read_record(profile: Profile, index: int) -> RankRecord | str:
    """The rank's record, or why there is none: said in one line, never raised, as a file may
    come from an older Deuteron, a program without collectives, or a damaged write."""
    rank = rank_of(profile, index)
    cols = profile.metadata.get("collectives")
    if cols is None:
        return f"rank {rank}'s file has no record of collectives"
    if not isinstance(cols, dict) or any(not isinstance(cols.get(f), list) for f in _FIELDS):
        return f"rank {rank}'s record of collectives is damaged (a column is missing)"
    lengths = {len(cols[f]) for f in _FIELDS}
    if len(lengths) != 1:
        return f"rank {rank}'s record of collectives is damaged (its columns differ in length)"
    record = RankRecord(index, rank, profile.metadata.get("host"), {})
    for group, seq, op, size_in, size_out, dtype, created, duration, p2p in zip(
        *(cols[f] for f in _FIELDS), strict=True
    ):
        try:
            if p2p or int(seq) < 0:
                continue
            took = float(duration) * 1e6 if isinstance(duration, (int, float)) and duration > 0 else None
            row = Row(str(op), max(int(size_in), int(size_out)), str(dtype), int(created or 0), took)
        except (TypeError, ValueError):
            record.skipped += 1
            continue
        record.calls[(str(group), int(seq))] = row
    if not record.calls:
        return f"rank {rank}'s record holds no collective call"
    return record


@dataclass
class Call:
    """One call matched across ranks: who arrived when, the transfer, and each rank's wait."""

    group: str
    seq: int
    op: str
    size: int
    dtype: str
    ranks: list[int]  # the records' places among the profiles given
    durations: list[float] | None  # ns per rank, where every rank timed it
    arrivals: list[float] | None  # ns on one scale per call (see the module), None: not comparable

    @property
    def transfer_ns(self) -> float | None:
        """From the last arrival to the end: the shortest duration (None without durations)."""
        return min(self.durations) if self.durations else None

    @property
    def last(self) -> int:
        """The place (in ``ranks``) of the rank that arrived last."""
        assert self.arrivals is not None
        return max(range(len(self.arrivals)), key=lambda k: self.arrivals[k])  # type: ignore[index]

    def waits(self) -> list[float]:
        """Each rank's wait for the last (ns, in the order of ``ranks``; 0 for the last)."""
        assert self.arrivals is not None
        latest = max(self.arrivals)
        return [latest - a for a in self.arrivals]

    def name(self) -> str:
        return f"{self.op} #{self.seq} of group {self.group or 'default'}"


@dataclass
class Matched:
    """The job's calls matched across the ranks, and what could not be."""

    records: list[RankRecord]
    calls: list[Call]
    timed: bool  # arrivals from NCCL's durations (else the CPUs' call times, or none)
    comparable: bool  # arrivals could be compared (timed, or every rank on one host)
    unread: list[str] = field(default_factory=list)  # one line per rank file without a record
    mismatched: list[str] = field(default_factory=list)  # keys whose op or size differ, described
    mismatched_count: int = 0


def match(profiles: Sequence[Profile]) -> Matched | None:
    """The calls of every rank file matched (see the module); None where no file has a record."""
    records: list[RankRecord] = []
    unread: list[str] = []
    for i, p in enumerate(profiles):
        got = read_record(p, i)
        if isinstance(got, str):
            unread.append(got)  # said only beside other ranks' records: a mixed job
            continue
        records.append(got)
    if not records:
        return None
    keys: dict[tuple[str, int], list[tuple[int, Row]]] = {}
    for place, record in enumerate(records):
        for key, row in record.calls.items():
            keys.setdefault(key, []).append((place, row))
    hosts = {r.host for r in records}
    one_host = len(hosts) == 1 and None not in hosts
    timed = any(len(rows) > 1 and all(r.duration_ns for _, r in rows) for rows in keys.values())
    out = Matched(records, [], timed, timed or one_host, unread)
    for (group, seq), rows in keys.items():
        first = rows[0][1]
        if any(r.op != first.op or r.size != first.size for _, r in rows):
            out.mismatched_count += 1
            if len(out.mismatched) < 3:
                seen = ", ".join(f"rank {records[p].rank}: {r.op} of {r.size:,} B" for p, r in rows[:3])
                out.mismatched.append(f"#{seq} of group {group or 'default'} ({seen})")
            continue
        ranks = [records[p].index for p, _ in rows]
        durations = [r.duration_ns for _, r in rows]
        every = all(d is not None for d in durations) and len(rows) > 1
        arrivals: list[float] | None = None
        if timed and every:
            arrivals = [-float(d) for d in durations]  # type: ignore[arg-type]
        elif not timed and one_host and len(rows) > 1 and all(r.created_ns for _, r in rows):
            arrivals = [float(r.created_ns) for _, r in rows]
        kept = [float(d) for d in durations] if every else None  # type: ignore[arg-type]
        out.calls.append(Call(group, seq, first.op, first.size, first.dtype, ranks, kept, arrivals))
    out.calls.sort(key=lambda c: (c.group, c.seq))
    return out


def single_durations(record: RankRecord) -> dict[tuple[str, int, str], list[float | None]]:
    """One rank's calls by operation, size and dtype, with NCCL's durations (ns; transfer and
    wait together, as no other rank's arrival is known)."""
    out: dict[tuple[str, int, str], list[float | None]] = {}
    for row in record.calls.values():
        out.setdefault((row.op, row.size, row.dtype), []).append(row.duration_ns)
    return out


def group_size(profiles: Sequence[Profile], call: Call, matched: Matched) -> int:
    """The ranks of the call's process group, for NCCL's bus factor: what the rank's file says of
    the group (``collective_groups``), else, with every rank's file given, those that recorded the
    call, else the job's world size."""
    meta = profiles[call.ranks[0]].metadata
    groups = meta.get("collective_groups")
    if isinstance(groups, dict) and isinstance(groups.get(call.group), int):
        return int(groups[call.group])
    world = world_size(profiles)
    return len(call.ranks) if len(matched.records) >= world else world


def world_size(profiles: Sequence[Profile]) -> int:
    size = profiles[0].metadata.get("world_size")
    return int(size) if isinstance(size, str) and size.isdigit() else len(profiles)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))
