"""From drains of PC samples to rows per kernel function: each sampled PC's source line found in the
kernel's cubin, the samples summed per line, and every PC's samples kept for the file's metadata.

The CUPTI backend owns one :class:`SampleCollector` when ``--sample`` is on and hands its rows to
each session (``Recorder.file_samples``), which places them under the kernel's nodes. Kernels
are matched to their cubins by CUPTI's CRC: the cubins of the Triton kernels alive in the process
are found by name (``deuteron.triton.runtime.cubins``), and a replay brings its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from deuteron.collect.backends.cupti.sampling import (
    NUM_SAMPLES,
    NUM_STALLED,
    Drain,
    KernelSamples,
    SampleConfig,
    Sampler,
    sampling_device,
)
from deuteron.collect.backends.port import BackendError
from deuteron.explain.pc_lines import UNPLACED, LineTable, line_rows
from deuteron.model.intra import ScopeRow
from deuteron.triton.runtime.cubins import KernelAsm, compiled_kernels

PCS_KEPT = 512  # the hottest PCs of a kernel with lines kept in the metadata (all are summed in lines)
PCS_WITHOUT_LINES = 8  # and of a kernel without (a torch or cuBLAS kernel: its samples are on its node)


class SampleCollector:
    """PC sampling for the CUPTI backend: drains the sampler, finds line tables, makes the rows,
    and keeps per-PC totals for the file. ``asm`` replaces the process's kernels in a replay."""

    def __init__(self, config: SampleConfig, record_dir: Path | None = None) -> None:
        self.config = config
        self.sampler = Sampler(config)
        self.record_dir = record_dir
        self.tables: dict[int, LineTable] = {}  # by CUPTI's cubin CRC
        self.asm: dict[int, KernelAsm] = {}
        self.kernels: dict[tuple[str, int], KernelSamples] = {}
        self.counters: dict[str, int] = {}
        self.drains = 0
        self.unresolved: set[str] = set()
        self.seconds = {"cupti": 0.0, "lines": 0.0}  # drains' time in CUPTI, and here
        self.error: str | None = None  # why the last drain failed: the file says it, with what came before

    def start(self, cupti_path: str, visible: int) -> None:
        self.sampler.start(cupti_path, sampling_device(visible))

    def collect(self, final: bool) -> dict[str, list[ScopeRow]]:
        began = time.perf_counter()
        try:
            drain = self.sampler.drain(final)
        except BackendError as exc:
            if not final:
                raise
            self.error = str(exc)  # the file keeps the samples of earlier drains, and says why
            warnings.warn(f"deuteron: {exc}; no PC samples after the last drain", stacklevel=4)
            return {}
        self.seconds["cupti"] += time.perf_counter() - began
        if self.record_dir is not None and drain.rows:
            drain.save(self.record_dir, self.drains, self.config.interval)
        began = time.perf_counter()
        rows = self.rows(drain)
        self.seconds["lines"] += time.perf_counter() - began
        if self.record_dir is not None and final:
            self.save_asm(self.record_dir)
        return rows

    def rows(self, drain: Drain) -> dict[str, list[ScopeRow]]:
        """One drain's rows per kernel function, lines resolved (the replay's entry point too)."""
        self.drains += 1
        for counter, value in drain.counters.items():
            if isinstance(value, int) and counter != "correlation":
                self.counters[counter] = self.counters.get(counter, 0) + value
        kernels = drain.kernels()
        self._find_tables(kernels)
        out: dict[str, list[ScopeRow]] = {}
        for ks in kernels:
            key = (ks.name, ks.crc)
            known = self.kernels.get(key)
            self.kernels[key] = ks if known is None else known.merge(ks)
            columns = {NUM_SAMPLES: ks.samples, NUM_STALLED: ks.stalled, **ks.stalls}
            table = self.tables.get(ks.crc) or LineTable.build(None, None)
            out.setdefault(ks.name, []).extend(line_rows(ks.name, ks.pcs, columns, table))
        return out

    def lost(self) -> str | None:
        """One line when CUPTI dropped samples (its hardware buffer filled), with what to do."""
        dropped = self.counters.get("dropped_samples", 0)
        full = self.counters.get("hardware_buffer_full", 0) + self.counters.get("out_of_memory", 0)
        if not dropped and not full:
            return None
        return (
            f"CUPTI dropped {dropped:,} PC samples (its hardware buffer filled {full} time(s)); the lines' "
            f"shares still hold, their counts are short: sample less often, e.g. --interval "
            f"{self.config.cycles * 4}"
        )

    def _find_tables(self, kernels: list[KernelSamples]) -> None:
        missing = {ks.name for ks in kernels if ks.crc not in self.tables} - self.unresolved
        if not missing:
            return
        found: dict[int, KernelAsm] = {}
        for asm in compiled_kernels(missing):
            crc = self.sampler.crc(asm.cubin)
            if crc is not None and crc not in self.tables:
                found[crc] = asm
        self._build(found)
        self.unresolved |= {ks.name for ks in kernels if ks.crc not in self.tables}

    def _build(self, found: dict[int, KernelAsm]) -> None:
        """Line tables for these kernels, nvdisasm run for several at once (0.3 s each)."""
        if not found:
            return
        with ThreadPoolExecutor(max_workers=min(os.cpu_count() or 4, len(found))) as pool:
            tables = pool.map(lambda asm: LineTable.build(asm.cubin, asm.ptx), found.values())
            for (crc, asm), table in zip(found.items(), tables, strict=True):
                self.asm[crc] = asm
                self.tables[crc] = table

    def save_asm(self, folder: Path) -> None:
        for crc, asm in self.asm.items():
            (folder / f"kernel_{crc:x}.cubin").write_bytes(asm.cubin)
            (folder / f"kernel_{crc:x}.json").write_text(json.dumps({"name": asm.name, "ptx": asm.ptx}))

    def load_asm(self, folder: Path) -> None:
        """The sampled kernels' code recorded with the drains, for a replay."""
        found = {}
        for path in sorted(folder.glob("kernel_*.json")):
            meta = json.loads(path.read_text(encoding="utf-8"))
            crc = int(path.stem.split("_", 1)[1], 16)
            found[crc] = KernelAsm(meta["name"], path.with_suffix(".cubin").read_bytes(), meta["ptx"])
        self._build(found)

    def metadata(self) -> dict[str, Any]:
        """What the file says about the sampling: how, how much, and each kernel's hottest PCs as
        columns (offset, samples, samples not issued, dominant stall, source line), how its
        samples were placed on lines and the share left without one, and why a kernel has no
        lines. Kept small: :data:`PCS_KEPT` PCs for a kernel with lines, a few for
        one without (its samples are on the kernel's node anyway)."""
        kernels: dict[str, Any] = {}
        for (name, crc), ks in sorted(self.kernels.items(), key=lambda kv: -kv[1].total):
            table = self.tables.get(crc)
            has_lines = table is not None and table.why is None
            order = ks.samples.argsort()[::-1][: PCS_KEPT if has_lines else PCS_WITHOUT_LINES].tolist()
            columns = sorted(ks.stalls)
            stall_of = []
            for i in order:
                counts = {c: int(ks.stalls[c][i]) for c in columns if ks.stalls[c][i]}
                stall_of.append(max(counts, key=lambda c: counts[c]) if counts else "")
            entry: dict[str, Any] = {
                "crc": f"{crc:x}",
                "samples": ks.total,
                "pc": [int(ks.pcs[i]) for i in order],
                "pc_samples": [int(ks.samples[i]) for i in order],
                "pc_not_issued": [int(ks.stalled[i]) for i in order],
                "pc_stall": stall_of,
            }
            asm = self.asm.get(crc)
            if asm is not None:  # explain compares it with its own compile (deuteron.explain.heat)
                entry["cubin_sha1"] = hashlib.sha1(asm.cubin).hexdigest()
            if has_lines and table is not None:
                sites = [table.sites.get(int(ks.pcs[i])) for i in order]
                files = [s.source[0] for s in sites if s is not None and s.source is not None]
                main = max(set(files), key=files.count) if files else ""
                entry["file"] = main
                # how the samples found their lines (pc_lines.PcSite.placed): on their own line, through
                # an inlined call, from their basic block, or not at all (<no source line>)
                entry["placement"] = table.placement(ks.pcs, ks.samples)
                entry["no_line_share"] = round(entry["placement"][UNPLACED] / max(ks.total, 1), 4)
                entry["pc_line"] = [
                    None
                    if s is None or s.source is None
                    else s.source[1]
                    if s.source[0] == main
                    else f"{s.source[0]}:{s.source[1]}"
                    for s in sites
                ]
            else:
                entry["lines_missing"] = (
                    table.why
                    if table is not None
                    else "no cubin with this CRC among the process's Triton kernels"
                )
            kernels.setdefault(name, entry)
        failed = {"error": self.error} if self.error else {}
        return {
            **failed,
            "mode": "continuous (kernels not serialised)",
            "interval_cycles": self.config.cycles,
            "asked_interval": self.config.interval,
            "drains": self.drains,
            "drain_seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "samples": sum(ks.total for ks in self.kernels.values()),
            **{k: v for k, v in self.counters.items() if k != "total_samples"},
            "kernels": kernels,
        }
