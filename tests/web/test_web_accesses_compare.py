"""A learner's accesses beside the reference's (issue 31), in a real browser: ``deuteron learn check
11 FILE --record DIR`` writes both records, ``deuteron serve --html`` puts them on one page, and
the Accesses view opens the learner's first launch beside the reference's matching one, the
cells the two touched differently framed and counted as NumPy counts them from the record files,
one heat scale for both sides, and the comparison kept in (and reopened from) the address."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deuteron.formats import access_record, check_json
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli

pytestmark = pytest.mark.slow

# Exercise 11's kernel with the bounds bug fixed the wrong way: the right neighbour's load still
# reads past the end, the last element is never written, and out[0] is read before it is written.
MINE = """
import triton
import triton.language as tl


@triton.jit
def blur_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + i - 1, mask=(i >= 1) & (i < n), other=0.0)
    centre = tl.load(x_ptr + i, mask=i < n, other=0.0)
    right = tl.load(x_ptr + i + 1, mask=i < n, other=0.0)
    first = tl.load(out_ptr + i, mask=i == 0, other=0.0)
    tl.store(out_ptr + i, (left + centre + right) / 3.0 + first * 0.0, mask=i < n - 1)
"""

BITS = (1, 2, 4)  # load, store, atomic, as the page's footprint (compare.ts KIND_BIT)
ONLY_A, ONLY_B, KINDS_DIFFER = 1, 2, 3
DIFF_COLOUR = {ONLY_A: (0xE8, 0x59, 0x0C), ONLY_B: (0x70, 0x48, 0xE8), KINDS_DIFFER: (0x21, 0x25, 0x29)}


@dataclass(frozen=True)
class Records:
    folder: Path
    page: Path
    yours: Path
    reference: Path


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Records:
    folder = tmp_path_factory.mktemp("compare")
    env = {"DEUTERON_DATA_DIR": str(folder / "data")}
    (folder / "mine.py").write_text(MINE)
    proc = run_cli("learn", "check", "11", "mine.py", "--record", "rec", cwd=folder, env=env, timeout=300)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "deuteron serve rec/11_blur_bounds.*" in proc.stdout, proc.stdout
    rec = folder / "rec"
    files = sorted(str(p.relative_to(folder)) for p in rec.iterdir())
    assert files == [
        "rec/11_blur_bounds.reference.npz",
        "rec/11_blur_bounds.yours.json",
        "rec/11_blur_bounds.yours.npz",
    ], files
    page = folder / "page.html"
    # As the shell expands rec/*.npz rec/*.json: the reference's record comes first.
    npz = sorted(f for f in files if f.endswith(".npz"))
    proc = run_cli("serve", "--html", str(page), *npz, "rec/11_blur_bounds.yours.json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return Records(folder, page, rec / "11_blur_bounds.yours.npz", rec / "11_blur_bounds.reference.npz")


def _footprints(path: Path) -> list[dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Per launch of a record, per tensor: each element's kind bits and lanes (accesses only, not
    masked-off lanes), read straight from the file."""
    header, accesses, offsets = access_record.read(path)
    out = []
    for li, launch in enumerate(header["launches"]):
        rows = accesses[(accesses["launch"] == li) & (accesses["kind"] < 3)]
        tensors = {}
        for t in launch["tensors"]:
            assert len(t["shape"]) == 1 and list(t["strides"]) == [1], t  # exercise 11: 1-D, contiguous
            n, size = int(t["shape"][0]), int(t["element_size"])
            kinds, lanes = np.zeros(n, np.uint8), np.zeros(n, np.int64)
            for row in rows[rows["storage"] == t["storage"]]:
                start, count = int(row["start"]), int(row["count"])
                element = (offsets[start : start + count] - int(t["offset"])) // size
                element = element[(element >= 0) & (element < n)]
                kinds[element] |= BITS[int(row["kind"])]
                np.add.at(lanes, element, 1)
            tensors[t["name"]] = (kinds, lanes)
        out.append(tensors)
    return out


def _finding_cells(records: Records) -> set[tuple[int, str, int]]:
    """(launch of yours, tensor, element) of every finding of the learner's report with an element:
    its outline is drawn over the cell, so the cell's own frame is not the pixel to look at."""
    header, _, _ = access_record.read(records.yours)
    launch_of = {launch["index"]: k for k, launch in enumerate(header["launches"])}
    report = check_json.read(records.folder / "rec" / "11_blur_bounds.yours.json")
    return {
        (launch_of[f.launch], f.tensor, f.index[-1])
        for f in report.findings
        if f.launch in launch_of and f.tensor and f.index and 0 <= f.index[-1] < 512
    }


def _diff(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Each element's class (0 alike, ONLY_A, ONLY_B, KINDS_DIFFER); each is its own bin here."""
    (ka, _), (kb, _) = a, b
    assert len(ka) <= 512, "one element a bin"
    cls = np.zeros(len(ka), np.uint8)
    cls[(ka != kb) & (kb == 0)] = ONLY_A
    cls[(ka != kb) & (ka == 0)] = ONLY_B
    cls[(ka != kb) & (ka != 0) & (kb != 0)] = KINDS_DIFFER
    return cls


def _canvas(page: Any, side: str, tensor: str) -> Any:
    return page.locator(f'#view-accesses .acc-card[data-side="{side}"] canvas[data-tensor="{tensor}"]')


def _pixel(page: Any, canvas: Any, x: int, y: int) -> tuple[int, int, int]:
    """The canvas's pixel at CSS px (x, y) from its top-left."""
    rgba = canvas.evaluate(
        """(c, [x, y]) => {
            const r = c.width / c.getBoundingClientRect().width;
            const at = [Math.floor(x * r), Math.floor(y * r)];
            return Array.from(c.getContext("2d").getImageData(at[0], at[1], 1, 1).data);
        }""",
        [x, y],
    )
    return (rgba[0], rgba[1], rgba[2])


def test_yours_beside_the_reference_with_the_differing_cells_marked(
    records: Records, watched: Watched
) -> None:
    page = watched.page
    yours, reference = _footprints(records.yours), _footprints(records.reference)
    assert len(yours) == len(reference) == 3  # n = 1, 64, 100
    outlined = _finding_cells(records)
    assert (1, "out_ptr", 63) in outlined  # the store-coverage finding: out[63] written by no program
    page.goto(records.page.as_uri() + "#accesses")
    root = page.locator("#view-accesses")
    # Records: the reference's (launches 0-2 of the picker), then yours (3-5): yours is shown
    # first, beside the reference's launch of the same kernel at the same place.
    page.wait_for_selector("#view-accesses[data-state=ready][data-launch='3'][data-vs='0']")
    assert page.locator("select[name=vs]").input_value() == "0"
    heads = root.locator(".acc-colhead").all_inner_texts()
    assert len(heads) == 2 and "yours.npz" in heads[0] and "reference.npz" in heads[1], heads
    total = 0
    for k, vs in enumerate((0, 1, 2)):
        if k:
            page.select_option("select[name=launch]", str(3 + k))  # the comparison follows
            page.wait_for_selector(f"#view-accesses[data-state=ready][data-launch='{3 + k}'][data-vs='{vs}']")
        assert page.evaluate("location.hash") == f"#accesses?launch={3 + k}&vs={vs}"
        for name in ("x_ptr", "out_ptr"):
            a, b = _canvas(page, "a", name), _canvas(page, "b", name)
            expect(a).to_have_count(1)
            expect(b).to_have_count(1)
            cls = _diff(yours[k][name], reference[k][name])
            for canvas in (a, b):
                assert canvas.get_attribute("data-bins-differ") == str(int((cls > 0).sum())), (k, name)
                assert canvas.get_attribute("data-bins-only-a") == str(int((cls == ONLY_A).sum()))
                assert canvas.get_attribute("data-bins-only-b") == str(int((cls == ONLY_B).sum()))
                assert canvas.get_attribute("data-bins-kinds") == str(int((cls == KINDS_DIFFER).sum()))
            total += int((cls > 0).sum())
            # The marks are drawn: each differing cell's left edge in its class's colour, on both
            # sides; a cell touched alike keeps its own colour.
            n = len(cls)
            cell = max(1, 512 // n)
            height = cell if cell >= 14 else 14
            for side, canvas in (("a", a), ("b", b)):
                top, _, _, left = map(int, (canvas.get_attribute("data-pads") or "0,0,0,0").split(","))
                for col in range(n):
                    if side == "a" and (k, name, col) in outlined:
                        continue
                    rgb = _pixel(page, canvas, left + col * cell, top + height // 2)
                    if cls[col]:
                        assert rgb == DIFF_COLOUR[cls[col]], (k, name, col, rgb)
                    else:
                        assert rgb not in DIFF_COLOUR.values(), (k, name, col, rgb)
        # n=64 and n=100: out[n-1] is written by the reference only, out[0] read and written by yours.
        out = _diff(yours[k]["out_ptr"], reference[k]["out_ptr"])
        n = len(out)
        assert out[n - 1] == (KINDS_DIFFER if n == 1 else ONLY_B) and out[0] == KINDS_DIFFER
    assert total >= 5
    # Clicking a differing cell shows it on both sides, with the verdict.
    canvas = _canvas(page, "a", "out_ptr")
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)  # the last element
    details = page.locator(".acc-details[data-cell='0,99']")
    details.wait_for()
    assert "touched only in" in details.locator(".acc-verdict").inner_text()
    sides = details.locator(".acc-sidepane")
    expect(sides).to_have_count(2)
    # Yours: only the masked-off lanes of the store (and of the load of out) point there; the
    # reference's store writes it.
    kinds = [
        side.locator("tr[data-kind]").evaluate_all("rows => rows.map(r => r.dataset.kind)")
        for side in (sides.nth(0), sides.nth(1))
    ]
    assert kinds[0] and all(k.startswith("masked") for k in kinds[0]), kinds
    assert "store" in kinds[1], kinds
    assert "touched only in" in root.locator(".acc-legend").inner_text()


def test_one_heat_scale_and_the_comparison_in_the_address(records: Records, watched: Watched) -> None:
    page = watched.page
    yours, reference = _footprints(records.yours), _footprints(records.reference)
    # A deep link: the learner's third launch beside the reference's, heat mode.
    page.goto(records.page.as_uri() + "#accesses?launch=5&vs=2&mode=heat")
    page.wait_for_selector("#view-accesses[data-state=ready][data-launch='5'][data-vs='2']")
    assert page.locator("select[name=mode]").input_value() == "1"
    for name in ("x_ptr", "out_ptr"):
        top = max(int(yours[2][name][1].max()), int(reference[2][name][1].max()))
        for side in ("a", "b"):
            canvas = _canvas(page, side, name)
            expect(canvas).to_have_attribute("data-mode", "heat")
            assert canvas.get_attribute("data-max-lanes") == str(top), (name, side)
    # No comparison: one column, and the address says so; Back to the link's comparison.
    page.select_option("select[name=vs]", "-1")
    page.wait_for_selector("#view-accesses[data-state=ready][data-launch='5'][data-vs='-1']")
    assert page.evaluate("location.hash") == "#accesses?launch=5&vs=none&mode=heat"
    expect(page.locator("#view-accesses .acc-colhead")).to_have_count(0)
    expect(page.locator('#view-accesses canvas[data-tensor="out_ptr"]')).to_have_count(1)
    assert (
        page.locator('#view-accesses canvas[data-tensor="out_ptr"]').get_attribute("data-bins-differ") is None
    )
    # A comparison picked by hand, with a launch of another size: shapes differ, no cell diff.
    page.select_option("select[name=vs]", "1")
    page.wait_for_selector("#view-accesses[data-state=ready][data-launch='5'][data-vs='1']")
    assert page.evaluate("location.hash") == "#accesses?launch=5&vs=1&mode=heat"
    note = page.locator('#view-accesses .acc-card[data-side="a"][data-card="out_ptr"] .acc-cmpline')
    assert "shapes differ" in note.inner_text()
    assert _canvas(page, "a", "out_ptr").get_attribute("data-bins-differ") is None
    # A link set on the open page brings the paired comparison back.
    page.evaluate("location.hash = '#accesses?launch=4'")
    page.wait_for_selector("#view-accesses[data-state=ready][data-launch='4'][data-vs='1']")
    cls = _diff(yours[1]["out_ptr"], reference[1]["out_ptr"])
    expect(_canvas(page, "b", "out_ptr")).to_have_attribute("data-bins-differ", str(int((cls > 0).sum())))
    assert len(cls) == 64
