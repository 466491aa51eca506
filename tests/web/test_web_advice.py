"""The profile view's advice panel: what ``deuteron view --advise`` prints, on recorded profiles (a
DDP rank's ``-c torch`` profile of Llama on an H100, an H200's sampled kernel), each row tied to the
frame it names in the page's tree; in a real browser, a click on a row selects that frame."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from deuteron.formats.profile_stream import read_profile
from deuteron.model.names import parse_source_frame
from deuteron.render.web.data import WebData
from deuteron.view import advise
from deuteron.view.findings import findings
from deuteron.view.processors import folded_name
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli, serving
from tests.helpers.paths import REPO
from tests.helpers.web_inputs import REPLAY_SAMPLES

RANK0 = REPO / "tests" / "fixtures" / "ranks" / "ddp" / "deuteron.rank0.hatchet.gz"


def _page_lines(page: dict) -> list[str]:  # type: ignore[type-arg]
    """The page's findings as the terminal prints them: headline, then a line per row."""
    lines = []
    for f in page["advice"]:
        lines.append(f["headline"])
        lines.extend(f"    {row['line']}" for row in f["evidence"])
    return lines


def _served(path: str) -> dict:  # type: ignore[type-arg]
    """The page's profile with its findings, as the page asks for them after its first paint."""
    data = WebData()
    data.add_file(path)
    page = data.index()["profiles"][0]
    assert "advice" not in page and page["advice_url"] == "/api/profile/0/advice.json"
    assert data.answer("/api/profile/1/advice.json") is None
    answer = data.answer(page["advice_url"])
    assert answer is not None and answer[0] == "application/json"
    return dict(page, advice=answer[1])


def _name(page: dict, node: int) -> str:  # type: ignore[type-arg]
    return str(page["raw_names"][page["name_id"][node]])


def test_the_page_holds_what_view_advise_prints(tmp_path: Path) -> None:
    """Same findings, same lines as ``deuteron view --advise`` on the fixture; each frame row
    selects the frame at its path (a folded layers.* part: one of its repeats)."""
    page = _served(str(RANK0))
    printed = run_cli("view", str(RANK0), "--advise", "--no-summary", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    text = advise.render(findings([read_profile(str(RANK0))], [str(RANK0)]))
    assert "\n".join(_page_lines(page)) == text
    assert text in printed.stdout
    kinds = [f["kind"] for f in page["advice"]]
    assert {"idle", "backward", "copies", "collectives"} <= set(kinds), kinds
    framed = [row for f in page["advice"] for row in f["evidence"] if row["names"] == "frame"]
    assert len(framed) >= 5
    for row in framed:
        node, parts = row["node"], row["path"].split(" > ")
        for part in reversed(parts):  # the node's ancestors spell the path, ROOT's child first
            assert part in (_name(page, node), folded_name(_name(page, node))), (row["path"], part)
            node = page["parent"][node]
        assert node == 0
    # A total and a collective's size name no frame.
    idle = page["advice"][kinds.index("idle")]["evidence"][0]
    assert idle["path"] == "whole process" and idle["node"] is None and idle["names"] is None
    assert all(row["node"] is None for row in page["advice"][kinds.index("collectives")]["evidence"])


def test_hot_lines_select_their_line_frames(tmp_path: Path) -> None:
    """A sampled profile (an H200's PC-sampling drain replayed): each hot line's row selects the
    frame of that line; the text is the terminal's."""
    subprocess.run([sys.executable, "-c", REPLAY_SAMPLES], cwd=tmp_path, check=True, timeout=300)
    path = str(tmp_path / "sampled.hatchet")
    page = _served(path)
    assert "\n".join(_page_lines(page)) == advise.render(findings([read_profile(path)], [path]))
    lines = [row for f in page["advice"] if f["kind"] == "lines" for row in f["evidence"]]
    assert lines, [f["kind"] for f in page["advice"]]
    for row in lines:
        assert row["names"] == "line" and row["node"] is not None
        where = parse_source_frame(_name(page, row["node"]))
        assert where is not None and f"{Path(where[0]).name}:{where[1]}" == row["path"]


@pytest.mark.slow
def test_a_click_on_a_finding_selects_its_frame(watched: Watched, tmp_path: Path) -> None:
    out = tmp_path / "rank0.html"
    assert run_cli("serve", "--html", str(out), str(RANK0), cwd=tmp_path).returncode == 0
    page = watched.page
    page.goto(out.as_uri() + "#profile")
    panel = page.locator("details.profile-advice")
    # Asked for after the first paint; a --html page holds the answer.
    expect(panel.locator("summary")).to_contain_text(re.compile(r"advice: \d+ findings \(idle, backward"))
    expect(panel).to_have_attribute("data-state", "ready")
    panel_text = panel.locator("summary").inner_text()
    panel.locator("summary").click()
    row = panel.locator(".advice-finding[data-kind=backward] button.advice-row").first
    expect(row).to_be_visible()
    node = row.get_attribute("data-node") or ""
    assert node
    row.click()
    expect(page.locator("canvas.flame-canvas")).to_have_attribute("data-selected", node)
    expect(page.locator(".ptable tr.sel")).to_have_attribute("data-node", node)
    expect(page.locator(".flame-details")).to_have_attribute("data-node", node)
    expect(row).to_have_class(re.compile(r"\bsel\b"))
    expect(page).to_have_url(re.compile(rf"sel={node}\b"))
    # The frame is that of the row's path: post_attention_layernorm or input_layernorm.
    expect(page.locator(".ptable tr.sel")).to_have_attribute(
        "data-name", re.compile(r"layernorm \(LlamaRMSNorm\)$")
    )
    # Rows that name no frame are not buttons.
    assert panel.locator(".advice-finding[data-kind=idle] li.inert").count() >= 1
    # Served live: the page asks the server, which computes the findings on first request.
    with serving(str(RANK0), cwd=tmp_path) as url:
        page.goto(url + "#profile")
        expect(page.locator("details.profile-advice")).to_have_attribute("data-state", "ready")
        expect(page.locator("details.profile-advice summary")).to_have_text(panel_text)
