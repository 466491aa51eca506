"""The flat view: every frame name summed over the tree (total once per place, self its own), for
"how much time in this kernel, under any module" — and the one-line refusals of empty columns."""

from __future__ import annotations

import json
from pathlib import Path

from deuteron.formats import hatchet
from deuteron.model.metrics import CPU_TIME, EXC, TIME, parse_metric
from deuteron.model.tree import KERNEL, Profile
from deuteron.view.flat import flat_rows
from tests.helpers.cli import run_cli


def _profile() -> Profile:
    """step > (fwd > gemm 30, fwd > act 5), (bwd > gemm 50), gemm nested in gemm (recursion) 7 / 2."""
    p = Profile()
    step = p.root.child("step")
    fwd, bwd = step.child("fwd"), step.child("bwd")
    p.add_metrics(fwd.child("gemm", KERNEL), {TIME: 30, "count": 1, "bytes": 300})
    p.add_metrics(fwd.child("act", KERNEL), {TIME: 5, "count": 1, "bytes": 500})
    p.add_metrics(bwd.child("gemm", KERNEL), {TIME: 50, "count": 2, "bytes": 200})
    outer = step.child("gemm")
    p.add_metrics(outer, {TIME: 7, "count": 1})
    p.add_metrics(outer.child("gemm"), {TIME: 2, "count": 1})
    return p


def test_names_are_summed_over_their_places() -> None:
    specs = [parse_metric(n, _profile().metric_names()) for n in ("time/ns", "count", "gbyte/s")]
    rows = {r.name: r for r in flat_rows(_profile(), specs)}
    gemm = rows["gemm"]
    assert gemm.places == 4
    assert gemm.total[0] == 30 + 50 + 7 + 2  # the nested gemm counted once, inside its outer one
    assert gemm.own[0] == 30 + 50 + 7 + 2 and gemm.own[1] == 5
    assert abs(gemm.total[2] - 500 / 89) < 1e-9  # bytes over time of the sums, not a mean of rates
    assert rows["step"].total[0] == 94
    assert rows["step"].own[0] != rows["step"].own[0]  # NaN: no time of its own
    assert [r.name for r in flat_rows(_profile(), specs)][:2] == ["step", "gemm"]


def test_an_exclusive_time_holds_its_nested_frames() -> None:
    p = Profile()
    p.kinds[CPU_TIME] = EXC
    module = p.root.child("Linear")
    p.add_metrics(module, {CPU_TIME: 100})
    p.add_metrics(module.child("aten::addmm"), {CPU_TIME: 80})
    rows = {r.name: r for r in flat_rows(p, [parse_metric("cpu_time/ns", p.metric_names())])}
    assert rows["Linear"].total == [100] and rows["Linear"].own == [20]
    assert rows["aten::addmm"].total == [80] and rows["aten::addmm"].own == [80]


def test_flat_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "p.hatchet"
    hatchet.write(_profile(), path)
    proc = run_cli("view", str(path), "--flat", "2", "-m", "time/ns,count", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    heads = ["total", "time/ns", "self", "time/ns", "total", "count", "self", "count", "places", "name"]
    assert lines[0].split() == heads
    assert lines[1].split()[-2:] == ["1", "step"]
    assert lines[2].split() == ["89.000", "89.000", "5", "5", "4", "gemm"]
    assert len(lines) == 3
    as_json = json.loads(run_cli("view", str(path), "--flat", "--json", cwd=tmp_path).stdout)
    assert as_json["columns"] == ["time/ms"]
    assert {r["name"] for r in as_json["rows"]} == {"step", "fwd", "bwd", "gemm", "act"}
    refused = run_cli("view", str(path), "--diff", str(path), "--flat", cwd=tmp_path)
    assert refused.returncode == 2 and "--flat shows one profile or one job's ranks" in refused.stderr


def test_columns_the_profile_lacks_are_said_not_dashed(tmp_path: Path) -> None:
    p = Profile()
    p.kinds[CPU_TIME] = EXC
    p.add_metrics(p.root.child("Linear"), {CPU_TIME: 2_500_000, "calls": 3})
    path = tmp_path / "cpu.hatchet"
    hatchet.write(p, path)
    proc = run_cli("view", str(path), "-m", "time/ms,gbyte/s", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    said = "no frame has time/ms, gbyte/s: this profile has calls, cpu_time (ns); "
    assert said + "for its CPU time: -m cpu_time/ms,calls" in proc.stderr
    partly = run_cli("view", str(path), "-m", "cpu_time/ms,time/ms", cwd=tmp_path)
    assert partly.returncode == 0 and "no frame has time/ms" in partly.stderr and "2.500" in partly.stdout
    default = run_cli("view", str(path), cwd=tmp_path)
    assert default.stdout.splitlines()[0].split() == ["cpu_time/ms", "name"]  # not the alphabetically first


def test_a_diff_of_unrelated_profiles_is_said(tmp_path: Path) -> None:
    a, b = Profile(), Profile()
    a.add_metrics(a.root.child("train").child("gemm", KERNEL), {TIME: 5})
    b.add_metrics(b.root.child("serve").child("softmax", KERNEL), {TIME: 7})
    hatchet.write(a, tmp_path / "a.hatchet")
    hatchet.write(b, tmp_path / "b.hatchet")
    proc = run_cli("diff", "a.hatchet", "b.hatchet", cwd=tmp_path)
    assert proc.returncode == 0 and "share no frame name" in proc.stderr
    same = run_cli("diff", "a.hatchet", "a.hatchet", cwd=tmp_path)
    assert "share no frame name" not in same.stderr


def test_a_backward_filed_under_its_module_is_covered_by_it() -> None:
    """A file written before modules covered their backward (forward 100, backward 60 under it):
    the module's total is what its children cover, its self value never negative."""
    p = Profile()
    p.kinds[CPU_TIME] = EXC
    module = p.root.child("Linear")
    p.add_metrics(module, {CPU_TIME: 100})
    p.add_metrics(module.child("aten::addmm"), {CPU_TIME: 90})
    p.add_metrics(module.child("backward"), {CPU_TIME: 60})
    rows = {r.name: r for r in flat_rows(p, [parse_metric("cpu_time/ns", p.metric_names())])}
    assert rows["Linear"].total == [150] and rows["Linear"].own == [0]
    assert rows["backward"].total == [60] and rows["backward"].own == [60]
