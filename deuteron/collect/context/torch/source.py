"""The torch context: every launch under the model's own structure (module path by attribute
name, then the aten op), backward work under the module that made it, and CPU time and flops per
module and op, with or without a GPU.

The only Deuteron module that touches torch internals. Two mechanisms, chosen by measuring
(benchmarks/HISTORY.md, "Framework context (issue 16)"):

- **Modules** through a wrapper of ``nn.Module._call_impl``, its per-call work in C
  (``torch_calls``).
  Not torch's global forward hooks: any global hook puts every module call on torch's slow path
  (1.8 us a call). Global *backward* hooks are not used either: they wrap every module's inputs
  and outputs (about 60 us per module call) and break valid code (an ``nn.ReLU(inplace=True)``
  after a hooked module raises).
- **Ops, backward nodes and the optimizer's step** through RecordFunction callbacks in C++
  (``_torch_ops.cpp``, built on first use for the installed torch: tens of nanoseconds per op,
  where a ``TorchDispatchMode`` costs microseconds per op and sees no more). It keeps a trie of
  places; each module call records the autograd sequence numbers it created, so a backward node,
  on whatever thread autograd runs it, lands under ``<module path> > backward > <node name>``.
- **With a GPU**, ops are observed only until each launch's op repeats at its position in its
  module call; then the op callback is disabled and launches get the learned op, checked against
  the kernel's name (``settings.ops_wanted``; a miss turns the op callback on again). Backward nodes are
  then read from autograd at each launch (the node it runs now) instead of through a callback per
  node, which made autograd build a RecordFunction and a name string for every node it ran.

Places are trie ids: the CUPTI shim records the launching thread's id with each launch, and the
session asks :meth:`TorchContext.place` for the node. Every callback and the wrapper start by
asking whether Dynamo is tracing (``torch.compiler.is_compiling``): a compiled region is one call
of its compiled module, and Inductor's kernels land under it.

This module is the source's lifecycle and its answers to the session; the parts live apart by job:
the library and its C signatures (:mod:`.library`), the module wrapper (:mod:`.module_wrapper`), the places
(:mod:`.trie`), the CPU costs (:mod:`.costs`), the environment's switches (:mod:`.settings`) and
the trace's spans (:mod:`.spans`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from deuteron.collect.context import LaunchPlace
from deuteron.collect.context.native import NATIVE_PLACE
from deuteron.collect.context.torch import library, settings
from deuteron.collect.context.torch import spans as torch_spans
from deuteron.collect.context.torch.costs import CostFiling
from deuteron.collect.context.torch.library import TorchContextError, read_nodes
from deuteron.collect.context.torch.module_wrapper import ModuleWrapper, Undo
from deuteron.collect.context.torch.trie import BASE, Placer, PlaceTrie
from deuteron.collect.placement import LaunchContexts
from deuteron.model.tree import Node, Profile

__all__ = ["TorchContext", "active"]

_active: TorchContext | None = None


def active() -> TorchContext | None:
    """The torch context recording now in this process (one at a time), or None."""
    return _active


class TorchContext:
    """The torch context source of one session (one at a time per process)."""

    name = "torch"
    # With ops inferred, backward nodes are read from autograd at launches rather than through a
    # callback per node (a benchmark's ablation turns it off to measure what it saves).
    nodes_at_launch_wanted = True
    # Module calls seen through :class:`.module_wrapper.ModuleWrapper` (a benchmark's ablation turns it off).
    module_wrapper_wanted = True

    def __init__(self, contexts: LaunchContexts, python_base: Callable[[Any], Node] | None = None) -> None:
        """``python_base``: with ``-c python,torch``, the Python call path (from a frame) that an
        outermost module call starts at; None: the module stack starts at the thread's scope."""
        self.contexts = contexts
        self.trie = PlaceTrie()
        self.placer = Placer(contexts, self.trie, self._name)
        self._python_base = python_base
        self._lib: ctypes.CDLL | None = None
        self._handles: list[Undo] = []
        self._costs = CostFiling()
        self.flops = True
        self.ops = True  # DEUTERON_TORCH_OPS=0: modules, backward nodes and the optimizer only
        self.infer = False  # ops observed until launches repeat, then inferred (see settings.ops_wanted)
        self.nodes_at_launch = False  # backward nodes read at launches (with infer), untimed
        self.stats: dict[str, int] = {}  # infer_stats() when the session stopped

    # --- lifecycle -----------------------------------------------------------------------------------

    def start(self, context_id: int, on_gpu: bool = False, spans: bool = False) -> None:
        """Start seeing ops and modules, module stacks starting at ``context_id`` (the thread's
        scope); ``spans``: also keep each timed frame's start and end for the trace (module,
        backward node, user scope, observed op), up to ``spans.LIMIT``."""
        global _active
        if _active is not None:
            raise TorchContextError("another session already records the torch context; finalize it first")
        lib = library.load()
        self._lib = lib
        self.ops, self.infer = settings.ops_wanted(on_gpu)
        self.flops = settings.flops_wanted(on_gpu) and self.ops and not self.infer
        lib.deut_reset()
        self.nodes_at_launch = self.infer and self.nodes_at_launch_wanted
        flags = (1 if self.flops else 0) | (0 if self.ops else 2) | (4 if self.infer else 0)
        flags |= 8 if self.nodes_at_launch else 0
        lib.deut_spans(torch_spans.LIMIT if spans else 0)
        if lib.deut_install(flags) != 0:
            raise TorchContextError("PyTorch refused the op callback (at::addGlobalCallback)")
        _active = self
        if self.module_wrapper_wanted:
            self._handles = ModuleWrapper(lib, self.contexts, self._python_base).install()
        if self._python_base is None:
            lib.deut_set_base(context_id)

    def stop(self) -> None:
        global _active
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._lib is not None and _active is self:
            self.sync()
            self.stats = self.infer_stats() if self.infer else {}
            self._lib.deut_remove()
            self._lib.deut_set_base(0)
        if _active is self:
            _active = None

    def spans(self, start: int = 0) -> tuple[list[tuple[Node, int, int, int]], int]:
        """The kept module/op/backward spans from the ``start``-th on as (node, start ns, end ns,
        thread ident), and how many were not kept (see :mod:`.spans`)."""
        if self._lib is None:
            return [], 0
        self.sync()
        root = self.contexts.root
        return torch_spans.read(self._lib, lambda place_id: self.placer.place(place_id, root)[0], start)

    def probe_address(self) -> int:
        """The C address of ``deut_launch`` (the CUPTI shim calls it at each launch)."""
        assert self._lib is not None
        return ctypes.cast(self._lib.deut_launch, ctypes.c_void_p).value or 0

    def infer_stats(self) -> dict[str, int]:
        """How op inference went so far: launches given a learned op (``inferred``), launches
        that did not match what was learned (``missed``: they land under their module, and ops
        are observed again), switches of the op callback, whether ops are observed now, places
        learned, and launches too far into their anchor's call to be learned (``unlearned``: a loop
        of launches outside any module, whose positions never repeat)."""
        if self._lib is None:
            return {}
        out = (ctypes.c_uint64 * 6)()
        self._lib.deut_infer_stats(out)
        keys = ("inferred", "missed", "switches", "observing", "learned", "unlearned")
        return dict(zip(keys, map(int, out), strict=True))

    def set_base(self, context_id: int) -> None:
        """The calling thread's scope changed (``-c torch`` without python): its module stacks start there."""
        if self._lib is not None and self._python_base is None and _active is self:
            self._lib.deut_set_base(context_id)

    # --- place ids into nodes --------------------------------------------------------------------

    def _name(self, name_id: int) -> str:
        text = self.trie.names.get(name_id)
        if text is None:
            raw = self._lib.deut_name(name_id) if self._lib is not None else b""
            text = self.trie.names[name_id] = (raw or b"").decode("utf-8", "replace") or f"<name {name_id}>"
        return text

    def sync(self) -> None:
        """Copy the trie's new nodes from the library."""
        if self._lib is None:
            return
        have, count = len(self.trie), int(self._lib.deut_node_count())
        if count <= have:
            return
        parent, name, kind, _, _, _ = read_nodes(self._lib, have, count)
        self.trie.extend(parent, name, kind)

    def table(self) -> dict[str, Any]:
        """The trie so far, names included (saved beside recorded CUPTI drains)."""
        self.sync()
        for name_id, kind in zip(self.trie.name.tolist(), self.trie.kind.tolist(), strict=True):
            if kind != BASE and name_id:
                self._name(name_id)
        return self.trie.table()

    def replay(self, table: dict[str, Any]) -> None:
        """Places from a recorded table (no library: a fixture replayed without torch's callback)."""
        self.trie = PlaceTrie.from_table(table)
        self.placer = Placer(self.contexts, self.trie, self._name)

    def place(self, place_id: int, fallback: Node) -> tuple[Node, bool]:
        if place_id >= len(self.trie):
            self.sync()
        return self.placer.place(place_id, fallback)

    def owns(self, place_id: int) -> bool:
        return 0 < place_id < NATIVE_PLACE

    def launch_place(self, place_id: int, context_id: int) -> LaunchPlace:
        """The module and op the launch was made in: wherever it ran when the module stack starts
        at a base (a scope or Python path), else below the launch's own context."""
        node = self.rooted(place_id)
        if node is not None:
            return LaunchPlace(node, any_thread=True)
        return LaunchPlace(self.place(place_id, self.contexts.node(context_id))[0])

    def rooted(self, place_id: int) -> Node | None:
        """The node of ``place_id`` when its path starts at a base (so the launch's own context is
        not needed, and no frame is made for it); None otherwise, without making any node."""
        if place_id >= len(self.trie):
            self.sync()
        if not self.placer.is_rooted(place_id):
            return None
        return self.placer.place(place_id, self.contexts.root)[0]

    def current(self) -> int:
        """The calling thread's place id now (0: none)."""
        return int(self._lib.deut_current()) if self._lib is not None else 0

    def locate(self, base: Node) -> Node:
        """The calling thread's module and op below ``base`` (the interpreter's launches)."""
        place_id = self.current()
        return self.place(place_id, base)[0] if place_id else base

    # --- CPU time, calls and flops ---------------------------------------------------------------

    def file_metrics(self, profile: Profile) -> None:
        """Add what the ops and modules cost since the last filing: ``cpu_time (ns)`` (the time
        spent inside the frame, its nested frames included; a ``backward`` frame has the sum of its
        nodes), ``calls`` and ``flops``. Once ops have been inferred, they were timed only while
        observed, so their ``cpu_time`` is left out (modules' and backward nodes' is whole); their
        ``calls`` are then the calls that launched a kernel, counted at launches whether observed or
        inferred; backward nodes, then read from autograd at launches and timed by nothing, have
        the same ``calls`` and no ``cpu_time``. How many launches were inferred is in the profile's
        metadata."""
        if self._lib is None:
            return
        inferred = False  # ops were left unobserved for a while: their own time is partial
        if self.infer:
            stats = self.stats or self.infer_stats()
            profile.metadata["torch_ops"] = dict(stats, mode="infer")
            inferred = stats.get("switches", 0) > 0
        self._costs.file(profile, self._lib, self.trie, self.placer, inferred, self.nodes_at_launch)
