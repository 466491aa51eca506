"""The profile's flat view in a diff (``deuteron serve new.hatchet --base old.hatchet``), in a real
browser: each name summed over the whole tree in both profiles, with its base total, the ratio
(new / base, coloured as the tree table's) and the change, sortable over all names, where the tree
table's sort orders siblings only; a name of one profile only has no ratio and sorts last either
way; a picked name's callers and callees carry their base values and ratios. Checked against the
Python twin (``deuteron.view.flat``) on the real example profiles, and exactly on a pair made so
that the order over the whole profile differs from every sibling group's."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from deuteron.formats import hatchet
from deuteron.model.metrics import parse_metric
from deuteron.view.flat import flat_rows
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import serving
from tests.helpers.profiles import timed_profile
from tests.helpers.web_inputs import WebInputs

pytestmark = pytest.mark.slow

ROWS = "rows => rows.map(r => [...r.cells].map(c => c.textContent))"


@pytest.fixture(scope="module")
def served_diff(web_inputs: WebInputs) -> Any:
    with serving(str(web_inputs.profile), "--base", str(web_inputs.base), cwd=web_inputs.folder) as url:
        yield url


def _totals(path: Path) -> dict[str, float]:
    """Each name's total time/ms over the file's tree, as ``deuteron view --flat`` sums it."""
    profile = hatchet.read(path)
    return {r.name: r.total[0] for r in flat_rows(profile, [parse_metric("time/ms", profile.metric_names())])}


def _ratio(text: str) -> float:
    assert text.startswith("×"), text
    return float(text[1:].replace(",", ""))


def _open_flat(page: Any, url: str) -> Any:
    page.goto(url + "#profile")
    page.locator("canvas.flame-canvas[data-drawn]").wait_for()
    page.check("input[name=flat]")
    flat = page.locator(".profile-flat")
    expect(flat).to_be_visible()
    return flat


def test_the_diffs_flat_view_sorts_names_by_ratio_over_the_whole_profile(
    served_diff: str, web_inputs: WebInputs, watched: Watched
) -> None:
    new, old = _totals(web_inputs.profile), _totals(web_inputs.base)
    ratios = {n: new[n] / old[n] for n in new.keys() & old.keys() if old[n] > 0 and n != "ROOT"}
    assert len(ratios) >= 4, ratios  # vector_add, add_kernel, matmul, matmul_kernel
    page = watched.page
    flat = _open_flat(page, served_diff)
    heads = page.locator(".flat-table th").all_inner_texts()
    assert heads == ["name", "total time/ms ▾", "base time/ms", "ratio", "change", "self time/ms", "places"]
    page.click(".flat-table th[data-sort=ratio]")
    expect(flat).to_have_attribute("data-sort", "ratio desc")
    expect(page.locator(".flat-table th[data-sort=ratio]")).to_have_attribute("aria-sort", "descending")
    rows = page.locator(".flat-table tbody tr").evaluate_all(
        "rows => rows.map(r => ({name: r.dataset.name, ratio: r.querySelector('td.ratio').textContent,"
        " trend: r.querySelector('td.ratio').dataset.trend || null,"
        " bg: getComputedStyle(r.querySelector('td.ratio')).backgroundColor}))"
    )
    names = [r["name"] for r in rows]
    assert sorted(names) == sorted(ratios), (names, ratios)  # every name of the tree, ROOT aside
    # Descending over all names by the twin's own sums (six-digit transport: a tolerance for ties).
    for a, b in zip(names, names[1:], strict=False):
        assert ratios[a] >= ratios[b] * (1 - 1e-4), (a, ratios[a], b, ratios[b], names)
    assert ratios[names[0]] >= max(ratios.values()) * (1 - 1e-4)
    for r in rows:
        assert _ratio(r["ratio"]) == pytest.approx(ratios[r["name"]], rel=6e-3), r
        # Every ratio cell coloured as the table's: red slower, green faster (grey near 1).
        assert r["bg"] not in ("", "rgba(0, 0, 0, 0)", "transparent"), r
        if abs(math.log(ratios[r["name"]])) > 1e-3:
            assert r["trend"] == ("slower" if ratios[r["name"]] > 1 else "faster"), r
    top = page.locator(".flat-table tbody tr").first.locator("td.ratio")
    assert top.get_attribute("data-trend") in ("slower", "faster", "same")
    assert "background" in (top.get_attribute("style") or "")
    # The sandwich of the slowest-grown name still works in a diff: its callers, with base values.
    page.locator(".flat-table tbody tr").first.click()
    expect(flat).to_have_attribute("data-selected", names[0])
    callers = page.locator(".flat-side[data-side=callers] tbody tr")
    expect(callers.first).to_be_visible()
    assert len(callers.first.locator("td").all()) == 5  # name, value, share, base, ratio
    expect(page).to_have_url(re.compile(r"#profile\?flat=1&frame=" + re.escape(names[0]) + "$"))


def _pair(folder: Path) -> None:
    """new: ROOT ─┬─ A (own 1) ─┬─ gemm 6          base: ROOT ─┬─ A (own 1) ─┬─ gemm 2
                 │             └─ fresh 2                     │             └─ gone 3
                 └─ B (own 2) ─── gemm 2                      └─ B (own 3) ─── gemm 2
    gemm is 3x slower under A and unchanged under B: x2 over the profile (8 / 4), the largest ratio
    of all names, which neither of its places in the tree table shows."""
    new = timed_profile(
        {
            "A": (1, "function", {"gemm": (6, "kernel"), "fresh": (2, "kernel")}),
            "B": (2, "function", {"gemm": (2, "kernel")}),
        }
    )
    old = timed_profile(
        {
            "A": (1, "function", {"gemm": (2, "kernel"), "gone": (3, "kernel")}),
            "B": (3, "function", {"gemm": (2, "kernel")}),
        }
    )
    hatchet.write(new, folder / "new.hatchet")
    hatchet.write(old, folder / "old.hatchet")


def test_a_made_diff_sums_each_name_in_both_profiles_and_sorts_all_names(
    tmp_path: Path, watched: Watched
) -> None:
    _pair(tmp_path)
    page = watched.page
    with serving("new.hatchet", "--base", "old.hatchet", cwd=tmp_path) as url:
        page.goto(url + "#profile")
        page.locator("canvas.flame-canvas[data-drawn]").wait_for()
        # The tree table knows gemm only per place: x3 under A, x1 under B.
        cells = page.locator(".ptable tr[data-name=gemm] td.ratio").all_inner_texts()
        assert sorted(cells) == ["×1", "×3"], cells
        page.check("input[name=flat]")
        flat = page.locator(".profile-flat")
        expect(flat).to_have_attribute("data-rows", "5")
        table = page.locator(".flat-table tbody tr")
        assert table.evaluate_all(ROWS) == [
            ["A", "9", "6", "×1.50", "+3", "1", "1"],
            ["gemm", "8", "4", "×2", "+4", "8", "2"],
            ["B", "4", "5", "×0.800", "-1", "2", "1"],
            ["fresh", "2", "–", "–", "+2", "2", "1"],  # only in the new profile
            ["gone", "–", "3", "–", "-3", "–", "–"],  # only in the base
        ]
        names = "rows => rows.map(r => r.dataset.name)"
        page.click(".flat-table th[data-sort=ratio]")
        expect(flat).to_have_attribute("data-sort", "ratio desc")
        assert table.evaluate_all(names) == ["gemm", "A", "B", "fresh", "gone"]
        page.click(".flat-table th[data-sort=ratio]")
        expect(flat).to_have_attribute("data-sort", "ratio asc")
        assert table.evaluate_all(names) == ["B", "A", "gemm", "fresh", "gone"]  # no ratio: last both ways
        page.click(".flat-table th[data-sort=change]")
        expect(flat).to_have_attribute("data-sort", "change desc")
        assert table.evaluate_all(names) == ["gemm", "A", "fresh", "B", "gone"]
        # Ratio cells coloured as the table's: gemm slower (red), B faster (green), none without one.
        colour = "td => [td.dataset.trend || null, getComputedStyle(td).backgroundColor]"
        trend, bg = page.locator(".flat-table tr[data-name=gemm] td.ratio").evaluate(colour)
        red, green, _ = (int(x) for x in re.findall(r"\d+", bg)[:3])
        assert trend == "slower" and red > green, bg
        trend, bg = page.locator(".flat-table tr[data-name=B] td.ratio").evaluate(colour)
        red, green, _ = (int(x) for x in re.findall(r"\d+", bg)[:3])
        assert trend == "faster" and green > red, bg
        assert page.locator(".flat-table tr[data-name=fresh] td.ratio").evaluate(colour)[0] is None
        gone = page.locator(".flat-table tr[data-name=gone]")
        expect(gone).to_have_attribute("data-only", "base")
        expect(gone).to_have_class(re.compile(r"\bremoved\b"))
        expect(page.locator(".flat-table tr[data-name=fresh]")).to_have_attribute("data-only", "new")
        # The sandwich: gemm's callers with their values in both profiles and their ratios.
        page.click(".flat-table tr[data-name=gemm]")
        expect(flat).to_have_attribute("data-selected", "gemm")
        assert page.locator(".flat-side[data-side=callers] tbody tr").evaluate_all(ROWS) == [
            ["A", "6", "75.0%", "2", "×3"],
            ["B", "2", "25.0%", "2", "×1"],
        ]
        title = page.locator(".flat-title").inner_text()
        assert "total time/ms 8" in title and "base 4" in title and "ratio ×2" in title, title
        expect(page).to_have_url(re.compile(r"#profile\?flat=1&frame=gemm$"))
        # A name only in the base can be picked too: its caller's base value, no ratio.
        page.click(".flat-table tr[data-name=gone]")
        expect(flat).to_have_attribute("data-selected", "gone")
        assert page.locator(".flat-side[data-side=callers] tbody tr").evaluate_all(ROWS) == [
            ["A", "–", "0.0%", "3", "–"],
        ]
