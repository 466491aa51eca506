"""Resident blocks and warps per SM for a kernel on a CUDA architecture, and what limits them.

The numbers follow NVIDIA's occupancy calculator: registers are allocated per warp in units of
256 from four 16K-register sub-partitions, shared memory per block is rounded to 128 bytes plus
1 KB the system reserves per block (sm_80 and newer).
"""

from __future__ import annotations

from dataclasses import dataclass

REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256
SUBPARTITIONS = 4
SHARED_UNIT = 128
SHARED_RESERVED_PER_BLOCK = 1024


@dataclass(frozen=True)
class ArchLimits:
    """One CUDA architecture's per-SM limits that occupancy depends on: resident warps and blocks,
    shared memory per SM and the most one block may take. Registers are alike on all of them."""

    max_warps: int
    max_blocks: int
    shared_per_sm: int
    shared_per_block: int


ARCH_LIMITS: dict[int, ArchLimits] = {
    80: ArchLimits(64, 32, 164 * 1024, 163 * 1024),
    86: ArchLimits(48, 16, 100 * 1024, 99 * 1024),
    87: ArchLimits(48, 16, 164 * 1024, 163 * 1024),
    89: ArchLimits(48, 24, 100 * 1024, 99 * 1024),
    90: ArchLimits(64, 32, 228 * 1024, 227 * 1024),
    100: ArchLimits(64, 32, 228 * 1024, 227 * 1024),
    103: ArchLimits(64, 32, 228 * 1024, 227 * 1024),
    120: ArchLimits(48, 32, 100 * 1024, 99 * 1024),
}


@dataclass(frozen=True)
class Occupancy:
    """How many blocks of one kernel fit on an SM, and which limit binds (``limiter``).

    ``blocks_by`` keeps each limit's own count, so the report shows how far the others are: fewer
    registers help only until the next limit binds. For AMD the compiler's estimate is the one entry.
    """

    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str  # "registers" | "shared memory" | "warps" | "blocks"
    blocks_by: dict[str, int]

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm

    def as_json(self) -> dict[str, object]:
        return {
            "blocks_per_sm": self.blocks_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "max_warps_per_sm": self.max_warps_per_sm,
            "fraction": round(self.fraction, 4),
            "limiter": self.limiter,
            "blocks_by": dict(self.blocks_by),
        }


def occupancy(arch: int, num_warps: int, registers: int, shared_bytes: int) -> Occupancy:
    limits = ARCH_LIMITS[arch]
    regs_per_warp = -(-max(registers, 1) * 32 // REGISTER_UNIT) * REGISTER_UNIT
    warps_by_regs = SUBPARTITIONS * ((REGISTERS_PER_SM // SUBPARTITIONS) // regs_per_warp)
    if shared_bytes > limits.shared_per_block:
        by_shared = 0
    else:
        per_block = -(-(shared_bytes + SHARED_RESERVED_PER_BLOCK) // SHARED_UNIT) * SHARED_UNIT
        by_shared = limits.shared_per_sm // per_block
    blocks_by = {
        "warps": limits.max_warps // num_warps,
        "blocks": limits.max_blocks,
        "registers": warps_by_regs // num_warps,
        "shared memory": by_shared,
    }
    # On a tie the hardware cap is named: using fewer registers or less shared memory would not help.
    limiter = min(blocks_by, key=lambda k: blocks_by[k])
    blocks = blocks_by[limiter]
    return Occupancy(blocks, blocks * num_warps, limits.max_warps, limiter, blocks_by)
