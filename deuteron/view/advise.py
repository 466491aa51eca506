"""DeepContext-style analyses of a profile, each with its evidence: ``deuteron view --advise``.

They read only the tree (and the run's metadata, and the run's trace where it is beside the
profile), so they work on any file Deuteron wrote, and are strongest on ``-c torch`` profiles,
whose frames name modules (``attr (Class)``), aten ops, ``backward`` frames and the optimizer's
step:

- **idle**: the GPU's idle share, over the training steps where the run's trace is beside the
  profile (else over the whole process, labelled so), with the host-side suspects: ops that launch
  many tiny kernels per call (the GPU waits on the launches);
- **backward**: the modules whose backward costs far more than their forward;
- **fusion**: ops that launch several short kernels per call (``torch.compile`` fuses them), not
  library calls (:data:`LIBRARY_KERNEL`: cuBLAS, cuDNN, CUTLASS, flash attention, NCCL, CUB are
  fused already);
- **copies**: time in copy kernels and in ops that wait for the GPU (``.item()``, ``.cpu()``);
- **lines**: in a sampled profile (``--sample``), each hot kernel's hottest lines, their dominant
  stall and what to change (:mod:`.hot_lines`); **stalls**: the same for a hot kernel without
  source lines (a library's kernel, or any kernel of Proton's own PC-sampling file).

**Right or silent.** Every piece of advice states its thresholds in its text, and each row of
evidence is above them (a share of the run: :data:`EVIDENCE_SHARE`); rows below are dropped, and
advice left without a row is not given. **Repeats folded.** ``layers.0``, ``layers.1``, ... are
one row, ``layers.*`` (:func:`deuteron.view.processors.fold_repeats`), their numbers added, and
``folded=`` says how many frames the row adds up.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from deuteron.model import tree_ops
from deuteron.model.metrics import CPU_TIME, EXC, TIME
from deuteron.model.names import display_name
from deuteron.model.trace import COMM_KERNEL
from deuteron.model.tree import KERNEL, Node, Profile
from deuteron.view import processors
from deuteron.view.hot_lines import DOMINANT_STALL_SHARE, HOT_LINE_SHARE, hot_lines, kernel_stalls
from deuteron.view.step_window import steps_busy_beside

MODULE = re.compile(r"^(?P<path>\S+) \((?P<cls>[A-Za-z_][\w.]*)\)$")
BACKWARD = "backward"
SMALL_KERNEL_NS = 20_000  # a kernel shorter than this is mostly launch cost on current GPUs
MANY_KERNELS = 4  # kernels per op call from which fusing pays
IDLE_SHARE = 0.10  # the GPU idle at least this share of its window: advised
BACKWARD_RATIO = 3.0  # backward/forward from which a module is listed (the usual is about 2)
EVIDENCE_SHARE = 0.01  # a row of evidence holds at least this share of the run (time or launches)
SYNC_MIN_NS = 1_000_000  # ... and a waiting op at least this much CPU time
SYNC_OPS = ("aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::equal", "aten::is_nonzero")
COPY_KERNEL = re.compile(r"copy|memcpy|memset", re.IGNORECASE)
# A library's kernel (cuBLAS/cuBLASLt's gemm, nvjet and xmma, cuDNN, CUTLASS, flash attention,
# NCCL/RCCL, CUB's device-wide primitives): an op that launches one is a library call, fused
# already, not an elementwise chain torch.compile could fuse.
LIBRARY_KERNEL = re.compile(
    r"cudnn|cublas|cutlass|nvjet|xmma|gemm|flash|fmha|nccl|rccl|3cub|cub::|Device[A-Z]\w*Kernel",
    re.IGNORECASE,
)
LIBRARIES = "cuBLAS, cuDNN, CUTLASS, flash attention, NCCL, CUB"
# How many frames of the profile a row of folded advice adds up (a metric only the copy has).
FRAMES = "\0frames"
FOLDED_NOTE = (
    "; repeated modules (layers.0, layers.1, ...) are one row (layers.*) that adds them up, "
    "folded= says how many"
)


@dataclass
class Advice:
    """One analysis that found something: its kind, a title with the numbers and thresholds, and
    the rows of evidence as plain dicts, so ``--json`` and the web UI show them as they are. Not
    :class:`deuteron.model.finding.Finding`: a profile's analysis has no severity and no source line."""

    kind: str  # idle, backward, fusion, copies, lines, stalls (and the ranks' kinds)
    title: str
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "evidence": self.evidence}


def _num(node: Node, metric: str) -> int:
    value = node.metrics.get(metric, 0)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _kernels(node: Node) -> tuple[int, int]:
    """(kernel launches, GPU ns) of the kernels anywhere under ``node``."""
    count = total = 0
    for n in node.walk():
        if n.type == KERNEL:
            count += _num(n, "count")
            total += _num(n, TIME)
    return count, total


Paths = list[tuple[tuple[str, ...], Node]]


def _paths(root: Node) -> Paths:
    out: Paths = []
    stack: Paths = [((), root)]
    while stack:
        path, node = stack.pop()
        out.append((path, node))
        for child in node.children.values():
            stack.append(((*path, child.name), child))
    return out


def _show(path: tuple[str, ...]) -> str:
    return " > ".join(path)


def _shown_path(path: str, full_names: bool) -> str:
    """A path of :func:`_show` with each mangled C++ frame as the tree shows it (the JSON keeps
    the recorded names)."""
    if "_Z" not in path:
        return path
    return " > ".join(display_name(frame, full_names) for frame in path.split(" > "))


def _is_module(name: str) -> bool:
    return MODULE.match(name) is not None


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


@dataclass
class _Run:
    """What the analyses share: the (folded) tree's paths, each frame's inclusive CPU time, and
    the run's totals that the evidence's shares are of."""

    paths: Paths
    nodes: dict[tuple[str, ...], Node]  # by path
    cpu: dict[int, int]  # id(node) -> inclusive CPU ns
    gpu_ns: int
    launches: int
    cpu_ns: int

    @classmethod
    def of(cls, p: Profile) -> _Run:
        inc = processors.inclusive(p)
        cpu: dict[int, int] = {}
        stack = [(p.root, inc.root)]
        while stack:
            node, twin = stack.pop()
            cpu[id(node)] = _num(twin, CPU_TIME)
            stack.extend((child, twin.children[key]) for key, child in node.children.items())
        launches, gpu_ns = _kernels(p.root)
        paths = _paths(p.root)
        return cls(paths, dict(paths), cpu, gpu_ns, launches, cpu[id(p.root)])


def _folded(p: Profile, fold: bool) -> Profile:
    """A copy of ``p`` whose frames each count themselves in :data:`FRAMES`, repeats folded."""
    marked = tree_ops.copy(p)
    for node in marked.root.walk():
        node.metrics[FRAMES] = 1
    marked.kinds[FRAMES] = EXC
    return processors.fold_repeats(marked) if fold else marked


def _row(node: Node, path: tuple[str, ...], **numbers: Any) -> dict[str, Any]:
    """One row of evidence: the frame's path, how many frames it folds (where more than one)."""
    row: dict[str, Any] = {"path": _show(path)}
    frames = _num(node, FRAMES)
    if frames > 1:
        row["folded"] = frames
    row.update(numbers)
    return row


def _with_note(a: Advice | None) -> Advice | None:
    """The advice where it kept a row (none: no advice), saying how repeats are folded if it folds any."""
    if a is None or not a.evidence:
        return None
    if any("folded" in row for row in a.evidence):
        a.title += FOLDED_NOTE
    return a


def advise(p: Profile, top: int = 5, source: str | None = None, fold: bool = True) -> list[Advice]:
    """Every analysis that found something (see the module); ``source``, the profile's path, finds
    the run's trace beside it for the idle share over the steps; ``fold`` folds repeated modules."""
    shown = _folded(p, fold)
    run = _Run.of(shown)
    found = [
        _with_note(a)
        for a in (
            _idle(p, run, top, source),
            _backward(run, top),
            _fusion(run, top),
            _copies(run, top),
        )
    ]
    return [a for a in found if a is not None] + _lines(p, top) + _stalls(p, top)


def _lines(p: Profile, top: int) -> list[Advice]:
    """A sampled profile's hot kernels: their hottest lines, each line's dominant stall and what to
    change (:mod:`.hot_lines` holds the thresholds)."""
    out = []
    kernels, total = hot_lines(p, top)
    for kernel, advice in kernels:
        first = advice[0]
        title = (
            f"{display_name(kernel.name)}: {kernel.samples:,} PC samples "
            f"({kernel.samples / total:.0%} of the run's); {first.sentence()}"
        )
        evidence: list[dict[str, Any]] = [
            {
                "path": f"{os.path.basename(a.file)}:{a.line}",
                "samples": a.samples,
                "share": f"{a.share:.0%}",
                "stall": (a.stall or "mixed").removeprefix("stalled_"),
                "stall_share": f"{a.stall_share:.0%}" if a.stall else "-",
            }
            for a in advice
        ]
        out.append(Advice("lines", title, evidence))
    return out


def _stalls(p: Profile, top: int) -> list[Advice]:
    """A sampled profile's hot kernels without source lines: the stall that dominates each, and
    what to change (:mod:`.hot_lines` holds the thresholds)."""
    out = []
    kernels, _ = kernel_stalls(p, top)
    for k in kernels:
        title = (
            f"{display_name(k.kernel)}: {k.samples:,} PC samples ({k.share:.0%} of the run's), without "
            f"source lines (a library's kernel, or a file that keeps kernel totals only); {k.sentence()}. "
            f"Stalls listed from {HOT_LINE_SHARE:.0%} of the kernel's samples; one is named from "
            f"{DOMINANT_STALL_SHARE:.0%}"
        )
        evidence = [
            {
                "path": k.kernel,
                "stall": word.removeprefix("stalled_"),
                "samples": n,
                "share": f"{n / k.samples:.0%}",
            }
            for word, n in k.stalls
        ]
        out.append(Advice("stalls", title, evidence))
    return out


def _op_calls(run: _Run) -> list[tuple[tuple[str, ...], Node, int, int, int]]:
    """Each outermost aten op frame with kernels below: (path, node, calls, kernels, GPU ns)."""
    out = []
    for path, node in run.paths:
        if not node.name.startswith("aten::") or (len(path) > 1 and path[-2].startswith("aten::")):
            continue
        calls = _num(node, "calls")
        kernels, ns = _kernels(node)
        if calls and kernels:
            out.append((path, node, calls, kernels, ns))
    return out


def _idle(p: Profile, run: _Run, top: int, source: str | None) -> Advice | None:
    """The GPU's idle share over the steps (the trace beside) or else the whole process, from
    :data:`IDLE_SHARE`; its evidence, the window measured and the launch-bound suspects."""
    busy, window = p.metadata.get("gpu_busy_ns"), p.metadata.get("gpu_window_ns")
    if not isinstance(busy, int) or not isinstance(window, int) or window <= 0:
        return None
    steps = steps_busy_beside(source, p.metadata)
    if steps is not None and steps.window_ns > 0:
        busy, window = steps.busy_ns, steps.window_ns
        label = f"{steps.steps:,} step{'' if steps.steps == 1 else 's'}"
        where = f"over the {label} (the kernels launched in them: the trace beside the profile)"
    else:
        label = "whole process"
        where = (
            "over the whole process, from its first kernel to its last (loading and compilation "
            "included; with the run's trace beside the profile, over its steps)"
        )
    idle = 1 - busy / window
    if idle < IDLE_SHARE:
        return None
    least = EVIDENCE_SHARE * run.launches
    suspects = sorted(
        (x for x in _op_calls(run) if x[3] >= x[2] and x[4] < SMALL_KERNEL_NS * x[3] and x[3] >= least),
        key=lambda x: -x[3],
    )[:top]
    rule = (
        f"ops launching a kernel or more per call, under {SMALL_KERNEL_NS // 1000} us each on average, "
        f"that make at least {EVIDENCE_SHARE:.0%} of the run's {run.launches:,} launches"
    )
    title = f"the GPU was idle {idle:.0%} (advised from {IDLE_SHARE:.0%}) {where}: "
    if suspects:
        title += f"the host did not launch work fast enough; launch-bound suspects: {rule}; torch.compile or "
        title += "CUDA graphs remove launch cost"
    else:
        title += f"no op is launch-bound ({rule}): the gaps are the host's other work"
    evidence = [
        {"path": label, "busy_ms": _ms(busy), "window_ms": _ms(window), "idle": f"{idle:.0%}"},
        *(
            _row(node, path, calls=calls, kernels=k, avg_kernel_us=round(ns / k / 1e3, 2))
            for path, node, calls, k, ns in suspects
        ),
    ]
    return Advice("idle", title, evidence)


def _backward(run: _Run, top: int) -> Advice | None:
    rows = []
    for path, node in run.paths:
        if not _is_module(node.name) and not (
            len(path) == 1
            and node.children
            and any(_is_module(c.name) or c.name == BACKWARD for c in node.children.values())
        ):
            continue
        backward_nodes = [n for n in node.walk() if n.name == BACKWARD]
        if not backward_nodes:
            continue
        _, total_gpu = _kernels(node)
        if total_gpu:
            back = sum(_kernels(b)[1] for b in backward_nodes)
            fwd, unit, run_ns = total_gpu - back, "gpu", run.gpu_ns
        else:  # a module's CPU time covers the backward filed under it
            back = sum(run.cpu[id(b)] for b in backward_nodes)
            fwd, unit, run_ns = run.cpu[id(node)] - back, "cpu", run.cpu_ns
        if fwd > 0 and back >= BACKWARD_RATIO * fwd and back >= EVIDENCE_SHARE * run_ns:
            rows.append((back / fwd, path, node, fwd, back, unit))
    rows.sort(key=lambda r: -r[0])
    return Advice(
        "backward",
        f"modules whose backward takes at least {BACKWARD_RATIO:g}x their forward and "
        f"{EVIDENCE_SHARE:.0%} of the run's time (GPU time, or CPU time without kernels): backward "
        "usually costs about 2x forward; far more points at recomputation, atomics or an unfused backward",
        [
            _row(node, path, ratio=round(ratio, 2), **{f"forward_{u}_ms": _ms(f), f"backward_{u}_ms": _ms(b)})
            for ratio, path, node, f, b, u in rows[:top]
        ],
    )


def _library(node: Node) -> bool:
    """Whether a library's kernel (:data:`LIBRARY_KERNEL`) runs under ``node``."""
    return any(n.type == KERNEL and LIBRARY_KERNEL.search(n.name) for n in node.walk())


def _fusion(run: _Run, top: int) -> Advice | None:
    least = EVIDENCE_SHARE * run.launches
    rows = [
        (path, node, calls, k, ns)
        for path, node, calls, k, ns in _op_calls(run)
        if k >= MANY_KERNELS * calls and ns < SMALL_KERNEL_NS * k and k >= least and not _library(node)
    ]
    rows.sort(key=lambda r: -r[3])
    return Advice(
        "fusion",
        f"ops launching {MANY_KERNELS}+ kernels per call, under {SMALL_KERNEL_NS // 1000} us each on "
        f"average, that make at least {EVIDENCE_SHARE:.0%} of the run's {run.launches:,} launches: fusion "
        "candidates (torch.compile fuses elementwise chains; foreach/fused optimizers do it for optimizer "
        f"steps). An op that runs a library's kernel ({LIBRARIES}) is left out: it is a fused library "
        "call, not an elementwise chain",
        [
            _row(node, path, calls=c, kernels_per_call=round(k / c, 1), avg_kernel_us=round(ns / k / 1e3, 2))
            for path, node, c, k, ns in rows[:top]
        ],
    )


def _copies(run: _Run, top: int) -> Advice | None:
    """Copy kernels by the outermost op (or frame) that launched them, and, in a run with GPU
    kernels, ops that wait for the GPU; each row above its threshold (stated in the title)."""
    if not run.gpu_ns:
        return None  # nothing to copy to or wait for
    places: dict[tuple[str, ...], tuple[Node, int]] = {}
    for path, node in run.paths:
        if node.type != KERNEL or not COPY_KERNEL.search(node.name) or COMM_KERNEL.search(node.name):
            continue
        ops = [i for i, name in enumerate(path[:-1]) if name.startswith("aten::")]
        at = path[: ops[0] + 1] if ops else path
        owner, ns = places.get(at, (run.nodes[at], 0))
        places[at] = (owner, ns + _num(node, TIME))
    copy_gpu = sum(ns for _, ns in places.values())
    copies = sorted(
        ((path, node, ns) for path, (node, ns) in places.items() if ns >= EVIDENCE_SHARE * run.gpu_ns),
        key=lambda r: -r[2],
    )[:top]
    least_sync = max(SYNC_MIN_NS, EVIDENCE_SHARE * run.cpu_ns)
    syncs = sorted(
        (
            (run.cpu[id(node)], path, node)
            for path, node in run.paths
            if node.name in SYNC_OPS
            and not (len(path) > 1 and path[-2] in SYNC_OPS)
            and run.cpu[id(node)] >= least_sync
        ),
        key=lambda r: -r[0],
    )[:top]
    evidence = [
        _row(node, path, copy_gpu_ms=_ms(ns), share=f"{ns / run.gpu_ns:.1%}") for path, node, ns in copies
    ]
    for ns, path, node in syncs:
        calls = {"calls": _num(node, "calls")} if _num(node, "calls") else {}
        evidence.append(_row(node, path, **calls, cpu_ms=_ms(ns)))
    return Advice(
        "copies",
        f"{copy_gpu / run.gpu_ns:.1%} of GPU time is in copy kernels (listed: the ops whose copies take at "
        f"least {EVIDENCE_SHARE:.0%} of it); ops that wait for the GPU (.item(), .nonzero(), .cpu()) "
        f"stall the host's launches (listed from {EVIDENCE_SHARE:.0%} of the run's CPU time, and "
        f"{SYNC_MIN_NS / 1e6:g} ms)",
        evidence,
    )


def _number(key: str, value: Any) -> str:
    """A number of a row as people read it: thousands separated, ms to 3 decimals, others to 2."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.3f}" if key.endswith("_ms") else f"{value:,.2f}"


NOTHING = (
    "advice: nothing to flag (no idle GPU, outlying backward, unfused ops, waits, hot lines or "
    "stalls above the thresholds each states)"
)


def headline(a: Advice) -> str:
    """An advice's first line as :func:`render` prints it: ``[kind] title``."""
    return f"[{a.kind}] {a.title}"


def evidence_line(item: dict[str, Any], full_names: bool = False) -> str:
    """A row of evidence as :func:`render` prints it: the path as the tree shows it, its numbers."""
    numbers = ", ".join(f"{k}={_number(k, v)}" for k, v in item.items() if k != "path")
    return f"    {_shown_path(str(item['path']), full_names)}  ({numbers})"


def render(advice: list[Advice], full_names: bool = False) -> str:
    """The advice as text: one headline each, then its evidence, a line per item; advice without
    an item is not shown. The frames of a path as ``deuteron view`` shows them (a C++ kernel short,
    or ``full_names`` demangled in full)."""
    shown = [a for a in advice if a.evidence]
    if not shown:
        return NOTHING
    lines = []
    for a in shown:
        lines.append(headline(a))
        lines.extend(evidence_line(item, full_names) for item in a.evidence)
    return "\n".join(lines)
