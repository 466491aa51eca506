"""DeepContext-style analyses of a profile, each with its evidence: ``deuteron view --advise``.

They read only the tree (and the run's metadata), so they work on any file Deuteron wrote, and
are strongest on ``-c torch`` profiles, whose frames name modules (``attr (Class)``), aten ops,
``backward`` frames and the optimizer's step:

- **idle**: the GPU's idle share between its first and last kernel, with the host-side suspects:
  ops that launch many tiny kernels per call (the GPU waits on the launches);
- **backward**: the modules whose backward costs most relative to their forward;
- **fusion**: ops that launch several short kernels per call (``torch.compile`` fuses them);
- **copies**: time in copy kernels and in ops that wait for the GPU (``.item()``, ``.cpu()``);
- **lines**: in a sampled profile (``--sample``), each hot kernel's hottest lines, their dominant
  stall and what to change (:mod:`.hot_lines`).

Thresholds are stated in each piece of advice's text; advice is given only when its evidence is
in the profile.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from deuteron.model.metrics import CPU_TIME, TIME
from deuteron.model.names import display_name
from deuteron.model.tree import KERNEL, Node, Profile
from deuteron.view.hot_lines import hot_lines

MODULE = re.compile(r"^(?P<path>\S+) \((?P<cls>[A-Za-z_][\w.]*)\)$")
BACKWARD = "backward"
SMALL_KERNEL_NS = 20_000  # a kernel shorter than this is mostly launch cost on current GPUs
MANY_KERNELS = 4  # kernels per op call from which fusing pays
SYNC_OPS = ("aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::equal", "aten::is_nonzero")
COPY_OPS = ("aten::copy_", "aten::_to_copy")


@dataclass
class Advice:
    """One analysis that found something: its kind, a title with the numbers and thresholds, and
    the rows of evidence as plain dicts, so ``--json`` and the web UI show them as they are. Not
    :class:`deuteron.model.finding.Finding`: a profile's analysis has no severity and no source line."""

    kind: str  # idle, backward, fusion, copies
    title: str
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "evidence": self.evidence}


def _num(node: Node, metric: str) -> int:
    value = node.metrics.get(metric, 0)
    return int(value) if isinstance(value, (int, float)) else 0


def _kernels(node: Node) -> tuple[int, int]:
    """(kernel launches, GPU ns) of the kernels anywhere under ``node``."""
    count = total = 0
    for n in node.walk():
        if n.type == KERNEL:
            count += _num(n, "count")
            total += _num(n, TIME)
    return count, total


def _paths(root: Node) -> list[tuple[tuple[str, ...], Node]]:
    out: list[tuple[tuple[str, ...], Node]] = []
    stack: list[tuple[tuple[str, ...], Node]] = [((), root)]
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


def advise(p: Profile, top: int = 5) -> list[Advice]:
    paths = _paths(p.root)
    found = [
        a
        for a in (_idle(p, paths, top), _backward(paths, top), _fusion(paths, top), _copies(p, paths, top))
        if a
    ]
    return found + _lines(p, top)


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


def _op_calls(paths: list[tuple[tuple[str, ...], Node]]) -> list[tuple[tuple[str, ...], int, int, int]]:
    """Each outermost aten op frame with kernels below: (path, calls, kernels, GPU ns)."""
    out = []
    for path, node in paths:
        if not node.name.startswith("aten::") or (len(path) > 1 and path[-2].startswith("aten::")):
            continue
        calls = _num(node, "calls")
        kernels, ns = _kernels(node)
        if calls and kernels:
            out.append((path, calls, kernels, ns))
    return out


def _idle(p: Profile, paths: list[tuple[tuple[str, ...], Node]], top: int) -> Advice | None:
    busy, window = p.metadata.get("gpu_busy_ns"), p.metadata.get("gpu_window_ns")
    if not isinstance(busy, int) or not isinstance(window, int) or window <= 0:
        return None
    idle = 1 - busy / window
    if idle < 0.10:
        return None
    suspects = sorted(
        (x for x in _op_calls(paths) if x[2] / x[1] >= 1 and x[3] / x[2] < SMALL_KERNEL_NS),
        key=lambda x: -x[2],
    )[:top]
    return Advice(
        "idle",
        f"the GPU was idle {idle:.0%} of the {window / 1e6:,.1f} ms from its first kernel to its last: "
        "the host did not launch work fast enough. Launch-bound suspects (many kernels under "
        f"{SMALL_KERNEL_NS // 1000} us each) follow; torch.compile or CUDA graphs remove launch cost",
        [
            {"path": _show(path), "calls": calls, "kernels": k, "avg_kernel_us": round(ns / k / 1e3, 2)}
            for path, calls, k, ns in suspects
        ],
    )


def _backward(paths: list[tuple[tuple[str, ...], Node]], top: int) -> Advice | None:
    rows = []
    for path, node in paths:
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
        back_gpu = sum(_kernels(b)[1] for b in backward_nodes)
        if total_gpu:
            fwd, back, unit = total_gpu - back_gpu, back_gpu, "gpu"
        else:
            back = sum(_num(b, CPU_TIME) for b in backward_nodes)
            # A module's CPU time covers the backward filed under it (older files: its children do)
            covered = max(_num(node, CPU_TIME), sum(_num(c, CPU_TIME) for c in node.children.values()))
            fwd = covered - back
            unit = "cpu"
        if fwd > 0 and back > 0:
            rows.append((back / fwd, path, fwd, back, unit))
    if not rows:
        return None
    rows.sort(key=lambda r: -r[0])
    return Advice(
        "backward",
        "modules by backward/forward time (backward usually costs about 2x forward; far more points at "
        "recomputation, atomics or an unfused backward)",
        [
            {
                "path": _show(path),
                "ratio": round(ratio, 2),
                f"forward_{unit}_ms": round(fwd / 1e6, 3),
                f"backward_{unit}_ms": round(back / 1e6, 3),
            }
            for ratio, path, fwd, back, unit in rows[:top]
        ],  # fmt: skip
    )


def _fusion(paths: list[tuple[tuple[str, ...], Node]], top: int) -> Advice | None:
    rows = [
        (path, calls, k, ns)
        for path, calls, k, ns in _op_calls(paths)
        if k / calls >= MANY_KERNELS and ns / k < SMALL_KERNEL_NS
    ]
    if not rows:
        return None
    rows.sort(key=lambda r: -r[2])
    return Advice(
        "fusion",
        f"ops launching {MANY_KERNELS}+ short kernels per call: fusion candidates (torch.compile fuses "
        "elementwise chains; foreach/fused optimizers do it for optimizer steps)",
        [
            {
                "path": _show(path),
                "calls": calls,
                "kernels_per_call": round(k / calls, 1),
                "avg_kernel_us": round(ns / k / 1e3, 2),
            }
            for path, calls, k, ns in rows[:top]
        ],  # fmt: skip
    )


def _copies(p: Profile, paths: list[tuple[tuple[str, ...], Node]], top: int) -> Advice | None:
    _, all_gpu = _kernels(p.root)
    copy_gpu = 0
    for _, node in paths:
        if node.type == KERNEL and re.search(r"copy|memcpy|memset", node.name, re.IGNORECASE):
            copy_gpu += _num(node, TIME)
    syncs = []
    for path, node in paths:
        if node.name in SYNC_OPS and not (len(path) > 1 and path[-2] in SYNC_OPS):
            ns = _num(node, CPU_TIME)
            calls = _num(node, "calls")
            if calls:
                syncs.append((ns, calls, path))
    syncs.sort(key=lambda r: -r[0])
    if not syncs and not copy_gpu:
        return None
    share = f"{copy_gpu / all_gpu:.1%} of GPU time is in copy kernels" if all_gpu else "no GPU time recorded"
    return Advice(
        "copies",
        f"{share}; ops that wait for the GPU (.item(), .nonzero(), .cpu()) stall the host's launches, "
        "top ones follow",
        [
            {"path": _show(path), "calls": calls, "cpu_ms": round(ns / 1e6, 3)}
            for ns, calls, path in syncs[:top]
        ],
    )


def render(advice: list[Advice], full_names: bool = False) -> str:
    """The advice as text: one headline each, then its evidence, a line per item; the frames of a
    path as ``deuteron view`` shows them (a C++ kernel short, or ``full_names`` demangled in full)."""
    if not advice:
        return (
            "advice: nothing to flag (no idle GPU, outlying backward, unfused ops, waits or hot lines found)"
        )
    lines = []
    for a in advice:
        lines.append(f"[{a.kind}] {a.title}")
        for item in a.evidence:
            numbers = ", ".join(
                f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in item.items() if k != "path"
            )
            lines.append(f"    {_shown_path(str(item['path']), full_names)}  ({numbers})")
    return "\n".join(lines)
