"""The few lines a person reads before the tree: where the run's time went, at a glance.

A tree of a training step is hundreds of frames; the questions asked first are simpler: how long
the GPU was busy in the window it worked in, how the kernel time splits between forward, backward
and the optimizer (``-c torch`` puts each backward kernel under a ``backward`` frame and the
optimizer under ``optimizer.step``), and which kernels cost most. Each line says where its number
comes from; a line whose facts the profile lacks is left out.
"""

from __future__ import annotations

from deuteron.model.metrics import CPU_TIME, TIME
from deuteron.model.names import display_name, is_mangled
from deuteron.model.tree import KERNEL, Profile
from deuteron.view import processors


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.2f} ms" if ns >= 1e5 else f"{ns / 1e3:,.1f} us"


def summary_lines(p: Profile, top: int = 3, full_names: bool = False) -> list[str]:
    """The summary of ``p`` (empty when it has no time)."""
    lines: list[str] = []
    busy, window = p.metadata.get("gpu_busy_ns"), p.metadata.get("gpu_window_ns")
    if isinstance(busy, int) and isinstance(window, int) and window > 0:
        share = f"{busy / window:.1%}"
        lines.append(f"GPU busy {_ms(busy)} of the {_ms(window)} from its first kernel to its last ({share})")
    split = {"forward and other": 0.0, "backward": 0.0, "optimizer": 0.0}
    kernels: dict[str, float] = {}
    stack = [(p.root, "forward and other")]
    while stack:
        node, part = stack.pop()
        if node.name == "backward":
            part = "backward"
        elif node.name.startswith("optimizer.") and part != "backward":
            part = "optimizer"
        if node.type == KERNEL:  # its time with its scopes' (pl.scope children hold part of it)
            value = sum(_number(n.metrics.get(TIME)) for n in node.walk())
            split[part] += value
            kernels[node.name] = kernels.get(node.name, 0.0) + value
            continue
        stack.extend((child, part) for child in node.children.values())
    total = sum(split.values())
    if total > 0:
        if split["backward"] or split["optimizer"]:
            parts = ", ".join(f"{name} {_ms(ns)} ({ns / total:.0%})" for name, ns in split.items())
            lines.append(f"kernel time {_ms(total)}: {parts}")
        else:
            lines.append(f"kernel time {_ms(total)} in {len(kernels)} kernels")
        best = sorted(kernels.items(), key=lambda kv: -kv[1])[:top]
        shown = ", ".join(
            f"{display_name(name, full_names) if is_mangled(name) else name} {ns / total:.0%}"
            for name, ns in best
        )
        lines.append(f"top kernels: {shown}")
    else:
        cpu = _number(processors.inclusive(p).root.metrics.get(CPU_TIME))  # ROOT's, as the tree shows it
        if cpu > 0:
            lines.append(f"CPU time {_ms(cpu)}, the tree's total (no GPU kernels in this profile)")
    return lines


def unrelated(old: Profile, new: Profile) -> bool:
    """Whether two profiles share no frame name below ROOT (a diff would pair nothing)."""
    names_old = {n.name for n in old.root.walk()} - {old.root.name}
    names_new = {n.name for n in new.root.walk()} - {new.root.name}
    return bool(names_old and names_new and not names_old & names_new)
