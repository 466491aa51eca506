"""Joining kernel records to the contexts their launches were made in, in bulk.

A pure step between the shim's raw data and the profile tree: it knows correlation ids,
graph node ids and context ids, never tree nodes, so it can be tested on recorded buffers
without a GPU. Each batch of kernels comes out as groups, one per
(context, capture context, state, launch metadata, kernel name, device), with counts and
summed durations, plus the group of every kernel for traces.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from deuteron.collect.backends.cupti.records import (
    CTX_PAUSED,
    ENTRY_DTYPE,
    GRAPH_CLONE,
    GRAPH_LAUNCH,
    GRAPH_NODE,
    LAUNCH,
)

UNMATCHED = 2  # context id of kernels whose launch was never seen (launched before the start)
# A group's key, named as the shim's Entry names its fields: ctx is the launch's context id (with
# the flags of records.CTX_FLAGS), capture the captured context id, state the state id, op the place id.
KEY_COLUMNS = ("ctx", "capture", "state", "meta", "name_ptr", "device", "op")
MAX_AGE = 16  # drains a launch may wait for its kernel before it is taken for a captured one
# A framework's late placement (JAX: which executable and HLO op a kernel is): given the kernels,
# their launch context ids, launch times, launching threads and place ids, the new place ids.
Resolve = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class Batch:
    """The groups of one drain's kernels; ``keys`` has the columns of ``KEY_COLUMNS``."""

    keys: np.ndarray  # (groups, 7) uint64
    count: np.ndarray  # (groups,) int64
    time_ns: np.ndarray  # (groups,) int64
    group_of: np.ndarray  # (kernels,) index into the groups
    kernels: np.ndarray  # the kernel records themselves
    launch_ts: np.ndarray  # (kernels,) CUPTI time of the launch, 0 when unmatched
    launch_thread: np.ndarray  # (kernels,) shim thread index of the launch, -1 when unmatched

    def __len__(self) -> int:
        return len(self.kernels)


@dataclass
class Counters:
    """What the join could not place, by cause, over a session: written to the profile's metadata
    so a user can tell "launched before profiling started" from a lost record."""

    kernels: int = 0
    unmatched: int = 0  # no launch record: launched before profiling started
    paused: int = 0  # launched while the session was deactivated; left out on purpose
    graph_without_capture: int = 0  # graph kernels whose capture was not seen
    expired_launches: int = 0


@dataclass
class Join:
    """Kernel records matched to the launches that made them, by CUPTI correlation id.

    CUPTI delivers launches (API callbacks, recorded by the shim on the launching thread, with
    that thread's context) and kernel records (asynchronously, from the activity buffers) apart;
    a kernel's record may arrive drains after its launch. So launches wait in ``pending``, sorted by
    correlation id, and are aged out by ``expire``. A CUDA graph's kernels carry the graph node
    instead: the context where the node was captured (``graph_nodes``, through ``clones`` for
    instantiated copies) goes with them. Everything is done on whole NumPy arrays per drain: a
    drain may hold a million kernels, and a Python loop per kernel would cost seconds."""

    pending: np.ndarray = field(default_factory=lambda: np.empty(0, ENTRY_DTYPE))
    age: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    # node -> (context id, state id, meta, place id)
    graph_nodes: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    clones: dict[int, int] = field(default_factory=dict)  # instantiated node -> original node
    counters: Counters = field(default_factory=Counters)
    uncaptured_graphs: set[int] = field(default_factory=set)  # graphs replayed, captured unseen

    def add_entries(self, entries: np.ndarray) -> None:
        kinds = entries["kind"]
        for row in entries[kinds == GRAPH_NODE]:
            self.graph_nodes[int(row["key"])] = (
                int(row["ctx"]),
                int(row["state"]),
                int(row["meta"]),
                int(row["op"]),
            )
        for row in entries[kinds == GRAPH_CLONE]:
            self.clones[int(row["key"])] = int(row["ctx"])
        launches = entries[(kinds == LAUNCH) | (kinds == GRAPH_LAUNCH)]
        if len(launches):
            merged = np.concatenate([self.pending, launches])
            ages = np.concatenate([self.age, np.zeros(len(launches), np.int32)])
            order = np.argsort(merged["key"], kind="stable")
            self.pending, self.age = merged[order], ages[order]

    def _capture_of(self, node: int) -> tuple[int, int, int, int] | None:
        """Where the node was captured: follow clones back to the original node first.

        Instantiating a graph creates (and reports) its executable nodes where the capture
        ends; the kernel was captured where the original node was created.
        """
        for _ in range(8):  # a clone of a clone is possible
            if node not in self.clones:
                break
            node = self.clones[node]
        return self.graph_nodes.get(node)

    def match(self, kernels: np.ndarray, resolve: Resolve | None = None) -> Batch:
        """One drain's kernels, each given its launch's context, state, metadata and torch place,
        then grouped by all of these plus name and device (the session files one group at once).

        In order: a binary search of each kernel's correlation id in the pending launches; for
        kernels replayed from a graph, the context where their node was captured (a node captured
        while the session was paused marks the kernel paused, as Proton leaves such kernels out);
        matched launches leave ``pending`` except graph launches, whose kernels keep arriving; then
        ``resolve`` (a framework that places kernels from the records themselves: JAX) may fill the
        place column. One long function because every step reads and writes the same columns."""
        n = len(kernels)
        self.counters.kernels += n
        pend = self.pending
        context_ids = np.full(n, UNMATCHED, np.uint64)
        state_ids = np.zeros(n, np.uint64)
        meta = np.zeros(n, np.uint64)
        place_ids = np.zeros(n, np.uint64)
        capture = np.zeros(n, np.uint64)
        launch_ts = np.zeros(n, np.uint64)
        launch_thread = np.full(n, -1, np.int64)
        if len(pend) and n:
            corr = kernels["correlation"].astype(np.uint64)
            idx = np.minimum(np.searchsorted(pend["key"], corr), len(pend) - 1)
            hit = pend["key"][idx] == corr
            rows = pend[idx[hit]]
            context_ids[hit] = rows["ctx"]
            state_ids[hit] = rows["state"]
            meta[hit] = rows["meta"]
            place_ids[hit] = rows["op"]
            launch_ts[hit] = rows["ts"]
            launch_thread[hit] = rows["thread"]
            graph = np.zeros(n, bool)
            graph[hit] = rows["kind"] == GRAPH_LAUNCH
            graph &= kernels["graph_node"] != 0
            if graph.any():
                nodes = kernels["graph_node"][graph]
                uniq, inverse = np.unique(nodes, return_inverse=True)
                found = np.zeros(len(uniq), np.uint64)
                found_state = np.zeros(len(uniq), np.uint64)  # the state it was captured in
                found_meta = np.zeros(len(uniq), np.uint64)  # the captured launch's metadata id
                found_place = np.zeros(len(uniq), np.uint64)  # and its torch place
                captured_paused = np.zeros(len(uniq), bool)
                for i, node in enumerate(uniq.tolist()):
                    hit_capture = self._capture_of(node)
                    if hit_capture is None:
                        self.counters.graph_without_capture += int((inverse == i).sum())
                        graph_ids = kernels["graph_id"][graph][inverse == i]
                        self.uncaptured_graphs.update(int(g) for g in np.unique(graph_ids).tolist())
                    elif hit_capture[0] & CTX_PAUSED:  # captured while deactivated: left out, as Proton
                        captured_paused[i] = True
                    else:
                        found[i] = hit_capture[0]
                        found_state[i] = hit_capture[1]
                        found_meta[i] = hit_capture[2]
                        found_place[i] = hit_capture[3]
                capture[graph] = found[inverse]
                # a replayed kernel carries the state_ids and metadata its launch had when captured
                replay_state = found_state[inverse]
                state_ids[graph] = np.where(replay_state != 0, replay_state, state_ids[graph])
                replay_meta = found_meta[inverse]
                meta[graph] = np.where(replay_meta != 0, replay_meta, meta[graph])
                replay_place = found_place[inverse]
                place_ids[graph] = np.where(replay_place != 0, replay_place, place_ids[graph])
                where = np.flatnonzero(graph)
                context_ids[where[captured_paused[inverse]]] |= np.uint64(CTX_PAUSED)
            used = np.zeros(len(pend), bool)
            used[idx[hit]] = True
            self.age[used] = 0  # a graph launch stays while its kernels keep arriving
            keep = ~used | (pend["kind"] == GRAPH_LAUNCH)
            self.pending, self.age = pend[keep], self.age[keep]
        if resolve is not None and n:
            place_ids = resolve(kernels, context_ids, launch_ts, launch_thread, place_ids)
        paused = (context_ids & np.uint64(CTX_PAUSED)) != 0
        self.counters.unmatched += int((context_ids == UNMATCHED).sum())
        self.counters.paused += int(paused.sum())
        keys = np.stack(
            [
                context_ids,
                capture,
                state_ids,
                meta,
                kernels["name_ptr"].astype(np.uint64),
                kernels["device"].astype(np.uint64),
                place_ids,
            ],
            axis=1,
        )
        if n:
            groups, group_of = unique_rows(keys)
        else:
            groups, group_of = keys, np.zeros(0, np.int64)
        duration = (kernels["end"].astype(np.int64) - kernels["start"].astype(np.int64)).clip(min=0)
        count = np.bincount(group_of, minlength=len(groups)).astype(np.int64)
        time_ns = np.zeros(len(groups), np.int64)
        np.add.at(time_ns, group_of, duration)
        return Batch(groups, count, time_ns, group_of, kernels, launch_ts, launch_thread)

    def expire(self) -> None:
        """Age waiting launches; drop those too old to be waiting for a kernel.

        Launches made during a stream capture never get a kernel of their own, and a graph
        launch's kernels all arrive within a drain or two of each other.
        """
        self.age += 1
        old = self.age > MAX_AGE
        if old.any():
            self.counters.expired_launches += int(old.sum())
            self.pending, self.age = self.pending[~old], self.age[~old]


def unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_inverse=True)`` for a 2-D uint64 array, several times faster.

    NumPy sorts rows as opaque byte strings; here each column is ranked on its own (a 1-D sort;
    a column of one value is skipped) and the ranks are combined column by column, most
    significant first, into one integer code, re-ranked only when it could overflow: the rows
    come out in the same (lexicographic) order. Measured on this machine for 33,000 kernels with
    a real run's few distinct values per column: 37 ms for NumPy's, a few ms here."""
    n = len(keys)
    code = np.zeros(n, np.int64)
    top = 1  # an upper bound of code + 1
    for column in keys.T:
        if n == 0 or (column == column[0]).all():
            continue
        values, rank = np.unique(column, return_inverse=True)
        if top * len(values) >= 1 << 62:
            code = np.unique(code, return_inverse=True)[1].reshape(-1)
            top = int(code.max()) + 1
        code = code * len(values) + rank.reshape(-1)
        top *= len(values)
    _, first, group_of = np.unique(code, return_index=True, return_inverse=True)
    return keys[first], group_of.reshape(-1)
