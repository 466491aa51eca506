"""A sampled profile's extras for the web UI's profile view (``StallData`` and ``SamplingData`` in
``frontend/src/types.ts``): each frame's PC samples by stall reason, and what the file's metadata
says about the sampling itself.

**Stalls.** A sampled profile (``deuteron run --sample``, or Proton's PC-sampling file) has one
``stalled_<reason>`` metric per stall reason on its kernel and ``file:line@kernel`` frames (see
:mod:`deuteron.view.hot_lines`, which reads them the same way: Proton's ``stalled_not_Selected``
is ``stalled_not_selected``). Tree values are exclusive; the page shows inclusive ones, so each
frame's counts here are summed over its subtree, as its ``num_samples`` column is: a line holds
its inlined callees' samples too. Only frames with at least one stall sample are listed (the tree
of a sampled run is mostly frames without any), by their node id in the page's tree.

**Sampling.** What ``--sample`` writes in the metadata (``pc_sampling``, from
``deuteron.collect.backends.cupti.sampled_lines``): the interval, the samples taken and dropped,
and, per kernel with a line table, how its samples were placed on source lines; the share left
on ``<no source line>`` (unplaced) is summed here over those kernels. A value the file does not
hold is None: the page says "not recorded", never 0."""

from __future__ import annotations

import shlex
from typing import Any

from deuteron.explain.pc_lines import PLACEMENTS, UNPLACED
from deuteron.model.invariants import SAMPLING_META
from deuteron.model.tree import Node, Profile
from deuteron.view.hot_lines import NOT_ISSUED, SAMPLES, STALL_ADVICE, stall_word

STALL_PREFIX = "stalled_"


def _count(value: Any) -> int:
    """A metric value as a sample count (0 for anything that is not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value) if value == value else 0  # NaN counts nothing


class SubtreeStalls:
    """Each node's samples, samples not issued and samples per stall reason, summed over its
    subtree (the page's values are inclusive), computed once for the whole tree."""

    def __init__(self, profile: Profile) -> None:
        names = profile.metric_names()
        self.columns: dict[str, str] = {m: w for m in sorted(names) if (w := stall_word(m)) is not None}
        words = sorted(set(self.columns.values()))
        self.index = {w: k for k, w in enumerate(words)}
        self.words = words
        self.totals: dict[int, list[int]] = {}  # id(node) -> counts per word
        self.samples: dict[int, tuple[bool, int]] = {}  # id(node) -> (recorded below?, samples)
        self.not_issued: dict[int, tuple[bool, int]] = {}
        if self.columns:
            self._sum(profile.root)

    def _sum(self, root: Node) -> None:
        """Post-order sums, without recursion (a deep tree must not hit Python's limit)."""
        order: list[Node] = []
        stack = [root]
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(node.children.values())
        for node in reversed(order):  # children before their parent
            counts = [0] * len(self.words)
            for metric, word in self.columns.items():
                counts[self.index[word]] += _count(node.metrics.get(metric))
            has_s, s = SAMPLES in node.metrics, _count(node.metrics.get(SAMPLES))
            has_n, n = NOT_ISSUED in node.metrics, _count(node.metrics.get(NOT_ISSUED))
            for child in node.children.values():
                below = self.totals[id(child)]
                for k, v in enumerate(below):
                    counts[k] += v
                cs, cn = self.samples[id(child)], self.not_issued[id(child)]
                has_s, s = has_s or cs[0], s + cs[1]
                has_n, n = has_n or cn[0], n + cn[1]
            self.totals[id(node)] = counts
            self.samples[id(node)] = (has_s, s)
            self.not_issued[id(node)] = (has_n, n)


class StallRows:
    """The page's ``stalls`` document, filled node by node in the page's preorder."""

    def __init__(self, profile: Profile, enabled: bool = True) -> None:
        """``enabled`` False (a diff): no stalls, and nothing is summed."""
        self.sums = SubtreeStalls(profile if enabled else Profile())
        self.nodes: list[int] = []
        self.rows: list[list[int]] = []
        self.samples: list[int | None] = []
        self.not_issued: list[int | None] = []

    def add(self, page_id: int, node: Node | None) -> None:
        """Node ``page_id`` of the page is ``node`` of the profile (None: not one of its own)."""
        if node is None or not self.sums.words:
            return
        counts = self.sums.totals.get(id(node))
        if counts is None or not any(counts):
            return
        has_s, s = self.sums.samples[id(node)]
        has_n, n = self.sums.not_issued[id(node)]
        self.nodes.append(page_id)
        self.rows.append(counts)
        self.samples.append(s if has_s else None)
        self.not_issued.append(n if has_n else None)

    def document(self) -> dict[str, Any] | None:
        """The reasons, the run's most sampled first, each node's counts in that order; None when
        no frame has a stall sample (not a sampled profile)."""
        if not self.nodes:
            return None
        words = self.sums.words
        # The run's total of each reason: ROOT's (the first node, whose subtree is the whole tree).
        run = self.rows[0] if self.nodes[0] == 0 else [sum(col) for col in zip(*self.rows, strict=True)]
        order = sorted(range(len(words)), key=lambda k: (-run[k], words[k]))
        order = [k for k in order if run[k] > 0]
        reasons = [words[k] for k in order]
        return {
            "reasons": reasons,
            "nodes": self.nodes,
            "counts": [[row[k] for k in order] for row in self.rows],
            "samples": self.samples,
            "not_issued": self.not_issued,
            "meanings": {
                w: {"meaning": STALL_ADVICE[w][0], "change": STALL_ADVICE[w][1]}
                for w in reasons
                if w in STALL_ADVICE
            },
        }


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def sampling_data(profile: Profile, has_stalls: bool) -> dict[str, Any] | None:
    """What the metadata says about the sampling (None for a profile that is not sampled): every
    field present, None where the file does not record it."""
    meta = profile.metadata.get(SAMPLING_META)
    sampled = has_stalls or SAMPLES in profile.metric_names()
    if not isinstance(meta, dict):
        if not sampled:
            return None
        meta = {}
    listed = meta.get("kernels")
    kernels: dict[str, Any] = listed if isinstance(listed, dict) else {}
    placed_samples = 0
    unplaced = 0
    with_table = 0
    without: list[int] = []
    for entry in kernels.values():
        if not isinstance(entry, dict):
            continue
        placement = entry.get("placement")
        if isinstance(placement, dict) and all(_number(placement.get(p)) is not None for p in PLACEMENTS):
            with_table += 1
            placed_samples += sum(int(placement[p]) for p in PLACEMENTS)
            unplaced += int(placement[UNPLACED])
        elif "lines_missing" in entry:
            without.append(_count(entry.get("samples")))
    return {
        "recorded": bool(meta),
        "mode": meta.get("mode") if isinstance(meta.get("mode"), str) else None,
        "interval_cycles": _number(meta.get("interval_cycles")),
        "asked_interval": _number(meta.get("asked_interval")),
        "samples": _number(meta.get("samples")),
        "dropped_samples": _number(meta.get("dropped_samples")),
        "hardware_buffer_full": _number(meta.get("hardware_buffer_full")),
        "drains": _number(meta.get("drains")),
        # of the samples of kernels with a line table, those left on <no source line>
        "unplaced_samples": unplaced if with_table else None,
        "placed_kernel_samples": placed_samples if with_table else None,
        "kernels_with_lines": with_table if kernels else None,
        "kernels_without_lines": len(without) if kernels else None,
        "samples_without_lines": sum(without) if kernels else None,
        "error": meta.get("error") if isinstance(meta.get("error"), str) else None,
    }


def rerun_program(profile: Profile) -> str | None:
    """The program a profile was recorded from, as ``deuteron explain`` takes it (``examples/
    hot_line.py --n 3``, ``-m pkg.main``), read from the metadata's ``command``; None when the
    command names no script or module (a notebook's, a replay's)."""
    command = profile.metadata.get("command")
    if not isinstance(command, str) or not command.strip():
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for k, word in enumerate(words):
        if word == "-m" and k + 1 < len(words):
            return shlex.join(words[k:])
        if word.endswith(".py") and not word.startswith("-"):
            return shlex.join(words[k:])
    return None
