"""What ``deuteron explain`` found: one analysis per kernel specialization, the profile's costs,
and the errors of kernels that could not be explained; and its JSON document (the format is in
:mod:`deuteron.formats.explain_json`; the terminal rendering in :mod:`deuteron.render.explain_report`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deuteron.explain.analysis import KernelAnalysis
from deuteron.explain.heat import kernel_heat
from deuteron.explain.roofline import KernelCost, ranked
from deuteron.explain.stages import source_line
from deuteron.formats import explain_json
from deuteron.formats.files import source_text
from deuteron.view.hot_lines import LineAdvice, SampledKernel


@dataclass
class ExplainReport:
    """Everything one explain run found, and the one place its JSON document is made.

    The terminal report, ``--json``, the web UI and notebooks all read :meth:`as_json`, so they
    cannot disagree; ``errors`` keeps the kernels that failed so the others are still reported.
    """

    kernels: list[KernelAnalysis] = field(default_factory=list)
    costs: dict[str, KernelCost] = field(default_factory=dict)
    device: str | None = None
    errors: list[str] = field(default_factory=list)
    lines: dict[str, list[LineAdvice]] = field(default_factory=dict)  # a sampled profile's hot lines
    sampled: dict[str, SampledKernel] = field(default_factory=dict)  # and its lines per kernel
    pcs: dict[str, dict[str, Any]] = field(default_factory=dict)  # and its hottest PCs per kernel

    # --- JSON ------------------------------------------------------------------------------
    def kernel_json(self, a: KernelAnalysis) -> dict[str, Any]:
        spec = a.spec
        out: dict[str, Any] = {
            "name": spec.name,
            "target": spec.target.name,
            "file": spec.file,
            "line": spec.first_line,
            "num_warps": spec.option("num_warps"),
            "num_stages": spec.option("num_stages"),
            "num_ctas": spec.option("num_ctas"),
            "args": [arg.describe() for arg in spec.args],
            "launches": spec.launches,
            "origin": spec.origin,
            "grids": [list(g) for g in spec.grids],
            "registers": a.registers,
            "spills": a.spill_bytes,
            "shared_bytes": a.shared_bytes,
            "occupancy": a.occupancy.as_json() if a.occupancy else None,
            "sass": a.mix,
            "stages": {name: len(lines) for name, lines in a.stages.items()},
            "source_map": a.source_map(),
            "findings": [explain_json.explain_finding_json(f) for f in a.findings],
            "source_text": source_text(spec.file),
            "stage_text": {
                name: {
                    "lines": [ir.text for ir in lines],
                    "src": [source_line(ir, spec.file) for ir in lines],
                }
                for name, lines in a.stages.items()
            },
        }
        cost = self.costs.get(spec.name)
        if cost is not None:
            out["profile"] = cost.as_json()
        if spec.name in self.lines:
            out["hot_lines"] = [self._joined(advice, a) for advice in self.lines[spec.name]]
        heat = kernel_heat(a, self.sampled.get(spec.name), self.pcs.get(spec.name))
        if heat is not None:
            out["heat"] = heat
        return out

    @staticmethod
    def _joined(advice: LineAdvice, a: KernelAnalysis) -> dict[str, Any]:
        """A hot line's advice with explain's own findings on the same line of the same file."""
        same_file = os.path.basename(advice.file) == os.path.basename(a.spec.file)
        lints = [f.message for f in a.findings if same_file and f.line == advice.line]
        return {**advice.as_json(), "lints": lints}

    def as_json(self) -> dict[str, Any]:
        launched = {a.spec.name for a in self.kernels}
        order = ranked(self.costs.values())
        return {
            "kernels": [self.kernel_json(a) for a in self.kernels],
            "ranking": [{**c.as_json(), "launched": c.name in launched} for c in order],
            "device": self.device,
            "errors": list(self.errors),
        }

    def _repr_html_(self) -> str:
        from deuteron.render.notebook import explain_html

        return explain_html(explain_json.document(self.as_json()))

    def write_json(self, path: str | os.PathLike[str]) -> Path:
        return explain_json.write(self.as_json(), path)
