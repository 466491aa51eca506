"""Real inputs for the web UI's tests, made by running the real commands in fresh processes: a
profile and its Chrome trace, a second profile to diff against, an access record with its check
report, and an explain report; and a sampled profile (an H200's recorded PC-sampling drain,
replayed) with the explain report joined to it. tests/web/conftest.py makes them once per run."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.cli import fresh_process_env, run_cli
from tests.helpers.paths import REPO

# A tiled copy with a deliberate bug, over a 3-D tensor and a transposed (strided) view: every
# program copies a 16×16 tile of each slice; the last column of tiles overruns (no column mask).
TILES = """
import torch, triton, triton.language as tl

@triton.jit
def tile_copy(src, dst, R, C, sr, sc, BLOCK: tl.constexpr):
    s = tl.program_id(2)
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)[:, None]
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)[None, :]
    m = r < R
    v = tl.load(src + s * R * C + r * sr + c * sc, mask=m)
    tl.store(dst + s * R * C + r * C + c, v, mask=m & (c < C))

x = torch.arange(2 * 40 * 24, dtype=torch.float32).reshape(2, 40, 24)
y = torch.zeros_like(x)
tile_copy[(3, 2, 2)](x, y, 40, 24, 24, 1, BLOCK=16)
t = torch.arange(32 * 16, dtype=torch.float32).reshape(16, 32).t()  # a transposed view
u = torch.zeros(32, 16)
tile_copy[(2, 1, 1)](t, u, 32, 16, 1, 32, BLOCK=16)
"""


@dataclass(frozen=True)
class WebInputs:
    """The files the web tests serve, made once per run: real outputs, not hand-made ones, so the
    UI is tested on what the commands write today."""

    folder: Path
    profile: Path
    base: Path
    trace: Path
    record: Path
    report: Path
    explain: Path


def check_ran(proc: subprocess.CompletedProcess[str], what: str) -> None:
    """A making command ran: exit 0, or 1 (findings or a failed check are still written)."""
    assert proc.returncode in (0, 1), f"{what} failed ({proc.returncode}): {proc.stderr[-2000:]}"


def make_web_inputs(folder: Path) -> WebInputs:
    """The web tests' inputs, made in ``folder`` by the real commands."""
    example = str(REPO / "examples" / "vector_add.py")
    check_ran(run_cli("run", "--trace", "-n", "new", example, "--n", "300", cwd=folder), "deuteron run")
    check_ran(run_cli("run", "-n", "old", example, "--n", "100", cwd=folder), "deuteron run (base)")
    script = folder / "tiles.py"
    script.write_text(TILES)
    check_ran(
        run_cli("check", "--record", "acc.npz", "--json", "rep.json", str(script), cwd=folder),
        "deuteron check",
    )
    check_ran(
        run_cli("explain", "--json", "ex.json", example, "--n", "100", cwd=folder, timeout=600),
        "deuteron explain",
    )
    found = WebInputs(
        folder,
        folder / "new.hatchet",
        folder / "old.hatchet",
        folder / "new.chrome_trace",
        folder / "acc.npz",
        folder / "rep.json",
        folder / "ex.json",
    )
    for field in ("profile", "base", "trace", "record", "report", "explain"):
        path = getattr(found, field)
        assert os.path.isfile(path), f"{path} was not written; files: {sorted(os.listdir(folder))}"
    return found


# A PC-sampling drain recorded on an H200 running examples/hot_line.py, replayed into a profile as
# `deuteron run --sample` would have written it (the CUPTI backend's replay needs no GPU).
REPLAY_SAMPLES = f"""
from deuteron.collect.backends.cupti import replay
from deuteron.collect.session import Session
from deuteron.formats import hatchet
session = Session(0, "fx", backend="interpreter", context="shadow")
replay({str(REPO / "tests" / "fixtures" / "cupti_sampling")!r}, session)
hatchet.write(session.profile, "sampled.hatchet")
"""


@dataclass(frozen=True)
class SampledInputs:
    """A sampled profile and its explain report, for the heat views: sampling needs a GPU, so
    the drain is a recorded one, replayed."""

    folder: Path
    profile: Path  # sampled.hatchet: kernels > file:line@kernel frames with samples and stalls
    explain: Path  # ex.json: deuteron explain --profile of examples/hot_line.py, with heat


def make_sampled_inputs(folder: Path) -> SampledInputs:
    """The sampled profile and its explain report, made in ``folder``."""
    proc = subprocess.run(
        [sys.executable, "-c", REPLAY_SAMPLES],
        cwd=folder,
        env=fresh_process_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"replaying the sampling fixture failed: {proc.stderr[-2000:]}"
    example = str(REPO / "examples" / "hot_line.py")
    check_ran(
        run_cli(
            "explain", "--profile", "sampled.hatchet", "--json", "ex.json", example, cwd=folder, timeout=600
        ),
        "deuteron explain --profile",
    )
    found = SampledInputs(folder, folder / "sampled.hatchet", folder / "ex.json")
    assert found.explain.is_file(), f"ex.json was not written; files: {sorted(os.listdir(folder))}"
    return found
