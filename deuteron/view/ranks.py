"""Several ranks of one job side by side: each rank's GPU time split into compute and communication,
and the straggler the others wait for (``deuteron view NAME.rank*.hatchet --advise``).

Why communication time names the straggler: a collective's kernel (NCCL's, RCCL's) starts on each
rank when that rank reaches it and ends when the last rank has; a rank that arrives early spends
the difference inside the kernel, waiting. So over a step, the ranks' compute differs by what
each did, and their communication by how long each waited. Where the ranks' files hold their
collectives' record, the calls say it directly: the rank the others wait for is the one
:mod:`deuteron.view.collectives` names. Else it is the rank with the most compute and the least
communication (named when its compute is at least 10% over the other ranks' median).

What it did instead is looked for on the GPU and on the host. On the GPU: where its compute
differs most from the rank nearest that median, followed from ROOT down the frames that hold
most of the difference, as long as one frame holds more than half of it. On the host, where the
ranks' traces are beside their files: the two ranks' median step, GPU compute and each thread's
busy time (:mod:`deuteron.view.rank_threads`), with the waits it causes; the larger difference is
named, since a rank slowed on its CPU keeps the others waiting as well as one slowed on its GPU.

Only the files are read (each rank's tree and its GPU busy time, its collectives' record where
torch kept one, and two ranks' traces), so this holds for any number of ranks.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from deuteron.model.metrics import TIME
from deuteron.model.names import display_name
from deuteron.model.trace import COMM_KERNEL
from deuteron.model.tree import KERNEL, Node, Profile
from deuteron.view.advise import Advice
from deuteron.view.collectives import CollectiveReport, collective_report
from deuteron.view.jobs import rank_of
from deuteron.view.rank_threads import host_cause
from deuteron.view.steps import step_findings

MIN_SPREAD = 0.10  # a straggler is named when the ranks' compute differs by at least this share
HOLDS_MOST = 0.5  # a frame on the straggler's path holds more than this share of the difference


@dataclass(frozen=True)
class RankTimes:
    """One rank's GPU time: all its kernels, those of collectives, and its window and busy time."""

    rank: str
    source: str
    kernels_ns: int
    comm_ns: int
    busy_ns: int | None
    window_ns: int | None
    comm_union_ns: int | None = None  # collectives' kernels running (overlaps counted once)
    comm_overlapped_ns: int | None = None  # ... while another kernel ran too

    @property
    def compute_ns(self) -> int:
        return self.kernels_ns - self.comm_ns


def rank_times(profile: Profile, source: str, index: int) -> RankTimes:
    kernels = comm = 0
    for node in profile.root.walk():
        if node.type != KERNEL:
            continue
        t = node.metrics.get(TIME, 0)
        t = int(t) if isinstance(t, (int, float)) else 0
        kernels += t
        if COMM_KERNEL.search(node.name):
            comm += t
    meta = profile.metadata
    busy, window = meta.get("gpu_busy_ns"), meta.get("gpu_window_ns")
    union, hidden = meta.get("gpu_comm_ns"), meta.get("gpu_comm_overlapped_ns")

    def number(value: object) -> int | None:
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return RankTimes(
        rank_of(profile, index),
        source,
        kernels,
        comm,
        number(busy),
        number(window),
        number(union),
        number(hidden),
    )


def advise_ranks(profiles: Sequence[Profile], sources: Sequence[str]) -> list[Advice]:
    """The per-rank breakdown, and the straggler where the evidence is there (see the module)."""
    times = [rank_times(p, s, i) for i, (p, s) in enumerate(zip(profiles, sources, strict=True))]
    report = collective_report(profiles)  # who waits for whom, call by call; what they move
    findings = report.advice
    if not any(t.kernels_ns for t in times):
        return findings
    findings.insert(0, _breakdown(times))
    straggler = _straggler(times, profiles, sources, report)
    if straggler is not None:
        findings.insert(1, straggler)
    at = 2 if straggler is not None else 1
    jobs = [job if isinstance(job := p.metadata.get("job_id"), str) else None for p in profiles]
    findings[at:at] = step_findings(sources, [t.rank for t in times], jobs)  # where traces are beside
    return findings


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def _rounded(ns: int) -> float:
    return round(ns / 1e6, 3)


def _breakdown(times: list[RankTimes]) -> Advice:
    rows = []
    for t in times:
        row: dict[str, object] = {
            "path": f"rank {t.rank}",
            "compute_ms": _rounded(t.compute_ns),
            "communication_ms": _rounded(t.comm_ns),
        }
        if t.comm_union_ns and t.comm_overlapped_ns is not None:
            row["exposed_communication_ms"] = _rounded(t.comm_union_ns - t.comm_overlapped_ns)
            row["overlap"] = f"{t.comm_overlapped_ns / t.comm_union_ns:.0%}"
        if t.busy_ns is not None and t.window_ns:
            row["idle_ms"] = _rounded(t.window_ns - t.busy_ns)
            row["busy_share"] = f"{t.busy_ns / t.window_ns:.0%}"
        rows.append(row)
    comm = [t.comm_ns for t in times]
    title = (
        f"{len(times)} ranks: kernel time per rank split into compute and communication "
        f"(collective kernels: names holding nccl or rccl; they include the time spent waiting "
        f"for other ranks); communication {_ms(min(comm))} to {_ms(max(comm))}"
    )
    if any(t.comm_union_ns for t in times):
        title += (
            "; exposed communication: collectives running while no other kernel ran (overlap: "
            "the share of their time hidden behind compute)"
        )
    return Advice("ranks", title, rows)


def straggler_index(times: Sequence[RankTimes], report: CollectiveReport) -> int | None:
    """Which rank the others wait for (its index in ``times``), or None: the one the collectives'
    waits name, else the one computing :data:`MIN_SPREAD` more than the others' median on the GPU
    while some rank communicates (see the module)."""
    if len(times) < 2:
        return None
    if report.holds_up is not None:
        return report.holds_up
    gpu_slow = max(range(len(times)), key=lambda i: (times[i].compute_ns, -times[i].comm_ns))
    median = statistics.median(t.compute_ns for i, t in enumerate(times) if i != gpu_slow)
    computes_more = (
        any(t.comm_ns for t in times)
        and median > 0
        and times[gpu_slow].compute_ns >= (1 + MIN_SPREAD) * median
    )
    return gpu_slow if computes_more else None


def _straggler(
    times: list[RankTimes], profiles: Sequence[Profile], sources: Sequence[str], report: CollectiveReport
) -> Advice | None:
    """The rank the others wait for, with what it did instead (see the module): the rank the
    collectives' waits name, else the one computing :data:`MIN_SPREAD` more than the others' median
    on the GPU; where the ranks' traces are beside their files, its GPU and host per step too."""
    slow = straggler_index(times, report)
    if slow is None:
        return None
    s = times[slow]
    others = [t for t in times if t is not s]
    median = statistics.median(t.compute_ns for t in others)
    # the other rank nearest the median: the slow rank's tree and trace are compared with its own
    near = [i for i in range(len(times)) if i != slow]
    typical = min(near, key=lambda i: abs(times[i].compute_ns - median))
    t = times[typical]
    if median > 0 and s.compute_ns >= (1 + MIN_SPREAD) * median:
        waits = max(others, key=lambda o: o.comm_ns)
        path, extra = _where_it_differs(profiles[slow].root, profiles[typical].root)
        title = (
            f"rank {s.rank} is the straggler: its compute {_ms(s.compute_ns)} is "
            f"{s.compute_ns / median:.2f}x the other ranks' median {_ms(median)}, and they wait in "
            f"communication (rank {waits.rank}: {_ms(waits.comm_ns)} against rank {s.rank}'s "
            f"{_ms(s.comm_ns)}); most of the extra time is under {path} (+{_ms(extra)} against rank "
            f"{t.rank})"
        )
    else:
        title = (
            f"rank {s.rank} is the straggler: the others wait {_ms(report.others_waited_ns)} in all "
            f"for it at the collectives ([waits]), yet its GPU compute {_ms(s.compute_ns)} is not "
            f"{MIN_SPREAD:.0%} over the other ranks' median {_ms(median)}"
        )
    host = host_cause(profiles, sources, slow, typical, report)
    unseen = "the host's threads are not compared: no traces beside the files (deuteron run --trace)"
    title += f"; {host.sentence if host is not None else unseen}"
    slowest = sorted(times, key=lambda t: -t.compute_ns)[:8]
    evidence: list[dict[str, object]] = [
        {
            "path": f"rank {t.rank}",
            "compute_ms": _rounded(t.compute_ns),
            "communication_ms": _rounded(t.comm_ns),
        }
        for t in slowest
    ]
    if host is not None:
        evidence += host.rows
    return Advice("straggler", title, evidence)


def _compute(node: Node) -> int:
    """GPU time of the non-collective kernels under ``node``."""
    total = 0
    for n in node.walk():
        if n.type == KERNEL and not COMM_KERNEL.search(n.name):
            t = n.metrics.get(TIME, 0)
            total += int(t) if isinstance(t, (int, float)) else 0
    return total


def _where_it_differs(slow: Node, typical: Node) -> tuple[str, int]:
    """The deepest frame of the slow rank that holds more than :data:`HOLDS_MOST` of its extra
    compute over the typical rank (frames matched by name and type), and that extra time."""
    extra = _compute(slow) - _compute(typical)
    path: list[str] = []
    here, there = slow, typical
    while True:
        best: tuple[int, Node, Node | None] | None = None
        for key, child in here.children.items():
            other = there.children.get(key)
            diff = _compute(child) - (_compute(other) if other is not None else 0)
            if best is None or diff > best[0]:
                best = (diff, child, other)
        if best is None or extra <= 0 or best[0] <= HOLDS_MOST * extra:
            break
        _, here, other_child = best
        path.append(display_name(here.name))
        if other_child is None:
            break
        there = other_child
    return (" > ".join(path) if path else "ROOT"), extra
