"""``pl.scope``s of an interpreted launch, per program: when each scope instance ran and what it
counted while it was open.

In Triton's interpreter a kernel is plain Python run once per program, so a scope's edges arrive
as calls (:func:`deuteron.triton.language.set_interpreter_recorder`) from the thread running the
launch. :class:`ScopeRecorder` is that recorder for one launch: at each edge it reads the clock
(``time.perf_counter_ns``, the session's clock) and snapshots the launch's running
:class:`~.profiling.Counter`, so a scope's bytes and flops are the differences between its two
snapshots. Nothing is added to loads, stores or dots: a kernel without scopes costs one object per
launch. :meth:`ScopeRecorder.finish` turns the instances into :class:`ScopeInstances`, arrays a
backend aggregates.

Edges that do not pair are counted, never raised: an exit with no open scope of its name in its
program, an enter never exited by the launch's end, and the scopes still open inside a scope
when it exits (a scope's parent is the innermost scope open at its start, so a scope that outlives
its parent cannot nest; it is dropped, and its own exit later counts as unmatched too).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_NONE = np.zeros(0, np.int64)


@dataclass
class ScopeInstances:
    """The scope instances of one launch that completed, one entry per instance, in the order they
    started (so an instance's parent always comes before it).

    ``program`` is the linear program id (``x + nx * (y + ny * z)``), ``name`` indexes ``names``,
    ``parent`` is the index of the enclosing instance (-1: the kernel's top). ``loaded``,
    ``stored`` and ``flops`` (by operand width) are what the launch counted while the instance was
    open, its nested scopes included; :meth:`own` takes those out."""

    names: list[str]
    program: np.ndarray
    name: np.ndarray
    parent: np.ndarray
    start: np.ndarray
    end: np.ndarray
    loaded: np.ndarray
    stored: np.ndarray
    flops: dict[int, np.ndarray] = field(default_factory=dict)
    unmatched_enters: int = 0  # enters never exited (by the launch's end, or before their parent's exit)
    unmatched_exits: int = 0  # exits with no open scope of that name in their program

    def __len__(self) -> int:
        return len(self.start)

    def own(self, values: np.ndarray) -> np.ndarray:
        """``values`` per instance (inclusive of nested scopes) less those of its direct children."""
        out = np.array(values, np.int64, copy=True)
        nested = self.parent >= 0
        np.subtract.at(out, self.parent[nested], np.asarray(values, np.int64)[nested])
        return out

    def paths(self) -> list[tuple[str, ...]]:
        """Each instance's scope names, outermost first."""
        names, parents = self.names, self.parent.tolist()
        out: list[tuple[str, ...]] = []
        for i, n in enumerate(self.name.tolist()):
            p = parents[i]
            out.append((*out[p], names[n]) if p >= 0 else (names[n],))
        return out


class ScopeRecorder:
    """Hears the scope edges of one launch's programs (see the module); one per counted launch.

    Instances are kept in plain lists, in the order they started; ``end`` stays -1 until exited.
    ``open`` holds, per program, the instances still open, innermost last."""

    __slots__ = (
        "counter", "builder", "thread", "open", "names", "name_ids",
        "program", "name", "parent", "start", "end",
        "loaded", "stored", "flops", "unmatched_enters", "unmatched_exits",
    )  # fmt: skip

    def __init__(self, counter: Any, builder: Any) -> None:
        self.counter = counter  # the launch's profiling.Counter
        self.builder = builder  # the interpreter's builder, which knows the program running
        self.thread = threading.get_ident()
        self.open: dict[int, list[int]] = {}
        self.names: list[str] = []
        self.name_ids: dict[str, int] = {}
        self.program: list[int] = []
        self.name: list[int] = []
        self.parent: list[int] = []
        self.start: list[int] = []
        self.end: list[int] = []
        # at enter: the counter's totals; at exit: replaced by what was counted in between
        self.loaded: list[int] = []
        self.stored: list[int] = []
        self.flops: list[dict[int, int]] = []
        self.unmatched_enters = 0
        self.unmatched_exits = 0

    def _program_id(self) -> int:
        b = self.builder
        idx = getattr(b, "grid_idx", None)
        if idx is None:
            return 0
        dim = getattr(b, "grid_dim", (1, 1, 1))
        return int(idx[0]) + int(dim[0]) * (int(idx[1]) + int(dim[1]) * int(idx[2]))

    def __call__(self, is_start: bool, name: str) -> None:
        now = time.perf_counter_ns()
        if threading.get_ident() != self.thread:  # not this launch's programs
            return
        c = self.counter
        program = self._program_id()
        stack = self.open.setdefault(program, [])
        if is_start:
            sid = self.name_ids.get(name)
            if sid is None:
                sid = self.name_ids[name] = len(self.names)
                self.names.append(name)
            stack.append(len(self.start))
            self.program.append(program)
            self.name.append(sid)
            self.parent.append(stack[-2] if len(stack) > 1 else -1)
            self.loaded.append(c.loaded)
            self.stored.append(c.stored)
            self.flops.append(dict(c.flops))
            self.end.append(-1)
            self.start.append(time.perf_counter_ns())  # last: the bookkeeping above is not the scope's
            return
        sid = self.name_ids.get(name, -1)
        at = len(stack) - 1
        while at >= 0 and self.name[stack[at]] != sid:
            at -= 1
        if at < 0:
            self.unmatched_exits += 1
            return
        i = stack[at]
        self.unmatched_enters += len(stack) - at - 1  # open inside it: they cannot nest in it now
        del stack[at:]
        self.end[i] = now
        self.loaded[i] = c.loaded - self.loaded[i]
        self.stored[i] = c.stored - self.stored[i]
        before = self.flops[i]
        self.flops[i] = {w: n - before.get(w, 0) for w, n in c.flops.items() if n != before.get(w, 0)}

    def finish(self) -> ScopeInstances | None:
        """The completed instances (None when the launch's programs used no scope): a parent that
        never completed hands its children to its nearest completed ancestor."""
        self.unmatched_enters += sum(len(s) for s in self.open.values())
        self.open.clear()
        if not self.start and not self.unmatched_exits:
            return None
        end = np.array(self.end, np.int64) if self.end else _NONE
        done = end >= 0
        parent = np.array(self.parent, np.int64) if self.parent else _NONE
        while True:  # skip parents that never completed
            lost = (parent >= 0) & ~done[np.maximum(parent, 0)]
            if not lost.any():
                break
            parent[lost] = parent[parent[lost]]
        kept = np.flatnonzero(done)
        index = np.full(len(end), -1, np.int64)
        index[kept] = np.arange(len(kept))
        kept_parent = parent[kept]
        kept_parent = np.where(kept_parent >= 0, index[np.maximum(kept_parent, 0)], -1)
        widths = sorted({w for i in kept.tolist() for w in self.flops[i]})
        flops = {w: np.array([self.flops[i].get(w, 0) for i in kept.tolist()], np.int64) for w in widths}
        return ScopeInstances(
            names=list(self.names),
            program=np.array(self.program, np.int64)[kept] if self.program else _NONE,
            name=np.array(self.name, np.int64)[kept] if self.name else _NONE,
            parent=kept_parent,
            start=np.array(self.start, np.int64)[kept] if self.start else _NONE,
            end=end[kept],
            loaded=np.array(self.loaded, np.int64)[kept] if self.loaded else _NONE,
            stored=np.array(self.stored, np.int64)[kept] if self.stored else _NONE,
            flops=flops,
            unmatched_enters=self.unmatched_enters,
            unmatched_exits=self.unmatched_exits,
        )
