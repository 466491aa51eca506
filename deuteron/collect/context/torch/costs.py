"""What modules, ops and backward nodes cost on the CPU under ``-c torch``: ``cpu_time (ns)``,
``calls`` and ``flops`` from the op probe's running totals, filed into the profile as the
difference since the last filing.

Apart from the context source because it is the one place that reads the totals and knows which
of them are whole: a ``backward`` frame sums the autograd nodes below it, and what inference or
reading nodes at launches left untimed gets no ``cpu_time``.
"""

from __future__ import annotations

import ctypes

import numpy as np

from deuteron.collect.context.torch.library import read_nodes
from deuteron.collect.context.torch.trie import BACKWARD, BASE, MARK, OP, Placer, PlaceTrie
from deuteron.model.metrics import CALLS, CPU_TIME, EXC, FLOPS
from deuteron.model.tree import Profile


def cover_backward(ns: np.ndarray, parent: np.ndarray, kind: np.ndarray, untimed: np.ndarray) -> None:
    """Every frame's time covers its children, as every view reads it (docs/viewing.md, "One rule
    for every number"), made so in the totals filed:

    - a module call's time covers the ``backward`` filed under it: what each mark covers is added
      to every frame above it (the module, the modules around it, an op or scope that called them),
      whose own spans timed the forward only. So a module's ``cpu_time`` is its forward and its
      backward, and the ``backward`` child shows the backward part;
    - a frame covers its children where they add up to more than its own span: autograd runs the
      engine's work for a node (the bias gradient's ``aten::sum``) after the node's span ended, and
      it is filed under the node; on a GPU run the backward nodes are read at launches and left
      untimed (``untimed``) while the ops they ran are timed.

    Trie ids grow from parent to child, so one pass from the last id up has every node's children
    done before the node itself. Bases (contexts, not timed frames) keep their own."""
    count = len(ns)
    if count < 2:
        return
    timed = np.where(untimed, 0, ns).tolist()
    parents = parent.tolist()
    kinds = kind.tolist()
    below = [0] * count  # the children's covered times
    marked = [0] * count  # the marks' covered times under a node (its backward, outside its span)
    for node in range(count - 1, 0, -1):
        value = max(timed[node] + marked[node], below[node])
        up = parents[node]
        below[up] += value
        if kinds[node] == MARK:
            marked[up] += value
        elif kinds[node] != BASE:
            marked[up] += marked[node]
        if kinds[node] != BASE:
            ns[node] = value


class CostFiling:
    """The totals filed so far (per place id), so that each filing adds only what is new."""

    def __init__(self) -> None:
        self.filed: dict[str, np.ndarray] = {}

    def file(
        self,
        profile: Profile,
        lib: ctypes.CDLL,
        trie: PlaceTrie,
        placer: Placer,
        ops_untimed: bool,
        nodes_untimed: bool,
    ) -> None:
        """Add the costs since the last filing to ``profile``, each under its place's node.

        ``ops_untimed``: ops were left unobserved for a while (inferred), so their own time is
        partial and left out; ``nodes_untimed``: backward nodes were read at launches and timed by
        nothing. The trie learns the nodes it did not have yet on the way."""
        count = int(lib.deut_node_count())
        parent, name, kind, ns, calls, flops = read_nodes(lib, 0, count)
        if count > len(trie):
            trie.extend(parent[len(trie) :], name[len(trie) :], kind[len(trie) :])
        marks = kind == MARK
        backward = (kind == BACKWARD) & marks[parent]
        ns = ns.astype(np.int64)
        np.add.at(ns, parent[backward].astype(np.int64), ns[backward])  # a mark: its nodes' sum
        untimed = np.zeros(count, bool)
        if ops_untimed:
            untimed |= kind == OP
        if nodes_untimed:
            untimed |= (kind == BACKWARD) | marks
        cover_backward(ns, parent, kind, untimed)
        totals = {"ns": ns, "calls": calls.astype(np.int64), "flops": flops.astype(np.int64)}
        deltas = {}
        for key, value in totals.items():
            before = self.filed.get(key)
            if before is not None:
                value = value.copy()
                value[: len(before)] -= before
            deltas[key] = value
        self.filed = totals
        profile.kinds[CALLS] = EXC
        root = profile.root
        for place_id in np.flatnonzero(
            (deltas["ns"] > 0) | (deltas["calls"] > 0) | (deltas["flops"] > 0)
        ).tolist():
            if kind[place_id] == BASE:
                continue
            metrics: dict[str, int] = {}
            if not untimed[place_id]:
                metrics[CPU_TIME] = int(deltas["ns"][place_id])
            if deltas["calls"][place_id]:
                metrics[CALLS] = int(deltas["calls"][place_id])
            if deltas["flops"][place_id]:
                metrics[FLOPS] = int(deltas["flops"][place_id])
            if metrics:  # an op timed while observed but never launching: no frame of its own
                profile.add_metrics(placer.place(place_id, root)[0], metrics)
