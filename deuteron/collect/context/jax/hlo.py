"""What a compiled XLA module says about its GPU kernels, read from its optimized HLO text.

XLA:GPU names each kernel after the HLO instruction that launches it (``%gemm_fusion_dot.17``
launches ``gemm_fusion_dot_17``; ``.`` and ``-`` become ``_``), and every instruction carries the
JAX ``op_name`` it came from: ``jit(train_step)/transpose(jvp(encoder))/layers.0/attn/q/dot_general``
is the primitive ``dot_general`` in scope ``encoder/layers.0/attn/q`` of ``train_step``, in the
backward pass (``transpose(jvp(...))``). This module turns that text into a small table; it imports
nothing (no JAX), so recorded tables replay anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OPENERS = 4  # an execution's first kernel comes from one of its schedule's first instructions
BACKWARD = "backward"  # the frame that holds a scope's backward-pass work (as for torch modules)
COMPILE = "compile"  # the frame of kernels XLA runs while compiling (autotuning)

_COMPUTATION = re.compile(r"^(ENTRY\s+)?%([^\s(]+)\s*\(.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%([^\s=]+)\s*=\s*(.*)$")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_WRAPPER = re.compile(r"^([A-Za-z_][\w]*)\((.*)\)$")
# Instructions that never launch a kernel of their own.
_NO_KERNEL = frozenset(
    {
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "after-all",
        "partition-id",
        "replica-id",
    }
)


_NUMBERED = re.compile(r"[._]\d+$")


def family(name: str) -> str:
    """A fusion's kind without its number: ``loop_add_fusion.3`` and ``loop_add_fusion_5`` are
    both ``loop_add_fusion``."""
    return _NUMBERED.sub("", name)


def kernel_name(instruction: str) -> str:
    """The name XLA:GPU gives the kernel of an HLO instruction."""
    return instruction.replace(".", "_").replace("-", "_")


@dataclass(frozen=True)
class Instruction:
    """One HLO instruction that may launch a kernel: only what placing its kernel needs.

    Frozen and plain strings, so an :class:`Executable`'s table is written with a recorded run and
    read back (:meth:`Executable.from_table`) where JAX is not installed.
    """

    name: str  # as in the HLO text, e.g. ``gemm_fusion_dot.17``
    opcode: str  # fusion, custom-call, copy, ...
    op_name: str  # the JAX op_name metadata ("" when none)
    position: int  # order in its computation's schedule


@dataclass
class Executable:
    """One compiled module: its name and the instructions that may launch kernels, in schedule
    order."""

    module: str  # HloModule name, e.g. ``jit_train_step``
    instructions: list[Instruction] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)  # [begin, end) of each while loop's steps
    by_kernel: dict[str, Instruction] = field(default_factory=dict)  # first instruction of each name
    _first: dict[str, int] = field(default_factory=dict, repr=False)
    _at: dict[str, list[int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._kernels = [kernel_name(ins.name) for ins in self.instructions]
        # names an execution can start with: the kernels of its schedule's first few fusions and
        # custom calls (other instructions seldom launch one)
        pairs = zip(self._kernels, self.instructions, strict=True)
        launching = [k for k, ins in pairs if ins.opcode in ("fusion", "custom-call")]
        self.openers = frozenset(launching[:OPENERS] or self._kernels[:OPENERS])
        self._fusion = [ins.opcode == "fusion" for ins in self.instructions]
        for index, ins in enumerate(self.instructions):
            name = self._kernels[index]
            self.by_kernel.setdefault(name, ins)
            self._first.setdefault(name, index)
            self._at.setdefault(name, []).append(index)

    @property
    def function(self) -> str:
        """The jitted function's name: ``jit(train_step)`` in the op names, else the module's."""
        for ins in self.instructions:
            head = ins.op_name.split("/", 1)[0]
            m = _WRAPPER.match(head)
            if m and m.group(1) in ("jit", "pjit"):
                return m.group(2)
        name = self.module
        return name[4:] if name.startswith("jit_") else name

    def align(self, at: int, kernel: str) -> tuple[int, int | None] | None:
        """The next step of matching one execution's kernels, in launch order, to the schedule:
        given the index the next kernel should come from, (the index after this kernel, the
        instruction it came from), or None when this kernel cannot belong to this execution.

        XLA reuses one kernel for identical fusions: layer 1's softmax (``%triton_softmax.10``)
        may launch layer 0's ``triton_softmax_14``. So a kernel named after an instruction already
        passed is taken as the next instruction's when that is a fusion of the same kind. A kernel
        no instruction names (a library kernel of a custom call) stays with the custom call before
        it, without moving on.
        """
        n = len(self.instructions)
        first = self._first.get(kernel)
        if first is None:
            return self._library_kernel(at, kernel)
        if at < n and self._kernels[at] == kernel:
            return at + 1, at
        if first < at < n and self._fusion[at] and family(self._kernels[at]) == family(kernel):
            return at + 1, at  # a reused kernel: an earlier fusion's, of the same kind

        for index in self._at[kernel]:
            if index >= at:
                return index + 1, index
        for begin, end in self.loops:  # the next iteration of a loop the execution is in
            if begin < at <= end:
                for index in self._at[kernel]:
                    if begin <= index < end:
                        return index + 1, index
        return None

    def _library_kernel(self, at: int, kernel: str) -> tuple[int, int | None] | None:
        """A kernel no instruction names: a cuDNN or cuBLAS kernel of a custom call. It opens the
        next custom call, or is one more kernel of the one before (a split-K reduction, a
        convolution's main kernel after its set-up); cuDNN's ``fprop``/``dgrad``/``wgrad`` names
        pick the forward, backward-input or backward-filter convolution."""
        n = len(self.instructions)
        here = at if at < n and self.instructions[at].opcode == "custom-call" else None
        before = at - 1 if 0 < at <= n and self.instructions[at - 1].opcode == "custom-call" else None
        if here is None and before is None:
            return None
        if here is None:
            return at, before
        if before is not None:
            trailing = "splitkreduce" in kernel.lower() or "reduce_kernel" in kernel.lower()
            stays = trailing or not _fits(kernel, self.instructions[here].name)
            if stays and _fits(kernel, self.instructions[before].name):
                return at, before
        return at + 1, here

    def table(self) -> dict[str, object]:
        return {
            "module": self.module,
            "instructions": [[i.name, i.opcode, i.op_name, i.position] for i in self.instructions],
            "loops": [list(loop) for loop in self.loops],
        }

    @classmethod
    def from_table(cls, table: dict[str, object]) -> Executable:
        rows = table["instructions"]
        assert isinstance(rows, list)
        loops = table.get("loops", [])
        assert isinstance(loops, list)
        return cls(
            str(table["module"]),
            [Instruction(str(a), str(b), str(c), int(d)) for a, b, c, d in rows],
            loops=[(int(x), int(y)) for x, y in loops],
        )


def _fits(kernel: str, instruction: str) -> bool:
    """Whether a library kernel can be a custom call's: cuDNN names its convolution kernels by
    pass (``fprop``, ``dgrad``, ``wgrad``); XLA names the calls ``cudnn-conv``,
    ``cudnn-conv-bw-input``, ``cudnn-conv-bw-filter``."""
    k = kernel.lower()
    if "wgrad" in k:
        return "bw-filter" in instruction
    if "dgrad" in k:
        return "bw-input" in instruction
    if "fprop" in k:
        return "cudnn-conv" in instruction and "bw-" not in instruction
    return True


def _opcode(rest: str) -> str:
    """The opcode after an instruction's ``=``: skip the shape (a tuple shape has spaces)."""
    end = rest.find(" ")
    if rest.startswith("("):
        depth = 0
        for pos, ch in enumerate(rest):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                end = pos + 1
                break
    if end < 0:
        return ""
    return rest[end:].lstrip().split("(", 1)[0].strip()


_CONTROL = re.compile(r"\b(?:condition|body|to_apply|true_computation|false_computation|calls)=%([^\s,}]+)")
_BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")
_STEPS = ("while", "call", "conditional", "async-start")  # run other computations in their place


def _called(opcode: str, rest: str) -> list[str]:
    """The computations a control-flow instruction runs where it stands (a while loop: its
    condition, then its body)."""
    if opcode not in _STEPS:
        return []
    names = _CONTROL.findall(rest)
    if opcode == "while":  # the text may give body= first; the condition runs first
        cond = re.search(r"\bcondition=%([^\s,}]+)", rest)
        names = ([cond.group(1)] if cond else []) + [n for n in names if not cond or n != cond.group(1)]
    branches = _BRANCHES.search(rest)
    if branches:
        names += [b.strip().lstrip("%") for b in branches.group(1).split(",") if b.strip()]
    return names


def parse_module(text: str) -> Executable:
    """The instructions of an optimized HLO module that can launch kernels, in the order they run:
    the entry computation's schedule, with each loop's, call's or branch's computation in its
    place (fusion bodies and reducers run inside their kernels and are left out)."""
    first = text.split("\n", 1)[0]
    module = first.split()[1].rstrip(",") if first.startswith("HloModule") and len(first.split()) > 1 else "?"
    computations: dict[str, list[tuple[str, str, str, list[str]]]] = {}
    current: list[tuple[str, str, str, list[str]]] | None = None
    entry: str | None = None
    for line in text.splitlines():
        head = _COMPUTATION.match(line)
        if head:
            current = computations.setdefault(head.group(2), [])
            if head.group(1):
                entry = head.group(2)
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is None:
            continue
        m = _INSTRUCTION.match(line)
        if not m:
            continue
        name, rest = m.group(1), m.group(2)
        opcode = _opcode(rest)
        op = _OP_NAME.search(rest)
        current.append((name, opcode, op.group(1).split(";", 1)[0] if op else "", _called(opcode, rest)))
    instructions: list[Instruction] = []
    loops: list[tuple[int, int]] = []

    def emit(comp: str, inside: frozenset[str]) -> None:
        for pos, (name, opcode, op_name, called) in enumerate(computations.get(comp, [])):
            if called:
                begin = len(instructions)
                for c in called:
                    if c in computations and c not in inside:
                        emit(c, inside | {c})
                if opcode == "while" and len(instructions) > begin:
                    loops.append((begin, len(instructions)))
                continue
            if opcode not in _NO_KERNEL:
                instructions.append(Instruction(name, opcode, op_name, pos))

    if entry is not None:
        emit(entry, frozenset({entry}))
    return Executable(module, instructions, loops=loops)


def _segments(op_name: str) -> list[str]:
    """``a/transpose(jvp(b/c))/d`` -> ``["a", "transpose(jvp(b/c))", "d"]`` (slashes inside
    parentheses stay)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(op_name):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "/" and depth == 0:
            out.append(op_name[start:i])
            start = i + 1
    out.append(op_name[start:])
    return [s for s in out if s]


def _unwrap(segment: str) -> tuple[list[str], bool]:
    """One segment's scope names and whether it is backward work: ``transpose(jvp(encoder))`` ->
    (["encoder"], True); ``jit(inner)`` -> (["inner (jit)"], False); ``jvp()`` -> ([], False)."""
    backward = False
    names: list[str] = []
    s = segment
    while True:
        m = _WRAPPER.match(s)
        if not m:
            break
        kind, inner = m.group(1), m.group(2)
        if kind == "transpose":
            backward = True
        elif kind in ("jit", "pjit"):
            names.append(f"{inner} (jit)")
            return names, backward
        s = inner
    if s:
        names.extend(_segments(s) if "/" in s else [s])
    return names, backward


def frames(op_name: str, function: str) -> list[str]:
    """The frames of an instruction below its function: scopes, ``backward`` when the work is the
    backward pass, then the primitive. ``jit(f)/transpose(jvp(mlp))/layer1/dot_general`` ->
    ``["mlp", "layer1", "backward", "dot_general"]``."""
    parts = _segments(op_name)
    if parts:
        m = _WRAPPER.match(parts[0])
        if m and m.group(1) in ("jit", "pjit") and m.group(2) == function:
            parts = parts[1:]
    if not parts:
        return []
    scopes: list[str] = []
    backward = False
    for seg in parts[:-1]:
        names, bwd = _unwrap(seg)
        scopes.extend(names)
        backward = backward or bwd
    last, bwd = _unwrap(parts[-1])
    backward = backward or bwd
    primitive = last[-1] if last else parts[-1]
    scopes.extend(last[:-1])
    return [*scopes, *([BACKWARD] if backward else []), primitive]
