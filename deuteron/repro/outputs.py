"""Two reproducers run on the CPU and what their launches wrote compared: the outputs part of
``deuteron diff before.py after.py``.

Each reproducer (``deuteron repro``'s file: ``buffers()``, ``launch(bufs)``, ``EXPECTED``) runs in
a process of its own, the two at once, in Triton's interpreter (``TRITON_INTERPRET=1``, with
Deuteron's mends of it, as ``deuteron run`` sets it up), so whatever GPU there is, the two run
alike. Both run on the same inputs, the before file's recorded values (the after file's buffers
are loaded from the before file's ``.npz``; when they do not fit, nothing is compared: outputs
of different inputs say nothing about the kernel). Each hands back the buffers its launch writes
(``EXPECTED``'s ``NAME.after`` entries), and buffers of one name are compared with the
reproducer's own tolerance per dtype (:data:`TOLERANCE`, the same as ``--check``'s). A script that
is not a reproducer, or one that fails, is said in one line and not compared: this part of a diff
never stops the rest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deuteron.repro.templates import TOLERANCE_BY_DTYPE

TIMEOUT_S = 300
TOLERANCE = TOLERANCE_BY_DTYPE  # a reproducer's own (deuteron.repro.templates); integers must be equal

_DRIVER = """
import os, runpy, sys
from pathlib import Path
os.environ["TRITON_INTERPRET"] = "1"
try:
    from deuteron.triton.interpreter import adapter
    adapter.install(lambda record: None)
except Exception:
    pass
import torch
ns = runpy.run_path(sys.argv[1], run_name="deuteron_diff")
if not all(k in ns for k in ("buffers", "launch", "EXPECTED", "VALUES")):
    sys.stderr.write("not a reproducer written by deuteron repro (no buffers, launch, EXPECTED)\\n")
    raise SystemExit(3)
shared = True
if sys.argv[3]:
    ns["buffers"].__globals__["VALUES"] = Path(sys.argv[3])
try:
    bufs = ns["buffers"]()
except Exception:
    ns["buffers"].__globals__["VALUES"] = ns["VALUES"]
    bufs, shared = ns["buffers"](), False
ns["launch"](bufs)
shapes = ns.get("SHAPES", {})
written = {}
for name, key in ns["EXPECTED"].items():
    if str(key).endswith(".after"):
        t = bufs[name].detach().cpu().clone()
        shape = shapes.get(name)
        fits = shape is not None and t.numel() == torch.Size(shape).numel()
        written[name] = t.reshape(shape) if fits else t
torch.save({"written": written, "shared": shared}, sys.argv[2])
"""


@dataclass
class OutputComparison:
    """What the two launches wrote, compared: ``lines`` to print; ``differ`` when a buffer of one
    name differs beyond the tolerance (or in shape or dtype); ``compared`` False when either
    could not run (``lines`` says why)."""

    compared: bool
    differ: bool = False
    lines: list[str] = field(default_factory=list)


def _why(code: int | None, err: str, path: str) -> str:
    if code is None:
        return f"{path} did not finish within {TIMEOUT_S} s"
    if code == 3:
        return f"{path} is not a reproducer written by deuteron repro (no buffers, launch, EXPECTED)"
    last = [line for line in err.strip().splitlines() if line.strip()]
    return f"{path} did not run on the CPU: {last[-1].strip() if last else f'exit code {code}'}"


class OutputRun:
    """Both reproducers running at once, the second on the first's recorded values, started before
    the caller compiles them so the two waits overlap; :meth:`finish` compares, :meth:`cancel`
    stops them. Their stderr goes to files, so a chatty script never blocks on a full pipe."""

    def __init__(self, before: str, after: str) -> None:
        self.paths = (before, after)
        self.folder = Path(tempfile.mkdtemp(prefix="deuteron-diff-"))
        self.values = _values_of(before)
        env = {k: v for k, v in os.environ.items() if k != "DEUTERON_DISABLE"}
        self.procs: list[subprocess.Popen[bytes]] = []
        for i, path in enumerate(self.paths):
            with open(self.folder / f"side{i}.err", "wb") as err:
                self.procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", _DRIVER, os.path.abspath(path), str(self._out(i)),
                         self.values if i else ""],
                        cwd=os.path.dirname(os.path.abspath(path)) or ".",
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
                )  # fmt: skip

    def _out(self, i: int) -> Path:
        return self.folder / f"side{i}.pt"

    def cancel(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

    def finish(self) -> OutputComparison:
        import torch

        try:
            for i, (proc, path) in enumerate(zip(self.procs, self.paths, strict=True)):
                try:
                    code: int | None = proc.wait(timeout=TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    code = None
                if code != 0 or not self._out(i).is_file():
                    err = (self.folder / f"side{i}.err").read_text(errors="replace")
                    return OutputComparison(False, lines=[f"outputs not compared: {_why(code, err, path)}"])
            loaded: list[dict[str, Any]] = [torch.load(self._out(i), weights_only=True) for i in range(2)]
        finally:
            self.cancel()
        before, after = self.paths
        if not (loaded[1]["shared"] and self.values):
            why = (
                f"{before}'s recorded inputs do not fit {after}'s buffers"
                if self.values
                else f"{before} has no values beside it"
            )
            return OutputComparison(
                False,
                lines=[f"outputs not compared: {why}, so the two launches cannot run on the same inputs"],
            )
        compared = _compared(loaded[0]["written"], loaded[1]["written"])
        compared.lines.insert(0, f"both launches ran on the CPU, on the inputs recorded for {before}:")
        return compared


def compare_outputs(before: str, after: str) -> OutputComparison:
    """Run both reproducers on the CPU and compare the buffers their launches wrote."""
    return OutputRun(before, after).finish()


def _values_of(script: str) -> str:
    """The values file beside a reproducer (``repro.py``: ``repro.npz``), or "" when there is none."""
    path = Path(script).with_suffix(".npz")
    return str(path.resolve()) if path.is_file() else ""


def _compared(b: dict[str, Any], a: dict[str, Any]) -> OutputComparison:
    import torch

    out = OutputComparison(True)
    same: list[str] = []
    for name in sorted(set(b) | set(a)):
        if name not in a or name not in b:
            out.lines.append(f"{name}: written only {'before' if name in b else 'after'}")
            out.differ = True
            continue
        x, y = b[name], a[name]
        if x.shape != y.shape or x.dtype != y.dtype:
            out.lines.append(
                f"{name}: {tuple(x.shape)} {str(x.dtype).removeprefix('torch.')} before, "
                f"{tuple(y.shape)} {str(y.dtype).removeprefix('torch.')} after: not compared"
            )
            out.differ = True
            continue
        if x.dtype.is_floating_point:
            rtol, atol = TOLERANCE.get(str(x.dtype).removeprefix("torch."), (1e-1, 1e-1))
            close = torch.isclose(x.double(), y.double(), rtol=rtol, atol=atol, equal_nan=True)
        else:
            rtol = atol = 0.0
            close = x == y
        if bool(close.all()):
            same.append(name)
            continue
        flat = (~close).reshape(-1)
        i = int(flat.nonzero()[0, 0])
        at = tuple(int(v) for v in torch.unravel_index(torch.tensor(i), x.shape)) if x.dim() else ()
        out.lines.append(
            f"{name} differs at index {at}: {x.reshape(-1)[i].item()} before, "
            f"{y.reshape(-1)[i].item()} after "
            f"({int(flat.sum())} of {flat.numel()} elements beyond rtol={rtol:g}, atol={atol:g})"
        )
        out.differ = True
    if same:
        out.lines.insert(0, f"outputs agree: {', '.join(same)} (within each dtype's tolerance)")
    if not b and not a:
        out.lines.append("outputs: neither launch wrote a buffer")
    return out
