"""A CPU ``-c torch`` training run in the web UI: the flame graph of a profile whose modules carry
their forward and the backward filed under them. Every box must lie inside its parent's (issue 39:
the backward block was drawn past its module's right edge and under a sibling), and ROOT is the
run's total CPU time, as ``deuteron view --summary`` says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deuteron.formats import hatchet
from deuteron.model.metrics import parse_metric
from deuteron.model.tree import Node
from deuteron.view import processors
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli, serving
from tests.helpers.paths import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("cpu_torch")
    script = REPO / "examples" / "train_encoder.py"
    no_gpu = {"CUDA_VISIBLE_DEVICES": ""}
    proc = run_cli("run", "-c", "torch", str(script), "--steps", "2", cwd=folder, env=no_gpu, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with serving("deuteron.hatchet", cwd=folder) as url:
        yield url, folder / "deuteron.hatchet"


def _escapes(node: Node, column: str) -> list[str]:
    """Frames whose children together outweigh them in ``column`` (beyond six digits' rounding)."""
    out = []
    for n in node.walk():
        below = sum(c.metrics[column] for c in n.children.values() if c.metrics[column] == c.metrics[column])
        if below > n.metrics[column] * (1 + 1e-6):
            out.append(f"{n.name}: {n.metrics[column]} < {below}")
    return out


def test_every_flame_box_lies_inside_its_parent(cpu_run: tuple[str, Path], watched: Watched) -> None:
    url, path = cpu_run
    profile = hatchet.read(path)
    shown = processors.derive(profile, [parse_metric("cpu_time/ms", profile.metric_names())])
    assert not _escapes(shown.root, "cpu_time/ms")
    backward = [n for n in profile.root.walk() if n.name == "backward" and n is not profile.root]
    assert backward, "the run has backward frames under its modules: what this test is about"
    # As recorded: a module's own CPU time covers its forward and the backward filed under it
    cpu = "cpu_time (ns)"
    for module in (n for n in profile.root.walk() if "backward" in {c.name for c in n.children.values()}):
        if module is not profile.root and cpu in module.metrics:
            below = sum(c.metrics.get(cpu, 0) for c in module.children.values())
            assert module.metrics[cpu] >= below, (module.name, module.metrics[cpu], below)
    page = watched.page
    page.goto(url + "#profile")
    flame = page.locator("canvas.flame-canvas[data-drawn]")
    flame.wait_for()
    assert flame.get_attribute("data-column") == "cpu_time/ms"
    assert int(flame.get_attribute("data-drawn") or 0) > 20
    assert flame.get_attribute("data-overflowing") == "0"
    expect(page.locator(".flame-rule")).to_be_hidden()
    # ROOT carries the run's total, the number the summary line gives
    total_ms = shown.root.metrics["cpu_time/ms"]
    summary = page.locator(".profile-summary-line")
    expect(summary).to_contain_text(f"CPU time {total_ms:,.2f} ms, the tree's total")
