"""Proton's own proton-viewer (from the triton wheel, with llnl-hatchet) reads our files unchanged."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import deuteron
from deuteron.formats import hatchet
from tests.helpers import kernels as k
from tests.helpers.profiles import H200_TABLE


def proton_viewer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from triton.profiler.viewer import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def our_profile(tmp_path: Path) -> Path:
    with deuteron.profile(str(tmp_path / "ours"), backend="interpreter", output_format="hatchet") as p:
        with deuteron.scope("train", metrics={"flops": 1e6}):
            k.add(torch.rand(1000), torch.rand(1000))
            k.matmul(torch.rand(64, 64), torch.rand(64, 64))
    target = tmp_path / "ours.hatchet"
    p.files[0].replace(target)
    return target


def test_proton_viewer_lists_and_shows_our_metrics(our_profile: Path):
    listed = proton_viewer("-l", str(our_profile))
    assert listed.returncode == 0, listed.stderr
    for metric in ("time", "count", "bytes", "flops"):
        assert f"- {metric}\n" in listed.stdout
    shown = proton_viewer("-m", "time/ms,gbyte/s", str(our_profile))
    assert shown.returncode == 0, shown.stderr
    assert "train" in shown.stdout and "add_kernel" in shown.stdout and "matmul_kernel" in shown.stdout
    assert "deuteron:metadata" not in shown.stdout


def test_proton_viewer_counts_match_ours(our_profile: Path):
    shown = proton_viewer("-m", "bytes", str(our_profile))
    assert shown.returncode == 0, shown.stderr
    ours = hatchet.read(our_profile)
    add_bytes = next(n for n in ours.root.walk() if n.name == "add_kernel").metrics["bytes"]
    line = next(ln for ln in shown.stdout.splitlines() if ln.rstrip().endswith("add_kernel"))
    assert float(line.split()[-2]) == pytest.approx(add_bytes)


def test_proton_viewer_diffs_and_uses_our_device_table(tmp_path: Path, our_profile: Path):
    prof = hatchet.read(our_profile)
    for node in prof.root.walk():
        if node.type == "kernel":
            node.metrics["device_type"] = "CUDA"
    prof.devices = copy.deepcopy(H200_TABLE)
    gpu_like = hatchet.write(prof, tmp_path / "gpu_like.hatchet")
    util = proton_viewer("-m", "util", str(gpu_like))
    assert util.returncode == 0, util.stderr
    diff = proton_viewer("-m", "time/ns", "-diff", str(our_profile), str(gpu_like))
    assert diff.returncode == 0, diff.stderr
    assert "add_kernel" in diff.stdout


def _values(text: str) -> dict[str, str]:
    """Frame name -> first column, from a tree as proton-viewer or deuteron view prints it."""
    import re

    found: dict[str, str] = {}
    for line in text.splitlines():
        line = re.sub(r"^[│├└─\s]+", "", line)
        m = re.match(r"^([-\d.e+naN]+)\s+(.*)$", line)
        if m:
            found.setdefault(re.sub(r"^[│├└─\s]+", "", m.group(2)).strip(), m.group(1))
    return found


@pytest.mark.parametrize(
    "options",
    [
        ["-m", "time/ms"],
        ["-m", "count", "-e", ".*elementwise.*"],
        ["-m", "count", "-i", ".*elementwise.*"],
        ["-m", "avg_time/us", "-d", "2"],
        ["-m", "time/%", "-t", "1"],
    ],
)
def test_deuteron_view_shows_proton_viewers_numbers(proton_fixtures: Path, options: list[str]) -> None:
    """Frame by frame, on Proton's own files from an H200: the same frames and the same values
    (proton-viewer's NaN is our "-"; one frame's value may differ only past 3 significant digits).
    proton-viewer prints C++ kernel names mangled, ``deuteron view`` demangled: frames are matched
    by the whole demangled name (``--full-names``; the short form would merge distinct kernels)."""
    from deuteron.model.names import display_name
    from tests.helpers.cli import run_cli

    for name in ("proton_shadow_hook.hatchet", "proton_python.hatchet"):
        path = str(proton_fixtures / name)
        theirs = proton_viewer(*options, path)
        ours = run_cli("view", "--full-names", *options, path, cwd=proton_fixtures.parent)
        assert theirs.returncode == 0 and ours.returncode == 0, (theirs.stderr[-500:], ours.stderr)
        t = {display_name(frame, full=True): value for frame, value in _values(theirs.stdout).items()}
        o = _values(ours.stdout)
        assert t.keys() == o.keys(), (name, options)
        for frame, value in t.items():
            mine = o[frame]
            if value == "nan" or mine == "-":
                assert (value, mine) == ("nan", "-"), (name, options, frame)
                continue
            assert float(mine) == pytest.approx(float(value), rel=2e-3, abs=1e-3), (name, options, frame)


def test_util_without_bytes_or_flops_is_unknown_where_proton_viewer_prints_0(proton_fixtures: Path) -> None:
    """Proton's files from an H200 count no bytes or flops on their kernels: proton-viewer's ``util``
    is 0 on every kernel, ``deuteron view`` says in one line that no frame has it (issue 39: a number
    that cannot be computed is not 0)."""
    from tests.helpers.cli import run_cli

    path = str(proton_fixtures / "proton_python.hatchet")
    theirs = proton_viewer("-m", "util", path)
    assert theirs.returncode == 0 and set(_values(theirs.stdout).values()) <= {"0.000", "nan"}, theirs.stdout
    ours = run_cli("view", "-m", "util", path, cwd=proton_fixtures.parent)
    assert ours.returncode == 2 and "Traceback" not in ours.stderr
    assert ours.stderr.startswith("deuteron: error: no frame has util"), ours.stderr
