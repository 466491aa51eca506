"""Matching kernels to the schedules of the executables JAX compiled: which executable, and which
HLO instruction of it, each kernel of a drain ran for.

The same fusion name (``loop_add_fusion``) can be in several executables, so a kernel is resolved
together with the kernels launched beside it:

- kernels replayed from one CUDA graph (XLA's command buffers, on by default) belong to one
  executable: the one holding all their names;
- kernels launched directly (one stream per thread and launch context) are cut into whole
  executions at the least cost (``_segment``), so ``x * 2`` run eagerly goes to ``jit_multiply``,
  not to a big step that also has a ``loop_multiply_fusion``;
- kernels launched while an executable compiled are XLA's autotuning: ``f (jit) > compile``.

A kernel no executable names (a cuDNN or cuBLAS kernel) goes under the custom call it belongs to
(``Executable.align``); launched outside a command buffer, it continues the schedule of the graph
launched before it on its thread. What cannot be placed stays where it was launched.

Apart from the context source because it is the one algorithm of ``-c jax`` and needs neither JAX
nor a session: executables and kernel columns in, place ids out.
"""

from __future__ import annotations

import bisect

import numpy as np

from deuteron.collect.context.jax.compile_wrapper import CompiledModule
from deuteron.collect.context.jax.hlo import COMPILE, Executable
from deuteron.collect.context.jax.places import JAX_PLACE, PlaceTree

INCOMPLETE = 3.0  # the cost of an execution that leaves its whole schedule out (one execution costs 1)


class ScheduleMatcher:
    """Kernels to place ids along the executables' schedules (see the module's text), remembering
    what it learned: which executables hold each kernel name, each CUDA graph's executable, and
    each graph launch's places (a graph replays the same kernels each launch)."""

    def __init__(self, tree: PlaceTree) -> None:
        self.tree = tree
        self._containing: dict[str, tuple[int, ...]] = {}
        self._parsed_upto = 0
        self._graph_exec: dict[int, int] = {}
        self._launches: dict[tuple[int, tuple[str, ...]], tuple[tuple[np.ndarray, int], int]] = {}

    def forget(self) -> None:
        """The executables were replaced (a replayed table): learn them anew."""
        self._containing.clear()
        self._parsed_upto = 0
        self._graph_exec.clear()
        self._launches.clear()

    def _index(self, compiled: list[CompiledModule]) -> list[Executable]:
        executables = [c.executable() for c in compiled]
        for i in range(self._parsed_upto, len(executables)):
            for kernel in executables[i].by_kernel:
                self._containing[kernel] = (*self._containing.get(kernel, ()), i)
        self._parsed_upto = len(executables)
        return executables

    @staticmethod
    def _best(names: set[str], candidates: set[int] | list[int], executables: list[Executable]) -> int:
        """The candidate holding most of the run's kernel names, then the one the run covers best
        (a small executable the run is all of beats a big one it is a sliver of), then the latest."""

        def score(i: int) -> tuple[int, float, int]:
            held = len(names & executables[i].by_kernel.keys())
            return held, held / max(len(executables[i].by_kernel), 1), i

        return max(candidates, key=score)

    def assign(
        self, compiled: list[CompiledModule], names: list[str], columns: tuple[np.ndarray, ...]
    ) -> np.ndarray:
        """Each kernel's JAX place id, flagged with ``JAX_PLACE`` (0: none), given the executables
        compiled so far, each kernel's name, and ``columns``: its CUDA graph id (0: launched
        directly), correlation id (a graph launch's, for its kernels), start time, launch time on
        the session's clock (0: launch not seen), launching thread and launch context id."""
        graph, correlation, start, launch_ns, thread, context_ids = columns
        n = len(names)
        place_ids = np.zeros(n, np.uint64)
        executables = self._index(compiled)
        if not executables or not n:
            return place_ids
        seen = launch_ns > 0
        done = ~seen
        intervals = [(c.began, c.ended, i) for i, c in enumerate(compiled)]
        for began, ended, i in intervals:  # autotuning: launched while an executable compiled
            inside = (launch_ns >= began) & (launch_ns <= ended) & ~done
            if inside.any():
                place_ids[inside] = JAX_PLACE | self.tree.path_id(
                    [f"{executables[i].function} (jit)", COMPILE]
                )
                done |= inside
        in_graph = ~done & (graph != 0)
        ends: list[tuple[int, int, int, int]] = []  # each graph launch: (thread, time, executable, end)
        if in_graph.any():
            rows = np.flatnonzero(in_graph)
            times = (thread, launch_ns)
            ends = self._graphs(rows, names, graph, correlation, start, times, executables, place_ids)
            done |= in_graph
        rest = np.flatnonzero(~done)
        if len(rest):
            order = rest[np.lexsort((correlation[rest], launch_ns[rest], thread[rest]))]
            self._runs(order.tolist(), names, thread, context_ids, executables, place_ids)
            if ends:
                left = [r for r in order.tolist() if not place_ids[r]]
                self._after_graphs(left, names, thread, launch_ns, ends, executables, place_ids)
        return place_ids

    def _after_graphs(
        self,
        rows: list[int],
        names: list[str],
        thread: np.ndarray,
        launch_ns: np.ndarray,
        ends: list[tuple[int, int, int, int]],
        executables: list[Executable],
        place_ids: np.ndarray,
    ) -> None:
        """Directly launched kernels no execution took (cuDNN or cuBLAS work XLA keeps out of its
        command buffers): they continue the schedule of the last graph launched before them on
        their thread."""
        by_thread: dict[int, list[tuple[int, int, int, int]]] = {}
        for launch in sorted(ends, key=lambda e: e[1]):
            by_thread.setdefault(launch[0], []).append(launch)
        cursor: dict[tuple[int, int], int] = {}
        for r in rows:
            launches = by_thread.get(int(thread[r]))
            if not launches:
                continue
            times = [e[1] for e in launches]
            k = bisect.bisect_right(times, int(launch_ns[r])) - 1
            if k < 0:
                continue
            _, when, ex_index, last = launches[k]
            ex = executables[ex_index]
            at = cursor.get((when, ex_index), last)
            step = ex.align(at, names[r])
            if step is None:  # not the graph's executable's either: left where it was launched
                continue
            cursor[(when, ex_index)], index = step
            place_ids[r] = self.tree.kernel_place(ex, index)

    def _graphs(
        self,
        rows: np.ndarray,
        names: list[str],
        graph: np.ndarray,
        correlation: np.ndarray,
        start: np.ndarray,
        launches: tuple[np.ndarray, np.ndarray],
        executables: list[Executable],
        place_ids: np.ndarray,
    ) -> list[tuple[int, int, int, int]]:
        """Kernels replayed from CUDA graphs: one executable per graph; each launch of the graph
        is one execution, matched to the schedule in start order. Returns each launch's (thread,
        launch time, executable, index after its last kernel)."""
        thread, launch_ns = launches
        ends: list[tuple[int, int, int, int]] = []
        order = rows[np.lexsort((start[rows], correlation[rows], graph[rows]))]
        g_of, c_of = graph[order], correlation[order]
        cuts = np.flatnonzero((g_of[1:] != g_of[:-1]) | (c_of[1:] != c_of[:-1])) + 1
        for launch in np.split(order, cuts):
            g = int(graph[launch[0]])
            seq = tuple(names[r] for r in launch.tolist())
            hit = self._launches.get((g, seq))  # a graph replays the same kernels each launch
            if hit is None:
                ex_index = self._graph_exec.get(g)
                if ex_index is None:
                    kernels = set(seq)
                    cands = {i for k in kernels for i in self._containing.get(k, ())}
                    if not cands:
                        continue
                    ex_index = self._graph_exec[g] = self._best(kernels, cands, executables)
                hit = self._launches[(g, seq)] = (self._align_launch(executables[ex_index], seq), ex_index)
            (found, at), ex_index = hit[0], hit[1]
            place_ids[launch] = found
            first = int(launch[0])
            ends.append((int(thread[first]), int(launch_ns[first]), ex_index, at))
        return ends

    def _align_launch(self, ex: Executable, seq: tuple[str, ...]) -> tuple[np.ndarray, int]:
        """One graph launch's kernels (in start order) to place ids; and where its schedule ended."""
        out = np.zeros(len(seq), np.uint64)
        at = 0
        for k, name in enumerate(seq):
            step = ex.align(at, name)
            if step is None:  # out of schedule order: the name's own instruction
                ins = ex.by_kernel.get(name)
                out[k] = self.tree.kernel_place(ex, ex.instructions.index(ins) if ins else None)
                continue
            at, index = step
            out[k] = self.tree.kernel_place(ex, index)
        return out, at

    def _runs(
        self,
        order: list[int],
        names: list[str],
        thread: np.ndarray,
        context_ids: np.ndarray,
        executables: list[Executable],
        place_ids: np.ndarray,
    ) -> None:
        """Kernels launched directly, in launch order, one stream per (thread, launch context)."""
        stream: list[int] = []
        key: tuple[int, int] | None = None
        for r in order:
            here = (int(thread[r]), int(context_ids[r]))
            if here != key and stream:
                self._segment(stream, names, executables, place_ids)
                stream = []
            key = here
            stream.append(r)
        if stream:
            self._segment(stream, names, executables, place_ids)

    def _segment(
        self,
        stream: list[int],
        names: list[str],
        executables: list[Executable],
        place_ids: np.ndarray,
        openers_only: bool = True,
    ) -> None:
        """Cut a stream of kernels into executions, each following one executable's schedule, at the
        least cost: one per execution plus ``INCOMPLETE`` times the share of its executable's
        schedule it leaves out. Executions run whole, so ``x * 2`` then ``jnp.sum`` run eagerly are
        ``jit_multiply`` and ``jit__reduce_sum``, not a sliver of a big step that has kernels of
        those names too.

        An execution starts with one of its schedule's first kernels (``openers_only``: this keeps
        the search linear); the kernels that leaves out are cut again without that rule."""
        m = len(stream)
        best = [float("inf")] * (m + 1)
        best[0] = 0.0
        # how the best cut to each point ends: (its last execution's start, executable, the
        # instructions its kernels came from; a list shared by every end of one extension)
        back: list[tuple[int, int | None, list[int | None]] | None] = [None] * (m + 1)
        for i in range(m):
            if best[i] == float("inf"):
                continue
            if best[i] + 1.0 < best[i + 1]:  # the kernel outside any execution
                best[i + 1], back[i + 1] = best[i] + 1.0, (i, None, [])
            holders = self._containing.get(names[stream[i]])
            if holders is None:  # a kernel no executable names
                continue
            opener = names[stream[i]]
            for e in holders:
                ex = executables[e]
                if openers_only and i and opener not in ex.openers:
                    continue  # executions start at their schedule's start (the stream's first may be cut)
                size = max(len(ex.instructions), 1)
                step = ex.align(0, opener)
                if step is None:
                    continue
                at, index = step
                taken: list[int | None] = [index]
                j = i + 1
                while True:
                    seen = min(len(taken) / size, 1.0)  # the share of the schedule this execution ran
                    cost = best[i] + 1.0 + INCOMPLETE * (1.0 - seen) - e * 1e-9
                    if cost < best[j]:
                        best[j], back[j] = cost, (i, e, taken)
                    if j == m:
                        break
                    name = names[stream[j]]
                    if name in self._containing and name not in ex.by_kernel:
                        break
                    step = ex.align(at, name)
                    if step is None:
                        break
                    at, index = step
                    taken.append(index)
                    j += 1
        left: list[int] = []
        j = m
        while j > 0:
            link = back[j]
            if link is None:
                break
            i, which, chosen = link
            if which is not None:
                ex = executables[which]
                for r, where in zip(stream[i:j], chosen[: j - i], strict=True):
                    place_ids[r] = self.tree.kernel_place(ex, where)
            elif names[stream[i]] in self._containing:
                left.append(stream[i])
            j = i
        if left and openers_only:
            self._segment(left[::-1], names, executables, place_ids, openers_only=False)
