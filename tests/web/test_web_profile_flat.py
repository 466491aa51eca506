"""The profile's flat view in a real browser, served by the real ``deuteron serve``: every name
summed over the tree (a name nested in itself counted once, as deuteron/view/flat.py does), sorted
by a header click, narrowed by the page's filter; a picked name shows its callers and callees;
the toggle and the picked name are in the address and come back on load."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deuteron.formats import hatchet
from deuteron.model.metrics import parse_metric
from deuteron.model.tree import Profile
from deuteron.view.flat import flat_rows
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import serving
from tests.helpers.profiles import timed_profile

pytestmark = pytest.mark.slow


def _recursive(path: Path) -> Profile:
    """ROOT ─┬─ f (own 1 ms) ─┬─ f (own 2 ms) ─── k 4 ms      (f nested in itself)
    │                └─ g 3 ms
    └─ g (own 3 ms) ─── k 2 ms"""
    p = timed_profile(
        {
            "f": (1, "function", {"f": (2, "function", {"k": (4, "kernel")}), "g": (3, "function")}),
            "g": (3, "function", {"k": (2, "kernel")}),
        }
    )
    hatchet.write(p, path)
    return p


def _rows(page: object) -> list[list[str]]:
    return page.locator(".flat-table tbody tr").evaluate_all(  # type: ignore[attr-defined]
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )


def test_the_flat_view_sums_sorts_filters_and_shows_a_names_sandwich(
    tmp_path: Path, watched: Watched
) -> None:
    profile = _recursive(tmp_path / "r.hatchet")
    # The Python twin (deuteron view --flat) gives the numbers the page must show.
    twin = {r.name: r for r in flat_rows(profile, [parse_metric("time/ms", profile.metric_names())])}
    assert {n: (r.total[0], r.own[0], r.places) for n, r in twin.items()} == {
        "f": (10, 3, 2),
        "g": (8, 6, 2),
        "k": (6, 6, 2),
    }
    page = watched.page
    with serving("r.hatchet", cwd=tmp_path) as url:
        page.goto(url + "#profile")
        page.locator("canvas.flame-canvas[data-drawn]").wait_for()
        page.check("input[name=flat]")
        expect(page.locator("canvas.flame-canvas")).to_be_hidden()
        flat = page.locator(".profile-flat")
        expect(flat).to_have_attribute("data-rows", "3")
        assert _rows(page) == [["f", "10", "3", "2"], ["g", "8", "6", "2"], ["k", "6", "6", "2"]]
        assert page.locator(".flat-table th").all_inner_texts()[:3] == [
            "name",
            "total time/ms ▾",
            "self time/ms",
        ]
        page.click(".flat-table th[data-sort=self]")
        expect(flat).to_have_attribute("data-sort", "self desc")
        assert [r[0] for r in _rows(page)] == ["g", "k", "f"]
        page.click(".flat-table th[data-sort=self]")
        assert [r[0] for r in _rows(page)] == ["f", "g", "k"]
        page.fill("input[name=filter]", "^[gk]$")
        expect(flat).to_have_attribute("data-rows", "2")
        page.fill("input[name=filter]", "")
        expect(flat).to_have_attribute("data-rows", "3")
        page.click(".flat-table tr[data-name=k]")
        expect(flat).to_have_attribute("data-selected", "k")
        callers = page.locator(".flat-side[data-side=callers] tr")
        assert callers.evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.textContent))") == [
            ["f", "4", "66.7%"],
            ["g", "2", "33.3%"],
        ]
        assert "calls nothing" in page.locator(".flat-side[data-side=callees]").inner_text()
        expect(page).to_have_url(re.compile(r"#profile\?flat=1&frame=k$"))
        # A caller picked in the sandwich becomes the picked name; its callees include k.
        callers.first.click()
        expect(flat).to_have_attribute("data-selected", "f")
        callees = page.locator(".flat-side[data-side=callees] tr").all_inner_texts()
        assert [c.split("\t")[0] for c in callees] == ["f", "g"]
        # The address alone brings the flat view and the picked name back.
        page.goto("about:blank")  # a new load, not a hash change of the same page
        page.goto(url + "#profile?flat=1&frame=g")
        expect(page.locator(".profile-flat")).to_have_attribute("data-selected", "g")
        expect(page.locator("input[name=flat]")).to_be_checked()
        page.uncheck("input[name=flat]")
        expect(page.locator("canvas.flame-canvas")).to_be_visible()
        expect(page).to_have_url(re.compile(r"#profile$"))


def test_calls_average_and_every_call_site_on_a_recorded_profile(tmp_path: Path, watched: Watched) -> None:
    """A DDP rank's ``-c torch`` profile of Llama on an H100 (tests/fixtures/ranks): each name's
    calls (an op's calls, a kernel's launches, over all its places) and average; a picked kernel's
    every call site, the inverted caller tree, whose chains are those of the file."""
    from deuteron.formats.profile_stream import read_profile
    from deuteron.model.tree import KERNEL
    from tests.helpers.paths import REPO

    source = REPO / "tests" / "fixtures" / "ranks" / "ddp" / "deuteron.rank0.hatchet.gz"
    profile = read_profile(str(source))
    calls: dict[str, int] = {}  # by recorded name: the flat view's rows are (kernels of one short name apart)
    chains: dict[str, set[tuple[str, ...]]] = {}
    stack: list[tuple[object, tuple[str, ...]]] = [(profile.root, ())]
    while stack:
        node, up = stack.pop()
        name = node.name  # type: ignore[attr-defined]
        key = "count" if node.type == KERNEL else "calls"  # type: ignore[attr-defined]
        if key in node.metrics:  # type: ignore[attr-defined]
            calls[name] = calls.get(name, 0) + int(node.metrics[key])  # type: ignore[attr-defined]
        if up:  # every prefix of the callers above, nearest first: the rows of the caller tree
            chains.setdefault(name, set()).update(tuple(reversed(up))[:k] for k in range(1, len(up) + 1))
        kids = node.children.values()  # type: ignore[attr-defined]
        stack.extend((c, (*up, name) if node is not profile.root else ()) for c in kids)
    # An op called from many places (no C++ name: the page names it as recorded).
    op = max((n for n in chains if n.startswith("aten::") and n in calls), key=lambda n: (len(chains[n]), n))
    page = watched.page
    with serving(str(source), cwd=tmp_path) as url:
        page.goto(url + "#profile?flat=1")
        flat = page.locator(".profile-flat")
        expect(flat).to_have_attribute("data-rows", re.compile(r"^\d+$"))
        heads = page.locator(".flat-table th").all_inner_texts()
        assert heads[-2:] == ["calls", "average time/ms"], heads
        page.click(".flat-table th[data-sort=calls]")
        rows = _rows(page)
        assert int(rows[0][4].replace(",", "")) == max(calls.values()), (rows[0], max(calls.values()))
        row = next(r for r in rows if r[0] == op)
        assert row[4] == f"{calls[op]:,}"
        assert float(row[5]) == pytest.approx(float(row[1]) / calls[op], rel=0.01)
        # The op's every call site: the inverted caller tree, as the file's chains of callers.
        page.goto(url + f"#profile?flat=1&frame={op}")
        sites = page.locator(".flat-side[data-side=sites]")
        expect(sites).to_be_visible()
        shown = sites.locator("tr[data-depth]").evaluate_all(
            "rows => rows.map(r => [Number(r.dataset.depth), r.dataset.name])"
        )
        # Each row's chain is its ancestors in the table: rebuild the chains, compare.
        seen: set[tuple[str, ...]] = set()
        path: list[str] = []
        for depth, name in shown:
            path[depth:] = [name]
            seen.add(tuple(path))
        assert len(chains[op]) > 3 and seen == chains[op], (op, len(seen), len(chains[op]))
