"""The JAX context source (``-c jax``): each GPU kernel under its jitted function, its
``jax.named_scope`` path, a ``backward`` frame for gradient work, the JAX primitive and the HLO op
that launched it.

How: JAX compiles every jitted function (and every eagerly run op) through
``jax._src.compiler.compile_or_get_cached``; wrapping it gives each executable's optimized HLO
(``hlo.py`` reads it) and the interval it compiled in. XLA:GPU names kernels after their HLO
instructions, so a kernel's name finds its instruction, and the instruction's ``op_name`` gives
the path. The same fusion name (``loop_add_fusion``) can be in several executables, so a kernel is
resolved together with the kernels launched beside it:

- kernels replayed from one CUDA graph (XLA's command buffers, on by default) belong to one
  executable: the one holding all their names;
- kernels launched directly (one stream per thread and launch context) are cut into whole
  executions at the least cost (``_segment``), so ``x * 2`` run eagerly goes to ``jit_multiply``,
  not to a big step that also has a ``loop_multiply_fusion``;
- kernels launched while an executable compiled are XLA's autotuning: ``f (jit) > compile``.

A kernel no executable names (a cuDNN or cuBLAS kernel) goes under the custom call it belongs to
(``Executable.align``); launched outside a command buffer, it continues the schedule of the graph
launched before it on its thread. What cannot be placed stays where it was launched.
This is the only module that imports JAX.
"""

from __future__ import annotations

import bisect
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from deuteron.collect.context import LaunchPlace
from deuteron.collect.context.jax.hlo import COMPILE, Executable, frames, parse_module
from deuteron.collect.placement import LaunchContexts
from deuteron.model.errors import DeuteronError
from deuteron.model.tree import Node
from deuteron.process.patches import AttributePatch, after_import

JAX_PLACE = 1 << 40  # flags a launch's op column as a JAX place (torch's places are below 2**32)
COMPILER = "jax._src.compiler"
INCOMPLETE = 3.0  # the cost of an execution that leaves its whole schedule out (one execution costs 1)


class JaxContextError(DeuteronError, RuntimeError):
    """``-c jax`` cannot work here (JAX missing, or its compiler entry point moved)."""


class _Compiled:
    """One executable: its HLO text until parsed, its compile interval (session clock, ns)."""

    __slots__ = ("module", "text", "began", "ended", "parsed")

    def __init__(self, module: str, text: str | None, began: int, ended: int) -> None:
        self.module, self.text, self.began, self.ended = module, text, began, ended
        self.parsed: Executable | None = None

    def executable(self) -> Executable:
        if self.parsed is None:
            self.parsed = parse_module(self.text) if self.text else Executable(self.module)
            self.text = None
        return self.parsed


class JaxContext:
    """The JAX context source of one session."""

    name = "jax"

    def __init__(self, contexts: LaunchContexts) -> None:
        self.contexts = contexts
        self.compiled: list[_Compiled] = []
        self._lock = threading.Lock()
        self._patch: AttributePatch | None = None
        self._waiting: Callable[[], None] | None = None
        self._containing: dict[str, tuple[int, ...]] = {}
        self._parsed_upto = 0
        self._graph_exec: dict[int, int] = {}
        self.places: list[tuple[int, str]] = [(0, "")]  # place id -> (parent id, frame)
        self._place_ids: dict[tuple[int, str], int] = {}
        self._node_cache: dict[tuple[int, int], Node] = {}
        self._kernel_places: dict[tuple[int, int | None], int] = {}
        self._launches: dict[tuple[int, tuple[str, ...]], tuple[tuple[np.ndarray, int], int]] = {}
        self.resolved = 0
        self.unresolved = 0

    # --- the compile hook ------------------------------------------------------------------------

    def start(self) -> None:
        if COMPILER in sys.modules:
            self._install()
        elif "jax" in sys.modules:
            raise JaxContextError(f"-c jax: this JAX has no {COMPILER} (JAX 0.4.30 or newer is needed)")
        else:  # hooked when the program imports JAX
            self._waiting = after_import(COMPILER, self._install)

    def stop(self) -> None:
        if self._waiting is not None:
            self._waiting()
            self._waiting = None
        if self._patch is not None:
            self._patch.restore()
            self._patch = None

    def _install(self) -> None:
        self._waiting = None
        compiler = sys.modules.get(COMPILER)
        original = getattr(compiler, "compile_or_get_cached", None)
        if compiler is None or original is None:
            raise JaxContextError(f"-c jax: {COMPILER}.compile_or_get_cached is missing in this JAX version")

        def compile_or_get_cached(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter_ns()
            executable = original(*args, **kwargs)
            self.add_executable(executable, began, time.perf_counter_ns(), _module_name(args, kwargs))
            return executable

        compile_or_get_cached.__wrapped__ = original  # type: ignore[attr-defined]
        self._patch = AttributePatch(compiler, "compile_or_get_cached", compile_or_get_cached)
        self._patch.apply()

    def add_executable(self, executable: Any, began: int, ended: int, module: str = "?") -> None:
        """Keep an executable's optimized HLO (parsed later, off the program's thread)."""
        texts: list[tuple[str, str | None]] = []
        try:
            for hlo_module in executable.hlo_modules():
                texts.append((str(hlo_module.name), hlo_module.to_string()))
        except Exception:  # an executable without HLO (a backend that keeps none): its interval still counts
            texts = [(module, None)]
        with self._lock:
            for name, text in texts or [(module, None)]:
                self.compiled.append(_Compiled(name, text, began, ended))

    # --- recorded tables (fixtures) --------------------------------------------------------------

    def table(self) -> dict[str, Any]:
        with self._lock:
            compiled = list(self.compiled)
        return {
            "executables": [{**c.executable().table(), "began": c.began, "ended": c.ended} for c in compiled]
        }

    def replay(self, table: dict[str, Any]) -> None:
        with self._lock:
            self.compiled = []
            for row in table["executables"]:
                c = _Compiled(str(row["module"]), None, int(row["began"]), int(row["ended"]))
                c.parsed = Executable.from_table(row)
                self.compiled.append(c)
            self._containing.clear()
            self._parsed_upto = 0
            self._graph_exec.clear()
            self._kernel_places.clear()
            self._launches.clear()

    # --- resolving kernels to places --------------------------------------------------------------

    def _index(self) -> list[Executable]:
        with self._lock:
            compiled = list(self.compiled)
        executables = [c.executable() for c in compiled]
        for i in range(self._parsed_upto, len(executables)):
            for kernel in executables[i].by_kernel:
                self._containing[kernel] = (*self._containing.get(kernel, ()), i)
        self._parsed_upto = len(executables)
        return executables

    def _place_id(self, parent: int, frame: str) -> int:
        key = (parent, frame)
        pid = self._place_ids.get(key)
        if pid is None:
            pid = self._place_ids[key] = len(self.places)
            self.places.append(key)
        return pid

    def _path_id(self, path: list[str]) -> int:
        pid = 0
        for frame in path:
            pid = self._place_id(pid, frame)
        return pid

    def _kernel_place(self, ex: Executable, index: int | None) -> int:
        key = (id(ex), index)
        place = self._kernel_places.get(key)
        if place is None:
            place = self._kernel_places[key] = self._make_kernel_place(ex, index)
        return place

    def _make_kernel_place(self, ex: Executable, index: int | None) -> int:
        function = ex.function
        if index is None:
            return JAX_PLACE | self._path_id([f"{function} (jit)"])
        ins = ex.instructions[index]
        return JAX_PLACE | self._path_id(
            [f"{function} (jit)", *frames(ins.op_name, function), f"{ins.name} (HLO)"]
        )

    @staticmethod
    def _best(names: set[str], candidates: set[int] | list[int], executables: list[Executable]) -> int:
        """The candidate holding most of the run's kernel names, then the one the run covers best
        (a small executable the run is all of beats a big one it is a sliver of), then the latest."""

        def score(i: int) -> tuple[int, float, int]:
            held = len(names & executables[i].by_kernel.keys())
            return held, held / max(len(executables[i].by_kernel), 1), i

        return max(candidates, key=score)

    def assign(
        self,
        names: list[str],
        graph: np.ndarray,
        correlation: np.ndarray,
        start: np.ndarray,
        launch_ns: np.ndarray,
        thread: np.ndarray,
        ctx: np.ndarray,
    ) -> np.ndarray:
        """Each kernel's JAX place id, flagged with ``JAX_PLACE`` (0: none), given its name, CUDA
        graph id (0: launched directly), correlation id (a graph launch's, for its kernels), start
        time, launch time on the session's clock (0: launch not seen), launching thread and launch
        context."""
        n = len(names)
        places = np.zeros(n, np.uint64)
        executables = self._index()
        if not executables or not n:
            return places
        seen = launch_ns > 0
        done = ~seen
        with self._lock:
            intervals = [(c.began, c.ended, i) for i, c in enumerate(self.compiled)]
        for began, ended, i in intervals:  # autotuning: launched while an executable compiled
            inside = (launch_ns >= began) & (launch_ns <= ended) & ~done
            if inside.any():
                places[inside] = JAX_PLACE | self._path_id([f"{executables[i].function} (jit)", COMPILE])
                done |= inside
        in_graph = ~done & (graph != 0)
        ends: list[tuple[int, int, int, int]] = []  # each graph launch: (thread, time, executable, end)
        if in_graph.any():
            rows = np.flatnonzero(in_graph)
            times = (thread, launch_ns)
            ends = self._graphs(rows, names, graph, correlation, start, times, executables, places)
            done |= in_graph
        rest = np.flatnonzero(~done)
        if len(rest):
            order = rest[np.lexsort((correlation[rest], launch_ns[rest], thread[rest]))]
            self._runs(order.tolist(), names, thread, ctx, executables, places)
            if ends:
                left = [r for r in order.tolist() if not places[r]]
                self._after_graphs(left, names, thread, launch_ns, ends, executables, places)
        found = int((places != 0).sum())
        self.resolved += found
        self.unresolved += n - found
        return places

    def _after_graphs(
        self,
        rows: list[int],
        names: list[str],
        thread: np.ndarray,
        launch_ns: np.ndarray,
        ends: list[tuple[int, int, int, int]],
        executables: list[Executable],
        places: np.ndarray,
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
            places[r] = self._kernel_place(ex, index)

    def _graphs(
        self,
        rows: np.ndarray,
        names: list[str],
        graph: np.ndarray,
        correlation: np.ndarray,
        start: np.ndarray,
        launches: tuple[np.ndarray, np.ndarray],
        executables: list[Executable],
        places: np.ndarray,
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
            places[launch] = found
            first = int(launch[0])
            ends.append((int(thread[first]), int(launch_ns[first]), ex_index, at))
        return ends

    def _align_launch(self, ex: Executable, seq: tuple[str, ...]) -> tuple[np.ndarray, int]:
        """One graph launch's kernels (in start order) to places; and where its schedule ended."""
        out = np.zeros(len(seq), np.uint64)
        at = 0
        for k, name in enumerate(seq):
            step = ex.align(at, name)
            if step is None:  # out of schedule order: the name's own instruction
                ins = ex.by_kernel.get(name)
                out[k] = self._kernel_place(ex, ex.instructions.index(ins) if ins else None)
                continue
            at, index = step
            out[k] = self._kernel_place(ex, index)
        return out, at

    def _runs(
        self,
        order: list[int],
        names: list[str],
        thread: np.ndarray,
        ctx: np.ndarray,
        executables: list[Executable],
        places: np.ndarray,
    ) -> None:
        """Kernels launched directly, in launch order, one stream per (thread, launch context)."""
        stream: list[int] = []
        key: tuple[int, int] | None = None
        for r in order:
            here = (int(thread[r]), int(ctx[r]))
            if here != key and stream:
                self._segment(stream, names, executables, places)
                stream = []
            key = here
            stream.append(r)
        if stream:
            self._segment(stream, names, executables, places)

    def _segment(
        self,
        stream: list[int],
        names: list[str],
        executables: list[Executable],
        places: np.ndarray,
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
                    places[r] = self._kernel_place(ex, where)
            elif names[stream[i]] in self._containing:
                left.append(stream[i])
            j = i
        if left and openers_only:
            self._segment(left[::-1], names, executables, places, openers_only=False)

    # --- places into tree nodes -------------------------------------------------------------------

    def owns(self, op: int) -> bool:
        return op >= JAX_PLACE

    def launch_place(self, op: int, context: int) -> LaunchPlace:
        """function > scopes > primitive > HLO op, below the launch's context: placed when the
        kernel's record arrived, from the executable's schedule, so no thread or capture frame."""
        return LaunchPlace(self.place(op, self.contexts.node(context)), any_thread=True, outside_capture=True)

    def place(self, pid: int, base: Node) -> Node:
        """The node of place ``pid`` (flagged or not) below ``base`` (the launch's own context)."""
        pid &= JAX_PLACE - 1
        key = (pid, id(base))
        node = self._node_cache.get(key)
        if node is None:
            chain: list[str] = []
            p = pid
            while p:
                parent, frame = self.places[p]
                chain.append(frame)
                p = parent
            node = base
            for frame in reversed(chain):
                node = node.child(frame)
            self._node_cache[key] = node
        return node



def _module_name(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    computation = kwargs.get("computation", args[1] if len(args) > 1 else None)
    try:
        return str(computation.operation.attributes["sym_name"]).strip('"')  # type: ignore[union-attr]
    except Exception:
        return "?"
