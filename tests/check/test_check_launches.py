"""A finding names the launch its example came from: the check JSON keeps it (and reads reports
written before it did), and the web UI's access view shows the finding on that launch only, even
where another launch ran the same kernel on the same tensor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

import deuteron
from deuteron.check import CheckSession
from deuteron.formats import check_json
from deuteron.formats.access_record import read as read_record
from deuteron.render.web.data import WebData


@triton.jit
def copy_kernel(src, dst, n, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(src + offs, mask=offs < limit)
    tl.store(dst + offs, v, mask=offs < n)


def _two_launches(tmp_path: Path) -> tuple[CheckSession, list[int]]:
    """The same kernel on the same tensors twice: the first launch correct, the second loading 28
    lanes past the end of ``src``. Returns the check and the record's launch indices."""
    src, dst = torch.rand(100), torch.empty(100)
    with deuteron.check(raise_on=None, record=tmp_path / "acc.npz") as checked:
        copy_kernel[(4,)](src, dst, 100, 100, BLOCK=32)
        copy_kernel[(4,)](src, dst, 100, 128, BLOCK=32)
    header, _, _ = read_record(tmp_path / "acc.npz")
    return checked, [launch["index"] for launch in header["launches"]]


def _src_findings(record: Path, report: Path) -> list[list[str]]:
    """The kinds of the findings the access view shows on ``src``, launch by launch."""
    data = WebData()
    data.add_file(str(record))
    data.add_file(str(report))
    shown = []
    for i in range(2):
        launch = data.answer(f"/api/access/0/{i}.json")[1]
        (src,) = [t for t in launch["tensors"] if t["name"] == "src"]
        shown.append([f["kind"] for f in src["findings"]])
    return shown


def test_a_finding_names_its_launch_and_the_access_view_shows_it_there_only(tmp_path: Path) -> None:
    checked, (first, second) = _two_launches(tmp_path)
    (finding,) = checked.report.findings
    assert (finding.kind, finding.tensor, finding.launches) == ("out-of-bounds", "src", 1)
    assert second == first + 1 and finding.launch == second
    report = check_json.write(checked.report, tmp_path / "r.json")
    body = json.loads(report.read_text())
    assert body["version"] == 2 and body["findings"][0]["launch"] == second
    assert check_json.read(report).findings[0].launch == second
    assert _src_findings(tmp_path / "acc.npz", report) == [[], ["out-of-bounds"]]


def test_a_report_without_launch_indices_still_reads_and_joins_by_kernel_and_shape(tmp_path: Path) -> None:
    """deuteron-check v1 had no ``launch``: its findings read back with None, and the access view
    falls back to the old join (every launch of the kernel whose tensor has the finding's shape)."""
    checked, _ = _two_launches(tmp_path)
    body = check_json.to_json(checked.report)
    body["version"] = 1
    for f in body["findings"]:
        del f["launch"]
    old = tmp_path / "v1.json"
    old.write_text(json.dumps(body))
    assert [f.launch for f in check_json.read(old).findings] == [None]
    assert _src_findings(tmp_path / "acc.npz", old) == [["out-of-bounds"], ["out-of-bounds"]]


@pytest.mark.parametrize("launch", ["1", -1, True, 1.5])
def test_a_damaged_launch_index_is_a_format_error(tmp_path: Path, launch: object) -> None:
    body = {
        "format": "deuteron-check",
        "version": 2,
        "findings": [{"kind": "race", "severity": "error", "kernel": "k", "file": "k.py", "message": "m"}],
    }
    body["findings"][0]["launch"] = launch
    path = tmp_path / "c.json"
    path.write_text(json.dumps(body))
    with pytest.raises(ValueError, match="finding 0 has a damaged launch"):
        check_json.read(path)
