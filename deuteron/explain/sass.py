"""SASS and resource usage from a cubin, with the CUDA tools the Triton wheel bundles.

``nvdisasm -c -gp`` prints each instruction under the PTX line it came from (the
``.nv_debug_ptx_txt`` line table); :mod:`.stages` maps PTX lines to source lines. We do not use
``nvdisasm -g`` (source lines straight from ``.debug_line``) because LLVM gives every line of a
multi-line inline-asm block its own, wrong, source line (the loads land 4 lines below their call).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from deuteron.explain.errors import ExplainError
from deuteron.triton.compiler import tools

_PTX_LINE_RE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')
_INSTR_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL_RE = re.compile(r"^\s*([.$\w]+):\s*(?://.*)?$")  # ``.L_x_3:``, a function's own name
# Opcodes after which control does not simply fall through to the next instruction: a basic block
# ends there (a predicated one too: the next instruction may be reached by one path only).
TERMINATORS = frozenset({"BRA", "BRX", "JMP", "JMX", "RET", "EXIT", "BREAK", "KILL", "BPT", "RTT"})
_RES_RE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")
TENSOR_CORE_OPS = (
    "HMMA",
    "HGMMA",
    "IMMA",
    "IGMMA",
    "QGMMA",
    "BMMA",
    "BGMMA",
    "DMMA",
    "OMMA",
    "QMMA",
    "UTCHMMA",
    "UTCQMMA",
    "UTCIMMA",
    "UTCOMMA",
    "UTCMMA",
)


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: its offset, its text and the PTX line it came from (None before the
    first line marker). The opcode is read from the text when asked: most are only counted."""

    offset: int
    text: str  # "LDG.E.128 R4, desc[UR10][R20.64]"
    ptx_line: int | None
    label: bool = False  # a label (a branch target, a function's start) comes just before it

    @property
    def opcode(self) -> str:
        words = self.text.split()
        if words and words[0].startswith("@"):  # predicate guard
            words = words[1:]
        return words[0] if words else ""

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]


@dataclass(frozen=True)
class Resources:
    """One kernel's ``cuobjdump -res-usage`` line: registers per thread, stack and local bytes per
    thread (both hold spills), and static shared bytes (Triton's shared memory is dynamic: see
    ``KernelAnalysis.shared_bytes``). For AMD: VGPRs and scratch bytes as ``stack``, the rest 0."""

    registers: int
    stack: int
    static_shared: int
    local: int


def run_tool(tool: str, args: list[str], cubin: bytes) -> str:
    """A CUDA tool's output on the cubin; ExplainError with its message when it fails."""
    code, out, err = tools.run_on_cubin(tool, args, cubin)
    if code != 0:
        raise ExplainError(f"{tool} failed on the cubin: {err.strip() or out.strip()}")
    return out


def disassemble(cubin: bytes) -> list[Instruction]:
    return parse_nvdisasm(run_tool("nvdisasm", ["-c", "-gp"], cubin))


def parse_nvdisasm(text: str) -> list[Instruction]:
    out: list[Instruction] = []
    ptx_line: int | None = None
    label = False
    for raw in text.splitlines():
        m = _PTX_LINE_RE.match(raw)
        if m:
            ptx_line = int(m.group(2))
            continue
        m = _INSTR_RE.match(raw)
        if m:
            out.append(Instruction(int(m.group(1), 16), m.group(2), ptx_line, label))
            label = False
        elif _LABEL_RE.match(raw):
            label = True
    return out


def basic_blocks(instrs: list[Instruction]) -> list[int]:
    """Each instruction's basic block, numbered in order: a block starts at a label (every branch
    target has one in ``nvdisasm``'s output) and after a branch, return or exit. Used to place an
    instruction without a source line next to its neighbours (see :mod:`.pc_lines`): within one
    block, every instruction runs whenever the first does."""
    out: list[int] = []
    block = 0
    for i, ins in enumerate(instrs):
        if i and (ins.label or instrs[i - 1].base in TERMINATORS):
            block += 1
        out.append(block)
    return out


def resources(cubin: bytes) -> Resources:
    return parse_res_usage(run_tool("cuobjdump", ["-res-usage"], cubin))


def parse_res_usage(text: str) -> Resources:
    m = _RES_RE.search(text)
    if m is None:
        raise ExplainError("cuobjdump -res-usage printed no resource line for the kernel")
    reg, stack, shared, local = (int(g) for g in m.groups())
    return Resources(reg, stack, shared, local)


def global_access_bits(instr: Instruction) -> int | None:
    """Width of one LDG/STG in bits (``LDG.E.128`` is 128, plain ``LDG.E`` 32, ``.U8`` 8)."""
    parts = instr.opcode.split(".")
    if parts[0] not in ("LDG", "STG"):
        return None
    for p in parts[1:]:
        if p in ("128", "64", "32"):
            return int(p)
        if p in ("U8", "S8"):
            return 8
        if p in ("U16", "S16"):
            return 16
    return 32


def instruction_mix(instrs: list[Instruction]) -> dict[str, object]:
    """Counts a kernel author reads first: tensor cores, memory by kind and width, spills."""
    bases = Counter(i.base for i in instrs)
    loads = Counter(global_access_bits(i) for i in instrs if i.base == "LDG")
    stores = Counter(global_access_bits(i) for i in instrs if i.base == "STG")
    tensor = {op: bases[op] for op in TENSOR_CORE_OPS if bases[op]}
    return {
        "total": len(instrs),
        "tensor_core": sum(tensor.values()),
        "tensor_core_ops": tensor,
        "global_loads": {f"{k}-bit": v for k, v in sorted(loads.items(), key=lambda kv: kv[0] or 0)},
        "global_stores": {f"{k}-bit": v for k, v in sorted(stores.items(), key=lambda kv: kv[0] or 0)},
        "local_loads": bases["LDL"],
        "local_stores": bases["STL"],
        "shared_loads": bases["LDS"] + bases["LDSM"],
        "shared_stores": bases["STS"] + bases["STSM"],
        "async_copies": bases["LDGSTS"] + bases["UTMALDG"] + bases["UBLKCP"],
        "tma": bases["UTMALDG"] + bases["UTMASTG"],
        "barriers": bases["BAR"] + bases["SYNCS"],
    }


_SPILL_RE = re.compile(r"(\d+) bytes spill stores")


def ptxas_spill_stores(ptx: str, arch: int) -> int | None:
    """Spill-store bytes as ptxas itself counts them (call frames of noinline helpers excluded).

    Used only when the SASS has calls, since then local memory is not all spills. None when ptxas
    cannot say (it then falls back to the STL count).
    """
    result = tools.ptxas_verbose(ptx, arch)
    if result is None:
        return None
    code, text = result
    found = _SPILL_RE.findall(text)
    return sum(int(n) for n in found) if code == 0 and found else None
