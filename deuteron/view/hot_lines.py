"""Where sampled kernels spend their time, line by line, and what to change: the ``lines`` analysis
of ``deuteron view --advise`` and of ``deuteron explain --profile``.

A sampled profile (``deuteron run --sample``) has, under each kernel, one ``file:line@kernel``
frame per source line with its PC samples and stall reasons (see ``collect/samples.py``). Here a
kernel's lines are summed over every place it ran; a kernel is *hot* when it holds at least
:data:`HOT_KERNEL_SHARE` of the run's samples, a line when it holds :data:`HOT_LINE_SHARE` of its
kernel's; advice is given only with at least :data:`MIN_SAMPLES` samples behind the kernel, and a
stall is named as a line's cause only when it holds :data:`DOMINANT_STALL_SHARE` of the line's
samples. The advice per stall reason is NVIDIA's meaning of the reason (Nsight Compute's
"Warp Stall Reasons") put in Triton's terms.

**Kernels without lines.** A kernel whose samples have no source line (a library's kernel, one
built without line info, or any kernel of Proton's own PC-sampling file, which keeps only kernel
totals) still has its stall columns: :func:`kernel_stalls` names a hot one's dominant stall (at
least :data:`DOMINANT_STALL_SHARE` of its samples) and what to change. There a kernel is any frame
with samples of its own or under source-line frames: Proton's files mark no frame as a kernel.
Shares are of the stall columns' sum, which counts each sample once in both files (Proton's
``num_samples`` counts each twice: see ``deuteron.collect.backends.cupti.sampling``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from deuteron.model.names import parse_source_frame
from deuteron.model.tree import KERNEL, Node, Profile

SAMPLES = "num_samples"
NOT_ISSUED = "num_stalled_samples"
MIN_SAMPLES = 1000  # fewer samples behind a kernel: too thin to advise on
HOT_KERNEL_SHARE = 0.05
HOT_LINE_SHARE = 0.10
DOMINANT_STALL_SHARE = 0.30

# What each stall means and what to try, per CUPTI reason (Proton's column names).
STALL_ADVICE = {
    "stalled_long_scoreboard": (
        "waits for a global or local memory load whose result it uses (the wait shows at the first use, "
        "so the load may be on a line above)",
        "make the loads contiguous and vectorized (offsets that grow along the last axis; tl.multiple_of / "
        "tl.max_contiguous hints), prefetch with more num_stages, or keep more programs in flight; an "
        "indexed gather (ptr + idx) cannot coalesce: sort or block the indices",
    ),
    "stalled_mio_throttle": (
        "waits because the memory-input/output queue is full: shared-memory instructions or special "
        "functions (tl.sqrt, tl.exp, division) issue faster than the unit retires them",
        "issue fewer of them: cheaper math (multiply by a reciprocal, tl.math.rsqrt, fewer "
        "transcendentals per element) or fewer shared-memory round trips",
    ),
    "stalled_math_pipe_throttle": (
        "waits for an arithmetic pipe (FP32, FP64 or tensor cores) that is saturated: the line is compute "
        "bound",
        "do less arithmetic or cheaper arithmetic (bf16/fp16 inputs, tl.dot with tf32), or overlap it "
        "with memory work",
    ),
    "stalled_short_scoreboard": (
        "waits for shared memory or a special-function result (tl.sqrt, tl.exp)",
        "avoid shared-memory bank conflicts and layout conversions (explain's convert_layout notes), "
        "or use fewer special functions",
    ),
    "stalled_wait": (
        "waits on a fixed-latency dependency: each instruction needs the one before",
        "give each thread independent work to interleave (a larger BLOCK per program, or unrolled "
        "independent accumulators)",
    ),
    "stalled_barrier": (
        "waits at a barrier for the other warps of its program (reductions, layout conversions, "
        "tl.debug_barrier)",
        "use fewer warps per program (num_warps) or avoid cross-warp reductions in the loop",
    ),
    "stalled_lg_throttle": (
        "waits because too many global/local memory instructions are outstanding",
        "use fewer, wider accesses (vectorized loads) and remove local-memory spills",
    ),
    "stalled_drain": ("waits for its stores to drain before exiting", "usually small; store less at the end"),
    "stalled_membar": (
        "waits at a memory barrier (a fence: atomics with acquire or release semantics, tl.debug_barrier)",
        "use relaxed atomics (sem='relaxed') where no ordering is needed, and fewer fences",
    ),
    "stalled_tex_throttle": (
        "waits because the texture (L1TEX) pipe is full: too many of its memory instructions in flight",
        "use fewer, wider loads (vectorized), or spread them among more arithmetic",
    ),
    "stalled_imc_miss": (
        "waits for a constant-cache miss",
        "read fewer distinct scalar arguments per program",
    ),
    "stalled_no_instruction": (
        "waits for instructions to be fetched (instruction cache misses, or after a branch)",
        "make the loop body smaller or avoid unrolling huge static loops",
    ),
    "stalled_branch_resolving": ("waits for a branch to resolve", "replace divergent branches with tl.where"),
    "stalled_not_selected": (
        "was ready but another warp was picked (the SM is issue bound)",
        "only fewer instructions help here",
    ),
    "stalled_selected": ("issued an instruction (no stall)", "only fewer instructions help here"),
}


@dataclass
class SampledLine:
    """One source line of one kernel, summed over every place the kernel ran."""

    file: str
    line: int
    samples: int = 0
    not_issued: int = 0
    stalls: dict[str, int] = field(default_factory=dict)

    def dominant(self) -> tuple[str, int] | None:
        if not self.stalls:
            return None
        name = max(self.stalls, key=lambda k: self.stalls[k])
        return name, self.stalls[name]


@dataclass
class SampledKernel:
    """One kernel's samples: its total (lines and the PCs without one), its lines, and its stall
    columns summed over all of them."""

    name: str
    samples: int = 0
    lines: dict[tuple[str, int], SampledLine] = field(default_factory=dict)
    stalls: dict[str, int] = field(default_factory=dict)

    def ranked(self) -> list[SampledLine]:
        return sorted(self.lines.values(), key=lambda ln: -ln.samples)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


def stall_word(metric: str) -> str | None:
    """``stalled_mio_throttle`` for a stall column (Proton's ``stalled_not_Selected`` too), None for
    any other metric."""
    return metric.lower() if metric.startswith("stalled_") else None


def _add_stalls(into: dict[str, int], metrics: dict[str, Any]) -> None:
    for metric, value in metrics.items():
        word = stall_word(metric)
        if word is not None and _int(value):
            into[word] = into.get(word, 0) + _int(value)


def _is_kernel(node: Node) -> bool:
    """A kernel frame: typed so (Deuteron's files), or, in Proton's (every frame a function), a
    frame that is no source line and holds samples itself or has source-line frames with them."""
    if node.type == KERNEL:
        return True
    if parse_source_frame(node.name) is not None:
        return False
    if SAMPLES in node.metrics and _int(node.metrics[SAMPLES]):
        return True
    return any(SAMPLES in c.metrics and parse_source_frame(c.name) for c in node.children.values())


def sampled_kernels(profile: Profile) -> dict[str, SampledKernel]:
    """Every kernel with PC samples, its lines summed over the places it ran (tree values are
    exclusive: a kernel node holds the samples of its PCs without a line)."""
    out: dict[str, SampledKernel] = {}
    stack = list(profile.root.children.values())
    while stack:
        node = stack.pop()
        if not _is_kernel(node):
            stack.extend(node.children.values())
            continue
        own = _int(node.metrics.get(SAMPLES))
        below = list(node.children.values())
        if not own and not any(SAMPLES in c.metrics for c in below):
            continue
        kernel = out.setdefault(node.name, SampledKernel(node.name))
        kernel.samples += own
        _add_stalls(kernel.stalls, node.metrics)
        for child in below:
            # A line's samples with those of the callees inlined into it (frames below the line:
            # ``tl.sum (standard.py:314)``), so the line holds everything its code cost.
            place = parse_source_frame(child.name)
            key = (place[0], place[1]) if place else None
            line = kernel.lines.setdefault(key, SampledLine(*key)) if key else None
            for part in child.walk():
                n = _int(part.metrics.get(SAMPLES))
                kernel.samples += n
                _add_stalls(kernel.stalls, part.metrics)
                if line is not None and n:
                    line.samples += n
                    line.not_issued += _int(part.metrics.get(NOT_ISSUED))
                    _add_stalls(line.stalls, part.metrics)
            if key is not None and line is not None and not line.samples:
                del kernel.lines[key]
    return out


@dataclass
class LineAdvice:
    """The advice for one hot line: the evidence (samples, shares, the stall) and the change."""

    kernel: str
    file: str
    line: int
    samples: int
    share: float  # of the kernel's samples
    stall: str | None
    stall_share: float
    meaning: str
    change: str
    lints: list[str] = field(default_factory=list)  # explain's findings on the same line

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "share": round(self.share, 4), "stall_share": round(self.stall_share, 4)}

    def sentence(self) -> str:
        where = f"line {self.line}"
        text = f"{where} holds {self.share:.0%} of {self.kernel}'s samples"
        if self.stall is None:
            return text + f", no stall reason above {DOMINANT_STALL_SHARE:.0%} of them"
        word = self.stall.removeprefix("stalled_")
        return f"{text}, {self.stall_share:.0%} of them {word}: it {self.meaning}; try: {self.change}"


def hot_lines(profile: Profile, top: int = 5) -> tuple[list[tuple[SampledKernel, list[LineAdvice]]], int]:
    """The hot kernels (most samples first, at most ``top``) with their hot lines' advice, and the
    run's samples in all. Kernels below the thresholds are left out (see the module's text)."""
    kernels = sampled_kernels(profile)
    total = sum(k.samples for k in kernels.values())
    out = []
    for kernel in sorted(kernels.values(), key=lambda k: -k.samples)[:top]:
        if kernel.samples < MIN_SAMPLES or kernel.samples < HOT_KERNEL_SHARE * total or not kernel.lines:
            continue
        advice = []
        for line in kernel.ranked():
            share = line.samples / kernel.samples
            if share < HOT_LINE_SHARE:
                break
            found = line.dominant()
            stall = found[0] if found and found[1] >= DOMINANT_STALL_SHARE * line.samples else None
            meaning, change = STALL_ADVICE.get(stall or "", ("", ""))
            advice.append(
                LineAdvice(
                    kernel.name,
                    line.file,
                    line.line,
                    line.samples,
                    share,
                    stall,
                    found[1] / line.samples if stall and found else 0.0,
                    meaning,
                    change,
                )
            )
        if advice:
            out.append((kernel, advice))
    return out, total


@dataclass
class KernelStall:
    """The advice for one hot kernel without source lines: its samples (the stall columns' sum),
    its share of the run's, its dominant stall and that stall's share, and the change."""

    kernel: str
    samples: int
    share: float  # of the run's samples
    stall: str
    stall_share: float  # of the kernel's samples
    meaning: str
    change: str
    stalls: list[tuple[str, int]]  # the kernel's stalls holding at least HOT_LINE_SHARE, most first

    def sentence(self) -> str:
        word = self.stall.removeprefix("stalled_")
        text = f"{self.stall_share:.0%} of its samples {word}"
        if self.meaning:
            text += f": it {self.meaning}; try: {self.change}"
        return text


def kernel_stalls(profile: Profile, top: int = 5) -> tuple[list[KernelStall], int]:
    """The hot kernels without source lines whose samples one stall dominates (most samples first,
    at most ``top``), and the run's samples in all; the thresholds are :func:`hot_lines`' (see the
    module)."""
    kernels = sampled_kernels(profile)
    total = sum(k.samples for k in kernels.values())
    out = []
    for kernel in sorted(kernels.values(), key=lambda k: -k.samples)[:top]:
        counted = sum(kernel.stalls.values())
        if kernel.lines or not counted or kernel.samples < HOT_KERNEL_SHARE * total:
            continue
        if counted < MIN_SAMPLES:
            continue
        stall, n = max(kernel.stalls.items(), key=lambda kv: kv[1])
        if n < DOMINANT_STALL_SHARE * counted:
            continue
        meaning, change = STALL_ADVICE.get(stall, ("", ""))
        ranked = sorted(kernel.stalls.items(), key=lambda kv: -kv[1])
        shown = [(word, v) for word, v in ranked if v >= HOT_LINE_SHARE * counted]
        share = kernel.samples / total
        out.append(KernelStall(kernel.name, counted, share, stall, n / counted, meaning, change, shown))
    return out, total
