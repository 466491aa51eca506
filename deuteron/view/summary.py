"""The few lines a person reads before the tree: where the run's time went, at a glance.

A tree of a training step is hundreds of frames; the questions asked first are simpler: how long
the GPU was busy while the program trained, how the kernel time splits between forward, backward,
the optimizer and the collectives (``-c torch`` puts each backward kernel under a ``backward``
frame and the optimizer under ``optimizer.step``; NCCL's and RCCL's kernels are their own part,
since their time includes waiting for the other ranks), and which kernels cost most. Each line
says where its number comes from; a line whose facts the profile lacks is left out.

**Busy over the steps.** The profile's busy share runs from the process's first kernel to its
last, loading and compilation included; where the run's trace is beside the profile and has
steps (:mod:`deuteron.view.step_window`), the share over the steps comes first and the whole
process's is shown apart, labelled.

**Other threads.** A kernel launched by a thread that never opened a scope of its own (autograd's
backward threads, data-loader or library worker threads) is filed under the scope the starting
thread was in, inside a ``<other threads>`` frame (the collector names it:
``deuteron.collect.placement.OTHER_THREADS``); its share is said when it holds at least
:data:`OTHER_THREADS_SAID` of the kernel time or samples.
"""

from __future__ import annotations

from deuteron.model.metrics import CPU_TIME, TIME
from deuteron.model.names import display_name, is_mangled
from deuteron.model.trace import COMM_KERNEL
from deuteron.model.tree import KERNEL, Profile
from deuteron.view import processors
from deuteron.view.step_window import steps_busy_beside

OTHER_THREADS = "<other threads>"  # the collector's frame (deuteron.collect.placement.OTHER_THREADS)
OTHER_THREADS_SAID = 0.01
SAMPLES = "num_samples"
FORWARD, BACKWARD, OPTIMIZER, COLLECTIVES = "forward and other", "backward", "optimizer", "collectives"
PART_NAMES = {COLLECTIVES: "collectives (waits included)"}
STEP_FRAMES = ("step",)  # frames that mark training steps (besides optimizer.step (...))


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.2f} ms" if ns >= 1e5 else f"{ns / 1e3:,.1f} us"


def summary_lines(p: Profile, top: int = 3, full_names: bool = False, source: str | None = None) -> list[str]:
    """The summary of ``p`` (empty when it has no time); ``source``, the profile's path, finds the
    run's trace beside it for the GPU's busy share over the steps."""
    lines = _busy_lines(p, source)
    split = {FORWARD: 0.0, BACKWARD: 0.0, OPTIMIZER: 0.0, COLLECTIVES: 0.0}
    kernels: dict[str, float] = {}
    other = {TIME: 0.0, SAMPLES: 0.0}
    stack = [(p.root, FORWARD, False)]
    while stack:
        node, part, elsewhere = stack.pop()
        if node.name == "backward":
            part = BACKWARD
        elif node.name.startswith("optimizer.") and part != BACKWARD:
            part = OPTIMIZER
        elsewhere = elsewhere or node.name == OTHER_THREADS
        if node.type == KERNEL:  # its time with its scopes' (pl.scope children hold part of it)
            value = sum(_number(n.metrics.get(TIME)) for n in node.walk())
            split[COLLECTIVES if COMM_KERNEL.search(node.name) else part] += value
            kernels[node.name] = kernels.get(node.name, 0.0) + value
            if elsewhere:
                other[TIME] += value
                other[SAMPLES] += sum(_number(n.metrics.get(SAMPLES)) for n in node.walk())
            continue
        if elsewhere:
            other[SAMPLES] += _number(node.metrics.get(SAMPLES))
        stack.extend((child, part, elsewhere) for child in node.children.values())
    total = sum(split.values())
    if total > 0:
        if split[BACKWARD] or split[OPTIMIZER] or split[COLLECTIVES]:
            parts = ", ".join(
                f"{PART_NAMES.get(name, name)} {_ms(ns)} ({ns / total:.0%})"
                for name, ns in split.items()
                if ns or name != COLLECTIVES
            )
            lines.append(f"kernel time {_ms(total)}: {parts}")
        else:
            lines.append(f"kernel time {_ms(total)} in {len(kernels):,} kernels")
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
    lines.extend(_other_threads_line(p, total, other))
    return lines


def _busy_lines(p: Profile, source: str | None) -> list[str]:
    """The GPU's busy share: over the steps where the trace beside says them, then the whole
    process's window, labelled as such."""
    busy, window = p.metadata.get("gpu_busy_ns"), p.metadata.get("gpu_window_ns")
    if not isinstance(busy, int) or not isinstance(window, int) or window <= 0:
        return []
    process = f"{_ms(busy)} of the {_ms(window)} from its first kernel to its last ({busy / window:.1%})"
    included = "loading, compilation and warm-up included"
    steps = steps_busy_beside(source, p.metadata)
    if steps is not None and steps.window_ns > 0:
        n = f"{steps.steps:,} step{'' if steps.steps == 1 else 's'}"
        return [
            f"GPU busy {steps.busy_ns / steps.window_ns:.1%} over the {n} (the kernels launched in them, "
            f"from the trace beside the profile): {_ms(steps.busy_ns)} of {_ms(steps.window_ns)}",
            f"whole process: GPU busy {process}, {included}",
        ]
    hint = ""
    if any(n.name in STEP_FRAMES or n.name.startswith("optimizer.step (") for n in p.root.walk()):
        hint = "; the share over the training steps needs the run's trace beside the profile (--trace)"
    return [f"GPU busy {process}: the whole process, {included}{hint}"]


def _other_threads_line(p: Profile, kernel_ns: float, other: dict[str, float]) -> list[str]:
    """What ``<other threads>`` is, where it holds at least :data:`OTHER_THREADS_SAID` of the
    kernel time or of the PC samples."""
    samples = sum(_number(n.metrics.get(SAMPLES)) for n in p.root.walk())
    shares = []
    if kernel_ns > 0 and other[TIME] >= OTHER_THREADS_SAID * kernel_ns:
        shares.append(f"{other[TIME] / kernel_ns:.0%} of the kernel time")
    if samples > 0 and other[SAMPLES] >= OTHER_THREADS_SAID * samples:
        shares.append(f"{other[SAMPLES] / samples:.0%} of the PC samples")
    if not shares:
        return []
    return [
        f"{OTHER_THREADS} holds {' and '.join(shares)}: kernels launched by threads that never opened "
        "a scope of their own (autograd's backward threads, data-loader or library worker threads), "
        "filed under the scope the starting thread was in"
    ]


def unrelated(old: Profile, new: Profile) -> bool:
    """Whether two profiles share no frame name below ROOT (a diff would pair nothing)."""
    names_old = {n.name for n in old.root.walk()} - {old.root.name}
    names_new = {n.name for n in new.root.walk()} - {new.root.name}
    return bool(names_old and names_new and not names_old & names_new)
