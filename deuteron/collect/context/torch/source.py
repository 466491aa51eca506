"""The torch context: every launch under the model's own structure (module path by attribute
name, then the aten op), backward work under the module that made it, and CPU time and flops per
module and op, with or without a GPU.

The only Deuteron module that touches torch internals. Two mechanisms, chosen by measuring
(docs/benchmarks.md, "Framework context"):

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
  the kernel's name (``ops_wanted``; a miss turns the op callback on again). Backward nodes are
  then read from autograd at each launch (the node it runs now) instead of through a callback per
  node, which made autograd build a RecordFunction and a name string for every node it ran.

Places are trie ids: the CUPTI shim records the launching thread's id with each launch, and the
session asks :meth:`TorchContext.place` for the node. Every hook starts by asking whether Dynamo is
tracing (``torch.compiler.is_compiling``): a compiled region is one call of its compiled module,
and Inductor's kernels land under it.
"""

from __future__ import annotations

import ctypes
import os
import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from deuteron.collect.context import LaunchPlace
from deuteron.collect.context.native import NATIVE_PLACE
from deuteron.collect.context.torch import build as torch_build
from deuteron.collect.context.torch import calls as torch_calls
from deuteron.collect.context.torch import spans as torch_spans
from deuteron.collect.placement import LaunchContexts
from deuteron.model.errors import DeuteronError
from deuteron.model.metrics import CPU_TIME, EXC, FLOPS
from deuteron.model.tree import Node, Profile
from deuteron.process.patches import AttributePatch

CALLS = "calls"  # how many times a module or op frame was entered (exclusive: not summed upward)
BASE, MODULE, OP, SCOPE, MARK, BACKWARD = 1, 2, 3, 4, 5, 6
BACKWARD_FRAME = "backward"


class TorchContextError(DeuteronError, RuntimeError):
    """The torch context cannot start; the message says why."""


_lib: ctypes.CDLL | None = None
_active: TorchContext | None = None


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    try:
        import torch
    except ImportError:
        raise TorchContextError(
            "-c torch needs PyTorch, which is not installed (pip install torch)"
        ) from None
    path = torch_build.build(
        torch.__version__, os.path.dirname(torch.__file__), int(torch._C._GLIBCXX_USE_CXX11_ABI)
    )
    lib = ctypes.PyDLL(str(path))  # calls hold the GIL: no release and re-take per module call
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    p32, p64 = ctypes.POINTER(u32), ctypes.POINTER(u64)
    for name, args, res in (
        ("deut_abi", [], ctypes.c_int),
        ("deut_install", [ctypes.c_int], ctypes.c_int),
        ("deut_remove", [], None),
        ("deut_reset", [], None),
        ("deut_intern", [ctypes.c_char_p], u32),
        ("deut_current", [], u32),
        ("deut_launch", [ctypes.c_char_p, ctypes.c_int], u32),
        ("deut_infer_stats", [p64], None),
        ("deut_set_base", [u32], None),
        ("deut_module_enter", [u32], None),
        ("deut_module_exit", [], None),
        ("deut_node_count", [], u32),
        ("deut_name_count", [], u32),
        ("deut_dropped", [], u64),
        ("deut_name", [u32], ctypes.c_char_p),
        ("deut_read", [u32, u32, p32, p32, ctypes.POINTER(ctypes.c_uint8), p64, p64, p64], None),
        ("deut_spans", [u64], ctypes.c_int),
        ("deut_span_count", [], u64),
        ("deut_span_data", [], ctypes.c_void_p),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    _lib = lib
    return lib


def display_name(kind: int, name: str) -> str:
    """A trie node's frame name: the optimizer's RecordFunction ``Optimizer.step#AdamW.step``
    reads ``optimizer.step (AdamW)``; everything else keeps its own name."""
    if kind == SCOPE and name.startswith("Optimizer.") and "#" in name:
        what, _, owner = name.partition("#")
        return f"optimizer.{what[len('Optimizer.') :]} ({owner.split('.', 1)[0]})"
    return name


class Trie:
    """Python's copy of the C++ trie: each id's parent, name and kind, and the names' texts; filled
    from the library (live) or from a recorded table (a fixture)."""

    def __init__(self) -> None:
        self.parent = np.zeros(1, np.uint32)
        self.name = np.zeros(1, np.uint32)
        self.kind = np.zeros(1, np.uint8)
        self.names: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.parent)

    def extend(self, parent: np.ndarray, name: np.ndarray, kind: np.ndarray) -> None:
        self.parent = np.concatenate([self.parent, parent])
        self.name = np.concatenate([self.name, name])
        self.kind = np.concatenate([self.kind, kind])

    def table(self) -> dict[str, Any]:
        """The trie as JSON-ready lists (saved beside recorded CUPTI drains)."""
        used = {int(n) for n, k in zip(self.name.tolist(), self.kind.tolist(), strict=True) if k != BASE}
        return {
            "parent": self.parent.tolist(),
            "name": self.name.tolist(),
            "kind": self.kind.tolist(),
            "names": {str(i): self.names[i] for i in sorted(used) if i in self.names},
        }

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> Trie:
        trie = cls()
        trie.parent = np.asarray(table["parent"], np.uint32)
        trie.name = np.asarray(table["name"], np.uint32)
        trie.kind = np.asarray(table["kind"], np.uint8)
        trie.names = {int(k): str(v) for k, v in table.get("names", {}).items()}
        return trie


class Placer:
    """Trie ids into tree nodes: a path rooted at a base node starts at that base's context; others
    start where the launch was (``fallback``)."""

    def __init__(self, contexts: LaunchContexts, trie: Trie, names: Callable[[int], str]) -> None:
        self.contexts = contexts
        self.trie = trie
        self._names = names
        self._cache: dict[tuple[int, int], tuple[Node, bool]] = {}

    def frame(self, tid: int) -> str:
        kind = int(self.trie.kind[tid])
        if kind == MARK:
            return BACKWARD_FRAME
        return display_name(kind, self._names(int(self.trie.name[tid])))

    def is_rooted(self, tid: int) -> bool:
        """Whether ``tid``'s path starts at a base node (a scope or Python path of the session)."""
        trie, t = self.trie, tid
        while t and t < len(trie):
            if trie.kind[t] == BASE:
                return True
            t = int(trie.parent[t])
        return False

    def place(self, tid: int, fallback: Node) -> tuple[Node, bool]:
        """The node of trie id ``tid``, and whether its path is rooted (independent of ``fallback``)."""
        hit = self._cache.get((tid, 0)) or self._cache.get((tid, id(fallback)))
        if hit is not None:
            return hit
        chain = []
        t = tid
        trie = self.trie
        start, rooted = fallback, False
        while t and t < len(trie):
            if trie.kind[t] == BASE:
                start, rooted = self.contexts.node(int(trie.name[t])), True
                break
            chain.append(t)
            t = int(trie.parent[t])
        node = start
        for t in reversed(chain):
            node = node.child(self.frame(t))
        self._cache[(tid, 0 if rooted else id(fallback))] = (node, rooted)
        return node, rooted


class TorchContext:
    """The torch context source of one session (one at a time per process)."""

    name = "torch"
    # With ops inferred, backward nodes are read from autograd at launches rather than through a
    # callback per node (a benchmark's ablation turns it off to measure what it saves).
    nodes_at_launch_wanted = True

    def __init__(self, contexts: LaunchContexts, python_base: Callable[[Any], Node] | None = None) -> None:
        """``python_base``: with ``-c python,torch``, the Python call path (from a frame) that an
        outermost module call starts at; None: the module stack starts at the thread's scope."""
        self.contexts = contexts
        self.trie = Trie()
        self.placer = Placer(contexts, self.trie, self._name)
        self._python_base = python_base
        self._lib: ctypes.CDLL | None = None
        self._handles: list[Any] = []
        self._filed: dict[str, np.ndarray] = {}
        self.flops = True
        self.ops = True  # DEUTERON_TORCH_OPS=0: modules, backward nodes and the optimizer only
        self.infer = False  # ops observed until launches repeat, then inferred (see ops_wanted)
        self.nodes_at_launch = False  # backward nodes read at launches (with infer), untimed
        self.stats: dict[str, int] = {}  # infer_stats() when the session stopped

    @staticmethod
    def flops_wanted(on_gpu: bool) -> bool:
        """Whether to read op input shapes for flops: on by default on the CPU, where they are the
        only measure of work; off by default with a GPU backend, where boxing every op's inputs
        costs most on a launch-bound step (DEUTERON_TORCH_FLOPS=1/0 decides either way)."""
        chosen = os.environ.get("DEUTERON_TORCH_FLOPS", "").strip().lower()
        if chosen:
            return chosen not in ("0", "off", "no", "false")
        return not on_gpu

    @staticmethod
    def ops_wanted(on_gpu: bool) -> tuple[bool, bool]:
        """Whether aten ops are seen, and whether they are inferred at launches once they repeat.

        ``DEUTERON_TORCH_OPS``: ``all`` observes every op for the whole run; ``0`` none (modules,
        backward nodes and the optimizer only); ``infer``, the default with a GPU backend, observes
        ops only until each launch's op repeats at the same position in its module call, then
        stops the op callback (torch's own cost of it is most of ``-c torch``'s on a launch-bound
        step) and checks every later launch's kernel against what was learned. Flops need every
        op's inputs, so ``DEUTERON_TORCH_FLOPS=1`` makes the default ``all``; without a GPU there
        are no launches to learn from, and the default is ``all`` too.
        """
        chosen = os.environ.get("DEUTERON_TORCH_OPS", "").strip().lower()
        flops = os.environ.get("DEUTERON_TORCH_FLOPS", "").strip().lower() in ("1", "on", "yes", "true")
        if chosen in ("0", "off", "no", "false", "none"):
            return False, False
        if chosen in ("1", "on", "yes", "true", "all"):
            return True, False
        if chosen == "infer":
            if flops:
                raise TorchContextError(
                    "DEUTERON_TORCH_OPS=infer and DEUTERON_TORCH_FLOPS=1 do not go together: flops "
                    "need every op observed (DEUTERON_TORCH_OPS=all)"
                )
            return True, True
        if chosen not in ("", "auto"):
            raise TorchContextError(
                f"DEUTERON_TORCH_OPS={chosen!r}: expected all, infer or 0 (infer is the default with a GPU)"
            )
        return True, on_gpu and not flops

    # --- lifecycle -----------------------------------------------------------------------------------

    def start(self, base_id: int, on_gpu: bool = False, spans: bool = False) -> None:
        """Start seeing ops and modules; ``spans``: also keep each timed frame's start and end for
        the trace (module, backward node, user scope, observed op), up to ``spans.LIMIT``."""
        global _active
        if _active is not None:
            raise TorchContextError("another session already records the torch context; finalize it first")
        lib = _load()
        self._lib = lib
        self.ops, self.infer = self.ops_wanted(on_gpu)
        self.flops = self.flops_wanted(on_gpu) and self.ops and not self.infer
        lib.deut_reset()
        self.nodes_at_launch = self.infer and self.nodes_at_launch_wanted
        flags = (1 if self.flops else 0) | (0 if self.ops else 2) | (4 if self.infer else 0)
        flags |= 8 if self.nodes_at_launch else 0
        lib.deut_spans(torch_spans.LIMIT if spans else 0)
        if lib.deut_install(flags) != 0:
            raise TorchContextError("PyTorch refused the op callback (at::addGlobalCallback)")
        _active = self
        self._install_hooks()
        if self._python_base is None:
            lib.deut_set_base(base_id)

    def stop(self) -> None:
        global _active
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._lib is not None and _active is self:
            self._sync()
            self.stats = self.infer_stats() if self.infer else {}
            self._lib.deut_remove()
            self._lib.deut_set_base(0)
        if _active is self:
            _active = None

    def spans(self) -> tuple[list[tuple[Node, int, int, int]], int]:
        """The kept module/op/backward spans as (node, start ns, end ns, thread ident), and how many
        were not kept (see :mod:`.spans`)."""
        if self._lib is None:
            return [], 0
        self._sync()
        root = self.contexts.root
        return torch_spans.read(self._lib, lambda tid: self.placer.place(tid, root)[0])

    def probe_address(self) -> int:
        """The C address of ``deut_launch`` (the CUPTI shim calls it at each launch)."""
        assert self._lib is not None
        return ctypes.cast(self._lib.deut_launch, ctypes.c_void_p).value or 0

    def infer_stats(self) -> dict[str, int]:
        """How op inference went so far: launches given a learned op (``inferred``), launches
        that did not match what was learned (``missed``: they land under their module, and ops
        are observed again), switches of the op callback, whether ops are observed now."""
        if self._lib is None:
            return {}
        out = (ctypes.c_uint64 * 5)()
        self._lib.deut_infer_stats(out)
        keys = ("inferred", "missed", "switches", "observing", "learned")
        return dict(zip(keys, map(int, out), strict=True))

    def set_base(self, cid: int) -> None:
        """The calling thread's scope changed (``-c torch`` without python): its module stacks start there."""
        if self._lib is not None and self._python_base is None and _active is self:
            self._lib.deut_set_base(cid)

    # --- module hooks --------------------------------------------------------------------------------

    def _install_hooks(self) -> None:
        """See every module call: ``nn.Module._call_impl`` wrapped for the session.

        Not torch's global forward hooks: with any global hook registered, every module call
        takes torch's slow path (hook lists, ``always_call`` bookkeeping): 1.8 us a call against
        0.3 us for a bare wrapper (measured, docs/benchmarks.md), on a step of a few hundred
        module calls. The wrapper keeps torch's fast path and closes the frame on exceptions too.
        Its work per call is done in C where the library has this Python's headers
        (``torch_calls``).
        """
        import torch

        assert self._lib is not None
        is_compiling = torch.compiler.is_compiling
        original = torch.nn.Module._call_impl
        python_base = self._python_base
        between = (os.path.dirname(torch.__file__) + os.sep, torch_calls.FILE)  # torch's frames and ours
        id_of = self.contexts.id_of
        set_base = self._lib.deut_set_base
        root_name = self._root_name

        def base_of(frame: Any) -> int:
            """``-c python,torch``: the id of the Python call path of the first frame outside
            torch and this module; 0 when every frame is inside."""
            while frame is not None and frame.f_code.co_filename.startswith(between):
                frame = frame.f_back
            return id_of(python_base(frame)) if frame is not None else 0  # type: ignore[misc]

        def root(module: Any) -> tuple[dict[int, str], int]:
            """An outermost module call: its submodule map and frame; with ``-c python,torch`` the
            Python call path it was called from becomes the module stack's base."""
            if python_base is not None:
                base = base_of(sys._getframe(1))
                if base:
                    set_base(base)
            qmap, _, nid = root_name(module)
            return qmap, nid

        def root_done() -> None:
            set_base(0)

        def scope_root() -> int:
            """A user scope (``optimizer.step``, a ``record_function``) opened outside any anchor:
            the base the library gives it, as an outermost module call has one."""
            return base_of(sys._getframe(1))

        _call_impl = torch_calls.wrap(
            torch_calls.Wrapping(
                self._lib, original, is_compiling, root, self._child_name,
                root_done if python_base is not None else None,
            )
        )  # fmt: skip
        patch = AttributePatch(torch.nn.Module, "_call_impl", _call_impl)
        patch.apply()
        self._handles = [_Undo(patch.restore)]
        scopes = getattr(self._lib, "deut_py_scope_base", None)  # absent when built without Python.h
        if python_base is not None and scopes is not None:
            scopes.argtypes, scopes.restype = [ctypes.py_object], None
            scopes(scope_root)
            self._handles.append(_Undo(lambda: scopes(None)))

    def _intern(self, text: str) -> int:
        assert self._lib is not None
        return int(self._lib.deut_intern(text.encode("utf-8", "replace")))

    _maps: dict[int, tuple[Any, dict[int, str]]] = {}

    def _root_name(self, module: Any) -> tuple[dict[int, str], str, int]:
        """An outermost module call: its map of submodules to attribute paths, and its frame."""
        hit = self._maps.get(id(module))
        if hit is None or hit[0]() is not module:
            hit = (weakref.ref(module), _qualnames(module))
            self._maps[id(module)] = hit
        return hit[1], "", self._intern(_root_frame(module))

    def _child_name(self, module: Any, qmap: dict[int, str], parent_qual: str) -> tuple[str, int]:
        """A module called inside another: named by its attribute path from the module it was
        called in (``layers.3 (TransformerEncoderLayer)``); by its class when it is not a submodule."""
        cls = type(module).__name__
        qual = qmap.get(id(module))
        if qual is None:
            return parent_qual, self._intern(cls)
        if parent_qual and qual.startswith(parent_qual + "."):
            rel = qual[len(parent_qual) + 1 :]
        else:
            rel = qual
        return qual, self._intern(f"{rel} ({cls})")

    # --- ids into nodes --------------------------------------------------------------------------

    def _name(self, nid: int) -> str:
        text = self.trie.names.get(nid)
        if text is None:
            raw = self._lib.deut_name(nid) if self._lib is not None else b""
            text = self.trie.names[nid] = (raw or b"").decode("utf-8", "replace") or f"<name {nid}>"
        return text

    def _sync(self) -> None:
        """Copy the trie's new nodes from the library."""
        if self._lib is None:
            return
        have, count = len(self.trie), int(self._lib.deut_node_count())
        if count <= have:
            return
        parent, name, kind, _, _, _ = self._read(have, count)
        self.trie.extend(parent, name, kind)

    def _read(self, start: int, stop: int) -> tuple[np.ndarray, ...]:
        assert self._lib is not None
        n = stop - start
        parent, name = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
        kind = np.zeros(n, np.uint8)
        ns, calls, flops = np.zeros(n, np.uint64), np.zeros(n, np.uint64), np.zeros(n, np.uint64)

        def ptr(a: np.ndarray, t: Any) -> Any:
            return a.ctypes.data_as(ctypes.POINTER(t))

        self._lib.deut_read(
            start, stop, ptr(parent, ctypes.c_uint32), ptr(name, ctypes.c_uint32), ptr(kind, ctypes.c_uint8),
            ptr(ns, ctypes.c_uint64), ptr(calls, ctypes.c_uint64), ptr(flops, ctypes.c_uint64),
        )  # fmt: skip
        return parent, name, kind, ns, calls, flops

    def table(self) -> dict[str, Any]:
        """The trie so far, names included (saved beside recorded CUPTI drains)."""
        self._sync()
        for nid, kind in zip(self.trie.name.tolist(), self.trie.kind.tolist(), strict=True):
            if kind != BASE and nid:
                self._name(nid)
        return self.trie.table()

    def replay(self, table: dict[str, Any]) -> None:
        """Places from a recorded table (no library: a fixture replayed without torch's callback)."""
        self.trie = Trie.from_table(table)
        self.placer = Placer(self.contexts, self.trie, self._name)

    def place(self, tid: int, fallback: Node) -> tuple[Node, bool]:
        if tid >= len(self.trie):
            self._sync()
        return self.placer.place(tid, fallback)

    def owns(self, op: int) -> bool:
        return 0 < op < NATIVE_PLACE

    def launch_place(self, op: int, context: int) -> LaunchPlace:
        """The module and op the launch was made in: wherever it ran when the module stack starts
        at a base (a scope or Python path), else below the launch's own context."""
        node = self.rooted(op)
        if node is not None:
            return LaunchPlace(node, any_thread=True)
        return LaunchPlace(self.place(op, self.contexts.node(context))[0])

    def rooted(self, tid: int) -> Node | None:
        """The node of ``tid`` when its path starts at a base (so the launch's own context is not
        needed, and no frame is made for it); None otherwise, without making any node."""
        if tid >= len(self.trie):
            self._sync()
        if not self.placer.is_rooted(tid):
            return None
        return self.placer.place(tid, self.contexts.root)[0]

    def current(self) -> int:
        return int(self._lib.deut_current()) if self._lib is not None else 0

    def locate(self, base: Node) -> Node:
        """The calling thread's module and op below ``base`` (the interpreter's launches)."""
        tid = self.current()
        return self.place(tid, base)[0] if tid else base

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
        count = int(self._lib.deut_node_count())
        parent, name, kind, ns, calls, flops = self._read(0, count)
        if count > len(self.trie):
            self.trie.extend(parent[len(self.trie) :], name[len(self.trie) :], kind[len(self.trie) :])
        marks = kind == MARK
        backward = (kind == BACKWARD) & marks[parent]
        ns = ns.astype(np.int64)
        np.add.at(ns, parent[backward].astype(np.int64), ns[backward])  # a mark: its nodes' sum
        totals = {"ns": ns, "calls": calls.astype(np.int64), "flops": flops.astype(np.int64)}
        deltas = {}
        for key, value in totals.items():
            before = self._filed.get(key)
            if before is not None:
                value = value.copy()
                value[: len(before)] -= before
            deltas[key] = value
        self._filed = totals
        profile.kinds[CALLS] = EXC
        root = profile.root
        for tid in np.flatnonzero(
            (deltas["ns"] > 0) | (deltas["calls"] > 0) | (deltas["flops"] > 0)
        ).tolist():
            if kind[tid] == BASE:
                continue
            metrics: dict[str, int] = {}
            untimed = (inferred and kind[tid] == OP) or (
                self.nodes_at_launch and kind[tid] in (BACKWARD, MARK)
            )
            if not untimed:
                metrics[CPU_TIME] = int(deltas["ns"][tid])
            if deltas["calls"][tid]:
                metrics[CALLS] = int(deltas["calls"][tid])
            if deltas["flops"][tid]:
                metrics[FLOPS] = int(deltas["flops"][tid])
            if metrics:  # an op timed while observed but never launching: no frame of its own
                profile.add_metrics(self.placer.place(tid, root)[0], metrics)


class _Undo:
    """A function as a handle: ``remove()`` calls it (a patch's restore, a hook's removal), as a
    torch hook handle's would."""

    def __init__(self, undo: Callable[[], None]) -> None:
        self.undo = undo

    def remove(self) -> None:
        self.undo()


def _qualnames(root: Any) -> dict[int, str]:
    """Each submodule's attribute path from ``root`` (a shared module keeps its first name); under
    ``torch.compile``'s wrapper the wrapped model's own names (``_orig_mod.`` dropped)."""
    out: dict[int, str] = {}
    for qual, module in root.named_modules():
        if qual.startswith("_orig_mod"):
            qual = qual[len("_orig_mod") :].lstrip(".")
        out.setdefault(id(module), qual)
    return out


def _root_frame(module: Any) -> str:
    inner = getattr(module, "_orig_mod", None)
    if inner is not None and type(module).__name__ == "OptimizedModule":
        return f"{type(inner).__name__} (compiled)"
    return type(module).__name__
