"""A real ``-c torch`` training step in the web UI: two steps of a 2-layer TransformerEncoder with
AdamW recorded on an H100 (tests/fixtures/cupti_torch, the CUPTI drain replayed without a GPU),
so the page holds PyTorch's and cuBLAS's mangled kernels. What a model engineer sees first: short
demangled names (``reduce_kernel<…>``) everywhere, the full demangled name and the recorded one on
hover and in the details; the run at a glance with the forward / backward / optimizer split; and,
for a width column with nothing to draw, a line that says so instead of a blank graph."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deuteron.collect.backends.cupti import replay
from deuteron.collect.session import Session
from deuteron.formats import hatchet
from deuteron.model.names import display_name
from deuteron.model.tree import KERNEL, Profile
from deuteron.view.summary import summary_lines
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import serving
from tests.helpers.paths import FIXTURES_DIR

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Profile]]:
    folder = tmp_path_factory.mktemp("torch_model")
    session = Session(0, "fixture", backend="interpreter", context="torch")
    replay(FIXTURES_DIR / "cupti_torch", session)
    hatchet.write(session.profile, folder / "model.hatchet")
    with serving("model.hatchet", cwd=folder) as url:
        yield url, session.profile


def _kernels(profile: Profile) -> list[str]:
    return sorted({n.name for n in profile.root.walk() if n.type == KERNEL})


def test_mangled_kernels_read_by_short_names_with_the_full_ones_on_request(
    model: tuple[str, Profile], watched: Watched
) -> None:
    url, profile = model
    raw = _kernels(profile)
    assert sum(n.startswith("_Z") for n in raw) > 30  # the fixture is what the test is about
    page = watched.page
    page.goto(url + "#profile?flat=1")
    page.locator(".flat-table tbody tr").first.wait_for()
    shown = set(page.locator(".flat-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.name)"))
    assert not [n for n in shown if n.startswith("_Z")], shown
    assert {display_name(n) for n in raw} <= shown
    assert "reduce_kernel<…>" in shown and "sgemm_largek_lds64<…>" in shown
    # The table (tree) view: hover names the full demangled name and the recorded one.
    page.uncheck("input[name=flat]")
    page.fill("input[name=filter]", "^sgemm_largek")
    row = page.locator(".ptable tbody tr[data-name='sgemm_largek_lds64<…>']").first
    expect(row).to_be_visible()
    title = row.locator(".nm").get_attribute("title") or ""
    mangled = next(n for n in raw if "sgemm_largek_lds64" in n)
    assert display_name(mangled, full=True) in title and mangled in title, title
    # ... and so does the details panel of the picked frame.
    row.click()
    details = page.locator(".flame-details")
    expect(details).to_be_visible()
    expect(details.locator(".flame-details-full")).to_have_text(display_name(mangled, full=True))


def test_the_run_at_a_glance_splits_forward_backward_and_optimizer(
    model: tuple[str, Profile], watched: Watched
) -> None:
    url, profile = model
    lines = summary_lines(profile)
    assert any("backward" in line and "optimizer" in line for line in lines), lines
    page = watched.page
    page.goto(url + "#profile")
    expect(page.locator(".profile-summary-line")).to_have_text(" · ".join(lines))


def test_a_width_column_with_nothing_to_draw_says_so(tmp_path: Path, watched: Watched) -> None:
    """util with a device table but no bytes or flops moved: every frame is 0, so the flame graph
    would be a blank box; the page says why and what to do instead."""
    p = Profile()
    kernel = p.root.child("step").child("copy", KERNEL)
    p.add_metrics(kernel, {"time (ns)": 1_000_000, "bytes": 0, "count": 1, "device_id (pty)": "0"})
    p.add_metrics(kernel, {"device_type (pty)": "CUDA"})
    h100 = {"arch": "90", "num_sms": 132, "clock_rate": 1980000, "memory_clock_rate": 2619000}
    p.devices = {"CUDA": {"0": {**h100, "bus_width": 5120}}}
    hatchet.write(p, tmp_path / "u.hatchet")
    page = watched.page
    with serving("u.hatchet", cwd=tmp_path) as url:
        page.goto(url + "#profile")
        page.locator("canvas.flame-canvas[data-drawn]").wait_for()
        note = page.locator(".flame-note")
        expect(note).to_be_hidden()  # time/ms has something to draw
        page.select_option("select[name=column]", label="util")
        expect(note).to_be_visible()
        expect(note).to_have_text("every frame has util 0: nothing to draw; pick another width column")
        page.select_option("select[name=column]", label="time/ms")
        expect(note).to_be_hidden()
