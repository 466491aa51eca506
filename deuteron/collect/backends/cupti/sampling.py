"""PC sampling through CUPTI (``--sample``, Proton's ``mode="pcsampling"``): which instruction each
SM's warps were at, every 2^N cycles, and why they stalled.

The C side (``_sampling.c``) enables CUPTI's PC sampling in continuous mode and hands over, at each
drain, one row per (PC, stall reason) with its sample count. This module turns a drain into
:class:`KernelSamples`: per kernel function (and cubin), per PC, the samples in all and per stall
reason, in Proton's column names. Which source line a PC is, and where in the call tree a kernel's
samples go, are other modules' jobs (``deuteron.explain.pc_lines`` and the session).

Counting: CUPTI reports each stall reason twice, as ``..._stalled_X`` (every sample whose warp was
stalled on X, issued or not) and ``..._stalled_X_not_issued`` (the samples among those where the
warp issued nothing). Each sample has exactly one reason, so ``num_samples`` is the sum of the
first kind (measured: equal to CUPTI's ``totalSamples`` on an H200), and ``num_stalled_samples``
the sum of the second: the samples where the warp did not issue. Proton adds both kinds into its
``num_samples`` (double counting) and calls the first kind's sum ``num_stalled_samples``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from deuteron.collect.backends.port import BackendError

ROW = np.dtype(
    [
        ("crc", "<u8"),
        ("pc", "<u8"),
        ("function_index", "<u4"),
        ("correlation", "<u4"),
        ("name", "<u4"),
        ("stall", "<u4"),
        ("samples", "<u4"),
        ("context", "<u4"),
    ]
)
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
NOT_ISSUED = "_not_issued"
NUM_SAMPLES = "num_samples"
NUM_STALLED = "num_stalled_samples"
# CUPTI's reason words where Proton's column differs (Proton's "stalled_not_Selected" never matches
# CUPTI's lower-case name, so Proton drops those samples; Deuteron keeps them under the plain name).
PROTON_WORDS = {"no_instructions": "no_instruction"}
MIN_EXPONENT, MAX_EXPONENT = 5, 31  # CUPTI samples every 2^N cycles, N in [5, 31]
DEFAULT_INTERVAL = 1024  # cycles; Proton's PCSampling() default is 1000, which rounds here
PC_CAPACITY = 20_000  # PC records per GetData call (CUPTI hands out the rest in further calls)


def interval_exponent(interval: int) -> int:
    """The CUPTI period exponent nearest ``interval`` cycles (2^N, N in 5..31)."""
    if interval <= 0:
        raise BackendError(f"the sampling interval must be a positive number of cycles, not {interval}")
    low = int(math.floor(math.log2(interval)))
    nearest = low if interval - (1 << low) <= (1 << (low + 1)) - interval else low + 1
    return min(MAX_EXPONENT, max(MIN_EXPONENT, nearest))


@dataclass(frozen=True)
class SampleConfig:
    """What ``--sample`` asked for: the interval in cycles (rounded to CUPTI's powers of two)."""

    interval: int = DEFAULT_INTERVAL

    @property
    def exponent(self) -> int:
        return interval_exponent(self.interval)

    @property
    def cycles(self) -> int:
        return 1 << self.exponent


def stall_column(cupti_name: str) -> str | None:
    """Proton's column for one of CUPTI's stall reasons (``stalled_long_scoreboard``), None for
    CUPTI's counters that are not reasons (``smsp__pcsamp_sample_count``)."""
    if not cupti_name.startswith(STALL_PREFIX):
        return None
    word = cupti_name[len(STALL_PREFIX) :]
    word = word[: -len(NOT_ISSUED)] if word.endswith(NOT_ISSUED) else word
    return "stalled_" + PROTON_WORDS.get(word, word)


@dataclass
class KernelSamples:
    """One kernel function's samples in one drain, per PC (sorted): the samples in all, those whose
    warp issued nothing, and per stall column."""

    name: str
    crc: int
    pcs: np.ndarray
    samples: np.ndarray
    stalled: np.ndarray
    stalls: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return int(self.samples.sum())

    def merge(self, other: KernelSamples) -> KernelSamples:
        pcs = np.union1d(self.pcs, other.pcs)

        def spread(k: KernelSamples, values: np.ndarray) -> np.ndarray:
            out = np.zeros(len(pcs), dtype=np.int64)
            out[np.searchsorted(pcs, k.pcs)] = values
            return out

        stalls = {
            col: spread(self, self.stalls.get(col, np.zeros(len(self.pcs), np.int64)))
            + spread(other, other.stalls.get(col, np.zeros(len(other.pcs), np.int64)))
            for col in {*self.stalls, *other.stalls}
        }
        return KernelSamples(
            self.name,
            self.crc,
            pcs,
            spread(self, self.samples) + spread(other, other.samples),
            spread(self, self.stalled) + spread(other, other.stalled),
            stalls,
        )


@dataclass
class Drain:
    """One drain as the C side handed it over: rows, the function names they index, CUPTI's
    stall reasons (index, name), and CUPTI's counters (totals, dropped samples, full buffers)."""

    rows: bytes
    names: list[str]
    reasons: list[tuple[int, str]]
    counters: dict[str, int]

    def kernels(self) -> list[KernelSamples]:
        """The drain per kernel function and cubin, PCs summed over contexts."""
        if len(self.rows) % ROW.itemsize:
            raise BackendError(
                f"a PC sampling drain is damaged: {len(self.rows)} bytes is not a whole number of rows"
            )
        rows = np.frombuffer(self.rows, ROW) if self.rows else np.zeros(0, ROW)
        if len(rows) and int(rows["name"].max()) >= len(self.names):
            raise BackendError("a PC sampling drain is damaged: a row names a kernel the drain does not list")
        columns = {index: stall_column(name) for index, name in self.reasons}
        not_issued = {index for index, name in self.reasons if name.endswith(NOT_ISSUED)}
        out: list[KernelSamples] = []
        if not len(rows):
            return out
        keys = np.stack([rows["name"].astype(np.uint64), rows["crc"]], axis=1)
        for name_id, crc in np.unique(keys, axis=0):
            mine = rows[(rows["name"] == name_id) & (rows["crc"] == crc)]
            pcs, where = np.unique(mine["pc"], return_inverse=True)
            samples = np.zeros(len(pcs), np.int64)
            stalled = np.zeros(len(pcs), np.int64)
            stalls: dict[str, np.ndarray] = {}
            for stall in np.unique(mine["stall"]):
                column = columns.get(int(stall))
                if column is None:
                    continue
                pick = mine["stall"] == stall
                counts = np.bincount(where[pick], weights=mine["samples"][pick], minlength=len(pcs))
                counts = counts.astype(np.int64)
                if int(stall) in not_issued:
                    stalled += counts
                else:
                    samples += counts
                    stalls[column] = stalls.get(column, np.zeros(len(pcs), np.int64)) + counts
            out.append(KernelSamples(self.names[int(name_id)], int(crc), pcs, samples, stalled, stalls))
        return out

    def save(self, folder: Path, index: int, interval: int) -> None:
        """Keep this drain as a fixture (``DEUTERON_CUPTI_RECORD``), for replays without a GPU."""
        (folder / f"samples_{index:03d}.bin").write_bytes(self.rows)
        meta = {"names": self.names, "reasons": self.reasons, "counters": self.counters, "interval": interval}
        (folder / f"samples_{index:03d}.json").write_text(json.dumps(meta), encoding="utf-8")

    @classmethod
    def load(cls, meta_path: Path) -> tuple[Drain, int]:
        """A recorded drain and the interval it was sampled at."""
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        rows = meta_path.with_suffix(".bin").read_bytes()
        reasons = [(int(i), str(n)) for i, n in meta["reasons"]]
        return cls(rows, list(meta["names"]), reasons, dict(meta["counters"])), int(meta["interval"])


class Sampler:
    """CUPTI's PC sampling for one process: enabled at ``start`` on the current (or the device's
    primary) CUDA context, drained at flushes and at the end. Only the CUPTI backend drives it."""

    def __init__(self, config: SampleConfig) -> None:
        self.config = config
        self.version = 0
        self.reasons: list[tuple[int, str]] = []
        self._lib: Any = None
        self.stopped = False

    def start(self, cupti_path: str, device: int = 0) -> None:
        try:
            from deuteron.collect.backends.cupti import _sampling
        except ImportError as exc:
            raise BackendError(
                f"PC sampling needs the native sampling shim, which is not built ({exc})"
            ) from None
        try:
            self.version = int(_sampling.load(cupti_path))
            hardware = int(os.environ.get("DEUTERON_SAMPLE_BUFFER_MB", "0")) << 20  # 0: CUPTI's 512 MB
            _sampling.enable(self.config.exponent, PC_CAPACITY, hardware, 0, device, False)
        except (OSError, _sampling.SamplingError) as exc:
            raise BackendError(f"PC sampling could not start: {exc}") from None
        self._lib = _sampling
        self.reasons = [(int(i), str(n)) for i, n in _sampling.stall_reasons()]

    def drain(self, final: bool) -> Drain:
        if self._lib is None or self.stopped:
            return Drain(b"", [], self.reasons, {})
        try:
            rows, names, counters = self._lib.drain(final)
        except self._lib.SamplingError as exc:
            raise BackendError(f"PC sampling failed: {exc}") from None
        self.stopped = final
        return Drain(rows, list(names), self.reasons, dict(counters))

    def crc(self, cubin: bytes) -> int | None:
        """CUPTI's CRC of a cubin (what each sample names its module by), also after the final
        drain (libcupti stays loaded); None when sampling never started."""
        return int(self._lib.cubin_crc(cubin)) if self._lib is not None else None


def sampling_device(visible: int) -> int:
    """The device whose context is sampled when none is current at start: ``DEUTERON_SAMPLE_DEVICE``,
    else ``LOCAL_RANK`` under a launcher (one rank per GPU), else 0; an index past the ``visible``
    devices (a launcher that gives each rank one GPU by ``CUDA_VISIBLE_DEVICES``) means device 0."""
    for env in ("DEUTERON_SAMPLE_DEVICE", "LOCAL_RANK"):
        value = os.environ.get(env, "")
        if value.isdigit():
            return int(value) if int(value) < visible else 0
    return 0
