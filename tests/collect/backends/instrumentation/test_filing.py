"""A recorded launch filed through a real session, as the instrumentation backend files it after a
drain: the tree (kernel > scope, Proton's metrics and time), Proton's trace shape (a process per CTA
and SM, a thread per warp) and ``deuteron view`` on the file. No GPU: the buffers were recorded on one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import deuteron as proton
from tests.helpers.instrumentation import INSTRUMENTATION_FIXTURES as FIXTURES
from tests.helpers.instrumentation import file_recorded_launches


def test_tree_and_view(tmp_path: Path) -> None:
    sid = proton.start(str(tmp_path / "k"), backend="interpreter")
    assert sid is not None
    with proton.scope("outer"):
        file_recorded_launches(sid, "default.bin")
    proton.finalize()
    tree = json.loads((tmp_path / "k.hatchet").read_text())[0]
    outer = next(c for c in tree["children"] if c["frame"]["name"] == "outer")
    kernel = outer["children"][0]
    assert kernel["frame"]["name"] == "three"
    scopes = {c["frame"]["name"]: c["metrics"] for c in kernel["children"]}
    assert scopes["compute"]["cycles"] == 15732 and scopes["load"]["cycles"] == 1462  # Proton's own numbers
    assert scopes["compute"]["time (ns)"] > scopes["load"]["time (ns)"] > 0
    out = subprocess.run(
        [sys.executable, "-m", "deuteron", "view", str(tmp_path / "k.hatchet"), "-m", "time/us,cycles"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "compute" in out.stdout and "15,732" in out.stdout.replace("15732", "15,732")


def test_protons_trace_shape(tmp_path: Path) -> None:
    sid = proton.start(str(tmp_path / "t"), backend="interpreter", data="trace")
    assert sid is not None
    file_recorded_launches(sid, "default_trace.bin")
    proton.finalize()
    ours = json.loads((tmp_path / "t.chrome_trace").read_text())["traceEvents"]
    theirs = json.loads((FIXTURES / "default.proton.chrome_trace").read_text())["traceEvents"]
    assert len(ours) == len(theirs) == 48

    def lanes(events: list[dict[str, object]]) -> set[tuple[object, ...]]:
        return {(e["pid"], str(e["tid"]).split(" (")[0], e["name"], e["cat"]) for e in events}

    assert lanes(ours) == lanes(theirs)  # the same CTAs on the same SMs, warps and scopes
    assert all(e["args"]["call_stack"][-1] == "three" for e in ours)
    for e in ours:
        assert e["dur"] > 0 and "Init Time (ns)" in e["args"] and "Finalization Time (ns)" in e["args"]


def test_launches_filed_together_sum_like_protons(tmp_path: Path) -> None:
    sid = proton.start(str(tmp_path / "b"), backend="interpreter")
    assert sid is not None
    file_recorded_launches(sid, "default.bin", clock_khz=2_000_000, launches=3)
    proton.finalize()
    kernel = json.loads((tmp_path / "b.hatchet").read_text())[0]["children"][0]
    compute = next(c for c in kernel["children"] if c["frame"]["name"] == "compute")["metrics"]
    assert compute["cycles"] == 3 * 15732 and compute["instances"] == 3 * 16
    assert compute["normalized_cycles"] == 3 * 983.25  # Proton sums each launch's normalized cycles
    assert abs(compute["time (ns)"] - 3 * 15732 / 16 / 2.0) < 1e-6


def test_protons_string_lanes_are_read_as_cta_and_warp_lanes() -> None:
    """Proton's trace names lanes by strings ("three Core124 CTA0", "warp 0 (line 0)"): read, they
    stay apart, named, and their spans count as spans inside a kernel."""
    from deuteron.formats.chrome_trace import read_columns

    columns = read_columns(FIXTURES / "default.proton.chrome_trace")
    assert columns.cats == ["intra"] and len(columns.start) == 48
    labels = sorted(label for _, _, label in columns.lanes)
    assert len(labels) == 16 and labels[0] == "three Core124 CTA0 · warp 0 (line 0)"
